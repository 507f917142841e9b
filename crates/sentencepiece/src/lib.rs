//! Exact SentencePiece (unigram) encoding and decoding in pure Rust, and Hugging Face's
//! `MarianTokenizer` on top of it.
//!
//! [`SentencePieceModel`] reads a `.spm` protobuf and encodes and decodes as SentencePiece
//! 0.2.x does: the precompiled-charsmap normaliser by longest prefix, user-defined symbols,
//! the whitespace flags, the unigram Viterbi with SentencePiece's own float arithmetic, runs
//! of unknown characters merged. Model kinds it does not implement (BPE, WORD and CHAR models,
//! `byte_fallback`, `treat_whitespace_as_suffix`) are refused with an error naming the
//! setting.
//!
//! [`MarianTokenizer`] reproduces transformers 5.23's `MarianTokenizer` (OPUS-MT models):
//! splitting on special tokens written in the text, the `>>xx<<` language code, the
//! `vocab.json` ids, the appended `</s>` and decoding with `skip_special_tokens`.
//!
//! ```no_run
//! use rosetta_sentencepiece::MarianTokenizer;
//!
//! let tok = MarianTokenizer::from_dir(std::path::Path::new("opus-mt-en-de"))?;
//! let encoding = tok.encode("Hello world.");
//! let text = tok.decode(&encoding.ids)?;
//! # Ok::<(), rosetta_sentencepiece::Error>(())
//! ```

#![warn(missing_docs)]

mod added_tokens;
mod darts;
mod decode;
mod error;
mod marian;
mod marian_config;
mod model;
mod normalizer;
mod piece_trie;
pub mod proto;
mod pytext;
mod unigram;

pub use added_tokens::{AddedToken, TokenTrie};
pub use error::Error;
pub use marian::{
    MarianEncoding, MarianFiles, MarianTokenizer, SOURCE_SPM, Side, TARGET_SPM, TARGET_VOCAB, VOCAB,
};
pub use marian_config::{SPECIAL_TOKENS_MAP, TOKENIZER_CONFIG};
pub use model::{EncodedPiece, SentencePieceModel};
pub use normalizer::{Normalizer, SPACE_SYMBOL};
pub use proto::{ModelProto, ModelType, PieceType};
