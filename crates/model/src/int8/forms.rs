//! The int8 forms of the model's modules, kept beside their float weights.

use std::sync::Arc;

use burn::nn::Linear;

use super::{Int8Matrix, host_values, quantize_weight};

/// A multi-head attention's projections in int8: the query, key and value projections joined
/// (`[d_model, 3 d_model]`, a self-attention's one product per step), the query alone and the
/// key and value joined (a cross-attention's decoder side and its memory), and the output
/// projection.
#[derive(Debug, Clone)]
pub struct AttentionInt8 {
    /// Query, key and value side by side.
    pub query_key_value: Arc<Int8Matrix>,
    /// The query projection.
    pub query: Arc<Int8Matrix>,
    /// Key and value side by side.
    pub key_value: Arc<Int8Matrix>,
    /// The output projection of the merged heads.
    pub output: Arc<Int8Matrix>,
}

impl AttentionInt8 {
    /// Quantizes the four projections (a missing bias joins as zeros).
    pub fn new(w_q: &Linear, w_k: &Linear, w_v: &Linear, w_o: &Linear) -> Self {
        let joined = |parts: &[&Linear]| {
            let (weight, bias) = crate::multi_head::joined(parts);
            quantize_weight(weight, bias.map(host_values).as_deref())
        };
        Self {
            query_key_value: joined(&[w_q, w_k, w_v]),
            query: joined(&[w_q]),
            key_value: joined(&[w_k, w_v]),
            output: joined(&[w_o]),
        }
    }

    /// The bytes the four matrices hold.
    pub fn size_bytes(&self) -> usize {
        [
            &self.query_key_value,
            &self.query,
            &self.key_value,
            &self.output,
        ]
        .iter()
        .map(|m| m.size_bytes())
        .sum()
    }
}

/// A feed-forward network's two maps in int8.
#[derive(Debug, Clone)]
pub struct FeedForwardInt8 {
    /// `d_model -> d_ff`.
    pub inner: Arc<Int8Matrix>,
    /// `d_ff -> d_model`.
    pub outer: Arc<Int8Matrix>,
}

impl FeedForwardInt8 {
    /// Quantizes both maps.
    pub fn new(inner: &Linear, outer: &Linear) -> Self {
        Self {
            inner: super::quantize_linear(inner),
            outer: super::quantize_linear(outer),
        }
    }

    /// The bytes the two matrices hold.
    pub fn size_bytes(&self) -> usize {
        self.inner.size_bytes() + self.outer.size_bytes()
    }
}
