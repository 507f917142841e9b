//! Errors of loading a checkpoint and translating: each names the file, checkpoint or option at
//! fault.

use std::path::PathBuf;

/// Everything that can stop loading a translator or translating with it.
#[derive(Debug, thiserror::Error)]
pub enum InferError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A checkpoint is missing, corrupt, or does not belong with the files beside it.
    #[error("checkpoint {path}: {reason}")]
    Checkpoint {
        /// The checkpoint directory or file.
        path: PathBuf,
        /// Why it is refused.
        reason: String,
    },
    /// A tokenizer could not be loaded or failed to encode or decode.
    #[error(transparent)]
    Data(#[from] rosetta_data::DataError),
    /// The model could not be built, or a search setting is invalid.
    #[error(transparent)]
    Model(#[from] rosetta_model::ModelError),
    /// A translation option has an impossible value.
    #[error("option --{option}: {reason}")]
    InvalidOption {
        /// The option, as `rosetta translate` spells it (`beam`, `nbest`, `max-len-a`, ...).
        option: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// An export could not be written where it was asked for.
    #[error("export to {path}: {reason}")]
    Export {
        /// The directory or file at fault.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A model bundle's file is malformed, damaged, or does not belong with the others.
    #[error("model bundle {file}: {reason}")]
    Bundle {
        /// The file at fault (its name alone when loaded from bytes).
        file: PathBuf,
        /// Why it is refused.
        reason: String,
    },
    /// A request the model cannot answer (an attention map of an empty sentence, a layer or
    /// head that does not exist).
    #[error("{0}")]
    Request(String),
}

impl InferError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> InferError {
        let path = path.into();
        move |source| InferError::Io { path, source }
    }
}
