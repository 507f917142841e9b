//! Errors of the data crate.

use std::path::PathBuf;

/// Everything that can go wrong while preparing data.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A file could not be written or read.
    #[error("{path}: {source}")]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The requested corpus cannot be made as asked.
    #[error("cannot generate the numbers corpus: {0}")]
    Numbers(String),
}
