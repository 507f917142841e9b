//! # rosetta-train
//!
//! Training of Rosetta's Transformer translators: the run configuration ([`config`]), the
//! objective ([`SequenceCrossEntropy`]: cross-entropy over target tokens that ignores padding,
//! with label smoothing, exactly as PyTorch's `cross_entropy(ignore_index, label_smoothing)`),
//! the learning-rate schedules ([`LrSchedule`]), global gradient-norm clipping ([`clip`]),
//! metrics and logs ([`run_log`]), the loop itself ([`train`]), which writes atomic, verified
//! checkpoints ([`checkpoint`]: [`rosetta_infer::checkpoint`]'s format with the optimizer's state and
//! the run's position) and resumes exactly where it
//! stopped, and the training-speed benchmark ([`bench`]). Translating with a checkpoint is
//! `rosetta-infer`'s; BLEU and chrF are `rosetta-eval`'s.

pub mod bench;
pub mod checkpoint;
pub mod clip;
pub mod config;
pub mod data_progress;
pub mod device;
pub mod ema;
pub mod embeddings;
pub mod error;
pub mod loss;
pub mod model_section;
pub mod prefetch;
mod rng;
pub mod run_log;
pub mod schedule;
pub mod start;
pub mod step;
pub mod tensorboard;
pub mod trainer;

pub use checkpoint::TrainingState;
pub use config::{Overrides, RunConfig};
pub use error::{ResumeConflict, TrainError};
pub use loss::{LossOutput, SequenceCrossEntropy};
pub use model_section::ModelSection;
pub use schedule::{LrSchedule, noam_learning_rate, schedule_curve};
pub use trainer::{Resume, StopReason, TrainOptions, TrainSummary, prepare_data, train};
