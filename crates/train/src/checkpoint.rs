//! Training checkpoints: a [`rosetta_infer::checkpoint`] (the weights and what translation
//! needs) with what a run needs to continue exactly where it stopped: the optimizer's state
//! (`optimizer.bpk`) and, in the same `state.json`, the position in the data, the seed, the best
//! validation so far, the time spent and the settings that shape the run ([`TrainingState`]).
//! Model-only checkpoints (`best/`, averages, imports) translate and start fine-tuning runs, but
//! are not resumed.

use std::path::Path;

use rosetta_infer::checkpoint::{self, CheckpointState, CheckpointWriter, StateRecord};
use rosetta_model::Transformer;
use rosetta_model::burn::optim::ModuleOptimizer;
use rosetta_model::burn::store::RecordError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::error::{ResumeConflict, TrainError};

/// Adam's state, in the checkpoints a run can resume from.
const OPTIMIZER_FILE: &str = "optimizer.bpk";

/// Where a run stands: with the model and optimizer files, enough to resume exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingState {
    /// What every checkpoint records (step, model, tokenizer, files, decoding, languages).
    #[serde(flatten)]
    pub checkpoint: CheckpointState,
    /// The current epoch (from 0).
    pub epoch: u64,
    /// Batches of the current epoch already consumed.
    pub batch_in_epoch: u64,
    /// The run's seed (initialisation, dropout, data order).
    pub seed: u64,
    /// Best validation loss so far.
    pub best_valid_loss: Option<f64>,
    /// Best validation BLEU so far (when BLEU is computed during training).
    #[serde(default)]
    pub best_valid_bleu: Option<f64>,
    /// Validations since the best one (for early stopping).
    pub validations_without_improvement: u64,
    /// Seconds spent in the training loop up to this checkpoint, over every session of the run
    /// (what `training.max_minutes` counts). 0 in checkpoints from before 2026-12-01.
    #[serde(default)]
    pub training_seconds: f64,
    /// The settings that shape the training trajectory (seed, batching, optimizer, schedule,
    /// ...), by dotted configuration key, as the trainer recorded them, so that a resume under
    /// other settings is refused naming the key. Absent in checkpoints from before 2026-12-01.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_settings: Option<BTreeMap<String, serde_json::Value>>,
}

impl StateRecord for TrainingState {
    fn checkpoint_mut(&mut self) -> &mut CheckpointState {
        &mut self.checkpoint
    }
}

/// Writes a training checkpoint (the model, optionally the optimizer's state and the moving
/// average of the weights, and the state) as directory `dir`, atomically.
pub fn save(
    dir: &Path,
    model: &Transformer,
    optimizer: Option<&ModuleOptimizer>,
    ema: Option<&Transformer>,
    state: &TrainingState,
) -> Result<(), TrainError> {
    let mut writer = CheckpointWriter::create(dir)?;
    writer.model(model)?;
    if let Some(ema) = ema {
        writer.ema(ema)?;
    }
    if let Some(optimizer) = optimizer {
        writer.record(OPTIMIZER_FILE, "write the optimizer state", |path| {
            optimizer.save(path)
        })?;
    }
    writer.commit(state.clone())?;
    Ok(())
}

/// Reads and verifies the state of the checkpoint in `dir` to resume from it; a model-only
/// checkpoint without a training state (an import, an average) is refused as such.
pub fn read_state(dir: &Path) -> Result<TrainingState, TrainError> {
    let state = checkpoint::read_state(dir)?;
    checkpoint::read_record(dir)
        .map_err(|_| TrainError::resume(dir, ResumeConflict::ModelOnly { step: state.step }))
}

/// Loads the optimizer state of the verified checkpoint in `dir` into `optimizer`; a checkpoint
/// without one (`best/`) is refused as model-only.
pub fn load_optimizer(
    dir: &Path,
    state: &TrainingState,
    optimizer: ModuleOptimizer,
) -> Result<ModuleOptimizer, TrainError> {
    if !state.checkpoint.files.contains_key(OPTIMIZER_FILE) {
        return Err(TrainError::resume(
            dir,
            ResumeConflict::ModelOnly {
                step: state.checkpoint.step,
            },
        ));
    }
    let path = dir.join(OPTIMIZER_FILE);
    optimizer
        .load(&path)
        .map_err(|error: RecordError| TrainError::OptimizerState {
            path: path.clone(),
            error,
        })
}

/// Deletes all but the newest `keep` step checkpoints of the run in `run_dir`.
pub fn prune(run_dir: &Path, keep: usize) -> Result<(), TrainError> {
    let all = checkpoint::list(run_dir)?;
    let excess = all.len().saturating_sub(keep);
    for (_, path) in all.into_iter().take(excess) {
        std::fs::remove_dir_all(&path).map_err(TrainError::io(&path))?;
    }
    Ok(())
}
