//! The same training and decoding on every backend under test: a checkpoint written on `flex`
//! resumes on each test device (`ROSETTA_TEST_DEVICES`, default: every CPU backend compiled
//! in, e.g. `flex,ndarray` with `--features ndarray`), the steps that follow give the same
//! losses, and the trained model scores and decodes the same on each.

use std::path::{Path, PathBuf};

use rosetta_infer::{TranslateOptions, Translator};
use rosetta_model::device::test_devices;
use rosetta_train::run_log::{MetricsRecord, read_metrics};
use rosetta_train::{Resume, RunConfig, TrainOptions, train};

mod common;

use common::{numbers, serial, tiny_numbers_config};

/// A tiny model without dropout (backends draw random numbers differently; everything else
/// must agree).
fn config(run_dir: &Path, device: &str, max_steps: u64) -> RunConfig {
    let training = format!(
        r#"
device = "{device}"
seed = 11
max_steps = {max_steps}
accumulate = 2
clip_norm = 1.0
schedule = {{ kind = "noam", factor = 2.0, warmup = 4 }}
validate_every = 0
log_every = 1
[checkpoint]
every = 2
keep_last = 10
"#
    );
    tiny_numbers_config(run_dir, 0.0, &training, "backends.toml")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn losses_after(run_dir: &Path, step: u64) -> Vec<f64> {
    read_metrics(&run_dir.join("metrics.jsonl"))
        .expect("metrics")
        .into_iter()
        .filter_map(|r| match r {
            MetricsRecord::Train { step: s, loss, .. } if s > step => Some(loss),
            _ => None,
        })
        .collect()
}

#[test]
fn a_flex_checkpoint_resumes_and_trains_alike_on_every_backend() {
    let _serial = serial();
    let devices = test_devices().expect("ROSETTA_TEST_DEVICES parses");
    let base = tempfile::tempdir().expect("tempdir");
    train(&config(base.path(), "flex", 2), &TrainOptions::default()).expect("2 steps on flex");

    let mut reference: Option<(String, Vec<f64>, PathBuf)> = None;
    let mut runs = Vec::new();
    for (name, _) in &devices {
        let dir = tempfile::tempdir().expect("tempdir");
        copy_dir(base.path(), dir.path());
        let options = TrainOptions {
            resume: Resume::Latest,
            ..TrainOptions::default()
        };
        let summary = train(&config(dir.path(), name, 5), &options)
            .unwrap_or_else(|e| panic!("resume on {name}: {e}"));
        assert_eq!(summary.steps, 5, "{name}");
        let losses = losses_after(dir.path(), 2);
        assert_eq!(losses.len(), 3, "{name}: steps 3-5 logged");
        eprintln!("{name}: losses of steps 3-5 {losses:?}");
        match &reference {
            None => reference = Some((name.clone(), losses, summary.last_checkpoint.clone())),
            Some((first, expected, _)) => {
                for (step, (a, b)) in expected.iter().zip(&losses).enumerate() {
                    let relative = (a - b).abs() / a.abs().max(1e-6);
                    assert!(
                        relative < 1e-4,
                        "step {}: {first} loss {a}, {name} loss {b}",
                        step + 3
                    );
                }
            }
        }
        runs.push(dir);
    }

    // The model trained on the first backend scores and decodes alike on all of them.
    let (first, _, checkpoint) = reference.expect("at least one test device");
    let sources: Vec<String> = std::fs::read_to_string(numbers().join("valid.en"))
        .expect("valid.en")
        .lines()
        .take(6)
        .map(str::to_string)
        .collect();
    let mut expected: Option<Vec<(Vec<u32>, f32)>> = None;
    for (name, device) in &devices {
        let translator = Translator::load(&checkpoint, device)
            .unwrap_or_else(|e| panic!("load the {first} checkpoint on {name}: {e}"));
        let options = TranslateOptions {
            beam: 2,
            batch_size: 3,
            ..TranslateOptions::default()
        };
        let out = translator
            .translate_lines(&sources, &options)
            .unwrap_or_else(|e| panic!("translate on {name}: {e}"));
        let got: Vec<(Vec<u32>, f32)> = out
            .iter()
            .map(|t| (t.target_tokens.clone(), t.n_best[0].1))
            .collect();
        match &expected {
            None => expected = Some(got),
            Some(expected) => {
                for (i, ((tokens_a, score_a), (tokens_b, score_b))) in
                    expected.iter().zip(&got).enumerate()
                {
                    assert_eq!(tokens_a, tokens_b, "sentence {i}: {first} vs {name}");
                    assert!(
                        (score_a - score_b).abs() < 1e-3,
                        "sentence {i}: score {score_a} on {first}, {score_b} on {name}"
                    );
                }
            }
        }
    }
}
