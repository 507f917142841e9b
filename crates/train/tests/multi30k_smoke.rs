//! Smoke test on a real corpus: a small model trained for a bounded number of steps on a slice
//! of Multi30k English-German (`../shared/data/multi30k`) must bring its validation loss well
//! below what an untrained model scores. Ignored by default (it needs the shared corpora);
//! `.ci/run` runs it with `--ignored`.

use std::io::Write;
use std::path::{Path, PathBuf};

use rosetta_train::run_log::{MetricsRecord, read_metrics};
use rosetta_train::{RunConfig, TrainOptions, train};

const TRAIN_PAIRS: usize = 3000;
const VALID_PAIRS: usize = 200;
const VOCAB: usize = 1000;
const STEPS: u64 = 200;

fn multi30k() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/multi30k");
    assert!(
        dir.is_dir(),
        "{} not found: this test needs the shared corpora (not part of the repository)",
        dir.display()
    );
    dir
}

/// The first `lines` lines of `from`, written to `to`.
fn head(from: &Path, to: &Path, lines: usize) {
    let text = std::fs::read_to_string(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    let mut out = std::fs::File::create(to).expect("create slice");
    for line in text.lines().take(lines) {
        writeln!(out, "{line}").expect("write slice");
    }
}

#[test]
#[ignore = "needs ../shared/data/multi30k (the shared corpora); .ci/run runs it with --ignored"]
fn a_small_model_learns_a_slice_of_multi30k() {
    let data = multi30k();
    let work = tempfile::tempdir().expect("tempdir");
    let slice = work.path().join("slice");
    std::fs::create_dir_all(&slice).expect("mkdir");
    for (name, lines) in [
        ("train.en", TRAIN_PAIRS),
        ("train.de", TRAIN_PAIRS),
        ("val.en", VALID_PAIRS),
        ("val.de", VALID_PAIRS),
    ] {
        head(&data.join(name), &slice.join(name), lines);
    }
    let run = work.path().join("run");
    let text = format!(
        r#"
output_dir = "{run}"
[model]
d_model = 64
n_heads = 4
d_ff = 256
n_encoder_layers = 2
n_decoder_layers = 2
dropout = 0.1
attention_dropout = 0.1
max_positions = 128
share_embeddings = true
tie_output_projection = true
[data]
train = {{ source = "{s}/train.en", target = "{s}/train.de" }}
valid = {{ source = "{s}/val.en", target = "{s}/val.de" }}
tokenizer = {{ model = "bpe", vocab_size = {VOCAB}, joint = true }}
filter = {{ max_source_tokens = 100, max_target_tokens = 100 }}
batch = {{ by = "tokens", max_tokens = 1500 }}
[training]
seed = 1
max_steps = {STEPS}
label_smoothing = 0.1
clip_norm = 1.0
schedule = {{ kind = "noam", factor = 1.0, warmup = 100 }}
validate_every = 100
log_every = 50
[checkpoint]
every = 0
keep_last = 1
"#,
        run = run.display(),
        s = slice.display(),
    );
    let config = RunConfig::parse(&text, Path::new("multi30k-smoke.toml")).expect("config");
    let summary = train(&config, &TrainOptions::default()).expect("training runs");
    assert_eq!(summary.steps, STEPS);

    let valid: Vec<(u64, f64)> = read_metrics(&run.join("metrics.jsonl"))
        .expect("metrics")
        .into_iter()
        .filter_map(|r| match r {
            MetricsRecord::Valid { step, loss, .. } => Some((step, loss)),
            MetricsRecord::Train { .. } => None,
        })
        .collect();
    eprintln!("validation loss (per target token) by step: {valid:?}");
    let (_, last) = *valid.last().expect("validated");
    // An untrained model spreads its probability over the vocabulary: a loss of about
    // ln(VOCAB) = 6.9 nats per token. The slice is learnable well below that in 200 steps.
    let untrained = (VOCAB as f64).ln();
    let threshold = untrained - 2.0;
    assert!(
        last < threshold,
        "validation loss {last:.3} after {STEPS} steps is not below {threshold:.3} (untrained ≈ {untrained:.3})"
    );
    // And it kept falling between the two validations.
    assert!(
        valid.len() >= 2 && valid[valid.len() - 1].1 < valid[0].1,
        "{valid:?}"
    );
}
