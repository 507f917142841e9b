//! `rosetta import-hf`: a MarianMT directory as `save_pretrained` writes it becomes a Rosetta run
//! directory that `translate`, `eval`, `serve`, `attention`, `average`, `bench-decode`, `export`
//! and a fine-tuning run (`[model] from`) accept.
//!
//! The run directory holds the tokenizer's files as they came (`source.spm`, `target.spm`,
//! `vocab.json`, ...), `tokenizer.settings.json` saying where they came from, one checkpoint
//! `checkpoints/step-00000000/` (the weights in Burn's format, the model configuration mapped
//! from `config.json`, the decoding defaults of `generation_config.json`, the languages) and
//! `import.json` (the source directory, each file's SHA-256, what was read but not applied). It
//! is written into a hidden sibling directory and renamed into place once complete: on any
//! error, nothing is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rosetta_data::{MarianVocabulary, TokenizerSettings, Tokenizers};
use rosetta_infer::TranslateOptions;
use rosetta_infer::checkpoint::{self, CheckpointState};
use rosetta_model::TransformerConfig;
use rosetta_model::burn::module::Module;
use rosetta_model::burn::tensor::Device;
use rosetta_model::import::{apply_state_dict, read_state_dict};
use serde_json::json;

use super::config::MarianConfig;
use super::generation::{self, GenerationDefaults};
use super::weights;
use crate::error::ConvertError;

/// The weight files `save_pretrained` writes, newest format first.
pub const WEIGHT_FILES: [&str; 2] = ["model.safetensors", "pytorch_model.bin"];

/// What the caller knows that the directory does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportOptions {
    /// The source language's code (OPUS-MT directories do not record it; their names do).
    pub source_lang: Option<String>,
    /// The target language's code.
    pub target_lang: Option<String>,
}

/// What an import read and wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportReport {
    /// The run directory written.
    pub run_dir: PathBuf,
    /// Its checkpoint.
    pub checkpoint: PathBuf,
    /// The weight file read.
    pub weights: PathBuf,
    /// The model's configuration.
    pub model: TransformerConfig,
    /// The number of parameters.
    pub parameters: usize,
    /// How it decodes by default.
    pub decoding: TranslateOptions,
    /// The languages, where known.
    pub languages: (Option<String>, Option<String>),
    /// What was read but not applied, one line each.
    pub notes: Vec<String>,
}

/// The language pair an OPUS-MT directory's name spells (`opus-mt-en-de` → `en`, `de`), if any.
pub fn languages_of_name(dir: &Path) -> Option<(String, String)> {
    let name = dir.file_name()?.to_str()?;
    let rest = name.strip_prefix("opus-mt-")?;
    let (source, target) = rest.split_once('-')?;
    let code = |c: &str| (2..=3).contains(&c.len()) && c.chars().all(|ch| ch.is_ascii_lowercase());
    (code(source) && code(target)).then(|| (source.to_string(), target.to_string()))
}

/// Imports the MarianMT directory `dir` into the new run directory `output`.
pub fn import_marian(
    dir: &Path,
    output: &Path,
    options: &ImportOptions,
) -> Result<ImportReport, ConvertError> {
    if !dir.is_dir() {
        return Err(ConvertError::MissingFile {
            dir: dir.to_path_buf(),
            file: "directory".into(),
            why: "the MarianMT model directory to import".into(),
        });
    }
    let target = crate::claim(output)?;
    let config_path = dir.join("config.json");
    if !config_path.is_file() {
        return Err(ConvertError::MissingFile {
            dir: dir.to_path_buf(),
            file: "config.json".into(),
            why: "the model's configuration".into(),
        });
    }
    let config = MarianConfig::read(&config_path)?;
    let weights_path = WEIGHT_FILES
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
        .ok_or_else(|| ConvertError::MissingFile {
            dir: dir.to_path_buf(),
            file: WEIGHT_FILES.join(" or "),
            why: "the model's weights".into(),
        })?;
    for name in ["source.spm", "target.spm", "vocab.json"] {
        if !dir.join(name).is_file() {
            return Err(ConvertError::MissingFile {
                dir: dir.to_path_buf(),
                file: name.into(),
                why: "the MarianTokenizer (SentencePiece models and vocabulary)".into(),
            });
        }
    }
    let vocabulary = MarianVocabulary::load(dir)?;
    let generation = generation::read(dir, config.pad_token_id)?;
    let tokens = vocabulary.special_tokens(
        generation
            .decoder_start_token_id
            .unwrap_or(config.decoder_start_token_id),
    )?;
    check_tokenizer(&config, &vocabulary, tokens, &config_path)?;

    let mut model_config = config.transformer(tokens.unk);
    model_config.special_tokens = Some(tokens);
    model_config.validate()?;
    let device = Device::flex();
    let mut model = model_config.init(&device)?;
    let tensors = read_state_dict(&weights_path, None)?;
    let tensors = weights::resolve_aliases(tensors, &model_config, &weights_path)?;
    apply_state_dict(
        &mut model,
        &tensors,
        &weights::layout(&model_config),
        &weights_path,
    )?;

    let tokenizers = Tokenizers::marian(vocabulary);
    let languages = match (&options.source_lang, &options.target_lang) {
        (Some(s), Some(t)) => (Some(s.clone()), Some(t.clone())),
        (s, t) => {
            let named = languages_of_name(dir).unzip();
            (s.clone().or(named.0), t.clone().or(named.1))
        }
    };
    let mut notes = Vec::new();
    for key in &config.unknown_keys {
        notes.push(format!(
            "config.json: key `{key}` is not one MarianConfig has; ignored"
        ));
    }
    if config.layerdrop != (0.0, 0.0) {
        notes.push(format!(
            "config.json: encoder_layerdrop/decoder_layerdrop = {:?}: Rosetta trains without layer drop",
            config.layerdrop
        ));
    }
    notes.extend(
        generation
            .notes
            .iter()
            .map(|n| format!("generation settings: {n}")),
    );
    let GenerationDefaults {
        options: decoding, ..
    } = generation;

    let fingerprint = tokenizers.fingerprint()?;
    let settings = TokenizerSettings {
        from: Some(dir.to_path_buf()),
        ..TokenizerSettings::default()
    };
    let state = CheckpointState {
        format: checkpoint::FORMAT,
        step: 0,
        model: model_config.clone(),
        tokenizer: settings.clone(),
        tokenizer_fingerprint: fingerprint,
        files: BTreeMap::new(),
        decoding: Some(decoding.clone()),
        source_lang: languages.0.clone(),
        target_lang: languages.1.clone(),
        directions: Vec::new(),
    };

    let staging = target.path();
    tokenizers.save(staging)?;
    let settings_path = staging.join(rosetta_data::pipeline::TOKENIZER_SETTINGS);
    let settings_json =
        serde_json::to_string_pretty(&settings).map_err(|e| ConvertError::Json {
            path: settings_path.clone(),
            reason: e.to_string(),
        })?;
    std::fs::write(&settings_path, settings_json).map_err(ConvertError::io(&settings_path))?;
    let checkpoint_name = "checkpoints/step-00000000";
    checkpoint::save(&staging.join(checkpoint_name), &model, None, &state)?;
    let provenance = json!({
        "imported_from": dir,
        "model_type": "marian",
        "weights": weights_path.file_name().and_then(|n| n.to_str()),
        "files": file_hashes(dir)?,
        "notes": notes,
    });
    let provenance_path = staging.join("import.json");
    let text = serde_json::to_string_pretty(&provenance).map_err(|e| ConvertError::Json {
        path: provenance_path.clone(),
        reason: e.to_string(),
    })?;
    std::fs::write(&provenance_path, text).map_err(ConvertError::io(&provenance_path))?;
    let run_dir = target.commit().map_err(ConvertError::io(output))?;
    Ok(ImportReport {
        checkpoint: run_dir.join(checkpoint_name),
        run_dir,
        weights: weights_path,
        parameters: model.num_params(),
        model: model_config,
        decoding,
        languages,
        notes,
    })
}

/// The tokenizer must agree with the model: its ids inside the model's vocabularies, its EOS and
/// padding the configuration's.
fn check_tokenizer(
    config: &MarianConfig,
    vocabulary: &MarianVocabulary,
    tokens: rosetta_model::SpecialTokens,
    config_path: &Path,
) -> Result<(), ConvertError> {
    let tokenizer = vocabulary.tokenizer();
    let refuse = |key: &str, reason: String| Err(ConvertError::key(config_path, key, reason));
    if tokens.eos != config.eos_token_id {
        return refuse(
            "eos_token_id",
            format!(
                "is {}, but the tokenizer's </s> is {}",
                config.eos_token_id, tokens.eos
            ),
        );
    }
    if tokens.pad != config.pad_token_id {
        return refuse(
            "pad_token_id",
            format!(
                "is {}, but the tokenizer's <pad> is {}",
                config.pad_token_id, tokens.pad
            ),
        );
    }
    if tokenizer.vocab_size() > config.vocab_size {
        return refuse(
            "vocab_size",
            format!(
                "is {}, but vocab.json has {} entries",
                config.vocab_size,
                tokenizer.vocab_size()
            ),
        );
    }
    if tokenizer.target_vocab_size() > config.decoder_vocab_size {
        return refuse(
            "decoder_vocab_size",
            format!(
                "is {}, but the target vocabulary has {} entries",
                config.decoder_vocab_size,
                tokenizer.target_vocab_size()
            ),
        );
    }
    Ok(())
}

/// The SHA-256 of every file of `dir` (not of subdirectories), by name.
fn file_hashes(dir: &Path) -> Result<BTreeMap<String, String>, ConvertError> {
    let mut hashes = BTreeMap::new();
    for entry in std::fs::read_dir(dir).map_err(ConvertError::io(dir))? {
        let entry = entry.map_err(ConvertError::io(dir))?;
        let path = entry.path();
        if path.is_file() {
            let bytes = std::fs::read(&path).map_err(ConvertError::io(&path))?;
            hashes.insert(
                entry.file_name().to_string_lossy().into_owned(),
                rosetta_infer::checkpoint::sha256_hex(&bytes),
            );
        }
    }
    Ok(hashes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opus_mt_names_spell_their_languages() {
        assert_eq!(
            languages_of_name(Path::new("/models/opus-mt-en-de")),
            Some(("en".into(), "de".into()))
        );
        assert_eq!(languages_of_name(Path::new("opus-mt-en-ROMANCE")), None);
        assert_eq!(languages_of_name(Path::new("marian-tiny")), None);
    }
}
