//! The residual connection around every sub-layer, with its LayerNorm before or after.

use burn::nn::LayerNorm;

use crate::dropout::Dropout;
use burn::tensor::Tensor;

use crate::config::NormPosition;

/// Wraps `sublayer` (which may return a by-product, such as attention weights) in a residual
/// connection with dropout on its output:
///
/// - post-norm: `LayerNorm(x + dropout(sublayer(x)))`;
/// - pre-norm: `x + dropout(sublayer(LayerNorm(x)))`.
pub(crate) fn residual<T>(
    x: Tensor<3>,
    norm: &LayerNorm,
    dropout: &Dropout,
    position: NormPosition,
    sublayer: impl FnOnce(Tensor<3>) -> (Tensor<3>, T),
) -> (Tensor<3>, T) {
    match position {
        NormPosition::Post => {
            let (out, extra) = sublayer(x.clone());
            (norm.forward(x + dropout.forward(out)), extra)
        }
        NormPosition::Pre => {
            let (out, extra) = sublayer(norm.forward(x.clone()));
            (x + dropout.forward(out), extra)
        }
    }
}
