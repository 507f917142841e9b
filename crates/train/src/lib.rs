//! # rosetta-train
//!
//! Training of Rosetta's Transformer translators: the run configuration ([`config`]), the
//! objective ([`SequenceCrossEntropy`]: cross-entropy over target tokens that ignores padding,
//! with label smoothing, exactly as PyTorch's `cross_entropy(ignore_index, label_smoothing)`),
//! the learning-rate schedules ([`LrSchedule`]), global gradient-norm clipping ([`clip`]),
//! atomic, verified checkpoints ([`checkpoint`]), metrics and logs ([`run_log`]), the loop itself
//! ([`train`]), which resumes exactly where it stopped, translation with a checkpoint
//! ([`Translator`]) and sacreBLEU-exact scoring ([`metrics`]: BLEU, chrF).

pub mod average;
pub mod bench;
pub mod checkpoint;
pub mod clip;
pub mod config;
pub mod device;
pub mod error;
pub mod loss;
pub mod metrics;
mod rng;
pub mod run_log;
pub mod schedule;
pub mod step;
pub mod trainer;
pub mod translate;

pub use config::{Overrides, RunConfig};
pub use error::TrainError;
pub use loss::{LossOutput, SequenceCrossEntropy};
pub use metrics::{BleuScore, ChrfScore, corpus_bleu, corpus_chrf};
pub use schedule::{LrSchedule, noam_learning_rate, schedule_curve};
pub use trainer::{Resume, StopReason, TrainOptions, TrainSummary, train};
pub use translate::{AttentionMap, Translation, Translator};
