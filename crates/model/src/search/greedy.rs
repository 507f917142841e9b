//! Greedy search: at every step the most probable token.

use super::ensemble::Ensemble;
use super::host::{as_floats, greedy_step, host_floats, index_tensor, token_column};
use super::{Hypothesis, SearchConfig, prepare};
use crate::error::ModelError;
use crate::transformer::Transformer;
use burn::tensor::{Int, Tensor};

/// Greedy search: at every step the most probable token. Returns one hypothesis per row of
/// `source` `[batch, src_len]` (padded with `config.tokens.pad`, usually ending with EOS).
///
/// # Errors
/// [`ModelError::InvalidConfig`] if `config` is invalid ([`SearchConfig::validate`]);
/// [`ModelError::Search`] if a special token of its `tokens` is outside the target vocabulary,
/// its padding id is not the model's, or `source` is longer than the model's `max_positions`
/// (cut such inputs first).
pub fn greedy(
    model: &Transformer,
    source: Tensor<2, Int>,
    config: &SearchConfig,
) -> Result<Vec<Hypothesis>, ModelError> {
    greedy_ensemble(&[model], source, config)
}

/// Greedy search with an ensemble: at every step the most probable token under the mean of the
/// `models`' log-probabilities (renormalized; fairseq's `--path a:b`, Marian's `--models`), each
/// model with its own key/value cache. An ensemble of one is [`greedy`], bit for bit.
///
/// # Errors
/// As [`greedy`]; and [`ModelError::Search`] if `models` is empty or their target vocabularies
/// differ.
pub fn greedy_ensemble(
    models: &[&Transformer],
    source: Tensor<2, Int>,
    config: &SearchConfig,
) -> Result<Vec<Hypothesis>, ModelError> {
    let max_lens = prepare(models, &source, config)?;
    let device = source.device();
    let batch = max_lens.len();
    let mut stepper = Ensemble::new(models, source, config.use_cache);

    // `active[row]` is the sentence decoded in row `row` of the stepper.
    let mut active: Vec<usize> = (0..batch).collect();
    let mut tokens: Vec<Vec<u32>> = vec![Vec::new(); batch];
    let mut log_probs = vec![0.0f32; batch];
    let mut results: Vec<Option<Hypothesis>> = vec![None; batch];
    let mut last = vec![config.tokens.bos; batch];
    let mut step = 0;
    while !active.is_empty() {
        let rows = active.len();
        // The arg-max and the two log-probabilities it needs, in one pass over each row of
        // logits on the host, instead of a log-softmax, a mask and a max over `[rows, vocab]`.
        let logits = host_floats(stepper.step(token_column(&last, &device)));
        let logits = as_floats(&logits);
        debug_assert_eq!(logits.len() % rows, 0, "one row per sentence");
        let picks = greedy_step(
            logits,
            logits.len() / rows,
            &config.blocked(step),
            config.eos(),
        );

        let mut keep = Vec::with_capacity(rows);
        let mut next_last = Vec::with_capacity(rows);
        for (row, &sentence) in active.iter().enumerate() {
            let pick = picks[row];
            let (token, log_p) = if step >= max_lens[sentence] {
                (config.eos(), pick.eos_log_p)
            } else {
                (pick.token, pick.log_p)
            };
            log_probs[sentence] += log_p;
            if token == config.eos() {
                let done = std::mem::take(&mut tokens[sentence]);
                results[sentence] = Some(Hypothesis::new(done, log_probs[sentence], config));
            } else {
                tokens[sentence].push(token as u32);
                keep.push(row);
                next_last.push(token as u32);
            }
        }
        if keep.len() < rows && !keep.is_empty() {
            stepper.select(index_tensor(&keep, &device));
        }
        active = keep.iter().map(|&row| active[row]).collect();
        last = next_last;
        step += 1;
    }
    // Every sentence ends by its maximum length, where EOS is taken whatever its probability.
    Ok(results.into_iter().flatten().collect())
}
