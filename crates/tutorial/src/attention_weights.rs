//! Tutorial demonstration: what the attention weights are. Self-attention over three positions
//! with `Q = K`: each row of the weight matrix is one position's distribution over all positions;
//! with a padding mask or a look-ahead mask the blocked entries are exactly zero.

use burn::tensor::{Bool, Device, Distribution, Tensor, TensorData};

use rosetta_model::attention::ScaledDotProductAttention;
use rosetta_model::mask;

use crate::{rows, values};

/// The weight matrices of the demonstration, each `positions x positions` (query rows, key
/// columns), for batch 0 and head 0.
#[derive(Debug, Clone)]
pub struct AttentionWeightsDemo {
    /// `d_k`, the width of each query and key.
    pub d_k: usize,
    /// Shape of the weights as the module returns them: `[batch, heads, queries, keys]`.
    pub weights_shape: [usize; 4],
    /// Shape of the attended values: `[batch, heads, queries, d_k]`.
    pub context_shape: [usize; 4],
    /// No mask.
    pub weights: Vec<Vec<f32>>,
    /// Keys blocked as padding (`true` = padding), the last `padded_keys` positions.
    pub padding: Vec<bool>,
    /// With the padding mask: the padding columns are zero.
    pub padded_weights: Vec<Vec<f32>>,
    /// With the look-ahead mask: everything above the diagonal is zero.
    pub look_ahead_weights: Vec<Vec<f32>>,
}

/// Runs self-attention over `positions` random positions of width `d_k` (seeded by `seed`),
/// with `Q = K` and no dropout (the inference view: the tutorial's module keeps dropout 0.1
/// active, so its printed rows do not sum to 1), three times: unmasked, with the last
/// `padded_keys` positions as padding, and with the look-ahead mask.
///
/// With `Q = K` the diagonal score `q·q / sqrt(d_k) ≈ sqrt(d_k)` dwarfs the others (`≈ N(0, 1)`),
/// so each position attends almost only to itself.
pub fn attention_weights_demo(
    d_k: usize,
    positions: usize,
    padded_keys: usize,
    seed: u64,
) -> AttentionWeightsDemo {
    let device = Device::flex();
    device.seed(seed);
    let q = Tensor::<4>::random(
        [1, 1, positions, d_k],
        Distribution::Normal(0.0, 1.0),
        &device,
    );
    let k = q.clone();
    let v = Tensor::<4>::random(
        [1, 1, positions, d_k],
        Distribution::Normal(0.0, 1.0),
        &device,
    );
    let attention = ScaledDotProductAttention::new(0.0);
    let run = |mask: Option<Tensor<4, Bool>>| {
        attention.forward(q.clone(), k.clone(), v.clone(), mask, true)
    };

    let plain = run(None);
    let context_shape = plain.context.dims();
    let plain_weights = plain
        .weights
        .unwrap_or_else(|| Tensor::zeros([1, 1, 1, 1], &device));
    let weights_shape = plain_weights.dims();

    let padded = padded_keys.min(positions);
    let padding: Vec<bool> = (0..positions).map(|j| j >= positions - padded).collect();
    let padding_tensor =
        Tensor::<2, Bool>::from_data(TensorData::new(padding.clone(), [1, positions]), &device);
    let padded_run = run(Some(mask::key_padding_mask(padding_tensor)));
    let causal = mask::look_ahead_mask(positions, &device).reshape([1, 1, positions, positions]);
    let look_ahead_run = run(Some(causal));

    let matrix = |w: Option<Tensor<4>>| rows(&w.map(values).unwrap_or_default(), positions);
    AttentionWeightsDemo {
        d_k,
        weights_shape,
        context_shape,
        weights: rows(&values(plain_weights), positions),
        padding,
        padded_weights: matrix(padded_run.weights),
        look_ahead_weights: matrix(look_ahead_run.weights),
    }
}
