//! What the encoder and decoder stacks share: the positional encoding, the dropout on the
//! embedded input, the layers, and the optional final LayerNorm.

use burn::nn::LayerNorm;
use burn::tensor::Device;

use crate::config::TransformerConfig;
use crate::dropout::{Dropout, DropoutConfig};
use crate::init;
use crate::positional::SinusoidalPositionalEncoding;

/// The parts of a stack of `L` layers, built in the order their parameters are drawn.
pub(crate) struct Stack<L> {
    pub(crate) positional: SinusoidalPositionalEncoding,
    pub(crate) dropout: Dropout,
    pub(crate) layers: Vec<L>,
    pub(crate) norm: Option<LayerNorm>,
}

impl<L> Stack<L> {
    /// `n_layers` layers made by `layer`, with the model's positions, input dropout and (when
    /// [`TransformerConfig::has_final_norm`]) final LayerNorm.
    pub(crate) fn new(
        config: &TransformerConfig,
        n_layers: usize,
        device: &Device,
        layer: impl Fn() -> L,
    ) -> Self {
        Self {
            positional: SinusoidalPositionalEncoding::new(
                config.max_positions,
                config.d_model,
                device,
            ),
            dropout: DropoutConfig::new(config.dropout).init(),
            layers: (0..n_layers).map(|_| layer()).collect(),
            norm: config
                .has_final_norm()
                .then(|| init::layer_norm(config.d_model, config.layer_norm_eps, device)),
        }
    }
}
