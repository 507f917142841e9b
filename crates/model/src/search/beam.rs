//! Beam search, batched over sentences, with the finished hypotheses kept per sentence.

use super::ensemble::Ensemble;
use super::host::{as_floats, host_floats, index_tensor, score_step, token_column};
use super::{BeamStop, Hypothesis, SearchConfig, prepare};
use crate::error::ModelError;
use crate::transformer::Transformer;
use burn::tensor::{Int, Tensor};

/// Beam search with `config.beam_size` beams per sentence; returns, for each row of `source`
/// `[batch, src_len]`, its `config.n_best` best hypotheses by score, best first (fewer only
/// if the vocabulary cannot fill the beams).
///
/// # Errors
/// As [`greedy`](fn@super::greedy).
pub fn beam_search(
    model: &Transformer,
    source: Tensor<2, Int>,
    config: &SearchConfig,
) -> Result<Vec<Vec<Hypothesis>>, ModelError> {
    beam_search_ensemble(&[model], source, config)
}

/// Beam search with an ensemble: candidates are scored by the mean of the `models'`
/// log-probabilities (renormalized), each model with its own key/value cache. An ensemble of
/// one is [`beam_search`], bit for bit.
///
/// # Errors
/// As [`greedy_ensemble`](super::greedy_ensemble).
pub fn beam_search_ensemble(
    models: &[&Transformer],
    source: Tensor<2, Int>,
    config: &SearchConfig,
) -> Result<Vec<Vec<Hypothesis>>, ModelError> {
    let max_lens = prepare(models, &source, config)?;
    let device = source.device();
    let k = config.beam_size;
    let batch = max_lens.len();
    let mut stepper = Ensemble::new(models, source, config.use_cache);

    // The stepper's rows are `active.len()` blocks of `width` beams (width 1 at the first step).
    let mut active: Vec<usize> = (0..batch).collect();
    let mut width = 1;
    let mut row_tokens: Vec<Vec<u32>> = vec![Vec::new(); batch];
    let mut row_log_probs = vec![0.0f32; batch];
    let mut last = vec![config.tokens.bos; batch];
    let mut finished: Vec<Vec<Hypothesis>> = vec![Vec::new(); batch];
    // Hypotheses finished per sentence, all counted (`finished` keeps only the best `kept`).
    let mut n_finished = vec![0usize; batch];
    // `transformers` compares the open beams with the worst of its `k` best finished ones.
    let kept = if config.stop == BeamStop::Transformers {
        k
    } else {
        config.n_best
    };
    let mut step = 0;
    while !active.is_empty() {
        // Log-softmax, masking, the beams' cumulative log-probabilities and the best 2k of
        // each sentence's width · vocab candidates, in one pass over the logits on the host:
        // Burn's `topk` sorts whole rows, and the tensor ops around it each wrote a copy of the
        // `[rows, vocab]` scores (together about 60% of beam search's time at batch 64).
        let logits = host_floats(stepper.step(token_column(&last, &device)));
        let logits = as_floats(&logits);
        let vocab = logits.len() / (active.len() * width);
        debug_assert_eq!(
            logits.len(),
            active.len() * width * vocab,
            "one row per beam"
        );
        let n_candidates = (2 * k).min(width * vocab);
        let scored = score_step(
            logits,
            vocab,
            width,
            &row_log_probs,
            &config.blocked(step),
            config.eos(),
            n_candidates,
        );
        let (tops, eos_column) = (scored.tops, scored.eos);

        let mut next_active = Vec::with_capacity(active.len());
        let mut kept_blocks = Vec::with_capacity(active.len());
        let mut parents = Vec::with_capacity(active.len() * k);
        let mut next_tokens = Vec::with_capacity(active.len() * k);
        let mut next_log_probs = Vec::with_capacity(active.len() * k);
        let mut next_last = Vec::with_capacity(active.len() * k);
        for (block, &sentence) in active.iter().enumerate() {
            let base = block * width;
            if step >= max_lens[sentence] {
                // Maximum length: every open beam ends here with EOS.
                for row in base..base + width {
                    // `transformers` forces EOS there with a score of 0, not its probability.
                    let eos_log_p = if config.stop == BeamStop::Transformers {
                        0.0
                    } else {
                        eos_column[row]
                    };
                    let log_prob = row_log_probs[row] + eos_log_p;
                    if log_prob.is_finite() {
                        let tokens = row_tokens[row].clone();
                        let hypothesis = Hypothesis::new(tokens, log_prob, config);
                        keep_best(&mut finished[sentence], hypothesis, kept);
                    }
                }
                continue;
            }
            let mut continuing: Vec<(usize, u32, f32)> = Vec::with_capacity(k);
            for (rank, &(flat, value)) in tops[block].iter().enumerate() {
                if !value.is_finite() {
                    break; // sorted: only forbidden continuations remain
                }
                let (row, token) = (base + flat / vocab, flat % vocab);
                if token == config.eos() {
                    if rank < k {
                        let tokens = row_tokens[row].clone();
                        keep_best(
                            &mut finished[sentence],
                            Hypothesis::new(tokens, value, config),
                            kept,
                        );
                        n_finished[sentence] += 1;
                    }
                } else {
                    continuing.push((row, token as u32, value));
                    if continuing.len() == k {
                        break;
                    }
                }
            }
            let Some(&(_, _, best_open)) = continuing.first() else {
                continue;
            };
            let done = match config.stop {
                BeamStop::Bound => {
                    let bound = config.best_final_score(best_open, step + 1, max_lens[sentence]);
                    finished[sentence].len() >= config.n_best
                        && finished[sentence][config.n_best - 1].score >= bound
                }
                BeamStop::Count => n_finished[sentence] >= k,
                BeamStop::Transformers => {
                    // Its heuristic: the best open beam, penalised at its current length (step +
                    // 1 tokens), against the worst of the k best finished.
                    finished[sentence].len() >= k
                        && config.penalised(best_open, step + 1) <= finished[sentence][k - 1].score
                }
            };
            if done {
                continue;
            }
            // A vocabulary too small to fill the beams: pad with dead copies (never finished).
            while continuing.len() < k {
                let (row, token, _) = continuing[0];
                continuing.push((row, token, f32::NEG_INFINITY));
            }
            next_active.push(sentence);
            kept_blocks.push(block);
            for (row, token, log_prob) in continuing {
                let mut tokens = row_tokens[row].clone();
                tokens.push(token);
                parents.push(row);
                next_tokens.push(tokens);
                next_log_probs.push(log_prob);
                next_last.push(token);
            }
        }
        if next_active.is_empty() {
            break;
        }
        // The sentences' cross-attention caches move only when some sentence has finished.
        let sentences =
            (kept_blocks.len() < active.len()).then(|| index_tensor(&kept_blocks, &device));
        stepper.select_beams(index_tensor(&parents, &device), sentences, k);
        active = next_active;
        width = k;
        row_tokens = next_tokens;
        row_log_probs = next_log_probs;
        last = next_last;
        step += 1;
    }
    for hypotheses in &mut finished {
        hypotheses.truncate(config.n_best);
    }
    Ok(finished)
}

/// Inserts `hypothesis` into `best` (sorted by score, best first; equal scores keep the order in
/// which they finished) and keeps only the `n` best.
fn keep_best(best: &mut Vec<Hypothesis>, hypothesis: Hypothesis, n: usize) {
    let at = best.partition_point(|h| h.score >= hypothesis.score);
    if at < n {
        best.insert(at, hypothesis);
        best.truncate(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_best_keeps_the_n_best_in_order_stably() {
        let c = SearchConfig::new(crate::SpecialTokens::ROSETTA).with_length_penalty(0.0);
        let mut best = Vec::new();
        for (token, log_prob) in [(1, -3.0), (2, -1.0), (3, -2.0), (4, -1.0), (5, -0.5)] {
            keep_best(&mut best, Hypothesis::new(vec![token], log_prob, &c), 3);
        }
        let kept: Vec<u32> = best.iter().map(|h| h.tokens[0]).collect();
        // -0.5, then the two -1.0 in the order they finished.
        assert_eq!(kept, vec![5, 2, 4]);
    }
}
