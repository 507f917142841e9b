//! `rosetta export`: a trained model in a format other tools load (safetensors with PyTorch
//! names, a CTranslate2 model directory, or a model bundle for the browser).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rosetta_convert::{ExportFormat, export};
use rosetta_infer::{Precision, Translator};
use rosetta_model::parse_device;
use rosetta_model::{Quantization, TorchNames};

use crate::output::outln;

/// The formats on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Format {
    /// `model.safetensors` (a PyTorch `nn.Transformer` state dict), `model.json`, tokenizer(s).
    Safetensors,
    /// A CTranslate2 model directory: `model.bin`, `config.json`, vocabularies.
    Ctranslate2,
    /// A model bundle for the browser build (`crates/web`): `model.bpk` (burnpack, f16 unless
    /// `--precision f32`), `bundle.json`, tokenizer(s). Also loads wherever `--checkpoint` is
    /// taken.
    Web,
    /// A Hugging Face MarianMT directory (`config.json`, `generation_config.json`,
    /// `model.safetensors`, the tokenizer) that `MarianMTModel.from_pretrained` and
    /// `AutoTokenizer.from_pretrained` load.
    Hf,
}

/// How a bundle stores its weights.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum PrecisionArg {
    /// 2 bytes per parameter.
    F16,
    /// 4 bytes per parameter: the checkpoint's weights bit for bit.
    F32,
}

/// Arguments of `rosetta export`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A checkpoint directory, or a run directory (its best checkpoint, else its newest).
    #[arg(long)]
    checkpoint: PathBuf,
    /// What to write.
    #[arg(long, value_enum, required_unless_present = "web")]
    format: Option<Format>,
    /// Short for `--format web`.
    #[arg(long, conflicts_with = "format")]
    web: bool,
    /// web: how the bundle stores the weights, f16 unless given (computation is in f32 either
    /// way).
    #[arg(long, value_enum)]
    precision: Option<PrecisionArg>,
    /// New directory to write into (refused if it holds files).
    #[arg(long)]
    output: PathBuf,
    /// safetensors: prefix of the `nn.Transformer` submodule's keys (`""` for
    /// `scripts/rosetta_torch.py`'s module).
    #[arg(long, default_value = "transformer.")]
    transformer_prefix: String,
    /// ctranslate2: the linear maps' weights in float32 or int8 (quantized per output row as
    /// CTranslate2's own converter does, with their scales); other formats are float32.
    #[arg(long)]
    quantize: Option<Quantization>,
}

impl Args {
    /// The export `--format`/`--web`, `--precision` and `--quantize` ask for; `--precision`
    /// with another format than web, or `--quantize` with another than ctranslate2, is refused
    /// rather than ignored.
    fn format(&self) -> Result<ExportFormat> {
        let web = |precision: Option<PrecisionArg>| {
            ExportFormat::Web(match precision {
                None | Some(PrecisionArg::F16) => Precision::F16,
                Some(PrecisionArg::F32) => Precision::F32,
            })
        };
        if self.quantize.is_some() && !matches!(self.format, Some(Format::Ctranslate2)) {
            bail!("option --quantize: only the ctranslate2 format is written in int8");
        }
        // clap requires one of `--format` and `--web`, and refuses both.
        match (self.web, self.format, self.precision) {
            (true, None, precision) | (false, Some(Format::Web), precision) => Ok(web(precision)),
            (false, Some(Format::Safetensors), None) => Ok(ExportFormat::Safetensors),
            (false, Some(Format::Ctranslate2), None) => {
                Ok(ExportFormat::Ctranslate2(self.quantize.unwrap_or_default()))
            }
            (false, Some(Format::Hf), None) => Ok(ExportFormat::HuggingFace),
            (false, Some(_), Some(_)) => {
                bail!("option --precision: only the web format has a precision (f16 or f32)")
            }
            _ => bail!("give --format FORMAT or --web"),
        }
    }
}

/// Loads the checkpoint and writes the export.
pub fn run(args: &Args) -> Result<()> {
    let format = args.format()?;
    let device = parse_device("flex")?;
    let translator = Translator::load(&args.checkpoint, &device)
        .with_context(|| format!("cannot load {}", args.checkpoint.display()))?;
    let names = TorchNames {
        transformer: args.transformer_prefix.clone(),
        ..TorchNames::default()
    };
    let exported = export(&translator, format, &names, &args.output)?;
    outln!(
        "exported {} ({format}) to {}:",
        translator
            .checkpoint
            .as_deref()
            .unwrap_or(&args.checkpoint)
            .display(),
        args.output.display()
    );
    print_files(&exported.files);
    for note in exported.notes {
        outln!("note: {note}");
    }
    Ok(())
}

/// One line per file written, with its size.
fn print_files(files: &[PathBuf]) {
    for file in files {
        match std::fs::metadata(file) {
            Ok(metadata) => outln!("  {} ({})", file.display(), human_bytes(metadata.len())),
            Err(_) => outln!("  {}", file.display()),
        }
    }
}

/// `bytes` for a person: `812 B`, `40.5 KiB`, `3.9 MiB`.
fn human_bytes(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        _ => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
    }
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn sizes_read_in_the_unit_that_fits() {
        assert_eq!(human_bytes(812), "812 B");
        assert_eq!(human_bytes(41_472), "40.5 KiB");
        assert_eq!(human_bytes(4_089_446), "3.9 MiB");
    }
}
