//! chrF (Popović, 2015) exactly as sacreBLEU's defaults compute it
//! (`sacrebleu.corpus_chrf(hyps, refs)`, ported from `sacrebleu/metrics/chrf.py`): character
//! n-grams of orders 1 to 6 counted over Unicode scalar values (not bytes) with whitespace
//! removed, no word n-grams, β = 2 (chrF2), mixed case. sacreBLEU's default smoothing is
//! *effective order* (`eff:yes` in its signature: precision and recall are averaged over the
//! orders that both sides have); the chrF++.py-style epsilon smoothing is
//! [`ChrfConfig::eps_smoothing`].

use std::collections::HashMap;
use std::fmt;

use super::text::is_python_whitespace;
use super::{MetricError, SACREBLEU_COMPATIBLE_VERSION, check_streams};

/// The settings of chrF; [`ChrfConfig::default`] is sacreBLEU's default chrF2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChrfConfig {
    /// Maximum character n-gram order (6).
    pub char_order: usize,
    /// Recall weight β (2: recall counts twice as much as precision).
    pub beta: u32,
    /// chrF++.py-style epsilon smoothing instead of sacreBLEU's effective order (false).
    pub eps_smoothing: bool,
}

impl Default for ChrfConfig {
    fn default() -> Self {
        Self {
            char_order: 6,
            beta: 2,
            eps_smoothing: false,
        }
    }
}

/// chrF's sufficient statistics: per character n-gram order, `[hypothesis n-grams, reference
/// n-grams, matches]`; summed over segments they determine the corpus score.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChrfStats {
    /// `[hyp, ref, match]` counts, index 0 for unigrams.
    pub orders: Vec<[u64; 3]>,
}

impl ChrfStats {
    /// All-zero statistics for `char_order` orders.
    pub fn zero(char_order: usize) -> Self {
        Self {
            orders: vec![[0; 3]; char_order],
        }
    }

    /// Adds another segment's (or corpus') statistics.
    ///
    /// # Panics
    /// If the two were made for different n-gram orders.
    pub fn add(&mut self, other: &ChrfStats) {
        assert_eq!(self.orders.len(), other.orders.len(), "chrF orders differ");
        for (mine, theirs) in self.orders.iter_mut().zip(&other.orders) {
            for k in 0..3 {
                mine[k] += theirs[k];
            }
        }
    }
}

/// A chrF score, as sacreBLEU's `CHRFScore`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChrfScore {
    /// chrF, 0 to 100.
    pub score: f64,
    /// The settings it was computed with.
    pub config: ChrfConfig,
}

impl ChrfScore {
    /// The metric's name, `chrF2` for β = 2.
    pub fn name(&self) -> String {
        format!("chrF{}", self.config.beta)
    }

    /// sacreBLEU's full score line: `chrF2|<signature> = 55.23`.
    pub fn line(&self, nrefs: usize) -> String {
        format!(
            "{}|{} = {:.2}",
            self.name(),
            chrf_signature(&self.config, nrefs),
            self.score
        )
    }
}

impl fmt::Display for ChrfScore {
    /// As sacreBLEU prints a `CHRFScore` (`str(score)`): `chrF2 = 55.23`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {:.2}", self.name(), self.score)
    }
}

/// sacreBLEU's chrF signature, e.g. `nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0`
/// for the default; the version is [`SACREBLEU_COMPATIBLE_VERSION`].
pub fn chrf_signature(config: &ChrfConfig, nrefs: usize) -> String {
    let eff = if config.eps_smoothing { "no" } else { "yes" };
    format!(
        "nrefs:{nrefs}|case:mixed|eff:{eff}|nc:{}|nw:0|space:no|version:{SACREBLEU_COMPATIBLE_VERSION}",
        config.char_order
    )
}

/// The chrF metric with its settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chrf {
    /// The settings.
    pub config: ChrfConfig,
}

impl Chrf {
    /// chrF with the given settings.
    pub fn new(config: ChrfConfig) -> Self {
        Self { config }
    }

    /// The statistics of one segment. With several references, those of the reference whose
    /// segment-level chrF is highest (the first one on a tie), as sacreBLEU.
    pub fn segment<S: AsRef<str>>(&self, hyp: &str, refs: &[S]) -> ChrfStats {
        let hyp_chars = non_space_chars(hyp);
        let hyp_ngrams = char_ngrams(&hyp_chars, self.config.char_order);
        let mut best: Option<(f64, ChrfStats)> = None;
        for reference in refs {
            let ref_chars = non_space_chars(reference.as_ref());
            let ref_ngrams = char_ngrams(&ref_chars, self.config.char_order);
            let stats = ChrfStats {
                orders: hyp_ngrams
                    .iter()
                    .zip(&ref_ngrams)
                    .map(|(h, r)| match_statistics(h, r))
                    .collect(),
            };
            let f = self.f_score(&stats);
            if best.as_ref().is_none_or(|(best_f, _)| f > *best_f) {
                best = Some((f, stats));
            }
        }
        best.map_or_else(|| ChrfStats::zero(self.config.char_order), |(_, s)| s)
    }

    /// The corpus statistics of `hyps` against the reference streams `refs`.
    pub fn corpus_stats<H, R, S>(&self, hyps: &[H], refs: &[R]) -> Result<ChrfStats, MetricError>
    where
        H: AsRef<str>,
        R: AsRef<[S]>,
        S: AsRef<str>,
    {
        check_streams(hyps.len(), refs)?;
        let mut total = ChrfStats::zero(self.config.char_order);
        for (i, hyp) in hyps.iter().enumerate() {
            let segment_refs: Vec<&str> = refs.iter().map(|r| r.as_ref()[i].as_ref()).collect();
            total.add(&self.segment(hyp.as_ref(), &segment_refs));
        }
        Ok(total)
    }

    /// Corpus chrF of `hyps` against one or more reference streams.
    pub fn corpus_score<H, R, S>(&self, hyps: &[H], refs: &[R]) -> Result<ChrfScore, MetricError>
    where
        H: AsRef<str>,
        R: AsRef<[S]>,
        S: AsRef<str>,
    {
        Ok(self.score(&self.corpus_stats(hyps, refs)?))
    }

    /// The score these statistics give.
    pub fn score(&self, stats: &ChrfStats) -> ChrfScore {
        ChrfScore {
            score: self.f_score(stats),
            config: self.config,
        }
    }

    /// sacreBLEU's `CHRF._compute_f_score`, operation for operation.
    fn f_score(&self, stats: &ChrfStats) -> f64 {
        const EPS: f64 = 1e-16;
        let factor = f64::from(self.config.beta * self.config.beta);
        let mut score = 0.0;
        let mut effective_order = 0u32;
        let (mut avg_prec, mut avg_rec) = (0.0, 0.0);
        for &[n_hyp, n_ref, n_match] in &stats.orders {
            let prec = if n_hyp > 0 {
                n_match as f64 / n_hyp as f64
            } else {
                EPS
            };
            let rec = if n_ref > 0 {
                n_match as f64 / n_ref as f64
            } else {
                EPS
            };
            let denom = factor * prec + rec;
            score += if denom > 0.0 {
                (1.0 + factor) * prec * rec / denom
            } else {
                EPS
            };
            if n_hyp > 0 && n_ref > 0 {
                avg_prec += prec;
                avg_rec += rec;
                effective_order += 1;
            }
        }
        if self.config.eps_smoothing {
            return 100.0 * score / stats.orders.len() as f64;
        }
        if effective_order == 0 {
            avg_prec = 0.0;
            avg_rec = 0.0;
        } else {
            avg_prec /= f64::from(effective_order);
            avg_rec /= f64::from(effective_order);
        }
        if avg_prec + avg_rec != 0.0 {
            let mut score = (1.0 + factor) * avg_prec * avg_rec;
            score /= factor * avg_prec + avg_rec;
            100.0 * score
        } else {
            0.0
        }
    }
}

/// Corpus chrF2 of `hyps` against one or more reference streams, identical to
/// `sacrebleu.corpus_chrf(hyps, refs)` with its defaults.
///
/// An empty corpus scores 0 (sacreBLEU raises an error instead).
pub fn corpus_chrf<H, R, S>(hyps: &[H], refs: &[R]) -> Result<ChrfScore, MetricError>
where
    H: AsRef<str>,
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    Chrf::default().corpus_score(hyps, refs)
}

/// The characters of `line` (Unicode scalar values) without whitespace.
fn non_space_chars(line: &str) -> Vec<char> {
    line.chars().filter(|&c| !is_python_whitespace(c)).collect()
}

/// Character n-gram counts of orders 1 to `max_order`.
fn char_ngrams(chars: &[char], max_order: usize) -> Vec<HashMap<&[char], u64>> {
    (1..=max_order)
        .map(|n| {
            let mut counts = HashMap::new();
            for window in chars.windows(n) {
                *counts.entry(window).or_insert(0) += 1;
            }
            counts
        })
        .collect()
}

/// `[hyp n-grams (0 when the reference has none), ref n-grams, matches]` for one order, as
/// sacreBLEU's `CHRF._get_match_statistics`.
fn match_statistics(hyp: &HashMap<&[char], u64>, reference: &HashMap<&[char], u64>) -> [u64; 3] {
    let mut hyp_count = 0;
    let mut matches = 0;
    for (ngram, &count) in hyp {
        hyp_count += count;
        if let Some(&ref_count) = reference.get(ngram) {
            matches += count.min(ref_count);
        }
    }
    [
        if reference.is_empty() { 0 } else { hyp_count },
        reference.values().sum(),
        matches,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_characters_not_bytes_and_ignores_whitespace() {
        // "ä ö" is 2 characters (4 bytes in UTF-8) once the space is removed.
        let stats = Chrf::default().segment("ä ö", &["äö"]);
        assert_eq!(stats.orders[0], [2, 2, 2]);
        assert_eq!(stats.orders[1], [1, 1, 1]);
        // Orders beyond the length: nothing on either side.
        assert_eq!(stats.orders[2], [0, 0, 0]);
        let score = Chrf::default().score(&stats);
        assert!((score.score - 100.0).abs() < 1e-12);
    }

    #[test]
    fn hypothesis_counts_are_dropped_when_the_reference_has_no_ngram_of_that_order() {
        let stats = Chrf::default().segment("abcdef", &["ab"]);
        assert_eq!(stats.orders[0], [6, 2, 2]);
        assert_eq!(stats.orders[1], [5, 1, 1]);
        assert_eq!(stats.orders[2], [0, 0, 0]);
    }

    #[test]
    fn effective_order_and_eps_smoothing_differ_as_in_sacrebleu() {
        // One order, precision 1/2 and recall 1/1: F2 = 5 * 0.5 * 1 / (4 * 0.5 + 1) = 5/6.
        let stats = ChrfStats {
            orders: vec![[2, 1, 1]],
        };
        let config = ChrfConfig {
            char_order: 1,
            ..ChrfConfig::default()
        };
        let eff = Chrf::new(config).score(&stats).score;
        assert!((eff - 500.0 / 6.0).abs() < 1e-9);
        // Adding an order that neither side has: effective order ignores it, eps averages it in.
        let stats = ChrfStats {
            orders: vec![[2, 1, 1], [0, 0, 0]],
        };
        let config = ChrfConfig {
            char_order: 2,
            ..ChrfConfig::default()
        };
        assert!((Chrf::new(config).score(&stats).score - eff).abs() < 1e-9);
        let eps = Chrf::new(ChrfConfig {
            eps_smoothing: true,
            ..config
        })
        .score(&stats)
        .score;
        assert!((eps - eff / 2.0).abs() < 1e-6);
    }

    #[test]
    fn best_reference_is_chosen_per_segment() {
        let chrf = Chrf::default();
        let both = chrf.segment("the cat", &["a dog", "the cat"]);
        let good = chrf.segment("the cat", &["the cat"]);
        assert_eq!(both, good);
    }

    #[test]
    fn display_signature_and_empty_corpus() {
        let score = corpus_chrf(&["abc"], &[["abc"]]).unwrap();
        assert_eq!(score.to_string(), "chrF2 = 100.00");
        assert_eq!(
            score.line(1),
            "chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0 = 100.00"
        );
        let empty: [&str; 0] = [];
        assert_eq!(corpus_chrf(&empty, &[empty]).unwrap().score, 0.0);
    }
}
