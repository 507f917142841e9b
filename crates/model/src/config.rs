//! The hyper-parameters of a [`Transformer`] and their validation.

use burn::config::Config;
use burn::tensor::Device;

use crate::activation::Activation;
use crate::embedding::{EmbeddingInit, ScaledEmbeddingConfig};
use crate::error::ModelError;
use crate::feed_forward::PositionWiseFeedForwardConfig;
use crate::framing::SpecialTokens;
use crate::multi_head::MultiHeadAttentionConfig;
use crate::positional::PositionLayout;
use crate::stack::{LayerConfig, StackConfig};
use crate::transformer::Transformer;

/// Where each sub-layer's LayerNorm sits relative to its residual connection.
#[derive(Config, Debug, Copy, PartialEq, Eq)]
pub enum NormPosition {
    /// `LayerNorm(x + Sublayer(x))`: the paper and the seed tutorials.
    Post,
    /// `x + Sublayer(LayerNorm(x))`: more stable for deep models and high learning rates.
    Pre,
}

/// Hyper-parameters of the encoder-decoder Transformer. Defaults are the paper's base model.
#[derive(Config, Debug, PartialEq)]
pub struct TransformerConfig {
    /// Number of source-side tokens (rows of the source embedding).
    pub source_vocab_size: usize,
    /// Number of target-side tokens (rows of the target embedding, columns of the output).
    pub target_vocab_size: usize,
    /// Width of every hidden representation.
    #[config(default = 512)]
    pub d_model: usize,
    /// Number of attention heads; must divide `d_model`.
    #[config(default = 8)]
    pub n_heads: usize,
    /// Inner width of the position-wise feed-forward network.
    #[config(default = 2048)]
    pub d_ff: usize,
    /// Number of encoder layers.
    #[config(default = 6)]
    pub n_encoder_layers: usize,
    /// Number of decoder layers.
    #[config(default = 6)]
    pub n_decoder_layers: usize,
    /// Dropout on embeddings, sub-layer outputs and inside the feed-forward network.
    #[config(default = 0.1)]
    pub dropout: f64,
    /// Dropout on the attention weights.
    #[config(default = 0.1)]
    pub attention_dropout: f64,
    /// Activation of the feed-forward network.
    #[config(default = "Activation::Relu")]
    pub activation: Activation,
    /// Post-norm (paper) or pre-norm residual blocks.
    #[config(default = "NormPosition::Post")]
    pub norm_position: NormPosition,
    /// Whether the encoder and decoder stacks end with a LayerNorm. `None` chooses the usual
    /// default: yes for pre-norm, no for post-norm. (`torch.nn.Transformer` always has one.)
    pub final_norm: Option<bool>,
    /// Epsilon of every LayerNorm.
    #[config(default = 1e-5)]
    pub layer_norm_eps: f64,
    /// Longest sequence the positional encoding covers.
    #[config(default = 1024)]
    pub max_positions: usize,
    /// Id of the padding token, the same on both sides.
    #[config(default = 0)]
    pub pad_id: usize,
    /// Use one embedding matrix for source and target (needs a joint vocabulary).
    #[config(default = false)]
    pub share_embeddings: bool,
    /// Use the target embedding matrix, transposed, as the output projection (no separate
    /// weights and no bias).
    #[config(default = false)]
    pub tie_output_projection: bool,
    /// How the embedding tables start (`"Normal"` or `"XavierUniform"`); unset is `Normal`. An
    /// option so that checkpoints written before this key existed still load.
    pub embedding_init: Option<EmbeddingInit>,
    /// Gain of the Xavier-uniform draw of every attention's query, key and value projections;
    /// unset is 1.0. `0.7071` (1/sqrt(2)) is fairseq's choice and PyTorch's `nn.Transformer`
    /// default (Xavier over the fused `[3 d_model, d_model]` in-projection). An option so that
    /// checkpoints written before this key existed still load.
    pub qkv_init_gain: Option<f64>,
    /// Dropout after the feed-forward network's activation; unset is [`Self::dropout`]
    /// (Marian's `activation_dropout`, 0 in OPUS-MT models).
    pub activation_dropout: Option<f64>,
    /// Where the positional encoding puts its sines and cosines; unset is
    /// [`PositionLayout::Interleaved`] (the paper's). Imported Marian models use `Halves`.
    pub positions: Option<PositionLayout>,
    /// Whether token embeddings are multiplied by `sqrt(d_model)`; unset is `true` (the
    /// paper's; Marian's `scale_embedding`).
    pub scale_embeddings: Option<bool>,
    /// Whether the tied output projection adds a bias vector (Marian's `final_logits_bias`, kept
    /// fixed in training as Hugging Face keeps it); unset is `false`. An untied projection always
    /// has its own trained bias.
    pub output_bias: Option<bool>,
    /// The vocabulary's special token ids, which the framing, the searches and the batcher use;
    /// unset is Rosetta's own ([`SpecialTokens::ROSETTA`]). `pad` must equal [`Self::pad_id`].
    pub special_tokens: Option<SpecialTokens>,
}

impl TransformerConfig {
    /// Dimension of each head's queries, keys and values.
    pub fn d_k(&self) -> usize {
        self.d_model / self.n_heads.max(1)
    }

    /// The special token ids, once the `None` default ([`SpecialTokens::ROSETTA`]) is resolved.
    pub fn special_tokens(&self) -> SpecialTokens {
        self.special_tokens.unwrap_or(SpecialTokens::ROSETTA)
    }

    /// The dropout after the feed-forward activation, once the `None` default (`dropout`) is
    /// resolved.
    pub fn activation_dropout(&self) -> f64 {
        self.activation_dropout.unwrap_or(self.dropout)
    }

    /// The positional encoding's layout, once the `None` default is resolved.
    pub fn positions(&self) -> PositionLayout {
        self.positions.unwrap_or(PositionLayout::Interleaved)
    }

    /// Whether embeddings are scaled by `sqrt(d_model)`, once the `None` default is resolved.
    pub fn scale_embeddings(&self) -> bool {
        self.scale_embeddings.unwrap_or(true)
    }

    /// Whether the tied output projection has a bias, once the `None` default is resolved.
    pub fn output_bias(&self) -> bool {
        self.output_bias.unwrap_or(false)
    }

    /// The query/key/value initialisation gain, once the `None` default (1.0) is resolved.
    pub fn qkv_init_gain(&self) -> f64 {
        self.qkv_init_gain.unwrap_or(1.0)
    }

    /// The settings of every attention module of the model (self- and cross-attention).
    pub fn attention_config(&self) -> MultiHeadAttentionConfig {
        MultiHeadAttentionConfig::new(self.d_model, self.n_heads)
            .with_dropout(self.attention_dropout)
            .with_qkv_init_gain(self.qkv_init_gain())
    }

    /// The settings of every layer's feed-forward network.
    pub fn feed_forward_config(&self) -> PositionWiseFeedForwardConfig {
        PositionWiseFeedForwardConfig::new(self.d_model, self.d_ff)
            .with_dropout(self.activation_dropout())
            .with_activation(self.activation)
    }

    /// The settings of every encoder and decoder layer.
    pub fn layer_config(&self) -> LayerConfig {
        LayerConfig::new(self.attention_config(), self.feed_forward_config())
            .with_dropout(self.dropout)
            .with_layer_norm_eps(self.layer_norm_eps)
            .with_norm_position(self.norm_position)
    }

    /// The settings of the encoder stack.
    pub fn encoder_config(&self) -> StackConfig {
        StackConfig::new(
            self.layer_config(),
            self.n_encoder_layers,
            self.max_positions,
        )
        .with_final_norm(self.has_final_norm())
        .with_positions(self.positions())
    }

    /// The settings of the decoder stack.
    pub fn decoder_config(&self) -> StackConfig {
        StackConfig::new(
            self.layer_config(),
            self.n_decoder_layers,
            self.max_positions,
        )
        .with_final_norm(self.has_final_norm())
        .with_positions(self.positions())
    }

    /// The settings of an embedding table of `vocab_size` rows (the source's, or the target's).
    pub fn embedding_config(&self, vocab_size: usize) -> ScaledEmbeddingConfig {
        ScaledEmbeddingConfig::new(vocab_size, self.d_model)
            .with_scheme(self.embedding_init.unwrap_or(EmbeddingInit::Normal))
            .with_scaled(self.scale_embeddings())
    }

    /// Whether the stacks end with a LayerNorm, once the `None` default is resolved.
    pub fn has_final_norm(&self) -> bool {
        self.final_norm
            .unwrap_or(self.norm_position == NormPosition::Pre)
    }

    /// Checks every value and every combination of values; the error names the key at fault.
    pub fn validate(&self) -> Result<(), ModelError> {
        let invalid =
            |key: &'static str, reason: String| Err(ModelError::InvalidConfig { key, reason });
        if self.source_vocab_size == 0 {
            return invalid("source_vocab_size", "must be at least 1".into());
        }
        if self.target_vocab_size == 0 {
            return invalid("target_vocab_size", "must be at least 1".into());
        }
        if self.d_model == 0 || !self.d_model.is_multiple_of(2) {
            return invalid(
                "d_model",
                format!(
                    "must be a positive even number (sinusoidal encoding pairs dimensions), got {}",
                    self.d_model
                ),
            );
        }
        if self.n_heads == 0 || !self.d_model.is_multiple_of(self.n_heads) {
            return invalid(
                "n_heads",
                format!(
                    "must divide d_model = {}, got {}",
                    self.d_model, self.n_heads
                ),
            );
        }
        if self.d_ff == 0 {
            return invalid("d_ff", "must be at least 1".into());
        }
        for (key, p) in [
            ("dropout", self.dropout),
            ("attention_dropout", self.attention_dropout),
            ("activation_dropout", self.activation_dropout()),
        ] {
            if !(0.0..1.0).contains(&p) {
                return invalid(key, format!("must be in [0, 1), got {p}"));
            }
        }
        if self.layer_norm_eps.is_nan() || self.layer_norm_eps <= 0.0 {
            return invalid(
                "layer_norm_eps",
                format!("must be positive, got {}", self.layer_norm_eps),
            );
        }
        let gain = self.qkv_init_gain();
        if !gain.is_finite() || gain <= 0.0 {
            return invalid(
                "qkv_init_gain",
                format!("must be a positive number, got {gain}"),
            );
        }
        if self.max_positions == 0 {
            return invalid("max_positions", "must be at least 1".into());
        }
        if self.pad_id >= self.source_vocab_size.min(self.target_vocab_size) {
            return invalid(
                "pad_id",
                format!(
                    "{} is outside a vocabulary of size {}",
                    self.pad_id,
                    self.source_vocab_size.min(self.target_vocab_size)
                ),
            );
        }
        let tokens = self.special_tokens();
        if tokens.pad as usize != self.pad_id {
            return invalid(
                "special_tokens.pad",
                format!("is {}, but pad_id is {}", tokens.pad, self.pad_id),
            );
        }
        for (key, id, vocab) in [
            ("special_tokens.unk", tokens.unk, self.source_vocab_size),
            ("special_tokens.bos", tokens.bos, self.target_vocab_size),
            ("special_tokens.eos", tokens.eos, self.target_vocab_size),
            ("special_tokens.eos", tokens.eos, self.source_vocab_size),
        ] {
            if id as usize >= vocab {
                return invalid(key, format!("{id} is outside a vocabulary of size {vocab}"));
            }
        }
        if self.output_bias() && !self.tie_output_projection {
            return invalid(
                "output_bias",
                "applies to a tied output projection only (an untied one has its own bias)".into(),
            );
        }
        if self.share_embeddings && self.source_vocab_size != self.target_vocab_size {
            return invalid(
                "share_embeddings",
                format!(
                    "needs one joint vocabulary, but source_vocab_size = {} and target_vocab_size = {}",
                    self.source_vocab_size, self.target_vocab_size
                ),
            );
        }
        Ok(())
    }

    /// Validates the configuration and builds a freshly initialised model on `device`.
    ///
    /// Linear weights are Xavier-uniform with zero biases (the attention's query, key and value
    /// projections with gain `qkv_init_gain`), embeddings as `embedding_init` says (by default
    /// `N(0, d_model^-1/2)`, unit variance after the `sqrt(d_model)` scaling), LayerNorms start
    /// at the identity.
    pub fn init(&self, device: &Device) -> Result<Transformer, ModelError> {
        self.validate()?;
        Ok(Transformer::new(self, device))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration saved before `embedding_init` existed (as in older checkpoints' state
    /// files) still reads, as the Normal scheme; a set value survives a round trip.
    #[test]
    fn embedding_init_is_optional_and_round_trips() {
        let mut json = serde_json::to_value(TransformerConfig::new(40, 50)).expect("to json");
        let map = json.as_object_mut().expect("object");
        assert!(map.remove("embedding_init").is_some());
        assert!(map.remove("qkv_init_gain").is_some());
        let old: TransformerConfig = serde_json::from_value(json).expect("old config reads");
        assert_eq!(old.embedding_init, None);
        assert_eq!(old.qkv_init_gain, None);
        assert_eq!(old.qkv_init_gain(), 1.0);

        let set =
            TransformerConfig::new(40, 50).with_embedding_init(Some(EmbeddingInit::XavierUniform));
        let text = serde_json::to_string(&set).expect("to json");
        assert!(
            text.contains(r#""embedding_init":"XavierUniform""#),
            "{text}"
        );
        let back: TransformerConfig = serde_json::from_str(&text).expect("from json");
        assert_eq!(back.embedding_init, Some(EmbeddingInit::XavierUniform));
    }

    #[test]
    fn qkv_init_gain_must_be_positive_and_finite() {
        for gain in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = TransformerConfig::new(40, 40)
                .with_qkv_init_gain(Some(gain))
                .validate()
                .expect_err("refused");
            assert!(
                matches!(
                    err,
                    ModelError::InvalidConfig {
                        key: "qkv_init_gain",
                        ..
                    }
                ),
                "{gain}: {err}"
            );
        }
        let fairseq = TransformerConfig::new(40, 40).with_qkv_init_gain(Some(0.5f64.sqrt()));
        assert!(fairseq.validate().is_ok());
    }

    /// The gain reaches the query, key and value projections of every attention in both stacks
    /// (the largest weight stays inside the scaled Xavier bound), and nothing else.
    #[test]
    fn qkv_init_gain_reaches_every_attention() {
        let device = Device::flex();
        device.seed(2);
        let gain = 0.25;
        let model = TransformerConfig::new(30, 30)
            .with_d_model(64)
            .with_n_heads(4)
            .with_n_encoder_layers(2)
            .with_n_decoder_layers(2)
            .with_qkv_init_gain(Some(gain))
            .init(&device)
            .expect("valid");
        let largest = |l: &burn::nn::Linear| {
            let v = l.weight.val().into_data().convert::<f64>();
            v.as_slice::<f64>()
                .expect("f64")
                .iter()
                .fold(0.0f64, |m, x| m.max(x.abs()))
        };
        let bound = (6.0f64 / 128.0).sqrt();
        let mut attentions: Vec<_> = model
            .encoder
            .layers
            .iter()
            .map(|l| &l.self_attention)
            .collect();
        for layer in &model.decoder.layers {
            attentions.push(&layer.self_attention);
            attentions.push(&layer.cross_attention);
        }
        assert_eq!(attentions.len(), 6);
        for a in attentions {
            for projection in [&a.w_q, &a.w_k, &a.w_v] {
                let max = largest(projection);
                assert!(
                    max <= gain * bound * crate::init::F32_BOUND_SLACK && max > 0.9 * gain * bound,
                    "{max}"
                );
            }
            assert!(largest(&a.w_o) > 0.9 * bound);
        }
    }
}
