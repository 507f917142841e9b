//! Helpers shared by the model's integration tests.

use rosetta_model::{NormPosition, TransformerConfig};

/// A model small enough for a test: vocabularies of 30 and 40, d_model 16, 4 heads, 2 + 2
/// layers, no dropout, 32 positions.
pub fn small(norm: NormPosition) -> TransformerConfig {
    TransformerConfig::new(30, 40)
        .with_d_model(16)
        .with_n_heads(4)
        .with_d_ff(32)
        .with_n_encoder_layers(2)
        .with_n_decoder_layers(2)
        .with_dropout(0.0)
        .with_attention_dropout(0.0)
        .with_max_positions(32)
        .with_norm_position(norm)
}
