//! `rosetta average`: average the parameters of several checkpoints into one model.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rosetta_infer::average::{average, last_checkpoints};
use rosetta_infer::checkpoint;
use rosetta_infer::find_tokenizers;
use rosetta_model::parse_device;

use crate::output::outln;

/// Arguments of `rosetta average`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory whose newest checkpoints to average (with `--last`).
    #[arg(long, requires = "last", conflicts_with = "checkpoints")]
    run: Option<PathBuf>,
    /// How many of the run's newest step checkpoints to average.
    #[arg(long)]
    last: Option<usize>,
    /// Checkpoint directories to average.
    #[arg(long, num_args = 1..)]
    checkpoints: Vec<PathBuf>,
    /// Directory for the averaged model (a model-only checkpoint, with the tokenizer files).
    #[arg(long)]
    output: PathBuf,
}

/// Averages, writes the checkpoint and copies the tokenizer(s) beside it.
pub fn run(args: &Args) -> Result<()> {
    let dirs = match (&args.run, args.last) {
        (Some(run), Some(n)) => last_checkpoints(run, n)?,
        _ if !args.checkpoints.is_empty() => args.checkpoints.clone(),
        _ => bail!("give --run DIR --last N, or --checkpoints DIR..."),
    };
    let device = parse_device("flex")?;
    let (model, state) = average(&dirs, &device)?;
    checkpoint::save(&args.output, &model, None, &state)?;
    let tokenizers = find_tokenizers(&dirs[0])
        .with_context(|| format!("no tokenizer files beside {}", dirs[0].display()))?;
    tokenizers.save(&args.output)?;
    outln!(
        "averaged {} checkpoints into {}:",
        dirs.len(),
        args.output.display()
    );
    for dir in &dirs {
        outln!("  {}", dir.display());
    }
    Ok(())
}
