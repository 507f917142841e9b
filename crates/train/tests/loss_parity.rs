//! The loss against PyTorch's `F.cross_entropy(ignore_index, label_smoothing)` on the model
//! parity fixture (see `scripts/make_parity_fixture.py`): our model, loaded with the fixture's
//! PyTorch weights, must give PyTorch's loss with and without label smoothing.

use std::path::PathBuf;

use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};
use rosetta_model::{TorchImport, TransformerConfig};
use rosetta_train::SequenceCrossEntropy;
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    model: TransformerConfig,
    source: Vec<Vec<i64>>,
    target_input: Vec<Vec<i64>>,
    target_output: Vec<Vec<i64>>,
    loss: f64,
    label_smoothing: f64,
    loss_label_smoothed: f64,
}

fn tokens(rows: &[Vec<i64>], device: &Device) -> Tensor<2, Int> {
    let flat: Vec<i64> = rows.iter().flatten().copied().collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), rows[0].len()]), device)
}

fn scalar(t: Tensor<1>) -> f64 {
    t.into_data().try_to_vec::<f32>().expect("f32")[0] as f64
}

#[test]
fn loss_matches_pytorch_on_the_parity_fixture() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../model/tests/fixtures");
    for name in ["postnorm", "prenorm"] {
        let text =
            std::fs::read_to_string(dir.join(format!("parity_{name}.json"))).expect("fixture");
        let f: Fixture = serde_json::from_str(&text).expect("fixture json");
        let config = f.model.clone();
        let pad_id = config.pad_id;
        let device = Device::flex();
        let mut model = config.init(&device).expect("valid");
        TorchImport::new(dir.join(format!("parity_{name}.pt")))
            .load_into(&mut model, &config)
            .expect("import");
        let logits = model.forward(tokens(&f.source, &device), tokens(&f.target_input, &device));
        let targets = tokens(&f.target_output, &device);

        let plain = SequenceCrossEntropy::new(pad_id, 0.0).forward(logits.clone(), targets.clone());
        let plain = scalar(plain.loss);
        assert!(
            (plain - f.loss).abs() <= 1e-5,
            "{name}: loss {plain} vs PyTorch {}",
            f.loss
        );

        let smoothed =
            SequenceCrossEntropy::new(pad_id, f.label_smoothing).forward(logits, targets);
        let smoothed = scalar(smoothed.loss);
        assert!(
            (smoothed - f.loss_label_smoothed).abs() <= 1e-5,
            "{name}: smoothed loss {smoothed} vs PyTorch {}",
            f.loss_label_smoothed
        );
    }
}
