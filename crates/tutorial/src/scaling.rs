//! Tutorial demonstration: why the scores are divided by `sqrt(d_k)`.
//!
//! A score is the dot product `q·k` of a query and a key whose `d_k` components have unit
//! variance, so it has variance `d_k`. Unscaled, the softmax over such scores saturates as
//! `d_k` grows: the largest weight tends to 1 and the gradient that flows back through the
//! softmax vanishes. Divided by `sqrt(d_k)` the scores have unit variance at every `d_k`, and
//! both stay where they are.
//!
//! **The gradient measured.** The softmax Jacobian at weights `w` is `diag(w) - w wᵀ`; what
//! reaches the scores in back-propagation is the vector-Jacobian product `Jᵀ g = w ⊙ (g - ⟨w, g⟩)`
//! for the upstream gradient `g`. We draw `g ~ N(0, I)` (a generic upstream signal), back-propagate
//! `⟨softmax(z), g⟩` with Burn's autodiff, and report the mean over rows of `‖∂/∂z‖₂`, where
//! `z` is the softmax input (the scores, or the scores / `sqrt(d_k)`). A saturated row has
//! `w ≈ e_i`, so `Jᵀ g ≈ 0`.
//!
//! The tutorial instead calls `weights.sum().backward()` with the *weights* as the leaf: the
//! gradient of a sum with respect to its terms is all ones, whatever the scores, so its "norm"
//! is the constant `sqrt(rows · d)` and says nothing about saturation (and taken with respect to
//! the scores it would be exactly zero, since the weights always sum to 1). Its scores are also
//! `randn(1000, d)`, of variance 1 rather than `d`; ours are true dot products.

use burn::tensor::activation::softmax;
use burn::tensor::{Device, Distribution, Tensor};

use crate::values;

/// One `d_k` of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScalingRow {
    /// Width of queries and keys.
    pub d_k: usize,
    /// Mean over rows of the largest softmax weight, scores unscaled.
    pub max_weight_unscaled: f64,
    /// The same with the scores divided by `sqrt(d_k)`.
    pub max_weight_scaled: f64,
    /// Mean over rows of `‖Jᵀ g‖₂` (see the module documentation), scores unscaled.
    pub grad_norm_unscaled: f64,
    /// The same with the scores divided by `sqrt(d_k)`.
    pub grad_norm_scaled: f64,
}

/// What one softmax pass measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoftmaxStats {
    /// Mean over rows of the largest weight.
    pub mean_max_weight: f64,
    /// Mean over rows of the norm of the gradient with respect to the softmax input.
    pub mean_gradient_norm: f64,
}

/// The `d_k` values of the tutorial.
pub const TUTORIAL_D_KS: [usize; 5] = [8, 32, 64, 128, 512];

/// Softmax over the last axis of `z` `[rows, keys]` (on an autodiff device), the mean largest
/// weight, and the mean norm of the gradient `∂⟨softmax(z), upstream⟩/∂z`, computed by
/// back-propagation.
pub fn softmax_stats(z: Tensor<2>, upstream: Tensor<2>) -> SoftmaxStats {
    let [rows, _] = z.dims();
    let z = z.detach().require_grad();
    let weights = softmax(z.clone(), 1);
    let mean_max_weight = mean(values(weights.clone().max_dim(1)));
    let grads = (weights * upstream).sum().backward();
    let gradient_norms = match z.grad(&grads) {
        Some(grad) => values(grad.powf_scalar(2.0).sum_dim(1).sqrt()),
        None => vec![0.0; rows],
    };
    SoftmaxStats {
        mean_max_weight,
        mean_gradient_norm: mean(gradient_norms),
    }
}

/// For each `d_k` in `d_ks`: `rows` independent queries, each against `keys` keys, all
/// components `N(0, 1)` (seeded by `seed`); the scores `q·k` go through the softmax as they are
/// and divided by `sqrt(d_k)`, with the same upstream gradient for both.
pub fn scaling_table(d_ks: &[usize], rows: usize, keys: usize, seed: u64) -> Vec<ScalingRow> {
    let device = Device::flex().autodiff();
    device.seed(seed);
    let normal = Distribution::Normal(0.0, 1.0);
    d_ks.iter()
        .map(|&d_k| {
            let q = Tensor::<3>::random([rows, 1, d_k], normal, &device);
            let k = Tensor::<3>::random([rows, keys, d_k], normal, &device);
            let scores = q.matmul(k.swap_dims(1, 2)).reshape([rows, keys]).detach();
            let upstream = Tensor::<2>::random([rows, keys], normal, &device);
            let unscaled = softmax_stats(scores.clone(), upstream.clone());
            let scaled = softmax_stats(scores.div_scalar((d_k as f64).sqrt()), upstream);
            ScalingRow {
                d_k,
                max_weight_unscaled: unscaled.mean_max_weight,
                max_weight_scaled: scaled.mean_max_weight,
                grad_norm_unscaled: unscaled.mean_gradient_norm,
                grad_norm_scaled: scaled.mean_gradient_norm,
            }
        })
        .collect()
}

/// Writes the table as a two-panel PNG (largest weight, gradient norm; against `d_k` on a
/// logarithmic axis) at `path`.
pub fn write_plot(
    rows: &[ScalingRow],
    path: &std::path::Path,
) -> Result<(), crate::plot::PlotError> {
    use crate::plot::{Panel, Series};
    let series = |label: &str, pick: fn(&ScalingRow) -> f64| Series {
        label: label.to_string(),
        points: rows.iter().map(|r| (r.d_k as f64, pick(r))).collect(),
    };
    let panels = [
        Panel {
            title: "Mean largest softmax weight".into(),
            x_label: "d_k".into(),
            y_label: "max weight".into(),
            log_x: true,
            series: vec![
                series("QKᵀ (unscaled)", |r| r.max_weight_unscaled),
                series("QKᵀ/√d_k (scaled)", |r| r.max_weight_scaled),
            ],
        },
        Panel {
            title: "Mean ‖gradient through softmax‖".into(),
            x_label: "d_k".into(),
            y_label: "‖Jᵀg‖".into(),
            log_x: true,
            series: vec![
                series("QKᵀ (unscaled)", |r| r.grad_norm_unscaled),
                series("QKᵀ/√d_k (scaled)", |r| r.grad_norm_scaled),
            ],
        },
    ];
    crate::plot::line_chart_png(path, &panels, (1200, 500))
}

fn mean(values: Vec<f32>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().map(|v| *v as f64).sum::<f64>() / values.len() as f64
}
