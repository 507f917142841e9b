//! `rosetta import-torch`: a PyTorch `nn.Transformer` checkpoint to a Rosetta model file.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rosetta_model::burn::module::Module;
use rosetta_model::burn::tensor::Device;
use rosetta_model::{TorchImport, TorchNames};

use crate::output::outln;

/// Arguments of `rosetta import-torch`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The PyTorch checkpoint: `torch.save(model.state_dict())` (`.pt`/`.pth`), or the state dict as `.safetensors` (what `rosetta export --format safetensors` writes).
    #[arg(long)]
    checkpoint: PathBuf,
    /// Model configuration (TOML or JSON, the fields of `TransformerConfig`) matching the checkpoint.
    #[arg(long)]
    model_config: PathBuf,
    /// Directory to write `model.bpk` (weights, Burn's burnpack format) and `model.json` (config).
    #[arg(long)]
    output: PathBuf,
    /// Key under which the checkpoint nests its state dict, if any (e.g. `model`).
    #[arg(long)]
    top_level_key: Option<String>,
    /// Prefix of the `nn.Transformer` submodule in the state dict.
    #[arg(long, default_value = "transformer.")]
    transformer_prefix: String,
    /// Key of the source embedding table.
    #[arg(long, default_value = "source_embedding.weight")]
    source_embedding: String,
    /// Key of the target embedding table.
    #[arg(long, default_value = "target_embedding.weight")]
    target_embedding: String,
    /// Prefix of the output `nn.Linear`.
    #[arg(long, default_value = "output_projection.")]
    output_projection: String,
}

/// Imports, checks every parameter was filled, and writes the model.
pub fn run(args: &Args) -> Result<()> {
    let config = crate::model_config::read(&args.model_config)?;
    let device = Device::flex();
    let mut model = config.init(&device)?;
    let mut import = TorchImport::new(&args.checkpoint).with_names(TorchNames {
        transformer: args.transformer_prefix.clone(),
        source_embedding: args.source_embedding.clone(),
        target_embedding: args.target_embedding.clone(),
        output_projection: args.output_projection.clone(),
    });
    if let Some(key) = &args.top_level_key {
        import = import.with_top_level_key(key);
    }
    import.load_into(&mut model, &config)?;
    let parameters = model.num_params();

    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("cannot create output directory {}", args.output.display()))?;
    let weights = args.output.join("model.bpk");
    let config_path = args.output.join("model.json");
    let config_json = serde_json::to_string_pretty(&config)?;
    std::fs::write(&config_path, config_json)
        .with_context(|| format!("cannot write {}", config_path.display()))?;
    model
        .save_file(&weights)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e:?}", weights.display()))?;
    outln!(
        "imported {parameters} parameters from {} into {} ({})",
        args.checkpoint.display(),
        weights.display(),
        config_path.display()
    );
    Ok(())
}
