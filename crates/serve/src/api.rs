//! The request and response shapes of the two APIs the server speaks, so that existing clients
//! work unchanged: LibreTranslate's `POST /translate` and OpenNMT-py's
//! `POST /translator/translate`. Parsing is strict about types and lenient about the fields
//! these APIs define that do not apply here (`api_key`, LibreTranslate's `format = "text"`).

use serde::{Deserialize, Serialize};

/// One sentence or several, as LibreTranslate's `q`: a string or an array of strings, anything
/// else refused saying so.
#[derive(Debug, Clone, PartialEq)]
pub enum OneOrMany {
    /// `"q": "text"`: answered with a string.
    One(String),
    /// `"q": ["a", "b"]`: answered with an array.
    Many(Vec<String>),
}

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = OneOrMany;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`q` to be a string or an array of strings")
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(OneOrMany::One(text.to_string()))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(OneOrMany::One(text))
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Vec::<String>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(OneOrMany::Many)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl OneOrMany {
    /// The sentences, in order.
    pub fn sentences(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// LibreTranslate's request body.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct LibreRequest {
    /// The text(s) to translate.
    pub q: OneOrMany,
    /// Source language code, or `auto`; must match the server's if given.
    #[serde(default)]
    pub source: Option<String>,
    /// Target language code; must match the server's if given.
    #[serde(default)]
    pub target: Option<String>,
    /// `text` (the default); `html` is not supported.
    #[serde(default)]
    pub format: Option<String>,
    /// Extra hypotheses wanted per sentence (n-best beyond the best), at most beam − 1.
    #[serde(default)]
    pub alternatives: usize,
    /// Accepted and ignored: the server has no keys.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Rosetta's addition: also return the cross-attention of the first sentence.
    #[serde(default)]
    pub attention: bool,
}

/// The cross-attention of one translation, as the page draws it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttentionJson {
    /// Source subwords and `</s>` (columns).
    pub source: Vec<String>,
    /// Output subwords and `</s>` (rows).
    pub target: Vec<String>,
    /// Row-major weights, `target.len() × source.len()`, rows summing to 1.
    pub weights: Vec<f32>,
}

/// One sentence of OpenNMT-py's request array.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct OnmtRequest {
    /// The text to translate.
    pub src: String,
    /// The model id; accepted whatever it is (this server holds one model).
    #[serde(default)]
    pub id: Option<serde_json::Value>,
}

/// One hypothesis of OpenNMT-py's response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OnmtResponse {
    /// The source text.
    pub src: String,
    /// The translation.
    pub tgt: String,
    /// How many hypotheses are returned per sentence.
    pub n_best: usize,
    /// The length-penalised log-probability score of this hypothesis.
    pub pred_score: f32,
}
