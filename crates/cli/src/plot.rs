//! `rosetta plot`: the training curves of one or more runs, overlaid, in one PNG: training loss,
//! validation loss (a multilingual run's also per direction), validation BLEU (when the runs computed it) and the learning rate, against
//! steps or minutes of training, read from each run's `metrics.jsonl`. Steps trained again
//! after a resume from an earlier checkpoint replace the records they repeat.

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

/// One curve: `(step, x, y)` points in step order.
#[derive(Debug, Default)]
struct Curve(Vec<(u64, f64, f64)>);

impl Curve {
    /// Adds a point. A step at or before the last one means the run was resumed from an
    /// earlier checkpoint and trained those steps again: the points it replaced are dropped.
    fn push(&mut self, step: u64, x: f64, y: f64) {
        while self.0.last().is_some_and(|&(last, _, _)| last >= step) {
            self.0.pop();
        }
        self.0.push((step, x, y));
    }

    fn points(&self) -> Vec<(f64, f64)> {
        self.0.iter().map(|&(_, x, y)| (x, y)).collect()
    }
}

/// The curves of one run: training loss, validation loss (and a multilingual run's loss per
/// direction), validation BLEU, learning rate.
#[derive(Debug, Default)]
struct Curves {
    train_loss: Curve,
    valid_loss: Curve,
    valid_directions: std::collections::BTreeMap<String, Curve>,
    valid_bleu: Curve,
    bleu_directions: std::collections::BTreeMap<String, Curve>,
    learning_rate: Curve,
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
        match record {
            &MetricsRecord::Train {
                step,
                loss,
                learning_rate,
                seconds,
                ..
            } => {
                let at = x(step, seconds)?;
                curves.train_loss.push(step, at, loss);
                curves.learning_rate.push(step, at, learning_rate);
            }
            MetricsRecord::Valid {
                step,
                loss,
                bleu,
                seconds,
                directions,
                directions_bleu,
                ..
            } => {
                let at = x(*step, *seconds)?;
                curves.valid_loss.push(*step, at, *loss);
                for (direction, loss) in directions {
                    curves
                        .valid_directions
                        .entry(direction.clone())
                        .or_default()
                        .push(*step, at, *loss);
                }
                if let Some(bleu) = bleu {
                    curves.valid_bleu.push(*step, at, *bleu);
                }
                for (direction, bleu) in directions_bleu {
                    curves
                        .bleu_directions
                        .entry(direction.clone())
                        .or_default()
                        .push(*step, at, *bleu);
                }
            }
        }
    }
    Ok(curves)
}

/// A run's label in the legends: its path as given.
fn label(run: &Path) -> String {
    run.display().to_string()
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
    type Pick = fn(&Curves) -> &Curve;
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
        let mut series: Vec<Series> = runs
            .iter()
            .filter(|(_, curves)| !pick(curves).0.is_empty())
            .map(|(label, curves)| Series {
                label: label.clone(),
                points: pick(curves).points(),
            })
            .collect();
        // A multilingual run's validation loss and BLEU also per direction (the run's curve is
        // their mean).
        type PickDirections = fn(&Curves) -> &std::collections::BTreeMap<String, Curve>;
        let per_direction: Option<PickDirections> = match title {
            "validation loss" => Some(|c| &c.valid_directions),
            "validation BLEU (greedy)" => Some(|c| &c.bleu_directions),
            _ => None,
        };
        if let Some(pick_directions) = per_direction {
            for (label, curves) in &runs {
                for (direction, curve) in pick_directions(curves) {
                    series.push(Series {
                        label: format!("{label} {direction}"),
                        points: curve.points(),
                    });
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::{Axis, Curve, curves};
    use rosetta_train::run_log::MetricsRecord;

    #[test]
    fn a_multilingual_runs_validation_loss_is_also_drawn_per_direction() {
        let valid = |step: u64, de: f64, fr: f64| MetricsRecord::Valid {
            step,
            epoch: 0,
            loss: (de + fr) / 2.0,
            perplexity: ((de + fr) / 2.0).exp(),
            accuracy: 0.5,
            bleu: None,
            best: true,
            seconds: Some(step as f64),
            directions: [("en-de".to_string(), de), ("en-fr".to_string(), fr)]
                .into_iter()
                .collect(),
            directions_bleu: Default::default(),
        };
        let records = [valid(10, 4.0, 3.0), valid(20, 3.0, 2.0)];
        let drawn = curves(&records, Axis::Step, std::path::Path::new("run")).expect("curves");
        assert_eq!(drawn.valid_loss.points(), vec![(10.0, 3.5), (20.0, 2.5)]);
        let names: Vec<&str> = drawn.valid_directions.keys().map(String::as_str).collect();
        assert_eq!(names, ["en-de", "en-fr"]);
        assert_eq!(
            drawn.valid_directions["en-fr"].points(),
            vec![(10.0, 3.0), (20.0, 2.0)]
        );
    }

    #[test]
    fn steps_trained_again_replace_the_points_they_repeat() {
        let mut curve = Curve::default();
        for (step, y) in [
            (10, 1.0),
            (20, 2.0),
            (30, 3.0),
            (20, 2.5),
            (30, 3.5),
            (40, 4.0),
        ] {
            curve.push(step, step as f64, y);
        }
        assert_eq!(
            curve.points(),
            vec![(10.0, 1.0), (20.0, 2.5), (30.0, 3.5), (40.0, 4.0)]
        );
    }
}
