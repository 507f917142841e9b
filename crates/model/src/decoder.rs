//! The decoder: a stack of masked self-attention + cross-attention + feed-forward layers.

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

/// One decoder layer: masked self-attention, cross-attention over the encoder memory, then the
/// feed-forward network, each inside a residual connection with LayerNorm.
#[derive(Module, Debug)]
pub struct DecoderLayer {
    /// Causal self-attention over the target prefix.
    pub self_attention: MultiHeadAttention,
    /// LayerNorm of the self-attention block.
    pub self_attention_norm: LayerNorm,
    /// Attention from target positions to the encoder memory.
    pub cross_attention: MultiHeadAttention,
    /// LayerNorm of the cross-attention block.
    pub cross_attention_norm: LayerNorm,
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
    /// Builds a decoder layer; its cross-attention has the self-attention's settings.
    pub fn init_decoder_layer(&self, device: &Device) -> DecoderLayer {
        DecoderLayer {
            self_attention: self.attention.init(device),
            self_attention_norm: self.layer_norm(device),
            cross_attention: self.attention.init(device),
            cross_attention_norm: self.layer_norm(device),
            feed_forward: self.feed_forward.init(device),
            feed_forward_norm: self.layer_norm(device),
            dropout: self.dropout(),
            norm_position: self.norm_position,
        }
    }
}

impl DecoderLayer {
    /// One layer over the target `x` `[batch, tgt_len, d_model]` and the encoder `memory`
    /// `[batch, src_len, d_model]`. Returns the new hidden states and, when
    /// `return_weights` is set, the cross-attention weights `[batch, heads, tgt_len, src_len]`.
    pub fn forward(
        &self,
        x: Tensor<3>,
        memory: Tensor<3>,
        self_mask: Option<Tensor<4, Bool>>,
        memory_mask: Option<Tensor<4, Bool>>,
        return_weights: bool,
    ) -> (Tensor<3>, Option<Tensor<4>>) {
        self.run(
            x,
            |attention, h| attention.forward(h.clone(), h, self_mask, false).output,
            |attention, h| {
                let out = attention.forward(h, memory, memory_mask, return_weights);
                (out.output, out.weights)
            },
        )
    }

    /// The body of the layer, shared by the full pass ([`forward`](Self::forward)) and the
    /// incremental one ([`forward_step`](Self::forward_step)): the three residual blocks, with
    /// the two attentions supplied by the caller (which decides where keys and values come
    /// from). `self_attend` and `cross_attend` receive the attention module and the (possibly
    /// normalised) block input.
    pub(crate) fn run(
        &self,
        x: Tensor<3>,
        self_attend: impl FnOnce(&MultiHeadAttention, Tensor<3>) -> Tensor<3>,
        cross_attend: impl FnOnce(&MultiHeadAttention, Tensor<3>) -> (Tensor<3>, Option<Tensor<4>>),
    ) -> (Tensor<3>, Option<Tensor<4>>) {
        let position = self.norm_position;
        let (x, ()) = residual(x, &self.self_attention_norm, &self.dropout, position, |h| {
            (self_attend(&self.self_attention, h), ())
        });
        let (x, weights) = residual(
            x,
            &self.cross_attention_norm,
            &self.dropout,
            position,
            |h| cross_attend(&self.cross_attention, h),
        );
        let (x, ()) = residual(x, &self.feed_forward_norm, &self.dropout, position, |h| {
            (self.feed_forward.forward(h), ())
        });
        (x, weights)
    }
}

/// What the decoder stack returns.
#[derive(Debug, Clone)]
pub struct DecoderOutput {
    /// `[batch, tgt_len, d_model]`: the final hidden states (before the output projection).
    pub hidden: Tensor<3>,
    /// One `[batch, heads, tgt_len, src_len]` tensor of cross-attention weights per layer when
    /// requested, else empty.
    pub cross_attention: Vec<Tensor<4>>,
}

/// The decoder stack: positional encoding and dropout on the (scaled) target embeddings, `N`
/// layers, and an optional final LayerNorm.
#[derive(Module, Debug)]
pub struct Decoder {
    /// Sinusoidal positions added to the embeddings.
    pub positional: SinusoidalPositionalEncoding,
    /// Dropout on embeddings + positions.
    pub dropout: Dropout,
    /// The layers, applied in order.
    pub layers: Vec<DecoderLayer>,
    /// Final LayerNorm (pre-norm models need it; `torch.nn.Transformer` always has it).
    pub norm: Option<LayerNorm>,
}

impl StackConfig {
    /// Builds a decoder stack.
    pub fn init_decoder(&self, device: &Device) -> Decoder {
        let stack = self.build(device, LayerConfig::init_decoder_layer);
        Decoder {
            positional: stack.positional,
            dropout: stack.dropout,
            layers: stack.layers,
            norm: stack.norm,
        }
    }
}

impl Decoder {
    /// Decodes `embedded` `[batch, tgt_len, d_model]` (scaled target embeddings) against the
    /// encoder `memory`. `self_mask` must block future positions (and padding keys);
    /// `memory_mask` blocks source padding.
    pub fn forward(
        &self,
        embedded: Tensor<3>,
        memory: Tensor<3>,
        self_mask: Option<Tensor<4, Bool>>,
        memory_mask: Option<Tensor<4, Bool>>,
        return_weights: bool,
    ) -> DecoderOutput {
        let mut x = self.embed_positions(embedded, 0);
        let mut cross_attention = Vec::new();
        for layer in &self.layers {
            let (next, weights) = layer.forward(
                x,
                memory.clone(),
                self_mask.clone(),
                memory_mask.clone(),
                return_weights,
            );
            x = next;
            cross_attention.extend(weights);
        }
        DecoderOutput {
            hidden: self.final_norm(x),
            cross_attention,
        }
    }

    /// Embedding dropout after adding the positions `start..start + len` to `embedded`.
    pub(crate) fn embed_positions(&self, embedded: Tensor<3>, start: usize) -> Tensor<3> {
        self.dropout
            .forward(self.positional.forward(embedded, start))
    }

    /// The optional final LayerNorm.
    pub(crate) fn final_norm(&self, x: Tensor<3>) -> Tensor<3> {
        match &self.norm {
            Some(norm) => norm.forward(x),
            None => x,
        }
    }
}
