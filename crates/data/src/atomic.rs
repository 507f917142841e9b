//! Atomic file writes ([`rosetta_files::write_atomic`]), with the data crate's error.

use std::path::Path;

use crate::error::DataError;

/// Writes `bytes` to `path` atomically, creating the parent directory if needed.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), DataError> {
    rosetta_files::write_atomic(path, bytes).map_err(DataError::io(path))
}
