//! The translator that one or more `--checkpoint` options name: one model, or an ensemble whose
//! log-probabilities are averaged at every step.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rosetta_infer::Translator;
use rosetta_model::burn::tensor::Device;

/// Loads the first checkpoint, then joins the others to it as an ensemble (they must share its
/// tokenizer(s)).
pub fn load(checkpoints: &[PathBuf], device: &Device) -> Result<Translator> {
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
    Ok(translator)
}
