//! [`ByteLevelTokenizer`]: a Rosetta `tokenizer.json` parsed and run.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Value, json};
use unicode_normalization_alignments::UnicodeNormalization;

use super::bpe::{BpeJson, BpeModel, Dropout};
use super::unigram::{UnigramJson, UnigramModel};
use super::{alphabet, pre_tokenizer};
use crate::error::DataError;
use crate::rng::SplitMix64;

/// A Rosetta `tokenizer.json`, encoding and decoding as the `tokenizers` crate does with
/// special tokens never matched in text (`</s>` typed by a user is text).
#[derive(Debug, Clone)]
pub struct ByteLevelTokenizer {
    model: Model,
    /// Added tokens (all special) by id.
    added: HashMap<u32, String>,
    /// Added tokens by text; decoding skips tokens with this text.
    added_ids: HashMap<String, u32>,
}

#[derive(Debug, Clone)]
enum Model {
    Bpe(BpeModel),
    Unigram(UnigramModel),
}

/// A `tokenizer.json` as the `tokenizers` crate writes it; the parts Rosetta sets are
/// checked, each in one place below.
#[derive(Deserialize)]
struct TokenizerFile {
    #[serde(default, rename = "version")]
    _version: Option<String>,
    truncation: Option<Value>,
    padding: Option<Value>,
    #[serde(default)]
    added_tokens: Vec<AddedTokenJson>,
    normalizer: Option<Value>,
    pre_tokenizer: Option<Value>,
    post_processor: Option<Value>,
    decoder: Option<Value>,
    model: Value,
}

#[derive(Deserialize)]
struct AddedTokenJson {
    id: u32,
    content: String,
    #[serde(default)]
    special: bool,
    #[serde(default)]
    normalized: bool,
}

impl ByteLevelTokenizer {
    /// Parses a `tokenizer.json`; `origin` names it in errors. Refused, naming the key: a
    /// normalizer other than NFC, a pre-tokenizer other than ByteLevel without a prefix space,
    /// a decoder other than ByteLevel, a post-processor, truncation or padding, an added token
    /// that is not special, is normalized or is not the model's token of its id, a model other
    /// than BPE or Unigram or with options Rosetta does not set.
    pub fn from_json(json: &str, origin: &str) -> Result<Self, DataError> {
        let refuse = |reason: String| DataError::Tokenizer {
            context: format!("loading {origin}"),
            reason,
        };
        let file: TokenizerFile =
            serde_json::from_str(json).map_err(|e| refuse(format!("not a tokenizer.json: {e}")))?;
        let pre_tokenizer_ok = file.pre_tokenizer.as_ref().is_some_and(|p| {
            p["type"] == "ByteLevel"
                && p["add_prefix_space"] == false
                && (p["use_regex"] == true || p.get("use_regex").is_none())
        });
        for (key, ok) in [
            (
                "normalizer",
                file.normalizer == Some(json!({"type": "NFC"})),
            ),
            ("pre_tokenizer", pre_tokenizer_ok),
            (
                "decoder",
                file.decoder
                    .as_ref()
                    .is_some_and(|d| d["type"] == "ByteLevel"),
            ),
            ("post_processor", file.post_processor.is_none()),
            ("truncation", file.truncation.is_none()),
            ("padding", file.padding.is_none()),
        ] {
            if !ok {
                return Err(refuse(format!(
                    "`{key}` is not what Rosetta's tokenizers have (NFC, ByteLevel without a \
                     prefix space, ByteLevel, none, none, none)"
                )));
            }
        }
        let model = match file.model["type"].as_str() {
            Some("BPE") => Model::Bpe(
                serde_json::from_value::<BpeJson>(file.model)
                    .map_err(|e| refuse(format!("`model`: {e}")))
                    .and_then(|m| BpeModel::from_json(m).map_err(refuse))?,
            ),
            Some("Unigram") => Model::Unigram(
                serde_json::from_value::<UnigramJson>(file.model)
                    .map_err(|e| refuse(format!("`model`: {e}")))
                    .and_then(|m| UnigramModel::from_json(m).map_err(refuse))?,
            ),
            other => {
                return Err(refuse(format!(
                    "`model.type` is {other:?}; Rosetta's tokenizers are BPE or Unigram"
                )));
            }
        };
        let mut added = HashMap::new();
        let mut added_ids = HashMap::new();
        for (index, token) in file.added_tokens.into_iter().enumerate() {
            if !token.special || token.normalized {
                return Err(refuse(format!(
                    "`added_tokens[{index}]` ({:?}) is not special, or is normalized; Rosetta \
                     adds special tokens only, not normalized",
                    token.content
                )));
            }
            let in_model = match &model {
                Model::Bpe(model) => model.vocab.get(&token.content).copied(),
                Model::Unigram(model) => model.ids.get(&token.content).copied(),
            };
            if in_model != Some(token.id) {
                return Err(refuse(format!(
                    "`added_tokens[{index}]` ({:?}, id {}) is not in the model's vocabulary with \
                     that id, as the tokens Rosetta adds are",
                    token.content, token.id
                )));
            }
            added_ids.insert(token.content.clone(), token.id);
            added.insert(token.id, token.content);
        }
        Ok(Self {
            model,
            added,
            added_ids,
        })
    }

    /// Subword ids of `text`, without BOS/EOS.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, DataError> {
        self.encode_with(text, None)
    }

    /// Subword ids of `text` with each BPE merge skipped with probability `dropout.0`, drawing
    /// from `dropout.1` (BPE-dropout); `None` or a probability of 0 is [`encode`](Self::encode).
    pub(crate) fn encode_with(
        &self,
        text: &str,
        mut dropout: Option<(f64, &mut SplitMix64)>,
    ) -> Result<Vec<u32>, DataError> {
        let normalized: String = text.nfc().map(|(c, _)| c).collect();
        let mut ids = Vec::with_capacity(normalized.len() / 3 + 1);
        let mut word = String::new();
        for piece in pre_tokenizer::words(&normalized) {
            word.clear();
            alphabet::push_bytes(piece, &mut word);
            match &self.model {
                Model::Bpe(model) => {
                    let dropout = dropout.as_mut().map(|(probability, rng)| Dropout {
                        probability: *probability,
                        rng,
                    });
                    model.tokenize(&word, dropout, &mut ids);
                }
                Model::Unigram(model) => {
                    model
                        .tokenize(&word, &mut ids)
                        .map_err(|reason| DataError::Tokenizer {
                            context: "encoding".into(),
                            reason,
                        })?
                }
            }
        }
        Ok(ids)
    }

    /// Whether the model is BPE (BPE-dropout needs one).
    pub(crate) fn is_bpe(&self) -> bool {
        matches!(self.model, Model::Bpe(_))
    }

    /// Text of `ids`, special tokens and ids outside the vocabulary skipped.
    pub fn decode(&self, ids: &[u32]) -> String {
        let tokens = ids
            .iter()
            .filter_map(|&id| self.id_to_token_str(id))
            .filter(|token| !self.added_ids.contains_key(*token));
        alphabet::decode(tokens)
    }

    fn id_to_token_str(&self, id: u32) -> Option<&str> {
        if let Some(content) = self.added.get(&id) {
            return Some(content);
        }
        match &self.model {
            Model::Bpe(model) => model.tokens.get(&id).map(String::as_str),
            Model::Unigram(model) => model.pieces.get(id as usize).map(|(p, _)| p.as_str()),
        }
    }

    /// The token (byte-level symbols) of `id`.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.id_to_token_str(id).map(str::to_owned)
    }

    /// The id of `token`: an added token's, else the model's.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.added_ids
            .get(token)
            .copied()
            .or_else(|| match &self.model {
                Model::Bpe(model) => model.vocab.get(token).copied(),
                Model::Unigram(model) => model.ids.get(token).copied(),
            })
    }

    /// The text of the added (special) token with `id`.
    pub fn added_token(&self, id: u32) -> Option<&str> {
        self.added.get(&id).map(String::as_str)
    }

    /// Vocabulary size: the model's (every added token is one of its tokens, checked on
    /// loading), as `tokenizers`' `get_vocab_size(true)` counts it.
    pub fn vocab_size(&self) -> usize {
        match &self.model {
            Model::Bpe(model) => model.vocab.len(),
            Model::Unigram(model) => model.pieces.len(),
        }
    }
}
