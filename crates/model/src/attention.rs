//! Scaled dot-product attention: `softmax(Q K^T / sqrt(d_k)) V`.

use crate::dropout::{Dropout, DropoutConfig};
use burn::module::Module;
use burn::tensor::activation::softmax;
use burn::tensor::module::attention;
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Tensor};

/// Score given to blocked keys before the softmax. Finite, so that a row whose keys are all
/// blocked cannot turn into `NaN` (in the forward pass or in the gradient); `exp` of it
/// underflows to exactly `0.0` next to any real score.
const BLOCKED_SCORE: f32 = -1.0e9;

/// What attention returns: the attended values and, when asked for, the weights that produced them.
#[derive(Debug, Clone)]
pub struct AttentionOutput {
    /// `[batch, heads, queries, d_v]`: the weighted sum of the values.
    pub context: Tensor<4>,
    /// `[batch, heads, queries, keys]`: the attention weights as applied (after dropout while
    /// training), present only when requested.
    pub weights: Option<Tensor<4>>,
}

/// Scaled dot-product attention with optional mask and dropout on the weights.
///
/// Blocked keys get weight exactly `0`; a query whose keys are all blocked gets all-zero
/// weights and a zero context, never `NaN`.
#[derive(Module, Debug)]
pub struct ScaledDotProductAttention {
    /// Dropout applied to the attention weights.
    pub dropout: Dropout,
}

impl ScaledDotProductAttention {
    /// Creates the attention with dropout probability `dropout` on its weights.
    pub fn new(dropout: f64) -> Self {
        Self {
            dropout: DropoutConfig::new(dropout).init(),
        }
    }

    /// Attends `query` `[b, h, q, d_k]` over `key` `[b, h, k, d_k]` and `value` `[b, h, k, d_v]`.
    ///
    /// `mask` is `true` where attention is blocked and may have any shape that broadcasts to
    /// `[b, h, q, k]` (see [`crate::mask`]). The weights are returned only when
    /// `return_weights` is set.
    ///
    /// When neither the weights nor dropout are needed (inference, or `dropout = 0`), Burn's
    /// fused attention op computes the context (a single kernel on backends that have one,
    /// flex included); otherwise, and always in [`forward_reference`](Self::forward_reference),
    /// the explicit formula below. The two agree (tested).
    pub fn forward(
        &self,
        query: Tensor<4>,
        key: Tensor<4>,
        value: Tensor<4>,
        mask: Option<Tensor<4, Bool>>,
        return_weights: bool,
    ) -> AttentionOutput {
        let dropout_active = self.dropout.prob > 0.0 && query.device().is_autodiff();
        if return_weights || dropout_active {
            return self.forward_reference(query, key, value, mask, return_weights);
        }
        let [batch, heads, queries, _] = query.dims();
        let [_, _, keys, _] = key.dims();
        let mask = mask.map(|m| m.expand([batch, heads, queries, keys]));
        AttentionOutput {
            context: attention(
                query,
                key,
                value,
                mask,
                None,
                AttentionModuleOptions::default(),
            ),
            weights: None,
        }
    }

    /// The explicit formula: `softmax(Q K^T / sqrt(d_k))` with blocked scores set before the
    /// softmax and their weights zeroed after it, dropout on the weights, then `· V`. The
    /// reference that the fused path is checked against, and the path that can return the
    /// weights and apply dropout.
    pub fn forward_reference(
        &self,
        query: Tensor<4>,
        key: Tensor<4>,
        value: Tensor<4>,
        mask: Option<Tensor<4, Bool>>,
        return_weights: bool,
    ) -> AttentionOutput {
        let [batch, heads, queries, d_k] = query.dims();
        let [_, _, keys, _] = key.dims();
        let scores = query
            .matmul(key.transpose())
            .div_scalar((d_k as f64).sqrt());
        let weights = match mask {
            Some(mask) => {
                let mask = mask.expand([batch, heads, queries, keys]);
                let weights = softmax(scores.mask_fill(mask.clone(), BLOCKED_SCORE), 3);
                // Rows with every key blocked come out of the softmax uniform; zero them so
                // that a blocked key never carries weight.
                weights.mask_fill(mask, 0.0)
            }
            None => softmax(scores, 3),
        };
        let weights = self.dropout.forward(weights);
        let context = weights.clone().matmul(value);
        AttentionOutput {
            context,
            weights: return_weights.then_some(weights),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, Distribution, TensorData, Tolerance};

    fn device() -> Device {
        let device = Device::flex();
        device.seed(7);
        device
    }

    fn values(t: Tensor<4>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().expect("f32 data")
    }

    #[test]
    fn shapes_and_rows_summing_to_one() {
        let device = device();
        let q = Tensor::<4>::random([2, 3, 5, 8], Distribution::Normal(0.0, 1.0), &device);
        let k = Tensor::<4>::random([2, 3, 7, 8], Distribution::Normal(0.0, 1.0), &device);
        let v = Tensor::<4>::random([2, 3, 7, 4], Distribution::Normal(0.0, 1.0), &device);
        let out = ScaledDotProductAttention::new(0.0).forward(q, k, v, None, true);
        assert_eq!(out.context.dims(), [2, 3, 5, 4]);
        let weights = out.weights.expect("weights requested");
        assert_eq!(weights.dims(), [2, 3, 5, 7]);
        let sums = weights.sum_dim(3);
        sums.into_data().assert_approx_eq::<f32>(
            &TensorData::ones::<f32, _>([2, 3, 5, 1]),
            Tolerance::absolute(1e-6),
        );
    }

    #[test]
    fn weights_are_not_returned_unless_asked() {
        let device = device();
        let x = Tensor::<4>::random([1, 1, 3, 4], Distribution::Default, &device);
        let out = ScaledDotProductAttention::new(0.0).forward(x.clone(), x.clone(), x, None, false);
        assert!(out.weights.is_none());
    }

    #[test]
    fn matches_the_closed_form_on_a_hand_example() {
        // One query [1, 0] against keys [1, 0] and [0, 1], d_k = 2: scores 1/sqrt(2) and 0.
        let device = device();
        let q = Tensor::<4>::from_data(TensorData::from([[[[1.0f32, 0.0]]]]), &device);
        let k = Tensor::<4>::from_data(TensorData::from([[[[1.0f32, 0.0], [0.0, 1.0]]]]), &device);
        let v = Tensor::<4>::from_data(TensorData::from([[[[10.0f32], [20.0]]]]), &device);
        let out = ScaledDotProductAttention::new(0.0).forward(q, k, v, None, true);
        let s = 1.0f64 / 2.0f64.sqrt();
        let w0 = s.exp() / (s.exp() + 1.0);
        let w = values(out.weights.expect("weights"));
        assert!((w[0] as f64 - w0).abs() < 1e-6 && (w[1] as f64 - (1.0 - w0)).abs() < 1e-6);
        let c = values(out.context)[0] as f64;
        assert!(
            (c - (10.0 * w0 + 20.0 * (1.0 - w0))).abs() < 1e-4,
            "context {c}"
        );
    }

    #[test]
    fn masked_keys_get_exactly_zero_weight() {
        let device = device();
        let q = Tensor::<4>::random([2, 2, 4, 8], Distribution::Normal(0.0, 3.0), &device);
        let k = Tensor::<4>::random([2, 2, 4, 8], Distribution::Normal(0.0, 3.0), &device);
        let v = Tensor::<4>::random([2, 2, 4, 8], Distribution::Normal(0.0, 1.0), &device);
        // Block key 3 for batch 0, keys 1..4 for batch 1.
        let mask = Tensor::<4, Bool>::from_data(
            TensorData::from([
                [[[false, false, false, true]]],
                [[[false, true, true, true]]],
            ]),
            &device,
        );
        let out = ScaledDotProductAttention::new(0.0).forward(q, k, v, Some(mask), true);
        let w = values(out.weights.expect("weights"));
        for b in 0..2 {
            for h in 0..2 {
                for i in 0..4 {
                    let row = &w[((b * 2 + h) * 4 + i) * 4..][..4];
                    let blocked: &[usize] = if b == 0 { &[3] } else { &[1, 2, 3] };
                    for &j in blocked {
                        assert_eq!(row[j], 0.0, "b{b} h{h} q{i} k{j}");
                    }
                    let sum: f32 = row.iter().sum();
                    assert!((sum - 1.0).abs() < 1e-6);
                }
            }
        }
    }

    #[test]
    fn fully_masked_row_is_finite_and_zero() {
        let device = device();
        let x = Tensor::<4>::random([1, 1, 3, 4], Distribution::Normal(0.0, 1.0), &device);
        let mask =
            Tensor::<4, Bool>::from_data(TensorData::from([[[[true, true, true]]]]), &device);
        let out =
            ScaledDotProductAttention::new(0.0).forward(x.clone(), x.clone(), x, Some(mask), true);
        let context = values(out.context);
        assert!(context.iter().all(|v| *v == 0.0), "{context:?}");
        assert!(
            values(out.weights.expect("weights"))
                .iter()
                .all(|v| *v == 0.0)
        );
    }

    #[test]
    fn fully_masked_row_has_finite_gradients() {
        let device = Device::flex().autodiff();
        device.seed(3);
        let x = Tensor::<4>::random([1, 1, 3, 4], Distribution::Normal(0.0, 1.0), &device)
            .require_grad();
        let mask =
            Tensor::<4, Bool>::from_data(TensorData::from([[[[true, true, true]]]]), &device);
        let out = ScaledDotProductAttention::new(0.0).forward(
            x.clone(),
            x.clone(),
            x.clone(),
            Some(mask),
            false,
        );
        let grads = out.context.sum().backward();
        let grad = x.grad(&grads).expect("gradient");
        assert!(
            grad.into_data()
                .try_to_vec::<f32>()
                .expect("f32")
                .iter()
                .all(|g| g.is_finite())
        );
    }

    /// Burn's fused op (used when neither weights nor dropout are needed) against our explicit
    /// formula, with padding and look-ahead masks, values and gradients.
    #[test]
    fn fused_path_matches_the_reference_formula() {
        for device in [Device::flex(), Device::flex().autodiff()] {
            device.seed(11);
            let grad = |t: Tensor<4>| {
                if device.is_autodiff() {
                    t.require_grad()
                } else {
                    t
                }
            };
            let q = grad(Tensor::<4>::random(
                [2, 3, 6, 8],
                Distribution::Normal(0.0, 2.0),
                &device,
            ));
            let k = grad(Tensor::<4>::random(
                [2, 3, 6, 8],
                Distribution::Normal(0.0, 2.0),
                &device,
            ));
            let v = grad(Tensor::<4>::random(
                [2, 3, 6, 4],
                Distribution::Normal(0.0, 1.0),
                &device,
            ));
            // The second sequence's last two keys are padding; then look-ahead on top.
            let padding = Tensor::<2, Bool>::from_data(
                TensorData::from([
                    [false, false, false, false, false, false],
                    [false, false, false, false, true, true],
                ]),
                &device,
            );
            let masks = [
                None,
                Some(crate::mask::key_padding_mask(padding.clone())),
                Some(crate::mask::causal_padding_mask(padding)),
            ];
            let attention = ScaledDotProductAttention::new(0.0);
            for mask in masks {
                let fused = attention.forward(q.clone(), k.clone(), v.clone(), mask.clone(), false);
                let reference =
                    attention.forward_reference(q.clone(), k.clone(), v.clone(), mask, false);
                fused.context.clone().into_data().assert_approx_eq::<f32>(
                    &reference.context.clone().into_data(),
                    Tolerance::absolute(1e-5),
                );
                if device.is_autodiff() {
                    let g_fused = fused.context.sum().backward();
                    let g_reference = reference.context.sum().backward();
                    for x in [&q, &k, &v] {
                        let a = x.grad(&g_fused).expect("fused gradient");
                        let b = x.grad(&g_reference).expect("reference gradient");
                        a.into_data()
                            .assert_approx_eq::<f32>(&b.into_data(), Tolerance::absolute(1e-4));
                    }
                }
            }
        }
    }
}
