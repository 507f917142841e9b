//! Helpers shared by the integration tests.

use std::path::PathBuf;

/// `../shared/data` beside the repository (present on developer machines and in CI). The tests
/// that use it are ignored by default and run with `--ignored` (as `.ci/run` does), so a
/// missing folder there is an error, never a silent pass.
#[allow(dead_code)]
pub fn shared_data() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    assert!(
        dir.is_dir(),
        "{} not found: this test needs the shared corpora (not part of the repository)",
        dir.display()
    );
    dir
}

/// Cases a property gets: `default` in `cargo test`, `ROSETTA_FUZZ_CASES` for longer runs
/// (`scripts/fuzz.sh`).
#[allow(dead_code)]
pub fn fuzz_cases(default: u32) -> u32 {
    std::env::var("ROSETTA_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
