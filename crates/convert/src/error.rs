//! Errors of converting models between Rosetta and other toolkits: each names the file and, where
//! one is at fault, the key.

use std::path::PathBuf;

/// Everything that can stop an import or an export.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file the format needs is not there.
    #[error("{dir}: no {file} ({why})")]
    MissingFile {
        /// The directory looked in.
        dir: PathBuf,
        /// The file (or files) missing.
        file: String,
        /// What it is for.
        why: String,
    },
    /// A JSON file is not JSON, or not of the expected shape.
    #[error("{path}: {reason}")]
    Json {
        /// The file at fault.
        path: PathBuf,
        /// What the parser reported.
        reason: String,
    },
    /// A configuration key has a value this conversion cannot take.
    #[error("{path}: key `{key}`: {reason}")]
    Key {
        /// The configuration file.
        path: PathBuf,
        /// The key at fault.
        key: String,
        /// Why it is refused.
        reason: String,
    },
    /// The model's configuration has a setting the target format cannot express.
    #[error("the model's `{key}` {reason}")]
    Unsupported {
        /// The model configuration key at fault.
        key: &'static str,
        /// Why it cannot be written.
        reason: String,
    },
    /// The output already holds something.
    #[error("{path}: {reason}")]
    Output {
        /// The directory at fault.
        path: PathBuf,
        /// Why it is refused.
        reason: String,
    },
    /// A tokenizer could not be read, or disagrees with the model.
    #[error(transparent)]
    Data(#[from] rosetta_data::DataError),
    /// The model could not be built, or a tensor is missing or of the wrong shape.
    #[error(transparent)]
    Model(#[from] rosetta_model::ModelError),
    /// Writing the checkpoint, or loading the translator, failed.
    #[error(transparent)]
    Infer(#[from] rosetta_infer::InferError),
}

impl ConvertError {
    /// A closure turning an I/O error on `path` into [`ConvertError::Io`].
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }

    /// [`ConvertError::Key`] for `key` of the file `path`.
    pub fn key(
        path: impl Into<PathBuf>,
        key: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::Key {
            path: path.into(),
            key: key.into(),
            reason: reason.into(),
        }
    }
}
