//! The translator that one or more `--checkpoint` options name: one model, or an ensemble whose
//! log-probabilities are averaged at every step.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rosetta_infer::Translator;
use rosetta_model::Quantization;
use rosetta_model::burn::tensor::Device;

/// `--quantize`, the option of every command that loads models to translate.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct QuantizeArgs {
    /// How the models' linear maps multiply: `float32` as trained, or `int8` (weights per
    /// column and inputs per row quantized to 8-bit integers, integer products; CPU devices
    /// only; docs/performance.md has its speed and BLEU).
    #[arg(long, default_value_t = Quantization::Float32)]
    pub quantize: Quantization,
}

/// Loads the first checkpoint, then joins the others to it as an ensemble (they must share its
/// tokenizer(s)), the models multiplying as `quantization` says.
pub fn load(
    checkpoints: &[PathBuf],
    device: &Device,
    quantization: Quantization,
) -> Result<Translator> {
    let Some((first, others)) = checkpoints.split_first() else {
        bail!("give --checkpoint PATH (repeat it for an ensemble)");
    };
    let mut translator = Translator::load(first, device)
        .with_context(|| format!("cannot load {}", first.display()))?;
    for path in others {
        let other = Translator::load(path, device)
            .with_context(|| format!("cannot load {}", path.display()))?;
        translator.join(other)?;
    }
    translator.quantize(quantization)?;
    Ok(translator)
}
