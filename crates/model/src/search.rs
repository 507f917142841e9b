//! Greedy and beam search over a trained [`Transformer`], batched over sentences.
//!
//! Both searches encode the whole batch once and then advance every unfinished sentence one
//! target position per step, with the key/value cache of [`crate::incremental`] (or, with
//! [`SearchConfig::use_cache`] off, by re-running the decoder over the whole prefix: slower,
//! the same tokens; kept for testing and benchmarking). Sentences that finish leave the batch.
//!
//! **Scores.** A hypothesis `y_1 … y_n` followed by EOS has
//! `log_prob = Σ log p(y_t | y_<t, x) + log p(EOS | y, x)` (natural logarithms) and a
//! length-penalised score `log_prob / lp`, with `alpha` = [`SearchConfig::length_penalty`]
//! (`alpha = 0`: the raw log-probability) and one of two penalties ([`LengthNorm`]):
//!
//! ```text
//! Gnmt (default):  lp = ((5 + len) / 6)^alpha     GNMT (Wu et al. 2016), OpenNMT-py's "wu"
//! Power:           lp = len^alpha                 fairseq's lenpen, CTranslate2's length_penalty
//! ```
//!
//! where `len = n + 1` counts the EOS. Beams are compared by raw `log_prob` while they grow;
//! finished hypotheses by `score`.
//!
//! **Lengths.** Sentence `i`, with `s_i` source tokens (non-padding, EOS included), gets at most
//!
//! ```text
//! max_len_i = min(floor(max_len_a · s_i + max_len_b), max_positions − 1)
//! ```
//!
//! target tokens before its EOS: at step `max_len_i` every hypothesis still open is ended with
//! EOS (scored with the model's probability of EOS there). The decoder thus reads positions
//! `0 ..= max_len_i` (BOS first), never more than the model's `max_positions`. While fewer than
//! [`SearchConfig::min_len`] tokens have been produced, EOS is forbidden. The padding token is
//! never produced.
//!
//! **Beam search**: at every step the `2k` best continuations of the sentence's `k` beams are
//! ranked by cumulative log-probability; those ending in EOS among the first `k` are set aside
//! as finished (the rule of fairseq and CTranslate2), the `k` best others continue. When a
//! sentence stops is [`SearchConfig::stop`] ([`BeamStop`]):
//!
//! - `Bound` (default): when no open beam can still reach the score of its `n_best`-th best
//!   finished hypothesis (or at its maximum length). An open beam with log-probability `L`
//!   after `n` tokens can at best end as `L / max(lp(n + 1), lp(max_len + 1))`
//!   (log-probabilities only fall as tokens are added; the penalty is monotonic in the
//!   length), so the stop loses nothing the beams hold.
//! - `Count`: once `k` hypotheses have finished: fairseq's rule, and CTranslate2's when its
//!   length penalty is not 0 (with 0 it stops when its best candidate is EOS, which gives the
//!   bound rule's output). Kept to decode as they do; it is not safe for a confident model: the
//!   EOS continuations of its weak beams fill the count while the strong beam is still growing,
//!   and the search returns a cut-off prefix of the right translation.
//!
//! The sentence's `n_best` best finished hypotheses by `score` are returned, best first. At the
//! first step only the single BOS row is expanded, so the beams start distinct. With `k = 1`
//! this is exactly greedy search under the count rule, and under the bound rule when
//! `alpha <= 0` (with `alpha > 0` the bound rule may go on past an EOS to a longer, better-scored
//! hypothesis). At the maximum length the open beams are closed with EOS, scored (as fairseq
//! does; CTranslate2 closes them without an EOS).
//!
//! The model must be in inference mode (`model.valid()`, or built on a device without
//! autodiff), otherwise dropout makes every call different.

use std::str::FromStr;

use burn::config::Config;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use serde::de::value::StrDeserializer;
use serde::de::{DeserializeOwned, IntoDeserializer};
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::framing::{Frame, SpecialTokens, frame_rows, frame_tensor};
use crate::incremental::DecoderState;
use crate::row_math::{LANES, any_above, log_normalizer};
use crate::transformer::{Encoded, Transformer};

/// The settings of [`greedy`] and [`beam_search`].
#[derive(Config, Debug, PartialEq)]
pub struct SearchConfig {
    /// The vocabulary's special tokens: BOS is fed at the first step, EOS finishes a
    /// hypothesis, PAD fills the source batch and is never produced.
    pub tokens: SpecialTokens,
    /// Number of beams `k` per sentence ([`beam_search`] only).
    #[config(default = 5)]
    pub beam_size: usize,
    /// Number of hypotheses returned per sentence by [`beam_search`], at most `beam_size`.
    #[config(default = 1)]
    pub n_best: usize,
    /// Length-penalty exponent `alpha` of [`Self::length_norm`]: `score = log_prob / lp(len)`.
    #[config(default = 0.6)]
    pub length_penalty: f64,
    /// The length penalty's form: GNMT's (default) or CTranslate2's power of the length.
    #[config(default = "LengthNorm::Gnmt")]
    pub length_norm: LengthNorm,
    /// When a sentence's beam search stops ([`beam_search`] only).
    #[config(default = "BeamStop::Bound")]
    pub stop: BeamStop,
    /// `a` of the maximum output length `floor(a · source_len + b)`.
    #[config(default = 1.5)]
    pub max_len_a: f64,
    /// `b` of the maximum output length `floor(a · source_len + b)`.
    #[config(default = 10)]
    pub max_len_b: usize,
    /// Minimum number of tokens before EOS is allowed (capped by the maximum length). With
    /// `min_len = max_len_b` and `max_len_a = 0` every output has exactly that length, which
    /// the decoding benchmark uses.
    #[config(default = 0)]
    pub min_len: usize,
    /// Decode incrementally with the key/value cache (`true`), or re-run the decoder over the
    /// whole prefix at every step (`false`: same tokens, quadratic cost).
    #[config(default = true)]
    pub use_cache: bool,
}

/// The form of the length penalty `lp` in `score = log_prob / lp` ([`SearchConfig::score`]);
/// written `gnmt` or `power` (options, JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LengthNorm {
    /// GNMT's `((5 + len) / 6)^alpha` (Wu et al. 2016), `len` counting the EOS.
    #[default]
    Gnmt,
    /// `len^alpha`, `len` counting the EOS: fairseq's `--lenpen`, CTranslate2's
    /// `length_penalty`.
    Power,
}

/// When a sentence's beam search stops (see the module documentation); written `bound` or
/// `count` (options, JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BeamStop {
    /// When no open beam can still beat the `n_best`-th finished hypothesis: exact.
    #[default]
    Bound,
    /// Once `beam_size` hypotheses have finished: fairseq's rule, and CTranslate2's with a
    /// length penalty other than 0.
    Count,
}

impl FromStr for LengthNorm {
    type Err = String;

    /// The name as written in options and JSON (`gnmt`, `power`).
    fn from_str(name: &str) -> Result<Self, String> {
        from_name(name)
    }
}

impl FromStr for BeamStop {
    type Err = String;

    /// The name as written in options and JSON (`bound`, `count`).
    fn from_str(name: &str) -> Result<Self, String> {
        from_name(name)
    }
}

/// A unit enum from its serde name, so that command-line flags and JSON spell it alike.
fn from_name<T: DeserializeOwned>(name: &str) -> Result<T, String> {
    let name: StrDeserializer<'_, serde::de::value::Error> = name.into_deserializer();
    T::deserialize(name).map_err(|e| e.to_string())
}

impl SearchConfig {
    /// Checks that the beam size is at least 1, that `1 <= n_best <= beam_size`, and that the
    /// length settings are finite and non-negative.
    pub fn validate(&self) -> Result<(), ModelError> {
        let invalid = |key, reason: String| Err(ModelError::InvalidConfig { key, reason });
        if self.beam_size == 0 {
            return invalid("beam_size", "must be at least 1".into());
        }
        if self.n_best == 0 || self.n_best > self.beam_size {
            return invalid(
                "n_best",
                format!(
                    "is {}, must be between 1 and beam_size ({})",
                    self.n_best, self.beam_size
                ),
            );
        }
        if !self.length_penalty.is_finite() {
            return invalid("length_penalty", "must be finite".into());
        }
        if !(self.max_len_a.is_finite() && self.max_len_a >= 0.0) {
            return invalid("max_len_a", format!("is {}, must be >= 0", self.max_len_a));
        }
        Ok(())
    }

    /// The length penalty `lp(len)` of a hypothesis of `len` tokens, its EOS included:
    /// `((5 + len) / 6)^alpha` (GNMT) or `len^alpha` (power).
    pub fn length_penalty_factor(&self, len: usize) -> f64 {
        match self.length_norm {
            LengthNorm::Gnmt => ((5.0 + len as f64) / 6.0).powf(self.length_penalty),
            LengthNorm::Power => (len as f64).powf(self.length_penalty),
        }
    }

    /// The length-penalised score of a hypothesis of `n_tokens` tokens (EOS not included) whose
    /// log-probability, EOS included, is `log_prob`: `log_prob / lp(n_tokens + 1)`.
    pub fn score(&self, log_prob: f32, n_tokens: usize) -> f32 {
        (f64::from(log_prob) / self.length_penalty_factor(n_tokens + 1)) as f32
    }

    /// The best score that an open hypothesis with log-probability `log_prob` after `n_tokens`
    /// tokens can still end with, if it may grow to `max_len` tokens: adding tokens (and EOS)
    /// only lowers the log-probability, and both penalties are monotonic in the length, so
    /// this is `log_prob / max(lp(n_tokens + 1), lp(max_len + 1))`.
    pub fn best_final_score(&self, log_prob: f32, n_tokens: usize, max_len: usize) -> f32 {
        let penalty = self
            .length_penalty_factor(n_tokens + 1)
            .max(self.length_penalty_factor(max_len.max(n_tokens) + 1));
        (f64::from(log_prob.min(0.0)) / penalty) as f32
    }

    /// The end-of-sentence id, as a column of the logits.
    fn eos(&self) -> usize {
        self.tokens.eos as usize
    }

    /// The tokens that may not be produced at decoding step `step`: PAD always, EOS before
    /// `min_len`.
    fn blocked(&self, step: usize) -> Vec<usize> {
        if step < self.min_len {
            vec![self.tokens.pad as usize, self.tokens.eos as usize]
        } else {
            vec![self.tokens.pad as usize]
        }
    }

    /// The most tokens (EOS not included) produced for a source of `source_len` tokens:
    /// `min(floor(a · source_len + b), max_positions − 1)`.
    pub fn max_output_len(&self, source_len: usize, max_positions: usize) -> usize {
        // In f64, so that no setting can overflow: the cap below bounds the result.
        let wanted = (self.max_len_a * source_len as f64).floor() + self.max_len_b as f64;
        let cap = max_positions.saturating_sub(1);
        if wanted.is_finite() && wanted < cap as f64 {
            wanted.max(0.0) as usize
        } else {
            cap
        }
    }
}

/// One output of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Hypothesis {
    /// The target tokens, without BOS and EOS.
    pub tokens: Vec<u32>,
    /// The length-penalised score ([`SearchConfig::score`]).
    pub score: f32,
    /// The sum of the natural-log probabilities of the tokens and the final EOS.
    pub log_prob: f32,
}

impl Hypothesis {
    fn new(tokens: Vec<u32>, log_prob: f32, config: &SearchConfig) -> Self {
        Self {
            score: config.score(log_prob, tokens.len()),
            tokens,
            log_prob,
        }
    }
}

/// Greedy search: at every step the most probable token. Returns one hypothesis per row of
/// `source` `[batch, src_len]` (padded with `config.tokens.pad`, usually ending with EOS).
///
/// # Panics
/// If `config` is invalid ([`SearchConfig::validate`]), a special token of its `tokens` is outside
/// the target vocabulary or its padding id is not the model's, or `source` is longer than the
/// model's `max_positions` (cut or refuse such inputs first).
pub fn greedy(
    model: &Transformer,
    source: Tensor<2, Int>,
    config: &SearchConfig,
) -> Vec<Hypothesis> {
    greedy_ensemble(&[model], source, config)
}

/// Greedy search with an ensemble: at every step the most probable token under the mean of the
/// `models`' log-probabilities (renormalized; fairseq's `--path a:b`, Marian's `--models`), each
/// model with its own key/value cache. An ensemble of one is [`greedy`], bit for bit.
///
/// # Panics
/// As [`greedy`]; and if `models` is empty or their target vocabularies differ.
pub fn greedy_ensemble(
    models: &[&Transformer],
    source: Tensor<2, Int>,
    config: &SearchConfig,
) -> Vec<Hypothesis> {
    check(config);
    let device = source.device();
    let max_lens = max_lengths(check_models(models, config), &source, config);
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
    results
        .into_iter()
        .map(|h| h.expect("every sentence ends by its maximum length"))
        .collect()
}

/// Beam search with `config.beam_size` beams per sentence; returns, for each row of `source`
/// `[batch, src_len]`, its `config.n_best` best hypotheses by score, best first (fewer only
/// if the vocabulary cannot fill the beams).
///
/// # Panics
/// As [`greedy`].
pub fn beam_search(
    model: &Transformer,
    source: Tensor<2, Int>,
    config: &SearchConfig,
) -> Vec<Vec<Hypothesis>> {
    beam_search_ensemble(&[model], source, config)
}

/// Beam search with an ensemble: candidates are scored by the mean of the `models'`
/// log-probabilities (renormalized), each model with its own key/value cache. An ensemble of
/// one is [`beam_search`], bit for bit.
///
/// # Panics
/// As [`greedy_ensemble`].
pub fn beam_search_ensemble(
    models: &[&Transformer],
    source: Tensor<2, Int>,
    config: &SearchConfig,
) -> Vec<Vec<Hypothesis>> {
    check(config);
    let device = source.device();
    let k = config.beam_size;
    let max_lens = max_lengths(check_models(models, config), &source, config);
    let batch = max_lens.len();
    let mut stepper = Ensemble::new(models, source, config.use_cache);

    // The stepper's rows are `active.len()` blocks of `width` beams (width 1 at the first step).
    let mut active: Vec<usize> = (0..batch).collect();
    let mut width = 1;
    let mut row_tokens: Vec<Vec<u32>> = vec![Vec::new(); batch];
    let mut row_log_probs = vec![0.0f32; batch];
    let mut last = vec![config.tokens.bos; batch];
    let mut finished: Vec<Vec<Hypothesis>> = vec![Vec::new(); batch];
    // Hypotheses finished per sentence, all counted (`finished` keeps only the n_best best).
    let mut n_finished = vec![0usize; batch];
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
                    let log_prob = row_log_probs[row] + eos_column[row];
                    if log_prob.is_finite() {
                        let tokens = row_tokens[row].clone();
                        let hypothesis = Hypothesis::new(tokens, log_prob, config);
                        keep_best(&mut finished[sentence], hypothesis, config.n_best);
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
                            config.n_best,
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
    finished
}

/// A sentence's best continuations and its rows' EOS log-probabilities.
type BlockScores = (Vec<(usize, f32)>, Vec<f32>);

/// One beam-search step, scored: per sentence its best continuations `(row_in_block · vocab +
/// token, cumulative log-probability)`, best first; per row the log-probability of EOS.
struct StepScores {
    tops: Vec<Vec<(usize, f32)>>,
    eos: Vec<f32>,
}

/// Scores one step of beam search from the logits `[rows, vocab]` (row-major, `rows` =
/// sentences × `width`): log-softmax per row, plus the row's cumulative log-probability, with
/// the `blocked` tokens left out, and the `n` best per sentence. Sentences in parallel.
fn score_step(
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

/// Inserts `hypothesis` into `best` (sorted by score, best first; equal scores keep the order in
/// which they finished) and keeps only the `n` best.
fn keep_best(best: &mut Vec<Hypothesis>, hypothesis: Hypothesis, n: usize) {
    let at = best.partition_point(|h| h.score >= hypothesis.score);
    if at < n {
        best.insert(at, hypothesis);
        best.truncate(n);
    }
}

/// Scores given target sequences by teacher forcing: for row `i` of `source` `[batch, src_len]`,
/// the log-probability of `targets[i]` followed by EOS (summed in the same order as the
/// searches sum it) and its length-penalised score. EOS masking and `min_len` are not applied:
/// they never change the probability of a sequence the searches can produce.
///
/// # Panics
/// If `targets.len()` differs from the batch size, or a sequence is longer than the model's
/// `max_positions − 1`.
pub fn score_sequences(
    model: &Transformer,
    source: Tensor<2, Int>,
    targets: &[Vec<u32>],
    config: &SearchConfig,
) -> Vec<Hypothesis> {
    let device = source.device();
    let batch = source.dims()[0];
    assert_eq!(targets.len(), batch, "one target sequence per source row");
    let input = frame_tensor(targets, Frame::Bos, &config.tokens, &device);
    let (output, len) = frame_rows(targets, Frame::Eos, &config.tokens);
    let output = Tensor::<3, Int>::from_data(TensorData::new(output, [batch, len, 1]), &device);
    let log_p = log_softmax(model.forward(source, input), 2);
    let picked = floats(log_p.gather(2, output));
    targets
        .iter()
        .enumerate()
        .map(|(i, target)| {
            let log_prob = picked[i * len..i * len + target.len() + 1]
                .iter()
                .fold(0.0f32, |sum, &lp| sum + lp);
            Hypothesis::new(target.clone(), log_prob, config)
        })
        .collect()
}

fn check(config: &SearchConfig) {
    if let Err(error) = config.validate() {
        panic!("{error}");
    }
}

/// Checks that `models` share one target vocabulary and the search's padding id, and that the
/// search's `tokens` (BOS, EOS, PAD) lie inside that vocabulary; returns the positions every
/// model has.
///
/// # Panics
/// If `models` is empty, their target vocabularies differ, a model pads with another id than
/// the search, or an id is outside the vocabulary.
fn check_models(models: &[&Transformer], config: &SearchConfig) -> usize {
    let first = models.first().expect("an ensemble of at least one model");
    let vocab = first.target_vocab_size();
    for model in models {
        assert_eq!(
            model.target_vocab_size(),
            vocab,
            "the models of an ensemble share their target vocabulary"
        );
        assert_eq!(
            model.pad_id, config.tokens.pad as usize,
            "the search pads with the model's padding id"
        );
    }
    for (name, id) in [
        ("bos", config.tokens.bos),
        ("eos", config.tokens.eos),
        ("pad", config.tokens.pad),
    ] {
        assert!(
            (id as usize) < vocab,
            "search id {name} = {id} is outside the target vocabulary of {vocab}"
        );
    }
    models
        .iter()
        .map(|model| model.max_positions())
        .min()
        .unwrap_or(0)
}

/// The maximum output length of each source row.
fn max_lengths(max_positions: usize, source: &Tensor<2, Int>, config: &SearchConfig) -> Vec<usize> {
    let [batch, src_len] = source.dims();
    let ids = ints(source.clone());
    (0..batch)
        .map(|row| {
            let length = ids[row * src_len..(row + 1) * src_len]
                .iter()
                .filter(|&&id| id != i64::from(config.tokens.pad))
                .count();
            config.max_output_len(length, max_positions)
        })
        .collect()
}

/// Greedy search's choice in one row of logits.
#[derive(Debug, Clone, Copy)]
struct GreedyPick {
    /// The most probable token not `blocked` (the first of equals).
    token: usize,
    /// Its log-probability.
    log_p: f32,
    /// The log-probability of EOS (blocked or not).
    eos_log_p: f32,
}

/// One greedy step, scored: per row of `logits` `[rows, vocab]` (row-major) the most probable
/// token that is not `blocked`, its log-probability and EOS's. Rows in parallel.
fn greedy_step(logits: &[f32], vocab: usize, blocked: &[usize], eos: usize) -> Vec<GreedyPick> {
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

/// Produces next-token logits step by step, with or without the key/value cache.
// One stepper per search call, never moved in a loop: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
enum Stepper {
    Cached(DecoderState),
    Recompute {
        encoded: Encoded,
        prefix: Option<Tensor<2, Int>>,
    },
}

impl Stepper {
    fn new(model: &Transformer, encoded: Encoded, use_cache: bool) -> Self {
        if use_cache {
            Self::Cached(model.start_decoding(&encoded))
        } else {
            Self::Recompute {
                encoded,
                prefix: None,
            }
        }
    }

    /// Logits `[rows, vocab]` for the token after `last` `[rows, 1]`.
    fn step(&mut self, model: &Transformer, last: Tensor<2, Int>) -> Tensor<2> {
        match self {
            Self::Cached(state) => model.decode_step(last, state),
            Self::Recompute { encoded, prefix } => {
                let full = match prefix.take() {
                    Some(earlier) => Tensor::cat(vec![earlier, last], 1),
                    None => last,
                };
                *prefix = Some(full.clone());
                let logits = model.decode(full, encoded);
                let [rows, len, vocab] = logits.dims();
                logits
                    .slice([0..rows, len - 1..len, 0..vocab])
                    .reshape([rows, vocab])
            }
        }
    }

    /// Beam search's re-selection (see [`DecoderState::select_beams`]): rows `rows` continue,
    /// `beams` per sentence, the sentences being `sentences` of the old ones (`None`: all, in
    /// order).
    fn select_beams(
        &mut self,
        rows: Tensor<1, Int>,
        sentences: Option<Tensor<1, Int>>,
        beams: usize,
    ) {
        match self {
            Self::Cached(state) => state.select_beams(rows, sentences, beams),
            Self::Recompute { .. } => self.select(rows),
        }
    }

    /// Keeps rows `indices`, in that order.
    fn select(&mut self, indices: Tensor<1, Int>) {
        match self {
            Self::Cached(state) => state.select(indices),
            Self::Recompute { encoded, prefix } => {
                encoded.memory = encoded.memory.clone().select(0, indices.clone());
                encoded.source_padding = encoded.source_padding.clone().select(0, indices.clone());
                *prefix = prefix.take().map(|p| p.select(0, indices));
            }
        }
    }
}

/// The steppers of an ensemble's models, stepped together.
struct Ensemble<'a> {
    models: &'a [&'a Transformer],
    steppers: Vec<Stepper>,
}

impl<'a> Ensemble<'a> {
    /// Encodes `source` with every model and starts decoding.
    fn new(models: &'a [&'a Transformer], source: Tensor<2, Int>, use_cache: bool) -> Self {
        let steppers = models
            .iter()
            .map(|model| Stepper::new(model, model.encode(source.clone()), use_cache))
            .collect();
        Self { models, steppers }
    }

    /// Next-token scores `[rows, vocab]` for the token after `last`: one model's logits, or the
    /// mean of several models' log-probabilities (the callers' log-softmax renormalizes either).
    fn step(&mut self, last: Tensor<2, Int>) -> Tensor<2> {
        if let ([model], [stepper]) = (self.models, self.steppers.as_mut_slice()) {
            return stepper.step(model, last);
        }
        let mut sum: Option<Tensor<2>> = None;
        for (model, stepper) in self.models.iter().zip(&mut self.steppers) {
            let log_p = log_softmax(stepper.step(model, last.clone()), 1);
            sum = Some(match sum {
                Some(total) => total + log_p,
                None => log_p,
            });
        }
        let sum = sum.expect("an ensemble of at least one model");
        sum / self.models.len() as f64
    }

    /// [`Stepper::select_beams`] on every model.
    fn select_beams(
        &mut self,
        rows: Tensor<1, Int>,
        sentences: Option<Tensor<1, Int>>,
        beams: usize,
    ) {
        for stepper in &mut self.steppers {
            stepper.select_beams(rows.clone(), sentences.clone(), beams);
        }
    }

    /// [`Stepper::select`] on every model.
    fn select(&mut self, indices: Tensor<1, Int>) {
        for stepper in &mut self.steppers {
            stepper.select(indices.clone());
        }
    }
}

fn token_column(tokens: &[u32], device: &Device) -> Tensor<2, Int> {
    let ids: Vec<i64> = tokens.iter().map(|&t| i64::from(t)).collect();
    Tensor::from_data(TensorData::new(ids, [tokens.len(), 1]), device)
}

fn index_tensor(rows: &[usize], device: &Device) -> Tensor<1, Int> {
    let ids: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
    Tensor::from_data(TensorData::new(ids, [rows.len()]), device)
}

/// A step's logits on the host, as f32. Read in place through [`as_floats`]: copying them out
/// into a `Vec` (10 MB a step at 320 rows of 8,000) cost a memory pass per step.
fn host_floats<const D: usize>(tensor: Tensor<D>) -> TensorData {
    tensor.into_data().convert::<f32>()
}

/// The values of [`host_floats`]' data.
fn as_floats(data: &TensorData) -> &[f32] {
    data.as_slice::<f32>().expect("converted to f32")
}

fn floats<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .expect("converted to f32")
}

fn ints<const D: usize>(tensor: Tensor<D, Int>) -> Vec<i64> {
    tensor
        .into_data()
        .convert::<i64>()
        .try_to_vec::<i64>()
        .expect("converted to i64")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SearchConfig {
        SearchConfig::new(SpecialTokens {
            pad: 0,
            unk: 1,
            bos: 2,
            eos: 3,
        })
    }

    #[test]
    fn length_penalty_is_the_gnmt_formula() {
        let c = config().with_length_penalty(1.0);
        assert!((c.length_penalty_factor(7) - 2.0).abs() < 1e-12);
        assert!((c.length_penalty_factor(1) - 1.0).abs() < 1e-12);
        // Six tokens + EOS: lp = 2, the score halves the log-probability.
        assert!((c.score(-3.0, 6) - -1.5).abs() < 1e-6);
        let c = config().with_length_penalty(0.6);
        assert!((c.length_penalty_factor(13) - 3.0f64.powf(0.6)).abs() < 1e-12);
        let c = config().with_length_penalty(0.0);
        assert_eq!(c.score(-4.25, 30), -4.25);
    }

    #[test]
    fn power_length_penalty_divides_by_the_length_with_eos() {
        let c = config()
            .with_length_norm(LengthNorm::Power)
            .with_length_penalty(1.0);
        // Five tokens + EOS: the mean log-probability per token (fairseq's lenpen 1).
        assert!((c.score(-3.0, 5) - -0.5).abs() < 1e-6);
        assert_eq!(c.score(-3.0, 0), -3.0);
        let c = c.with_length_penalty(0.5);
        assert!((c.score(-3.0, 8) - -1.0).abs() < 1e-6);
        let c = c.with_length_penalty(0.0);
        assert_eq!(c.score(-2.0, 9), -2.0);
        // The bound holds for every continuation here too.
        let c = c.with_length_penalty(1.0);
        let bound = c.best_final_score(-2.0, 3, 11);
        assert!((bound - -2.0 / 12.0).abs() < 1e-6);
        for n in 3..=11 {
            assert!(c.score(-2.0, n) <= bound + 1e-6);
        }
    }

    #[test]
    fn max_output_length_is_linear_in_the_source_and_capped() {
        let c = config().with_max_len_a(1.5).with_max_len_b(10);
        assert_eq!(c.max_output_len(4, 1024), 16);
        assert_eq!(c.max_output_len(5, 1024), 17); // floor(7.5) + 10
        assert_eq!(c.max_output_len(4, 12), 11); // max_positions - 1
        let c = config().with_max_len_a(0.0).with_max_len_b(0);
        assert_eq!(c.max_output_len(9, 1024), 0);
        // Huge settings are capped, never an overflow (`--max-len-a 1e300` used to panic).
        let c = config().with_max_len_a(1e300).with_max_len_b(usize::MAX);
        assert_eq!(c.max_output_len(9, 1024), 1023);
        let c = config().with_max_len_a(0.0).with_max_len_b(usize::MAX);
        assert_eq!(c.max_output_len(9, 64), 63);
    }

    #[test]
    fn best_final_score_bounds_every_continuation() {
        // alpha > 0: the penalty grows with the length, so the longest ending is the best.
        let c = config().with_length_penalty(1.0);
        // 3 tokens now, at most 11: lp(12) = 17 / 6.
        let bound = c.best_final_score(-2.0, 3, 11);
        assert!((bound - -2.0 * 6.0 / 17.0).abs() < 1e-6);
        for n in 3..=11 {
            assert!(c.score(-2.0, n) <= bound + 1e-6);
        }
        // alpha < 0: the shortest ending (EOS next) is the best.
        let c = config().with_length_penalty(-0.5);
        assert!((c.best_final_score(-2.0, 3, 11) - c.score(-2.0, 3)).abs() < 1e-6);
        // alpha = 0: the log-probability itself.
        assert_eq!(
            config()
                .with_length_penalty(0.0)
                .best_final_score(-2.5, 4, 9),
            -2.5
        );
    }

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

    #[test]
    fn option_names_read_as_they_are_written() {
        for (name, norm) in [("gnmt", LengthNorm::Gnmt), ("power", LengthNorm::Power)] {
            assert_eq!(name.parse::<LengthNorm>(), Ok(norm));
            assert_eq!(serde_json::to_value(norm).ok(), Some(name.into()));
            let read: LengthNorm = serde_json::from_value(name.into()).expect("reads");
            assert_eq!(read, norm);
        }
        for (name, stop) in [("bound", BeamStop::Bound), ("count", BeamStop::Count)] {
            assert_eq!(name.parse::<BeamStop>(), Ok(stop));
            assert_eq!(serde_json::to_value(stop).ok(), Some(name.into()));
            let read: BeamStop = serde_json::from_value(name.into()).expect("reads");
            assert_eq!(read, stop);
        }
        assert!("wu".parse::<LengthNorm>().is_err());
        assert!("Count".parse::<BeamStop>().is_err());
    }

    #[test]
    fn keep_best_keeps_the_n_best_in_order_stably() {
        let c = config().with_length_penalty(0.0);
        let mut best = Vec::new();
        for (token, log_prob) in [(1, -3.0), (2, -1.0), (3, -2.0), (4, -1.0), (5, -0.5)] {
            keep_best(&mut best, Hypothesis::new(vec![token], log_prob, &c), 3);
        }
        let kept: Vec<u32> = best.iter().map(|h| h.tokens[0]).collect();
        // -0.5, then the two -1.0 in the order they finished.
        assert_eq!(kept, vec![5, 2, 4]);
    }

    #[test]
    fn invalid_settings_are_refused() {
        assert!(config().validate().is_ok());
        assert!(config().with_beam_size(0).validate().is_err());
        assert!(
            config()
                .with_beam_size(2)
                .with_n_best(3)
                .validate()
                .is_err()
        );
        assert!(config().with_n_best(0).validate().is_err());
        assert!(config().with_max_len_a(-1.0).validate().is_err());
        assert!(config().with_length_penalty(f64::NAN).validate().is_err());
    }
}
