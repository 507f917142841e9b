//! The encoder: a stack of self-attention + feed-forward layers over the embedded source.

use burn::module::Module;
use burn::nn::LayerNorm;
use burn::tensor::{Bool, Device, Tensor};

use crate::config::NormPosition;
use crate::dropout::Dropout;
use crate::feed_forward::PositionWiseFeedForward;
use crate::multi_head::MultiHeadAttention;
use crate::positional::SinusoidalPositionalEncoding;
use crate::residual::residual;
use crate::stack::{LayerConfig, StackConfig};

/// One encoder layer: multi-head self-attention, then the feed-forward network, each inside a
/// residual connection with LayerNorm.
#[derive(Module, Debug)]
pub struct EncoderLayer {
    /// Self-attention over the source.
    pub self_attention: MultiHeadAttention,
    /// LayerNorm of the self-attention block.
    pub self_attention_norm: LayerNorm,
    /// Position-wise feed-forward network.
    pub feed_forward: PositionWiseFeedForward,
    /// LayerNorm of the feed-forward block.
    pub feed_forward_norm: LayerNorm,
    /// Dropout on each sub-layer's output before the residual sum.
    pub dropout: Dropout,
    /// Post-norm or pre-norm.
    #[module(skip)]
    pub norm_position: NormPosition,
}

impl LayerConfig {
    /// Builds an encoder layer.
    pub fn init_encoder_layer(&self, device: &Device) -> EncoderLayer {
        EncoderLayer {
            self_attention: self.attention.init(device),
            self_attention_norm: self.layer_norm(device),
            feed_forward: self.feed_forward.init(device),
            feed_forward_norm: self.layer_norm(device),
            dropout: self.dropout(),
            norm_position: self.norm_position,
        }
    }
}

impl EncoderLayer {
    /// `[batch, src_len, d_model] -> [batch, src_len, d_model]`; `mask` blocks padding keys.
    pub fn forward(&self, x: Tensor<3>, mask: Option<Tensor<4, Bool>>) -> Tensor<3> {
        let (x, ()) = residual(
            x,
            &self.self_attention_norm,
            &self.dropout,
            self.norm_position,
            |h| {
                (
                    self.self_attention
                        .forward(h.clone(), h, mask, false)
                        .output,
                    (),
                )
            },
        );
        let (x, ()) = residual(
            x,
            &self.feed_forward_norm,
            &self.dropout,
            self.norm_position,
            |h| (self.feed_forward.forward(h), ()),
        );
        x
    }
}

/// The encoder stack: positional encoding and dropout on the (scaled) embeddings, `N` layers,
/// and an optional final LayerNorm.
#[derive(Module, Debug)]
pub struct Encoder {
    /// Sinusoidal positions added to the embeddings.
    pub positional: SinusoidalPositionalEncoding,
    /// Dropout on embeddings + positions.
    pub dropout: Dropout,
    /// The layers, applied in order.
    pub layers: Vec<EncoderLayer>,
    /// Final LayerNorm (pre-norm models need it; `torch.nn.Transformer` always has it).
    pub norm: Option<LayerNorm>,
}

impl StackConfig {
    /// Builds an encoder stack.
    pub fn init_encoder(&self, device: &Device) -> Encoder {
        let stack = self.build(device, LayerConfig::init_encoder_layer);
        Encoder {
            positional: stack.positional,
            dropout: stack.dropout,
            layers: stack.layers,
            norm: stack.norm,
        }
    }
}

impl Encoder {
    /// Encodes `embedded` `[batch, src_len, d_model]` (token embeddings already scaled by
    /// `sqrt(d_model)`) into the memory the decoder attends to.
    pub fn forward(&self, embedded: Tensor<3>, mask: Option<Tensor<4, Bool>>) -> Tensor<3> {
        let mut x = self.dropout.forward(self.positional.forward(embedded, 0));
        for layer in &self.layers {
            x = layer.forward(x, mask.clone());
        }
        match &self.norm {
            Some(norm) => norm.forward(x),
            None => x,
        }
    }
}
