//! Closed-form parameter counts, for checking a built model against the formulas.

use crate::config::TransformerConfig;

/// `W_q, W_k, W_v, W_o`, each `d x d` plus a bias: `4d^2 + 4d`.
pub fn multi_head_attention(d_model: usize) -> usize {
    4 * (d_model * d_model + d_model)
}

/// Two linear maps `d -> d_ff -> d` with biases: `2 d d_ff + d_ff + d`.
pub fn feed_forward(d_model: usize, d_ff: usize) -> usize {
    2 * d_model * d_ff + d_ff + d_model
}

/// Gain and bias: `2d`.
pub fn layer_norm(d_model: usize) -> usize {
    2 * d_model
}

/// Self-attention, feed-forward and two LayerNorms.
pub fn encoder_layer(d_model: usize, d_ff: usize) -> usize {
    multi_head_attention(d_model) + feed_forward(d_model, d_ff) + 2 * layer_norm(d_model)
}

/// Self-attention, cross-attention, feed-forward and three LayerNorms.
pub fn decoder_layer(d_model: usize, d_ff: usize) -> usize {
    2 * multi_head_attention(d_model) + feed_forward(d_model, d_ff) + 3 * layer_norm(d_model)
}

/// The parameters of a whole model, by component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breakdown {
    /// The token embeddings (one table when shared).
    pub embeddings: usize,
    /// All encoder layers.
    pub encoder_layers: usize,
    /// All decoder layers.
    pub decoder_layers: usize,
    /// The final LayerNorms of the stacks (pre-norm models).
    pub final_norms: usize,
    /// The output projection and its bias (when tied to the embedding: only its optional bias).
    pub output_projection: usize,
}

impl Breakdown {
    /// The components with their names, in the model's order.
    pub fn rows(&self) -> [(&'static str, usize); 5] {
        [
            ("embeddings", self.embeddings),
            ("encoder layers", self.encoder_layers),
            ("decoder layers", self.decoder_layers),
            ("final norms", self.final_norms),
            ("output projection", self.output_projection),
        ]
    }

    /// Their sum.
    pub fn total(&self) -> usize {
        self.rows().iter().map(|(_, n)| n).sum()
    }
}

/// The model as configured, by component: embeddings (one table when shared), layers, final
/// norms, and the output projection (none when tied).
pub fn breakdown(config: &TransformerConfig) -> Breakdown {
    let d = config.d_model;
    let target_embedding = if config.share_embeddings {
        0
    } else {
        config.target_vocab_size * d
    };
    Breakdown {
        embeddings: config.source_vocab_size * d + target_embedding,
        encoder_layers: config.n_encoder_layers * encoder_layer(d, config.d_ff),
        decoder_layers: config.n_decoder_layers * decoder_layer(d, config.d_ff),
        final_norms: if config.has_final_norm() {
            2 * layer_norm(d)
        } else {
            0
        },
        output_projection: if config.tie_output_projection {
            if config.output_bias() {
                config.target_vocab_size
            } else {
                0
            }
        } else {
            d * config.target_vocab_size + config.target_vocab_size
        },
    }
}

/// The whole model as configured: the sum of [`breakdown`].
pub fn transformer(config: &TransformerConfig) -> usize {
    breakdown(config).total()
}
