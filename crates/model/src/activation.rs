//! The non-linearity used inside the position-wise feed-forward network.

use burn::config::Config;
use burn::tensor::Tensor;
use burn::tensor::activation;

/// The activation between the two linear layers of the feed-forward network.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `max(0, x)`, as in the paper and the seed tutorials.
    Relu,
    /// The exact (erf) Gaussian error linear unit, as in BERT and PyTorch's `"gelu"`.
    Gelu,
    /// `x · sigmoid(x)` (SiLU), Hugging Face's `"swish"`/`"silu"`: most OPUS-MT models.
    Swish,
}

impl Activation {
    /// Applies the activation element-wise.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        match self {
            Activation::Relu => activation::relu(x),
            Activation::Gelu => activation::gelu(x),
            Activation::Swish => activation::silu(x),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    /// Each activation against its closed form, in f64.
    #[test]
    fn activations_equal_their_closed_forms() {
        let device = Device::flex();
        let xs = [-3.0f32, -0.5, 0.0, 0.25, 2.0];
        let input = Tensor::<1>::from_data(TensorData::from(xs), &device);
        let erf = |x: f64| {
            // Abramowitz-Stegun 7.1.26 is too coarse; integrate the series instead.
            let mut sum = 0.0;
            let mut term = x;
            for n in 0..60 {
                sum += term / (2 * n + 1) as f64;
                term *= -x * x / (n + 1) as f64;
            }
            2.0 / std::f64::consts::PI.sqrt() * sum
        };
        for (activation, closed) in [
            (
                Activation::Relu,
                &(|x: f64| x.max(0.0)) as &dyn Fn(f64) -> f64,
            ),
            (Activation::Gelu, &|x: f64| {
                0.5 * x * (1.0 + erf(x / 2f64.sqrt()))
            }),
            (Activation::Swish, &|x: f64| x / (1.0 + (-x).exp())),
        ] {
            let out = activation
                .forward(input.clone())
                .into_data()
                .try_to_vec::<f32>()
                .expect("f32");
            for (&x, &y) in xs.iter().zip(&out) {
                let expected = closed(f64::from(x));
                assert!(
                    (f64::from(y) - expected).abs() < 1e-6,
                    "{activation:?}({x}) = {y}, expected {expected}"
                );
            }
        }
    }
}
