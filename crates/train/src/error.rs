//! Errors of training: each names the file, key, step or checkpoint at fault.

use std::path::PathBuf;

use rosetta_data::TokenizerSettings;
use rosetta_model::TransformerConfig;

/// A configuration value refused: the dotted key at fault (`training.max_steps`; none for a file
/// that does not parse at all) and why. Made where the rule is checked, never read back out of
/// another library's message text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The dotted key, as the configuration file spells it.
    pub key: Option<String>,
    /// Why the value is refused.
    pub reason: String,
}

impl ConfigError {
    /// The value of `key` is refused for `reason`.
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            key: Some(key.into()),
            reason: reason.into(),
        }
    }

    /// A fault no single key is at (the file does not parse).
    pub fn unkeyed(reason: impl Into<String>) -> Self {
        Self {
            key: None,
            reason: reason.into(),
        }
    }

    /// A deserializer's fault at `path` (`serde_path_to_error`'s dotted path; `.` for the root).
    pub fn at(path: &str, reason: impl Into<String>) -> Self {
        if path == "." || path.is_empty() {
            Self::unkeyed(reason)
        } else {
            Self::new(path, reason)
        }
    }

    /// [`TrainError::Config`] for the file (or option) `path`.
    pub fn in_file(self, path: impl Into<PathBuf>) -> TrainError {
        TrainError::Config {
            path: path.into(),
            error: self,
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.key {
            Some(key) => write!(f, "key `{key}`: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Everything that can stop a training run.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The configuration file is malformed: unknown key, wrong type, missing key, bad value.
    #[error("configuration {path}: {error}")]
    Config {
        /// The configuration file (or the command-line option).
        path: PathBuf,
        /// The key at fault and why.
        error: ConfigError,
    },
    /// The data pipeline failed.
    #[error(transparent)]
    Data(#[from] rosetta_data::DataError),
    /// The model could not be built.
    #[error(transparent)]
    Model(#[from] rosetta_model::ModelError),
    /// A run directory cannot be trained into, or a checkpoint resumed from, without
    /// breaking the run it holds.
    #[error("checkpoint {path}: {conflict}")]
    Resume {
        /// The run directory or checkpoint.
        path: PathBuf,
        /// What stands in the way, by kind.
        conflict: Box<ResumeConflict>,
    },
    /// The loss became NaN or infinite.
    #[error(
        "the loss is not finite ({value}) at step {step}; stopping (the last good checkpoint is kept)"
    )]
    NonFiniteLoss {
        /// The optimizer step at which it happened.
        step: u64,
        /// The loss value.
        value: f64,
    },
    /// A score could not be computed.
    #[error(transparent)]
    Metric(#[from] rosetta_eval::MetricError),
    /// A checkpoint could not be read or written (see [`rosetta_infer::checkpoint`]).
    #[error(transparent)]
    Infer(#[from] rosetta_infer::InferError),
    /// A checkpoint's optimizer state could not be read.
    #[error("checkpoint {path}: cannot load the optimizer state: {error}")]
    OptimizerState {
        /// The optimizer's file.
        path: PathBuf,
        /// Burn's error.
        error: rosetta_model::burn::store::RecordError,
    },
    /// The requested device is unknown or not compiled in.
    #[error("device `{name}`: {reason}")]
    Device {
        /// The device name as given.
        name: String,
        /// Why it cannot be used.
        reason: String,
    },
}

impl TrainError {
    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> TrainError {
        let path = path.into();
        move |source| TrainError::Io { path, source }
    }
}

/// Why a run is not started or resumed where it was asked to be: each kind has its remedy in
/// its message (resume, set the key back, train elsewhere).
#[derive(Debug, thiserror::Error)]
pub enum ResumeConflict {
    /// A new run into a directory that holds checkpoints.
    #[error("already holds checkpoints: pass --resume to continue it, or choose another --output")]
    RunExists,
    /// The checkpoint was trained with other tokenizer settings than the configuration's.
    #[error(
        "was trained with tokenizer settings {saved:?}, the configuration now says {now:?}; resuming with another vocabulary is refused"
    )]
    TokenizerSettings {
        /// The checkpoint's settings.
        saved: TokenizerSettings,
        /// The configuration's.
        now: TokenizerSettings,
    },
    /// A setting that shapes the training trajectory differs from the checkpoint's
    /// ([`RunConfig::run_settings`](crate::RunConfig::run_settings)).
    #[error(
        "was written by a run with `{key}` = {before}; the configuration now says {now}. Resuming under another `{key}` would not continue that run: set it back, or train into another output directory"
    )]
    RunSetting {
        /// The setting, dotted (`training.seed`).
        key: String,
        /// Its value in the checkpoint.
        before: serde_json::Value,
        /// Its value in the configuration.
        now: serde_json::Value,
    },
    /// The tokenizer files beside the run changed since the checkpoint was written.
    #[error(
        "was trained with other tokenizer files than {files} (changed or damaged since); refusing to resume"
    )]
    TokenizerFiles {
        /// The tokenizer files of the run directory.
        files: String,
    },
    /// A model-only checkpoint (`best/`, an average, an import): no optimizer state or position
    /// in the data to continue from.
    #[error(
        "is a model-only checkpoint (step {step}): it has no optimizer state to resume from; resume from a step checkpoint, or start a fine-tuning run from it with `[model] from`"
    )]
    ModelOnly {
        /// The step of its weights.
        step: u64,
    },
    /// The configuration asks for another model than the checkpoint holds.
    #[error(
        "holds a model of another shape ({saved:?}) than the configuration asks for ({now:?}); refusing to resume"
    )]
    ModelShape {
        /// The checkpoint's model.
        saved: TransformerConfig,
        /// The configuration's.
        now: TransformerConfig,
    },
}

impl TrainError {
    /// A run refused at `path` for `conflict`.
    pub fn resume(path: impl Into<PathBuf>, conflict: ResumeConflict) -> TrainError {
        TrainError::Resume {
            path: path.into(),
            conflict: Box::new(conflict),
        }
    }
}
