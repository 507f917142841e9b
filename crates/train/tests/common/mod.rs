#![allow(dead_code)] // each test binary uses part of it
//! Helpers shared by the integration tests that train tiny models on the repository's numbers
//! corpus (`data/numbers`, English-French number words).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use rosetta_train::RunConfig;

/// Burn's random generator is global to the process: runs that must be reproducible may not
/// overlap, so the tests that train take turns.
static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the turn to train until dropped (a test that panicked does not block the others).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The repository's numbers corpus directory.
pub fn numbers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/numbers")
}

/// A tiny model (d_model 32, 2 heads, 1 + 1 layers, `dropout` in the sublayers and attention)
/// on the numbers corpus in 600-token batches, written to `run_dir`; `training` is the body of
/// the `[training]` section and whatever sections follow (`[checkpoint]`). `name` is the file
/// name parse errors would report.
pub fn tiny_numbers_config(run_dir: &Path, dropout: f64, training: &str, name: &str) -> RunConfig {
    let text = format!(
        r#"
output_dir = "{run}"
[model]
d_model = 32
n_heads = 2
d_ff = 64
n_encoder_layers = 1
n_decoder_layers = 1
dropout = {dropout:?}
attention_dropout = {dropout:?}
max_positions = 64
[data]
train = {{ source = "{n}/train.en", target = "{n}/train.fr" }}
valid = {{ source = "{n}/valid.en", target = "{n}/valid.fr" }}
tokenizer = {{ model = "bpe", vocab_size = 300 }}
filter = {{ max_source_tokens = 64, max_target_tokens = 64 }}
batch = {{ by = "tokens", max_tokens = 600 }}
[training]
{training}
"#,
        run = run_dir.display(),
        n = numbers().display(),
    );
    RunConfig::parse(&text, Path::new(name)).expect("tiny config is valid")
}
