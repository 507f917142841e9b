//! An imported MarianMT model's tokenizer (Hugging Face's `MarianTokenizer`: two SentencePiece
//! models and Marian's vocabulary), as one side of a [`Tokenizers`](crate::Tokenizers) pair.
//!
//! The segmentation is `rosetta-sentencepiece`'s, exact to Python's `sentencepiece` and
//! `transformers`; this module keeps the files' bytes (to save them beside a checkpoint, put them
//! in a bundle and fingerprint them) and picks the side.

use std::path::Path;
use std::sync::Arc;

use rosetta_model::SpecialTokens;
use rosetta_sentencepiece::{
    MarianFiles, MarianTokenizer, SOURCE_SPM, SPECIAL_TOKENS_MAP, Side, TARGET_SPM, TARGET_VOCAB,
    TOKENIZER_CONFIG, VOCAB,
};
use sha2::{Digest, Sha256};

use crate::error::DataError;
use crate::tokenizer::hex;

/// The files of a MarianTokenizer directory, required first.
pub const MARIAN_FILES: [&str; 6] = [
    SOURCE_SPM,
    TARGET_SPM,
    VOCAB,
    TARGET_VOCAB,
    TOKENIZER_CONFIG,
    SPECIAL_TOKENS_MAP,
];
/// How many of [`MARIAN_FILES`] every directory has.
const REQUIRED: usize = 3;

/// A MarianTokenizer and the bytes of the files it was built from.
#[derive(Debug)]
pub struct MarianVocabulary {
    tokenizer: MarianTokenizer,
    /// `vocab.json` by id: the source side's tokens (the decoding side's come from the
    /// tokenizer).
    source_tokens: Vec<Option<String>>,
    /// `(file name, bytes)`, in [`MARIAN_FILES`] order, present files only.
    files: Vec<(&'static str, Vec<u8>)>,
}

impl MarianVocabulary {
    /// Whether `dir` holds a MarianTokenizer (its `source.spm` and `vocab.json`).
    pub fn is_in(dir: &Path) -> bool {
        dir.join(SOURCE_SPM).is_file() && dir.join(VOCAB).is_file()
    }

    /// Reads the MarianTokenizer files of `dir`: `source.spm`, `target.spm`, `vocab.json`
    /// (required), `target_vocab.json`, `tokenizer_config.json`, `special_tokens_map.json`.
    pub fn load(dir: &Path) -> Result<Self, DataError> {
        let mut files = Vec::new();
        for (i, name) in MARIAN_FILES.into_iter().enumerate() {
            let path = dir.join(name);
            if path.is_file() {
                files.push((name, std::fs::read(&path).map_err(DataError::io(&path))?));
            } else if i < REQUIRED {
                return Err(DataError::Tokenizer {
                    context: format!("loading the MarianTokenizer of {}", dir.display()),
                    reason: format!("{name} is missing"),
                });
            }
        }
        Self::from_files(files).map_err(|e| match e {
            DataError::Tokenizer { context, reason } => DataError::Tokenizer {
                context: format!("{context} in {}", dir.display()),
                reason,
            },
            other => other,
        })
    }

    /// Builds the tokenizer from its files' bytes (`(name, bytes)`, names from
    /// [`MARIAN_FILES`]): the browser build loads it so.
    pub fn from_files(files: Vec<(&'static str, Vec<u8>)>) -> Result<Self, DataError> {
        let find = |name: &str| {
            files
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, bytes)| bytes.as_slice())
        };
        let missing = |name: &str| DataError::Tokenizer {
            context: "loading a MarianTokenizer".into(),
            reason: format!("{name} is missing"),
        };
        let marian = MarianFiles {
            source_spm: find(SOURCE_SPM).ok_or_else(|| missing(SOURCE_SPM))?,
            target_spm: find(TARGET_SPM).ok_or_else(|| missing(TARGET_SPM))?,
            vocab: find(VOCAB).ok_or_else(|| missing(VOCAB))?,
            target_vocab: find(TARGET_VOCAB),
            tokenizer_config: find(TOKENIZER_CONFIG),
            special_tokens_map: find(SPECIAL_TOKENS_MAP),
        };
        let tokenizer = MarianTokenizer::from_files(&marian).map_err(|e| DataError::Tokenizer {
            context: "loading a MarianTokenizer".into(),
            reason: e.to_string(),
        })?;
        // Parsed again by id; MarianTokenizer has checked the file.
        let vocab: std::collections::HashMap<String, u32> = serde_json::from_slice(marian.vocab)
            .map_err(|e| DataError::Tokenizer {
                context: format!("reading {VOCAB}"),
                reason: e.to_string(),
            })?;
        let rows = vocab.values().max().map_or(0, |&m| m as usize + 1);
        if rows > 2 * vocab.len() + 1024 {
            return Err(DataError::Tokenizer {
                context: format!("reading {VOCAB}"),
                reason: format!(
                    "its ids run to {} for {} entries: not a vocabulary's dense ids",
                    rows - 1,
                    vocab.len()
                ),
            });
        }
        let mut source_tokens = vec![None; rows];
        for (token, id) in vocab {
            source_tokens[id as usize] = Some(token);
        }
        let mut files = files;
        files.sort_by_key(|(name, _)| MARIAN_FILES.iter().position(|n| n == name));
        Ok(Self {
            tokenizer,
            source_tokens,
            files,
        })
    }

    /// The files' names and bytes.
    pub fn files(&self) -> &[(&'static str, Vec<u8>)] {
        &self.files
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &MarianTokenizer {
        &self.tokenizer
    }

    /// Writes the files into `dir`, each atomically.
    pub fn save(&self, dir: &Path) -> Result<(), DataError> {
        for (name, bytes) in &self.files {
            crate::atomic::write(&dir.join(name), bytes)?;
        }
        Ok(())
    }

    /// A SHA-256 over every file's name and bytes: equal for the same files.
    pub fn fingerprint(&self) -> String {
        let mut hasher = Sha256::new();
        for (name, bytes) in &self.files {
            hasher.update(name.as_bytes());
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
        hex(&hasher.finalize())
    }

    /// The special ids a model of this vocabulary decodes with, `decoder_start` being the id the
    /// model's decoder starts from (the model's configuration has it, not the tokenizer).
    pub fn special_tokens(&self, decoder_start: u32) -> Result<SpecialTokens, DataError> {
        let pad = self
            .tokenizer
            .pad_id()
            .ok_or_else(|| DataError::Tokenizer {
                context: "the MarianTokenizer".into(),
                reason: "has no padding token".into(),
            })?;
        Ok(SpecialTokens {
            pad,
            unk: self.tokenizer.unk_id(),
            bos: decoder_start,
            eos: self.tokenizer.eos_id(),
        })
    }
}

/// One side of a MarianTokenizer: source text encodes with `source.spm` and `vocab.json`, target
/// text with `target.spm` and the target vocabulary.
#[derive(Debug, Clone)]
pub struct MarianSide {
    /// The shared vocabulary and files.
    pub vocabulary: Arc<MarianVocabulary>,
    /// Which side this is.
    pub side: Side,
}

impl MarianSide {
    /// Subword ids of `text`, without the EOS `MarianTokenizer` appends (the framing adds it).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let encoding = self.vocabulary.tokenizer.encode_side(text, self.side);
        encoding.ids_without_eos().to_vec()
    }

    /// `tok.decode(ids, skip_special_tokens=True)`.
    pub fn decode(&self, ids: &[u32]) -> Result<String, DataError> {
        self.vocabulary
            .tokenizer
            .decode(ids)
            .map_err(|e| DataError::Tokenizer {
                context: "decoding".into(),
                reason: e.to_string(),
            })
    }

    /// The side's vocabulary size.
    pub fn vocab_size(&self) -> usize {
        match self.side {
            Side::Source => self.vocabulary.tokenizer.vocab_size(),
            Side::Target => self.vocabulary.tokenizer.target_vocab_size(),
        }
    }

    /// The id of `token` on this side.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        match self.side {
            Side::Source => self.vocabulary.tokenizer.token_to_id(token),
            Side::Target => self.vocabulary.tokenizer.target_token_to_id(token),
        }
    }

    /// The token of `id` on this side.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        match self.side {
            Side::Source => self
                .vocabulary
                .source_tokens
                .get(id as usize)
                .cloned()
                .flatten(),
            Side::Target => self
                .vocabulary
                .tokenizer
                .id_to_token(id)
                .map(str::to_string),
        }
    }

    /// A fingerprint of the files and the side.
    pub fn fingerprint(&self) -> String {
        let side = match self.side {
            Side::Source => "source",
            Side::Target => "target",
        };
        format!("marian-{side}-{}", self.vocabulary.fingerprint())
    }
}
