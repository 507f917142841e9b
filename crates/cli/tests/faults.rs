//! Fault injection on `rosetta train`, run as a user runs it: `kill -9` at many moments (in
//! steps, in checkpoint writes, in data preparation) with a resume after each, ending where an
//! uninterrupted run ends; a full disk (a file-size limit on the process, so that a write fails
//! as on a full disk) at several sizes, failing cleanly with earlier checkpoints intact and a
//! resume once space returns; each checkpoint file truncated or altered, refused naming it.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::{assert_success, copy_dir, repo, rosetta};
use rosetta_infer::checkpoint;
use rosetta_model::burn::module::{Module, ModuleVisitor, Param};
use rosetta_model::burn::tensor::{Device, Tensor};

/// A tiny run on the numbers corpus: `steps` steps, a checkpoint at every step.
fn write_config(dir: &Path, run: &Path, steps: u64) -> PathBuf {
    let n = repo().join("data/numbers");
    let text = format!(
        r#"output_dir = "{run}"
[model]
d_model = 32
n_heads = 2
d_ff = 64
n_encoder_layers = 1
n_decoder_layers = 1
max_positions = 32
[data]
train = {{ source = "{n}/valid.en", target = "{n}/valid.fr" }}
valid = {{ source = "{n}/test.en", target = "{n}/test.fr" }}
tokenizer = {{ vocab_size = 300 }}
filter = {{ max_source_tokens = 30, max_target_tokens = 30 }}
batch = {{ by = "tokens", max_tokens = 400 }}
[training]
seed = 5
max_steps = {steps}
validate_every = 0
validate_at_epoch_end = false
log_every = 1
[checkpoint]
every = 1
keep_last = 1000
"#,
        run = run.display(),
        n = n.display()
    );
    let path = dir.join(format!(
        "{}.toml",
        run.file_name().and_then(|n| n.to_str()).unwrap_or("run")
    ));
    std::fs::write(&path, text).expect("write config");
    path
}

fn train(config: &Path, resume: bool) -> Output {
    let config = config.to_str().expect("utf-8");
    if resume {
        rosetta(&["train", "--config", config, "--resume"])
    } else {
        rosetta(&["train", "--config", config])
    }
}

fn has_checkpoint(run: &Path) -> bool {
    checkpoint::list(run).is_ok_and(|l| !l.is_empty())
}

/// The last training loss logged for each step (a step re-run after a resume logs again).
fn losses(run: &Path) -> BTreeMap<u64, String> {
    let text = std::fs::read_to_string(run.join("metrics.jsonl")).expect("metrics");
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let record: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("metrics.jsonl line {} is not JSON ({e}): {line:?}", i + 1));
        if record["kind"] == "train" {
            let step = record["step"].as_u64().expect("step");
            out.insert(step, record["loss"].to_string());
        }
    }
    out
}

struct Collect(Vec<Vec<f32>>);

impl ModuleVisitor for Collect {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0
            .push(param.val().into_data().try_to_vec::<f32>().expect("f32"));
    }
}

/// Every parameter of the model of the checkpoint at `step` (the files also hold parameter ids,
/// drawn anew in every process, so their bytes differ where the weights do not).
fn parameters(run: &Path, step: u64) -> Vec<Vec<f32>> {
    let dir = checkpoint::step_dir(run, step);
    let state = checkpoint::read_state(&dir).expect("verified checkpoint");
    let model = checkpoint::load_model(&dir, &state, &Device::flex()).expect("model");
    let mut collect = Collect(Vec::new());
    model.visit(&mut collect);
    collect.0
}

#[test]
fn kill_9_at_many_moments_then_resume_ends_as_an_uninterrupted_run() {
    const STEPS: u64 = 300;
    let dir = tempfile::tempdir().expect("tempdir");
    let straight = dir.path().join("straight");
    let config = write_config(dir.path(), &straight, STEPS);
    assert_success(&train(&config, false));

    let killed = dir.path().join("killed");
    let config = write_config(dir.path(), &killed, STEPS);
    // Kill points spread over start-up, steps and checkpoint writes; each later try lives a
    // little longer, so the run always gets further, and the tries are bounded.
    let mut kills = 0;
    let mut finished = false;
    for attempt in 0..60u64 {
        let mut command = Command::new(env!("CARGO_BIN_EXE_rosetta"));
        command.args(["train", "--config", config.to_str().expect("utf-8")]);
        if has_checkpoint(&killed) {
            command.arg("--resume");
        }
        let mut child = command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start rosetta train");
        std::thread::sleep(Duration::from_millis(100 + 23 * attempt));
        if child.try_wait().expect("wait").is_some() {
            let out = child.wait_with_output().expect("output");
            assert_success(&out);
            finished = true;
            break;
        }
        child.kill().expect("kill -9");
        let out = child.wait_with_output().expect("reap");
        assert!(!out.status.success());
        kills += 1;
    }
    if !finished {
        // Whatever is left runs to the end without interruption.
        assert_success(&train(&config, has_checkpoint(&killed)));
    }
    assert!(
        kills >= 3,
        "only {kills} kills landed before the run finished"
    );
    eprintln!("kill -9: {kills} kills landed, then the run finished");
    assert_eq!(losses(&killed), losses(&straight), "after {kills} kills");
    assert!(
        parameters(&killed, STEPS) == parameters(&straight, STEPS),
        "the weights differ after {kills} kills"
    );
    // No partial checkpoint was left under a real name.
    for (step, _) in checkpoint::list(&killed).expect("list") {
        checkpoint::read_state(&checkpoint::step_dir(&killed, step))
            .unwrap_or_else(|e| panic!("checkpoint {step} after {kills} kills: {e}"));
    }
}

#[test]
fn a_full_disk_fails_cleanly_keeps_earlier_checkpoints_and_resumes_later() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("base");
    let config = write_config(dir.path(), &base, 4);
    assert_success(&train(&config, false));
    // File-size limits (KiB) that stop, in turn: the first file written (config.toml), the
    // model, the optimizer state; and one that lets everything through.
    let mut failures = 0;
    for limit_kib in [1u64, 64, 256, 512] {
        let run = dir.path().join(format!("full-{limit_kib}"));
        copy_dir(&base, &run);
        let config = write_config(dir.path(), &run, 8);
        let out = Command::new("bash")
            .args([
                "-c",
                // SIGXFSZ ignored: a write past the limit fails with EFBIG, as on a full disk.
                "trap '' XFSZ; ulimit -f \"$1\"; shift; exec \"$@\"",
                "limit",
                &limit_kib.to_string(),
                env!("CARGO_BIN_EXE_rosetta"),
                "train",
                "--config",
                config.to_str().expect("utf-8"),
                "--resume",
            ])
            .output()
            .expect("run under a file-size limit");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked"),
            "limit {limit_kib} KiB: {stderr}"
        );
        if !out.status.success() {
            failures += 1;
            let what = stderr
                .lines()
                .find(|l| l.contains("File too large"))
                .unwrap_or_default()
                .trim()
                .to_string();
            eprintln!("full disk at {limit_kib} KiB: {what}");
            assert!(
                stderr.contains("File too large") && stderr.contains(&run.display().to_string()),
                "limit {limit_kib} KiB: the error should name the file: {stderr}"
            );
        }
        // Every checkpoint under a real name verifies; the step-4 one is intact.
        for (step, _) in checkpoint::list(&run).expect("list") {
            checkpoint::read_state(&checkpoint::step_dir(&run, step))
                .unwrap_or_else(|e| panic!("limit {limit_kib} KiB, checkpoint {step}: {e}"));
        }
        assert!(
            parameters(&run, 4) == parameters(&base, 4),
            "limit {limit_kib} KiB"
        );
        // Space is back: the run resumes and finishes.
        assert_success(&train(&config, true));
        checkpoint::read_state(&checkpoint::step_dir(&run, 8)).expect("step 8");
        losses(&run);
    }
    assert!(
        failures >= 3,
        "only {failures} of 4 limits made a write fail"
    );
}

/// Damages `path`: `"truncate"` cuts it to half its bytes, `"flip"` flips one bit in the middle.
fn damage_file(path: &Path, damage: &str) {
    let mut bytes = std::fs::read(path).expect("read");
    match damage {
        "truncate" => bytes.truncate(bytes.len() / 2),
        _ => {
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x01;
        }
    }
    std::fs::write(path, &bytes).expect("damage");
}

/// The files of a run's encoded-corpus cache (every file of every entry directory).
fn cache_files(run: &Path) -> Vec<PathBuf> {
    let list = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default()
    };
    list(&run.join("cache"))
        .iter()
        .flat_map(|entry| list(entry))
        .collect()
}

#[test]
fn a_damaged_tokenizer_is_refused_and_a_damaged_cache_rebuilt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("base");
    let config = write_config(dir.path(), &base, 2);
    assert_success(&train(&config, false));
    for damage in ["truncate", "flip"] {
        let run = dir.path().join(format!("tokenizer-{damage}"));
        copy_dir(&base, &run);
        let path = run.join("tokenizer.json");
        let mut text = std::fs::read_to_string(&path).expect("read");
        match damage {
            "truncate" => {
                let mut cut = text.len() / 2;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            // Still a valid tokenizer, but another one (BPE dropout switched on).
            _ => {
                let changed = text
                    .replacen("\"dropout\": null", "\"dropout\": 0.5", 1)
                    .replacen("\"dropout\":null", "\"dropout\":0.5", 1);
                assert_ne!(changed, text, "no BPE dropout field in tokenizer.json");
                text = changed;
            }
        }
        std::fs::write(&path, text).expect("damage");
        let out = train(&write_config(dir.path(), &run, 4), true);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "tokenizer {damage}: accepted");
        assert!(
            stderr.contains("tokenizer.json") && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
    // The cache is derived data: damaged, it is rebuilt, and the run goes on as before.
    let straight = dir.path().join("straight");
    assert_success(&train(&write_config(dir.path(), &straight, 4), false));
    for damage in ["truncate", "flip"] {
        let run = dir.path().join(format!("cache-{damage}"));
        copy_dir(&base, &run);
        let files = cache_files(&run);
        assert!(!files.is_empty(), "no cache in {}", run.display());
        for path in files {
            damage_file(&path, damage);
        }
        assert_success(&train(&write_config(dir.path(), &run, 4), true));
        assert_eq!(losses(&run), losses(&straight), "cache {damage}");
    }
}

#[test]
fn a_corrupt_checkpoint_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("base");
    let config = write_config(dir.path(), &base, 2);
    assert_success(&train(&config, false));
    for file in ["model.bpk", "optimizer.bpk", "state.json", "state.sha256"] {
        for damage in ["truncate", "flip"] {
            let run = dir.path().join(format!("{file}-{damage}"));
            copy_dir(&base, &run);
            let path = checkpoint::step_dir(&run, 2).join(file);
            damage_file(&path, damage);
            let config = write_config(dir.path(), &run, 4);
            let out = train(&config, true);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!stderr.contains("panicked"), "{file} {damage}: {stderr}");
            assert!(!out.status.success(), "{file} {damage}: accepted");
            // A damaged checksum file makes its state.json look damaged: either is named.
            let named =
                stderr.contains(file) || (file == "state.sha256" && stderr.contains("state.json"));
            assert!(named, "{file} {damage}: {stderr}");
        }
    }
}
