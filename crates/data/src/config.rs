//! The `[data]` section of a run configuration.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::corpus::CorpusFiles;
use crate::direction::{self, Direction, DirectionSplits};
use crate::error::DataError;
use crate::plan::BatchSize;
use crate::store::LengthFilter;
use crate::tokenizer::TokenizerSettings;

/// Where the corpora are and how to turn them into batches. Unknown keys are refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataConfig {
    /// Training corpus, or several with weights:
    /// `train = [{ source = "a.en", target = "a.de", weight = 2.0 }, { tsv = "b.tsv" }]`.
    /// Required unless the run has `directions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<TrainingCorpora>,
    /// Validation split. Required unless the run has `directions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid: Option<CorpusFiles>,
    /// Optional test split (bilingual runs).
    #[serde(default)]
    pub test: Option<CorpusFiles>,
    /// Several translation directions in one model (`[[data.directions]]`), each with its own
    /// `train` and `valid`, instead of `train` and `valid`: every source starts with its
    /// direction's target-language tag (`>>de<<`; see [`crate::direction`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directions: Vec<Direction>,
    /// Sampling temperature over the directions (`1`: each in proportion to its pairs, larger:
    /// flatter; see [`direction::temperature_multipliers`]); unset, each corpus is offered by its
    /// own `weight` alone. Only with `directions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
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

impl DataConfig {
    /// A bilingual configuration of `train` and `valid`, every other setting at its default.
    pub fn bilingual(train: impl Into<TrainingCorpora>, valid: CorpusFiles) -> Self {
        Self {
            train: Some(train.into()),
            valid: Some(valid),
            test: None,
            directions: Vec::new(),
            temperature: None,
            tokenizer: TokenizerSettings::default(),
            filter: LengthFilter::default(),
            batch: BatchSize::default(),
            cache_dir: None,
            prefetch: 0,
        }
    }

    /// The run's splits by direction, paths resolved against `base`: the directions of a
    /// multilingual run, or the one untagged direction of `train` and `valid`. Refuses, naming
    /// the key, a configuration that has neither or both, a temperature without directions or
    /// out of range, a test split with directions, the same direction twice, and a corpus
    /// weight out of range.
    pub fn splits(&self, base: &Path) -> Result<Vec<DirectionSplits>, DataError> {
        let refuse = |key: &'static str, reason: &str| {
            Err(DataError::InvalidSetting {
                key,
                reason: reason.into(),
            })
        };
        let splits = if self.directions.is_empty() {
            if self.temperature.is_some() {
                return refuse(
                    "data.temperature",
                    "samples between directions: give `[[data.directions]]`, or remove it",
                );
            }
            match (&self.train, &self.valid) {
                (Some(train), Some(valid)) => vec![DirectionSplits {
                    direction: None,
                    train: train.resolved(base),
                    valid: valid.resolved(base),
                }],
                (None, _) => {
                    return refuse(
                        "data.train",
                        "is missing: give the training corpus, or `[[data.directions]]` each with its own `train` and `valid`",
                    );
                }
                (_, None) => {
                    return refuse(
                        "data.valid",
                        "is missing: give the validation split, or `[[data.directions]]` each with its own `train` and `valid`",
                    );
                }
            }
        } else {
            for (key, given) in [
                ("data.train", self.train.is_some()),
                ("data.valid", self.valid.is_some()),
                ("data.test", self.test.is_some()),
            ] {
                if given {
                    return refuse(
                        key,
                        "belongs to a bilingual run: with `[[data.directions]]`, each direction has its own `train` and `valid` (and each direction is tested with `rosetta eval --target-lang`)",
                    );
                }
            }
            if let Some(t) = self.temperature {
                direction::check_temperature(t)?;
            }
            direction::check_distinct(&self.directions)?;
            direction::resolve(&self.directions, base)
        };
        for split in &splits {
            for (i, (files, weight)) in split.train.iter().enumerate() {
                check_weight(split.label(), i, files, *weight)?;
            }
        }
        Ok(splits)
    }
}

/// Refuses a training corpus weight out of range, naming the corpus (and its direction).
fn check_weight(
    direction: Option<String>,
    index: usize,
    files: &CorpusFiles,
    weight: f64,
) -> Result<(), DataError> {
    if weight.is_finite() && weight > 0.0 && weight <= MAX_WEIGHT {
        return Ok(());
    }
    let names: Vec<String> = files
        .paths()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let whose = direction.map(|d| format!(" of {d}")).unwrap_or_default();
    Err(DataError::InvalidSetting {
        key: "data.train.weight",
        reason: format!(
            "training corpus {}{whose} ({}) has weight {weight}; weights must be above 0 and at most {MAX_WEIGHT}",
            index + 1,
            names.join(" + ")
        ),
    })
}

/// The largest weight of a training corpus (after any temperature): each pair offered at most
/// this many times per epoch.
pub const MAX_WEIGHT: f64 = 1000.0;

/// The training corpus: one, or several each with a weight (see [`crate::mix::CorpusMix`]).
/// Read as a table (one corpus) or a list of tables (several), each refused with a message of
/// its own that names the key at fault.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[serde(untagged, try_from = "RawCorpus")]
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

/// A corpus table as written, every key optional, before it is checked to be one of the shapes
/// a corpus can take.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCorpus {
    source: Option<PathBuf>,
    target: Option<PathBuf>,
    tsv: Option<PathBuf>,
    weight: Option<f64>,
}

/// What a corpus table must be, said when it is not.
const CORPUS_SHAPES: &str = "a corpus is `{ source = \"FILE\", target = \"FILE\" }` (two aligned files) or `{ tsv = \"FILE\" }`";

impl TryFrom<RawCorpus> for WeightedCorpus {
    type Error = String;

    fn try_from(raw: RawCorpus) -> Result<Self, String> {
        let weight = raw.weight.unwrap_or_else(one);
        match (raw.source, raw.target, raw.tsv) {
            (Some(source), Some(target), None) => Ok(WeightedCorpus::Parallel {
                source,
                target,
                weight,
            }),
            (None, None, Some(tsv)) => Ok(WeightedCorpus::Tsv { tsv, weight }),
            (Some(_), None, None) => Err(format!("`target` is missing: {CORPUS_SHAPES}")),
            (None, Some(_), None) => Err(format!("`source` is missing: {CORPUS_SHAPES}")),
            (None, None, None) => Err(format!("no file given: {CORPUS_SHAPES}")),
            _ => Err(format!(
                "`tsv` and `source`/`target` together: {CORPUS_SHAPES}"
            )),
        }
    }
}

impl TryFrom<RawCorpus> for CorpusFiles {
    type Error = String;

    fn try_from(raw: RawCorpus) -> Result<Self, String> {
        if raw.weight.is_some() {
            return Err(
                "`weight` belongs to one of several training corpora (`train = [{ ... weight = 2.0 }, ...]`)"
                    .into(),
            );
        }
        Ok(WeightedCorpus::try_from(raw)?.files())
    }
}

impl<'de> Deserialize<'de> for TrainingCorpora {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = TrainingCorpora;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the training corpus: `{ source = \"FILE\", target = \"FILE\" }` (two aligned files) or `{ tsv = \"FILE\" }`, or a list of such tables each with an optional `weight = NUMBER` (above 0)")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                CorpusFiles::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(TrainingCorpora::One)
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Vec::<WeightedCorpus>::deserialize(serde::de::value::SeqAccessDeserializer::new(
                    seq,
                ))
                .map(TrainingCorpora::Several)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
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
