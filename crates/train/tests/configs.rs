//! Every configuration shipped in `configs/` is valid.

use std::path::PathBuf;

use rosetta_train::RunConfig;

#[test]
fn shipped_run_configurations_parse() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../configs");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("configs/") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        // `*.model.toml` files are bare model configurations (for `rosetta describe`).
        if !name.ends_with(".toml") || name.ends_with(".model.toml") {
            continue;
        }
        let config = RunConfig::load(&path).unwrap_or_else(|e| panic!("{e}"));
        config
            .model_config(8000, 8000)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        checked += 1;
    }
    assert!(
        checked >= 4,
        "expected quickstart, multi30k, tatoeba and base configurations, found {checked}"
    );
}
