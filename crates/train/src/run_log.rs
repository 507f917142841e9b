//! What a run reports: per-step and validation metrics as JSON lines (`metrics.jsonl`) and a
//! human-readable log (`train.log`) in the run directory.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::TrainError;
use crate::tensorboard::EventWriter;

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
        /// Seconds of training so far, over every session of the run (absent in runs from
        /// before 2026-12-01).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seconds: Option<f64>,
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
        /// Seconds of training before this validation, over every session of the run (absent
        /// in runs from before 2026-12-01).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seconds: Option<f64>,
        /// A multilingual run's loss per direction (`en-de`); `loss` is then their mean, each
        /// direction counting once whatever its size. Absent for a bilingual run.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        directions: std::collections::BTreeMap<String, f64>,
        /// A multilingual run's greedy BLEU per direction, each on the direction's first
        /// `bleu_sentences` pairs (`bleu` is then their mean). Absent for a bilingual run or
        /// without BLEU.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        directions_bleu: std::collections::BTreeMap<String, f64>,
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

/// Appends to `metrics.jsonl` and `train.log` in the run directory, and to a TensorBoard event
/// file when asked.
pub struct RunLog {
    metrics: File,
    log: File,
    log_path: PathBuf,
    metrics_path: PathBuf,
    start: Instant,
    /// The run directory whose `tensorboard/` gets an event file at the first record (not
    /// before: a run refused at start-up leaves none), when TensorBoard files are asked for.
    tensorboard: Option<PathBuf>,
    events: Option<EventWriter>,
}

impl RunLog {
    /// Opens (appending) the two files in `run_dir`; with `tensorboard`, a new event file in
    /// `run_dir/tensorboard/` follows at the first record. A last line that a killed run left unfinished (no line end)
    /// is cut off first, so that the next line starts clean and `metrics.jsonl` stays one JSON
    /// record per line.
    pub fn open(run_dir: &Path, tensorboard: bool) -> Result<Self, TrainError> {
        let open = |path: &Path| {
            drop_partial_line(path)?;
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
            tensorboard: tensorboard.then(|| run_dir.to_path_buf()),
            events: None,
        })
    }

    /// Appends one metrics record.
    pub fn record(&mut self, record: &MetricsRecord) -> Result<(), TrainError> {
        let line = serde_json::to_string(record).map_err(|e| TrainError::Io {
            path: self.metrics_path.clone(),
            source: std::io::Error::other(e),
        })?;
        // One write of the whole line, end included: a kill cannot split it into two writes.
        let mut line = line;
        line.push('\n');
        self.metrics
            .write_all(line.as_bytes())
            .map_err(TrainError::io(&self.metrics_path))?;
        if self.events.is_none()
            && let Some(run_dir) = &self.tensorboard
        {
            self.events = Some(EventWriter::create(run_dir)?);
        }
        match &mut self.events {
            Some(events) => events.record(record),
            None => Ok(()),
        }
    }

    /// Appends a line to `train.log`, prefixed with the seconds since the run (re)started, and
    /// returns the line for display.
    pub fn line(&mut self, message: &str) -> Result<String, TrainError> {
        let line = format!("[{:>8.1}s] {message}", self.start.elapsed().as_secs_f64());
        self.log
            .write_all(format!("{line}\n").as_bytes())
            .map_err(TrainError::io(&self.log_path))?;
        Ok(line)
    }
}

/// Cuts `path` back to its last line end, if its last line has none (a run killed while
/// writing it); a missing or empty file is left alone.
fn drop_partial_line(path: &Path) -> Result<(), TrainError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(TrainError::io(path)(e)),
    };
    let len = file.metadata().map_err(TrainError::io(path))?.len();
    if len == 0 {
        return Ok(());
    }
    // Only the last byte is read, unless it shows a partial line (rare: after a kill).
    let mut last = [0u8];
    file.seek(SeekFrom::Start(len - 1))
        .and_then(|_| file.read_exact(&mut last))
        .map_err(TrainError::io(path))?;
    if last[0] == b'\n' {
        return Ok(());
    }
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(TrainError::io(path))?;
    let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    file.set_len(keep as u64).map_err(TrainError::io(path))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_left_unfinished_by_a_kill_is_cut_before_appending() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("metrics.jsonl");
        std::fs::write(&path, "{\"a\":1}\n{\"b\":").expect("write");
        drop_partial_line(&path).expect("repair");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "{\"a\":1}\n");
        // A whole file, an empty one and a missing one are left alone.
        drop_partial_line(&path).expect("repair");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "{\"a\":1}\n");
        std::fs::write(&path, "").expect("write");
        drop_partial_line(&path).expect("repair");
        drop_partial_line(&dir.path().join("missing")).expect("missing is fine");
        // A first line with no end at all leaves an empty file.
        std::fs::write(&path, "{\"half").expect("write");
        drop_partial_line(&path).expect("repair");
        assert_eq!(std::fs::read(&path).expect("read"), b"");
    }
}
