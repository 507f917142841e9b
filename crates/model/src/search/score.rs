//! Scoring given target sequences by teacher forcing.

use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor, TensorData};

use super::host::floats;
use super::{Hypothesis, SearchConfig, prepare};
use crate::error::ModelError;
use crate::framing::{Frame, frame_rows, frame_tensor};
use crate::transformer::Transformer;

/// Scores given target sequences by teacher forcing: for row `i` of `source` `[batch, src_len]`,
/// the log-probability of `targets[i]` followed by EOS (summed in the same order as the
/// searches sum it) and its length-penalised score. EOS masking and `min_len` are not applied:
/// they never change the probability of a sequence the searches can produce.
///
/// # Errors
/// As [`greedy`](fn@super::greedy); and [`ModelError::Search`] if `targets.len()` differs from the
/// batch size, or a sequence is longer than the model's `max_positions − 1`.
pub fn score_sequences(
    model: &Transformer,
    source: Tensor<2, Int>,
    targets: &[Vec<u32>],
    config: &SearchConfig,
) -> Result<Vec<Hypothesis>, ModelError> {
    prepare(&[model], &source, config)?;
    let device = source.device();
    let batch = source.dims()[0];
    let refuse = |reason: String| Err(ModelError::Search { reason });
    if targets.len() != batch {
        return refuse(format!(
            "{} target sequences for {batch} sources",
            targets.len()
        ));
    }
    let longest = targets.iter().map(Vec::len).max().unwrap_or(0);
    if longest + 1 > model.max_positions() {
        return refuse(format!(
            "a target of {longest} tokens does not fit the model's {} positions with its start",
            model.max_positions()
        ));
    }
    let input = frame_tensor(targets, Frame::Bos, &config.tokens, &device);
    let (output, len) = frame_rows(targets, Frame::Eos, &config.tokens);
    let output = Tensor::<3, Int>::from_data(TensorData::new(output, [batch, len, 1]), &device);
    let log_p = log_softmax(model.forward(source, input), 2);
    let picked = floats(log_p.gather(2, output));
    Ok(targets
        .iter()
        .enumerate()
        .map(|(i, target)| {
            let log_prob = picked[i * len..i * len + target.len() + 1]
                .iter()
                .fold(0.0f32, |sum, &lp| sum + lp);
            Hypothesis::new(target.clone(), log_prob, config)
        })
        .collect())
}
