//! `rosetta prepare`: train the tokenizer(s) and encode every corpus into the cache, without
//! training (fairseq's `fairseq-preprocess`, OpenNMT's `onmt_build_vocab`). A later
//! `rosetta train` with the same configuration starts from the cache.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rosetta_train::{Overrides, RunConfig, TrainOptions, prepare_data};

use crate::output::outln;

/// Arguments of `rosetta prepare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The run configuration (TOML).
    #[arg(long)]
    config: PathBuf,
    /// Run directory (overrides `output_dir`): where the tokenizer(s) and, unless
    /// `data.cache_dir` says otherwise, the cache go.
    #[arg(long)]
    output: Option<PathBuf>,
}

/// Prepares the run's data and prints what each stage did.
pub fn run(args: &Args) -> Result<()> {
    let mut config = RunConfig::load(&args.config)?;
    config.apply(&Overrides {
        output_dir: args.output.clone(),
        ..Overrides::default()
    })?;
    let options = TrainOptions {
        progress: true,
        ..TrainOptions::default()
    };
    let (data, stages) = prepare_data(&config, &options)
        .with_context(|| format!("preparing the data of {} failed", args.config.display()))?;
    for line in stages {
        outln!("{line}");
    }
    outln!("{data}");
    let bytes: u64 = data.train.corpora().map(|(c, _)| c.disk_bytes()).sum();
    outln!(
        "encoded training pairs: {} on disk ({:.1} MiB) in {}",
        data.train.len(),
        bytes as f64 / (1u64 << 20) as f64,
        config.output_dir.display()
    );
    Ok(())
}
