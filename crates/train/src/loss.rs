//! Cross-entropy over target tokens that ignores padding, with label smoothing.

use rayon::prelude::*;
use rosetta_model::burn::tensor::activation::log_softmax;
use rosetta_model::burn::tensor::{Int, Tensor, TensorData};
use rosetta_model::device::computes_in_host_memory;
use rosetta_model::{CrossEntropyRow, cross_entropy_row};

/// The loss of one batch, with what metrics need.
#[derive(Debug, Clone)]
pub struct LossOutput {
    /// Scalar `[1]`: the mean loss over non-padding target tokens.
    pub loss: Tensor<1>,
    /// Scalar `[1]`: the summed loss over non-padding target tokens (for normalising over
    /// several accumulated batches).
    pub sum: Tensor<1>,
    /// Scalar `[1]`: the mean negative log-likelihood of the references over non-padding
    /// tokens, without smoothing (its exponential is the perplexity).
    pub nll: Tensor<1>,
    /// Scalar `[1]`, integer: how many target tokens are not padding.
    pub tokens: Tensor<1, Int>,
    /// Scalar `[1]`, integer: how many non-padding tokens the model ranks first.
    pub correct: Tensor<1, Int>,
}

/// Token-level cross-entropy that skips padding targets, with label smoothing `eps`:
///
/// `loss_t = (1 - eps) * (-log p(y_t)) + eps * mean_v(-log p(v))`, averaged over the tokens
/// whose target is not `pad_id`. With `eps = 0` this is the seeds' plain masked loss; for any
/// `eps` it equals PyTorch's `F.cross_entropy(logits, y, ignore_index=pad_id,
/// label_smoothing=eps)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SequenceCrossEntropy {
    /// Target id that contributes nothing (padding).
    pub pad_id: usize,
    /// Label-smoothing mass spread uniformly over the vocabulary, in `[0, 1)`.
    pub label_smoothing: f64,
}

impl SequenceCrossEntropy {
    /// The loss for padding id `pad_id` and smoothing `label_smoothing`.
    pub fn new(pad_id: usize, label_smoothing: f64) -> Self {
        Self {
            pad_id,
            label_smoothing,
        }
    }

    /// `logits` `[batch, len, vocab]` against `targets` `[batch, len]`.
    ///
    /// A batch with no non-padding target gives a loss of `0` (not `NaN`). On a CPU device the
    /// loss and its gradient are computed in one fused pass over each row of logits on the host
    /// ([`Self::forward_fused`]); elsewhere from Burn's tensor operations
    /// ([`Self::forward_composed`]). For finite logits the two agree to float rounding (an
    /// infinite logit can make the fused loss `NaN` where the composed one is finite; training
    /// stops on a non-finite loss either way).
    pub fn forward(&self, logits: Tensor<3>, targets: Tensor<2, Int>) -> LossOutput {
        if computes_in_host_memory(&logits.device()) {
            self.forward_fused(logits, targets)
        } else {
            self.forward_composed(logits, targets)
        }
    }

    /// The loss from Burn's tensor operations (log-softmax, gather, mean), on any device.
    pub fn forward_composed(&self, logits: Tensor<3>, targets: Tensor<2, Int>) -> LossOutput {
        let [batch, len, _] = logits.dims();
        let log_probs = log_softmax(logits, 2);
        let keep = targets.clone().not_equal_elem(self.pad_id as i64);
        let weight = keep.clone().float().reshape([batch * len]);
        let nll = log_probs
            .clone()
            .gather(2, targets.clone().unsqueeze_dim(2))
            .neg()
            .reshape([batch * len]);
        let per_token = if self.label_smoothing > 0.0 {
            let smooth = log_probs.clone().mean_dim(2).neg().reshape([batch * len]);
            nll.clone().mul_scalar(1.0 - self.label_smoothing)
                + smooth.mul_scalar(self.label_smoothing)
        } else {
            nll.clone()
        };
        let count = weight.clone().sum();
        let denominator = count.clone().clamp_min(1.0);
        let sum = (per_token * weight.clone()).sum();
        let loss = sum.clone() / denominator.clone();
        let nll = (nll * weight).sum() / denominator;
        let predicted = log_probs.argmax(2).reshape([batch, len]);
        let correct = predicted.equal(targets).bool_and(keep.clone()).int().sum();
        LossOutput {
            loss,
            sum,
            nll,
            tokens: keep.int().sum(),
            correct,
        }
    }

    /// The loss computed on the host, row by row in parallel ([`cross_entropy_row`]): the
    /// logits are read once, each row's loss and gradient come from one fused pass, and the
    /// gradient reaches the autodiff graph through `sum(logits · G)` with `G` the host's
    /// gradient held constant, whose derivative with respect to the logits is `G`; its value
    /// is replaced by the host's summed loss. Rows are independent and summed in order, so the
    /// result is the same for any number of threads. Targets outside the vocabulary (which
    /// the data pipeline never produces) are left to [`Self::forward_composed`], as before.
    pub fn forward_fused(&self, logits: Tensor<3>, targets: Tensor<2, Int>) -> LossOutput {
        let [batch, len, vocab] = logits.dims();
        let device = logits.device();
        let ids: Vec<i64> = targets
            .clone()
            .into_data()
            .convert::<i64>()
            .try_into_vec::<i64>()
            .unwrap_or_default();
        if ids.len() != batch * len || ids.iter().any(|&id| id < 0 || id as usize >= vocab) {
            return self.forward_composed(logits, targets);
        }
        let Ok(mut values) = logits
            .clone()
            .detach()
            .into_data()
            .convert::<f32>()
            .try_into_vec::<f32>()
        else {
            return self.forward_composed(logits, targets);
        };
        let smoothing = self.label_smoothing as f32;
        let pad = self.pad_id as i64;
        let rows: Vec<(CrossEntropyRow, bool)> = values
            .par_chunks_mut(vocab.max(1))
            .zip(ids.par_iter())
            .map(|(row, &id)| {
                let keep = id != pad;
                let weight = if keep { 1.0 } else { 0.0 };
                (cross_entropy_row(row, id as usize, smoothing, weight), keep)
            })
            .collect();
        let (mut sum, mut nll, mut tokens, mut correct) = (0.0f64, 0.0f64, 0i64, 0i64);
        for ((row, keep), &id) in rows.iter().zip(&ids) {
            if *keep {
                sum += f64::from(row.loss);
                nll += f64::from(row.nll);
                tokens += 1;
                correct += i64::from(row.argmax as i64 == id);
            }
        }
        let denominator = tokens.max(1) as f64;
        let scalar = |value: f64| Tensor::<1>::from_data(TensorData::from([value as f32]), &device);
        let sum = if device.is_autodiff() {
            let gradient =
                Tensor::<3>::from_data(TensorData::new(values, [batch, len, vocab]), &device);
            let surrogate = (logits * gradient).sum();
            (surrogate.clone() - surrogate.detach()).add_scalar(sum)
        } else {
            // Validation: no graph to carry the gradient into.
            scalar(sum)
        };
        let count = |value: i64| Tensor::<1, Int>::from_data(TensorData::from([value]), &device);
        LossOutput {
            loss: sum.clone().div_scalar(denominator),
            sum,
            nll: scalar(nll / denominator),
            tokens: count(tokens),
            correct: count(correct),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rosetta_model::burn::tensor::{Device, TensorData};

    fn scalar(t: Tensor<1>) -> f64 {
        t.into_data().try_to_vec::<f32>().expect("f32")[0] as f64
    }

    #[test]
    fn equals_a_hand_computed_value() {
        // One sequence, vocab 3, targets [2, pad]: only position 0 counts.
        let device = Device::flex();
        let logits = Tensor::<3>::from_data(
            TensorData::from([[[1.0f32, 2.0, 3.0], [9.0, -9.0, 0.0]]]),
            &device,
        );
        let targets = Tensor::<2, Int>::from_data(TensorData::from([[2i64, 0]]), &device);
        let z: f64 = [1.0f64, 2.0, 3.0].iter().map(|v| v.exp()).sum::<f64>().ln();
        let log_p = [1.0 - z, 2.0 - z, 3.0 - z];
        let plain = SequenceCrossEntropy::new(0, 0.0).forward(logits.clone(), targets.clone());
        assert!((scalar(plain.loss) - (-log_p[2])).abs() < 1e-6);
        let eps = 0.1;
        let smoothed = SequenceCrossEntropy::new(0, eps).forward(logits, targets);
        let expected = (1.0 - eps) * -log_p[2] + eps * -(log_p.iter().sum::<f64>() / 3.0);
        assert!((scalar(smoothed.loss) - expected).abs() < 1e-6);
        assert!((scalar(smoothed.nll) - (-log_p[2])).abs() < 1e-6);
        assert_eq!(
            smoothed
                .tokens
                .into_data()
                .convert::<i64>()
                .try_to_vec::<i64>()
                .expect("int"),
            vec![1]
        );
        assert_eq!(
            smoothed
                .correct
                .into_data()
                .convert::<i64>()
                .try_to_vec::<i64>()
                .expect("int"),
            vec![1]
        );
    }

    #[test]
    fn padding_contributes_nothing_to_loss_or_gradient() {
        let device = Device::flex().autodiff();
        device.seed(11);
        let logits = Tensor::<3>::random(
            [2, 4, 6],
            rosetta_model::burn::tensor::Distribution::Normal(0.0, 2.0),
            &device,
        )
        .require_grad();
        let targets =
            Tensor::<2, Int>::from_data(TensorData::from([[3i64, 1, 0, 0], [5, 2, 4, 0]]), &device);
        let out = SequenceCrossEntropy::new(0, 0.1).forward(logits.clone(), targets);
        let grads = out.loss.backward();
        let grad = logits
            .grad(&grads)
            .expect("gradient")
            .into_data()
            .try_to_vec::<f32>()
            .expect("f32");
        for (b, t) in [(0, 2), (0, 3), (1, 3)] {
            let row = &grad[(b * 4 + t) * 6..][..6];
            assert!(
                row.iter().all(|g| *g == 0.0),
                "pad position ({b},{t}) has gradient {row:?}"
            );
        }
        let real = &grad[0..6];
        assert!(real.iter().any(|g| *g != 0.0));
    }

    /// The gradient of `out.sum` with respect to `logits`, and the output's scalars.
    fn run(
        forward: impl Fn(Tensor<3>, Tensor<2, Int>) -> LossOutput,
        logits: &Tensor<3>,
        targets: &Tensor<2, Int>,
    ) -> (Vec<f32>, [f64; 3], [i64; 2]) {
        let logits = logits.clone().require_grad();
        let out = forward(logits.clone(), targets.clone());
        let int = |t: Tensor<1, Int>| {
            t.into_data()
                .convert::<i64>()
                .try_to_vec::<i64>()
                .expect("int")[0]
        };
        let values = [
            scalar(out.loss.clone()),
            scalar(out.sum.clone()),
            scalar(out.nll.clone()),
        ];
        let counts = [int(out.tokens), int(out.correct)];
        let grads = out.sum.backward();
        let grad = logits
            .grad(&grads)
            .expect("gradient")
            .into_data()
            .try_to_vec::<f32>()
            .expect("f32");
        (grad, values, counts)
    }

    #[test]
    fn the_fused_loss_equals_the_composed_one_with_its_gradient() {
        let device = Device::flex().autodiff();
        // A vocabulary that is not a multiple of the 16 lanes, logits wide enough that the
        // exponentials span many orders of magnitude, and one padded row per sequence.
        let (batch, len, vocab) = (3, 5, 37);
        for smoothing in [0.0, 0.1, 0.3] {
            device.seed(7);
            let logits = Tensor::<3>::random(
                [batch, len, vocab],
                rosetta_model::burn::tensor::Distribution::Normal(0.0, 4.0),
                &device,
            );
            let ids: Vec<i64> = (0..batch * len)
                .map(|i| {
                    if i % len == len - 1 {
                        0
                    } else {
                        1 + (i * 7 % (vocab - 1)) as i64
                    }
                })
                .collect();
            let targets = Tensor::<2, Int>::from_data(TensorData::new(ids, [batch, len]), &device);
            let loss = SequenceCrossEntropy::new(0, smoothing);
            let (fused_grad, fused, fused_counts) =
                run(|l, t| loss.forward_fused(l, t), &logits, &targets);
            let (composed_grad, composed, composed_counts) =
                run(|l, t| loss.forward_composed(l, t), &logits, &targets);
            assert_eq!(fused_counts, composed_counts, "smoothing {smoothing}");
            assert_eq!(fused_counts[0], (batch * (len - 1)) as i64);
            for (f, c) in fused.iter().zip(&composed) {
                assert!(
                    (f - c).abs() <= 1e-5 * c.abs().max(1.0),
                    "{fused:?} vs {composed:?}"
                );
            }
            let worst = fused_grad
                .iter()
                .zip(&composed_grad)
                .map(|(f, c)| (f - c).abs())
                .fold(0.0f32, f32::max);
            assert!(
                worst < 1e-6,
                "smoothing {smoothing}: gradients differ by {worst}"
            );
            for position in (0..batch).map(|b| b * len + len - 1) {
                let row = &fused_grad[position * vocab..][..vocab];
                assert!(
                    row.iter().all(|&g| g == 0.0),
                    "padded row {position}: {row:?}"
                );
            }
        }
    }

    #[test]
    fn all_padding_is_zero_not_nan() {
        let device = Device::flex();
        let logits = Tensor::<3>::zeros([1, 2, 4], &device);
        let targets = Tensor::<2, Int>::zeros([1, 2], &device);
        assert_eq!(
            scalar(
                SequenceCrossEntropy::new(0, 0.1)
                    .forward(logits, targets)
                    .loss
            ),
            0.0
        );
    }
}
