//! Corpus BLEU (Papineni et al., 2002) exactly as sacreBLEU's defaults compute it
//! (`sacrebleu.corpus_bleu(hyps, refs)`, ported from `sacrebleu/metrics/bleu.py`): 13a
//! tokenization, mixed case, n-grams up to order 4, `exp` smoothing (mteval-v13a's), no
//! effective order, the brevity penalty from the closest reference length of each segment.

use std::collections::HashMap;
use std::fmt;
use std::ops::{Add, AddAssign};

use super::text::{python_rstrip, python_split};
use super::tokenize_13a::tokenize_13a;
use super::{MetricError, SACREBLEU_COMPATIBLE_VERSION, check_streams};

/// The maximum n-gram order of BLEU (sacreBLEU's `MAX_NGRAM_ORDER`).
pub const BLEU_MAX_ORDER: usize = 4;

/// BLEU's sufficient statistics: summed over segments, they determine the corpus score.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BleuStats {
    /// Clipped n-gram matches per order (index 0: unigrams).
    pub matches: [u64; BLEU_MAX_ORDER],
    /// Hypothesis n-grams per order.
    pub totals: [u64; BLEU_MAX_ORDER],
    /// Hypothesis length in tokens.
    pub sys_len: u64,
    /// Reference length in tokens (per segment, the reference closest to the hypothesis).
    pub ref_len: u64,
}

impl BleuStats {
    /// The statistics of one segment: `hyp` against its references (one per stream).
    ///
    /// Both sides are right-stripped and 13a-tokenized, as sacreBLEU does.
    pub fn segment<S: AsRef<str>>(hyp: &str, refs: &[S]) -> Self {
        let refs: Vec<String> = refs.iter().map(|r| preprocess(r.as_ref())).collect();
        let refs: Vec<&str> = refs.iter().map(String::as_str).collect();
        Self::segment_tokenized(&preprocess(hyp), &refs)
    }

    /// The statistics of one already-tokenized segment (tokens separated by whitespace).
    fn segment_tokenized(hyp: &str, refs: &[&str]) -> Self {
        let mut ref_ngrams: HashMap<Vec<&str>, u64> = HashMap::new();
        let mut ref_lens = Vec::with_capacity(refs.len());
        for reference in refs {
            let (ngrams, len) = word_ngrams(reference);
            ref_lens.push(len);
            for (ngram, count) in ngrams {
                let best = ref_ngrams.entry(ngram).or_insert(0);
                *best = (*best).max(count);
            }
        }
        let (hyp_ngrams, hyp_len) = word_ngrams(hyp);
        let mut stats = BleuStats {
            sys_len: hyp_len,
            ref_len: closest_ref_len(hyp_len, &ref_lens),
            ..BleuStats::default()
        };
        for (ngram, count) in hyp_ngrams {
            let n = ngram.len() - 1;
            stats.totals[n] += count;
            if let Some(&ref_count) = ref_ngrams.get(&ngram) {
                stats.matches[n] += count.min(ref_count);
            }
        }
        stats
    }

    /// The BLEU score these statistics give (sacreBLEU's `BLEU.compute_bleu` with `exp`
    /// smoothing and no effective order).
    pub fn score(&self) -> BleuScore {
        let (sys_len, ref_len) = (self.sys_len, self.ref_len);
        let mut bp = 1.0;
        if sys_len < ref_len {
            bp = if sys_len > 0 {
                (1.0 - ref_len as f64 / sys_len as f64).exp()
            } else {
                0.0
            };
        }
        let mut precisions = [0.0; BLEU_MAX_ORDER];
        let mut score = 0.0;
        // No match at all: score 0 (sacreBLEU's early stop, its issue #141).
        if self.matches.iter().any(|&m| m > 0) {
            let mut smooth_mteval = 1.0;
            for ((precision, &matches), &total) in
                precisions.iter_mut().zip(&self.matches).zip(&self.totals)
            {
                if total == 0 {
                    break;
                }
                *precision = if matches == 0 {
                    smooth_mteval *= 2.0;
                    100.0 / (smooth_mteval * total as f64)
                } else {
                    100.0 * matches as f64 / total as f64
                };
            }
            let log_sum: f64 = precisions.iter().map(|&p| floored_log(p)).sum();
            score = bp * (log_sum / BLEU_MAX_ORDER as f64).exp();
        }
        BleuScore {
            score,
            precisions,
            bp,
            ratio: if ref_len > 0 {
                sys_len as f64 / ref_len as f64
            } else {
                0.0
            },
            sys_len,
            ref_len,
            matches: self.matches,
            totals: self.totals,
        }
    }
}

impl AddAssign for BleuStats {
    fn add_assign(&mut self, other: Self) {
        for n in 0..BLEU_MAX_ORDER {
            self.matches[n] += other.matches[n];
            self.totals[n] += other.totals[n];
        }
        self.sys_len += other.sys_len;
        self.ref_len += other.ref_len;
    }
}

impl Add for BleuStats {
    type Output = Self;

    fn add(mut self, other: Self) -> Self {
        self += other;
        self
    }
}

impl std::iter::Sum for BleuStats {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::default(), Add::add)
    }
}

/// A corpus BLEU score and its parts, as sacreBLEU's `BLEUScore`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BleuScore {
    /// BLEU, 0 to 100.
    pub score: f64,
    /// The (smoothed) n-gram precisions, 0 to 100, orders 1 to 4.
    pub precisions: [f64; BLEU_MAX_ORDER],
    /// The brevity penalty.
    pub bp: f64,
    /// `sys_len / ref_len` (0 when `ref_len` is 0).
    pub ratio: f64,
    /// Total hypothesis length in tokens.
    pub sys_len: u64,
    /// Total (closest) reference length in tokens.
    pub ref_len: u64,
    /// Clipped n-gram matches per order.
    pub matches: [u64; BLEU_MAX_ORDER],
    /// Hypothesis n-grams per order.
    pub totals: [u64; BLEU_MAX_ORDER],
}

impl BleuScore {
    /// sacreBLEU's full score line: `BLEU|<signature> = 35.12 67.0/… (BP = … ref_len = …)`.
    pub fn line(&self, nrefs: usize) -> String {
        let rest = self.to_string();
        let rest = rest.strip_prefix("BLEU").unwrap_or(&rest);
        format!("BLEU|{}{rest}", bleu_signature(nrefs))
    }
}

impl fmt::Display for BleuScore {
    /// As sacreBLEU prints a `BLEUScore` (`str(score)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let precisions: Vec<String> = self.precisions.iter().map(|p| format!("{p:.1}")).collect();
        write!(
            f,
            "BLEU = {:.2} {} (BP = {:.3} ratio = {:.3} hyp_len = {} ref_len = {})",
            self.score,
            precisions.join("/"),
            self.bp,
            self.ratio,
            self.sys_len,
            self.ref_len
        )
    }
}

/// sacreBLEU's signature for its default BLEU with `nrefs` reference streams, e.g.
/// `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0`; the version is the sacreBLEU
/// release these scores are checked against ([`SACREBLEU_COMPATIBLE_VERSION`]).
pub fn bleu_signature(nrefs: usize) -> String {
    format!(
        "nrefs:{nrefs}|case:mixed|eff:no|tok:13a|smooth:exp|version:{SACREBLEU_COMPATIBLE_VERSION}"
    )
}

/// The corpus statistics of `hyps` against the reference streams `refs` (each stream holds one
/// reference per hypothesis), the sum of [`BleuStats::segment`] over segments.
pub fn corpus_bleu_stats<H, R, S>(hyps: &[H], refs: &[R]) -> Result<BleuStats, MetricError>
where
    H: AsRef<str>,
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    check_streams(hyps.len(), refs)?;
    Ok((0..hyps.len())
        .map(|i| {
            let segment_refs: Vec<&str> = refs.iter().map(|r| r.as_ref()[i].as_ref()).collect();
            BleuStats::segment(hyps[i].as_ref(), &segment_refs)
        })
        .sum())
}

/// Corpus BLEU of `hyps` against one or more reference streams, identical to
/// `sacrebleu.corpus_bleu(hyps, refs)` with its defaults.
///
/// An empty corpus scores 0 (sacreBLEU raises an error instead). Errors when no reference
/// stream is given or a stream's length differs from the number of hypotheses.
pub fn corpus_bleu<H, R, S>(hyps: &[H], refs: &[R]) -> Result<BleuScore, MetricError>
where
    H: AsRef<str>,
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    Ok(corpus_bleu_stats(hyps, refs)?.score())
}

/// sacreBLEU's segment preprocessing for BLEU: `tokenize_13a(sent.rstrip())`.
fn preprocess(sentence: &str) -> String {
    tokenize_13a(python_rstrip(sentence))
}

/// All n-grams of orders 1 to 4 of a tokenized line, with counts, and its length in tokens.
fn word_ngrams(line: &str) -> (HashMap<Vec<&str>, u64>, u64) {
    let tokens: Vec<&str> = python_split(line).collect();
    let mut ngrams = HashMap::new();
    for n in 1..=BLEU_MAX_ORDER {
        for window in tokens.windows(n) {
            *ngrams.entry(window.to_vec()).or_insert(0) += 1;
        }
    }
    (ngrams, tokens.len() as u64)
}

/// The reference length closest to `hyp_len`; the shorter one on a tie.
fn closest_ref_len(hyp_len: u64, ref_lens: &[u64]) -> u64 {
    let mut closest: Option<(u64, u64)> = None;
    for &len in ref_lens {
        let diff = hyp_len.abs_diff(len);
        closest = match closest {
            Some((best_diff, best_len))
                if diff > best_diff || (diff == best_diff && len >= best_len) =>
            {
                Some((best_diff, best_len))
            }
            _ => Some((diff, len)),
        };
    }
    closest.map_or(0, |(_, len)| len)
}

/// sacreBLEU's `my_log`: `ln`, floored at -9999999999 for 0.
fn floored_log(x: f64) -> f64 {
    if x == 0.0 { -9_999_999_999.0 } else { x.ln() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_corpus_scores_100() {
        let text = [
            "the cat sat on the mat .",
            "a dog barked loudly at the postman",
        ];
        let score = corpus_bleu(&text, &[text]).unwrap();
        assert!((score.score - 100.0).abs() < 1e-9, "{score}");
        assert_eq!(score.sys_len, 14);
        assert_eq!(score.bp, 1.0);
    }

    #[test]
    fn counts_are_clipped_by_the_reference() {
        // "the the the the" against "the cat": 1 unigram match (clipped), no bigram match.
        let stats = BleuStats::segment("the the the the", &["the cat"]);
        assert_eq!(stats.matches, [1, 0, 0, 0]);
        assert_eq!(stats.totals, [4, 3, 2, 1]);
        assert_eq!((stats.sys_len, stats.ref_len), (4, 2));
    }

    #[test]
    fn exp_smoothing_halves_each_zero_order() {
        // matches [2, 0, 0, 0] of totals [4, 3, 2, 1]: 50, 100/(2*3), 100/(4*2), 100/(8*1).
        let stats = BleuStats {
            matches: [2, 0, 0, 0],
            totals: [4, 3, 2, 1],
            sys_len: 4,
            ref_len: 4,
        };
        let score = stats.score();
        let expected = [50.0, 100.0 / 6.0, 100.0 / 8.0, 100.0 / 8.0];
        for (p, e) in score.precisions.iter().zip(expected) {
            assert!((p - e).abs() < 1e-12);
        }
        let geometric = expected.iter().map(|p: &f64| p.ln()).sum::<f64>() / 4.0;
        assert!((score.score - geometric.exp()).abs() < 1e-12);
    }

    #[test]
    fn closest_reference_length_prefers_the_shorter_on_ties() {
        assert_eq!(closest_ref_len(5, &[7, 3]), 3);
        assert_eq!(closest_ref_len(5, &[3, 7]), 3);
        assert_eq!(closest_ref_len(5, &[9, 6, 4]), 4);
        assert_eq!(closest_ref_len(5, &[]), 0);
    }

    #[test]
    fn brevity_penalty_and_empty_inputs() {
        let short = BleuStats {
            matches: [5, 4, 3, 2],
            totals: [5, 4, 3, 2],
            sys_len: 5,
            ref_len: 10,
        }
        .score();
        assert!((short.bp - (-1.0f64).exp()).abs() < 1e-15);
        assert!((short.score - 100.0 * (-1.0f64).exp()).abs() < 1e-9);

        let empty: [&str; 0] = [];
        let score = corpus_bleu(&empty, &[empty]).unwrap();
        assert_eq!((score.score, score.sys_len, score.ref_len), (0.0, 0, 0));
    }

    #[test]
    fn stream_length_mismatch_is_an_error() {
        let err = corpus_bleu(&["a", "b"], &[vec!["a"]]).unwrap_err();
        assert_eq!(
            err,
            MetricError::StreamLength {
                stream: 0,
                refs: 1,
                hyps: 2
            }
        );
        let none: [Vec<&str>; 0] = [];
        assert_eq!(
            corpus_bleu(&["a"], &none).unwrap_err(),
            MetricError::NoReferences
        );
    }

    #[test]
    fn display_and_signature() {
        let score = corpus_bleu(&["a b c d e"], &[["a b c d f"]]).unwrap();
        assert_eq!(
            score.to_string(),
            "BLEU = 66.87 80.0/75.0/66.7/50.0 (BP = 1.000 ratio = 1.000 hyp_len = 5 ref_len = 5)"
        );
        assert!(score.line(1).starts_with(
            "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0 = 66.87 "
        ));
    }
}
