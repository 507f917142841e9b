//! The special-token settings of a MarianTokenizer directory, read as `transformers` 5.23
//! `from_pretrained` reads them: `tokenizer_config.json` (named `*_token` keys,
//! `additional_special_tokens` / `extra_special_tokens`, `added_tokens_decoder` with its
//! strip flags, `separate_vocabs`, `clean_up_tokenization_spaces`, `split_special_tokens`),
//! and, only when that has no `added_tokens_decoder`, the legacy `special_tokens_map.json`.
//! Absent settings take MarianTokenizer's defaults (`</s>`, `<unk>`, `<pad>`).

use serde_json::{Map, Value};

use crate::added_tokens::AddedToken;
use crate::error::Error;

/// The file names of a MarianTokenizer directory.
pub const TOKENIZER_CONFIG: &str = "tokenizer_config.json";
/// The legacy special-token file.
pub const SPECIAL_TOKENS_MAP: &str = "special_tokens_map.json";

/// The named special-token attributes of `PreTrainedTokenizerBase`, in its order.
const SPECIAL_TOKEN_ATTRIBUTES: [&str; 7] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
];

/// What the configuration files say.
#[derive(Clone, Debug, PartialEq)]
pub struct MarianConfig {
    /// Whether the target side has its own vocabulary (`target_vocab.json`).
    pub separate_vocabs: bool,
    /// Whether decoding applies `clean_up_tokenization` (default false in transformers 5).
    pub clean_up_tokenization_spaces: bool,
    /// Whether added tokens written in the text are left to SentencePiece (default false).
    pub split_special_tokens: bool,
    /// The named special tokens: `(attribute, content)`, standard attributes first.
    pub named: Vec<(String, String)>,
    /// The extra special tokens (`additional_special_tokens`).
    pub extra: Vec<String>,
    /// `added_tokens_decoder`: `(id, token)`.
    pub added_tokens: Vec<(u32, AddedToken)>,
}

fn parse_object(bytes: &[u8], origin: &str) -> Result<Map<String, Value>, Error> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Error::json(origin, "not a JSON object")),
        Err(e) => Err(Error::json(origin, format!("not valid JSON: {e}"))),
    }
}

/// The content of a token value: a string, or an `AddedToken` object's `content`.
fn token_content(value: &Value, key: &str, origin: &str) -> Result<Option<String>, Error> {
    match value {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        Value::Object(map) => match map.get("content") {
            Some(Value::String(s)) => Ok(Some(s.clone())),
            _ => Err(Error::json(
                origin,
                format!("{key}: an AddedToken object without a string \"content\""),
            )),
        },
        _ => Err(Error::json(
            origin,
            format!("{key}: expected a string or an AddedToken object"),
        )),
    }
}

fn bool_key(
    map: &Map<String, Value>,
    key: &str,
    default: bool,
    origin: &str,
) -> Result<bool, Error> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(Error::json(
            origin,
            format!("{key}: expected true or false"),
        )),
    }
}

fn token_list(value: &Value, key: &str, origin: &str) -> Result<Vec<String>, Error> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                if let Some(content) = token_content(item, &format!("{key}[{i}]"), origin)? {
                    out.push(content);
                }
            }
            Ok(out)
        }
        // A dict of extra tokens is a set of named model-specific tokens.
        Value::Object(map) => {
            let mut out = Vec::new();
            for (name, item) in map {
                if let Some(content) = token_content(item, &format!("{key}.{name}"), origin)? {
                    out.push(content);
                }
            }
            Ok(out)
        }
        _ => Err(Error::json(
            origin,
            format!("{key}: expected a list of tokens"),
        )),
    }
}

fn added_tokens(value: &Value, origin: &str) -> Result<Vec<(u32, AddedToken)>, Error> {
    let Value::Object(map) = value else {
        return Err(Error::json(
            origin,
            "added_tokens_decoder: expected an object of id -> token",
        ));
    };
    let mut out = Vec::new();
    for (id, token) in map {
        let key = format!("added_tokens_decoder.{id}");
        let id: u32 = id.parse().map_err(|_| {
            Error::json(
                origin,
                format!("{key}: the id is not a non-negative integer"),
            )
        })?;
        let Value::Object(fields) = token else {
            return Err(Error::json(
                origin,
                format!("{key}: expected an AddedToken object"),
            ));
        };
        let Some(content) = token_content(token, &key, origin)? else {
            return Err(Error::json(origin, format!("{key}: no content")));
        };
        let flag = |name: &str| {
            bool_key(fields, name, false, origin)
                .map_err(|_| Error::json(origin, format!("{key}.{name}: expected true or false")))
        };
        out.push((
            id,
            AddedToken {
                content,
                lstrip: flag("lstrip")?,
                rstrip: flag("rstrip")?,
                single_word: flag("single_word")?,
                special: flag("special")?,
            },
        ));
    }
    out.sort_by_key(|(id, _)| *id);
    Ok(out)
}

impl MarianConfig {
    /// Reads the optional configuration files (bytes of `tokenizer_config.json` and
    /// `special_tokens_map.json`); errors name the file and key.
    pub fn from_files(
        tokenizer_config: Option<&[u8]>,
        special_tokens_map: Option<&[u8]>,
    ) -> Result<Self, Error> {
        let config = match tokenizer_config {
            Some(bytes) => parse_object(bytes, TOKENIZER_CONFIG)?,
            None => Map::new(),
        };
        let origin = TOKENIZER_CONFIG;
        // MarianTokenizer's own defaults.
        let mut named: Vec<(String, Option<String>)> = SPECIAL_TOKEN_ATTRIBUTES
            .iter()
            .map(|&attr| {
                let default = match attr {
                    "eos_token" => Some("</s>".to_owned()),
                    "unk_token" => Some("<unk>".to_owned()),
                    "pad_token" => Some("<pad>".to_owned()),
                    _ => None,
                };
                (attr.to_owned(), default)
            })
            .collect();
        // `extra_special_tokens` if non-empty, else `additional_special_tokens`.
        let listed = |key: &str| {
            config
                .get(key)
                .map(|v| token_list(v, key, origin))
                .transpose()
        };
        let (mut extra, has_extra) = match (
            listed("extra_special_tokens")?,
            listed("additional_special_tokens")?,
        ) {
            (Some(e), _) if !e.is_empty() => (e, true),
            (_, Some(a)) => (a, true),
            (Some(e), None) => (e, true),
            (None, None) => (Vec::new(), false),
        };
        for (key, value) in &config {
            if !key.ends_with("_token") {
                continue;
            }
            if let Some(slot) = named.iter_mut().find(|(attr, _)| attr == key) {
                match value {
                    // An explicit null leaves MarianTokenizer without that token; it cannot
                    // work without its eos/unk, so that is refused below.
                    Value::Null => slot.1 = None,
                    _ => slot.1 = token_content(value, key, origin)?,
                }
            } else {
                // Model-specific named tokens: string values, or serialised AddedTokens.
                let content = match value {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(map)
                        if map.get("__type") == Some(&Value::String("AddedToken".into())) =>
                    {
                        token_content(value, key, origin)?
                    }
                    _ => None,
                };
                if let Some(content) = content {
                    named.push((key.clone(), Some(content)));
                }
            }
        }
        let added = match config.get("added_tokens_decoder") {
            Some(value) => added_tokens(value, origin)?,
            None => Vec::new(),
        };
        // The legacy map is read only when the config has no added_tokens_decoder.
        if let (Some(bytes), false) = (
            special_tokens_map,
            config.contains_key("added_tokens_decoder"),
        ) {
            let map = parse_object(bytes, SPECIAL_TOKENS_MAP)?;
            for (key, value) in &map {
                if key == "additional_special_tokens" || key == "extra_special_tokens" {
                    let tokens = token_list(value, key, SPECIAL_TOKENS_MAP)?;
                    if !has_extra {
                        extra = tokens;
                    }
                } else if key.ends_with("_token") {
                    let content = token_content(value, key, SPECIAL_TOKENS_MAP)?;
                    match named.iter_mut().find(|(attr, _)| attr == key) {
                        Some(slot) => slot.1 = content,
                        None => named.push((key.clone(), content)),
                    }
                }
            }
        }
        for required in ["eos_token", "unk_token"] {
            if named
                .iter()
                .any(|(attr, content)| attr == required && content.is_none())
            {
                return Err(Error::json(
                    origin,
                    format!("{required} is null; MarianTokenizer needs one"),
                ));
            }
        }
        Ok(MarianConfig {
            separate_vocabs: bool_key(&config, "separate_vocabs", false, origin)?,
            clean_up_tokenization_spaces: bool_key(
                &config,
                "clean_up_tokenization_spaces",
                false,
                origin,
            )?,
            split_special_tokens: bool_key(&config, "split_special_tokens", false, origin)?,
            named: named
                .into_iter()
                .filter_map(|(attr, content)| content.map(|c| (attr, c)))
                .collect(),
            extra,
            added_tokens: added,
        })
    }

    /// The named token of `attribute` (`eos_token`, ...), if set.
    pub fn token(&self, attribute: &str) -> Option<&str> {
        self.named
            .iter()
            .find(|(attr, _)| attr == attribute)
            .map(|(_, c)| c.as_str())
    }

    /// `all_special_tokens`: the named tokens, then the extra ones, without repeats.
    pub fn all_special_tokens(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for content in self.named.iter().map(|(_, c)| c).chain(self.extra.iter()) {
            if !out.contains(content) {
                out.push(content.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_without_files() {
        let c = MarianConfig::from_files(None, None).unwrap();
        assert_eq!(c.all_special_tokens(), vec!["</s>", "<unk>", "<pad>"]);
        assert!(!c.separate_vocabs && !c.clean_up_tokenization_spaces && !c.split_special_tokens);
        assert!(c.added_tokens.is_empty());
    }

    #[test]
    fn config_keys_and_the_legacy_map() {
        let config =
            br#"{"separate_vocabs": true, "eos_token": {"__type": "AddedToken", "content": "[E]"},
            "additional_special_tokens": ["<x>"], "image_token": "<img>"}"#;
        let map = br#"{"pad_token": {"content": "[P]", "lstrip": true}, "unk_token": "[U]"}"#;
        let c = MarianConfig::from_files(Some(config), Some(map)).unwrap();
        assert!(c.separate_vocabs);
        assert_eq!(
            c.all_special_tokens(),
            vec!["[E]", "[U]", "[P]", "<img>", "<x>"]
        );
        // With added_tokens_decoder the map is ignored.
        let config = br#"{"added_tokens_decoder": {"3": {"content": "</s>", "rstrip": true, "special": true}}}"#;
        let c = MarianConfig::from_files(Some(config), Some(map)).unwrap();
        assert_eq!(c.token("pad_token"), Some("<pad>"));
        assert_eq!(c.added_tokens[0].0, 3);
        assert!(c.added_tokens[0].1.rstrip && !c.added_tokens[0].1.lstrip);
    }

    #[test]
    fn malformed_files_name_the_file_and_key() {
        let err = |c: &[u8], m: Option<&[u8]>| {
            MarianConfig::from_files(Some(c), m)
                .unwrap_err()
                .to_string()
        };
        assert!(err(b"[1]", None).starts_with("tokenizer_config.json: not a JSON object"));
        assert!(err(b"{", None).starts_with("tokenizer_config.json: not valid JSON"));
        assert!(err(br#"{"separate_vocabs": "yes"}"#, None).contains("separate_vocabs"));
        assert!(err(br#"{"eos_token": 3}"#, None).contains("eos_token"));
        assert!(err(br#"{"unk_token": null}"#, None).contains("unk_token is null"));
        assert!(
            err(
                br#"{"added_tokens_decoder": {"x": {"content": "a"}}}"#,
                None
            )
            .contains("added_tokens_decoder.x")
        );
        assert!(err(b"{}", Some(b"nope")).starts_with("special_tokens_map.json: not valid JSON"));
    }
}
