//! Fine-tuning: a run that starts from another run's model (`[model] from = "RUN"`), an imported
//! pretrained one (`rosetta import-hf`) or any Rosetta run, keeping its architecture, weights
//! and tokenizer, with new corpora, a new schedule and a new optimizer state.
//!
//! The configuration's `[model]` section then holds `from` and, optionally, new dropout rates
//! (`dropout`, `attention_dropout`, `activation_dropout`); any other key must equal the starting
//! model's (a resolved configuration lists them all) or is refused, naming it. `[data.tokenizer]`
//! may only say `from`, pointing at the same tokenizer: retraining the vocabulary would change
//! every id the model knows, so a training key there is refused, naming it.

use std::path::{Path, PathBuf};

use rosetta_data::Tokenizers;
use rosetta_infer::{CheckpointState, checkpoint, find_checkpoint};
use rosetta_model::TransformerConfig;

use crate::error::ConfigError;
use crate::model_section::ModelSection;

/// The `[model]` keys a fine-tuning run may change: regularisation, not architecture.
pub const TUNABLE_KEYS: [&str; 3] = ["dropout", "attention_dropout", "activation_dropout"];

/// The model a run starts from.
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    /// The checkpoint whose weights the run starts from.
    pub checkpoint: PathBuf,
    /// Its state (architecture, tokenizer fingerprint, decoding defaults, languages).
    pub state: CheckpointState,
    /// The directory holding its tokenizer files.
    pub tokenizer_dir: PathBuf,
}

impl Start {
    /// Finds the checkpoint `from` names (a checkpoint, or a run directory: its best, else its
    /// newest) and its tokenizer; the error says what is missing, for `model.from`.
    pub fn locate(from: &Path) -> Result<Self, ConfigError> {
        let checkpoint = find_checkpoint(from)
            .map_err(|e| ConfigError::new("model.from", format!("{} ({e})", from.display())))?;
        let state = checkpoint::read_state(&checkpoint)
            .map_err(|e| ConfigError::new("model.from", e.to_string()))?;
        let tokenizer_dir = checkpoint
            .ancestors()
            .take(3)
            .find(|dir| matches!(Tokenizers::load(dir), Ok(Some(_))))
            .map(Path::to_path_buf)
            .ok_or_else(|| {
                ConfigError::new(
                    "model.from",
                    format!(
                        "no tokenizer beside {} or in the two directories above it",
                        checkpoint.display()
                    ),
                )
            })?;
        Ok(Self {
            checkpoint,
            state,
            tokenizer_dir,
        })
    }

    /// The starting model's configuration with the run's dropout rates (`section`'s).
    pub fn model_config(&self, section: &ModelSection) -> TransformerConfig {
        self.state
            .model
            .clone()
            .with_dropout(section.dropout)
            .with_attention_dropout(section.attention_dropout)
            .with_activation_dropout(section.activation_dropout)
    }
}

/// Rewrites the raw `[model]` table of a configuration with `from`: the starting model's
/// architecture, the run's dropout rates over it, `from` kept. Returns the start, or the error
/// message naming the key at fault.
pub fn resolve_model_table(model: &mut toml::Table) -> Result<Option<Start>, ConfigError> {
    let Some(from) = model.get("from") else {
        return Ok(None);
    };
    let from = from
        .as_str()
        .ok_or_else(|| {
            ConfigError::new(
                "model.from",
                format!("is {from}, expected the path of a run or checkpoint"),
            )
        })?
        .to_string();
    let start = Start::locate(Path::new(&from))?;
    let source = ModelSection::of(&start.state.model);
    let mut resolved = toml::Table::try_from(&source).map_err(|e| {
        ConfigError::new(
            "model.from",
            format!("cannot describe the starting model: {e}"),
        )
    })?;
    for (key, value) in model.iter() {
        if key == "from" {
            continue;
        }
        if TUNABLE_KEYS.contains(&key.as_str()) {
            resolved.insert(key.clone(), value.clone());
            continue;
        }
        match resolved.get(key) {
            Some(theirs) if same_value(theirs, value) => {}
            Some(theirs) => {
                return Err(ConfigError::new(
                    format!("model.{key}"),
                    format!(
                        "is {value}, but the model `model.from` names has {theirs}; its architecture is kept: leave the key out (only {} may change)",
                        TUNABLE_KEYS.join(", ")
                    ),
                ));
            }
            None => {
                return Err(ConfigError::new(
                    format!("model.{key}"),
                    format!(
                        "the model `model.from` names brings its architecture and weights; leave the key out (only {} may change)",
                        TUNABLE_KEYS.join(", ")
                    ),
                ));
            }
        }
    }
    resolved.insert("from".into(), toml::Value::String(from));
    *model = resolved;
    Ok(Some(start))
}

/// Equal TOML values, an integer equal to a float counting as equal (`0` and `0.0`).
fn same_value(a: &toml::Value, b: &toml::Value) -> bool {
    match (a, b) {
        (toml::Value::Integer(i), toml::Value::Float(f))
        | (toml::Value::Float(f), toml::Value::Integer(i)) => *i as f64 == *f,
        _ => a == b,
    }
}

/// Checks the raw `[data.tokenizer]` table of a run that starts from `start` and points it at
/// the starting model's tokenizer: absent, or `from` the same directory (and `dropout`), else
/// refused naming the key.
pub fn resolve_tokenizer_table(data: &mut toml::Table, start: &Start) -> Result<(), ConfigError> {
    let dir = start.tokenizer_dir.to_string_lossy().into_owned();
    let tokenizer = data
        .entry("tokenizer")
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(tokenizer) = tokenizer.as_table_mut() else {
        return Err(ConfigError::new("data.tokenizer", "expected a table"));
    };
    for (key, value) in tokenizer.iter() {
        match key.as_str() {
            "dropout" => {}
            "from" => {
                let same = value.as_str().is_some_and(|v| {
                    Path::new(v).canonicalize().ok() == start.tokenizer_dir.canonicalize().ok()
                });
                if !same {
                    return Err(ConfigError::new(
                        "data.tokenizer.from",
                        format!(
                            "is {value}, but the model `model.from` names was trained with the tokenizer in {dir}; leave the key out"
                        ),
                    ));
                }
            }
            _ => {
                return Err(ConfigError::new(
                    format!("data.tokenizer.{key}"),
                    format!(
                        "the model `model.from` names keeps its own tokenizer ({dir}); training another would change every token id it knows: leave the key out"
                    ),
                ));
            }
        }
    }
    tokenizer.insert("from".into(), toml::Value::String(dir));
    Ok(())
}
