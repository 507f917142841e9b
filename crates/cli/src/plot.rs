//! `rosetta plot`: the training curves of one or more runs, overlaid, in one PNG: training loss,
//! validation loss, validation BLEU (when the runs computed it) and the learning rate, against
//! steps or minutes of training, read from each run's `metrics.jsonl`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rosetta_train::run_log::{MetricsRecord, read_metrics};
use rosetta_tutorial::plot::{Panel, Series, line_chart_png};

use crate::output::outln;

/// The horizontal axis.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Axis {
    /// Optimizer steps.
    Step,
    /// Minutes of training (every session of the run; runs from before 2026-12-01 lack them).
    Minutes,
}

/// Arguments of `rosetta plot`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directories (each holding `metrics.jsonl`), overlaid in every chart.
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    /// The PNG to write.
    #[arg(long)]
    output: PathBuf,
    /// Horizontal axis.
    #[arg(long, value_enum, default_value = "step")]
    x: Axis,
}

/// The curves of one run: training loss, validation loss, validation BLEU, learning rate.
#[derive(Debug, Default)]
struct Curves {
    train_loss: Vec<(f64, f64)>,
    valid_loss: Vec<(f64, f64)>,
    valid_bleu: Vec<(f64, f64)>,
    learning_rate: Vec<(f64, f64)>,
}

/// The curves in `records` against `axis`; `run` names the run in errors.
fn curves(records: &[MetricsRecord], axis: Axis, run: &Path) -> Result<Curves> {
    let x = |step: u64, seconds: Option<f64>| -> Result<f64> {
        match (axis, seconds) {
            (Axis::Step, _) => Ok(step as f64),
            (Axis::Minutes, Some(seconds)) => Ok(seconds / 60.0),
            (Axis::Minutes, None) => bail!(
                "{}: its metrics.jsonl records no training times (runs before 2026-12-01 did \
                 not); plot it with --x step",
                run.display()
            ),
        }
    };
    let mut curves = Curves::default();
    for record in records {
        match *record {
            MetricsRecord::Train {
                step,
                loss,
                learning_rate,
                seconds,
                ..
            } => {
                let at = x(step, seconds)?;
                curves.train_loss.push((at, loss));
                curves.learning_rate.push((at, learning_rate));
            }
            MetricsRecord::Valid {
                step,
                loss,
                bleu,
                seconds,
                ..
            } => {
                let at = x(step, seconds)?;
                curves.valid_loss.push((at, loss));
                if let Some(bleu) = bleu {
                    curves.valid_bleu.push((at, bleu));
                }
            }
        }
    }
    Ok(curves)
}

/// A run's label in the legends: its directory name.
fn label(run: &Path) -> String {
    run.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| run.display().to_string())
}

/// Reads every run's metrics and draws the charts.
pub fn run(args: &Args) -> Result<()> {
    let mut runs = Vec::with_capacity(args.runs.len());
    for run in &args.runs {
        let path = run.join("metrics.jsonl");
        let records = read_metrics(&path)
            .with_context(|| format!("cannot read the metrics of {}", run.display()))?;
        runs.push((label(run), curves(&records, args.x, run)?));
    }
    let x_label = match args.x {
        Axis::Step => "step",
        Axis::Minutes => "minutes of training",
    };
    type Pick = fn(&Curves) -> &Vec<(f64, f64)>;
    let charts: [(&str, &str, Pick); 4] = [
        ("training loss", "loss per token (smoothed)", |c| {
            &c.train_loss
        }),
        ("validation loss", "loss per token", |c| &c.valid_loss),
        ("validation BLEU (greedy)", "BLEU", |c| &c.valid_bleu),
        ("learning rate", "learning rate", |c| &c.learning_rate),
    ];
    let mut panels = Vec::new();
    for (title, y_label, pick) in charts {
        let series: Vec<Series> = runs
            .iter()
            .filter(|(_, curves)| !pick(curves).is_empty())
            .map(|(label, curves)| Series {
                label: label.clone(),
                points: pick(curves).clone(),
            })
            .collect();
        // A chart no run has points for (no validation yet, no BLEU) is left out.
        if !series.is_empty() {
            panels.push(Panel {
                title: title.into(),
                x_label: x_label.into(),
                y_label: y_label.into(),
                log_x: false,
                series,
            });
        }
    }
    if panels.is_empty() {
        bail!("nothing to plot: the runs' metrics.jsonl hold no records yet");
    }
    let size = (520 * panels.len() as u32, 420);
    line_chart_png(&args.output, &panels, size)?;
    outln!(
        "plotted {} run(s), {} chart(s), to {} ({} x {} pixels)",
        runs.len(),
        panels.len(),
        args.output.display(),
        size.0,
        size.1
    );
    Ok(())
}
