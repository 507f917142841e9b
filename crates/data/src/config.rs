//! The `[data]` section of a run configuration.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::corpus::CorpusFiles;
use crate::plan::BatchSize;
use crate::store::LengthFilter;
use crate::tokenizer::TokenizerSettings;

/// Where the corpora are and how to turn them into batches. Unknown keys are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    /// Training split.
    pub train: CorpusFiles,
    /// Validation split.
    pub valid: CorpusFiles,
    /// Optional test split.
    #[serde(default)]
    pub test: Option<CorpusFiles>,
    /// Subword tokenizer training.
    #[serde(default)]
    pub tokenizer: TokenizerSettings,
    /// Length filtering (applied to every split).
    #[serde(default)]
    pub filter: LengthFilter,
    /// Batch size for training and validation.
    #[serde(default)]
    pub batch: BatchSize,
    /// Directory of the encoded-corpus cache; default: `cache/` in the run directory.
    #[serde(default)]
    pub cache_dir: Option<PathBuf>,
}
