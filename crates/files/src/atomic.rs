//! Files and directories written whole or not at all: what a crash, an error or a second writer
//! can leave is the old version or the new one under the real name, never half of either.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `path` atomically, creating the parent directory if needed: a temporary
/// file beside it, synced, then renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = parent_of(path);
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        name_of(path),
        std::process::id(),
        unique()
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A directory being written in a hidden sibling of its destination (`.NAME.partial-PID-N`),
/// put in place by one of the `commit` methods; dropped uncommitted (an error, an interrupted
/// run), it removes what it wrote.
#[derive(Debug)]
pub struct StagedDir {
    target: PathBuf,
    staging: PathBuf,
    committed: bool,
}

/// Why [`StagedDir::claim`] refuses a destination (each names it; the message does not, for the
/// caller's error to name it once).
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// It holds files already.
    #[error("the directory exists and is not empty; name a new one")]
    NotEmpty(PathBuf),
    /// It is a file.
    #[error("exists and is not a directory")]
    NotADirectory(PathBuf),
    /// It names no directory (`/`, `..`).
    #[error("names no directory")]
    NoName(PathBuf),
    /// The file system refused.
    #[error("{source}")]
    Io {
        /// Where.
        path: PathBuf,
        /// What it said.
        source: std::io::Error,
    },
}

impl StagedDir {
    /// Starts writing the directory that will live at `target` (its parent is created).
    pub fn new(target: &Path) -> std::io::Result<Self> {
        let parent = parent_of(target);
        std::fs::create_dir_all(parent)?;
        let staging = parent.join(format!(
            ".{}.partial-{}-{}",
            name_of(target),
            std::process::id(),
            unique()
        ));
        std::fs::create_dir(&staging)?;
        Ok(Self {
            target: target.to_path_buf(),
            staging,
            committed: false,
        })
    }

    /// [`new`](Self::new) for a destination that must be new: absent or empty, else refused
    /// (an export or import never overwrites what a user has).
    pub fn claim(target: &Path) -> Result<Self, ClaimError> {
        match std::fs::read_dir(target) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(ClaimError::NotEmpty(target.to_path_buf()));
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) if target.is_file() => {
                return Err(ClaimError::NotADirectory(target.to_path_buf()));
            }
            Err(source) => {
                return Err(ClaimError::Io {
                    path: target.to_path_buf(),
                    source,
                });
            }
        }
        if target.file_name().is_none() {
            return Err(ClaimError::NoName(target.to_path_buf()));
        }
        Self::new(target).map_err(|source| ClaimError::Io {
            path: target.to_path_buf(),
            source,
        })
    }

    /// Where to write.
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// The destination.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the staging directory to the destination, which must be absent or empty
    /// (`rename(2)` replaces an empty directory).
    pub fn commit(mut self) -> std::io::Result<PathBuf> {
        std::fs::rename(&self.staging, &self.target)?;
        self.committed = true;
        sync_dir(parent_of(&self.target));
        Ok(self.target.clone())
    }

    /// Puts the staging directory in the place of the destination, which may exist: the old
    /// one is first renamed aside (`.NAME.old-PID-N`) and removed only once the new one is in
    /// place, and put back if that fails, so that a crash at any moment leaves the old or the
    /// new directory under its name, never neither.
    pub fn commit_replacing(mut self) -> std::io::Result<PathBuf> {
        let parent = parent_of(&self.target).to_path_buf();
        let old = parent.join(format!(
            ".{}.old-{}-{}",
            name_of(&self.target),
            std::process::id(),
            unique()
        ));
        let had_old = self.target.exists();
        if had_old {
            std::fs::rename(&self.target, &old)?;
        }
        if let Err(error) = std::fs::rename(&self.staging, &self.target) {
            if had_old {
                let _ = std::fs::rename(&old, &self.target);
            }
            return Err(error);
        }
        self.committed = true;
        sync_dir(&parent);
        if had_old {
            std::fs::remove_dir_all(&old)?;
        }
        Ok(self.target.clone())
    }

    /// Puts the staging directory in place unless `keep` accepts what is already at the
    /// destination (the same thing, finished meanwhile by another writer): then ours is
    /// dropped. What `keep` refuses is moved aside and replaced. Returns whether ours went in.
    pub fn commit_unless(mut self, keep: impl Fn(&Path) -> bool) -> std::io::Result<bool> {
        if std::fs::rename(&self.staging, &self.target).is_ok() {
            self.committed = true;
            return Ok(true);
        }
        if keep(&self.target) {
            return Ok(false);
        }
        let stale = parent_of(&self.target).join(format!(
            ".{}.stale-{}-{}",
            name_of(&self.target),
            std::process::id(),
            unique()
        ));
        match std::fs::rename(&self.target, &stale) {
            Ok(()) => {}
            // Moved away by another writer meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let _ = std::fs::remove_dir_all(&stale);
        match std::fs::rename(&self.staging, &self.target) {
            Ok(()) => {
                self.committed = true;
                Ok(true)
            }
            // Another writer was faster again: its directory is used if it is good.
            Err(_) if keep(&self.target) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl Drop for StagedDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staging);
        }
    }
}

/// The directory `path` is in (`.` for a bare name).
fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// The last component of `path`, for the names of its temporary siblings.
fn name_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Flushes a directory's entries (names created, renamed or removed in it) to the disk, where
/// the platform can open a directory for that.
fn sync_dir(path: &Path) {
    if let Ok(dir) = std::fs::File::open(path) {
        let _ = dir.sync_all();
    }
}

/// A number that differs between calls and processes, for temporary names.
pub fn unique() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    // SplitMix64's finaliser spreads the clock and the counter over every bit.
    let mut z = nanos ^ COUNTER.fetch_add(1, Ordering::Relaxed).rotate_left(32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) & 0xFFFF_FFFF
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_is_written_whole_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/a.json");
        write_atomic(&path, b"one").expect("write");
        write_atomic(&path, b"two").expect("overwrite");
        assert_eq!(std::fs::read(&path).expect("read"), b"two");
        assert_eq!(entries(&dir.path().join("sub")), ["a.json"]);
    }

    #[test]
    fn a_claimed_directory_is_put_in_place_whole_or_not_at_all() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("out");
        let staged = StagedDir::claim(&dir).expect("new");
        std::fs::write(staged.path().join("a"), "x").expect("write");
        assert!(!dir.exists(), "nothing in place before the commit");
        drop(staged);
        assert!(entries(root.path()).is_empty(), "staging removed");

        let staged = StagedDir::claim(&dir).expect("new");
        std::fs::write(staged.path().join("a"), "x").expect("write");
        assert_eq!(staged.commit().expect("commit"), dir);
        assert_eq!(std::fs::read_to_string(dir.join("a")).expect("read"), "x");
        assert!(matches!(
            StagedDir::claim(&dir),
            Err(ClaimError::NotEmpty(_))
        ));
        std::fs::write(root.path().join("file"), "").expect("write");
        assert!(matches!(
            StagedDir::claim(&root.path().join("file")),
            Err(ClaimError::NotADirectory(_))
        ));
    }

    #[test]
    fn a_replaced_directory_is_the_old_or_the_new_one_never_neither() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("step-1");
        for content in ["old", "new"] {
            let staged = StagedDir::new(&dir).expect("stage");
            std::fs::write(staged.path().join("model"), content).expect("write");
            staged.commit_replacing().expect("replace");
        }
        assert_eq!(
            std::fs::read_to_string(dir.join("model")).expect("read"),
            "new"
        );
        assert_eq!(entries(root.path()), ["step-1"], "nothing left beside it");
    }

    #[test]
    fn a_finished_twin_is_kept_and_a_refused_one_replaced() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("entry");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::write(dir.join("manifest"), "good").expect("write");
        let good =
            |d: &Path| std::fs::read_to_string(d.join("manifest")).is_ok_and(|m| m == "good");
        let staged = StagedDir::new(&dir).expect("stage");
        std::fs::write(staged.path().join("manifest"), "good").expect("write");
        assert!(
            !staged.commit_unless(good).expect("kept"),
            "the twin is used"
        );
        std::fs::write(dir.join("manifest"), "damaged").expect("damage");
        let staged = StagedDir::new(&dir).expect("stage");
        std::fs::write(staged.path().join("manifest"), "good").expect("write");
        assert!(staged.commit_unless(good).expect("replaced"));
        assert!(good(&dir));
        assert_eq!(entries(root.path()), ["entry"]);
    }
}
