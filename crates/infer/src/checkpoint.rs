//! Checkpoints: everything needed to continue a run exactly where it stopped, written
//! atomically and verified before loading.
//!
//! A checkpoint is a directory `checkpoints/step-NNNNNNNN/` holding `model.bpk` and
//! `optimizer.bpk` (Burn's burnpack format), in runs with `training.ema_decay` `ema.bpk` (the
//! moving average of the weights, which translation uses), `state.json` ([`TrainingState`]: step, epoch,
//! position in the epoch, seed, model configuration, tokenizer fingerprint, and a SHA-256 of
//! each file) and `state.sha256` (the SHA-256 of `state.json` itself). It is written under a
//! temporary name and renamed into place, so a crash never leaves a half-written checkpoint
//! under a real name; a checkpoint whose files do not match their recorded hashes is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rosetta_data::TokenizerSettings;
use rosetta_model::Transformer;
use rosetta_model::TransformerConfig;
use rosetta_model::burn::module::Module;
use rosetta_model::burn::optim::ModuleOptimizer;
use rosetta_model::burn::store::RecordError;
use rosetta_model::burn::tensor::Device;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{CheckpointFault, InferError};
use crate::options::TranslateOptions;

/// Version of the checkpoint layout.
pub const FORMAT: u32 = 1;
const MODEL_FILE: &str = "model.bpk";
const OPTIMIZER_FILE: &str = "optimizer.bpk";
/// The exponential moving average of the weights, in runs with `training.ema_decay`.
const EMA_FILE: &str = "ema.bpk";
const STATE_FILE: &str = "state.json";
/// The SHA-256 of `state.json`'s bytes, so that a damaged state is refused like a damaged model.
const STATE_CHECKSUM_FILE: &str = "state.sha256";

/// Where a run stands: enough, with the model and optimizer files, to resume exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainingState {
    /// Layout version ([`FORMAT`]).
    pub format: u32,
    /// Optimizer steps taken.
    pub step: u64,
    /// The current epoch (from 0).
    pub epoch: u64,
    /// Batches of the current epoch already consumed.
    pub batch_in_epoch: u64,
    /// The run's seed (initialisation, dropout, data order).
    pub seed: u64,
    /// The model's configuration.
    pub model: TransformerConfig,
    /// The tokenizer settings the vocabulary was trained with.
    pub tokenizer: TokenizerSettings,
    /// Fingerprint of the tokenizer(s).
    pub tokenizer_fingerprint: String,
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
    /// SHA-256 of each file of the checkpoint.
    pub files: BTreeMap<String, String>,
    /// The settings that shape the training trajectory (seed, batching, optimizer, schedule,
    /// ...), by dotted configuration key, as the trainer recorded them, so that a resume under
    /// other settings is refused naming the key. Absent in checkpoints from before 2026-12-01.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_settings: Option<BTreeMap<String, serde_json::Value>>,
    /// How the model decodes when the user does not say (an imported model's
    /// `generation_config.json`); `None`: [`TranslateOptions::default`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoding: Option<TranslateOptions>,
    /// The source language's code, where known (`rosetta import-hf --source-lang`, or the
    /// training corpus's file extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_lang: Option<String>,
    /// The target language's code, where known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_lang: Option<String>,
}

/// The SHA-256 of `bytes`, hex-encoded.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn sha256_file(path: &Path) -> Result<String, InferError> {
    let bytes = std::fs::read(path).map_err(InferError::io(path))?;
    Ok(sha256_hex(&bytes))
}

fn record_error(path: &Path, action: &'static str) -> impl FnOnce(RecordError) -> InferError {
    let path = path.to_path_buf();
    move |error| InferError::checkpoint(path, CheckpointFault::Record { action, error })
}

/// The directory of all step checkpoints of a run.
pub fn checkpoints_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("checkpoints")
}

/// Writes a checkpoint (model, optionally optimizer and the moving average of the weights,
/// state) as directory `dir`, atomically.
pub fn save(
    dir: &Path,
    model: &Transformer,
    optimizer: Option<&ModuleOptimizer>,
    ema: Option<&Transformer>,
    state: &TrainingState,
) -> Result<(), InferError> {
    let staged = rosetta_files::StagedDir::new(dir).map_err(InferError::io(dir))?;
    let tmp = staged.path().to_path_buf();
    let mut state = state.clone();
    state.files.clear();
    let model_path = tmp.join(MODEL_FILE);
    model
        .clone()
        .save_file(&model_path)
        .map_err(record_error(&model_path, "write the model"))?;
    state
        .files
        .insert(MODEL_FILE.into(), sha256_file(&model_path)?);
    if let Some(ema) = ema {
        let path = tmp.join(EMA_FILE);
        ema.clone()
            .save_file(&path)
            .map_err(record_error(&path, "write the weights' average"))?;
        state.files.insert(EMA_FILE.into(), sha256_file(&path)?);
    }
    if let Some(optimizer) = optimizer {
        let path = tmp.join(OPTIMIZER_FILE);
        optimizer
            .save(&path)
            .map_err(record_error(&path, "write the optimizer state"))?;
        state
            .files
            .insert(OPTIMIZER_FILE.into(), sha256_file(&path)?);
    }
    let state_path = tmp.join(STATE_FILE);
    let json = serde_json::to_string_pretty(&state)
        .map_err(|e| InferError::checkpoint(&state_path, CheckpointFault::StateWrite(e)))?;
    std::fs::write(&state_path, json).map_err(InferError::io(&state_path))?;
    let checksum_path = tmp.join(STATE_CHECKSUM_FILE);
    let checksum = sha256_file(&state_path)?;
    std::fs::write(&checksum_path, format!("{checksum}\n"))
        .map_err(InferError::io(&checksum_path))?;
    for name in state
        .files
        .keys()
        .map(String::as_str)
        .chain([STATE_FILE, STATE_CHECKSUM_FILE])
    {
        sync_file(&tmp.join(name))?;
    }
    // In place of an older checkpoint of the same name, never leaving neither.
    staged.commit_replacing().map_err(InferError::io(dir))?;
    Ok(())
}

/// Flushes a written file to the disk.
fn sync_file(path: &Path) -> Result<(), InferError> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(InferError::io(path))
}

/// Reads and verifies the state of the checkpoint in `dir` (files present, hashes matching).
pub fn read_state(dir: &Path) -> Result<TrainingState, InferError> {
    let state_path = dir.join(STATE_FILE);
    if !state_path.is_file() {
        return Err(InferError::checkpoint(dir, CheckpointFault::NotACheckpoint));
    }
    let checksum_path = dir.join(STATE_CHECKSUM_FILE);
    // Checkpoints written before 2026-12-01 have no checksum of their state.
    if let Ok(expected) = std::fs::read_to_string(&checksum_path)
        && sha256_file(&state_path)? != expected.trim()
    {
        return Err(InferError::checkpoint(
            &state_path,
            CheckpointFault::Corrupt {
                recorded_in: STATE_CHECKSUM_FILE,
            },
        ));
    }
    let text = std::fs::read_to_string(&state_path).map_err(InferError::io(&state_path))?;
    let state: TrainingState = serde_json::from_str(&text)
        .map_err(|e| InferError::checkpoint(&state_path, CheckpointFault::UnreadableState(e)))?;
    if state.format != FORMAT {
        return Err(InferError::checkpoint(
            dir,
            CheckpointFault::Layout {
                found: state.format,
                supported: FORMAT,
            },
        ));
    }
    if !state.files.contains_key(MODEL_FILE) {
        return Err(InferError::checkpoint(dir, CheckpointFault::NoModelFile));
    }
    for (name, expected) in &state.files {
        let path = dir.join(name);
        if !path.is_file() {
            return Err(InferError::checkpoint(&path, CheckpointFault::MissingFile));
        }
        if &sha256_file(&path)? != expected {
            return Err(InferError::checkpoint(
                &path,
                CheckpointFault::Corrupt {
                    recorded_in: STATE_FILE,
                },
            ));
        }
    }
    Ok(state)
}

/// Loads a verified checkpoint's moving average of the weights onto `device`, if it has one
/// (runs with `training.ema_decay`).
pub fn load_ema(
    dir: &Path,
    state: &TrainingState,
    device: &Device,
) -> Result<Option<Transformer>, InferError> {
    if !state.files.contains_key(EMA_FILE) {
        return Ok(None);
    }
    let path = dir.join(EMA_FILE);
    let model = state
        .model
        .init(device)?
        .try_load_file(&path)
        .map_err(record_error(&path, "load the weights' average"))?;
    Ok(Some(model))
}

/// The model a checkpoint translates with: its moving average of the weights when the run kept
/// one, else its weights.
pub fn load_translation_model(
    dir: &Path,
    state: &TrainingState,
    device: &Device,
) -> Result<Transformer, InferError> {
    match load_ema(dir, state, device)? {
        Some(ema) => Ok(ema),
        None => load_model(dir, state, device),
    }
}

/// The weights a checkpoint translates with (its moving average when the run kept one, else its
/// weights) in a model built from `config`, which must be the checkpoint's architecture (its
/// dropout rates may differ: a fine-tuning run sets its own).
pub fn load_translation_weights(
    dir: &Path,
    state: &TrainingState,
    config: &TransformerConfig,
    device: &Device,
) -> Result<Transformer, InferError> {
    let file = if state.files.contains_key(EMA_FILE) {
        EMA_FILE
    } else {
        MODEL_FILE
    };
    let path = dir.join(file);
    config
        .init(device)?
        .try_load_file(&path)
        .map_err(record_error(&path, "load the weights"))
}

/// Loads a verified checkpoint's model (the trained weights, not their average) onto `device`.
pub fn load_model(
    dir: &Path,
    state: &TrainingState,
    device: &Device,
) -> Result<Transformer, InferError> {
    let path = dir.join(MODEL_FILE);
    state
        .model
        .init(device)?
        .try_load_file(&path)
        .map_err(record_error(&path, "load the model"))
}

/// Loads a verified checkpoint's optimizer state into `optimizer`.
pub fn load_optimizer(
    dir: &Path,
    optimizer: ModuleOptimizer,
) -> Result<ModuleOptimizer, InferError> {
    let path = dir.join(OPTIMIZER_FILE);
    if !path.is_file() {
        return Err(InferError::checkpoint(
            dir,
            CheckpointFault::NoOptimizerState,
        ));
    }
    optimizer
        .load(&path)
        .map_err(record_error(&path, "load the optimizer state"))
}

/// The step checkpoints of a run, oldest first.
pub fn list(run_dir: &Path) -> Result<Vec<(u64, PathBuf)>, InferError> {
    let dir = checkpoints_dir(run_dir);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(InferError::io(&dir))? {
        let entry = entry.map_err(InferError::io(&dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(step) = name
            .strip_prefix("step-")
            .and_then(|s| s.parse::<u64>().ok())
        {
            found.push((step, entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

/// The directory name of the checkpoint at `step`.
pub fn step_dir(run_dir: &Path, step: u64) -> PathBuf {
    checkpoints_dir(run_dir).join(format!("step-{step:08}"))
}

/// Deletes all but the newest `keep` step checkpoints.
pub fn prune(run_dir: &Path, keep: usize) -> Result<(), InferError> {
    let all = list(run_dir)?;
    let excess = all.len().saturating_sub(keep);
    for (_, path) in all.into_iter().take(excess) {
        std::fs::remove_dir_all(&path).map_err(InferError::io(&path))?;
    }
    Ok(())
}

/// Finds the checkpoint to resume from: `path` itself if it is a checkpoint directory, else
/// the newest step checkpoint of the run directory `path`.
pub fn resolve(path: &Path) -> Result<PathBuf, InferError> {
    if path.join(STATE_FILE).is_file() {
        return Ok(path.to_path_buf());
    }
    list(path)?
        .pop()
        .map(|(_, dir)| dir)
        .ok_or_else(|| InferError::checkpoint(path, CheckpointFault::NoCheckpoint))
}
