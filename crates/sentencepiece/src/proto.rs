//! The subset of SentencePiece's `sentencepiece_model.proto` (proto2) that a `.spm` file holds
//! and this crate reads, derived by hand with `prost` (field numbers and defaults as upstream).
//!
//! Fields not listed here (training-only settings, extensions) are skipped when decoding.

use prost::Message;

use crate::error::Error;

/// What `<unk>` decodes to when the trainer spec does not say (`" ⁇ "`, U+2047 between spaces).
pub const DEFAULT_UNK_SURFACE: &str = " \u{2047} ";

/// A serialised SentencePiece model: the pieces, the trainer and normaliser settings.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    /// The vocabulary; a piece's index is its SentencePiece id.
    #[prost(message, repeated, tag = "1")]
    pub pieces: Vec<SentencePiece>,
    /// The settings the model was trained with (model type, byte fallback, ...).
    #[prost(message, optional, tag = "2")]
    pub trainer_spec: Option<TrainerSpec>,
    /// How text is normalised before segmentation.
    #[prost(message, optional, tag = "3")]
    pub normalizer_spec: Option<NormalizerSpec>,
    /// Samples SentencePiece checks when it loads the model.
    #[prost(message, optional, tag = "4")]
    pub self_test_data: Option<SelfTestData>,
    /// How decoded text is post-processed (applied only when it has a precompiled charsmap).
    #[prost(message, optional, tag = "5")]
    pub denormalizer_spec: Option<NormalizerSpec>,
}

/// One vocabulary entry of a [`ModelProto`].
#[derive(Clone, PartialEq, prost::Message)]
pub struct SentencePiece {
    /// The piece's text (`▁` marks a space).
    #[prost(string, optional, tag = "1")]
    pub piece: Option<String>,
    /// Its log probability (unigram) or merge priority (BPE).
    #[prost(float, optional, tag = "2")]
    pub score: Option<f32>,
    /// Its [`PieceType`] as the raw enum value (absent means `NORMAL`).
    #[prost(int32, optional, tag = "3")]
    pub r#type: Option<i32>,
}

/// The kind of a [`SentencePiece`] (`ModelProto.SentencePiece.Type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, prost::Enumeration)]
#[repr(i32)]
pub enum PieceType {
    /// An ordinary piece, produced by segmentation.
    Normal = 1,
    /// The unknown piece (`<unk>`).
    Unknown = 2,
    /// A control symbol (`<s>`, `</s>`): never produced from text, decodes to nothing.
    Control = 3,
    /// A user-defined symbol: kept unnormalised and always preferred by segmentation.
    UserDefined = 4,
    /// A byte piece (`<0x41>`), used with `byte_fallback`.
    Byte = 6,
    /// A piece segmentation never produces.
    Unused = 5,
}

/// The trainer settings that matter for encoding (`TrainerSpec`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrainerSpec {
    /// The algorithm ([`ModelType`] as the raw enum value; absent means `UNIGRAM`).
    #[prost(int32, optional, tag = "3")]
    pub model_type: Option<i32>,
    /// The vocabulary size asked of the trainer.
    #[prost(int32, optional, tag = "4", default = "8000")]
    pub vocab_size: Option<i32>,
    /// Whether the `▁` goes at the end of a word rather than its start.
    #[prost(bool, optional, tag = "24", default = "false")]
    pub treat_whitespace_as_suffix: Option<bool>,
    /// Whether unknown characters are encoded as UTF-8 byte pieces.
    #[prost(bool, optional, tag = "35", default = "false")]
    pub byte_fallback: Option<bool>,
    /// The id of `<unk>` asked of the trainer (the model's own is the UNKNOWN piece).
    #[prost(int32, optional, tag = "40", default = "0")]
    pub unk_id: Option<i32>,
    /// The id of `<s>` (-1: none).
    #[prost(int32, optional, tag = "41", default = "1")]
    pub bos_id: Option<i32>,
    /// The id of `</s>` (-1: none).
    #[prost(int32, optional, tag = "42", default = "2")]
    pub eos_id: Option<i32>,
    /// The id of `<pad>` (-1: none).
    #[prost(int32, optional, tag = "43", default = "-1")]
    pub pad_id: Option<i32>,
    /// The text `<unk>` decodes to (absent: `" \u{2047} "`, see [`DEFAULT_UNK_SURFACE`]).
    #[prost(string, optional, tag = "44")]
    pub unk_surface: Option<String>,
    /// The unknown piece's text as the trainer was asked to write it.
    #[prost(string, optional, tag = "45")]
    pub unk_piece: Option<String>,
}

/// `TrainerSpec.ModelType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, prost::Enumeration)]
#[repr(i32)]
pub enum ModelType {
    /// Unigram language model (the only one this crate encodes with).
    Unigram = 1,
    /// Byte-pair encoding.
    Bpe = 2,
    /// Whitespace-delimited words.
    Word = 3,
    /// Characters.
    Char = 4,
}

/// How text is normalised (`NormalizerSpec`); also used for the denormaliser.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NormalizerSpec {
    /// The rule set's name (`nmt_nfkc`, `identity`, `user_defined`, ...).
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// The compiled rules: a darts-clone double-array trie and the replacement strings.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub precompiled_charsmap: Option<Vec<u8>>,
    /// Whether a `▁` is put before the text.
    #[prost(bool, optional, tag = "3", default = "true")]
    pub add_dummy_prefix: Option<bool>,
    /// Whether leading, trailing and repeated spaces are removed.
    #[prost(bool, optional, tag = "4", default = "true")]
    pub remove_extra_whitespaces: Option<bool>,
    /// Whether spaces are written as `▁` (U+2581).
    #[prost(bool, optional, tag = "5", default = "true")]
    pub escape_whitespaces: Option<bool>,
}

/// Samples checked when a model is loaded (`SelfTestData`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SelfTestData {
    /// The samples.
    #[prost(message, repeated, tag = "1")]
    pub samples: Vec<SelfTestSample>,
}

/// One self-test sample: an input and its expected pieces, joined by spaces.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SelfTestSample {
    /// The input text.
    #[prost(string, optional, tag = "1")]
    pub input: Option<String>,
    /// The expected pieces, separated by single spaces.
    #[prost(string, optional, tag = "2")]
    pub expected: Option<String>,
}

impl ModelProto {
    /// Decodes a `.spm` file; `origin` names it in the error.
    pub fn from_bytes(bytes: &[u8], origin: &str) -> Result<Self, Error> {
        ModelProto::decode(bytes).map_err(|source| Error::Protobuf {
            origin: origin.to_owned(),
            source,
        })
    }

    /// Encodes the model back to protobuf bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.encode_to_vec()
    }
}
