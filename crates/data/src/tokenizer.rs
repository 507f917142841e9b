//! Subword tokenizers trained with the `tokenizers` crate, saved as a standard
//! `tokenizer.json` that Hugging Face's Python `tokenizers` loads unchanged.
//!
//! Every tokenizer is NFC-normalized, byte-level pre-tokenized (GPT-2 style: each byte of the
//! text maps to one symbol, so no character is ever `<unk>` and decoding gives back the
//! normalized text exactly) and has four special tokens with fixed ids, [`SPECIAL_TOKEN_IDS`]
//! (`<pad>`, `<unk>`, `<s>`, `</s>`: 0–3). Input text that spells a special token (`</s>`) is
//! encoded as text: only the pipeline places special tokens.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use rosetta_model::SpecialTokens;

use crate::error::DataError;
use crate::marian::MarianSide;
use crate::trained::Trained;

/// The ids of the special tokens of every Rosetta tokenizer, 0–3 in the order of
/// [`SPECIAL_TOKEN_NAMES`]: the one place they are set. The model's padding id, the search's
/// and the framing's ids are taken from here.
pub const SPECIAL_TOKEN_IDS: SpecialTokens = SpecialTokens::ROSETTA;
/// The special tokens' text, in id order.
pub const SPECIAL_TOKEN_NAMES: [&str; 4] = ["<pad>", "<unk>", "<s>", "</s>"];

// Each id names its own token in `SPECIAL_TOKEN_NAMES` (the order the tokenizers are built in),
// checked when this crate compiles.
const _: () = {
    const fn names(id: u32, name: &str) -> bool {
        let (a, b) = (SPECIAL_TOKEN_NAMES[id as usize].as_bytes(), name.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }
    let ids = SPECIAL_TOKEN_IDS;
    assert!(
        names(ids.pad, "<pad>")
            && names(ids.unk, "<unk>")
            && names(ids.bos, "<s>")
            && names(ids.eos, "</s>")
    );
};

/// The subword segmentation algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SubwordModel {
    /// Byte-pair encoding (Sennrich et al.): greedy merges of the most frequent pairs.
    Bpe,
    /// Unigram language model (Kudo): the most likely segmentation under learned piece
    /// probabilities.
    Unigram,
}

/// How to train a tokenizer, or where to take it from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenizerSettings {
    /// A tokenizer the user brings instead of training one: a `tokenizer.json` file, or a
    /// directory holding `tokenizer.json`, `tokenizer.source.json` and `tokenizer.target.json`,
    /// or an imported MarianMT model's `source.spm`, `target.spm` and `vocab.json` (a run
    /// directory of `rosetta import-hf`). With it, the training settings below are not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<std::path::PathBuf>,
    /// Segmentation algorithm.
    #[serde(default = "default_model")]
    pub model: SubwordModel,
    /// Vocabulary size, special tokens and the 256 byte symbols included.
    #[serde(default = "default_vocab_size")]
    pub vocab_size: usize,
    /// One vocabulary for both languages (`true`) or one per side.
    #[serde(default = "default_joint")]
    pub joint: bool,
    /// BPE only: minimum frequency of a pair to be merged.
    #[serde(default = "default_min_frequency")]
    pub min_frequency: u64,
    /// BPE-dropout while training (Provilkov et al.): each merge is skipped with this
    /// probability when a training sentence is segmented, anew every epoch; 0 = off.
    /// Validation and translation always use the plain segmentation.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropout: f64,
    /// Train on a deterministic sample of this many training pairs rather than all of them
    /// (SentencePiece's `input_sentence_size`): for corpora of millions of pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<usize>,
}

fn default_model() -> SubwordModel {
    SubwordModel::Bpe
}
fn default_vocab_size() -> usize {
    8000
}
fn default_joint() -> bool {
    true
}
fn default_min_frequency() -> u64 {
    2
}
fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

impl Default for TokenizerSettings {
    fn default() -> Self {
        Self {
            from: None,
            model: default_model(),
            vocab_size: default_vocab_size(),
            joint: default_joint(),
            min_frequency: default_min_frequency(),
            dropout: 0.0,
            sample: None,
        }
    }
}

/// Smallest vocabulary that holds the special tokens and the byte alphabet.
pub const MIN_VOCAB_SIZE: usize = SPECIAL_TOKEN_NAMES.len() + 256;

/// A subword tokenizer: one Rosetta trained with the `tokenizers` crate (Rosetta's special
/// tokens), or one side of an imported MarianMT model's SentencePiece tokenizer.
#[derive(Clone)]
pub struct SubwordTokenizer {
    kind: Kind,
}

/// What segments the text.
#[derive(Clone)]
enum Kind {
    /// A tokenizer Rosetta trained (`tokenizer.json`).
    Trained(Trained),
    /// One side of a MarianTokenizer.
    Marian(MarianSide),
}

impl std::fmt::Debug for SubwordTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubwordTokenizer")
            .field("vocab_size", &self.vocab_size())
            .finish()
    }
}

impl SubwordTokenizer {
    /// Trains a tokenizer on `texts` (e.g. both sides of the training split for a joint one).
    pub fn train<I, S>(settings: &TokenizerSettings, texts: I) -> Result<Self, DataError>
    where
        I: Iterator<Item = S> + Send,
        S: AsRef<str> + Send,
    {
        Self::train_with_tags(settings, texts, &[])
    }

    /// Trains a tokenizer on `texts` with the target-language `tags` (`>>de<<`, see
    /// [`crate::direction`]) as special tokens after Rosetta's four, in the order given: text
    /// that spells a tag is encoded as text, like text that spells `</s>`; only the pipeline
    /// places a tag, and decoding skips it.
    pub fn train_with_tags<I, S>(
        settings: &TokenizerSettings,
        texts: I,
        tags: &[String],
    ) -> Result<Self, DataError>
    where
        I: Iterator<Item = S> + Send,
        S: AsRef<str> + Send,
    {
        let smallest = MIN_VOCAB_SIZE + tags.len();
        if settings.vocab_size < smallest {
            return Err(DataError::InvalidSetting {
                key: "data.tokenizer.vocab_size",
                reason: format!(
                    "must be at least {smallest} (4 special tokens, {} language tags, 256 byte symbols), got {}",
                    tags.len(),
                    settings.vocab_size
                ),
            });
        }
        let specials: Vec<&str> = SPECIAL_TOKEN_NAMES
            .iter()
            .copied()
            .chain(tags.iter().map(String::as_str))
            .collect();
        let inner = Trained::train(settings, texts, &specials)?;
        let tokenizer = Self {
            kind: Kind::Trained(inner),
        };
        tokenizer.check_special_tokens("after training")?;
        Ok(tokenizer)
    }

    /// One side of an imported MarianMT tokenizer.
    pub fn marian(side: MarianSide) -> Self {
        Self {
            kind: Kind::Marian(side),
        }
    }

    /// The MarianTokenizer side this is, if it is one.
    pub fn as_marian(&self) -> Option<&MarianSide> {
        match &self.kind {
            Kind::Marian(side) => Some(side),
            Kind::Trained(_) => None,
        }
    }

    /// Loads a `tokenizer.json`, refusing one whose special tokens are not Rosetta's.
    pub fn load(path: &Path) -> Result<Self, DataError> {
        let json = std::fs::read_to_string(path).map_err(DataError::io(path))?;
        Self::from_json(&json, &path.display().to_string())
    }

    /// Parses a tokenizer from its JSON text; `origin` names it in errors.
    pub fn from_json(json: &str, origin: &str) -> Result<Self, DataError> {
        let tokenizer = Self {
            kind: Kind::Trained(Trained::from_json(json, origin)?),
        };
        tokenizer.check_special_tokens(origin)?;
        Ok(tokenizer)
    }

    fn check_special_tokens(&self, context: &str) -> Result<(), DataError> {
        for (id, token) in SPECIAL_TOKEN_NAMES.iter().enumerate() {
            let found = self.token_to_id(token);
            if found != Some(id as u32) {
                return Err(DataError::Tokenizer {
                    context: context.to_string(),
                    reason: format!("special token {token} must have id {id}, has {found:?}"),
                });
            }
        }
        Ok(())
    }

    /// The tokenizer as `tokenizer.json` text (deterministic for a given tokenizer); a
    /// MarianTokenizer has none (its files are SentencePiece models and vocabularies).
    pub fn to_json(&self) -> Result<String, DataError> {
        self.inner()?.to_json()
    }

    /// Writes `tokenizer.json` to `path` atomically (temporary file, then rename).
    pub fn save(&self, path: &Path) -> Result<(), DataError> {
        crate::atomic::write(path, self.to_json()?.as_bytes())
    }

    /// A SHA-256 of the tokenizer's JSON (of a MarianTokenizer's files and side), hex-encoded:
    /// two tokenizers with the same fingerprint segment every text the same way.
    pub fn fingerprint(&self) -> Result<String, DataError> {
        match &self.kind {
            Kind::Trained(_) => Ok(hex(&Sha256::digest(self.to_json()?.as_bytes()))),
            Kind::Marian(side) => Ok(side.fingerprint()),
        }
    }

    /// What identifies the tokenizer's segmentation, for cache keys: the `tokenizer.json` text
    /// of a trained tokenizer, the file fingerprint and side of a MarianTokenizer.
    pub(crate) fn identity(&self) -> Result<String, DataError> {
        match &self.kind {
            Kind::Trained(_) => self.to_json(),
            Kind::Marian(side) => Ok(side.fingerprint()),
        }
    }

    /// The trained tokenizer underneath; refused for a MarianTokenizer.
    fn inner(&self) -> Result<&Trained, DataError> {
        match &self.kind {
            Kind::Trained(inner) => Ok(inner),
            Kind::Marian(_) => Err(DataError::Tokenizer {
                context: "an imported MarianTokenizer".into(),
                reason: "is SentencePiece, not a `tokenizers` tokenizer.json (BPE-dropout and JSON export need one)".into(),
            }),
        }
    }

    /// Vocabulary size, special tokens included.
    pub fn vocab_size(&self) -> usize {
        match &self.kind {
            Kind::Trained(inner) => inner.vocab_size(),
            Kind::Marian(side) => side.vocab_size(),
        }
    }

    /// The id of `token`, if it is in the vocabulary.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        match &self.kind {
            Kind::Trained(inner) => inner.token_to_id(token),
            Kind::Marian(side) => side.token_to_id(token),
        }
    }

    /// The id of the target-language tag of `language` (`>>de<<`): a special token of a
    /// tokenizer trained with it ([`train_with_tags`](Self::train_with_tags)), an entry of an
    /// imported MarianMT vocabulary (OPUS-MT's multilingual models hold theirs). Refused when
    /// the tokenizer has no such tag, or holds its text as an ordinary subword (text would then
    /// be encoded as the tag).
    pub fn language_tag(&self, language: &str) -> Result<u32, DataError> {
        let tag = crate::direction::tag_of(language);
        let found = self.token_to_id(&tag);
        let refuse = |reason: String| {
            Err(DataError::Tokenizer {
                context: format!("language tag {tag}"),
                reason,
            })
        };
        match (&self.kind, found) {
            (Kind::Marian(_), Some(id)) => Ok(id),
            (Kind::Trained(inner), Some(id)) => {
                if inner.is_special(id, &tag) {
                    Ok(id)
                } else {
                    refuse(format!(
                        "collides with an ordinary vocabulary entry (id {id}): a tag must be a special token, so that no text encodes as it; train the tokenizer with the run's directions instead of `data.tokenizer.from`"
                    ))
                }
            }
            (_, None) => refuse(
                "is not in the tokenizer: it was trained without this target language (a multilingual run trains its tokenizer with a tag for each target language of `[[data.directions]]`)".into(),
            ),
        }
    }

    /// Subword ids of `text`, without BOS/EOS.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, DataError> {
        match &self.kind {
            Kind::Trained(inner) => inner.encode(text),
            Kind::Marian(side) => Ok(side.encode(text)),
        }
    }

    /// Subword ids of each text, without BOS/EOS (in parallel).
    pub fn encode_batch(&self, texts: &[String]) -> Result<Vec<Vec<u32>>, DataError> {
        match &self.kind {
            Kind::Trained(inner) => inner.encode_batch(texts),
            Kind::Marian(side) => encode_in_parallel(texts, |text| side.encode(text)),
        }
    }

    /// The subword strings of `ids` (byte-level symbols, for display and plots).
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        match &self.kind {
            Kind::Trained(inner) => inner.id_to_token(id),
            Kind::Marian(side) => side.id_to_token(id),
        }
    }

    /// Text of `ids`, special tokens skipped: the NFC form of the encoded text.
    pub fn decode(&self, ids: &[u32]) -> Result<String, DataError> {
        match &self.kind {
            Kind::Trained(inner) => inner.decode(ids),
            Kind::Marian(side) => side.decode(ids),
        }
    }
}

/// `encode` over `texts`, in order, on every core natively (one thread in WebAssembly).
fn encode_in_parallel(
    texts: &[String],
    encode: impl Fn(&str) -> Vec<u32> + Sync,
) -> Result<Vec<Vec<u32>>, DataError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads < 2 || texts.len() < 64 || cfg!(target_arch = "wasm32") {
        return Ok(texts.iter().map(|t| encode(t)).collect());
    }
    let chunk = texts.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = texts
            .chunks(chunk)
            .map(|part| scope.spawn(|| part.iter().map(|t| encode(t)).collect::<Vec<_>>()))
            .collect();
        let mut encoded = Vec::with_capacity(texts.len());
        for handle in handles {
            encoded.extend(handle.join().map_err(|_| DataError::Worker {
                what: "a thread encoding text with the MarianTokenizer stopped".into(),
            })?);
        }
        Ok(encoded)
    })
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A few sentences in two languages, repeated: enough to train a 300-subword tokenizer.
    pub(crate) fn corpus() -> Vec<String> {
        [
            "the cat sat on the mat",
            "die Katze saß auf der Matte",
            "a dog runs in the park",
            "ein Hund läuft im Park",
            "two dogs play with a ball",
            "zwei Hunde spielen mit einem Ball",
        ]
        .iter()
        .cycle()
        .take(60)
        .map(|s| s.to_string())
        .collect()
    }

    #[test]
    fn special_tokens_have_fixed_ids_and_text_round_trips() {
        for model in [SubwordModel::Bpe, SubwordModel::Unigram] {
            let settings = TokenizerSettings {
                model,
                vocab_size: 300,
                ..TokenizerSettings::default()
            };
            let tok = SubwordTokenizer::train(&settings, corpus().into_iter()).expect("train");
            for (id, t) in SPECIAL_TOKEN_NAMES.iter().enumerate() {
                assert_eq!(tok.token_to_id(t), Some(id as u32), "{model:?} {t}");
            }
            let ids = SPECIAL_TOKEN_IDS;
            for (id, t) in [
                (ids.pad, "<pad>"),
                (ids.unk, "<unk>"),
                (ids.bos, "<s>"),
                (ids.eos, "</s>"),
            ] {
                assert_eq!(tok.token_to_id(t), Some(id), "{model:?} {t}");
            }
            for text in [
                "die Katze saß",
                "ünseen wörds ½ → 猫",
                "  two  spaces ",
                "tab\there",
            ] {
                let ids = tok.encode(text).expect("encode");
                assert!(
                    !ids.contains(&SPECIAL_TOKEN_IDS.unk),
                    "{model:?}: <unk> in {text:?}: {ids:?}"
                );
                assert_eq!(tok.decode(&ids).expect("decode"), text, "{model:?}");
            }
        }
    }

    #[test]
    fn nfc_normalizes_decomposed_input() {
        let tok = SubwordTokenizer::train(
            &TokenizerSettings {
                vocab_size: 300,
                ..Default::default()
            },
            corpus().into_iter(),
        )
        .expect("train");
        let decomposed = "sa\u{0073}\u{0061}\u{0308}"; // "saä" with a combining diaeresis
        let ids = tok.encode(decomposed).expect("encode");
        assert_eq!(tok.decode(&ids).expect("decode"), "sas\u{00e4}");
    }

    #[test]
    fn json_round_trip_keeps_the_fingerprint() {
        let tok = SubwordTokenizer::train(
            &TokenizerSettings {
                vocab_size: 300,
                ..Default::default()
            },
            corpus().into_iter(),
        )
        .expect("train");
        let json = tok.to_json().expect("json");
        let back = SubwordTokenizer::from_json(&json, "test").expect("parse");
        assert_eq!(
            back.fingerprint().expect("fp"),
            tok.fingerprint().expect("fp")
        );
        assert_eq!(
            back.encode("the cat").expect("enc"),
            tok.encode("the cat").expect("enc")
        );
    }

    #[test]
    fn too_small_vocabulary_is_refused() {
        let err = SubwordTokenizer::train(
            &TokenizerSettings {
                vocab_size: 100,
                ..Default::default()
            },
            corpus().into_iter(),
        )
        .expect_err("too small");
        assert!(err.to_string().contains("vocab_size"), "{err}");
    }
}
