//! The warm-up learning-rate schedule of the paper over 40,000 steps, for d_model 128 and 512
//! with 4,000 warm-up steps: a few values printed, the curves as a PNG.
//!
//! `cargo run -p rosetta-tutorial --example warmup_schedule [OUTPUT_DIR]`

use std::error::Error;
use std::path::{Path, PathBuf};

use rosetta_train::{noam_learning_rate, schedule_curve};
use rosetta_tutorial::output_dir;
use rosetta_tutorial::plot::{Panel, Series, line_chart_png};

/// Warm-up steps, as in the paper and the tutorial.
pub const WARMUP: usize = 4000;
/// Steps plotted.
pub const STEPS: usize = 40_000;
/// Model widths compared.
pub const D_MODELS: [usize; 2] = [128, 512];

/// Prints the table and writes `warmup_schedule.png` into `dir`; returns the PNG's path.
pub fn run(dir: &Path) -> Result<PathBuf, Box<dyn Error>> {
    println!("lr = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), warmup = {WARMUP}");
    println!("    step | d_model 128 | d_model 512");
    for step in [1, 1000, 2000, WARMUP, 8000, 20_000, STEPS] {
        println!(
            "  {step:6} |  {:.3e}  |  {:.3e}",
            noam_learning_rate(D_MODELS[0], WARMUP, step),
            noam_learning_rate(D_MODELS[1], WARMUP, step)
        );
    }
    let series = D_MODELS
        .iter()
        .map(|&d| Series {
            label: format!("d_model = {d}"),
            points: schedule_curve(d, WARMUP, STEPS, 50)
                .into_iter()
                .map(|(s, lr)| (s as f64, lr))
                .collect(),
        })
        .collect();
    let panel = Panel {
        title: format!("Warm-up schedule, warmup = {WARMUP}"),
        x_label: "training step".into(),
        y_label: "learning rate".into(),
        log_x: false,
        series,
    };
    let path = dir.join("warmup_schedule.png");
    line_chart_png(&path, &[panel], (900, 500))?;
    println!("plot written to {}", path.display());
    Ok(path)
}

fn main() -> Result<(), Box<dyn Error>> {
    run(&output_dir(std::env::args().nth(1))?)?;
    Ok(())
}
