//! # rosetta-train
//!
//! Training of Rosetta's Transformer translators. So far: the training objective,
//! [`SequenceCrossEntropy`], cross-entropy over target tokens that ignores padding, with
//! optional label smoothing, computed exactly as PyTorch's
//! `cross_entropy(ignore_index=pad, label_smoothing=eps)`.

pub mod loss;

pub use loss::{LossOutput, SequenceCrossEntropy};
