//! BPE-dropout (Provilkov et al., 2020): subword regularization by skipping each applicable
//! merge with probability `p` while a word is segmented, so that a sentence is seen under
//! many segmentations during training.
//!
//! The `tokenizers` crate has BPE dropout, but draws from an unseeded thread-local generator:
//! a run could not be resumed exactly. This is the same merge loop (the `tokenizers` crate's
//! `Word::merge_all`: merges applied lowest rank first, leftmost first among equals; a merge
//! dropped at a step is offered again after the next one applied) over the tokenizer's own
//! normalizer, pre-tokenizer, vocabulary and merges, drawing from a [`SplitMix64`] the caller
//! seeds. With `p = 0` it gives exactly the tokenizer's segmentation (tested).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use tokenizers::{OffsetReferential, OffsetType, PreTokenizer};

use crate::error::DataError;
use crate::rng::SplitMix64;
use crate::tokenizer::{SPECIAL_TOKEN_IDS, SubwordTokenizer};

/// A BPE tokenizer's segmentation with merge dropout.
#[derive(Debug, Clone)]
pub struct BpeDropout {
    tokenizer: SubwordTokenizer,
    vocab: HashMap<String, u32>,
    /// `(left, right) -> (rank, merged id)`.
    merges: HashMap<(u32, u32), (u32, u32)>,
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
        let invalid = |reason: String| DataError::InvalidSetting {
            key: "data.tokenizer.dropout",
            reason,
        };
        let json: serde_json::Value = serde_json::from_str(&tokenizer.to_json()?)
            .map_err(|e| invalid(format!("reading the tokenizer: {e}")))?;
        let model = &json["model"];
        if model["type"] != "BPE" {
            return Err(invalid(format!(
                "BPE-dropout needs a BPE tokenizer; this one is {}",
                model["type"]
            )));
        }
        // Options of the `tokenizers` BPE that this merge loop does not implement (Rosetta's
        // tokenizers set none of them; a hand-made `tokenizer.json` might).
        for (option, unset) in [
            (
                "continuing_subword_prefix",
                model["continuing_subword_prefix"].is_null(),
            ),
            ("end_of_word_suffix", model["end_of_word_suffix"].is_null()),
            ("byte_fallback", model["byte_fallback"] != true),
            ("fuse_unk", model["fuse_unk"] != true),
            ("ignore_merges", model["ignore_merges"] != true),
        ] {
            if !unset {
                return Err(invalid(format!(
                    "the tokenizer sets the BPE option `{option}`, which BPE-dropout does not support"
                )));
            }
        }
        let vocab: HashMap<String, u32> = serde_json::from_value(model["vocab"].clone())
            .map_err(|e| invalid(format!("the tokenizer's vocabulary: {e}")))?;
        let pairs: Vec<(String, String)> = serde_json::from_value(model["merges"].clone())
            .map_err(|e| invalid(format!("the tokenizer's merges: {e}")))?;
        let mut merges = HashMap::with_capacity(pairs.len());
        for (rank, (left, right)) in pairs.iter().enumerate() {
            let id = |token: &str| {
                vocab.get(token).copied().ok_or_else(|| {
                    invalid(format!(
                        "merge {rank} names {token:?}, not in the vocabulary"
                    ))
                })
            };
            merges.insert(
                (id(left)?, id(right)?),
                (rank as u32, id(&format!("{left}{right}"))?),
            );
        }
        Ok(Self {
            tokenizer: tokenizer.clone(),
            vocab,
            merges,
            probability,
        })
    }

    /// Subword ids of `text` (without BOS/EOS), each merge dropped with the probability given,
    /// drawing from `rng`.
    pub fn encode(&self, text: &str, rng: &mut SplitMix64) -> Result<Vec<u32>, DataError> {
        let inner = self.tokenizer.inner()?;
        let mut pretokenized = inner
            .get_added_vocabulary()
            .extract_and_normalize(inner.get_normalizer(), text);
        if let Some(pre_tokenizer) = inner.get_pre_tokenizer() {
            pre_tokenizer
                .pre_tokenize(&mut pretokenized)
                .map_err(|e| DataError::Tokenizer {
                    context: "pre-tokenizing".into(),
                    reason: e.to_string(),
                })?;
        }
        let mut ids = Vec::new();
        for (word, _, tokens) in
            pretokenized.get_splits(OffsetReferential::Original, OffsetType::Byte)
        {
            match tokens {
                // Already tokenized (an added token): as the tokenizer gives it.
                Some(tokens) => ids.extend(tokens.iter().map(|t| t.id)),
                None => self.merge_word(word, rng, &mut ids),
            }
        }
        Ok(ids)
    }

    /// The symbols of `word` (one per character, `<unk>` for a character outside the
    /// vocabulary), merged.
    fn merge_word(&self, word: &str, rng: &mut SplitMix64, out: &mut Vec<u32>) {
        let mut symbols: Vec<Symbol> = Vec::with_capacity(word.len());
        let mut buffer = [0u8; 4];
        for c in word.chars() {
            let id = self
                .vocab
                .get(c.encode_utf8(&mut buffer) as &str)
                .copied()
                .unwrap_or(SPECIAL_TOKEN_IDS.unk);
            let index = symbols.len() as isize;
            symbols.push(Symbol {
                id,
                prev: index - 1,
                next: index + 1,
                removed: false,
            });
        }
        if let Some(last) = symbols.last_mut() {
            last.next = -1;
        }
        // A min-heap on (rank, position).
        let mut queue: BinaryHeap<Reverse<(u32, usize, u32)>> = symbols
            .windows(2)
            .enumerate()
            .filter_map(|(pos, w)| {
                self.merges
                    .get(&(w[0].id, w[1].id))
                    .map(|&(rank, id)| Reverse((rank, pos, id)))
            })
            .collect();
        let mut skipped = Vec::new();
        let threshold = (self.probability * 2f64.powi(64)) as u64;
        while let Some(Reverse(top)) = queue.pop() {
            let (_, pos, new_id) = top;
            if self.probability > 0.0 && rng.next_u64() < threshold {
                skipped.push(Reverse(top));
                continue;
            }
            queue.extend(skipped.drain(..));
            let current = symbols[pos];
            if current.removed || current.next < 0 {
                continue;
            }
            let next_pos = current.next as usize;
            let right = symbols[next_pos];
            // An entry for a pair that has changed since it was queued.
            if self
                .merges
                .get(&(current.id, right.id))
                .is_none_or(|&(_, id)| id != new_id)
            {
                continue;
            }
            symbols[pos].id = new_id;
            symbols[pos].next = right.next;
            symbols[next_pos].removed = true;
            if right.next >= 0 {
                symbols[right.next as usize].prev = pos as isize;
            }
            let merged = symbols[pos];
            if merged.prev >= 0 {
                let prev = merged.prev as usize;
                if let Some(&(rank, id)) = self.merges.get(&(symbols[prev].id, merged.id)) {
                    queue.push(Reverse((rank, prev, id)));
                }
            }
            if merged.next >= 0 {
                let next = merged.next as usize;
                if let Some(&(rank, id)) = self.merges.get(&(merged.id, symbols[next].id)) {
                    queue.push(Reverse((rank, pos, id)));
                }
            }
        }
        out.extend(symbols.iter().filter(|s| !s.removed).map(|s| s.id));
    }
}

#[derive(Debug, Clone, Copy)]
struct Symbol {
    id: u32,
    prev: isize,
    next: isize,
    removed: bool,
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
