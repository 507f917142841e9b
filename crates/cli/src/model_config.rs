//! Reading a bare model configuration file (for `describe` and `import-torch`): the fields of
//! `TransformerConfig`, vocabulary sizes included. Unknown keys and wrong types are errors that
//! name the key and the file; keys left out take the documented defaults.

use std::path::Path;

use anyhow::{Context, Result, anyhow};
use rosetta_model::TransformerConfig;
use rosetta_train::model_section::model_from_keys;
use serde_json::Value;

/// Reads a model configuration, TOML (`.toml`) or JSON (any other extension), and validates it.
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

/// The model configuration of the keys of `user` (a table).
fn from_value(user: Value) -> Result<TransformerConfig> {
    let Value::Object(keys) = user else {
        return Err(anyhow!("expected a table of keys"));
    };
    Ok(model_from_keys(keys, rosetta_data::SPECIAL_TOKEN_IDS.pad)?)
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
