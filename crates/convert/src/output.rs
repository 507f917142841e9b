//! A new output directory, written whole or not at all: everything goes into a hidden sibling
//! (`.NAME.partial-XXXXXX`), renamed into place once complete and removed on any error (or when
//! dropped). A directory that already holds files is refused: an import or export never
//! overwrites what a user has.

use std::path::{Path, PathBuf};

use crate::error::ConvertError;

/// A claimed output directory and the staging directory beside it.
#[derive(Debug)]
pub struct OutputDir {
    target: PathBuf,
    staging: tempfile::TempDir,
}

impl OutputDir {
    /// Claims `dir`: absent or empty, else refused; its parent is created.
    pub fn claim(dir: &Path) -> Result<Self, ConvertError> {
        match std::fs::read_dir(dir) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(ConvertError::Output {
                        path: dir.to_path_buf(),
                        reason: "the directory exists and is not empty; name a new one".into(),
                    });
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) if dir.is_file() => {
                return Err(ConvertError::Output {
                    path: dir.to_path_buf(),
                    reason: format!("exists and is not a directory ({error})"),
                });
            }
            Err(error) => return Err(ConvertError::io(dir)(error)),
        }
        let name = dir.file_name().ok_or_else(|| ConvertError::Output {
            path: dir.to_path_buf(),
            reason: "names no directory".into(),
        })?;
        let parent = match dir.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(ConvertError::io(&parent))?;
        let staging = tempfile::Builder::new()
            .prefix(&format!(".{}.partial-", name.to_string_lossy()))
            .tempdir_in(&parent)
            .map_err(ConvertError::io(&parent))?;
        Ok(Self {
            target: dir.to_path_buf(),
            staging,
        })
    }

    /// Where to write the files.
    pub fn staging(&self) -> &Path {
        self.staging.path()
    }

    /// Renames the complete staging directory into place; returns the target.
    pub fn commit(self) -> Result<PathBuf, ConvertError> {
        let staging = self.staging.keep();
        // rename(2) replaces an empty directory; the target is empty or absent here.
        if let Err(error) = std::fs::rename(&staging, &self.target) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(ConvertError::io(&self.target)(error));
        }
        Ok(self.target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_written_whole_or_not_at_all() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("out");
        let claimed = OutputDir::claim(&dir).expect("new");
        std::fs::write(claimed.staging().join("a"), "x").expect("write");
        assert!(!dir.exists(), "nothing in place before the commit");
        drop(claimed);
        assert_eq!(
            std::fs::read_dir(root.path()).expect("list").count(),
            0,
            "staging removed"
        );

        let claimed = OutputDir::claim(&dir).expect("new");
        std::fs::write(claimed.staging().join("a"), "x").expect("write");
        assert_eq!(claimed.commit().expect("commit"), dir);
        assert_eq!(std::fs::read_to_string(dir.join("a")).expect("read"), "x");
        let error = OutputDir::claim(&dir).expect_err("not empty");
        assert!(error.to_string().contains("not empty"), "{error}");
    }
}
