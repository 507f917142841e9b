//! Checkpoint averaging: the element-wise mean of the parameters of several checkpoints of one
//! run (as fairseq's `average_checkpoints.py`), usually the last few, for a smoother model.

use std::path::{Path, PathBuf};

use rosetta_model::Transformer;
use rosetta_model::burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use rosetta_model::burn::tensor::{Device, Tensor, TensorData};

use crate::checkpoint::{self, CheckpointState};
use crate::error::{CheckpointFault, InferError};

struct Sum {
    totals: Vec<Vec<f64>>,
    index: usize,
    /// The first parameter whose values could not be read as `f32`, with why.
    error: Option<String>,
}

impl ModuleVisitor for Sum {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let values = param.val().into_data().convert::<f32>();
        let values = match values.as_slice::<f32>() {
            Ok(values) => values,
            Err(e) => {
                self.error
                    .get_or_insert_with(|| format!("parameter {}: {e:?}", self.index));
                &[]
            }
        };
        if self.totals.len() <= self.index {
            self.totals.push(vec![0.0; values.len()]);
        }
        for (t, v) in self.totals[self.index].iter_mut().zip(values) {
            *t += f64::from(*v);
        }
        self.index += 1;
    }
}

struct Replace {
    means: Vec<Vec<f32>>,
    index: usize,
}

impl ModuleMapper for Replace {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let values = std::mem::take(&mut self.means[self.index]);
        self.index += 1;
        param.map(|tensor| {
            let shape = tensor.shape();
            Tensor::from_data(TensorData::new(values, shape), &tensor.device())
        })
    }
}

/// The element-wise mean of the models in checkpoint directories `dirs` (of the moving averages
/// of their weights, in runs that kept them: the models they translate with), with the state of
/// the newest (highest step) of them. All must share one model configuration and tokenizer.
pub fn average(
    dirs: &[PathBuf],
    device: &Device,
) -> Result<(Transformer, CheckpointState), InferError> {
    let Some(first) = dirs.first() else {
        return Err(InferError::checkpoint(
            PathBuf::new(),
            CheckpointFault::NothingToAverage,
        ));
    };
    let mut newest = checkpoint::read_state(first)?;
    let mut sum = Sum {
        totals: Vec::new(),
        index: 0,
        error: None,
    };
    let mut base = None;
    for dir in dirs {
        let state = checkpoint::read_state(dir)?;
        if state.model != newest.model
            || state.tokenizer_fingerprint != newest.tokenizer_fingerprint
        {
            return Err(InferError::checkpoint(
                dir,
                CheckpointFault::OtherRun {
                    first: first.clone(),
                },
            ));
        }
        let model = checkpoint::load_translation_model(dir, &state, device)?;
        sum.index = 0;
        model.visit(&mut sum);
        if let Some(reason) = sum.error.take() {
            return Err(InferError::checkpoint(
                dir,
                CheckpointFault::WeightsNotF32(reason),
            ));
        }
        if state.step >= newest.step {
            newest = state;
        }
        base.get_or_insert(model);
    }
    let n = dirs.len() as f64;
    let means = sum
        .totals
        .into_iter()
        .map(|t| t.into_iter().map(|v| (v / n) as f32).collect())
        .collect();
    let model = base
        .map(|m| m.map(&mut Replace { means, index: 0 }))
        .ok_or_else(|| InferError::checkpoint(first, CheckpointFault::NothingToAverage))?;
    Ok((model, newest))
}

/// The newest `n` step checkpoints of the run in `run_dir`, oldest first.
pub fn last_checkpoints(run_dir: &Path, n: usize) -> Result<Vec<PathBuf>, InferError> {
    let all = checkpoint::list(run_dir)?;
    if all.len() < n {
        return Err(InferError::checkpoint(
            run_dir,
            CheckpointFault::TooFewCheckpoints {
                found: all.len(),
                asked: n,
            },
        ));
    }
    let skip = all.len() - n;
    Ok(all.into_iter().skip(skip).map(|(_, p)| p).collect())
}
