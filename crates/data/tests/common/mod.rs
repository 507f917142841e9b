//! Helpers shared by the integration tests.

use std::path::PathBuf;

/// `../shared/data` beside the repository (present on developer machines and in CI).
#[allow(dead_code)]
pub fn shared_data() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: {} not found (the shared corpora are not part of the repository)",
            dir.display()
        );
        None
    }
}
