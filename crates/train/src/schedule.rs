//! The learning-rate schedule of *Attention Is All You Need* (the "Noam" schedule): linear
//! warm-up, then decay with the inverse square root of the step,
//! `lr = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)`.
//!
//! [`LrSchedule`] is the configurable schedule of the training loop: this one (with a scale
//! factor) or fairseq's inverse square root.

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
        }
    }

    /// Checks the values; the error names the key.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            LrSchedule::Noam { factor, .. } if !(factor > 0.0 && factor.is_finite()) => Err(
                format!("key `training.schedule.factor`: must be positive, got {factor}"),
            ),
            LrSchedule::InverseSqrt { peak, .. } if !(peak > 0.0 && peak.is_finite()) => Err(
                format!("key `training.schedule.peak`: must be positive, got {peak}"),
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
