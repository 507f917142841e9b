//! Taking a trained model out of Rosetta: [`export`] writes a checkpoint's model in a format
//! other tools load.
//!
//! - [`ExportFormat::Safetensors`]: `model.safetensors`, the parameters as a PyTorch state dict
//!   under `torch.nn.Transformer` names ([`rosetta_model::export`]); `model.json`, the model's
//!   configuration (what `rosetta import-torch --model-config` reads back); and the tokenizer
//!   file(s). `scripts/rosetta_torch.py` builds the PyTorch module that loads it.
//! - [`ExportFormat::Ctranslate2`] (float32 or int8 weights): a CTranslate2 model directory (`model.bin`, `config.json`,
//!   the vocabularies), written directly ([`crate::ctranslate2`]).
//! - [`ExportFormat::Web`]: a model bundle ([`rosetta_infer::bundle`]) for the browser build:
//!   burnpack weights in f32 or f16, `bundle.json`, the tokenizer(s).
//! - [`ExportFormat::HuggingFace`]: a MarianMT directory that `transformers` loads
//!   ([`crate::marian::export`]).
//!
//! The directory is written whole or not at all: into a new hidden sibling directory
//! (`.NAME.partial-XXXXXX`) first, renamed into place once complete, removed on any error. A
//! directory that already holds files is refused.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use rosetta_model::export::{torch_state_dict, write_safetensors};
use rosetta_model::{TorchNames, TransformerConfig};

use rosetta_infer::{Precision, Translator};

use crate::error::ConvertError;

/// The formats [`export`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// A PyTorch state dict as safetensors, with the configuration and tokenizer(s).
    Safetensors,
    /// A CTranslate2 model directory, its linear maps' weights in float32 or int8
    /// ([`Quantization`](rosetta_model::Quantization)).
    Ctranslate2(rosetta_model::Quantization),
    /// A model bundle for the browser build (and any program without a file system).
    Web(Precision),
    /// A Hugging Face MarianMT directory.
    HuggingFace,
}

impl std::fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Safetensors => f.write_str("safetensors"),
            Self::Ctranslate2(quantization) => write!(f, "CTranslate2, {quantization} weights"),
            Self::Web(precision) => write!(f, "web bundle, {precision} weights"),
            Self::HuggingFace => f.write_str("Hugging Face MarianMT"),
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// The files written, in the output directory.
    pub files: Vec<PathBuf>,
    /// What of the model's decoding the other toolkit can only approximate (Hugging Face).
    pub notes: Vec<String>,
}

/// Writes `translator`'s model into the new directory `dir` in `format`; `names` are the
/// PyTorch keys of the safetensors export.
pub fn export(
    translator: &Translator,
    format: ExportFormat,
    names: &TorchNames,
    dir: &Path,
) -> Result<Exported, ConvertError> {
    if !translator.ensemble.is_empty() {
        return Err(ConvertError::Output {
            path: dir.to_path_buf(),
            reason: "an ensemble is several models and exports as one only once averaged \
                     (rosetta average); export its checkpoints one by one otherwise"
                .into(),
        });
    }
    // A new hidden directory beside the target, removed on every error (and when dropped).
    let staged = crate::claim(dir)?;
    let mut notes = Vec::new();
    let written = match format {
        ExportFormat::Safetensors => write_torch(translator, names, staged.path())?,
        ExportFormat::Ctranslate2(quantization) => {
            crate::ctranslate2::write(translator, quantization, staged.path())?
        }
        ExportFormat::Web(precision) => {
            rosetta_infer::bundle::write(translator, precision, staged.path())?
        }
        ExportFormat::HuggingFace => {
            let export = crate::marian::write_hf(translator, staged.path())?;
            notes = export.notes;
            export.files
        }
    };
    staged.commit().map_err(ConvertError::io(dir))?;
    let files = written
        .into_iter()
        .map(|file| dir.join(file.file_name().unwrap_or_default()))
        .collect();
    Ok(Exported { files, notes })
}

/// Refuses, naming the key, a model that `scripts/rosetta_torch.py`'s `nn.Transformer` module
/// cannot rebuild (an imported Marian model's settings: `export --format hf` writes those).
fn check_torch_module(config: &TransformerConfig, dir: &Path) -> Result<(), ConvertError> {
    let refuse = |key: &str, what: &str| {
        Err(ConvertError::Output {
            path: dir.to_path_buf(),
            reason: format!(
                "the model's `{key}` is {what}, which the PyTorch nn.Transformer module of this export cannot build; export it with --format hf"
            ),
        })
    };
    if config.activation == rosetta_model::Activation::Swish {
        return refuse("activation", "Swish");
    }
    if config.positions() != rosetta_model::PositionLayout::Interleaved {
        return refuse("positions", "Halves (Marian's)");
    }
    if !config.scale_embeddings() {
        return refuse("scale_embeddings", "false");
    }
    if config.output_bias() {
        return refuse("output_bias", "true");
    }
    if config.special_tokens() != rosetta_model::SpecialTokens::ROSETTA {
        return refuse(
            "special_tokens",
            "not Rosetta's (<pad> 0, <unk> 1, <s> 2, </s> 3)",
        );
    }
    Ok(())
}

/// The safetensors export into `dir`.
fn write_torch(
    translator: &Translator,
    names: &TorchNames,
    dir: &Path,
) -> Result<Vec<PathBuf>, ConvertError> {
    let config = &translator.config;
    check_torch_module(config, dir)?;
    let state = torch_state_dict(&translator.model, config, names)?;
    let weights = dir.join("model.safetensors");
    let metadata = HashMap::from([
        ("format".to_string(), "pt".to_string()),
        ("producer".to_string(), "rosetta".to_string()),
        ("checkpoint_step".to_string(), translator.step.to_string()),
    ]);
    write_safetensors(&state, metadata, &weights)?;
    let config_path = write_json(config, &dir.join("model.json"))?;
    let mut files = vec![weights, config_path];
    files.extend(translator.save_tokenizers(dir)?);
    Ok(files)
}

/// Writes `value` as pretty JSON to `path`; returns `path`.
pub(crate) fn write_json(
    value: &impl serde::Serialize,
    path: &Path,
) -> Result<PathBuf, ConvertError> {
    let text = serde_json::to_string_pretty(value).map_err(|e| ConvertError::Output {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    fs::write(path, text).map_err(ConvertError::io(path))?;
    Ok(path.to_path_buf())
}
