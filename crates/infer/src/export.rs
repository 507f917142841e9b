//! Taking a trained model out of Rosetta: [`export`] writes a checkpoint's model in a format
//! other tools load.
//!
//! - [`ExportFormat::Safetensors`]: `model.safetensors`, the parameters as a PyTorch state dict
//!   under `torch.nn.Transformer` names ([`rosetta_model::export`]); `model.json`, the model's
//!   configuration (what `rosetta import-torch --model-config` reads back); and the tokenizer
//!   file(s). `scripts/rosetta_torch.py` builds the PyTorch module that loads it.
//! - [`ExportFormat::Ctranslate2`]: a CTranslate2 model directory (`model.bin`, `config.json`,
//!   the vocabularies), written directly ([`crate::ctranslate2`]).
//!
//! The directory is written whole or not at all: into a sibling `*.partial` directory first,
//! renamed into place once complete. A directory that already holds files is refused.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use rosetta_data::pipeline::{JOINT_TOKENIZER, SOURCE_TOKENIZER, TARGET_TOKENIZER};
use rosetta_model::TorchNames;
use rosetta_model::export::{torch_state_dict, write_safetensors};

use crate::error::InferError;
use crate::translator::Translator;

/// The formats [`export`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// A PyTorch state dict as safetensors, with the configuration and tokenizer(s).
    Safetensors,
    /// A CTranslate2 model directory.
    Ctranslate2,
}

/// Writes `translator`'s model into the new directory `dir` in `format`; `names` are the
/// PyTorch keys of the safetensors export. Returns the files written.
pub fn export(
    translator: &Translator,
    format: ExportFormat,
    names: &TorchNames,
    dir: &Path,
) -> Result<Vec<PathBuf>, InferError> {
    if let Ok(mut entries) = fs::read_dir(dir) {
        if entries.next().is_some() {
            return Err(InferError::Export {
                path: dir.to_path_buf(),
                reason: "the directory exists and is not empty; name a new one".into(),
            });
        }
    } else if dir.exists() {
        return Err(InferError::Export {
            path: dir.to_path_buf(),
            reason: "exists and is not a directory".into(),
        });
    }
    let name = dir.file_name().ok_or_else(|| InferError::Export {
        path: dir.to_path_buf(),
        reason: "names no directory".into(),
    })?;
    let partial = dir.with_file_name(format!("{}.partial", name.to_string_lossy()));
    if partial.exists() {
        fs::remove_dir_all(&partial).map_err(InferError::io(&partial))?;
    }
    fs::create_dir_all(&partial).map_err(InferError::io(&partial))?;
    let written = match format {
        ExportFormat::Safetensors => write_torch(translator, names, &partial),
        ExportFormat::Ctranslate2 => crate::ctranslate2::write(translator, &partial),
    };
    let written = match written {
        Ok(files) => files,
        Err(error) => {
            // Best effort: the partial directory is of no use to anyone.
            let _ = fs::remove_dir_all(&partial);
            return Err(error);
        }
    };
    // rename(2) replaces an empty directory; `dir` is empty or absent here.
    fs::rename(&partial, dir).map_err(InferError::io(dir))?;
    Ok(written
        .into_iter()
        .map(|file| dir.join(file.file_name().unwrap_or_default()))
        .collect())
}

/// The safetensors export into `dir`.
fn write_torch(
    translator: &Translator,
    names: &TorchNames,
    dir: &Path,
) -> Result<Vec<PathBuf>, InferError> {
    let config = &translator.state.model;
    let state = torch_state_dict(&translator.model, config, names)?;
    let weights = dir.join("model.safetensors");
    let metadata = HashMap::from([
        ("format".to_string(), "pt".to_string()),
        ("producer".to_string(), "rosetta".to_string()),
        (
            "checkpoint_step".to_string(),
            translator.state.step.to_string(),
        ),
    ]);
    write_safetensors(&state, metadata, &weights)?;
    let config_path = dir.join("model.json");
    let json = serde_json::to_string_pretty(config).map_err(|e| InferError::Export {
        path: config_path.clone(),
        reason: e.to_string(),
    })?;
    fs::write(&config_path, json).map_err(InferError::io(&config_path))?;
    let mut files = vec![weights, config_path];
    files.extend(write_tokenizers(translator, dir)?);
    Ok(files)
}

/// Saves the tokenizer(s) into `dir` under their standard names; returns the files.
pub(crate) fn write_tokenizers(
    translator: &Translator,
    dir: &Path,
) -> Result<Vec<PathBuf>, InferError> {
    translator.tokenizers.save(dir)?;
    Ok(if translator.tokenizers.joint {
        vec![dir.join(JOINT_TOKENIZER)]
    } else {
        vec![dir.join(SOURCE_TOKENIZER), dir.join(TARGET_TOKENIZER)]
    })
}
