//! The searches' passes over a step's logits on the host (log-normalizing, masking, choosing
//! candidates), and moving ids and scores between the host and the device.

use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::row_math::{LANES, any_above, log_normalizer};

/// A sentence's best continuations and its rows' EOS log-probabilities.
type BlockScores = (Vec<(usize, f32)>, Vec<f32>);

/// One beam-search step, scored: per sentence its best continuations `(row_in_block · vocab +
/// token, cumulative log-probability)`, best first; per row the log-probability of EOS.
pub(super) struct StepScores {
    pub(super) tops: Vec<Vec<(usize, f32)>>,
    pub(super) eos: Vec<f32>,
}

/// Scores one step of beam search from the logits `[rows, vocab]` (row-major, `rows` =
/// sentences × `width`): log-softmax per row, plus the row's cumulative log-probability, with
/// the `blocked` tokens left out, and the `n` best per sentence. Sentences in parallel.
pub(super) fn score_step(
    logits: &[f32],
    vocab: usize,
    width: usize,
    cumulative: &[f32],
    blocked: &[usize],
    eos: usize,
    n: usize,
) -> StepScores {
    let per_block: Vec<BlockScores> =
        crate::parallel::map_chunks(logits, width * vocab, |block, chunk| {
            let mut eos_log_p = Vec::with_capacity(width);
            let mut best = Vec::with_capacity(n + 1);
            for (beam, row) in chunk.chunks(vocab).enumerate() {
                let log_norm = log_normalizer(row);
                eos_log_p.push(row[eos] - log_norm);
                let offset = cumulative[block * width + beam] - log_norm;
                let base = beam * vocab;
                for (start, lane_values) in (0..).step_by(LANES).zip(row.chunks(LANES)) {
                    // Most candidates fall below the n-th best so far: whole chunks of them are
                    // passed over in one vectorized comparison.
                    if best.len() == n
                        && best
                            .last()
                            .is_some_and(|&(_, worst)| !any_above(lane_values, offset, worst))
                    {
                        continue;
                    }
                    for (token, &logit) in (start..).zip(lane_values) {
                        let value = logit + offset;
                        if best.len() == n && best.last().is_some_and(|&(_, worst)| value <= worst)
                        {
                            continue;
                        }
                        if !blocked.contains(&token) {
                            push_candidate(&mut best, n, base + token, value);
                        }
                    }
                }
            }
            (best, eos_log_p)
        });
    let mut scores = StepScores {
        tops: Vec::with_capacity(per_block.len()),
        eos: Vec::with_capacity(cumulative.len()),
    };
    for (top, eos_log_p) in per_block {
        scores.tops.push(top);
        scores.eos.extend(eos_log_p);
    }
    scores
}

/// The `n` largest of `values` as `(index, value)`, largest first; equal values in index
/// order. `-inf` counts as a value (forbidden continuations come last); `NaN` is skipped.
#[cfg(test)]
fn top_candidates(values: &[f32], n: usize) -> Vec<(usize, f32)> {
    let mut best = Vec::with_capacity(n + 1);
    for (index, &value) in values.iter().enumerate() {
        push_candidate(&mut best, n.min(values.len()), index, value);
    }
    best
}

/// Adds `(index, value)` to `best` (the `n` largest so far, largest first) if it belongs there.
/// Better: larger, or equal and earlier (indices come in increasing order, so an equal value
/// seen later is worse); `NaN` is skipped, `-inf` counts as a value.
fn push_candidate(best: &mut Vec<(usize, f32)>, n: usize, index: usize, value: f32) {
    if n == 0 || value.is_nan() {
        return;
    }
    if best.len() == n {
        match best.last() {
            Some(&(_, worst)) if value.total_cmp(&worst).is_le() => return,
            _ => {}
        }
    }
    let at = best.partition_point(|&(_, kept)| kept.total_cmp(&value).is_ge());
    best.insert(at, (index, value));
    best.truncate(n);
}

/// Greedy search's choice in one row of logits.
#[derive(Debug, Clone, Copy)]
pub(super) struct GreedyPick {
    /// The most probable token not `blocked` (the first of equals).
    pub(super) token: usize,
    /// Its log-probability.
    pub(super) log_p: f32,
    /// The log-probability of EOS (blocked or not).
    pub(super) eos_log_p: f32,
}

/// One greedy step, scored: per row of `logits` `[rows, vocab]` (row-major) the most probable
/// token that is not `blocked`, its log-probability and EOS's. Rows in parallel.
pub(super) fn greedy_step(
    logits: &[f32],
    vocab: usize,
    blocked: &[usize],
    eos: usize,
) -> Vec<GreedyPick> {
    crate::parallel::map_chunks(logits, vocab, |_, row| {
        let log_norm = log_normalizer(row);
        let mut best: Option<(usize, f32)> = None;
        for (start, chunk) in (0..).step_by(LANES).zip(row.chunks(LANES)) {
            // A chunk with nothing above the best so far is passed over in one comparison.
            if best.is_some_and(|(_, kept)| !any_above(chunk, 0.0, kept)) {
                continue;
            }
            for (token, &logit) in (start..).zip(chunk) {
                if best.is_some_and(|(_, kept)| logit <= kept) || logit.is_nan() {
                    continue;
                }
                if !blocked.contains(&token) {
                    best = Some((token, logit));
                }
            }
        }
        // Every token blocked (a vocabulary of PAD and EOS alone, before min_len): EOS, which
        // ends the sentence.
        let (token, logit) = best.unwrap_or((eos, f32::NEG_INFINITY));
        GreedyPick {
            token,
            log_p: logit - log_norm,
            eos_log_p: row[eos] - log_norm,
        }
    })
}

pub(super) fn token_column(tokens: &[u32], device: &Device) -> Tensor<2, Int> {
    let ids: Vec<i64> = tokens.iter().map(|&t| i64::from(t)).collect();
    Tensor::from_data(TensorData::new(ids, [tokens.len(), 1]), device)
}

pub(super) fn index_tensor(rows: &[usize], device: &Device) -> Tensor<1, Int> {
    let ids: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
    Tensor::from_data(TensorData::new(ids, [rows.len()]), device)
}

/// A step's logits on the host, as f32. Read in place through [`as_floats`]: copying them out
/// into a `Vec` (10 MB a step at 320 rows of 8,000) cost a memory pass per step.
pub(super) fn host_floats<const D: usize>(tensor: Tensor<D>) -> TensorData {
    tensor.into_data().convert::<f32>()
}

/// The values of [`host_floats`]' data.
pub(super) fn as_floats(data: &TensorData) -> &[f32] {
    data.as_slice::<f32>().expect("converted to f32")
}

pub(super) fn floats<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("converted to f32")
}

pub(super) fn ints<const D: usize>(tensor: Tensor<D, Int>) -> Vec<i64> {
    tensor
        .into_data()
        .convert::<i64>()
        .try_to_vec::<i64>()
        .expect("converted to i64")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_candidates_are_the_largest_in_order_ties_by_index() {
        let values = [
            -1.0,
            f32::NEG_INFINITY,
            -0.5,
            -3.0,
            -0.5,
            -2.0,
            f32::NEG_INFINITY,
            -0.1,
        ];
        assert_eq!(
            top_candidates(&values, 4),
            vec![(7, -0.1), (2, -0.5), (4, -0.5), (0, -1.0)]
        );
        // NaN is skipped.
        assert_eq!(
            top_candidates(&[f32::NAN, -2.0, f32::NAN], 2),
            vec![(1, -2.0)]
        );
        // Asked for more than there are: all, -inf last, in index order.
        let all = top_candidates(&values, 20);
        assert_eq!(all.len(), 8);
        assert_eq!(&all[6..], &[(1, f32::NEG_INFINITY), (6, f32::NEG_INFINITY)]);
        // Against a full sort, on values with many ties.
        let mut state = 7u64;
        let values: Vec<f32> = (0..5000)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                -(((state >> 33) % 200) as f32) / 10.0
            })
            .collect();
        let mut sorted: Vec<(usize, f32)> = values.iter().copied().enumerate().collect();
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for n in [1, 2, 10, 64] {
            assert_eq!(top_candidates(&values, n), sorted[..n].to_vec(), "n = {n}");
        }
    }

    #[test]
    fn greedy_step_takes_the_first_best_unblocked_token_with_true_log_probabilities() {
        // Two rows of five tokens; EOS = 3, PAD = 0 blocked.
        let logits = [
            9.0,
            1.0,
            2.0,
            0.5,
            2.0, // PAD holds the maximum; 2 and 4 tie: 2 wins
            f32::NAN,
            -1.0,
            0.0,
            3.0,
            -2.0, // NaN skipped; EOS is the best
        ];
        let picks = greedy_step(&logits, 5, &[0], 3);
        assert_eq!((picks[0].token, picks[1].token), (2, 3));
        for (row, pick) in logits.chunks(5).zip(&picks) {
            // Against the plain log-softmax in f64 (in f64 the NaN row's normalizer is NaN:
            // skip it; Rosetta's counts the NaN as nothing, see `row_math::log_normalizer`).
            let norm = row.iter().map(|&x| f64::from(x).exp()).sum::<f64>().ln();
            if norm.is_finite() {
                let expected = f64::from(row[pick.token]) - norm;
                assert!((f64::from(pick.log_p) - expected).abs() < 1e-5, "{pick:?}");
                let eos = f64::from(row[3]) - norm;
                assert!((f64::from(pick.eos_log_p) - eos).abs() < 1e-5, "{pick:?}");
            }
        }
        // Every token blocked: EOS, with probability 0.
        let all = greedy_step(&[1.0, 2.0], 2, &[0, 1], 1);
        assert_eq!(all[0].token, 1);
        assert_eq!(all[0].log_p, f32::NEG_INFINITY);
    }

    /// The scans that pass over chunks of logits in one comparison pick what a plain scan over
    /// every logit picks: rows with many ties, NaN, blocked tokens, vocabularies shorter and
    /// longer than a chunk, and their remainders.
    #[test]
    fn chunked_scans_equal_plain_scans() {
        let mut state = 0x2545_f491_u32;
        let mut next = move |n: u32| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state % n
        };
        let (blocked, eos) = ([0usize, 5], 3);
        for vocab in [4, 7, 16, 17, 40, 100] {
            for width in [1, 2, 3] {
                for n in [1, 2, 6] {
                    let rows = 2 * width;
                    // Few distinct values (ties everywhere), now and then a NaN or a large one.
                    let logits: Vec<f32> = (0..rows * vocab)
                        .map(|_| match next(50) {
                            0 => f32::NAN,
                            1 => 9.0,
                            v => (v % 5) as f32 - 2.0,
                        })
                        .collect();
                    let cumulative: Vec<f32> = (0..rows).map(|_| -(next(4) as f32)).collect();
                    let scored = score_step(&logits, vocab, width, &cumulative, &blocked, eos, n);
                    for (block, chunk) in logits.chunks(width * vocab).enumerate() {
                        let mut plain = Vec::new();
                        for (beam, row) in chunk.chunks(vocab).enumerate() {
                            let offset = cumulative[block * width + beam] - log_normalizer(row);
                            for (token, &logit) in row.iter().enumerate() {
                                if !blocked.contains(&token) {
                                    push_candidate(
                                        &mut plain,
                                        n,
                                        beam * vocab + token,
                                        logit + offset,
                                    );
                                }
                            }
                        }
                        assert_eq!(
                            scored.tops[block], plain,
                            "vocab {vocab}, width {width}, n {n}"
                        );
                    }
                    let picks = greedy_step(&logits, vocab, &blocked, eos);
                    for (row, pick) in logits.chunks(vocab).zip(&picks) {
                        let mut plain: Option<(usize, f32)> = None;
                        for (token, &logit) in row.iter().enumerate() {
                            let better = plain.is_none_or(|(_, kept)| logit > kept);
                            if better && !logit.is_nan() && !blocked.contains(&token) {
                                plain = Some((token, logit));
                            }
                        }
                        assert_eq!(pick.token, plain.map_or(eos, |(token, _)| token));
                    }
                }
            }
        }
    }
}
