//! The options object JavaScript passes to `translate`: `{ beam, alpha, lengthNorm,
//! beamStop, maxLen, maxLenA, maxLenB, nbest, batchSize, targetLang }`, every key optional, read into Rosetta's
//! [`TranslateOptions`] and checked as `rosetta translate` checks its flags, so a bad value
//! fails with the command line's message.

use rosetta_infer::{BeamStop, LengthNorm, TranslateOptions};
use serde::Deserialize;

use crate::error::WebError;

/// The options as JavaScript spells them; an absent key keeps the model's default, as
/// `rosetta translate` does.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct WebOptions {
    /// Beam size; 1 is greedy search.
    pub beam: Option<usize>,
    /// Length-penalty exponent of beam search.
    pub alpha: Option<f64>,
    /// The length penalty's form, `"gnmt"` or `"power"`.
    pub length_norm: Option<LengthNorm>,
    /// When beam search stops a sentence, `"bound"`, `"count"` or `"transformers"`.
    pub beam_stop: Option<BeamStop>,
    /// A fixed limit on output subwords (short for `maxLenA: 0, maxLenB: maxLen`).
    pub max_len: Option<usize>,
    /// `a` of the output limit `a · source_len + b`.
    pub max_len_a: Option<f64>,
    /// `b` of the output limit `a · source_len + b`.
    pub max_len_b: Option<usize>,
    /// Hypotheses returned per sentence.
    pub nbest: Option<usize>,
    /// Sentences decoded together by `translateBatch`.
    pub batch_size: Option<usize>,
    /// The language to translate into: required by a multilingual bundle (see
    /// `rosetta translate --target-lang`), which refuses one it was not trained for.
    pub target_lang: Option<String>,
}

impl WebOptions {
    /// Parses the options from their JSON text (`JSON.stringify` of the JavaScript object;
    /// `undefined` and `null` mean no options), naming an unknown or mistyped key.
    pub fn from_json(json: Option<&str>) -> Result<Self, WebError> {
        let json = match json.map(str::trim) {
            None | Some("" | "null" | "undefined") => return Ok(Self::default()),
            Some(json) => json,
        };
        let deserializer = &mut serde_json::Deserializer::from_str(json);
        serde_path_to_error::deserialize(deserializer).map_err(|e| {
            let key = e.path().to_string();
            let reason = e.inner().to_string();
            // No key to name: the options are not an object at all (`5`, `"fast"`, bad JSON).
            if key == "." {
                WebError::NotAnObject(reason)
            } else {
                WebError::Options { key, reason }
            }
        })
    }

    /// The [`TranslateOptions`] these describe over the model's `defaults` (its own decoding:
    /// an imported model's generation settings, else Rosetta's defaults), checked.
    pub fn resolve(&self, defaults: &TranslateOptions) -> Result<TranslateOptions, WebError> {
        let mut options = defaults.clone();
        if let Some(beam) = self.beam {
            options.beam = beam;
        }
        if let Some(alpha) = self.alpha {
            options.alpha = alpha;
        }
        if let Some(norm) = self.length_norm {
            options.length_norm = norm;
        }
        if let Some(stop) = self.beam_stop {
            options.beam_stop = stop;
        }
        if let Some(max_len) = self.max_len {
            if self.max_len_a.is_some() || self.max_len_b.is_some() {
                return Err(WebError::ConflictingLimits);
            }
            options.max_len_a = 0.0;
            options.max_len_b = max_len;
        }
        if let Some(a) = self.max_len_a {
            options.max_len_a = a;
        }
        if let Some(b) = self.max_len_b {
            options.max_len_b = b;
        }
        if let Some(nbest) = self.nbest {
            options.nbest = nbest;
        }
        if let Some(batch_size) = self.batch_size {
            options.batch_size = batch_size;
        }
        options.validate()?;
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::WebOptions;
    use rosetta_infer::{BeamStop, LengthNorm, TranslateOptions};

    fn resolve(json: &str) -> Result<TranslateOptions, String> {
        WebOptions::from_json(Some(json))
            .and_then(|options| options.resolve(&TranslateOptions::default()))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn no_options_are_the_command_line_defaults() {
        for json in [None, Some("undefined"), Some("null"), Some("{}")] {
            let options =
                WebOptions::from_json(json).and_then(|o| o.resolve(&TranslateOptions::default()));
            assert_eq!(options.ok(), Some(TranslateOptions::default()), "{json:?}");
        }
    }

    #[test]
    fn keys_are_camel_case_and_max_len_fixes_the_limit() {
        let options = resolve(r#"{"beam": 1, "alpha": 1.0, "maxLen": 40, "nbest": 1}"#);
        let expected = TranslateOptions {
            beam: 1,
            alpha: 1.0,
            max_len_a: 0.0,
            max_len_b: 40,
            ..TranslateOptions::default()
        };
        assert_eq!(options, Ok(expected));
        let options = resolve(r#"{"lengthNorm": "power", "beamStop": "count"}"#);
        let expected = TranslateOptions {
            length_norm: LengthNorm::Power,
            beam_stop: BeamStop::Count,
            ..TranslateOptions::default()
        };
        assert_eq!(options, Ok(expected));
        let refused = resolve(r#"{"lengthNorm": "wu"}"#).unwrap_err();
        assert!(refused.contains("lengthNorm"), "{refused}");
        let options = resolve(r#"{"maxLenA": 2.0, "maxLenB": 3, "batchSize": 8}"#);
        let expected = TranslateOptions {
            max_len_a: 2.0,
            max_len_b: 3,
            batch_size: 8,
            ..TranslateOptions::default()
        };
        assert_eq!(options, Ok(expected));
    }

    #[test]
    fn bad_options_fail_with_the_command_lines_message() {
        assert_eq!(
            resolve(r#"{"beam": 0}"#).unwrap_err(),
            "option --beam: is 0; the beam size must be at least 1 (1 is greedy search)"
        );
        assert!(
            resolve(r#"{"beam": 2, "nbest": 3}"#)
                .unwrap_err()
                .starts_with("option --nbest: is 3")
        );
        let unknown = resolve(r#"{"beams": 4}"#).unwrap_err();
        assert!(
            unknown.contains("key `beams`") && unknown.contains("unknown field"),
            "{unknown}"
        );
        let not_object = resolve("5").unwrap_err();
        assert!(
            not_object.starts_with("translation options: not an object"),
            "{not_object}"
        );
        let mistyped = resolve(r#"{"beam": "four"}"#).unwrap_err();
        assert!(mistyped.contains("key `beam`"), "{mistyped}");
        let both = resolve(r#"{"maxLen": 9, "maxLenB": 3}"#).unwrap_err();
        assert!(both.contains("not both"), "{both}");
    }
}
