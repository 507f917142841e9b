//! The crate's error type: every variant names the file (or other origin) it is about.

use std::path::PathBuf;

/// What can go wrong loading a SentencePiece model or a MarianTokenizer, or decoding ids.
///
/// `origin` is the name given for the bytes (a file name such as `source.spm` or `vocab.json`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a SentencePiece model protobuf (damaged or truncated file).
    #[error("{origin}: not a SentencePiece model: the protobuf does not decode ({source})")]
    Protobuf {
        /// The file the bytes came from.
        origin: String,
        /// What the protobuf decoder found.
        #[source]
        source: prost::DecodeError,
    },
    /// A model setting this crate does not implement (it refuses rather than encode differently).
    #[error("{origin}: {setting} is not supported ({detail})")]
    Unsupported {
        /// The file the model came from.
        origin: String,
        /// The setting and its value, e.g. `model_type BPE` or `byte_fallback = true`.
        setting: String,
        /// Why, or what is supported instead.
        detail: String,
    },
    /// A model SentencePiece itself would refuse to load, or damaged data inside it.
    #[error("{origin}: invalid SentencePiece model: {detail}")]
    InvalidModel {
        /// The file the model came from.
        origin: String,
        /// What is wrong.
        detail: String,
    },
    /// A JSON file that does not parse or does not have the expected shape.
    #[error("{origin}: {detail}")]
    Json {
        /// The JSON file.
        origin: String,
        /// What is wrong, with the key where there is one.
        detail: String,
    },
    /// A vocabulary that lacks a special token or a piece of its SentencePiece model, or a
    /// configuration that disagrees with it.
    #[error("{origin}: {detail}")]
    Vocab {
        /// The vocabulary or configuration file.
        origin: String,
        /// What is missing or inconsistent, naming the first offending token.
        detail: String,
    },
    /// A file needed to build a tokenizer is absent.
    #[error("{origin}: missing ({detail})")]
    MissingFile {
        /// The file name.
        origin: String,
        /// Why it is needed.
        detail: String,
    },
    /// An id that neither the vocabulary nor the SentencePiece model knows.
    #[error("id {id} is out of range: {detail}")]
    IdOutOfRange {
        /// The id.
        id: u32,
        /// Which vocabulary and model were asked.
        detail: String,
    },
    /// Reading a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn invalid(origin: &str, detail: impl Into<String>) -> Self {
        Error::InvalidModel {
            origin: origin.to_owned(),
            detail: detail.into(),
        }
    }

    pub(crate) fn unsupported(
        origin: &str,
        setting: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Error::Unsupported {
            origin: origin.to_owned(),
            setting: setting.into(),
            detail: detail.into(),
        }
    }

    pub(crate) fn json(origin: &str, detail: impl Into<String>) -> Self {
        Error::Json {
            origin: origin.to_owned(),
            detail: detail.into(),
        }
    }

    pub(crate) fn vocab(origin: &str, detail: impl Into<String>) -> Self {
        Error::Vocab {
            origin: origin.to_owned(),
            detail: detail.into(),
        }
    }
}
