//! Atomic file writes: a temporary file in the same directory, synced, then renamed over the
//! destination, so a reader never sees a half-written file.

use std::io::Write;
use std::path::Path;

use crate::error::DataError;

/// Writes `bytes` to `path` atomically, creating the parent directory if needed.
pub fn write(path: &Path, bytes: &[u8]) -> Result<(), DataError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(DataError::io(dir))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(source) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(DataError::Io {
            path: path.to_path_buf(),
            source,
        });
    }
    Ok(())
}
