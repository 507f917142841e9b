//! Hugging Face's `MarianTokenizer` (transformers 5.23, `models/marian/tokenization_marian.py`
//! and the `PythonBackend` base class), exactly, on the crate's SentencePiece models.
//!
//! Encoding a text (`tok(text).input_ids`):
//! 1. The text is cut on the added tokens (`</s>`, `<unk>`, `<pad>`, extra special tokens, any
//!    `added_tokens_decoder` entry) written in it, longest match first (`Trie.split`); their
//!    `lstrip` / `rstrip` / `single_word` flags apply (all off by default: spaces around a
//!    special token are left to SentencePiece, which drops them at a segment's ends).
//! 2. Each other segment that starts with `>>` and contains `<<` loses its language code, the
//!    text up to the first `<<` (e.g. `>>fr<<`), which becomes one token; only at a segment's
//!    start, so a code in the middle of the text is encoded by SentencePiece like any text.
//! 3. The rest is encoded by `source.spm` (`target.spm` for target text).
//! 4. Tokens map to ids through the added tokens, then `vocab.json` (`target_vocab.json` for
//!    the target side with separate vocabularies); an unknown token is `<unk>`'s id.
//! 5. `</s>` is appended.
//!
//! Decoding (`tok.decode(ids, skip_special_tokens=True)`): the special ids are dropped; ids
//! become tokens through the added tokens, the target vocabulary if separate (else the shared
//! one), else the SentencePiece model's own piece of that id; runs of tokens are decoded by the
//! source model when the vocabulary is shared (the target model when separate), a special
//! token kept (without skipping) is written as it is followed by a space, `▁` becomes a space
//! and Python's `strip()` trims the result. `clean_up_tokenization_spaces` (false unless
//! configured) then removes spaces before punctuation.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::added_tokens::{AddedToken, TokenTrie, apply_token_flags};
use crate::error::Error;
use crate::marian_config::{MarianConfig, SPECIAL_TOKENS_MAP, TOKENIZER_CONFIG};
use crate::model::SentencePieceModel;
use crate::normalizer::SPACE_SYMBOL;
use crate::proto::PieceType;
use crate::pytext;

/// The source SentencePiece model's file name.
pub const SOURCE_SPM: &str = "source.spm";
/// The target SentencePiece model's file name.
pub const TARGET_SPM: &str = "target.spm";
/// The (source, or shared) vocabulary's file name.
pub const VOCAB: &str = "vocab.json";
/// The target vocabulary's file name (with `separate_vocabs`).
pub const TARGET_VOCAB: &str = "target_vocab.json";

/// The bytes of a MarianTokenizer directory's files.
#[derive(Clone, Copy, Debug, Default)]
pub struct MarianFiles<'a> {
    /// `source.spm`.
    pub source_spm: &'a [u8],
    /// `target.spm`.
    pub target_spm: &'a [u8],
    /// `vocab.json`: piece -> id.
    pub vocab: &'a [u8],
    /// `target_vocab.json`, used when `separate_vocabs` is set.
    pub target_vocab: Option<&'a [u8]>,
    /// `tokenizer_config.json`.
    pub tokenizer_config: Option<&'a [u8]>,
    /// `special_tokens_map.json` (legacy; read only without `added_tokens_decoder`).
    pub special_tokens_map: Option<&'a [u8]>,
}

/// Which side of the translation a text is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Source text: `source.spm` and `vocab.json`.
    Source,
    /// Target text (`text_target=`): `target.spm` and the target vocabulary.
    Target,
}

/// An encoded text: its tokens (`tok.tokenize(text)`) and ids (`tok(text).input_ids`, which
/// end with `</s>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarianEncoding {
    /// The tokens, without the final `</s>`.
    pub pieces: Vec<String>,
    /// The ids, ending with the `</s>` id.
    pub ids: Vec<u32>,
}

impl MarianEncoding {
    /// The ids without the final `</s>` (for framing that appends its own).
    pub fn ids_without_eos(&self) -> &[u32] {
        &self.ids[..self.ids.len().saturating_sub(1)]
    }
}

/// `MarianTokenizer`: two SentencePiece models and the Marian vocabulary (whose ids are not
/// SentencePiece's).
#[derive(Clone, Debug)]
pub struct MarianTokenizer {
    source: SentencePieceModel,
    target: SentencePieceModel,
    encoder: HashMap<String, u32>,
    target_encoder: Option<HashMap<String, u32>>,
    /// id -> token of the decoding side (target vocabulary if separate, else the shared one).
    decoder: HashMap<u32, String>,
    added_by_content: HashMap<String, AddedToken>,
    added_ids: HashMap<String, u32>,
    added_by_id: HashMap<u32, String>,
    trie: TokenTrie,
    all_special_tokens: Vec<String>,
    special_tokens: HashSet<String>,
    all_special_ids: Vec<u32>,
    special_ids: HashSet<u32>,
    eos_id: u32,
    unk_token: String,
    unk_id: u32,
    pad_id: Option<u32>,
    separate_vocabs: bool,
    clean_up_tokenization_spaces: bool,
    split_special_tokens: bool,
}

/// Parses a vocabulary file: a JSON object of token -> non-negative integer id, ids unique.
fn parse_vocab(bytes: &[u8], origin: &str) -> Result<HashMap<String, u32>, Error> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| Error::json(origin, format!("not valid JSON: {e}")))?;
    let Value::Object(map) = value else {
        return Err(Error::json(origin, "not a JSON object of token -> id"));
    };
    let mut vocab = HashMap::with_capacity(map.len());
    let mut seen: HashMap<u32, String> = HashMap::with_capacity(map.len());
    for (token, id) in map {
        let id = id
            .as_u64()
            .and_then(|id| u32::try_from(id).ok())
            .ok_or_else(|| {
                Error::json(
                    origin,
                    format!("the id of {token:?} is not an integer in 0..2^32: {id}"),
                )
            })?;
        if let Some(other) = seen.insert(id, token.clone()) {
            return Err(Error::json(
                origin,
                format!("id {id} is given to both {other:?} and {token:?}"),
            ));
        }
        vocab.insert(token, id);
    }
    Ok(vocab)
}

/// Checks that every piece segmentation can produce is in the vocabulary.
fn check_pieces(
    model: &SentencePieceModel,
    vocab: &HashMap<String, u32>,
    vocab_origin: &str,
) -> Result<(), Error> {
    for id in 0..model.len() as u32 {
        let kind = model.piece_type(id);
        if matches!(kind, Some(PieceType::Normal | PieceType::UserDefined)) {
            let piece = model.id_to_piece(id).unwrap_or_default();
            if !vocab.contains_key(piece) {
                return Err(Error::vocab(
                    vocab_origin,
                    format!(
                        "lacks the piece {piece:?} (id {id} of {}); the vocabulary does not belong to this model",
                        model.origin()
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn read_file(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// `PreTrainedTokenizerBase.clean_up_tokenization`.
fn clean_up_tokenization(text: &str) -> String {
    text.replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
}

impl MarianTokenizer {
    /// Builds the tokenizer from the files' bytes, checking that they belong together.
    ///
    /// Errors name the file: a damaged `.spm`, a JSON file that does not parse or has the
    /// wrong shape, a vocabulary without a special token, a vocabulary that lacks a NORMAL or
    /// USER_DEFINED piece of its SentencePiece model (the first one is named), an
    /// `added_tokens_decoder` id that disagrees with the vocabulary, and the unsupported
    /// SentencePiece settings (see [`SentencePieceModel`]).
    pub fn from_files(files: &MarianFiles<'_>) -> Result<Self, Error> {
        Self::build(files, true)
    }

    /// As [`from_files`](Self::from_files), but accepting a vocabulary that lacks pieces of
    /// its SentencePiece model (they then encode to `<unk>`'s id, as in transformers).
    pub fn from_files_allowing_missing_pieces(files: &MarianFiles<'_>) -> Result<Self, Error> {
        Self::build(files, false)
    }

    /// Reads a MarianTokenizer directory (`save_pretrained`'s files) and builds the tokenizer.
    pub fn from_dir(dir: &Path) -> Result<Self, Error> {
        let source_spm = read_file(&dir.join(SOURCE_SPM))?;
        let target_spm = read_file(&dir.join(TARGET_SPM))?;
        let vocab = read_file(&dir.join(VOCAB))?;
        let target_vocab = read_optional(&dir.join(TARGET_VOCAB))?;
        let tokenizer_config = read_optional(&dir.join(TOKENIZER_CONFIG))?;
        let special_tokens_map = read_optional(&dir.join(SPECIAL_TOKENS_MAP))?;
        Self::from_files(&MarianFiles {
            source_spm: &source_spm,
            target_spm: &target_spm,
            vocab: &vocab,
            target_vocab: target_vocab.as_deref(),
            tokenizer_config: tokenizer_config.as_deref(),
            special_tokens_map: special_tokens_map.as_deref(),
        })
    }

    fn build(files: &MarianFiles<'_>, require_all_pieces: bool) -> Result<Self, Error> {
        let config = MarianConfig::from_files(files.tokenizer_config, files.special_tokens_map)?;
        let source = SentencePieceModel::from_bytes(files.source_spm, SOURCE_SPM)?;
        let target = SentencePieceModel::from_bytes(files.target_spm, TARGET_SPM)?;
        let encoder = parse_vocab(files.vocab, VOCAB)?;
        let target_encoder = if config.separate_vocabs {
            let Some(bytes) = files.target_vocab else {
                return Err(Error::MissingFile {
                    origin: TARGET_VOCAB.to_owned(),
                    detail: format!("{TOKENIZER_CONFIG} sets separate_vocabs"),
                });
            };
            Some(parse_vocab(bytes, TARGET_VOCAB)?)
        } else {
            None
        };
        if require_all_pieces {
            check_pieces(&source, &encoder, VOCAB)?;
            match &target_encoder {
                Some(target_vocab) => check_pieces(&target, target_vocab, TARGET_VOCAB)?,
                None => check_pieces(&target, &encoder, VOCAB)?,
            }
        }

        // PythonBackend.__init__: the saved added tokens, then every special token not among
        // them, at its id in the vocabulary.
        let mut added_by_content: HashMap<String, AddedToken> = HashMap::new();
        let mut added_ids: HashMap<String, u32> = HashMap::new();
        let mut added_by_id: HashMap<u32, String> = HashMap::new();
        for (id, token) in &config.added_tokens {
            if let Some(&vocab_id) = encoder.get(&token.content)
                && vocab_id != *id
            {
                return Err(Error::vocab(
                    TOKENIZER_CONFIG,
                    format!(
                        "added_tokens_decoder gives {:?} the id {id}, {VOCAB} gives it {vocab_id}",
                        token.content
                    ),
                ));
            }
            added_ids.insert(token.content.clone(), *id);
            added_by_id.insert(*id, token.content.clone());
            added_by_content.insert(token.content.clone(), token.clone());
        }
        let all_special_tokens = config.all_special_tokens();
        for token in &all_special_tokens {
            if added_ids.contains_key(token) {
                continue;
            }
            let Some(&id) = encoder.get(token) else {
                let attribute = config
                    .named
                    .iter()
                    .find(|(_, content)| content == token)
                    .map_or("an extra special token", |(attr, _)| attr.as_str());
                return Err(Error::vocab(
                    VOCAB,
                    format!("has no entry for the special token {token:?} ({attribute})"),
                ));
            };
            added_ids.insert(token.clone(), id);
            added_by_id.insert(id, token.clone());
            added_by_content.insert(token.clone(), AddedToken::special(token));
        }
        let unk_token = config.token("unk_token").unwrap_or("<unk>").to_owned();
        if let Some(target_vocab) = &target_encoder
            && !target_vocab.contains_key(&unk_token)
        {
            return Err(Error::vocab(
                TARGET_VOCAB,
                format!("has no entry for the special token {unk_token:?} (unk_token)"),
            ));
        }
        let id_of = |attribute: &str| {
            config
                .token(attribute)
                .and_then(|t| added_ids.get(t).copied())
        };
        let (Some(eos_id), Some(unk_id)) = (id_of("eos_token"), id_of("unk_token")) else {
            return Err(Error::vocab(VOCAB, "has no id for </s> or <unk>"));
        };
        let pad_id = id_of("pad_token");
        let all_special_ids: Vec<u32> = all_special_tokens
            .iter()
            .filter_map(|t| added_ids.get(t).copied())
            .collect();
        let decoder = target_encoder
            .as_ref()
            .unwrap_or(&encoder)
            .iter()
            .map(|(token, &id)| (id, token.clone()))
            .collect();
        let trie = TokenTrie::new(added_ids.keys().map(String::as_str));
        Ok(MarianTokenizer {
            source,
            target,
            encoder,
            target_encoder,
            decoder,
            trie,
            special_tokens: all_special_tokens.iter().cloned().collect(),
            all_special_tokens,
            special_ids: all_special_ids.iter().copied().collect(),
            all_special_ids,
            added_by_content,
            added_ids,
            added_by_id,
            eos_id,
            unk_token,
            unk_id,
            pad_id,
            separate_vocabs: config.separate_vocabs,
            clean_up_tokenization_spaces: config.clean_up_tokenization_spaces,
            split_special_tokens: config.split_special_tokens,
        })
    }

    /// The source SentencePiece model.
    pub fn source_model(&self) -> &SentencePieceModel {
        &self.source
    }

    /// The target SentencePiece model.
    pub fn target_model(&self) -> &SentencePieceModel {
        &self.target
    }

    /// Whether the target side has its own vocabulary.
    pub fn separate_vocabs(&self) -> bool {
        self.separate_vocabs
    }

    /// `tok.vocab_size`: the number of entries of `vocab.json`.
    pub fn vocab_size(&self) -> usize {
        self.encoder.len()
    }

    /// The number of entries of the target vocabulary (`vocab.json` when shared).
    pub fn target_vocab_size(&self) -> usize {
        self.target_encoder.as_ref().unwrap_or(&self.encoder).len()
    }

    /// The `</s>` id (appended to every encoding).
    pub fn eos_id(&self) -> u32 {
        self.eos_id
    }

    /// The `<unk>` id.
    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }

    /// The `<pad>` id, if the tokenizer has a pad token.
    pub fn pad_id(&self) -> Option<u32> {
        self.pad_id
    }

    /// `tok.all_special_tokens`: named special tokens, then extra ones.
    pub fn all_special_tokens(&self) -> &[String] {
        &self.all_special_tokens
    }

    /// `tok.all_special_ids`, in the order of [`all_special_tokens`](Self::all_special_tokens).
    pub fn all_special_ids(&self) -> &[u32] {
        &self.all_special_ids
    }

    /// The language codes `>>xx<<` of a shared vocabulary (`supported_language_codes`; empty
    /// with separate vocabularies, as in transformers), sorted.
    pub fn language_codes(&self) -> Vec<&str> {
        if self.separate_vocabs {
            return Vec::new();
        }
        let mut codes: Vec<&str> = self
            .encoder
            .keys()
            .map(String::as_str)
            .filter(|k| k.starts_with(">>") && k.ends_with("<<"))
            .collect();
        codes.sort_unstable();
        codes
    }

    /// The source-side id of `token` (added tokens, then `vocab.json`); `None` where
    /// transformers would answer `<unk>`'s id.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.added_ids
            .get(token)
            .or_else(|| self.encoder.get(token))
            .copied()
    }

    /// The target-side id of `token` (added tokens, then the target vocabulary).
    pub fn target_token_to_id(&self, token: &str) -> Option<u32> {
        self.added_ids
            .get(token)
            .or_else(|| self.current_encoder(Side::Target).get(token))
            .copied()
    }

    /// The token of `id` as decoding sees it (`convert_ids_to_tokens`): an added token, the
    /// decoding vocabulary's entry, else the decoding SentencePiece model's piece of that id;
    /// `None` past all of them (where transformers raises).
    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        if let Some(token) = self.added_by_id.get(&id) {
            return Some(token);
        }
        if let Some(token) = self.decoder.get(&id) {
            return Some(token);
        }
        self.decoding_model().id_to_piece(id)
    }

    fn current_encoder(&self, side: Side) -> &HashMap<String, u32> {
        match (side, &self.target_encoder) {
            (Side::Target, Some(target)) => target,
            _ => &self.encoder,
        }
    }

    fn model(&self, side: Side) -> &SentencePieceModel {
        match side {
            Side::Source => &self.source,
            Side::Target => &self.target,
        }
    }

    /// The model decoding uses: the source one with a shared vocabulary, else the target one.
    fn decoding_model(&self) -> &SentencePieceModel {
        if self.separate_vocabs {
            &self.target
        } else {
            &self.source
        }
    }

    /// `MarianTokenizer._tokenize`: a leading language code, then SentencePiece's pieces.
    fn tokenize_segment(&self, text: &str, side: Side, out: &mut Vec<String>) {
        let mut text = text;
        if text.starts_with(">>")
            && let Some(end) = text.find("<<")
        {
            out.push(text[..end + 2].to_owned());
            text = &text[end + 2..];
        }
        out.extend(self.model(side).encode_as_pieces(text));
    }

    /// The tokens of `text` on `side` (`tok.tokenize(text)`, in target mode for the target).
    pub fn tokenize_side(&self, text: &str, side: Side) -> Vec<String> {
        let mut out = Vec::new();
        if self.split_special_tokens {
            self.tokenize_segment(text, side, &mut out);
            return out;
        }
        let mut segments = self.trie.split(text);
        apply_token_flags(&mut segments, &self.added_by_content);
        for segment in segments {
            if segment.is_empty() {
                continue;
            }
            if self.added_ids.contains_key(&segment) || self.special_tokens.contains(&segment) {
                out.push(segment);
            } else {
                self.tokenize_segment(&segment, side, &mut out);
            }
        }
        out
    }

    /// The source tokens of `text` (`tok.tokenize(text)`).
    pub fn tokenize(&self, text: &str) -> Vec<String> {
        self.tokenize_side(text, Side::Source)
    }

    /// The id of a token on `side` (`_convert_token_to_id_with_added_voc`).
    fn convert_token(&self, token: &str, side: Side) -> u32 {
        if let Some(&id) = self.added_ids.get(token) {
            return id;
        }
        let encoder = self.current_encoder(side);
        match encoder.get(token).or_else(|| encoder.get(&self.unk_token)) {
            Some(&id) => id,
            // Both vocabularies hold the unk token (checked when building).
            None => self.unk_id,
        }
    }

    /// Encodes `text` on `side`: tokens and ids, `</s>` appended to the ids.
    pub fn encode_side(&self, text: &str, side: Side) -> MarianEncoding {
        let pieces = self.tokenize_side(text, side);
        let mut ids: Vec<u32> = pieces.iter().map(|p| self.convert_token(p, side)).collect();
        ids.push(self.eos_id);
        MarianEncoding { pieces, ids }
    }

    /// Encodes a source text: `tok(text).input_ids` (ending with `</s>`) and its tokens.
    pub fn encode(&self, text: &str) -> MarianEncoding {
        self.encode_side(text, Side::Source)
    }

    /// Encodes a target text: `tok(text_target=text).input_ids` and its tokens.
    pub fn encode_target(&self, text: &str) -> MarianEncoding {
        self.encode_side(text, Side::Target)
    }

    /// `tok.decode(ids, skip_special_tokens=True)`. An id that neither the vocabulary nor the
    /// decoding SentencePiece model knows is an error (transformers raises).
    pub fn decode(&self, ids: &[u32]) -> Result<String, Error> {
        self.decode_with(ids, true)
    }

    /// `tok.decode(ids)`: special tokens are kept, each followed by a space.
    pub fn decode_keeping_special_tokens(&self, ids: &[u32]) -> Result<String, Error> {
        self.decode_with(ids, false)
    }

    fn decode_with(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String, Error> {
        let model = self.decoding_model();
        let mut tokens: Vec<&str> = Vec::with_capacity(ids.len());
        for &id in ids {
            if skip_special_tokens && self.special_ids.contains(&id) {
                continue;
            }
            let token = self.id_to_token(id).ok_or_else(|| Error::IdOutOfRange {
                id,
                detail: format!(
                    "not in {} and past the {} pieces of {}",
                    if self.separate_vocabs {
                        TARGET_VOCAB
                    } else {
                        VOCAB
                    },
                    model.len(),
                    model.origin()
                ),
            })?;
            tokens.push(token);
        }
        // MarianTokenizer.convert_tokens_to_string.
        let mut out = String::new();
        let mut run: Vec<&str> = Vec::new();
        for token in tokens {
            if self.special_tokens.contains(token) {
                out.push_str(&model.decode_pieces(&run));
                out.push_str(token);
                out.push(' ');
                run.clear();
            } else {
                run.push(token);
            }
        }
        out.push_str(&model.decode_pieces(&run));
        let out = out.replace(SPACE_SYMBOL, " ");
        let out = pytext::strip(&out);
        Ok(if self.clean_up_tokenization_spaces {
            clean_up_tokenization(out)
        } else {
            out.to_owned()
        })
    }
}
