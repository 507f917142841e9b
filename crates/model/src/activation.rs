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
}

impl Activation {
    /// Applies the activation element-wise.
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        match self {
            Activation::Relu => activation::relu(x),
            Activation::Gelu => activation::gelu(x),
        }
    }
}
