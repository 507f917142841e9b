//! Errors raised when a model is configured, built or imported.

use std::path::PathBuf;

/// Everything that can go wrong when configuring, building or importing a [`Transformer`](crate::Transformer).
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A configuration value is out of range or inconsistent with another one.
    #[error("invalid model configuration: `{key}` {reason}")]
    InvalidConfig {
        /// The configuration key at fault.
        key: &'static str,
        /// Why the value is refused.
        reason: String,
    },
    /// A PyTorch checkpoint could not be read.
    #[error("cannot read PyTorch checkpoint {path}: {reason}")]
    TorchRead {
        /// The checkpoint file.
        path: PathBuf,
        /// What the reader reported.
        reason: String,
    },
    /// A tensor the model needs is absent from an imported checkpoint.
    #[error("PyTorch checkpoint {path} has no tensor `{key}` (needed for `{target}`)")]
    MissingTensor {
        /// The checkpoint file.
        path: PathBuf,
        /// The PyTorch key that was looked for.
        key: String,
        /// The Rosetta parameter it would have filled.
        target: String,
    },
    /// A tensor in an imported checkpoint has the wrong shape for this model.
    #[error("tensor `{key}` in {path} has shape {found:?}, the model expects {expected:?}")]
    ShapeMismatch {
        /// The checkpoint file.
        path: PathBuf,
        /// The PyTorch key at fault.
        key: String,
        /// The shape in the checkpoint.
        found: Vec<usize>,
        /// The shape the configured model needs.
        expected: Vec<usize>,
    },
    /// Applying the imported tensors to the model left parameters unset or failed.
    #[error("importing {path} into the model failed: {reason}")]
    Apply {
        /// The checkpoint file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A search setting has an impossible value.
    #[error("invalid search setting `{}`: {reason}", setting.key())]
    InvalidSearch {
        /// The setting at fault.
        setting: crate::search::SearchSetting,
        /// Why the value is refused.
        reason: String,
    },
    /// A search was asked of models or sources it cannot run on (an empty ensemble, models of
    /// different vocabularies, special tokens outside the vocabulary, a source longer than the
    /// positions the model has).
    #[error("cannot search: {reason}")]
    Search {
        /// What is wrong.
        reason: String,
    },
    /// The model's parameters do not fit the layout an export writes.
    #[error("exporting the model failed: {reason}")]
    Export {
        /// What went wrong.
        reason: String,
    },
}
