//! `rosetta bench-train`: training throughput of a configuration's model on a device.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rosetta_model::parse_device;
use rosetta_train::RunConfig;
use rosetta_train::bench::{BenchSettings, bench_train};

use crate::output::outln;

/// Arguments of `rosetta bench-train`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The run configuration whose model, label smoothing, clipping and Adam settings are used.
    #[arg(long)]
    config: PathBuf,
    /// Device to run on (default: the configuration's `training.device`).
    #[arg(long)]
    device: Option<String>,
    /// Steps timed.
    #[arg(long, default_value_t = 20)]
    steps: usize,
    /// Steps run before timing starts.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Sentence pairs per batch.
    #[arg(long, default_value_t = 64)]
    sentences: usize,
    /// Source tokens per sentence (EOS included).
    #[arg(long, default_value_t = 24)]
    source_len: usize,
    /// Target tokens per sentence (BOS or EOS included).
    #[arg(long, default_value_t = 24)]
    target_len: usize,
    /// Vocabulary size of both sides (default: the configuration's tokenizer `vocab_size`).
    #[arg(long)]
    vocab: Option<usize>,
    /// Also write the full report (every step's time) as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// Runs the benchmark and prints its summary.
pub fn run(args: &Args) -> Result<()> {
    let config = RunConfig::load(&args.config)?;
    let device_name = args
        .device
        .clone()
        .unwrap_or_else(|| config.training.device.clone());
    let device = parse_device(&device_name)?;
    let vocab = args.vocab.unwrap_or(config.data.tokenizer.vocab_size);
    let model = config.model_config(vocab, vocab)?;
    let t = &config.training;
    let settings = BenchSettings {
        model: model.clone(),
        sentences: args.sentences,
        source_len: args.source_len,
        target_len: args.target_len,
        steps: args.steps,
        warmup: args.warmup,
        label_smoothing: t.label_smoothing,
        clip_norm: t.clip_norm,
        optimizer: t.optimizer,
        // A rate from the middle of the schedule; the step costs the same at any rate.
        learning_rate: t.schedule.learning_rate(model.d_model, 4000),
        seed: t.seed,
    };
    let report = bench_train(&settings, &device)
        .with_context(|| format!("benchmarking {}", args.config.display()))?;
    let (min, median, max) = report.tokens_per_second_summary();
    let step_ms = {
        let mut s = report.step_seconds.clone();
        s.sort_by(f64::total_cmp);
        1000.0 * s.get(s.len() / 2).copied().unwrap_or(0.0)
    };
    outln!(
        "rosetta {device_name}: d_model {} {}+{} layers, vocab {vocab}, batch {}x{}->{}, {} threads",
        settings.model.d_model,
        settings.model.n_encoder_layers,
        settings.model.n_decoder_layers,
        settings.sentences,
        settings.source_len,
        settings.target_len,
        report.threads
    );
    outln!(
        "target tokens/s: median {median:.0} (min {min:.0}, max {max:.0}) over {} steps; median step {step_ms:.1} ms",
        report.step_seconds.len()
    );
    match report.peak_rss_bytes {
        Some(bytes) => outln!("peak memory (RSS): {:.0} MiB", bytes as f64 / 1048576.0),
        None => outln!("peak memory (RSS): not available on this system"),
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
