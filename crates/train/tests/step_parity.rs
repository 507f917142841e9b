//! Training steps against PyTorch (see `scripts/make_step_parity_fixture.py`): from the fixture's
//! PyTorch weights (post-norm, shared and tied embeddings, as our configs train), ten optimizer
//! steps of `rosetta_train::step::optimizer_step` on the fixture's batches must give, step for
//! step, PyTorch's loss and gradient norm, and after the last step PyTorch's loss on every batch.
//!
//! The loss of step `k + 1` is computed from the weights of step `k`, so this checks the
//! backward pass (every parameter's gradient reaches the norm), the global-norm clipping, Adam
//! and the learning rate together, not the forward pass alone.

use std::path::PathBuf;

use rosetta_data::{PairTokens, TranslationBatch, TranslationBatcher};
use rosetta_model::burn::data::dataloader::batcher::Batcher;
use rosetta_model::burn::module::Module;
use rosetta_model::burn::optim::AdamConfig;
use rosetta_model::burn::tensor::{Device, Int, Tensor, TensorData};
use rosetta_model::{TorchImport, TorchNames, Transformer, TransformerConfig};
use rosetta_train::SequenceCrossEntropy;
use rosetta_train::step::{StepSettings, optimizer_step};
use serde::Deserialize;

#[derive(Deserialize)]
struct Batch {
    /// Unframed `(source, target)` ids, as the corpus holds them.
    pairs: Vec<(Vec<u32>, Vec<u32>)>,
    /// The padded tensors PyTorch consumed.
    source: Vec<Vec<i64>>,
    target_input: Vec<Vec<i64>>,
    target_output: Vec<Vec<i64>>,
}

#[derive(Deserialize)]
struct Step {
    step: u64,
    batch: usize,
    learning_rate: f64,
    target_tokens: usize,
    loss: f64,
    grad_norm: f64,
}

#[derive(Deserialize)]
struct Fixture {
    model: TransformerConfig,
    label_smoothing: f64,
    clip_norm: f64,
    beta1: f32,
    beta2: f32,
    epsilon: f32,
    batches: Vec<Batch>,
    steps: Vec<Step>,
    loss_after: Vec<f64>,
}

fn tokens(rows: &[Vec<i64>], device: &Device) -> Tensor<2, Int> {
    let flat: Vec<i64> = rows.iter().flatten().copied().collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), rows[0].len()]), device)
}

/// Frames the batch's pairs with Rosetta's own batcher, and checks it made the tensors PyTorch
/// was given.
fn translation_batch(b: &Batch, device: &Device) -> TranslationBatch {
    let items = b
        .pairs
        .iter()
        .map(|(source, target)| PairTokens {
            source: source.clone(),
            target: target.clone(),
        })
        .collect();
    let batch = TranslationBatcher::default().batch(items, device);
    for (ours, theirs) in [
        (&batch.source, &b.source),
        (&batch.target_input, &b.target_input),
        (&batch.target_output, &b.target_output),
    ] {
        assert_eq!(ours.clone().into_data(), tokens(theirs, device).into_data());
    }
    batch
}

fn mean_loss(model: &Transformer, loss: &SequenceCrossEntropy, b: &Batch, device: &Device) -> f64 {
    let logits = model.forward(tokens(&b.source, device), tokens(&b.target_input, device));
    let out = loss.forward(logits, tokens(&b.target_output, device));
    out.loss.into_data().try_to_vec::<f32>().expect("f32")[0] as f64
}

fn close(ours: f64, theirs: f64, tolerance: f64) -> bool {
    (ours - theirs).abs() <= tolerance * theirs.abs().max(1.0)
}

#[test]
fn ten_optimizer_steps_match_pytorch() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let text = std::fs::read_to_string(dir.join("step_parity.json")).expect("fixture");
    let f: Fixture = serde_json::from_str(&text).expect("fixture json");
    let config = f.model.clone();
    assert!(config.share_embeddings && config.tie_output_projection);
    let device = Device::flex().autodiff();
    let mut model = config.init(&device).expect("valid config");
    TorchImport::new(dir.join("step_parity.pt"))
        .with_names(TorchNames {
            transformer: String::new(),
            ..TorchNames::default()
        })
        .load_into(&mut model, &config)
        .expect("import");
    let loss = SequenceCrossEntropy::new(config.pad_id, f.label_smoothing);
    let mut adam = AdamConfig::new()
        .with_beta_1(f.beta1)
        .with_beta_2(f.beta2)
        .with_epsilon(f.epsilon)
        .init();

    let mut clipped = 0;
    let (mut worst_loss, mut worst_norm, mut worst_after) = (0.0f64, 0.0f64, 0.0f64);
    let relative = |ours: f64, theirs: f64| (ours - theirs).abs() / theirs.abs().max(1.0);
    for s in &f.steps {
        let batch = translation_batch(&f.batches[s.batch], &device);
        assert_eq!(batch.target_tokens, s.target_tokens, "step {}", s.step);
        let settings = StepSettings {
            step: s.step,
            learning_rate: s.learning_rate,
            clip_norm: f.clip_norm,
            group_tokens: batch.target_tokens,
        };
        let out = optimizer_step(
            model,
            &mut adam,
            &loss,
            &device,
            [(s.step, batch)],
            settings,
        )
        .expect("finite step");
        model = out.model;
        let ours = out.sums.loss / out.sums.tokens as f64;
        worst_loss = worst_loss.max(relative(ours, s.loss));
        worst_norm = worst_norm.max(relative(out.grad_norm, s.grad_norm));
        assert!(
            close(ours, s.loss, 1e-5),
            "step {}: loss {ours} vs PyTorch {}",
            s.step,
            s.loss
        );
        assert!(
            close(out.grad_norm, s.grad_norm, 1e-5),
            "step {}: gradient norm {} vs PyTorch {}",
            s.step,
            out.grad_norm,
            s.grad_norm
        );
        clipped += usize::from(s.grad_norm > f.clip_norm);
    }
    // Both sides of the clipping threshold are exercised.
    assert!(
        clipped > 0 && clipped < f.steps.len(),
        "{clipped} steps clipped"
    );

    let eval = model.valid();
    let inference = device.clone().inner();
    for (i, (b, theirs)) in f.batches.iter().zip(&f.loss_after).enumerate() {
        let ours = mean_loss(&eval, &loss, b, &inference);
        worst_after = worst_after.max(relative(ours, *theirs));
        assert!(
            close(ours, *theirs, 1e-5),
            "batch {i} after the last step: loss {ours} vs PyTorch {theirs}"
        );
    }
    eprintln!(
        "largest relative differences: step loss {worst_loss:.1e}, gradient norm {worst_norm:.1e}, loss after {worst_after:.1e}"
    );
}
