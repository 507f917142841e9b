//! `rosetta bench-decode`: decoding speed of a trained checkpoint on a source file.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use rosetta_eval::read_segments;
use rosetta_infer::{TranslateOptions, Translator};
use rosetta_model::burn::module::Module;
use rosetta_model::{Quantization, parse_device};

use crate::output::outln;
use crate::search_args::BeamRules;

/// Arguments of `rosetta bench-decode`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A checkpoint directory, or a run directory.
    #[arg(long)]
    checkpoint: PathBuf,
    /// Source sentences, one per line.
    #[arg(long)]
    src: PathBuf,
    /// Beam sizes to measure (1 = greedy).
    #[arg(long, value_delimiter = ',', default_value = "1,5")]
    beams: Vec<usize>,
    /// Batch sizes to measure.
    #[arg(long, value_delimiter = ',', default_value = "1,64")]
    batch_sizes: Vec<usize>,
    /// Use only the first N sentences for batch size 1 (0 = all).
    #[arg(long, default_value_t = 100)]
    batch1_limit: usize,
    /// How beam search scores and ends hypotheses.
    #[command(flatten)]
    rules: BeamRules,
    /// Force every output to exactly N tokens before its EOS (EOS forbidden before, forced at
    /// N), so that systems compared on random or untrained weights do the same work.
    #[arg(long)]
    forced_len: Option<usize>,
    /// Device to run on.
    #[arg(long, default_value = "flex")]
    device: String,
    #[command(flatten)]
    quantize: crate::ensemble::QuantizeArgs,
}

/// Translates the source once per (beam, batch size) and prints a table.
pub fn run(args: &Args) -> Result<()> {
    let device = parse_device(&args.device)?;
    let mut translator = Translator::load(&args.checkpoint, &device)
        .with_context(|| format!("cannot load {}", args.checkpoint.display()))?;
    translator.quantize(args.quantize.quantize)?;
    crate::translate::bilingual_only(&translator, "bench-decode")?;
    let lines =
        read_segments(&args.src).with_context(|| format!("reading {}", args.src.display()))?;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    outln!(
        "{}: {} sentences, device {}, {}, {threads} threads",
        args.src.display(),
        lines.len(),
        args.device,
        args.quantize.quantize
    );
    if args.quantize.quantize == Quantization::Int8 {
        let mib = |bytes: usize| bytes as f64 / (1024.0 * 1024.0);
        let model = &translator.model;
        outln!(
            "int8 forms of the linear maps: {:.2} MiB (the float32 model: {:.2} MiB of parameters)",
            mib(model.int8_size_bytes()),
            mib(4 * model.num_params())
        );
    }
    outln!("| search | batch | sentences | seconds | sentences/s | target tokens/s |");
    outln!("| --- | --- | --- | --- | --- | --- |");
    for &beam in &args.beams {
        for &batch in &args.batch_sizes {
            let n = if batch == 1 && args.batch1_limit > 0 {
                args.batch1_limit.min(lines.len())
            } else {
                lines.len()
            };
            let mut options = args.rules.apply(TranslateOptions {
                beam,
                batch_size: batch,
                ..translator.decoding.clone()
            });
            if let Some(len) = args.forced_len {
                options.min_len = len;
                options.max_len_a = 0.0;
                options.max_len_b = len;
            }
            let start = Instant::now();
            let out = translator.translate_lines(&lines[..n], &options)?;
            let seconds = start.elapsed().as_secs_f64();
            // Target tokens produced, EOS included, as in training throughput.
            let tokens: usize = out.iter().map(|t| t.target_tokens.len() + 1).sum();
            let search = if beam == 1 {
                "greedy".to_string()
            } else {
                format!("beam {beam}")
            };
            outln!(
                "| {search} | {batch} | {n} | {seconds:.1} | {:.1} | {:.0} |",
                n as f64 / seconds,
                tokens as f64 / seconds
            );
        }
    }
    Ok(())
}
