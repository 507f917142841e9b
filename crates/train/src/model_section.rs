//! The `[model]` section of a run configuration: the Transformer's architecture, without what the
//! tokenizer decides (the vocabulary sizes and the padding id), and the pretrained vectors its
//! embedding tables start from. [`ModelSection::transformer`] completes it into the model's own
//! [`TransformerConfig`] once the tokenizer is trained.

use rosetta_model::{Activation, EmbeddingInit, NormPosition, PositionLayout, TransformerConfig};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::embeddings::PretrainedEmbeddings;
use crate::error::ConfigError;

/// The keys of [`TransformerConfig`] that the tokenizer decides, refused in `[model]` with the
/// reason.
pub const TOKENIZER_KEYS: [&str; 4] = [
    "source_vocab_size",
    "target_vocab_size",
    "pad_id",
    "special_tokens",
];

/// The `[model]` section: every field of [`TransformerConfig`] but the vocabulary sizes and the
/// padding id, with the same defaults (the base model of *Attention Is All You Need*), and
/// `[model.embeddings]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSection {
    /// The run or checkpoint a fine-tuning run starts from ([`crate::start`]): its
    /// architecture, weights and tokenizer; the other keys then only restate it or change its
    /// dropout rates.
    pub from: Option<std::path::PathBuf>,
    /// Width of every hidden representation.
    pub d_model: usize,
    /// Number of attention heads; must divide `d_model`.
    pub n_heads: usize,
    /// Inner width of the position-wise feed-forward network.
    pub d_ff: usize,
    /// Number of encoder layers.
    pub n_encoder_layers: usize,
    /// Number of decoder layers.
    pub n_decoder_layers: usize,
    /// Dropout on embeddings, sub-layer outputs and inside the feed-forward network.
    pub dropout: f64,
    /// Dropout on the attention weights.
    pub attention_dropout: f64,
    /// Activation of the feed-forward network.
    pub activation: Activation,
    /// Post-norm (the paper's) or pre-norm residual blocks.
    pub norm_position: NormPosition,
    /// Whether both stacks end with a LayerNorm; unset: yes for pre-norm, no for post-norm.
    pub final_norm: Option<bool>,
    /// Epsilon of every LayerNorm.
    pub layer_norm_eps: f64,
    /// Longest sequence the positional encoding covers.
    pub max_positions: usize,
    /// One embedding table for source and target (needs a joint vocabulary).
    pub share_embeddings: bool,
    /// The output projection is the target embedding, transposed.
    pub tie_output_projection: bool,
    /// How the embedding tables start; unset is `Normal`.
    pub embedding_init: Option<EmbeddingInit>,
    /// Gain of the Xavier-uniform draw of the query, key and value projections; unset is 1.0.
    pub qkv_init_gain: Option<f64>,
    /// Dropout after the feed-forward activation; unset is `dropout`.
    pub activation_dropout: Option<f64>,
    /// Where the positional encoding puts its sines and cosines; unset is `Interleaved`.
    pub positions: Option<PositionLayout>,
    /// Whether embeddings are multiplied by `sqrt(d_model)`; unset is `true`.
    pub scale_embeddings: Option<bool>,
    /// Whether the tied output projection adds a (fixed) bias; unset is `false`.
    pub output_bias: Option<bool>,
    /// Pretrained vectors the embedding tables of a new run start from (`[model.embeddings]`).
    pub embeddings: Option<PretrainedEmbeddings>,
}

impl Default for ModelSection {
    fn default() -> Self {
        Self::of(&TransformerConfig::new(1, 1))
    }
}

impl ModelSection {
    /// The architecture of `model`: everything but its vocabulary sizes and padding id, with no
    /// pretrained vectors.
    pub fn of(model: &TransformerConfig) -> Self {
        // Destructured field by field, so that a field added to the model's configuration
        // fails to compile here until the section has it too.
        let TransformerConfig {
            source_vocab_size: _,
            target_vocab_size: _,
            pad_id: _,
            d_model,
            n_heads,
            d_ff,
            n_encoder_layers,
            n_decoder_layers,
            dropout,
            attention_dropout,
            activation,
            norm_position,
            final_norm,
            layer_norm_eps,
            max_positions,
            share_embeddings,
            tie_output_projection,
            embedding_init,
            qkv_init_gain,
            activation_dropout,
            positions,
            scale_embeddings,
            output_bias,
            special_tokens: _,
        } = model.clone();
        Self {
            d_model,
            n_heads,
            d_ff,
            n_encoder_layers,
            n_decoder_layers,
            dropout,
            attention_dropout,
            activation,
            norm_position,
            final_norm,
            layer_norm_eps,
            max_positions,
            share_embeddings,
            tie_output_projection,
            embedding_init,
            qkv_init_gain,
            activation_dropout,
            positions,
            scale_embeddings,
            output_bias,
            embeddings: None,
            from: None,
        }
    }

    /// The model's configuration, completed with what the tokenizer decides: the vocabulary
    /// sizes and the padding id. Not validated ([`TransformerConfig::validate`]).
    pub fn transformer(
        &self,
        source_vocab_size: usize,
        target_vocab_size: usize,
        pad_id: usize,
    ) -> TransformerConfig {
        let Self {
            d_model,
            n_heads,
            d_ff,
            n_encoder_layers,
            n_decoder_layers,
            dropout,
            attention_dropout,
            activation,
            norm_position,
            final_norm,
            layer_norm_eps,
            max_positions,
            share_embeddings,
            tie_output_projection,
            embedding_init,
            qkv_init_gain,
            activation_dropout,
            positions,
            scale_embeddings,
            output_bias,
            embeddings: _,
            from: _,
        } = self.clone();
        TransformerConfig {
            source_vocab_size,
            target_vocab_size,
            d_model,
            n_heads,
            d_ff,
            n_encoder_layers,
            n_decoder_layers,
            dropout,
            attention_dropout,
            activation,
            norm_position,
            final_norm,
            layer_norm_eps,
            max_positions,
            pad_id,
            share_embeddings,
            tie_output_projection,
            embedding_init,
            qkv_init_gain,
            activation_dropout,
            positions,
            scale_embeddings,
            output_bias,
            special_tokens: None,
        }
    }
}

/// Checks the raw `[model]` table for the keys the tokenizer decides ([`TOKENIZER_KEYS`]): a
/// vocabulary size is refused, and so is a `pad_id` other than `pad` (the data pipeline's); a
/// `pad_id` equal to it, as resolved configurations written before the section was typed hold,
/// is taken out and the table accepted. The error names the key.
pub fn take_tokenizer_keys(model: &mut toml::Table, pad: u32) -> Result<(), ConfigError> {
    for key in &TOKENIZER_KEYS[..2] {
        if model.contains_key(*key) {
            return Err(ConfigError::new(
                format!("model.{key}"),
                "vocabulary sizes come from the trained tokenizer(s); set `data.tokenizer.vocab_size` instead",
            ));
        }
    }
    if let Some(value) = model.remove(TOKENIZER_KEYS[2])
        && value.as_integer() != Some(i64::from(pad))
    {
        return Err(ConfigError::new(
            "model.pad_id",
            format!(
                "is {value}, but the data pipeline pads with id {pad} (the tokenizer's padding token); leave the key out"
            ),
        ));
    }
    Ok(())
}

/// A whole model configuration from its keys (a bare `*.model.toml` or JSON file, as `rosetta
/// describe` and `import-torch` read): `source_vocab_size` and `target_vocab_size` (required),
/// `pad_id` (optional; it must be the data pipeline's, `pad`), and the keys of [`ModelSection`]
/// but `embeddings` over their defaults. Not validated. The error names the key.
pub fn model_from_keys(
    mut keys: Map<String, Value>,
    pad: u32,
) -> Result<TransformerConfig, ConfigError> {
    let mut take = |key: &str, default: Option<usize>| -> Result<usize, ConfigError> {
        match keys.remove(key) {
            Some(value) => {
                serde_json::from_value(value).map_err(|e| ConfigError::new(key, e.to_string()))
            }
            None => default.ok_or_else(|| ConfigError::new(key, "is missing")),
        }
    };
    let source = take(TOKENIZER_KEYS[0], None)?;
    let target = take(TOKENIZER_KEYS[1], None)?;
    let pad_id = take(TOKENIZER_KEYS[2], Some(pad as usize))?;
    if pad_id != pad as usize {
        return Err(ConfigError::new(
            "pad_id",
            format!(
                "is {pad_id}, but the data pipeline pads with id {pad} (the tokenizer's padding token); leave the key out"
            ),
        ));
    }
    // Written as `null` (or Rosetta's own ids) by every export of a model Rosetta trained.
    if let Some(tokens) = keys.remove(TOKENIZER_KEYS[3])
        && !tokens.is_null()
    {
        let rosetta = serde_json::to_value(rosetta_model::SpecialTokens::ROSETTA)
            .map_err(|e| ConfigError::new("special_tokens", e.to_string()))?;
        if tokens != rosetta {
            return Err(ConfigError::new(
                "special_tokens",
                format!("is {tokens}, but Rosetta's tokenizers have {rosetta}; leave the key out"),
            ));
        }
    }
    if keys.contains_key("embeddings") {
        return Err(ConfigError::new(
            "embeddings",
            "starting vectors belong in a run configuration's `[model.embeddings]`, not in a model configuration",
        ));
    }
    let section: ModelSection = serde_path_to_error::deserialize(Value::Object(keys))
        .map_err(|e| ConfigError::at(&e.path().to_string(), e.into_inner().to_string()))?;
    Ok(section.transformer(source, target, pad_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_models() {
        let section = ModelSection::default();
        assert_eq!(
            section.transformer(40, 50, 0),
            TransformerConfig::new(40, 50)
        );
    }

    #[test]
    fn a_model_round_trips_through_its_section() {
        let model = TransformerConfig::new(30, 30)
            .with_d_model(64)
            .with_n_heads(2)
            .with_final_norm(Some(true))
            .with_norm_position(NormPosition::Pre)
            .with_pad_id(3)
            .with_qkv_init_gain(Some(0.5));
        let section = ModelSection::of(&model);
        assert_eq!(section.d_model, 64);
        assert_eq!(section.embeddings, None);
        assert_eq!(section.transformer(30, 30, 3), model);
        assert_ne!(section.transformer(30, 31, 3), model);
    }

    #[test]
    fn tokenizer_keys_are_refused_by_name_and_an_agreeing_pad_id_dropped() {
        for key in ["source_vocab_size", "target_vocab_size"] {
            let mut table: toml::Table = format!("{key} = 8").parse().expect("toml");
            let error = take_tokenizer_keys(&mut table, 0).expect_err(key);
            assert_eq!(error.key.as_deref(), Some(format!("model.{key}").as_str()));
            assert!(error.reason.contains("data.tokenizer"), "{error}");
        }
        let mut table: toml::Table = "pad_id = 3\nd_model = 8".parse().expect("toml");
        let error = take_tokenizer_keys(&mut table, 0).expect_err("pad 3");
        assert_eq!(error.key.as_deref(), Some("model.pad_id"));
        assert!(error.reason.contains('3'), "{error}");
        let mut table: toml::Table = "pad_id = 0\nd_model = 8".parse().expect("toml");
        take_tokenizer_keys(&mut table, 0).expect("the pipeline's pad id");
        assert!(!table.contains_key("pad_id") && table.contains_key("d_model"));
    }

    #[test]
    fn a_bare_model_configuration_takes_its_sizes_and_names_bad_keys() {
        let keys = |value: Value| value.as_object().expect("object").clone();
        let model = model_from_keys(
            keys(serde_json::json!({
                "source_vocab_size": 10, "target_vocab_size": 12, "pad_id": 1, "norm_position": "Pre"
            })),
            1,
        )
        .expect("valid");
        assert_eq!(
            model,
            TransformerConfig::new(10, 12)
                .with_pad_id(1)
                .with_norm_position(NormPosition::Pre)
        );
        let unset = model_from_keys(
            keys(serde_json::json!({"source_vocab_size": 10, "target_vocab_size": 12})),
            0,
        )
        .expect("valid");
        assert_eq!(unset, TransformerConfig::new(10, 12));
        for (value, key) in [
            (
                serde_json::json!({"source_vocab_size": 1, "target_vocab_size": 1, "d_modle": 8}),
                "`d_modle`",
            ),
            (
                serde_json::json!({"source_vocab_size": 1, "target_vocab_size": 1, "dropout": "high"}),
                "`dropout`",
            ),
            (
                serde_json::json!({"source_vocab_size": 1}),
                "`target_vocab_size`",
            ),
            (
                serde_json::json!({"source_vocab_size": -1, "target_vocab_size": 1}),
                "`source_vocab_size`",
            ),
            (
                serde_json::json!({"source_vocab_size": 1, "target_vocab_size": 1, "embeddings": {}}),
                "`embeddings`",
            ),
            (
                serde_json::json!({"source_vocab_size": 9, "target_vocab_size": 9, "pad_id": 3}),
                "`pad_id`",
            ),
        ] {
            let error = model_from_keys(keys(value), 0).expect_err(key);
            assert!(error.to_string().contains(key), "{key}: {error}");
        }
    }
}
