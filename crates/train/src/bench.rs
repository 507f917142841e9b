//! The training benchmark: N optimizer steps of a model on fixed-shape synthetic batches,
//! timed one by one, through exactly the step the trainer takes ([`optimizer_step`]).
//!
//! Synthetic batches (random ids, no padding) make the work per step identical on every run
//! and in every framework, so that `scripts/bench_train_torch.py` can run the same steps in
//! PyTorch and the two can be compared as a ratio.

use std::time::Instant;

use rosetta_data::rng::SplitMix64;
use rosetta_data::{PairTokens, TranslationBatcher};
use rosetta_model::TransformerConfig;
use rosetta_model::burn::data::dataloader::batcher::Batcher;
use rosetta_model::burn::tensor::Device;
pub use rosetta_model::device::rayon_threads;
use serde::Serialize;

use crate::config::OptimizerConfig;
use crate::error::{ConfigError, TrainError};
use crate::loss::SequenceCrossEntropy;
use crate::step::{StepSettings, optimizer_step};

/// What to measure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchSettings {
    /// The model.
    pub model: TransformerConfig,
    /// Sentence pairs per batch.
    pub sentences: usize,
    /// Source length in tokens, EOS included.
    pub source_len: usize,
    /// Target length in tokens, BOS (input) / EOS (output) included.
    pub target_len: usize,
    /// Steps timed.
    pub steps: usize,
    /// Steps run first and not timed (allocation, caches, kernel compilation).
    pub warmup: usize,
    /// Label smoothing of the loss.
    pub label_smoothing: f64,
    /// Global-norm clipping (0 = off; the norm is computed either way, as in training).
    pub clip_norm: f64,
    /// Adam's settings.
    pub optimizer: OptimizerConfig,
    /// Learning rate (constant: the schedule costs nothing).
    pub learning_rate: f64,
    /// Seed of the parameters, the batches and dropout.
    pub seed: u64,
}

/// What was measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    /// The settings measured.
    pub settings: BenchSettings,
    /// The device, as Burn names it.
    pub device: String,
    /// Threads available to the CPU backends (rayon's pool).
    pub threads: usize,
    /// Seconds of each timed step.
    pub step_seconds: Vec<f64>,
    /// Target tokens per step (the loss is over these).
    pub target_tokens_per_step: usize,
    /// Peak resident memory of the process during the steps, in bytes (Linux only).
    pub peak_rss_bytes: Option<u64>,
    /// The mean loss of each timed step (shows the steps really train).
    pub losses: Vec<f64>,
}

impl BenchReport {
    /// Target tokens per second of each timed step.
    pub fn tokens_per_second(&self) -> Vec<f64> {
        self.step_seconds
            .iter()
            .map(|s| self.target_tokens_per_step as f64 / s.max(1e-12))
            .collect()
    }

    /// (minimum, median, maximum) target tokens per second.
    pub fn tokens_per_second_summary(&self) -> (f64, f64, f64) {
        let mut v = self.tokens_per_second();
        v.sort_by(f64::total_cmp);
        if v.is_empty() {
            return (0.0, 0.0, 0.0);
        }
        let median = if v.len() % 2 == 1 {
            v[v.len() / 2]
        } else {
            0.5 * (v[v.len() / 2 - 1] + v[v.len() / 2])
        };
        (v[0], median, v[v.len() - 1])
    }
}

/// Runs `settings.warmup + settings.steps` optimizer steps on `device` and times the last
/// `steps` of them.
pub fn bench_train(settings: &BenchSettings, device: &Device) -> Result<BenchReport, TrainError> {
    if settings.sentences == 0 || settings.source_len < 1 || settings.target_len < 2 {
        return Err(ConfigError::unkeyed(
            "a batch needs at least one sentence, a source of 1 token and a target of 2",
        )
        .in_file("bench-train"));
    }
    let positions = settings.model.max_positions;
    if settings.source_len > positions || settings.target_len > positions {
        return Err(ConfigError::unkeyed(format!(
            "lengths {} / {} exceed the model's max_positions {positions}",
            settings.source_len, settings.target_len
        ))
        .in_file("bench-train"));
    }
    let train_device = device.clone().autodiff();
    train_device.seed(settings.seed);
    let mut model = settings.model.init(&train_device)?;
    let mut optimizer = settings.optimizer.adam().init();
    let loss = SequenceCrossEntropy::new(settings.model.pad_id, settings.label_smoothing);
    let pairs = synthetic_pairs(settings);
    let target_tokens = settings.sentences * (settings.target_len - 1);

    let mut step_seconds = Vec::with_capacity(settings.steps);
    let mut losses = Vec::with_capacity(settings.steps);
    reset_peak_rss();
    for step in 1..=(settings.warmup + settings.steps) as u64 {
        let start = Instant::now();
        let batch = TranslationBatcher::default().batch(pairs.clone(), &train_device);
        let out = optimizer_step(
            model,
            &mut optimizer,
            &loss,
            &train_device,
            [(settings.seed.wrapping_add(step), batch)],
            StepSettings {
                step,
                learning_rate: settings.learning_rate,
                clip_norm: settings.clip_norm,
                group_tokens: target_tokens,
            },
        )?;
        model = out.model;
        // The loss and norm were read back inside the step; wait for the parameter update too
        // (asynchronous backends), so each step's time is its own.
        device.sync().map_err(|e| TrainError::Device {
            name: format!("{device:?}"),
            reason: format!("synchronising after step {step}: {e:?}"),
        })?;
        if step as usize > settings.warmup {
            step_seconds.push(start.elapsed().as_secs_f64());
            losses.push(out.sums.mean_loss());
        }
    }
    Ok(BenchReport {
        settings: settings.clone(),
        device: format!("{device:?}"),
        threads: rayon_threads(),
        step_seconds,
        target_tokens_per_step: target_tokens,
        peak_rss_bytes: peak_rss(),
        losses,
    })
}

/// Random pairs of the requested lengths (ids above the special tokens, no padding).
fn synthetic_pairs(settings: &BenchSettings) -> Vec<PairTokens> {
    let mut rng = SplitMix64::new(settings.seed);
    let mut ids = |len: usize, vocab: usize| -> Vec<u32> {
        (0..len)
            .map(|_| 4 + rng.below(vocab.saturating_sub(4).max(1) as u64) as u32)
            .collect()
    };
    (0..settings.sentences)
        .map(|_| PairTokens {
            source: ids(settings.source_len - 1, settings.model.source_vocab_size),
            target: ids(settings.target_len - 1, settings.model.target_vocab_size),
        })
        .collect()
}

/// Resets the kernel's peak-RSS counter of this process (Linux), so that the peak read later
/// covers only what follows.
fn reset_peak_rss() {
    // Writing 5 to clear_refs resets VmHWM (Linux ≥ 4.0); elsewhere the peak covers the
    // whole process, which is still an upper bound.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The peak resident set size of this process (`VmHWM`), in bytes.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> BenchSettings {
        BenchSettings {
            model: TransformerConfig::new(30, 31)
                .with_d_model(16)
                .with_n_heads(2)
                .with_d_ff(32)
                .with_n_encoder_layers(1)
                .with_n_decoder_layers(1)
                .with_max_positions(16),
            sentences: 4,
            source_len: 5,
            target_len: 6,
            steps: 3,
            warmup: 1,
            label_smoothing: 0.1,
            clip_norm: 0.0,
            optimizer: OptimizerConfig::default(),
            learning_rate: 1e-2,
            seed: 3,
        }
    }

    #[test]
    fn times_the_requested_steps_and_trains() {
        let report = bench_train(&tiny(), &Device::flex()).expect("runs");
        assert_eq!(report.step_seconds.len(), 3);
        assert_eq!(report.target_tokens_per_step, 4 * 5);
        let (min, median, max) = report.tokens_per_second_summary();
        assert!(min > 0.0 && min <= median && median <= max);
        // The same batch three times at a large learning rate: the loss must fall.
        assert!(
            report.losses[2] < report.losses[0],
            "losses {:?}",
            report.losses
        );
        if cfg!(target_os = "linux") {
            assert!(report.peak_rss_bytes.is_some_and(|b| b > 1 << 20));
        }
    }

    #[test]
    fn refuses_lengths_beyond_positions() {
        let mut settings = tiny();
        settings.target_len = 17;
        let err = bench_train(&settings, &Device::flex()).unwrap_err();
        assert!(err.to_string().contains("max_positions 16"), "{err}");
    }

    #[test]
    fn synthetic_pairs_avoid_special_ids() {
        let pairs = synthetic_pairs(&tiny());
        assert_eq!(pairs.len(), 4);
        for p in &pairs {
            assert_eq!(p.source.len(), 4);
            assert_eq!(p.target.len(), 5);
            assert!(p.source.iter().all(|&i| (4..30).contains(&i)));
            assert!(p.target.iter().all(|&i| (4..31).contains(&i)));
        }
    }
}
