//! The options of a translation job (beam size, length penalty, output-length limit, n-best,
//! batch size), shared by `rosetta translate`, `rosetta eval --checkpoint` and `rosetta serve`,
//! and checked before any work so that an impossible value is refused naming its option.

use rosetta_model::search::{BeamStop, LengthNorm, SearchConfig};
use rosetta_model::{ModelError, SpecialTokens};
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
    /// The search's own defaults ([`SearchConfig`]'s, the one place they are written), 64
    /// sentences per batch.
    fn default() -> Self {
        let search = SearchConfig::new(SpecialTokens::ROSETTA);
        Self {
            beam: search.beam_size,
            alpha: search.length_penalty,
            length_norm: search.length_norm,
            beam_stop: search.stop,
            max_len_a: search.max_len_a,
            max_len_b: search.max_len_b,
            min_len: search.min_len,
            blocked_tokens: search.blocked_tokens,
            nbest: search.n_best,
            batch_size: DEFAULT_BATCH_SIZE,
        }
    }
}

/// Sentences decoded together when the caller does not say.
pub const DEFAULT_BATCH_SIZE: usize = 64;

impl TranslateOptions {
    /// Checks every option, naming the first impossible one as the command line spells it: the
    /// search's settings by the search's own validator ([`SearchConfig::validate`]), and
    /// `batch_size >= 1`.
    pub fn validate(&self) -> Result<(), InferError> {
        self.search_config(SpecialTokens::ROSETTA).map(|_| ())
    }

    /// The search these options describe, with the vocabulary's special `tokens`; refused (see
    /// [`validate`](Self::validate)) if an option is impossible.
    pub fn search_config(&self, tokens: SpecialTokens) -> Result<SearchConfig, InferError> {
        if self.batch_size == 0 {
            return Err(InferError::InvalidOption {
                option: "batch-size",
                reason: "is 0; it must be at least 1".into(),
            });
        }
        let config = SearchConfig::new(tokens)
            .with_beam_size(self.beam)
            .with_n_best(self.nbest)
            .with_length_penalty(self.alpha)
            .with_length_norm(self.length_norm)
            .with_stop(self.beam_stop)
            .with_max_len_a(self.max_len_a)
            .with_max_len_b(self.max_len_b)
            .with_min_len(self.min_len)
            .with_blocked_tokens(self.blocked_tokens.clone());
        match config.validate() {
            Ok(()) => Ok(config),
            Err(ModelError::InvalidSearch { setting, reason }) => Err(InferError::InvalidOption {
                option: setting.option(),
                reason,
            }),
            Err(other) => Err(other.into()),
        }
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
