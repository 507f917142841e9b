//! The encoded corpus: subword ids of every sentence in one flat buffer plus offsets (not a
//! `Vec` per sentence), with length filtering.

use serde::{Deserialize, Serialize};

use crate::corpus::ParallelCorpus;
use crate::error::DataError;
use crate::tokenizer::SubwordTokenizer;

/// Token sequences stored back to back: sequence `i` is `tokens[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenStore {
    tokens: Vec<u32>,
    offsets: Vec<u64>,
}

impl Default for TokenStore {
    fn default() -> Self {
        Self {
            tokens: Vec::new(),
            offsets: vec![0],
        }
    }
}

impl TokenStore {
    /// Rebuilds a store from its parts, checking that the offsets are consistent.
    pub fn from_parts(tokens: Vec<u32>, offsets: Vec<u64>) -> Result<Self, String> {
        if offsets.first() != Some(&0) {
            return Err("offsets must start at 0".into());
        }
        if offsets.windows(2).any(|w| w[0] > w[1]) {
            return Err("offsets must not decrease".into());
        }
        if offsets.last().copied() != Some(tokens.len() as u64) {
            return Err(format!(
                "last offset {:?} does not match {} tokens",
                offsets.last(),
                tokens.len()
            ));
        }
        Ok(Self { tokens, offsets })
    }

    /// Appends one sequence.
    pub fn push(&mut self, sequence: &[u32]) {
        self.tokens.extend_from_slice(sequence);
        self.offsets.push(self.tokens.len() as u64);
    }

    /// Sequence `i`.
    pub fn get(&self, i: usize) -> &[u32] {
        &self.tokens[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// Length of sequence `i`.
    pub fn seq_len(&self, i: usize) -> usize {
        (self.offsets[i + 1] - self.offsets[i]) as usize
    }

    /// Number of sequences.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no sequences.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total number of tokens.
    pub fn total_tokens(&self) -> usize {
        self.tokens.len()
    }

    /// The flat token buffer.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// The offsets (one more than the number of sequences).
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }
}

/// Which pairs to keep, measured in subword tokens *with* their framing (source + EOS,
/// BOS + target), i.e. the lengths the model sees.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LengthFilter {
    /// Longest source side kept.
    #[serde(default = "default_max_tokens")]
    pub max_source_tokens: usize,
    /// Longest target side kept.
    #[serde(default = "default_max_tokens")]
    pub max_target_tokens: usize,
    /// If set, pairs whose longer side is more than this many times the shorter are dropped.
    #[serde(default)]
    pub max_length_ratio: Option<f64>,
}

fn default_max_tokens() -> usize {
    256
}

impl Default for LengthFilter {
    fn default() -> Self {
        Self {
            max_source_tokens: default_max_tokens(),
            max_target_tokens: default_max_tokens(),
            max_length_ratio: None,
        }
    }
}

impl FilterStats {
    /// `pairs` pairs offered to the filter, all kept.
    pub fn all_kept(pairs: usize) -> Self {
        Self {
            offered: pairs,
            kept: pairs,
            ..Self::default()
        }
    }
}

/// What the length filter decides about one pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The pair is kept.
    Keep,
    /// A side is longer than its maximum.
    TooLong,
    /// The longer side is more than `max_length_ratio` times the shorter.
    BadRatio,
}

impl LengthFilter {
    /// The decision for a pair of unframed lengths (`source`, `target` subwords).
    pub fn judge(&self, source: usize, target: usize) -> Verdict {
        let (sl, tl) = (source + 1, target + 1);
        if sl > self.max_source_tokens || tl > self.max_target_tokens {
            return Verdict::TooLong;
        }
        if let Some(ratio) = self.max_length_ratio
            && sl.max(tl) as f64 > ratio * sl.min(tl) as f64
        {
            return Verdict::BadRatio;
        }
        Verdict::Keep
    }
}

/// What length filtering dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilterStats {
    /// Pairs offered to the filter.
    pub offered: usize,
    /// Pairs kept.
    pub kept: usize,
    /// Pairs dropped for a side longer than its maximum.
    pub too_long: usize,
    /// Pairs dropped for their length ratio.
    pub bad_ratio: usize,
}

/// A parallel corpus as subword ids: `source[i]` translates to `target[i]`, both unframed
/// (BOS/EOS are added when batching).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodedCorpus {
    /// Source sentences.
    pub source: TokenStore,
    /// Target sentences.
    pub target: TokenStore,
}

impl EncodedCorpus {
    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.source.len()
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.source.is_empty()
    }

    /// Appends every pair of `other`, in order.
    pub fn extend(&mut self, other: &EncodedCorpus) {
        for i in 0..other.len() {
            self.source.push(other.source.get(i));
            self.target.push(other.target.get(i));
        }
    }

    /// Framed lengths `(source + EOS, BOS + target)` of every pair, for batching.
    pub fn framed_lengths(&self) -> Vec<(usize, usize)> {
        (0..self.len())
            .map(|i| (self.source.seq_len(i) + 1, self.target.seq_len(i) + 1))
            .collect()
    }

    /// Tokenizes `corpus` (source side with `source_tokenizer`, target side with
    /// `target_tokenizer`) and keeps the pairs that pass `filter`.
    pub fn encode(
        corpus: &ParallelCorpus,
        source_tokenizer: &SubwordTokenizer,
        target_tokenizer: &SubwordTokenizer,
        filter: &LengthFilter,
    ) -> Result<(Self, FilterStats), DataError> {
        let sources = source_tokenizer.encode_batch(&corpus.source)?;
        let targets = target_tokenizer.encode_batch(&corpus.target)?;
        let mut encoded = EncodedCorpus::default();
        let mut stats = FilterStats {
            offered: sources.len(),
            ..FilterStats::default()
        };
        for (s, t) in sources.iter().zip(&targets) {
            match filter.judge(s.len(), t.len()) {
                Verdict::Keep => {
                    encoded.source.push(s);
                    encoded.target.push(t);
                }
                Verdict::TooLong => stats.too_long += 1,
                Verdict::BadRatio => stats.bad_ratio += 1,
            }
        }
        stats.kept = encoded.len();
        Ok((encoded, stats))
    }
}

/// Somewhere pairs of subword ids can be read from by index: an [`EncodedCorpus`] in memory,
/// a [`StoredCorpus`](crate::stored::StoredCorpus) on disk, or a
/// [`CorpusMix`](crate::mix::CorpusMix) of several.
pub trait PairSource: Send + Sync {
    /// Number of pairs.
    fn pair_count(&self) -> usize;

    /// Reads pair `index` (unframed) into `source` and `target`, which are cleared first.
    fn read_pair(
        &self,
        index: usize,
        source: &mut Vec<u32>,
        target: &mut Vec<u32>,
    ) -> Result<(), DataError>;

    /// Calls `f(index, source_len, target_len)` with every pair's framed lengths, in index order
    /// (a sequential read for a corpus on disk).
    fn for_each_framed_len(
        &self,
        f: &mut dyn FnMut(usize, usize, usize) -> Result<(), DataError>,
    ) -> Result<(), DataError>;
}

impl PairSource for EncodedCorpus {
    fn pair_count(&self) -> usize {
        self.len()
    }

    fn read_pair(
        &self,
        index: usize,
        source: &mut Vec<u32>,
        target: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        if index >= self.len() {
            return Err(DataError::IndexOutOfRange {
                index,
                len: self.len(),
            });
        }
        source.clear();
        source.extend_from_slice(self.source.get(index));
        target.clear();
        target.extend_from_slice(self.target.get(index));
        Ok(())
    }

    fn for_each_framed_len(
        &self,
        f: &mut dyn FnMut(usize, usize, usize) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        for i in 0..self.len() {
            f(i, self.source.seq_len(i) + 1, self.target.seq_len(i) + 1)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_holds_sequences_back_to_back() {
        let mut store = TokenStore::default();
        store.push(&[5, 6, 7]);
        store.push(&[]);
        store.push(&[9]);
        assert_eq!(store.len(), 3);
        assert_eq!(store.get(0), &[5, 6, 7]);
        assert_eq!(store.get(1), &[] as &[u32]);
        assert_eq!(store.get(2), &[9]);
        assert_eq!(store.offsets(), &[0, 3, 3, 4]);
        let rebuilt = TokenStore::from_parts(store.tokens().to_vec(), store.offsets().to_vec())
            .expect("consistent");
        assert_eq!(rebuilt, store);
        assert!(TokenStore::from_parts(vec![1, 2], vec![0, 3]).is_err());
        assert!(TokenStore::from_parts(vec![1, 2], vec![0, 2, 1, 2]).is_err());
    }
}
