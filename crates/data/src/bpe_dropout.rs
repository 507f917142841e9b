//! BPE-dropout (Provilkov et al., 2020): subword regularization by skipping each applicable
//! merge with probability `p` while a word is segmented, so that a sentence is seen under
//! many segmentations during training.
//!
//! The `tokenizers` crate has BPE dropout, but draws from an unseeded thread-local generator:
//! a run could not be resumed exactly. This is [`ByteLevelTokenizer`]'s BPE (the `tokenizers`
//! crate's `Word::merge_all`: merges applied lowest rank first, leftmost first among equals; a
//! merge dropped at a step is offered again after the next one applied) over the tokenizer's
//! own vocabulary and merges, drawing from a [`SplitMix64`] the caller seeds. With `p = 0` it
//! gives exactly the tokenizer's segmentation (tested).

use crate::byte_level::ByteLevelTokenizer;
use crate::error::DataError;
use crate::rng::SplitMix64;
use crate::tokenizer::SubwordTokenizer;

/// A BPE tokenizer's segmentation with merge dropout.
#[derive(Debug, Clone)]
pub struct BpeDropout {
    tokenizer: ByteLevelTokenizer,
    probability: f64,
}

impl BpeDropout {
    /// The dropout segmentation of `tokenizer` (a BPE tokenizer) with merge-dropout
    /// probability `probability` in `[0, 1)`.
    pub fn new(tokenizer: &SubwordTokenizer, probability: f64) -> Result<Self, DataError> {
        if !(0.0..1.0).contains(&probability) {
            return Err(DataError::InvalidSetting {
                key: "data.tokenizer.dropout",
                reason: format!("must be at least 0 and below 1, got {probability}"),
            });
        }
        let tokenizer = ByteLevelTokenizer::from_json(&tokenizer.to_json()?, "the tokenizer")?;
        if !tokenizer.is_bpe() {
            return Err(DataError::InvalidSetting {
                key: "data.tokenizer.dropout",
                reason: "BPE-dropout needs a BPE tokenizer; this one is Unigram".into(),
            });
        }
        Ok(Self {
            tokenizer,
            probability,
        })
    }

    /// Subword ids of `text` (without BOS/EOS), each merge dropped with the probability given,
    /// drawing from `rng`.
    pub fn encode(&self, text: &str, rng: &mut SplitMix64) -> Result<Vec<u32>, DataError> {
        self.tokenizer
            .encode_with(text, Some((self.probability, rng)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::tests::corpus;
    use crate::tokenizer::{SubwordModel, TokenizerSettings};

    fn tokenizer(model: SubwordModel) -> SubwordTokenizer {
        let settings = TokenizerSettings {
            model,
            vocab_size: 330,
            ..TokenizerSettings::default()
        };
        SubwordTokenizer::train(&settings, corpus().into_iter()).expect("train")
    }

    #[test]
    fn no_dropout_is_the_tokenizers_segmentation() {
        let tok = tokenizer(SubwordModel::Bpe);
        let dropout = BpeDropout::new(&tok, 0.0).expect("bpe");
        let mut rng = SplitMix64::new(1);
        for text in corpus().iter().map(String::as_str).chain([
            "ünseen wörds ½ → 猫",
            "  two  spaces ",
            "the </s> stays text",
        ]) {
            assert_eq!(
                dropout.encode(text, &mut rng).expect("encode"),
                tok.encode(text).expect("encode"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn dropout_segments_finer_decodes_back_and_repeats_with_the_seed() {
        let tok = tokenizer(SubwordModel::Bpe);
        let dropout = BpeDropout::new(&tok, 0.5).expect("bpe");
        let text = "die Katze saß auf der Matte and the dogs play";
        let plain = tok.encode(text).expect("encode");
        let mut longer = 0;
        let mut seen = std::collections::HashSet::new();
        for seed in 0..20 {
            let ids = dropout
                .encode(text, &mut SplitMix64::new(seed))
                .expect("encode");
            assert_eq!(tok.decode(&ids).expect("decode"), text);
            assert!(ids.len() >= plain.len());
            longer += usize::from(ids.len() > plain.len());
            seen.insert(ids.clone());
            let again = dropout
                .encode(text, &mut SplitMix64::new(seed))
                .expect("encode");
            assert_eq!(again, ids, "the same seed, the same segmentation");
        }
        assert!(longer >= 18, "only {longer} of 20 segmentations were finer");
        assert!(
            seen.len() >= 10,
            "only {} distinct segmentations",
            seen.len()
        );
    }

    #[test]
    fn unigram_tokenizers_and_bad_probabilities_are_refused() {
        let err = BpeDropout::new(&tokenizer(SubwordModel::Unigram), 0.1).expect_err("unigram");
        assert!(err.to_string().contains("BPE"), "{err}");
        let bpe = tokenizer(SubwordModel::Bpe);
        for p in [-0.1, 1.0, f64::NAN] {
            assert!(BpeDropout::new(&bpe, p).is_err(), "{p}");
        }
    }
}
