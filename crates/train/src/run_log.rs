//! What a run reports: per-step and validation metrics as JSON lines (`metrics.jsonl`) and a
//! human-readable log (`train.log`) in the run directory.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::TrainError;

/// One line of `metrics.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum MetricsRecord {
    /// Training metrics over the steps since the previous record.
    Train {
        /// Optimizer step.
        step: u64,
        /// Epoch (from 0).
        epoch: u64,
        /// Mean (label-smoothed) training loss per target token.
        loss: f64,
        /// Perplexity, `exp` of the unsmoothed negative log-likelihood per token.
        perplexity: f64,
        /// Share of target tokens predicted exactly (arg-max).
        accuracy: f64,
        /// Learning rate of the last step.
        learning_rate: f64,
        /// Global gradient norm before clipping, last step.
        grad_norm: f64,
        /// Target tokens per second of wall time.
        target_tokens_per_second: f64,
    },
    /// A validation pass.
    Valid {
        /// Optimizer step.
        step: u64,
        /// Epoch (from 0).
        epoch: u64,
        /// Mean negative log-likelihood per target token (unsmoothed).
        loss: f64,
        /// `exp(loss)`.
        perplexity: f64,
        /// Share of target tokens predicted exactly.
        accuracy: f64,
        /// Greedy BLEU on the first `bleu_sentences` validation pairs, if computed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bleu: Option<f64>,
        /// Whether this is the best validation so far (by `best_by`).
        best: bool,
    },
}

/// Sums over batches, turned into means when reported.
#[derive(Debug, Clone, Copy, Default)]
pub struct Accumulated {
    /// Summed (smoothed) loss.
    pub loss: f64,
    /// Summed negative log-likelihood.
    pub nll: f64,
    /// Target tokens.
    pub tokens: u64,
    /// Correct target tokens.
    pub correct: u64,
}

impl Accumulated {
    /// Mean loss per token.
    pub fn mean_loss(&self) -> f64 {
        self.loss / self.tokens.max(1) as f64
    }

    /// Mean negative log-likelihood per token.
    pub fn mean_nll(&self) -> f64 {
        self.nll / self.tokens.max(1) as f64
    }

    /// Token accuracy.
    pub fn accuracy(&self) -> f64 {
        self.correct as f64 / self.tokens.max(1) as f64
    }
}

/// Appends to `metrics.jsonl` and `train.log` in the run directory.
pub struct RunLog {
    metrics: File,
    log: File,
    log_path: PathBuf,
    metrics_path: PathBuf,
    start: Instant,
}

impl RunLog {
    /// Opens (appending) the two files in `run_dir`.
    pub fn open(run_dir: &Path) -> Result<Self, TrainError> {
        let open = |path: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(TrainError::io(path))
        };
        let metrics_path = run_dir.join("metrics.jsonl");
        let log_path = run_dir.join("train.log");
        Ok(Self {
            metrics: open(&metrics_path)?,
            log: open(&log_path)?,
            log_path,
            metrics_path,
            start: Instant::now(),
        })
    }

    /// Appends one metrics record.
    pub fn record(&mut self, record: &MetricsRecord) -> Result<(), TrainError> {
        let line = serde_json::to_string(record).map_err(|e| TrainError::Io {
            path: self.metrics_path.clone(),
            source: std::io::Error::other(e),
        })?;
        writeln!(self.metrics, "{line}").map_err(TrainError::io(&self.metrics_path))
    }

    /// Appends a line to `train.log`, prefixed with the seconds since the run (re)started, and
    /// returns the line for display.
    pub fn line(&mut self, message: &str) -> Result<String, TrainError> {
        let line = format!("[{:>8.1}s] {message}", self.start.elapsed().as_secs_f64());
        writeln!(self.log, "{line}").map_err(TrainError::io(&self.log_path))?;
        Ok(line)
    }
}

/// Reads every record of a `metrics.jsonl`.
pub fn read_metrics(path: &Path) -> Result<Vec<MetricsRecord>, TrainError> {
    let text = std::fs::read_to_string(path).map_err(TrainError::io(path))?;
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| TrainError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other(format!("line {}: {e}", i + 1)),
            })
        })
        .collect()
}
