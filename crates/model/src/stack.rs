//! What the encoder and decoder stacks share: the settings of their layers ([`LayerConfig`]) and
//! of the stacks themselves ([`StackConfig`]: the positional encoding, the dropout on the
//! embedded input, the layers, and the optional final LayerNorm).

use burn::config::Config;
use burn::nn::LayerNorm;
use burn::tensor::Device;

use crate::config::NormPosition;
use crate::dropout::{Dropout, DropoutConfig};
use crate::feed_forward::PositionWiseFeedForwardConfig;
use crate::init;
use crate::multi_head::MultiHeadAttentionConfig;
use crate::positional::{
    PositionLayout, SinusoidalPositionalEncoding, SinusoidalPositionalEncodingConfig,
};

/// The settings of one encoder or decoder layer: an [`EncoderLayer`](crate::EncoderLayer) by
/// [`init_encoder_layer`](Self::init_encoder_layer), a [`DecoderLayer`](crate::DecoderLayer)
/// (whose cross-attention takes the self-attention's settings) by
/// [`init_decoder_layer`](Self::init_decoder_layer).
#[derive(Config, Debug)]
pub struct LayerConfig {
    /// Every attention block of the layer.
    pub attention: MultiHeadAttentionConfig,
    /// The feed-forward block.
    pub feed_forward: PositionWiseFeedForwardConfig,
    /// Dropout on each sub-layer's output before the residual sum.
    #[config(default = 0.1)]
    pub dropout: f64,
    /// Epsilon of the layer's LayerNorms.
    #[config(default = 1e-5)]
    pub layer_norm_eps: f64,
    /// Post-norm (the paper's) or pre-norm residual blocks.
    #[config(default = "NormPosition::Post")]
    pub norm_position: NormPosition,
}

impl LayerConfig {
    /// Width of the layer's input and output.
    pub fn d_model(&self) -> usize {
        self.attention.d_model
    }

    /// A LayerNorm of the layer's width and epsilon, starting as the identity.
    pub(crate) fn layer_norm(&self, device: &Device) -> LayerNorm {
        init::layer_norm(self.d_model(), self.layer_norm_eps, device)
    }

    /// The dropout of the layer's sub-layer outputs.
    pub(crate) fn dropout(&self) -> Dropout {
        DropoutConfig::new(self.dropout).init()
    }
}

/// The settings of an encoder or a decoder stack: `n_layers` layers of `layer`, positions
/// `0..max_positions`, and a final LayerNorm when `final_norm`. Built by
/// [`init_encoder`](Self::init_encoder) or [`init_decoder`](Self::init_decoder).
#[derive(Config, Debug)]
pub struct StackConfig {
    /// Every layer of the stack.
    pub layer: LayerConfig,
    /// Number of layers.
    pub n_layers: usize,
    /// Longest sequence the positional encoding covers.
    pub max_positions: usize,
    /// Whether the stack ends with a LayerNorm.
    #[config(default = false)]
    pub final_norm: bool,
    /// Where the positional encoding puts its sines and cosines.
    #[config(default = "PositionLayout::Interleaved")]
    pub positions: PositionLayout,
}

/// The parts of a stack of `L` layers, built in the order their parameters are drawn.
pub(crate) struct Stack<L> {
    pub(crate) positional: SinusoidalPositionalEncoding,
    pub(crate) dropout: Dropout,
    pub(crate) layers: Vec<L>,
    pub(crate) norm: Option<LayerNorm>,
}

impl StackConfig {
    /// The stack's parts, its layers made by `layer` from [`layer`](Self::layer).
    pub(crate) fn build<L>(
        &self,
        device: &Device,
        layer: impl Fn(&LayerConfig, &Device) -> L,
    ) -> Stack<L> {
        Stack {
            positional: SinusoidalPositionalEncodingConfig::new(
                self.max_positions,
                self.layer.d_model(),
            )
            .with_layout(self.positions)
            .init(device),
            dropout: self.layer.dropout(),
            layers: (0..self.n_layers)
                .map(|_| layer(&self.layer, device))
                .collect(),
            norm: self.final_norm.then(|| self.layer.layer_norm(device)),
        }
    }
}

#[cfg(test)]
mod tests {
    use burn::module::Module;

    use super::*;
    use crate::TransformerConfig;

    #[test]
    fn the_model_configuration_describes_its_stacks() {
        let config = TransformerConfig::new(50, 60)
            .with_d_model(32)
            .with_n_heads(4)
            .with_d_ff(48)
            .with_n_encoder_layers(3)
            .with_n_decoder_layers(2)
            .with_dropout(0.2)
            .with_attention_dropout(0.05)
            .with_max_positions(40)
            .with_norm_position(NormPosition::Pre);
        let encoder = config.encoder_config();
        let decoder = config.decoder_config();
        assert_eq!((encoder.n_layers, decoder.n_layers), (3, 2));
        assert_eq!((encoder.max_positions, encoder.layer.d_model()), (40, 32));
        // Pre-norm stacks end with a LayerNorm unless told otherwise.
        assert!(encoder.final_norm && decoder.final_norm);
        assert!(
            !config
                .clone()
                .with_final_norm(Some(false))
                .encoder_config()
                .final_norm
        );
        let layer = &encoder.layer;
        assert_eq!((layer.dropout, layer.attention.dropout), (0.2, 0.05));
        assert_eq!(
            (layer.feed_forward.d_ff, layer.norm_position),
            (48, NormPosition::Pre)
        );
    }

    #[test]
    fn stacks_have_their_layers_positions_and_final_norm() {
        let device = Device::flex();
        let config = TransformerConfig::new(50, 60)
            .with_d_model(16)
            .with_n_heads(2)
            .with_d_ff(24)
            .with_n_encoder_layers(3)
            .with_n_decoder_layers(1)
            .with_max_positions(12);
        let encoder = config.encoder_config().init_encoder(&device);
        assert_eq!(encoder.layers.len(), 3);
        assert_eq!(encoder.positional.max_positions(), 12);
        assert!(encoder.norm.is_none(), "post-norm: no final LayerNorm");
        let decoder = config
            .decoder_config()
            .with_final_norm(true)
            .init_decoder(&device);
        assert_eq!(decoder.layers.len(), 1);
        assert!(decoder.norm.is_some());
        // One decoder layer: self- and cross-attention (4 · (16·16 + 16) each), the
        // feed-forward network (16·24 + 24 + 24·16 + 16) and three LayerNorms (2 · 16 each);
        // the final LayerNorm; the positions are a constant, not parameters.
        let layer = 2 * 4 * (16 * 16 + 16) + (16 * 24 + 24 + 24 * 16 + 16) + 3 * 2 * 16;
        assert_eq!(decoder.num_params(), layer + 2 * 16);
    }
}
