//! The learning-rate schedule of *Attention Is All You Need* (the "Noam" schedule): linear
//! warm-up, then decay with the inverse square root of the step,
//! `lr = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)`.
//!
//! [`LrSchedule`] is the configurable schedule of the training loop: this one (with a scale
//! factor), fairseq's inverse square root, or a warm-up followed by a cosine decay to a floor
//! (fairseq's `cosine` without restarts), which ends a short run at a small learning rate.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

/// The learning-rate schedule of a run (`[training.schedule]`), a function of the optimizer
/// step (counted from 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LrSchedule {
    /// The paper's schedule: `factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)`.
    Noam {
        /// Scale of the whole curve (1 in the paper).
        factor: f64,
        /// Warm-up steps.
        warmup: u64,
    },
    /// fairseq's `inverse_sqrt`: linear from 0 to `peak` over `warmup` steps, then
    /// `peak · sqrt(warmup / step)`.
    InverseSqrt {
        /// Learning rate at the end of warm-up.
        peak: f64,
        /// Warm-up steps.
        warmup: u64,
    },
    /// Linear from 0 to `peak` over `warmup` steps, then half a cosine from `peak` down to
    /// `min` at step `steps`, and `min` after it:
    /// `min + (peak − min) · (1 + cos(π · (step − warmup) / (steps − warmup))) / 2`.
    Cosine {
        /// Learning rate at the end of warm-up.
        peak: f64,
        /// Warm-up steps.
        warmup: u64,
        /// The step at which the decay reaches `min` (usually `training.max_steps`).
        steps: u64,
        /// The floor the decay ends at.
        #[serde(default)]
        min: f64,
    },
}

impl Default for LrSchedule {
    fn default() -> Self {
        LrSchedule::Noam {
            factor: 1.0,
            warmup: 4000,
        }
    }
}

impl LrSchedule {
    /// The learning rate at optimizer step `step` (from 1) for a model of width `d_model`.
    pub fn learning_rate(&self, d_model: usize, step: u64) -> f64 {
        match *self {
            LrSchedule::Noam { factor, warmup } => {
                factor * noam_learning_rate(d_model, warmup as usize, step as usize)
            }
            LrSchedule::InverseSqrt { peak, warmup } => {
                let step = step as f64;
                let warmup = warmup as f64;
                if warmup > 0.0 && step < warmup {
                    peak * step / warmup
                } else {
                    peak * (warmup.max(1.0) / step.max(1.0)).sqrt()
                }
            }
            LrSchedule::Cosine {
                peak,
                warmup,
                steps,
                min,
            } => {
                if step < warmup {
                    peak * step as f64 / warmup as f64
                } else if step >= steps {
                    min
                } else {
                    let progress = (step - warmup) as f64 / (steps - warmup) as f64;
                    min + (peak - min) * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
                }
            }
        }
    }

    /// Checks the values; the error names the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let refuse = |key: &str, reason: String| Err(ConfigError::new(key, reason));
        match *self {
            LrSchedule::Noam { factor, .. } if !(factor > 0.0 && factor.is_finite()) => refuse(
                "training.schedule.factor",
                format!("must be positive, got {factor}"),
            ),
            LrSchedule::InverseSqrt { peak, .. } | LrSchedule::Cosine { peak, .. }
                if !(peak > 0.0 && peak.is_finite()) =>
            {
                refuse(
                    "training.schedule.peak",
                    format!("must be positive, got {peak}"),
                )
            }
            LrSchedule::Cosine { peak, min, .. } if !(min >= 0.0 && min <= peak) => refuse(
                "training.schedule.min",
                format!("must be between 0 and `peak` ({peak}), got {min}"),
            ),
            LrSchedule::Cosine { warmup, steps, .. } if steps <= warmup => refuse(
                "training.schedule.steps",
                format!("must be above `warmup` ({warmup}), got {steps}"),
            ),
            _ => Ok(()),
        }
    }
}

/// The learning rate at `step` (counted from 1) for model width `d_model` and `warmup` steps.
///
/// It rises linearly up to `step = warmup`, where it peaks at `(d_model · warmup)^-0.5`, then
/// falls as `step^-0.5`. Step 0 gives 0 (the linear branch); `warmup = 0` means no warm-up.
pub fn noam_learning_rate(d_model: usize, warmup: usize, step: usize) -> f64 {
    if step == 0 || d_model == 0 {
        return 0.0;
    }
    let step = step as f64;
    let decay = step.powf(-0.5);
    let rise = if warmup == 0 {
        f64::INFINITY
    } else {
        step * (warmup as f64).powf(-1.5)
    };
    (d_model as f64).powf(-0.5) * decay.min(rise)
}

/// `(step, learning rate)` at every `every`-th step from 1 to `steps` (and at `steps`), for
/// plotting.
pub fn schedule_curve(
    d_model: usize,
    warmup: usize,
    steps: usize,
    every: usize,
) -> Vec<(usize, f64)> {
    let every = every.max(1);
    let mut points: Vec<(usize, f64)> = (1..=steps)
        .step_by(every)
        .map(|s| (s, noam_learning_rate(d_model, warmup, s)))
        .collect();
    if steps > 0 && points.last().map(|p| p.0) != Some(steps) {
        points.push((steps, noam_learning_rate(d_model, warmup, steps)));
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_schedules() {
        let noam = LrSchedule::Noam {
            factor: 2.0,
            warmup: 100,
        };
        assert!((noam.learning_rate(256, 100) - 2.0 * (256.0f64 * 100.0).powf(-0.5)).abs() < 1e-15);
        let inv = LrSchedule::InverseSqrt {
            peak: 1e-3,
            warmup: 100,
        };
        assert!((inv.learning_rate(256, 50) - 5e-4).abs() < 1e-15);
        assert!((inv.learning_rate(256, 100) - 1e-3).abs() < 1e-15);
        assert!((inv.learning_rate(256, 400) - 5e-4).abs() < 1e-15);
        assert!(
            LrSchedule::Noam {
                factor: 0.0,
                warmup: 1
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn cosine_warms_up_decays_to_the_floor_and_stays_there() {
        let cosine = LrSchedule::Cosine {
            peak: 4e-3,
            warmup: 100,
            steps: 1100,
            min: 1e-4,
        };
        assert!(cosine.validate().is_ok());
        assert!((cosine.learning_rate(128, 50) - 2e-3).abs() < 1e-15);
        assert!((cosine.learning_rate(128, 100) - 4e-3).abs() < 1e-15);
        // Halfway through the decay the cosine is 0: the mean of peak and floor.
        assert!((cosine.learning_rate(128, 600) - (4e-3 + 1e-4) / 2.0).abs() < 1e-15);
        // A quarter of the way: (1 + cos(π/4)) / 2 of the way from the floor to the peak.
        let quarter = 1e-4 + 3.9e-3 * (1.0 + std::f64::consts::FRAC_1_SQRT_2) / 2.0;
        assert!((cosine.learning_rate(128, 350) - quarter).abs() < 1e-15);
        assert_eq!(cosine.learning_rate(128, 1100), 1e-4);
        assert_eq!(cosine.learning_rate(128, 5000), 1e-4);
        let falling: Vec<f64> = (100..=1100).map(|s| cosine.learning_rate(128, s)).collect();
        assert!(falling.windows(2).all(|w| w[1] <= w[0]));
        let bad_floor = LrSchedule::Cosine {
            peak: 1e-3,
            warmup: 10,
            steps: 100,
            min: 2e-3,
        };
        assert_eq!(
            bad_floor.validate().unwrap_err().key.as_deref(),
            Some("training.schedule.min")
        );
        let too_short = LrSchedule::Cosine {
            peak: 1e-3,
            warmup: 100,
            steps: 100,
            min: 0.0,
        };
        assert_eq!(
            too_short.validate().unwrap_err().key.as_deref(),
            Some("training.schedule.steps")
        );
    }

    fn formula(d: f64, w: f64, s: f64) -> f64 {
        d.powf(-0.5) * s.powf(-0.5).min(s * w.powf(-1.5))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-30)
    }

    #[test]
    fn equals_the_formula_at_one_warmup_and_ten_warmups() {
        for (d, w) in [(512usize, 4000usize), (128, 4000), (256, 100)] {
            for s in [1, w, 10 * w] {
                let got = noam_learning_rate(d, w, s);
                let want = formula(d as f64, w as f64, s as f64);
                assert!(close(got, want), "d {d} w {w} s {s}: {got} vs {want}");
            }
        }
        // Hand values: step 1 = 512^-0.5 · 4000^-1.5; at warmup, (512 · 4000)^-0.5.
        assert!(close(
            noam_learning_rate(512, 4000, 1),
            1.0 / (512f64.sqrt() * 4000f64.powf(1.5))
        ));
        assert!(close(
            noam_learning_rate(512, 4000, 4000),
            1.0 / (512.0f64 * 4000.0).sqrt()
        ));
        assert!(close(
            noam_learning_rate(512, 4000, 40_000),
            1.0 / (512.0f64 * 40_000.0).sqrt()
        ));
    }

    #[test]
    fn peaks_at_warmup() {
        let (d, w) = (512, 4000);
        let peak = noam_learning_rate(d, w, w);
        let (argmax, max) = (1..=40_000).map(|s| (s, noam_learning_rate(d, w, s))).fold(
            (0, f64::MIN),
            |best, (s, lr)| if lr > best.1 { (s, lr) } else { best },
        );
        assert_eq!(argmax, w);
        assert_eq!(max, peak);
        assert!(noam_learning_rate(d, w, w - 1) < peak && noam_learning_rate(d, w, w + 1) < peak);
        // Linear before the peak: twice the step, twice the rate.
        assert!(close(
            noam_learning_rate(d, w, 2000),
            2.0 * noam_learning_rate(d, w, 1000)
        ));
    }

    #[test]
    fn curve_samples_the_function_and_ends_at_the_last_step() {
        let curve = schedule_curve(512, 4000, 40_000, 100);
        assert_eq!(curve.first().map(|p| p.0), Some(1));
        assert_eq!(curve.last().map(|p| p.0), Some(40_000));
        assert_eq!(curve.len(), 401);
        assert!(
            curve
                .iter()
                .all(|&(s, lr)| lr == noam_learning_rate(512, 4000, s))
        );
    }

    #[test]
    fn smaller_models_get_larger_rates() {
        let ratio = noam_learning_rate(128, 4000, 4000) / noam_learning_rate(512, 4000, 4000);
        assert!(close(ratio, 2.0), "{ratio}");
        assert_eq!(noam_learning_rate(512, 4000, 0), 0.0);
        assert!(close(
            noam_learning_rate(512, 0, 100),
            1.0 / (512.0f64 * 100.0).sqrt()
        ));
    }
}
