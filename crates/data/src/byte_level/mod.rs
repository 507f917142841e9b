//! Rosetta's trained tokenizers (`tokenizer.json`: NFC, GPT-2's byte-level pre-tokenizer,
//! BPE or Unigram, special tokens) read and run without the `tokenizers` crate: the browser
//! build's tokenizer, and the segmentation under BPE-dropout everywhere. Each part does what
//! the `tokenizers` crate does, and tests compare the two on real text (this crate's
//! `tests/byte_level.rs`); a `tokenizer.json` with settings Rosetta does not write is refused,
//! naming the key.

mod alphabet;
mod bpe;
mod pre_tokenizer;
mod tokenizer;
mod unicode_classes;
mod unigram;

pub use tokenizer::ByteLevelTokenizer;
