//! Cross-entropy over target tokens that ignores padding, with label smoothing.

use rosetta_model::burn::tensor::activation::log_softmax;
use rosetta_model::burn::tensor::{Int, Tensor};

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
    /// A batch with no non-padding target gives a loss of `0` (not `NaN`).
    pub fn forward(&self, logits: Tensor<3>, targets: Tensor<2, Int>) -> LossOutput {
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
