//! Our Transformer against PyTorch's `torch.nn.Transformer`, number for number.
//!
//! The fixtures (weights as a `torch.save` state dict, inputs and PyTorch's logits as JSON) are
//! written by `scripts/make_parity_fixture.py`; the weights come in through [`TorchImport`], the
//! documented import path for PyTorch checkpoints.

use std::path::PathBuf;

use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};
use rosetta_model::{ModelError, TorchImport, TransformerConfig};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    model: TransformerConfig,
    source: Vec<Vec<i64>>,
    target_input: Vec<Vec<i64>>,
    logits_shape: [usize; 3],
    logits: Vec<f32>,
}

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load(name: &str) -> (Fixture, TransformerConfig) {
    let path = fixture_path(&format!("parity_{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let fixture: Fixture =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let config = fixture.model.clone();
    (fixture, config)
}

fn tokens(rows: &[Vec<i64>], device: &Device) -> Tensor<2, Int> {
    let (b, t) = (rows.len(), rows[0].len());
    let flat: Vec<i64> = rows.iter().flatten().copied().collect();
    Tensor::from_data(TensorData::new(flat, [b, t]), device)
}

/// Runs the fixture on every test device (`ROSETTA_TEST_DEVICES`, default: the CPU backends
/// compiled in): the same numbers on each backend.
fn check_parity(name: &str) {
    let devices = rosetta_model::device::test_devices().expect("ROSETTA_TEST_DEVICES parses");
    for (backend, device) in devices {
        check_parity_on(name, &backend, &device);
    }
}

fn check_parity_on(name: &str, backend: &str, device: &Device) {
    let device = device.clone();
    let (fixture, config) = load(name);
    let mut model = config.init(&device).expect("fixture config is valid");
    TorchImport::new(fixture_path(&format!("parity_{name}.pt")))
        .load_into(&mut model, &config)
        .expect("import PyTorch weights");

    let logits = model.forward(
        tokens(&fixture.source, &device),
        tokens(&fixture.target_input, &device),
    );
    assert_eq!(logits.dims(), fixture.logits_shape);
    let ours = logits.into_data().try_to_vec::<f32>().expect("f32 logits");
    let worst = ours
        .iter()
        .zip(&fixture.logits)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    eprintln!("{name} on {backend}: largest logit difference from PyTorch {worst:e}");
    // CPU backends reproduce PyTorch's float32 to rounding; GPU kernels sum in other orders.
    let tolerance = if matches!(backend, "flex" | "ndarray") {
        1e-5
    } else {
        1e-4
    };
    assert!(
        worst <= tolerance,
        "{name} on {backend}: largest logit difference from PyTorch is {worst:e}"
    );
}

#[test]
fn post_norm_matches_pytorch_logits() {
    check_parity("postnorm");
}

#[test]
fn pre_norm_matches_pytorch_logits() {
    check_parity("prenorm");
}

#[test]
fn import_refuses_a_model_of_another_shape() {
    let device = Device::flex();
    let (_, config) = load("postnorm");
    let wider = config.clone().with_d_ff(config.d_ff * 2);
    let mut model = wider.init(&device).expect("valid config");
    let err = TorchImport::new(fixture_path("parity_postnorm.pt"))
        .load_into(&mut model, &wider)
        .expect_err("d_ff differs from the checkpoint");
    assert!(
        matches!(&err, ModelError::ShapeMismatch { key, .. } if key.contains("linear1.weight")),
        "{err}"
    );
}

#[test]
fn import_refuses_a_checkpoint_with_fewer_layers() {
    let device = Device::flex();
    let (_, config) = load("postnorm");
    let config = config.with_n_encoder_layers(3);
    let mut model = config.init(&device).expect("valid config");
    let err = TorchImport::new(fixture_path("parity_postnorm.pt"))
        .load_into(&mut model, &config)
        .expect_err("the checkpoint has two encoder layers");
    assert!(
        matches!(&err, ModelError::MissingTensor { key, .. } if key.contains("encoder.layers.2")),
        "{err}"
    );
}

#[test]
fn import_refuses_tensors_the_model_has_no_place_for() {
    // The pre-norm checkpoint has the stacks' final LayerNorms; a model without them used to
    // drop them silently.
    let device = Device::flex();
    let (_, config) = load("prenorm");
    let config = config.with_final_norm(Some(false));
    let mut model = config.init(&device).expect("valid config");
    let err = TorchImport::new(fixture_path("parity_prenorm.pt"))
        .load_into(&mut model, &config)
        .expect_err("encoder.norm and decoder.norm have no place");
    let message = err.to_string();
    assert!(
        message.contains("encoder.norm.weight") && message.contains("final_norm = true"),
        "{message}"
    );
    // With fewer decoder layers, the checkpoint's extra layer is named.
    let (_, config) = load("postnorm");
    let config = config.with_n_decoder_layers(1);
    let mut model = config.init(&device).expect("valid config");
    let err = TorchImport::new(fixture_path("parity_postnorm.pt"))
        .load_into(&mut model, &config)
        .expect_err("the checkpoint has two decoder layers");
    assert!(err.to_string().contains("decoder.layers.1"), "{err}");
}
