//! The options of a translation job (beam size, length penalty, output-length limit, n-best,
//! batch size), shared by `rosetta translate`, `rosetta eval --checkpoint` and `rosetta serve`,
//! and checked before any work so that an impossible value is refused naming its option.

use rosetta_model::SpecialTokens;
use rosetta_model::search::{BeamStop, LengthNorm, SearchConfig};
use serde::{Deserialize, Serialize};

use crate::error::InferError;

/// How to translate: the search and how many sentences go through the model at once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TranslateOptions {
    /// Beam size `k`; 1 is greedy search.
    pub beam: usize,
    /// Length-penalty exponent `alpha` (beam search): larger favours longer outputs.
    pub alpha: f64,
    /// The length penalty's form: `gnmt` (GNMT's, the default) or `power` (fairseq's and
    /// CTranslate2's).
    pub length_norm: LengthNorm,
    /// When a sentence's beam search stops: `bound` (exact, the default) or `count` (after
    /// `beam` finished hypotheses, as fairseq does, and CTranslate2 with `alpha` other than 0).
    pub beam_stop: BeamStop,
    /// `a` of the maximum output length `a · source_len + b` (subwords).
    pub max_len_a: f64,
    /// `b` of the maximum output length `a · source_len + b` (subwords).
    pub max_len_b: usize,
    /// The fewest subwords before EOS may end a translation.
    pub min_len: usize,
    /// Token ids never produced besides padding (an imported model's single-token
    /// `bad_words_ids`).
    pub blocked_tokens: Vec<u32>,
    /// Hypotheses returned per sentence, best first; at most `beam`.
    pub nbest: usize,
    /// Sentences per batch (work is sorted by length inside each call).
    pub batch_size: usize,
}

impl Default for TranslateOptions {
    fn default() -> Self {
        Self {
            beam: 5,
            alpha: 0.6,
            length_norm: LengthNorm::Gnmt,
            beam_stop: BeamStop::Bound,
            max_len_a: 1.5,
            max_len_b: 10,
            min_len: 0,
            blocked_tokens: Vec::new(),
            nbest: 1,
            batch_size: 64,
        }
    }
}

/// The largest `max_len_a` accepted: no model has positions for outputs longer than this many
/// times its input, and it keeps `a · source_len` far from overflowing.
pub const MAX_LEN_A_LIMIT: f64 = 1_000.0;

impl TranslateOptions {
    /// Checks every option, naming the first impossible one: `beam >= 1`, `1 <= nbest <=
    /// beam`, `alpha` finite, `0 <= max_len_a <= 1000`, `batch_size >= 1`.
    pub fn validate(&self) -> Result<(), InferError> {
        let invalid = |option, reason: String| Err(InferError::InvalidOption { option, reason });
        if self.beam == 0 {
            return invalid(
                "beam",
                "is 0; the beam size must be at least 1 (1 is greedy search)".into(),
            );
        }
        if self.nbest == 0 || self.nbest > self.beam {
            return invalid(
                "nbest",
                format!(
                    "is {}; it must be between 1 and the beam size ({}): a beam of k keeps k hypotheses",
                    self.nbest, self.beam
                ),
            );
        }
        if !self.alpha.is_finite() {
            return invalid(
                "alpha",
                format!("is {}; it must be a finite number", self.alpha),
            );
        }
        if !(self.max_len_a.is_finite() && (0.0..=MAX_LEN_A_LIMIT).contains(&self.max_len_a)) {
            return invalid(
                "max-len-a",
                format!(
                    "is {}; it must be between 0 and {MAX_LEN_A_LIMIT}",
                    self.max_len_a
                ),
            );
        }
        if self.batch_size == 0 {
            return invalid("batch-size", "is 0; it must be at least 1".into());
        }
        Ok(())
    }

    /// The search these options describe, with the vocabulary's special `tokens`; refused (see
    /// [`validate`](Self::validate)) if an option is impossible.
    pub fn search_config(&self, tokens: SpecialTokens) -> Result<SearchConfig, InferError> {
        self.validate()?;
        Ok(SearchConfig::new(tokens)
            .with_beam_size(self.beam)
            .with_n_best(self.nbest)
            .with_length_penalty(self.alpha)
            .with_length_norm(self.length_norm)
            .with_stop(self.beam_stop)
            .with_max_len_a(self.max_len_a)
            .with_max_len_b(self.max_len_b)
            .with_min_len(self.min_len)
            .with_blocked_tokens(self.blocked_tokens.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(options: TranslateOptions) -> String {
        match options.validate() {
            Err(InferError::InvalidOption { option, .. }) => option.to_string(),
            other => panic!("expected an invalid option, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_valid_and_describe_beam_five() {
        let options = TranslateOptions::default();
        let tokens = SpecialTokens {
            pad: 0,
            unk: 3,
            bos: 1,
            eos: 2,
        };
        let config = options.search_config(tokens).unwrap();
        assert_eq!((config.beam_size, config.n_best), (5, 1));
        assert_eq!(config.tokens, tokens);
        assert_eq!(config.length_penalty, 0.6);
    }

    #[test]
    fn impossible_values_name_their_option() {
        let base = TranslateOptions::default();
        assert_eq!(
            refused(TranslateOptions {
                beam: 0,
                ..base.clone()
            }),
            "beam"
        );
        assert_eq!(
            refused(TranslateOptions {
                nbest: 6,
                ..base.clone()
            }),
            "nbest"
        );
        assert_eq!(
            refused(TranslateOptions {
                nbest: 0,
                ..base.clone()
            }),
            "nbest"
        );
        assert_eq!(
            refused(TranslateOptions {
                alpha: f64::NAN,
                ..base.clone()
            }),
            "alpha"
        );
        assert_eq!(
            refused(TranslateOptions {
                max_len_a: 1e300,
                ..base.clone()
            }),
            "max-len-a"
        );
        assert_eq!(
            refused(TranslateOptions {
                max_len_a: -1.0,
                ..base.clone()
            }),
            "max-len-a"
        );
        assert_eq!(
            refused(TranslateOptions {
                batch_size: 0,
                ..base.clone()
            }),
            "batch-size"
        );
        let message = TranslateOptions { nbest: 6, ..base }
            .validate()
            .unwrap_err()
            .to_string();
        assert!(message.starts_with("option --nbest: is 6"), "{message}");
    }
}
