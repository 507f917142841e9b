//! Multi-head attention: project, split into heads, attend, merge heads, project back.

use burn::config::Config;
use burn::module::Module;
use burn::nn::Linear;
use std::sync::Arc;

use burn::tensor::{Bool, Device, Tensor};

use crate::attention::ScaledDotProductAttention;
use crate::init;
use crate::int8::{self, AttentionInt8, Int8Matrix};
use crate::split_product;

/// What multi-head attention returns.
#[derive(Debug, Clone)]
pub struct MultiHeadOutput {
    /// `[batch, queries, d_model]`.
    pub output: Tensor<3>,
    /// `[batch, heads, queries, keys]`, present only when requested.
    pub weights: Option<Tensor<4>>,
}

/// Multi-head attention with the four projections `W_q`, `W_k`, `W_v` (`d_model -> d_model`,
/// then split into `n_heads` heads of `d_k = d_model / n_heads`) and `W_o` (the merged heads
/// back to `d_model`). The same module does self-attention (`key_value == query`) and
/// cross-attention (`key_value` = encoder memory).
#[derive(Module, Debug)]
pub struct MultiHeadAttention {
    /// Query projection.
    pub w_q: Linear,
    /// Key projection.
    pub w_k: Linear,
    /// Value projection.
    pub w_v: Linear,
    /// Output projection of the merged heads.
    pub w_o: Linear,
    /// The per-head scaled dot-product attention.
    pub attention: ScaledDotProductAttention,
    /// Number of heads.
    pub n_heads: usize,
    /// Width of each head.
    pub d_k: usize,
    /// The projections in int8 ([`quantize_int8`](Self::quantize_int8)); `None` runs them in
    /// floating point.
    #[module(skip)]
    pub int8: Option<AttentionInt8>,
}

/// A self-attention's query, key and value projections as one `[d_model, 3 d_model]` matrix
/// (see [`MultiHeadAttention::fuse_self_projection`]). Incremental decoding projects one new
/// position per row and step: one product of three times the width runs the matrix kernel
/// once instead of three times on a third of the work each.
#[derive(Debug, Clone)]
pub struct FusedSelfProjection(Fused);

/// The joined projection in floating point or in int8.
#[derive(Debug, Clone)]
// One per decoder layer and search: the float variant's size does not matter.
#[allow(clippy::large_enum_variant)]
enum Fused {
    Float {
        weight: Tensor<2>,
        bias: Option<Tensor<1>>,
    },
    Int8(Arc<Int8Matrix>),
}

/// Linear maps joined side by side: their weights `[d_in, Σ d_out]` and, if any has one, their
/// biases (a missing one as zeros).
pub(crate) fn joined(parts: &[&Linear]) -> (Tensor<2>, Option<Tensor<1>>) {
    let weight = Tensor::cat(parts.iter().map(|l| l.weight.val()).collect(), 1);
    let bias = parts.iter().any(|l| l.bias.is_some()).then(|| {
        let biases = parts
            .iter()
            .map(|l| match &l.bias {
                Some(bias) => bias.val(),
                None => Tensor::zeros([l.weight.dims()[1]], &weight.device()),
            })
            .collect();
        Tensor::cat(biases, 0)
    });
    (weight, bias)
}

/// The settings of a [`MultiHeadAttention`].
#[derive(Config, Debug)]
pub struct MultiHeadAttentionConfig {
    /// Width of the queries, keys, values and output.
    pub d_model: usize,
    /// Number of heads; must divide `d_model` (checked by
    /// [`TransformerConfig::validate`](crate::TransformerConfig::validate)).
    pub n_heads: usize,
    /// Dropout on the attention weights.
    #[config(default = 0.0)]
    pub dropout: f64,
    /// Gain of the Xavier-uniform draw of the query, key and value projections (the output
    /// projection keeps gain 1). `1/sqrt(2)` is fairseq's choice, and equals PyTorch's
    /// `nn.MultiheadAttention`, whose Xavier draw spans its fused `[3 d_model, d_model]`
    /// in-projection.
    #[config(default = 1.0)]
    pub qkv_init_gain: f64,
}

impl MultiHeadAttentionConfig {
    /// Builds the module: the four projections Xavier-uniform with zero biases.
    pub fn init(&self, device: &Device) -> MultiHeadAttention {
        let (d_model, gain) = (self.d_model, self.qkv_init_gain);
        MultiHeadAttention {
            w_q: init::linear_with_gain(d_model, d_model, gain, device),
            w_k: init::linear_with_gain(d_model, d_model, gain, device),
            w_v: init::linear_with_gain(d_model, d_model, gain, device),
            w_o: init::linear(d_model, d_model, device),
            attention: ScaledDotProductAttention::new(self.dropout),
            n_heads: self.n_heads,
            d_k: d_model / self.n_heads,
            int8: None,
        }
    }
}

impl MultiHeadAttention {
    /// Builds the module with gain 1 (short for [`MultiHeadAttentionConfig::init`]).
    pub fn new(d_model: usize, n_heads: usize, attention_dropout: f64, device: &Device) -> Self {
        MultiHeadAttentionConfig::new(d_model, n_heads)
            .with_dropout(attention_dropout)
            .init(device)
    }

    /// Attends from `query` `[b, q, d_model]` over `key_value` `[b, k, d_model]`.
    ///
    /// `mask` is `true` where attention is blocked, broadcastable to `[b, heads, q, k]`.
    pub fn forward(
        &self,
        query: Tensor<3>,
        key_value: Tensor<3>,
        mask: Option<Tensor<4, Bool>>,
        return_weights: bool,
    ) -> MultiHeadOutput {
        let (keys, values) = self.project_keys_values(key_value);
        self.attend(query, keys, values, mask, return_weights)
    }

    /// Projects and splits the keys and values once, `[b, k, d_model] -> [b, heads, k, d_k]`
    /// each, so that they can be reused across decoding steps.
    pub fn project_keys_values(&self, key_value: Tensor<3>) -> (Tensor<4>, Tensor<4>) {
        if let Some(int8) = self.int8_on(&key_value.device()) {
            let [batch, len, _] = key_value.dims();
            let d_model = self.n_heads * self.d_k;
            let joined = int8::linear(key_value, &int8.key_value);
            let part = |i: usize| {
                self.split_heads(joined.clone().slice([
                    0..batch,
                    0..len,
                    i * d_model..(i + 1) * d_model,
                ]))
            };
            return (part(0), part(1));
        }
        let keys = self.split_heads(split_product::forward(&self.w_k, key_value.clone()));
        let values = self.split_heads(split_product::forward(&self.w_v, key_value));
        (keys, values)
    }

    /// Attends from `query` `[b, q, d_model]` over keys and values already projected by
    /// [`project_keys_values`](Self::project_keys_values).
    pub fn attend(
        &self,
        query: Tensor<3>,
        keys: Tensor<4>,
        values: Tensor<4>,
        mask: Option<Tensor<4, Bool>>,
        return_weights: bool,
    ) -> MultiHeadOutput {
        let queries = match self.int8_on(&query.device()) {
            Some(int8) => int8::linear(query, &int8.query),
            None => split_product::forward(&self.w_q, query),
        };
        let queries = self.split_heads(queries);
        self.attend_heads(queries, keys, values, mask, return_weights)
    }

    /// Attends from queries already projected and split into heads `[b, heads, q, d_k]` (by
    /// [`project_self`](Self::project_self)) over keys and values split the same way.
    pub fn attend_heads(
        &self,
        queries: Tensor<4>,
        keys: Tensor<4>,
        values: Tensor<4>,
        mask: Option<Tensor<4, Bool>>,
        return_weights: bool,
    ) -> MultiHeadOutput {
        let attended = self
            .attention
            .forward(queries, keys, values, mask, return_weights);
        let merged = self.merge_heads(attended.context);
        let output = match self.int8_on(&merged.device()) {
            Some(int8) => int8::linear(merged, &int8.output),
            None => split_product::forward(&self.w_o, merged),
        };
        MultiHeadOutput {
            output,
            weights: attended.weights,
        }
    }

    /// Gives the four projections an int8 form ([`AttentionInt8`]), used from then on where
    /// [`int8::runs_on`] the input's device; the float weights stay (training and exports read
    /// them).
    pub fn quantize_int8(&mut self) {
        self.int8 = Some(AttentionInt8::new(
            &self.w_q, &self.w_k, &self.w_v, &self.w_o,
        ));
    }

    /// The int8 form, when there is one and it runs on `device`.
    fn int8_on(&self, device: &Device) -> Option<&AttentionInt8> {
        self.int8.as_ref().filter(|_| int8::runs_on(device))
    }

    /// The query, key and value projections joined side by side into one
    /// `[d_model, 3 d_model]` matrix (with its joined bias), for
    /// [`project_self`](Self::project_self). A missing bias joins as zeros.
    pub fn fuse_self_projection(&self) -> FusedSelfProjection {
        if let Some(int8) = self.int8_on(&self.w_q.weight.device()) {
            return FusedSelfProjection(Fused::Int8(Arc::clone(&int8.query_key_value)));
        }
        let (weight, bias) = joined(&[&self.w_q, &self.w_k, &self.w_v]);
        FusedSelfProjection(Fused::Float { weight, bias })
    }

    /// The queries, keys and values of a self-attention over `x` `[b, t, d_model]`, each split
    /// into heads `[b, heads, t, d_k]`, from one matrix product with `fused` (made by
    /// [`fuse_self_projection`](Self::fuse_self_projection) from this module) instead of three.
    pub fn project_self(
        &self,
        fused: &FusedSelfProjection,
        x: Tensor<3>,
    ) -> (Tensor<4>, Tensor<4>, Tensor<4>) {
        let [batch, len, _] = x.dims();
        let d_model = self.n_heads * self.d_k;
        let joined = match &fused.0 {
            Fused::Float { weight, bias } => {
                debug_assert_eq!(
                    weight.dims(),
                    [d_model, 3 * d_model],
                    "a fused projection of another module"
                );
                split_product::linear(x, weight.clone(), bias.clone())
            }
            Fused::Int8(matrix) => int8::linear(x, matrix),
        };
        let part = |i: usize| {
            self.split_heads(joined.clone().slice([
                0..batch,
                0..len,
                i * d_model..(i + 1) * d_model,
            ]))
        };
        (part(0), part(1), part(2))
    }

    /// `[b, t, heads * d_k] -> [b, heads, t, d_k]`.
    fn split_heads(&self, x: Tensor<3>) -> Tensor<4> {
        let [batch, len, _] = x.dims();
        x.reshape([batch, len, self.n_heads, self.d_k])
            .swap_dims(1, 2)
    }

    /// `[b, heads, t, d_k] -> [b, t, heads * d_k]`.
    fn merge_heads(&self, x: Tensor<4>) -> Tensor<3> {
        let [batch, heads, len, d_k] = x.dims();
        x.swap_dims(1, 2).reshape([batch, len, heads * d_k])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params;
    use burn::tensor::Distribution;

    #[test]
    fn shapes_for_self_and_cross_attention() {
        let device = Device::flex();
        device.seed(1);
        let mha = MultiHeadAttention::new(16, 4, 0.0, &device);
        let x = Tensor::<3>::random([2, 5, 16], Distribution::Default, &device);
        let memory = Tensor::<3>::random([2, 9, 16], Distribution::Default, &device);
        let own = mha.forward(x.clone(), x.clone(), None, true);
        assert_eq!(own.output.dims(), [2, 5, 16]);
        assert_eq!(own.weights.expect("weights").dims(), [2, 4, 5, 5]);
        let cross = mha.forward(x, memory, None, true);
        assert_eq!(cross.output.dims(), [2, 5, 16]);
        assert_eq!(cross.weights.expect("weights").dims(), [2, 4, 5, 9]);
    }

    #[test]
    fn parameter_count_of_base_attention() {
        let mha = MultiHeadAttention::new(512, 8, 0.1, &Device::flex());
        assert_eq!(mha.num_params(), 1_050_624);
        assert_eq!(params::multi_head_attention(512), 1_050_624);
        // One head or eight: the same projections, the same count.
        let single = MultiHeadAttention::new(512, 1, 0.1, &Device::flex());
        assert_eq!(single.num_params(), mha.num_params());
    }

    #[test]
    fn heads_split_and_merge_are_inverse() {
        let device = Device::flex();
        let mha = MultiHeadAttention::new(12, 3, 0.0, &device);
        let x = Tensor::<3>::random([2, 4, 12], Distribution::Default, &device);
        let back = mha.merge_heads(mha.split_heads(x.clone()));
        assert_eq!(back.into_data(), x.into_data());
    }

    /// The fused projection gives the three projections' heads: with the module's zero
    /// biases replaced by drawn ones, with the key's bias missing (joined as zeros), and with
    /// none.
    #[test]
    fn the_fused_self_projection_equals_the_three_projections() {
        let device = Device::flex();
        device.seed(4);
        let mut mha = MultiHeadAttention::new(16, 4, 0.0, &device);
        for linear in [&mut mha.w_q, &mut mha.w_k, &mut mha.w_v] {
            let bias = Tensor::<1>::random([16], Distribution::Default, &device);
            linear.bias = Some(burn::module::Param::from_tensor(bias));
        }
        let x = Tensor::<3>::random([3, 2, 16], Distribution::Default, &device);
        // All three biases, the key's missing, none.
        for round in 0..3 {
            if round == 1 {
                mha.w_k.bias = None;
            }
            if round == 2 {
                mha.w_q.bias = None;
                mha.w_v.bias = None;
            }
            let fused = mha.fuse_self_projection();
            let (queries, keys, values) = mha.project_self(&fused, x.clone());
            let (own_keys, own_values) = mha.project_keys_values(x.clone());
            let own_queries = mha.split_heads(mha.w_q.forward(x.clone()));
            for (got, want) in [
                (queries, own_queries),
                (keys, own_keys),
                (values, own_values),
            ] {
                assert_eq!(got.dims(), [3, 4, 2, 4]);
                got.into_data().assert_approx_eq::<f32>(
                    &want.into_data(),
                    burn::tensor::Tolerance::absolute(1e-6),
                );
            }
        }
    }

    /// Xavier-uniform with gain g draws from ±g·sqrt(6 / (d_in + d_out)); the gain scales the
    /// query, key and value projections and leaves the output projection at gain 1.
    #[test]
    fn qkv_init_gain_scales_query_key_value_only() {
        let device = Device::flex();
        device.seed(3);
        let gain = 0.5f64.sqrt();
        let mha = MultiHeadAttentionConfig::new(256, 4)
            .with_qkv_init_gain(gain)
            .init(&device);
        let bound = (6.0f64 / 512.0).sqrt();
        let spread = |l: &Linear| {
            let v = l.weight.val().into_data().convert::<f64>();
            let v = v.as_slice::<f64>().expect("f64");
            let max = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let std = (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64).sqrt();
            (max, std)
        };
        for l in [&mha.w_q, &mha.w_k, &mha.w_v] {
            let (max, std) = spread(l);
            assert!(
                max <= gain * bound * crate::init::F32_BOUND_SLACK && max > 0.99 * gain * bound,
                "max {max}"
            );
            assert!(
                (std - gain * bound / 3f64.sqrt()).abs() < 0.01 * bound,
                "std {std}"
            );
        }
        let (max, std) = spread(&mha.w_o);
        assert!(
            max <= bound * crate::init::F32_BOUND_SLACK && max > 0.99 * bound,
            "max {max}"
        );
        assert!(
            (std - bound / 3f64.sqrt()).abs() < 0.01 * bound,
            "std {std}"
        );
    }
}
