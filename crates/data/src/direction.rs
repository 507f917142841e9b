//! Several translation directions in one run (multilingual training): each direction with its
//! corpora, the target-language tag that tells the model what to produce, and the temperature
//! that decides how often each direction's pairs are offered.
//!
//! The tag is Marian's: `>>de<<` is the first source token of every pair whose target is German
//! (OPUS-MT's multilingual models, and what `MarianTokenizer` expects). A source-side tag needs
//! nothing of the decoder or the search: the decoder starts as in any run, so greedy and beam
//! search, ensembles, the CTranslate2 export (a source token like any other) and the browser
//! build translate every direction unchanged once the tag is in the source.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::TrainingCorpora;
use crate::corpus::CorpusFiles;
use crate::error::DataError;

/// A language code: ISO 639-1 or 639-3 (two or three lower-case ASCII letters), optionally
/// followed by subtags of 2–8 ASCII letters or digits after `_` or `-` (`pt_BR`, `zh-Hant`,
/// `zho_Hant`), as OPUS-MT writes them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LanguageCode(String);

impl LanguageCode {
    /// The code `text`, checked.
    pub fn parse(text: &str) -> Result<Self, String> {
        let invalid = |why: &str| {
            Err(format!(
                "`{text}` is not a language code: {why} (ISO 639: `de`, `fra`, optionally with subtags: `pt_BR`, `zh-Hant`)"
            ))
        };
        let mut parts = text.split(['_', '-']);
        let primary = parts.next().unwrap_or_default();
        if !(2..=3).contains(&primary.len()) || !primary.bytes().all(|b| b.is_ascii_lowercase()) {
            return invalid("it must start with two or three lower-case letters");
        }
        for subtag in parts {
            if !(2..=8).contains(&subtag.len())
                || !subtag.bytes().all(|b| b.is_ascii_alphanumeric())
            {
                return invalid("each subtag must be 2 to 8 letters or digits");
            }
        }
        Ok(Self(text.to_string()))
    }

    /// The code as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The source token that asks for a translation into this language: `>>de<<`.
    pub fn tag(&self) -> String {
        tag_of(&self.0)
    }
}

/// The tag of language `code` (`>>de<<`), the one place its spelling is written.
pub fn tag_of(code: &str) -> String {
    format!(">>{code}<<")
}

impl TryFrom<String> for LanguageCode {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text)
    }
}

impl From<LanguageCode> for String {
    fn from(code: LanguageCode) -> String {
        code.0
    }
}

impl fmt::Display for LanguageCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One direction of a multilingual run (`[[data.directions]]`): its languages, training
/// corpora (one, or several with weights, as `data.train`) and validation split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Direction {
    /// The language translated from.
    pub source_lang: LanguageCode,
    /// The language translated into: its tag (`>>de<<`) starts every source of the direction.
    pub target_lang: LanguageCode,
    /// The direction's training corpus, or several with weights.
    pub train: TrainingCorpora,
    /// The direction's validation split.
    pub valid: CorpusFiles,
}

impl Direction {
    /// `en-de`: how logs, metrics and messages name the direction.
    pub fn name(&self) -> String {
        format!("{}-{}", self.source_lang, self.target_lang)
    }

    /// The languages, as a checkpoint records them.
    pub fn pair(&self) -> LanguagePair {
        LanguagePair {
            source: self.source_lang.to_string(),
            target: self.target_lang.to_string(),
        }
    }
}

/// A direction's source and target language codes, as checkpoints, bundles and servers record
/// them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LanguagePair {
    /// The language translated from.
    pub source: String,
    /// The language translated into.
    pub target: String,
}

impl fmt::Display for LanguagePair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.source, self.target)
    }
}

/// The largest sampling temperature accepted: beyond it every direction is offered equally
/// often to within 1% for any corpus sizes a run can hold.
pub const MAX_TEMPERATURE: f64 = 1000.0;

/// The smallest sampling temperature accepted: below it the shares of small directions,
/// `(n_d / N)^(1/T)`, underflow to 0 for corpus sizes a run can hold (2^32 pairs).
pub const MIN_TEMPERATURE: f64 = 0.1;

/// Checks a sampling temperature (`data.temperature`): finite, from [`MIN_TEMPERATURE`] to
/// [`MAX_TEMPERATURE`] (so above 0).
pub fn check_temperature(temperature: f64) -> Result<(), DataError> {
    if (MIN_TEMPERATURE..=MAX_TEMPERATURE).contains(&temperature) {
        return Ok(());
    }
    Err(DataError::InvalidSetting {
        key: "data.temperature",
        reason: format!(
            "is {temperature}; it must be from {MIN_TEMPERATURE} to {MAX_TEMPERATURE} (1: each direction in proportion to its pairs, 5: flatter)"
        ),
    })
}

/// How many times more often each direction's pairs are offered under temperature `t`, given
/// each direction's pair count: direction `d` of `n_d` pairs is sampled with probability
/// `p_d ∝ (n_d / N)^(1/t)` (the multilingual NMT literature's temperature sampling), and an epoch
/// still offers `N = Σ n_d` pairs, so its pairs are each offered `p_d · N / n_d` times on
/// average. `t = 1` gives 1 for every direction (proportional); a larger `t` raises the small
/// directions towards an equal share. A direction without pairs gets 0.
pub fn temperature_multipliers(pairs: &[usize], temperature: f64) -> Vec<f64> {
    let total: f64 = pairs.iter().map(|&n| n as f64).sum();
    if total == 0.0 {
        return vec![0.0; pairs.len()];
    }
    let shares: Vec<f64> = pairs
        .iter()
        .map(|&n| (n as f64 / total).powf(1.0 / temperature))
        .collect();
    let norm: f64 = shares.iter().sum();
    pairs
        .iter()
        .zip(&shares)
        .map(|(&n, share)| {
            if n == 0 {
                0.0
            } else {
                share / norm * total / n as f64
            }
        })
        .collect()
}

/// The splits of a run by direction: a bilingual run is one direction without a tag.
#[derive(Debug, Clone, PartialEq)]
pub struct DirectionSplits {
    /// The direction's languages and the target-language tag; `None` for a bilingual run.
    pub direction: Option<Direction>,
    /// Training corpora with their weights, paths resolved.
    pub train: Vec<(CorpusFiles, f64)>,
    /// The validation split, paths resolved.
    pub valid: CorpusFiles,
}

impl DirectionSplits {
    /// How messages name the direction: `en-de`, or nothing for a bilingual run.
    pub fn label(&self) -> Option<String> {
        self.direction.as_ref().map(Direction::name)
    }
}

/// Refuses two directions with the same languages, naming them.
pub(crate) fn check_distinct(directions: &[Direction]) -> Result<(), DataError> {
    for (i, a) in directions.iter().enumerate() {
        if let Some(j) = directions[..i].iter().position(|b| b.pair() == a.pair()) {
            return Err(DataError::InvalidSetting {
                key: "data.directions",
                reason: format!(
                    "directions {} and {} are both {}; give each direction once, with all its corpora in its `train`",
                    j + 1,
                    i + 1,
                    a.name()
                ),
            });
        }
    }
    Ok(())
}

/// The directions' splits with paths resolved against `base`.
pub(crate) fn resolve(directions: &[Direction], base: &Path) -> Vec<DirectionSplits> {
    directions
        .iter()
        .map(|d| DirectionSplits {
            direction: Some(d.clone()),
            train: d.train.resolved(base),
            valid: d.valid.resolved(base),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_follow_iso_639_with_subtags() {
        for good in ["de", "fra", "pt_BR", "zh-Hant", "zho_Hant", "sr_Cyrl_RS"] {
            assert_eq!(
                LanguageCode::parse(good).map(|c| c.to_string()),
                Ok(good.into())
            );
        }
        for bad in [
            "",
            "d",
            "deut",
            "DE",
            "de_",
            "de-x",
            "d3",
            ">>de<<",
            "de de",
            "pt_BRAZILIAN",
        ] {
            let error = LanguageCode::parse(bad).expect_err(bad);
            assert!(error.contains(&format!("`{bad}`")), "{error}");
        }
        assert_eq!(
            LanguageCode::parse("de").map(|c| c.tag()),
            Ok(">>de<<".into())
        );
    }

    #[test]
    fn temperature_one_offers_every_pair_once() {
        let m = temperature_multipliers(&[1000, 100, 10], 1.0);
        for x in m {
            assert!((x - 1.0).abs() < 1e-12, "{x}");
        }
    }

    #[test]
    fn temperature_flattens_towards_equal_shares() {
        // Closed form for two directions of 900 and 100 pairs at T = 2: shares ∝ 0.9^½ and
        // 0.1^½ = 0.948683 and 0.316228, i.e. 0.75 and 0.25 of the 1,000 pairs an epoch offers.
        let m = temperature_multipliers(&[900, 100], 2.0);
        assert!((m[0] * 900.0 - 750.0).abs() < 1e-9, "{m:?}");
        assert!((m[1] * 100.0 - 250.0).abs() < 1e-9, "{m:?}");
        // The epoch's size is kept at any temperature.
        for t in [1.0, 5.0, 100.0] {
            let pairs = [5000, 300, 20];
            let m = temperature_multipliers(&pairs, t);
            let offered: f64 = pairs.iter().zip(&m).map(|(&n, x)| n as f64 * x).sum();
            assert!((offered - 5320.0).abs() < 1e-6, "{t}: {offered}");
        }
        // A very high temperature offers each direction an equal share.
        let m = temperature_multipliers(&[5000, 300, 20], MAX_TEMPERATURE);
        let shares: Vec<f64> = [5000.0, 300.0, 20.0]
            .iter()
            .zip(&m)
            .map(|(n, x)| n * x / 5320.0)
            .collect();
        for share in shares {
            assert!((share - 1.0 / 3.0).abs() < 0.01, "{share}");
        }
        assert_eq!(temperature_multipliers(&[0, 10], 5.0)[0], 0.0);
    }

    #[test]
    fn impossible_temperatures_are_refused_by_key() {
        for t in [
            0.0,
            -1.0,
            0.05,
            f64::NAN,
            f64::INFINITY,
            MAX_TEMPERATURE * 2.0,
        ] {
            let error = check_temperature(t).expect_err("refused").to_string();
            assert!(error.contains("data.temperature"), "{error}");
        }
        assert!(check_temperature(5.0).is_ok() && check_temperature(MIN_TEMPERATURE).is_ok());
        // At the smallest temperature, a direction of one pair among 2^32 keeps a share above
        // 0 (no underflow).
        let m = temperature_multipliers(&[u32::MAX as usize, 1], MIN_TEMPERATURE);
        assert!(m[1] > 0.0 && m[1].is_finite(), "{m:?}");
    }
}
