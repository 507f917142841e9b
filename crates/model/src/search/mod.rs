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
//! - `Transformers`: Hugging Face `transformers`' `generate` (5.x, `early_stopping=False`), set on
//!   imported MarianMT models so that they decode as they do there: the `k` best finished
//!   hypotheses are kept, and a sentence stops once there are `k` and the best open beam's
//!   log-probability divided by `lp` of its current length (EOS not counted) is no better than
//!   the worst of them (a heuristic: a longer continuation could still score better under
//!   `alpha > 0`). Scores are divided in `f32`, and at the maximum length the EOS that closes the
//!   open beams adds 0 to their log-probability (its forced-EOS logits processor), not its
//!   probability. With `LengthNorm::Power`, `alpha` = `length_penalty` and the maximum length
//!   `max_length − 2` tokens before EOS, the search is `generate(num_beams = k)`'s.
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

mod beam;
mod config;
mod ensemble;
mod greedy;
mod host;
mod score;

use burn::tensor::{Int, Tensor};

pub use beam::{beam_search, beam_search_ensemble};
pub use config::{BeamStop, LengthNorm, MAX_LEN_A_LIMIT, SearchConfig, SearchSetting};
pub use greedy::{greedy, greedy_ensemble};
pub use score::score_sequences;

use crate::error::ModelError;
use crate::transformer::Transformer;
use host::ints;

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

/// Checks `config`, the `models` against it and `source` against the models before a search:
/// `config` valid ([`SearchConfig::validate`]), at least one model, one target vocabulary and
/// the search's padding id for all, the special tokens inside the vocabulary, and sources that
/// fit every model's positions. Returns the maximum output length of each source row.
fn prepare(
    models: &[&Transformer],
    source: &Tensor<2, Int>,
    config: &SearchConfig,
) -> Result<Vec<usize>, ModelError> {
    config.validate()?;
    let refuse = |reason: String| Err(ModelError::Search { reason });
    let Some(first) = models.first() else {
        return refuse("an ensemble needs at least one model".into());
    };
    let vocab = first.target_vocab_size();
    for model in models {
        if model.target_vocab_size() != vocab {
            return refuse(format!(
                "the models of an ensemble must share their target vocabulary ({} against {vocab})",
                model.target_vocab_size()
            ));
        }
        if model.pad_id != config.tokens.pad as usize {
            return refuse(format!(
                "the search pads with id {}, the model with {}",
                config.tokens.pad, model.pad_id
            ));
        }
    }
    for (name, id) in [
        ("bos", config.tokens.bos),
        ("eos", config.tokens.eos),
        ("pad", config.tokens.pad),
    ] {
        if id as usize >= vocab {
            return refuse(format!(
                "special token {name} = {id} is outside the target vocabulary of {vocab}"
            ));
        }
    }
    let max_positions = models
        .iter()
        .map(|model| model.max_positions())
        .min()
        .unwrap_or(0);
    let src_len = source.dims()[1];
    if src_len > max_positions {
        return refuse(format!(
            "sources of {src_len} positions are longer than the {max_positions} the model has (cut them first)"
        ));
    }
    Ok(max_lengths(max_positions, source, config))
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
