//! The `[data]` section of a run configuration.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::corpus::CorpusFiles;
use crate::plan::BatchSize;
use crate::store::LengthFilter;
use crate::tokenizer::TokenizerSettings;

/// Where the corpora are and how to turn them into batches. Unknown keys are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    /// Training corpus, or several with weights:
    /// `train = [{ source = "a.en", target = "a.de", weight = 2.0 }, { tsv = "b.tsv" }]`.
    pub train: TrainingCorpora,
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
    /// Optimizer steps whose pairs a background thread reads ahead of training (0: read when
    /// the step needs them). The same pairs in the same order either way.
    #[serde(default)]
    pub prefetch: usize,
}

/// The training corpus: one, or several each with a weight (see [`crate::mix::CorpusMix`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TrainingCorpora {
    /// One corpus, every pair once per epoch.
    One(CorpusFiles),
    /// Several corpora, each validated and cached on its own, mixed by weight.
    Several(Vec<WeightedCorpus>),
}

impl From<CorpusFiles> for TrainingCorpora {
    fn from(files: CorpusFiles) -> Self {
        TrainingCorpora::One(files)
    }
}

impl TrainingCorpora {
    /// Every corpus with its weight (1 for a single corpus), relative paths resolved against
    /// `base`.
    pub fn resolved(&self, base: &Path) -> Vec<(CorpusFiles, f64)> {
        match self {
            TrainingCorpora::One(files) => vec![(files.resolved(base), 1.0)],
            TrainingCorpora::Several(list) => list
                .iter()
                .map(|c| (c.files().resolved(base), c.weight()))
                .collect(),
        }
    }

    /// The weights, when there are several corpora (what a resumed run must keep).
    pub fn weights(&self) -> Option<Vec<f64>> {
        match self {
            TrainingCorpora::One(_) => None,
            TrainingCorpora::Several(list) => {
                Some(list.iter().map(WeightedCorpus::weight).collect())
            }
        }
    }
}

/// One of several training corpora: its files and how often its pairs are offered per epoch
/// relative to its size (default 1: each pair once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum WeightedCorpus {
    /// Two aligned files.
    Parallel {
        /// Source-language file.
        source: PathBuf,
        /// Target-language file.
        target: PathBuf,
        /// Pairs offered per epoch, as a multiple of the corpus's size.
        #[serde(default = "one")]
        weight: f64,
    },
    /// One file of `source<TAB>target` lines.
    Tsv {
        /// The pair file.
        tsv: PathBuf,
        /// Pairs offered per epoch, as a multiple of the corpus's size.
        #[serde(default = "one")]
        weight: f64,
    },
}

fn one() -> f64 {
    1.0
}

impl WeightedCorpus {
    /// The corpus's files.
    pub fn files(&self) -> CorpusFiles {
        match self {
            WeightedCorpus::Parallel { source, target, .. } => CorpusFiles::Parallel {
                source: source.clone(),
                target: target.clone(),
            },
            WeightedCorpus::Tsv { tsv, .. } => CorpusFiles::Tsv { tsv: tsv.clone() },
        }
    }

    /// The corpus's weight.
    pub fn weight(&self) -> f64 {
        match self {
            WeightedCorpus::Parallel { weight, .. } | WeightedCorpus::Tsv { weight, .. } => *weight,
        }
    }
}
