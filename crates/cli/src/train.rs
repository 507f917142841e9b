//! `rosetta train`: train a translator from one configuration file.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use rosetta_train::{Overrides, Resume, RunConfig, TrainOptions, train};

use crate::output::outln;

/// Arguments of `rosetta train`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The run configuration (TOML).
    #[arg(long)]
    config: PathBuf,
    /// Continue the run: from its newest checkpoint, or from the checkpoint (or run directory)
    /// given.
    #[arg(long, num_args = 0..=1, value_name = "CHECKPOINT")]
    #[allow(clippy::option_option)]
    resume: Option<Option<PathBuf>>,
    /// Device to train on (overrides `training.device`).
    #[arg(long)]
    device: Option<String>,
    /// Run directory (overrides `output_dir`).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Stop after this many optimizer steps in total (overrides `training.max_steps`).
    #[arg(long)]
    max_steps: Option<u64>,
    /// Stop after this many minutes of training, resumed sessions included (overrides
    /// `training.max_minutes`).
    #[arg(long)]
    max_minutes: Option<f64>,
    /// Stop after this many epochs (overrides `training.max_epochs`).
    #[arg(long)]
    max_epochs: Option<u64>,
}

/// Loads the configuration, applies overrides, trains, prints the summary.
pub fn run(args: &Args) -> Result<()> {
    let mut config = RunConfig::load(&args.config)?;
    config.apply(&Overrides {
        device: args.device.clone(),
        output_dir: args.output.clone(),
        max_steps: args.max_steps,
        max_epochs: args.max_epochs,
        max_minutes: args.max_minutes,
    })?;
    let resume = match &args.resume {
        None => Resume::No,
        Some(None) => Resume::Latest,
        Some(Some(path)) => Resume::From(path.clone()),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            eprintln!("second interrupt: exiting without saving");
            std::process::exit(130);
        }
        eprintln!("interrupt: finishing the current step, then saving a checkpoint (Ctrl-C again to quit now)");
    })
    .context("cannot install the Ctrl-C handler")?;
    let options = TrainOptions {
        resume,
        progress: true,
        stop,
        base_dir: PathBuf::from("."),
    };
    let summary = train(&config, &options)
        .with_context(|| format!("training with {} failed", args.config.display()))?;
    outln!("run directory: {}", config.output_dir.display());
    outln!(
        "steps: {}, epochs completed: {}, stopped: {:?}",
        summary.steps,
        summary.epoch,
        summary.stop
    );
    if let Some(loss) = summary.best_valid_loss {
        outln!(
            "best validation loss: {loss:.4} (perplexity {:.2})",
            loss.exp()
        );
    }
    if let Some(best) = &summary.best_checkpoint {
        outln!("best checkpoint: {}", best.display());
    }
    outln!("last checkpoint: {}", summary.last_checkpoint.display());
    Ok(())
}
