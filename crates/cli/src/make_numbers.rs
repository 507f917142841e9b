//! `rosetta make-numbers`: (re)generates the number-words corpus in `data/numbers/`.

use std::path::PathBuf;

use crate::numbers::{self, SplitSizes};
use anyhow::Result;

use crate::output::outln;

/// Arguments of `rosetta make-numbers`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory for `{train,valid,test}.{en,fr}`.
    #[arg(long, default_value = "data/numbers")]
    output: PathBuf,
    /// Training pairs (every number below 100 is among them).
    #[arg(long, default_value_t = 20_000)]
    train: usize,
    /// Validation pairs.
    #[arg(long, default_value_t = 500)]
    valid: usize,
    /// Test pairs.
    #[arg(long, default_value_t = 500)]
    test: usize,
    /// Seed of the draw.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Draws the splits and writes the six files.
pub fn run(args: &Args) -> Result<()> {
    let sizes = SplitSizes {
        train: args.train,
        valid: args.valid,
        test: args.test,
    };
    let splits = numbers::draw_splits(sizes, args.seed)?;
    numbers::write_corpus(&args.output, &splits)?;
    outln!(
        "wrote {} train, {} valid, {} test pairs to {}",
        splits.train.len(),
        splits.valid.len(),
        splits.test.len(),
        args.output.display()
    );
    Ok(())
}
