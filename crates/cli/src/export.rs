//! `rosetta export`: a trained model in a format other tools load (safetensors with PyTorch
//! names, or a CTranslate2 model directory).

use std::path::PathBuf;

use anyhow::{Context, Result};
use rosetta_infer::Translator;
use rosetta_infer::export::{ExportFormat, export};
use rosetta_model::TorchNames;
use rosetta_model::parse_device;

use crate::output::outln;

/// The formats on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Format {
    /// `model.safetensors` (a PyTorch `nn.Transformer` state dict), `model.json`, tokenizer(s).
    Safetensors,
    /// A CTranslate2 model directory: `model.bin`, `config.json`, vocabularies.
    Ctranslate2,
}

/// Arguments of `rosetta export`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A checkpoint directory, or a run directory (its best checkpoint, else its newest).
    #[arg(long)]
    checkpoint: PathBuf,
    /// What to write.
    #[arg(long, value_enum)]
    format: Format,
    /// New directory to write into (refused if it holds files).
    #[arg(long)]
    output: PathBuf,
    /// safetensors: prefix of the `nn.Transformer` submodule's keys (`""` for
    /// `scripts/rosetta_torch.py`'s module).
    #[arg(long, default_value = "transformer.")]
    transformer_prefix: String,
}

/// Loads the checkpoint and writes the export.
pub fn run(args: &Args) -> Result<()> {
    let device = parse_device("flex")?;
    let translator = Translator::load(&args.checkpoint, &device)
        .with_context(|| format!("cannot load {}", args.checkpoint.display()))?;
    let format = match args.format {
        Format::Safetensors => ExportFormat::Safetensors,
        Format::Ctranslate2 => ExportFormat::Ctranslate2,
    };
    let names = TorchNames {
        transformer: args.transformer_prefix.clone(),
        ..TorchNames::default()
    };
    let files = export(&translator, format, &names, &args.output)?;
    outln!(
        "exported {} ({}) to {}:",
        translator.checkpoint.display(),
        match args.format {
            Format::Safetensors => "safetensors",
            Format::Ctranslate2 => "CTranslate2",
        },
        args.output.display()
    );
    for file in files {
        outln!("  {}", file.display());
    }
    Ok(())
}
