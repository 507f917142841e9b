//! Tutorial demonstration: multi-head attention's shapes, and its parameter count, which does
//! not depend on the number of heads: the heads split the `d_model`-wide projections, they do not
//! add any. The count is `4 (d² + d)`: `W_q`, `W_k`, `W_v` **and** the output projection `W_o`,
//! each with a bias (1,050,624 at `d_model = 512`; the tutorial's `3d² + d` = 786,944 forgets
//! `W_o` and two of the biases).

use burn::module::Module;
use burn::tensor::{Device, Distribution, Tensor};

use rosetta_model::multi_head::MultiHeadAttention;
use rosetta_model::params;

/// One configuration of the demonstration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeadsRow {
    /// Model width.
    pub d_model: usize,
    /// Number of heads.
    pub n_heads: usize,
    /// Width of each head, `d_model / n_heads`.
    pub d_k: usize,
    /// Parameters of the built module.
    pub params: usize,
    /// The closed form `4 (d² + d)` ([`params::multi_head_attention`]).
    pub closed_form: usize,
    /// Input `[batch, len, d_model]`.
    pub input_shape: [usize; 3],
    /// Output `[batch, len, d_model]`.
    pub output_shape: [usize; 3],
    /// Attention weights `[batch, heads, len, len]`.
    pub weights_shape: [usize; 4],
}

/// Builds `MultiHeadAttention` for each `(d_model, n_heads)` and runs self-attention on a random
/// `[batch, len, d_model]` input (seeded by `seed`). `n_heads` must divide `d_model`.
pub fn multi_head_demo(
    configs: &[(usize, usize)],
    batch: usize,
    len: usize,
    seed: u64,
) -> Vec<HeadsRow> {
    let device = Device::flex();
    device.seed(seed);
    configs
        .iter()
        .map(|&(d_model, n_heads)| {
            let mha = MultiHeadAttention::new(d_model, n_heads, 0.0, &device);
            let x = Tensor::<3>::random(
                [batch, len, d_model],
                Distribution::Normal(0.0, 1.0),
                &device,
            );
            let out = mha.forward(x.clone(), x.clone(), None, true);
            HeadsRow {
                d_model,
                n_heads,
                d_k: mha.d_k,
                params: mha.num_params(),
                closed_form: params::multi_head_attention(d_model),
                input_shape: x.dims(),
                output_shape: out.output.dims(),
                weights_shape: out.weights.map(|w| w.dims()).unwrap_or_default(),
            }
        })
        .collect()
}
