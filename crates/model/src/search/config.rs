//! The settings of a search and how hypotheses are scored: [`SearchConfig`], [`LengthNorm`],
//! [`BeamStop`].

use std::str::FromStr;

use burn::config::Config;
use serde::de::value::StrDeserializer;
use serde::de::{DeserializeOwned, IntoDeserializer};
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::framing::SpecialTokens;

/// The settings of [`greedy`](fn@super::greedy) and [`beam_search`](fn@super::beam_search).
#[derive(Config, Debug, PartialEq)]
pub struct SearchConfig {
    /// The vocabulary's special tokens: BOS is fed at the first step, EOS finishes a
    /// hypothesis, PAD fills the source batch and is never produced.
    pub tokens: SpecialTokens,
    /// Number of beams `k` per sentence ([`beam_search`](fn@super::beam_search) only).
    #[config(default = 5)]
    pub beam_size: usize,
    /// Number of hypotheses returned per sentence by [`beam_search`](fn@super::beam_search), at
    /// most `beam_size`.
    #[config(default = 1)]
    pub n_best: usize,
    /// Length-penalty exponent `alpha` of [`Self::length_norm`]: `score = log_prob / lp(len)`.
    #[config(default = 0.6)]
    pub length_penalty: f64,
    /// The length penalty's form: GNMT's (default) or CTranslate2's power of the length.
    #[config(default = "LengthNorm::Gnmt")]
    pub length_norm: LengthNorm,
    /// When a sentence's beam search stops ([`beam_search`](fn@super::beam_search) only).
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
    /// Tokens never produced, besides PAD (an imported model's `bad_words_ids` of one token).
    #[config(default = "Vec::new()")]
    pub blocked_tokens: Vec<u32>,
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

/// When a sentence's beam search stops (see the module documentation); written `bound`, `count`
/// or `transformers` (options, JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BeamStop {
    /// When no open beam can still beat the `n_best`-th finished hypothesis: exact.
    #[default]
    Bound,
    /// Once `beam_size` hypotheses have finished: fairseq's rule, and CTranslate2's with a
    /// length penalty other than 0.
    Count,
    /// Hugging Face `transformers`' `generate` with `early_stopping=False`: once `beam_size`
    /// hypotheses have finished and the best open beam's log-probability divided by the penalty
    /// of its current length is no better than the worst of them; scores divided in `f32`, and at
    /// the maximum length EOS forced with log-probability 0 (its `ForcedEOSTokenLogitsProcessor`).
    Transformers,
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

/// The largest `max_len_a` accepted: no model has positions for outputs longer than this many
/// times its input, and it keeps `a · source_len` far from overflowing.
pub const MAX_LEN_A_LIMIT: f64 = 1_000.0;

/// The settings of a search a value can be refused for: the one validator
/// ([`SearchConfig::validate`]) names them by this, and each front end spells them its way (the
/// command line's options, the configuration's keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchSetting {
    /// The beam size `k`.
    BeamSize,
    /// The number of hypotheses returned.
    NBest,
    /// The length-penalty exponent.
    LengthPenalty,
    /// `a` of the length limit.
    MaxLenA,
    /// The tokens never produced.
    BlockedTokens,
}

impl SearchSetting {
    /// The command-line option (`rosetta translate --beam`), also the JSON options' key.
    pub fn option(self) -> &'static str {
        match self {
            SearchSetting::BeamSize => "beam",
            SearchSetting::NBest => "nbest",
            SearchSetting::LengthPenalty => "alpha",
            SearchSetting::MaxLenA => "max-len-a",
            SearchSetting::BlockedTokens => "blocked-tokens",
        }
    }

    /// The field of [`SearchConfig`].
    pub fn key(self) -> &'static str {
        match self {
            SearchSetting::BeamSize => "beam_size",
            SearchSetting::NBest => "n_best",
            SearchSetting::LengthPenalty => "length_penalty",
            SearchSetting::MaxLenA => "max_len_a",
            SearchSetting::BlockedTokens => "blocked_tokens",
        }
    }
}

impl SearchConfig {
    /// Checks every setting, naming the first impossible one ([`ModelError::InvalidSearch`]):
    /// the beam size at least 1, `1 <= n_best <= beam_size`, the length penalty finite,
    /// `0 <= max_len_a <= 1000`, EOS not among the blocked tokens.
    pub fn validate(&self) -> Result<(), ModelError> {
        let invalid = |setting, reason: String| Err(ModelError::InvalidSearch { setting, reason });
        if self.beam_size == 0 {
            return invalid(
                SearchSetting::BeamSize,
                "is 0; the beam size must be at least 1 (1 is greedy search)".into(),
            );
        }
        if self.n_best == 0 || self.n_best > self.beam_size {
            return invalid(
                SearchSetting::NBest,
                format!(
                    "is {}; it must be between 1 and the beam size ({}): a beam of k keeps k hypotheses",
                    self.n_best, self.beam_size
                ),
            );
        }
        if !self.length_penalty.is_finite() {
            return invalid(
                SearchSetting::LengthPenalty,
                format!("is {}; it must be a finite number", self.length_penalty),
            );
        }
        if !(self.max_len_a.is_finite() && (0.0..=MAX_LEN_A_LIMIT).contains(&self.max_len_a)) {
            return invalid(
                SearchSetting::MaxLenA,
                format!(
                    "is {}; it must be between 0 and {MAX_LEN_A_LIMIT}",
                    self.max_len_a
                ),
            );
        }
        if self.blocked_tokens.contains(&self.tokens.eos) {
            return invalid(
                SearchSetting::BlockedTokens,
                format!("holds EOS ({}): no translation could end", self.tokens.eos),
            );
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
    /// log-probability, EOS included, is `log_prob`: `log_prob / lp(n_tokens + 1)`, divided in
    /// `f64` (in `f32` under [`BeamStop::Transformers`], as `transformers` divides).
    pub fn score(&self, log_prob: f32, n_tokens: usize) -> f32 {
        self.penalised(log_prob, n_tokens + 1)
    }

    /// `log_prob / lp(len)`, in the precision of the rules.
    pub(super) fn penalised(&self, log_prob: f32, len: usize) -> f32 {
        let factor = self.length_penalty_factor(len);
        if self.stop == BeamStop::Transformers {
            log_prob / factor as f32
        } else {
            (f64::from(log_prob) / factor) as f32
        }
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
    pub(super) fn eos(&self) -> usize {
        self.tokens.eos as usize
    }

    /// The tokens that may not be produced at decoding step `step`: PAD and
    /// [`blocked_tokens`](Self::blocked_tokens) always, EOS before `min_len`.
    pub(super) fn blocked(&self, step: usize) -> Vec<usize> {
        let mut blocked = vec![self.tokens.pad as usize];
        blocked.extend(self.blocked_tokens.iter().map(|&t| t as usize));
        if step < self.min_len {
            blocked.push(self.tokens.eos as usize);
        }
        blocked
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
