//! # rosetta-train
//!
//! Training of Rosetta's Transformer translators. So far: the training objective,
//! [`SequenceCrossEntropy`], cross-entropy over target tokens that ignores padding, with
//! optional label smoothing, computed exactly as PyTorch's
//! `cross_entropy(ignore_index=pad, label_smoothing=eps)`; and the paper's warm-up learning-rate
//! formula, [`noam_learning_rate`].

pub mod loss;
pub mod metrics;
pub mod schedule;

pub use loss::{LossOutput, SequenceCrossEntropy};
pub use metrics::{BleuScore, ChrfScore, corpus_bleu, corpus_chrf};
pub use schedule::{noam_learning_rate, schedule_curve};
