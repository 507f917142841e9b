//! Reading a model configuration file strictly: unknown keys and wrong types are errors that
//! name the key and the file; keys left out take the documented defaults.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use rosetta_model::TransformerConfig;
use serde_json::{Map, Value};

/// Keys without a default.
const REQUIRED: [&str; 2] = ["source_vocab_size", "target_vocab_size"];

/// Reads a model configuration, TOML (`.toml`) or JSON (any other extension), whose keys are
/// the fields of [`TransformerConfig`], and validates it.
pub fn read(path: &Path) -> Result<TransformerConfig> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read model configuration {}", path.display()))?;
    let user: Value = if path.extension().is_some_and(|e| e == "toml") {
        toml::from_str(&text).map_err(anyhow::Error::from)
    } else {
        serde_json::from_str(&text).map_err(anyhow::Error::from)
    }
    .with_context(|| format!("model configuration {} is not valid syntax", path.display()))?;
    let config = from_value(user)
        .with_context(|| format!("invalid model configuration {}", path.display()))?;
    config
        .validate()
        .with_context(|| format!("invalid model configuration {}", path.display()))?;
    Ok(config)
}

/// Overlays the keys of `user` on the defaults, one key at a time so that an error names it.
fn from_value(user: Value) -> Result<TransformerConfig> {
    let Value::Object(user) = user else {
        bail!("expected a table of keys");
    };
    let Value::Object(mut merged) = serde_json::to_value(TransformerConfig::new(0, 0))? else {
        bail!("default model configuration is not a table");
    };
    for key in REQUIRED {
        if !user.contains_key(key) {
            bail!("missing key `{key}`");
        }
    }
    for (key, value) in user {
        if !merged.contains_key(&key) {
            let known: Vec<&String> = merged.keys().collect();
            bail!(
                "unknown key `{key}` (known keys: {})",
                known
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let mut single: Map<String, Value> = merged.clone();
        single.insert(key.clone(), value.clone());
        serde_json::from_value::<TransformerConfig>(Value::Object(single))
            .map_err(|e| anyhow!("key `{key}`: {e}"))?;
        merged.insert(key, value);
    }
    Ok(serde_json::from_value(Value::Object(merged))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rosetta_model::NormPosition;
    use serde_json::json;

    #[test]
    fn left_out_keys_take_defaults() {
        let config = from_value(
            json!({"source_vocab_size": 10, "target_vocab_size": 12, "norm_position": "Pre"}),
        )
        .expect("valid");
        assert_eq!(
            (config.source_vocab_size, config.target_vocab_size),
            (10, 12)
        );
        assert_eq!(config.d_model, 512);
        assert_eq!(config.norm_position, NormPosition::Pre);
        assert_eq!(config.final_norm, None);
    }

    #[test]
    fn errors_name_the_key() {
        let unknown =
            from_value(json!({"source_vocab_size": 1, "target_vocab_size": 1, "d_modle": 8}));
        assert!(format!("{:#}", unknown.expect_err("unknown")).contains("`d_modle`"));
        let wrong =
            from_value(json!({"source_vocab_size": 1, "target_vocab_size": 1, "dropout": "high"}));
        assert!(format!("{:#}", wrong.expect_err("type")).contains("`dropout`"));
        let missing = from_value(json!({"source_vocab_size": 1}));
        assert!(format!("{:#}", missing.expect_err("missing")).contains("`target_vocab_size`"));
    }
}
