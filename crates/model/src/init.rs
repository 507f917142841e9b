//! Parameter initialisation shared by the modules: the scheme `torch.nn.Transformer` uses.

use burn::module::Initializer;
use burn::nn::{LayerNorm, LayerNormConfig, Linear};
use burn::tensor::Device;

/// A `d_in -> d_out` linear layer with Xavier-uniform weights and a zero bias.
pub(crate) fn linear(d_in: usize, d_out: usize, device: &Device) -> Linear {
    linear_with_gain(d_in, d_out, 1.0, device)
}

/// As [`linear`], with the Xavier-uniform bound multiplied by `gain`.
pub(crate) fn linear_with_gain(d_in: usize, d_out: usize, gain: f64, device: &Device) -> Linear {
    Linear {
        weight: Initializer::XavierUniform { gain }.init_with(
            [d_in, d_out],
            Some(d_in),
            Some(d_out),
            device,
        ),
        bias: Some(Initializer::Zeros.init([d_out], device)),
    }
}

/// A LayerNorm over `d_model` features, starting as the identity.
pub(crate) fn layer_norm(d_model: usize, epsilon: f64, device: &Device) -> LayerNorm {
    LayerNormConfig::new(d_model)
        .with_epsilon(epsilon)
        .init(device)
}

/// Relative slack for checking f32 weights against a bound computed in f64: the largest draw of
/// a uniform initialiser may round a few f32 ulps past it.
#[cfg(test)]
pub(crate) const F32_BOUND_SLACK: f64 = 1.0 + 1e-6;
