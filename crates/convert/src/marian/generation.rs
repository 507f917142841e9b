//! `generation_config.json`: how `transformers` decodes a model by default, as Rosetta's
//! [`TranslateOptions`], and back.
//!
//! Read as `generate` reads it (5.23): from `generation_config.json` where the directory has one,
//! else from the generation keys of `config.json` (older OPUS-MT directories keep `num_beams`,
//! `max_length` and `bad_words_ids` there), else `GenerationConfig`'s defaults (greedy, 20
//! tokens). `transformers` counts the decoder's start token in `max_length` and `min_length`;
//! Rosetta counts the tokens before EOS, hence the `− 2` and `− 1` below.

use std::path::Path;

use rosetta_infer::{BeamStop, LengthNorm, TranslateOptions};
use serde_json::{Map, Value, json};

use crate::error::ConvertError;

/// Settings of `generate` that change its output and that Rosetta's search does not have: read,
/// and reported when they hold anything but their default.
const NOT_APPLIED: [(&str, &str); 13] = [
    ("do_sample", "false"),
    ("no_repeat_ngram_size", "0"),
    ("encoder_no_repeat_ngram_size", "0"),
    ("repetition_penalty", "1.0"),
    ("encoder_repetition_penalty", "1.0"),
    ("num_beam_groups", "1"),
    ("diversity_penalty", "0.0"),
    ("renormalize_logits", "false"),
    ("forced_bos_token_id", "null"),
    ("suppress_tokens", "null"),
    ("begin_suppress_tokens", "null"),
    ("exponential_decay_length_penalty", "null"),
    ("sequence_bias", "null"),
];

/// How an imported model decodes by default, with what of its generation settings Rosetta does
/// not apply.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationDefaults {
    /// The translation options equal to `generate()` with the model's settings.
    pub options: TranslateOptions,
    /// The decoder's start token `generate` uses (`decoder_start_token_id`), when set there.
    pub decoder_start_token_id: Option<u32>,
    /// One line per setting read but not applied (`key = value: why`).
    pub notes: Vec<String>,
}

/// The generation keys of `map` (the parsed file at `path`) as Rosetta's options: `pad` is the
/// model's padding id (always blocked by Rosetta's searches; other single-token `bad_words_ids`
/// are added to the blocked tokens).
pub fn from_map(
    map: &Map<String, Value>,
    path: &Path,
    pad: u32,
) -> Result<GenerationDefaults, ConvertError> {
    let error = |key: &str, reason: String| ConvertError::key(path, key, reason);
    let get = |key: &str| map.get(key).filter(|v| !v.is_null());
    let count = |key: &str| -> Result<Option<usize>, ConvertError> {
        get(key)
            .map(|v| {
                v.as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| error(key, format!("is {v}, expected a non-negative integer")))
            })
            .transpose()
    };
    let mut notes = Vec::new();
    let beam = count("num_beams")?.unwrap_or(1);
    if beam == 0 {
        return Err(error("num_beams", "is 0; at least 1".into()));
    }
    let nbest = count("num_return_sequences")?.unwrap_or(1);
    if nbest == 0 || nbest > beam {
        return Err(error(
            "num_return_sequences",
            format!("is {nbest}; it must be between 1 and num_beams ({beam})"),
        ));
    }
    let alpha = match get("length_penalty") {
        None => 1.0,
        Some(v) => v
            .as_f64()
            .filter(|a| a.is_finite())
            .ok_or_else(|| error("length_penalty", format!("is {v}, expected a number")))?,
    };
    let beam_stop = match get("early_stopping") {
        None | Some(Value::Bool(false)) => BeamStop::Transformers,
        Some(Value::Bool(true)) => BeamStop::Count,
        Some(Value::String(s)) if s == "never" => {
            notes.push(
                "early_stopping = \"never\": decoded with Rosetta's exact stop (`bound`), which keeps the same best hypotheses".into(),
            );
            BeamStop::Bound
        }
        Some(v) => {
            return Err(error(
                "early_stopping",
                format!("is {v}, expected true, false or \"never\""),
            ));
        }
    };
    // Tokens before EOS: `max_length` counts the start token and the EOS, `max_new_tokens` the
    // EOS; with neither, `generate` allows 20 new tokens (`max_length` 21).
    let max_len_b = match (count("max_new_tokens")?, count("max_length")?) {
        (Some(new), _) => new.saturating_sub(1),
        (None, Some(length)) => length.saturating_sub(2),
        (None, None) => 20 - 1,
    };
    let min_len = match (count("min_new_tokens")?, count("min_length")?) {
        (Some(new), _) => new,
        (None, Some(length)) => length.saturating_sub(1),
        (None, None) => 0,
    };
    let mut blocked = Vec::new();
    if let Some(words) = get("bad_words_ids") {
        let lists = words.as_array().ok_or_else(|| {
            error(
                "bad_words_ids",
                format!("is {words}, expected a list of lists of ids"),
            )
        })?;
        for list in lists {
            let ids: Vec<u32> = list
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|i| i.as_u64().and_then(|i| u32::try_from(i).ok()))
                        .collect()
                })
                .filter(|ids: &Vec<u32>| Some(ids.len()) == list.as_array().map(Vec::len))
                .ok_or_else(|| {
                    error(
                        "bad_words_ids",
                        format!("holds {list}, expected a list of token ids"),
                    )
                })?;
            match ids.as_slice() {
                [id] if *id == pad => {}
                [id] => blocked.push(*id),
                _ => notes.push(format!(
                    "bad_words_ids {list}: a sequence of several tokens is not blocked by Rosetta's search"
                )),
            }
        }
    }
    for (key, default) in NOT_APPLIED {
        if let Some(value) = map.get(key)
            && serde_json::from_str::<Value>(default).ok().as_ref() != Some(value)
            && !(value.is_array() && value.as_array().is_some_and(Vec::is_empty))
        {
            notes.push(format!(
                "{key} = {value}: not applied (Rosetta's search has no such setting)"
            ));
        }
    }
    let decoder_start_token_id = get("decoder_start_token_id")
        .map(|v| {
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| {
                    error(
                        "decoder_start_token_id",
                        format!("is {v}, expected a token id"),
                    )
                })
        })
        .transpose()?;
    Ok(GenerationDefaults {
        options: TranslateOptions {
            beam,
            alpha,
            length_norm: LengthNorm::Power,
            beam_stop,
            max_len_a: 0.0,
            max_len_b,
            min_len,
            blocked_tokens: blocked,
            nbest,
            ..TranslateOptions::default()
        },
        decoder_start_token_id,
        notes,
    })
}

/// Reads the generation settings of the MarianMT directory `dir`: `generation_config.json` if
/// present, else `config.json`'s generation keys.
pub fn read(dir: &Path, pad: u32) -> Result<GenerationDefaults, ConvertError> {
    let own = dir.join("generation_config.json");
    let path = if own.is_file() {
        own
    } else {
        dir.join("config.json")
    };
    let text = std::fs::read_to_string(&path).map_err(ConvertError::io(&path))?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => from_map(&map, &path, pad),
        Ok(_) => Err(ConvertError::Json {
            path,
            reason: "expected a JSON object".into(),
        }),
        Err(e) => Err(ConvertError::Json {
            path,
            reason: e.to_string(),
        }),
    }
}

/// `generation_config.json` for a model that decodes with `options` and has the special ids
/// `(pad, eos, decoder_start)`: what `generate` needs to decode as `rosetta translate` does.
pub fn to_json(options: &TranslateOptions, pad: u32, eos: u32, decoder_start: u32) -> Value {
    let early_stopping = match options.beam_stop {
        BeamStop::Transformers => json!(false),
        BeamStop::Count => json!(true),
        BeamStop::Bound => json!("never"),
    };
    let mut bad_words: Vec<Vec<u32>> = vec![vec![pad]];
    bad_words.extend(options.blocked_tokens.iter().map(|&id| vec![id]));
    json!({
        "bad_words_ids": bad_words,
        "decoder_start_token_id": decoder_start,
        "eos_token_id": eos,
        "forced_eos_token_id": eos,
        "pad_token_id": pad,
        "num_beams": options.beam,
        "num_return_sequences": options.nbest,
        "length_penalty": options.alpha,
        "early_stopping": early_stopping,
        "max_length": options.max_len_b + 2,
        "min_length": if options.min_len > 0 { options.min_len + 1 } else { 0 },
        "renormalize_logits": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: Value) -> Result<GenerationDefaults, ConvertError> {
        let Value::Object(map) = json else {
            panic!("an object")
        };
        from_map(&map, Path::new("generation_config.json"), 58100)
    }

    #[test]
    fn opus_mt_settings_become_rosetta_options() {
        let defaults = read(json!({
            "num_beams": 4, "max_length": 512, "bad_words_ids": [[58100]],
            "decoder_start_token_id": 58100, "eos_token_id": 0, "forced_eos_token_id": 0,
            "pad_token_id": 58100, "renormalize_logits": false
        }))
        .expect("reads");
        let o = &defaults.options;
        assert_eq!((o.beam, o.nbest, o.max_len_b, o.min_len), (4, 1, 510, 0));
        assert_eq!(
            (o.alpha, o.length_norm, o.beam_stop),
            (1.0, LengthNorm::Power, BeamStop::Transformers)
        );
        assert!(o.blocked_tokens.is_empty(), "PAD is blocked anyway");
        assert!(defaults.notes.is_empty(), "{:?}", defaults.notes);
        assert_eq!(defaults.decoder_start_token_id, Some(58100));
        // Without settings: transformers' defaults, greedy with 20 new tokens (EOS included).
        let bare = read(json!({})).expect("reads");
        assert_eq!((bare.options.beam, bare.options.max_len_b), (1, 19));
        // Written back, they read as themselves.
        let back = read(to_json(o, 58100, 0, 58100)).expect("reads back");
        assert_eq!(&back.options, o);
    }

    #[test]
    fn what_rosetta_does_not_apply_is_reported_and_impossible_values_refused() {
        let defaults = read(json!({
            "num_beams": 2, "no_repeat_ngram_size": 3, "bad_words_ids": [[5], [6, 7]],
            "early_stopping": "never", "min_length": 3
        }))
        .expect("reads");
        assert_eq!(defaults.options.blocked_tokens, vec![5]);
        assert_eq!(defaults.options.min_len, 2);
        assert_eq!(defaults.notes.len(), 3, "{:?}", defaults.notes);
        for (json, key) in [
            (json!({"num_beams": 0}), "num_beams"),
            (
                json!({"num_beams": 2, "num_return_sequences": 3}),
                "num_return_sequences",
            ),
            (json!({"early_stopping": "sometimes"}), "early_stopping"),
            (json!({"bad_words_ids": [["a"]]}), "bad_words_ids"),
            (json!({"max_length": -1}), "max_length"),
        ] {
            let error = read(json.clone()).expect_err("refused");
            assert!(
                matches!(&error, ConvertError::Key { key: k, .. } if k == key),
                "{json}: {error}"
            );
        }
    }
}
