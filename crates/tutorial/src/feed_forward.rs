//! Tutorial demonstration: the position-wise feed-forward network widens each position to
//! `d_ff` (4 x `d_model` in the paper) and back; shapes and parameter count.

use burn::module::Module;
use burn::tensor::{Device, Distribution, Tensor};

use rosetta_model::activation::Activation;
use rosetta_model::feed_forward::PositionWiseFeedForward;
use rosetta_model::params;

/// What the demonstration measured.
#[derive(Debug, Clone, PartialEq)]
pub struct FeedForwardDemo {
    /// Model width.
    pub d_model: usize,
    /// Inner width.
    pub d_ff: usize,
    /// `d_ff / d_model`.
    pub expansion: f64,
    /// Input `[batch, len, d_model]`.
    pub input_shape: [usize; 3],
    /// After the first linear map and the activation: `[batch, len, d_ff]`.
    pub hidden_shape: [usize; 3],
    /// Output `[batch, len, d_model]`.
    pub output_shape: [usize; 3],
    /// Parameters of the built network.
    pub params: usize,
    /// The closed form `2 d d_ff + d_ff + d` ([`params::feed_forward`]).
    pub closed_form: usize,
}

/// Builds the ReLU network `d_model -> d_ff -> d_model` and runs it on a random
/// `[batch, len, d_model]` input (seeded by `seed`).
pub fn feed_forward_demo(
    d_model: usize,
    d_ff: usize,
    batch: usize,
    len: usize,
    seed: u64,
) -> FeedForwardDemo {
    let device = Device::flex();
    device.seed(seed);
    let ffn = PositionWiseFeedForward::new(d_model, d_ff, 0.0, Activation::Relu, &device);
    let x = Tensor::<3>::random(
        [batch, len, d_model],
        Distribution::Normal(0.0, 1.0),
        &device,
    );
    let hidden = ffn.activation.forward(ffn.linear_inner.forward(x.clone()));
    FeedForwardDemo {
        d_model,
        d_ff,
        expansion: d_ff as f64 / d_model as f64,
        input_shape: x.dims(),
        hidden_shape: hidden.dims(),
        output_shape: ffn.forward(x).dims(),
        params: ffn.num_params(),
        closed_form: params::feed_forward(d_model, d_ff),
    }
}
