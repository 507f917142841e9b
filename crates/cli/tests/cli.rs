//! The `rosetta` binary, run as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rosetta_model::TransformerConfig;
use rosetta_model::burn::module::Module;
use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};

fn rosetta(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rosetta"))
        .args(args)
        .output()
        .expect("run rosetta")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture_model_config(dir: &Path) -> PathBuf {
    let json =
        std::fs::read_to_string(repo().join("crates/model/tests/fixtures/parity_postnorm.json"))
            .expect("fixture");
    let value: serde_json::Value = serde_json::from_str(&json).expect("json");
    let path = dir.join("model.json");
    std::fs::write(&path, value["model"].to_string()).expect("write config");
    path
}

#[test]
fn describe_prints_the_closed_form_count() {
    let config = repo().join("configs/transformer-base.model.toml");
    let out = rosetta(&[
        "describe",
        "--model-config",
        config.to_str().expect("utf-8 path"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("total                  63082496"),
        "{stdout}"
    );
}

#[test]
fn a_bad_model_config_names_the_file_and_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "source_vocab_size = 100\ntarget_vocab_size = 100\nd_model = 30\nn_heads = 4\n",
    )
    .expect("write");
    let out = rosetta(&["describe", "--model-config", path.to_str().expect("utf-8")]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("bad.toml") && stderr.contains("n_heads"),
        "{stderr}"
    );
}

#[test]
fn import_torch_writes_a_loadable_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = fixture_model_config(dir.path());
    let checkpoint = repo().join("crates/model/tests/fixtures/parity_postnorm.pt");
    let output = dir.path().join("imported");
    let out = rosetta(&[
        "import-torch",
        "--checkpoint",
        checkpoint.to_str().expect("utf-8"),
        "--model-config",
        config.to_str().expect("utf-8"),
        "--output",
        output.to_str().expect("utf-8"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("imported"),
        "{}",
        text(&out.stdout)
    );

    // Load what was written into a fresh model and check it reproduces PyTorch's logits.
    let written = std::fs::read_to_string(output.join("model.json")).expect("model.json");
    let config: TransformerConfig = serde_json::from_str(&written).expect("config json");
    let device = Device::flex();
    let model = config
        .init(&device)
        .expect("valid")
        .try_load_file(output.join("model.bpk"))
        .expect("load model.bpk");
    let fixture: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("crates/model/tests/fixtures/parity_postnorm.json"))
            .expect("fixture"),
    )
    .expect("json");
    let tokens = |key: &str| {
        let rows: Vec<Vec<i64>> = serde_json::from_value(fixture[key].clone()).expect("rows");
        let flat: Vec<i64> = rows.iter().flatten().copied().collect();
        Tensor::<2, Int>::from_data(TensorData::new(flat, [rows.len(), rows[0].len()]), &device)
    };
    let logits = model.forward(tokens("source"), tokens("target_input"));
    let expected: Vec<f32> = serde_json::from_value(fixture["logits"].clone()).expect("logits");
    let ours = logits.into_data().try_to_vec::<f32>().expect("f32");
    let worst = ours
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(
        worst <= 1e-5,
        "reloaded model differs from PyTorch by {worst:e}"
    );
}

#[test]
fn import_torch_refuses_a_mismatched_config() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("wrong.toml");
    std::fs::write(
        &config,
        "source_vocab_size = 50\ntarget_vocab_size = 47\nd_model = 32\nn_heads = 4\nd_ff = 128\n\
         n_encoder_layers = 2\nn_decoder_layers = 2\nfinal_norm = true\n",
    )
    .expect("write");
    let checkpoint = repo().join("crates/model/tests/fixtures/parity_postnorm.pt");
    let out = rosetta(&[
        "import-torch",
        "--checkpoint",
        checkpoint.to_str().expect("utf-8"),
        "--model-config",
        config.to_str().expect("utf-8"),
        "--output",
        dir.path().join("out").to_str().expect("utf-8"),
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("linear1.weight") && stderr.contains("[128, 32]"),
        "{stderr}"
    );
    assert!(!dir.path().join("out/model.bpk").exists());
}
