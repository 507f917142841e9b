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

/// Collects every float parameter of a module, in visiting order.
pub struct Collect(pub Vec<Vec<f32>>);

impl rosetta_model::burn::module::ModuleVisitor for Collect {
    fn visit_float<const D: usize>(
        &mut self,
        param: &rosetta_model::burn::module::Param<rosetta_model::burn::tensor::Tensor<D>>,
    ) {
        self.0
            .push(param.val().into_data().try_to_vec::<f32>().expect("f32"));
    }
}

/// Every parameter of the model saved in `checkpoint_dir`, as flat `f32` vectors.
pub fn parameters(checkpoint_dir: &Path) -> Vec<Vec<f32>> {
    use rosetta_model::burn::module::Module;
    let state = rosetta_infer::checkpoint::read_state(checkpoint_dir).expect("state");
    let model = rosetta_infer::checkpoint::load_model(
        checkpoint_dir,
        &state,
        &rosetta_model::burn::tensor::Device::flex(),
    )
    .expect("model");
    let mut collect = Collect(Vec::new());
    model.visit(&mut collect);
    collect.0
}
