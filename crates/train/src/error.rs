//! Errors of training: each names the file, key, step or checkpoint at fault.

use std::path::PathBuf;

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
    #[error("configuration {path}: {message}")]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
    /// The data pipeline failed.
    #[error(transparent)]
    Data(#[from] rosetta_data::DataError),
    /// The model could not be built.
    #[error(transparent)]
    Model(#[from] rosetta_model::ModelError),
    /// A checkpoint is missing, corrupt, or does not belong to this run.
    #[error("checkpoint {path}: {reason}")]
    Checkpoint {
        /// The checkpoint directory or file.
        path: PathBuf,
        /// Why it is refused.
        reason: String,
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
