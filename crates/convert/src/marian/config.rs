//! Hugging Face's `MarianConfig` (`config.json` of a MarianMT directory), read key by key with
//! `transformers`' own defaults (5.23; they are not OPUS-MT's values), mapped onto Rosetta's
//! [`TransformerConfig`], and written back from one.

use std::path::Path;

use rosetta_model::{Activation, NormPosition, PositionLayout, SpecialTokens, TransformerConfig};
use serde_json::{Map, Value, json};

use crate::error::ConvertError;

/// The `model_type`s this importer reads.
pub const SUPPORTED_MODEL_TYPES: [&str; 1] = ["marian"];

/// Keys of the BART family that older Marian configurations carry: each must hold Marian's value
/// (the architecture Rosetta builds), else the model is of another kind and is refused.
const MARIAN_VALUES: [(&str, &str); 6] = [
    ("normalize_before", "false"),
    ("add_final_layer_norm", "false"),
    ("normalize_embedding", "false"),
    ("static_position_embeddings", "true"),
    ("add_bias_logits", "false"),
    ("do_blenderbot_90_layernorm", "false"),
];

/// Keys read but without effect on the model's outputs (training-time regularisation Rosetta does
/// not have, initialisation, caching, bookkeeping).
const WITHOUT_EFFECT: [&str; 22] = [
    "_name_or_path",
    "architectures",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "init_std",
    "use_cache",
    "bos_token_id",
    "classifier_dropout",
    "gradient_checkpointing",
    "id2label",
    "label2id",
    "num_labels",
    "output_attentions",
    "output_hidden_states",
    "return_dict",
    "tokenizer_class",
    "problem_type",
    "extra_pos_embeddings",
    "num_beams",
    "max_length",
    "bad_words_ids",
];

/// A MarianMT configuration, every value as `transformers` reads it (its defaults where a key is
/// absent).
#[derive(Debug, Clone, PartialEq)]
pub struct MarianConfig {
    /// Source (and, when shared, target) vocabulary size (`vocab_size`).
    pub vocab_size: usize,
    /// Target vocabulary size (`decoder_vocab_size`; `vocab_size` when unset).
    pub decoder_vocab_size: usize,
    /// Longest sequence (`max_position_embeddings`).
    pub max_position_embeddings: usize,
    /// `d_model`.
    pub d_model: usize,
    /// `encoder_layers`.
    pub encoder_layers: usize,
    /// `decoder_layers`.
    pub decoder_layers: usize,
    /// `encoder_attention_heads` (Rosetta needs `decoder_attention_heads` equal).
    pub attention_heads: usize,
    /// `encoder_ffn_dim` (Rosetta needs `decoder_ffn_dim` equal).
    pub ffn_dim: usize,
    /// `activation_function`.
    pub activation: Activation,
    /// `dropout`.
    pub dropout: f64,
    /// `attention_dropout`.
    pub attention_dropout: f64,
    /// `activation_dropout`.
    pub activation_dropout: f64,
    /// `scale_embedding`.
    pub scale_embedding: bool,
    /// `share_encoder_decoder_embeddings`.
    pub share_encoder_decoder_embeddings: bool,
    /// `tie_word_embeddings`.
    pub tie_word_embeddings: bool,
    /// `pad_token_id`.
    pub pad_token_id: u32,
    /// `eos_token_id`.
    pub eos_token_id: u32,
    /// `decoder_start_token_id`.
    pub decoder_start_token_id: u32,
    /// `forced_eos_token_id` (`None` when null).
    pub forced_eos_token_id: Option<u32>,
    /// `encoder_layerdrop` and `decoder_layerdrop` (training only; Rosetta has none).
    pub layerdrop: (f64, f64),
    /// Keys present in the file that neither change the model nor are known (listed, not
    /// refused).
    pub unknown_keys: Vec<String>,
}

/// A typed reader of one JSON object's keys, naming the file and key in every error.
struct Keys<'a> {
    path: &'a Path,
    map: Map<String, Value>,
}

impl Keys<'_> {
    fn error(&self, key: &str, reason: impl Into<String>) -> ConvertError {
        ConvertError::key(self.path, key, reason)
    }

    /// The value under `key`, or under `alias` (a name `transformers` maps onto it).
    fn take(&mut self, key: &str, alias: Option<&str>) -> Option<Value> {
        let value = self.map.remove(key);
        let aliased = alias.and_then(|a| self.map.remove(a));
        value.or(aliased).filter(|v| !v.is_null())
    }

    fn usize(
        &mut self,
        key: &str,
        alias: Option<&str>,
        default: usize,
    ) -> Result<usize, ConvertError> {
        match self.take(key, alias) {
            None => Ok(default),
            Some(value) => value
                .as_u64()
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| {
                    self.error(key, format!("is {value}, expected a non-negative integer"))
                }),
        }
    }

    fn id(&mut self, key: &str, default: Option<u32>) -> Result<Option<u32>, ConvertError> {
        let value = match self.map.remove(key) {
            None => return Ok(default),
            Some(Value::Null) => return Ok(None),
            Some(value) => value,
        };
        // `transformers` accepts a list of ids for EOS; Rosetta decodes with one.
        let single = match &value {
            Value::Array(items) if items.len() == 1 => &items[0],
            other => other,
        };
        single
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| self.error(key, format!("is {value}, expected one token id")))
    }

    fn f64(&mut self, key: &str, default: f64) -> Result<f64, ConvertError> {
        match self.take(key, None) {
            None => Ok(default),
            Some(value) => value
                .as_f64()
                .ok_or_else(|| self.error(key, format!("is {value}, expected a number"))),
        }
    }

    fn bool(&mut self, key: &str, default: bool) -> Result<bool, ConvertError> {
        match self.take(key, None) {
            None => Ok(default),
            Some(value) => value
                .as_bool()
                .ok_or_else(|| self.error(key, format!("is {value}, expected true or false"))),
        }
    }

    fn string(&mut self, key: &str) -> Result<Option<String>, ConvertError> {
        match self.take(key, None) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(value) => Err(self.error(key, format!("is {value}, expected a string"))),
        }
    }
}

/// Rosetta's activation for `transformers`' `ACT2FN` name.
fn activation_of(name: &str) -> Option<Activation> {
    match name {
        "swish" | "silu" => Some(Activation::Swish),
        "gelu" => Some(Activation::Gelu),
        "relu" => Some(Activation::Relu),
        _ => None,
    }
}

/// `transformers`' name for Rosetta's activation.
fn activation_name(activation: Activation) -> &'static str {
    match activation {
        Activation::Swish => "swish",
        Activation::Gelu => "gelu",
        Activation::Relu => "relu",
    }
}

impl MarianConfig {
    /// Reads `config.json` at `path`.
    pub fn read(path: &Path) -> Result<Self, ConvertError> {
        let text = std::fs::read_to_string(path).map_err(ConvertError::io(path))?;
        let value: Value = serde_json::from_str(&text).map_err(|e| ConvertError::Json {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let Value::Object(map) = value else {
            return Err(ConvertError::Json {
                path: path.to_path_buf(),
                reason: "expected a JSON object".into(),
            });
        };
        Self::from_map(map, path)
    }

    /// The configuration in `map` (the parsed `config.json` at `path`, which errors name).
    pub fn from_map(map: Map<String, Value>, path: &Path) -> Result<Self, ConvertError> {
        let mut keys = Keys { path, map };
        match keys.string("model_type")? {
            Some(kind) if SUPPORTED_MODEL_TYPES.contains(&kind.as_str()) => {}
            Some(kind) => {
                return Err(keys.error(
                    "model_type",
                    format!(
                        "is \"{kind}\"; this importer reads {} (Hugging Face MarianMT, the OPUS-MT models)",
                        SUPPORTED_MODEL_TYPES.join(", ")
                    ),
                ));
            }
            None => return Err(keys.error("model_type", "is missing; expected \"marian\"")),
        }
        if let Some(Value::Array(architectures)) = keys.map.get("architectures") {
            let names: Vec<&str> = architectures.iter().filter_map(Value::as_str).collect();
            if !names.is_empty() && !names.contains(&"MarianMTModel") {
                return Err(keys.error(
                    "architectures",
                    format!(
                        "is {names:?}; only the encoder-decoder MarianMTModel translates (a decoder-only MarianForCausalLM does not)"
                    ),
                ));
            }
        }
        if keys.bool("is_decoder", false)? {
            return Err(keys.error(
                "is_decoder",
                "is true: a decoder-only model is not a translator Rosetta can import",
            ));
        }
        if !keys.bool("is_encoder_decoder", true)? {
            return Err(keys.error(
                "is_encoder_decoder",
                "is false: Rosetta imports encoder-decoder models only",
            ));
        }
        for (key, marian) in MARIAN_VALUES {
            if let Some(value) = keys.map.remove(key)
                && serde_json::from_str::<Value>(marian).ok().as_ref() != Some(&value)
            {
                return Err(keys.error(
                    key,
                    format!(
                        "is {value}; Rosetta builds Marian's architecture, where it is {marian}"
                    ),
                ));
            }
        }

        let vocab_size = keys.usize("vocab_size", None, 58_101)?;
        let decoder_vocab_size = keys.usize("decoder_vocab_size", None, vocab_size)?;
        let d_model = keys.usize("d_model", Some("hidden_size"), 1024)?;
        let encoder_layers = keys.usize("encoder_layers", Some("num_hidden_layers"), 12)?;
        let decoder_layers = keys.usize("decoder_layers", None, 12)?;
        let attention_heads =
            keys.usize("encoder_attention_heads", Some("num_attention_heads"), 16)?;
        let decoder_heads = keys.usize("decoder_attention_heads", None, 16)?;
        if decoder_heads != attention_heads {
            return Err(keys.error(
                "decoder_attention_heads",
                format!(
                    "is {decoder_heads}, the encoder has {attention_heads}: Rosetta's layers share one head count"
                ),
            ));
        }
        let ffn_dim = keys.usize("encoder_ffn_dim", None, 4096)?;
        let decoder_ffn = keys.usize("decoder_ffn_dim", None, 4096)?;
        if decoder_ffn != ffn_dim {
            return Err(keys.error(
                "decoder_ffn_dim",
                format!(
                    "is {decoder_ffn}, the encoder's is {ffn_dim}: Rosetta's layers share one width"
                ),
            ));
        }
        let activation_name = keys
            .string("activation_function")?
            .unwrap_or_else(|| "gelu".into());
        let activation = activation_of(&activation_name).ok_or_else(|| {
            keys.error(
                "activation_function",
                format!("is \"{activation_name}\"; supported: swish (silu), gelu, relu"),
            )
        })?;
        let config = Self {
            vocab_size,
            decoder_vocab_size,
            max_position_embeddings: keys.usize("max_position_embeddings", None, 1024)?,
            d_model,
            encoder_layers,
            decoder_layers,
            attention_heads,
            ffn_dim,
            activation,
            dropout: keys.f64("dropout", 0.1)?,
            attention_dropout: keys.f64("attention_dropout", 0.0)?,
            activation_dropout: keys.f64("activation_dropout", 0.0)?,
            scale_embedding: keys.bool("scale_embedding", false)?,
            share_encoder_decoder_embeddings: keys
                .bool("share_encoder_decoder_embeddings", true)?,
            tie_word_embeddings: keys.bool("tie_word_embeddings", true)?,
            pad_token_id: keys
                .id("pad_token_id", Some(58_100))?
                .ok_or_else(|| keys.error("pad_token_id", "is null; Marian pads with a token"))?,
            eos_token_id: keys.id("eos_token_id", Some(0))?.ok_or_else(|| {
                keys.error("eos_token_id", "is null; a translation ends with EOS")
            })?,
            decoder_start_token_id: keys
                .id("decoder_start_token_id", Some(58_100))?
                .ok_or_else(|| {
                    keys.error(
                        "decoder_start_token_id",
                        "is null; the decoder starts from it",
                    )
                })?,
            forced_eos_token_id: keys.id("forced_eos_token_id", Some(0))?,
            layerdrop: (
                keys.f64("encoder_layerdrop", 0.0)?,
                keys.f64("decoder_layerdrop", 0.0)?,
            ),
            unknown_keys: Vec::new(),
        };
        for key in WITHOUT_EFFECT {
            keys.map.remove(key);
        }
        let mut unknown_keys: Vec<String> = keys.map.keys().cloned().collect();
        unknown_keys.sort();
        let config = Self {
            unknown_keys,
            ..config
        };
        config.check(path)?;
        Ok(config)
    }

    /// Checks what `transformers` would accept but Rosetta's model cannot be: each refusal names
    /// the key.
    fn check(&self, path: &Path) -> Result<(), ConvertError> {
        let error = |key: &str, reason: String| Err(ConvertError::key(path, key, reason));
        if self.share_encoder_decoder_embeddings && self.decoder_vocab_size != self.vocab_size {
            return error(
                "decoder_vocab_size",
                format!(
                    "is {} but vocab_size is {} while share_encoder_decoder_embeddings is true",
                    self.decoder_vocab_size, self.vocab_size
                ),
            );
        }
        if self.d_model == 0
            || self.attention_heads == 0
            || !self.d_model.is_multiple_of(self.attention_heads)
        {
            return error(
                "encoder_attention_heads",
                format!(
                    "is {}, which must divide d_model = {}",
                    self.attention_heads, self.d_model
                ),
            );
        }
        let both = self.decoder_vocab_size.min(self.vocab_size);
        for (key, id, vocab) in [
            ("pad_token_id", self.pad_token_id, both),
            ("eos_token_id", self.eos_token_id, both),
            (
                "decoder_start_token_id",
                self.decoder_start_token_id,
                self.decoder_vocab_size,
            ),
        ] {
            if id as usize >= vocab {
                return error(key, format!("is {id}, outside the vocabulary of {vocab}"));
            }
        }
        if let Some(forced) = self.forced_eos_token_id
            && forced != self.eos_token_id
        {
            return error(
                "forced_eos_token_id",
                format!(
                    "is {forced}, not eos_token_id ({}): Rosetta ends a cut-off output with its EOS",
                    self.eos_token_id
                ),
            );
        }
        Ok(())
    }

    /// Rosetta's configuration of this model, with `unk` the tokenizer's unknown id. In
    /// `transformers` 5.23 `tie_word_embeddings = false` unties everything, the shared source and
    /// target table included: the model then has three tables (and an unused `model.shared`).
    pub fn transformer(&self, unk: u32) -> TransformerConfig {
        let shared = self.share_encoder_decoder_embeddings && self.tie_word_embeddings;
        TransformerConfig::new(self.vocab_size, self.decoder_vocab_size)
            .with_d_model(self.d_model)
            .with_n_heads(self.attention_heads)
            .with_d_ff(self.ffn_dim)
            .with_n_encoder_layers(self.encoder_layers)
            .with_n_decoder_layers(self.decoder_layers)
            .with_dropout(self.dropout)
            .with_attention_dropout(self.attention_dropout)
            .with_activation_dropout(Some(self.activation_dropout))
            .with_activation(self.activation)
            .with_norm_position(NormPosition::Post)
            .with_final_norm(Some(false))
            .with_layer_norm_eps(1e-5)
            .with_max_positions(self.max_position_embeddings)
            .with_pad_id(self.pad_token_id as usize)
            .with_share_embeddings(shared)
            .with_tie_output_projection(self.tie_word_embeddings)
            .with_positions(Some(PositionLayout::Halves))
            .with_scale_embeddings(Some(self.scale_embedding))
            .with_output_bias(Some(self.tie_word_embeddings))
            .with_special_tokens(Some(SpecialTokens {
                pad: self.pad_token_id,
                unk,
                bos: self.decoder_start_token_id,
                eos: self.eos_token_id,
            }))
    }

    /// The Marian configuration of a Rosetta model, refused naming the key for a setting Marian
    /// cannot express (pre-norm, a final LayerNorm, another epsilon, shared tables of different
    /// sizes).
    pub fn of(config: &TransformerConfig) -> Result<Self, ConvertError> {
        let unsupported = |key: &'static str, reason: &str| {
            Err(ConvertError::Unsupported {
                key,
                reason: reason.into(),
            })
        };
        if config.norm_position != NormPosition::Post {
            return unsupported(
                "norm_position",
                "is pre-norm; Marian's layers are post-norm",
            );
        }
        if config.has_final_norm() {
            return unsupported(
                "final_norm",
                "is on; Marian's stacks end without a LayerNorm",
            );
        }
        if (config.layer_norm_eps - 1e-5).abs() > 1e-12 {
            return unsupported(
                "layer_norm_eps",
                "is not 1e-5, the epsilon of Marian's LayerNorms",
            );
        }
        let tokens = config.special_tokens();
        Ok(Self {
            vocab_size: config.source_vocab_size,
            decoder_vocab_size: config.target_vocab_size,
            max_position_embeddings: config.max_positions,
            d_model: config.d_model,
            encoder_layers: config.n_encoder_layers,
            decoder_layers: config.n_decoder_layers,
            attention_heads: config.n_heads,
            ffn_dim: config.d_ff,
            activation: config.activation,
            dropout: config.dropout,
            attention_dropout: config.attention_dropout,
            activation_dropout: config.activation_dropout(),
            scale_embedding: config.scale_embeddings(),
            // A Rosetta model with one table for both sides but its own output projection has no
            // Marian form with shared tables (`tie_word_embeddings = false` unties them): it is
            // written with two equal tables (`weights::complete_for_export`).
            share_encoder_decoder_embeddings: config.share_embeddings
                && config.tie_output_projection,
            tie_word_embeddings: config.tie_output_projection,
            pad_token_id: tokens.pad,
            eos_token_id: tokens.eos,
            decoder_start_token_id: tokens.bos,
            forced_eos_token_id: Some(tokens.eos),
            layerdrop: (0.0, 0.0),
            unknown_keys: Vec::new(),
        })
    }

    /// `config.json` as `save_pretrained` writes it for this configuration.
    pub fn to_json(&self) -> Value {
        json!({
            "architectures": ["MarianMTModel"],
            "model_type": "marian",
            "activation_dropout": self.activation_dropout,
            "activation_function": activation_name(self.activation),
            "attention_dropout": self.attention_dropout,
            "d_model": self.d_model,
            "decoder_attention_heads": self.attention_heads,
            "decoder_ffn_dim": self.ffn_dim,
            "decoder_layerdrop": self.layerdrop.1,
            "decoder_layers": self.decoder_layers,
            "decoder_start_token_id": self.decoder_start_token_id,
            "decoder_vocab_size": self.decoder_vocab_size,
            "dropout": self.dropout,
            "encoder_attention_heads": self.attention_heads,
            "encoder_ffn_dim": self.ffn_dim,
            "encoder_layerdrop": self.layerdrop.0,
            "encoder_layers": self.encoder_layers,
            "eos_token_id": self.eos_token_id,
            "forced_eos_token_id": self.forced_eos_token_id,
            "init_std": 0.02,
            "is_encoder_decoder": true,
            "max_position_embeddings": self.max_position_embeddings,
            "pad_token_id": self.pad_token_id,
            "scale_embedding": self.scale_embedding,
            "share_encoder_decoder_embeddings": self.share_encoder_decoder_embeddings,
            "tie_word_embeddings": self.tie_word_embeddings,
            "use_cache": true,
            "vocab_size": self.vocab_size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: Value) -> Result<MarianConfig, ConvertError> {
        let Value::Object(map) = json else {
            panic!("an object")
        };
        MarianConfig::from_map(map, Path::new("config.json"))
    }

    /// An OPUS-MT configuration maps onto Rosetta's model key by key; absent keys take
    /// `transformers`' defaults, not OPUS-MT's values.
    #[test]
    fn an_opus_mt_config_maps_key_by_key() {
        let config = read(json!({
            "model_type": "marian", "vocab_size": 58101, "d_model": 512,
            "encoder_layers": 6, "decoder_layers": 6, "encoder_attention_heads": 8,
            "decoder_attention_heads": 8, "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048,
            "activation_function": "swish", "max_position_embeddings": 512,
            "scale_embedding": true, "pad_token_id": 58100, "decoder_start_token_id": 58100,
            "eos_token_id": 0, "some_future_key": 3
        }))
        .expect("reads");
        assert_eq!(config.unknown_keys, vec!["some_future_key".to_string()]);
        let model = config.transformer(1);
        assert_eq!((model.d_model, model.n_heads, model.d_ff), (512, 8, 2048));
        assert_eq!(model.activation, Activation::Swish);
        assert_eq!(model.special_tokens().bos, 58100);
        assert_eq!(model.special_tokens().eos, 0);
        assert!(model.validate().is_ok());
        let defaults = read(json!({"model_type": "marian"})).expect("reads");
        assert_eq!((defaults.d_model, defaults.encoder_layers), (1024, 12));
        assert_eq!(defaults.activation, Activation::Gelu);
        assert!(!defaults.scale_embedding);
        // Written back, the configuration reads as itself.
        let back = read(config.to_json()).expect("reads back");
        assert_eq!(
            MarianConfig {
                unknown_keys: vec![],
                ..config
            },
            back
        );
    }

    /// Every refusal names the key at fault.
    #[test]
    fn what_rosetta_cannot_build_is_refused_by_key() {
        for (json, key) in [
            (json!({"model_type": "bart"}), "model_type"),
            (json!({}), "model_type"),
            (
                json!({"model_type": "marian", "architectures": ["MarianForCausalLM"]}),
                "architectures",
            ),
            (
                json!({"model_type": "marian", "is_decoder": true}),
                "is_decoder",
            ),
            (
                json!({"model_type": "marian", "activation_function": "gelu_new"}),
                "activation_function",
            ),
            (
                json!({"model_type": "marian", "decoder_ffn_dim": 10}),
                "decoder_ffn_dim",
            ),
            (
                json!({"model_type": "marian", "decoder_attention_heads": 8}),
                "decoder_attention_heads",
            ),
            (
                json!({"model_type": "marian", "normalize_before": true}),
                "normalize_before",
            ),
            (
                json!({"model_type": "marian", "d_model": "wide"}),
                "d_model",
            ),
            (
                json!({"model_type": "marian", "decoder_vocab_size": 10}),
                "decoder_vocab_size",
            ),
            (
                json!({"model_type": "marian", "eos_token_id": [0, 1]}),
                "eos_token_id",
            ),
        ] {
            let error = read(json.clone()).expect_err("refused");
            assert!(
                matches!(&error, ConvertError::Key { key: k, .. } if k == key),
                "{json}: {error}"
            );
            assert!(error.to_string().contains("config.json"), "{error}");
        }
    }

    #[test]
    fn marian_cannot_express_pre_norm_or_a_final_norm() {
        let pre = TransformerConfig::new(10, 10).with_norm_position(NormPosition::Pre);
        assert!(matches!(
            MarianConfig::of(&pre),
            Err(ConvertError::Unsupported {
                key: "norm_position",
                ..
            })
        ));
        let final_norm = TransformerConfig::new(10, 10).with_final_norm(Some(true));
        assert!(matches!(
            MarianConfig::of(&final_norm),
            Err(ConvertError::Unsupported {
                key: "final_norm",
                ..
            })
        ));
        assert!(MarianConfig::of(&TransformerConfig::new(10, 10)).is_ok());
    }
}
