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

/// The whole model as configured: embeddings (one table when shared), layers, final norms,
/// and the output projection (none when tied).
pub fn transformer(config: &TransformerConfig) -> usize {
    let d = config.d_model;
    let source_embedding = config.source_vocab_size * d;
    let target_embedding = if config.share_embeddings {
        0
    } else {
        config.target_vocab_size * d
    };
    let output = if config.tie_output_projection {
        0
    } else {
        d * config.target_vocab_size + config.target_vocab_size
    };
    let final_norms = if config.has_final_norm() {
        2 * layer_norm(d)
    } else {
        0
    };
    source_embedding
        + target_embedding
        + config.n_encoder_layers * encoder_layer(d, config.d_ff)
        + config.n_decoder_layers * decoder_layer(d, config.d_ff)
        + final_norms
        + output
}
