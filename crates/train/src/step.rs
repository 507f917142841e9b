//! One optimizer step: forward, label-smoothed loss, backward over one or more batches
//! (gradient accumulation), global-norm clipping, Adam. The training loop and the training
//! benchmark both take their steps here, so that the benchmark measures what training runs.

use rosetta_data::TranslationBatch;
use rosetta_model::Transformer;
use rosetta_model::burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer};
use rosetta_model::burn::tensor::Device;

use crate::clip::{clip_global_norm, global_norm};
use crate::error::TrainError;
use crate::loss::SequenceCrossEntropy;
use crate::run_log::Accumulated;

/// What one optimizer step produced.
#[derive(Debug)]
pub struct StepOutput {
    /// Loss, likelihood, token and accuracy sums over the step's batches.
    pub sums: Accumulated,
    /// The global gradient norm before clipping.
    pub grad_norm: f64,
    /// The updated model.
    pub model: Transformer,
}

/// How to take a step.
#[derive(Debug, Clone, Copy)]
pub struct StepSettings {
    /// The optimizer step's number (1-based), for error messages.
    pub step: u64,
    /// Learning rate of this step.
    pub learning_rate: f64,
    /// Clip the global gradient norm to this value; 0 = no clipping.
    pub clip_norm: f64,
    /// Target tokens (non-padding) over all batches of the step: the loss is summed over the
    /// batches and divided by this, so accumulation equals one large batch.
    pub group_tokens: usize,
}

/// Takes one optimizer step over `batches`, each with the seed its dropout masks are drawn
/// from (set on `train_device` just before its forward pass, so a resumed run replays them).
///
/// Batches are produced lazily by the iterator: only one batch's activations are alive at a
/// time. A non-finite loss or gradient norm is an error naming the step.
pub fn optimizer_step(
    model: Transformer,
    optimizer: &mut ModuleOptimizer,
    loss: &SequenceCrossEntropy,
    train_device: &Device,
    batches: impl IntoIterator<Item = (u64, TranslationBatch)>,
    settings: StepSettings,
) -> Result<StepOutput, TrainError> {
    let step = settings.step;
    let mut accumulator = GradientsAccumulator::<Transformer>::new();
    let mut sums = Accumulated::default();
    for (seed, batch) in batches {
        train_device.seed(seed);
        let logits = model.forward(batch.source, batch.target_input);
        let out = loss.forward(logits, batch.target_output);
        let loss_sum = out.sum.clone().into_scalar::<f32>() as f64;
        if !loss_sum.is_finite() {
            return Err(TrainError::NonFiniteLoss {
                step,
                value: loss_sum,
            });
        }
        sums.loss += loss_sum;
        sums.nll += out.nll.into_scalar::<f32>() as f64 * batch.target_tokens as f64;
        sums.tokens += batch.target_tokens as u64;
        sums.correct += out.correct.into_scalar::<i64>() as u64;
        let objective = out.sum.div_scalar(settings.group_tokens.max(1) as f64);
        let grads = GradientsParams::from_grads(objective.backward(), &model);
        accumulator.accumulate(&model, grads);
    }
    let mut grads = accumulator.grads();
    let grad_norm = if settings.clip_norm > 0.0 {
        clip_global_norm(&model, &mut grads, settings.clip_norm)
    } else {
        global_norm(&model, &grads)
    };
    if !grad_norm.is_finite() {
        return Err(TrainError::NonFiniteLoss {
            step,
            value: grad_norm,
        });
    }
    let model = optimizer.step(settings.learning_rate, model, grads);
    Ok(StepOutput {
        sums,
        grad_norm,
        model,
    })
}
