//! Several training corpora as one, each offered to an epoch in proportion to its weight
//! (fairseq's and OpenNMT's multi-corpus training), with the epoch's members a pure function
//! of `(seed, epoch)` so that exact resume holds.

use crate::config::MAX_WEIGHT;
use crate::error::DataError;
use crate::plan::{EpochMembers, Member};
use crate::rng::SplitMix64;
use crate::store::PairSource;
use crate::stored::StoredCorpus;

/// Salt of the generator that picks the fractional part of a weight's copies.
const CHOOSER_SALT: u64 = 0x6A09_E667_F3BC_C908;

/// Training corpora with their weights. Pair indices run through the corpora in order.
///
/// A corpus of weight `w` offers each of its pairs `floor(w)` times per epoch, and once more
/// with probability `w - floor(w)`, drawn per `(seed, epoch, corpus, pair)`: on average `w`
/// times its size. Weight 1 offers every pair exactly once (the single-corpus case).
#[derive(Debug)]
pub struct CorpusMix {
    corpora: Vec<(StoredCorpus, f64)>,
    starts: Vec<usize>,
    total: usize,
}

impl CorpusMix {
    /// The mix of `corpora` (corpus, weight); weights must be finite and positive, and all
    /// pairs together fewer than 2^32.
    pub fn new(corpora: Vec<(StoredCorpus, f64)>) -> Result<Self, DataError> {
        let mut starts = Vec::with_capacity(corpora.len());
        let mut total = 0usize;
        for (i, (corpus, weight)) in corpora.iter().enumerate() {
            if !weight.is_finite() || *weight <= 0.0 || *weight > MAX_WEIGHT {
                return Err(DataError::InvalidSetting {
                    key: "data.train.weight",
                    reason: format!(
                        "training corpus {} ({}) has weight {weight}; weights must be above 0 and at most {MAX_WEIGHT}",
                        i + 1,
                        corpus.dir().display()
                    ),
                });
            }
            starts.push(total);
            total += corpus.len();
        }
        if total > u32::MAX as usize {
            return Err(DataError::InvalidSetting {
                key: "data.train",
                reason: format!("{total} training pairs; at most {} are supported", u32::MAX),
            });
        }
        Ok(Self {
            corpora,
            starts,
            total,
        })
    }

    /// The corpora and their weights.
    pub fn corpora(&self) -> impl Iterator<Item = (&StoredCorpus, f64)> {
        self.corpora.iter().map(|(c, w)| (c, *w))
    }

    /// Pairs of all corpora together.
    pub fn len(&self) -> usize {
        self.total
    }

    /// Whether there is no pair at all.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The corpus holding pair `index`, and the pair's index in it.
    fn locate(&self, index: usize) -> Result<(&StoredCorpus, usize), DataError> {
        if index >= self.total {
            return Err(DataError::IndexOutOfRange {
                index,
                len: self.total,
            });
        }
        let k = self.starts.partition_point(|&s| s <= index) - 1;
        Ok((&self.corpora[k].0, index - self.starts[k]))
    }
}

impl PairSource for CorpusMix {
    fn pair_count(&self) -> usize {
        self.total
    }

    fn read_pair(
        &self,
        index: usize,
        source: &mut Vec<u32>,
        target: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        let (corpus, i) = self.locate(index)?;
        corpus.read_pair(i, source, target)
    }

    fn for_each_framed_len(
        &self,
        f: &mut dyn FnMut(usize, usize, usize) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        for ((corpus, _), &start) in self.corpora.iter().zip(&self.starts) {
            corpus.for_each_framed_len(&mut |i, s, t| f(start + i, s, t))?;
        }
        Ok(())
    }
}

impl EpochMembers for CorpusMix {
    fn pairs(&self) -> usize {
        self.total
    }

    fn for_each_member(
        &self,
        seed: u64,
        epoch: u64,
        f: &mut dyn FnMut(Member) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        for (k, ((corpus, weight), &start)) in self.corpora.iter().zip(&self.starts).enumerate() {
            let whole = weight.floor() as u32;
            let fraction = weight - weight.floor();
            // P(extra copy) = fraction: a draw below fraction * 2^64.
            let threshold = (fraction * 2f64.powi(64)) as u64;
            let chooser = SplitMix64::derive(seed ^ CHOOSER_SALT, epoch ^ ((k as u64) << 40));
            corpus.for_each_framed_len(&mut |i, source_len, target_len| {
                let extra = u32::from(fraction > 0.0 && chooser.peek(i as u64) < threshold);
                for copy in 0..whole + extra {
                    f(Member {
                        index: (start + i) as u32,
                        copy,
                        source_len,
                        target_len,
                    })?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::ReadStats;
    use crate::store::FilterStats;
    use crate::stored::StoredCorpusWriter;
    use std::path::Path;

    fn corpus(dir: &Path, name: &str, pairs: u32) -> StoredCorpus {
        let mut writer = StoredCorpusWriter::create(&dir.join(name), name).expect("create");
        for i in 0..pairs {
            writer.push(&[i], &[i, i]).expect("push");
        }
        let n = pairs as usize;
        let (read, filter) = (ReadStats::all_kept(n), FilterStats::all_kept(n));
        writer.finish(read, filter).expect("finish")
    }

    fn copies(mix: &CorpusMix, seed: u64, epoch: u64) -> Vec<u32> {
        let mut counts = vec![0u32; mix.len()];
        mix.for_each_member(seed, epoch, &mut |m| {
            assert_eq!(m.copy, counts[m.index as usize], "copies in order");
            counts[m.index as usize] += 1;
            Ok(())
        })
        .expect("members");
        counts
    }

    #[test]
    fn weights_decide_how_often_pairs_are_offered() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mix = CorpusMix::new(vec![
            (corpus(dir.path(), "a", 1000), 2.0),
            (corpus(dir.path(), "b", 2000), 0.3),
            (corpus(dir.path(), "c", 500), 1.0),
        ])
        .expect("mix");
        assert_eq!(mix.len(), 3500);
        let epoch0 = copies(&mix, 5, 0);
        assert!(epoch0[..1000].iter().all(|&c| c == 2), "weight 2: twice");
        assert!(epoch0[3000..].iter().all(|&c| c == 1), "weight 1: once");
        let chosen: u32 = epoch0[1000..3000].iter().sum();
        // Binomial(2000, 0.3): mean 600, standard deviation 20.5.
        assert!(
            (520..=680).contains(&chosen),
            "{chosen} of 2000 at weight 0.3"
        );
        assert!(epoch0[1000..3000].iter().all(|&c| c <= 1));
        // A pure function of (seed, epoch): the same again, another draw next epoch.
        assert_eq!(copies(&mix, 5, 0), epoch0);
        assert_ne!(copies(&mix, 5, 1)[1000..3000], epoch0[1000..3000]);
        // Pair 1000 is the first of corpus b.
        let (mut s, mut t) = (Vec::new(), Vec::new());
        mix.read_pair(1000, &mut s, &mut t).expect("read");
        assert_eq!((s, t), (vec![0], vec![0, 0]));
        assert!(
            mix.read_pair(3500, &mut Vec::new(), &mut Vec::new())
                .is_err()
        );
    }

    #[test]
    fn weights_out_of_range_are_refused_naming_the_corpus() {
        let dir = tempfile::tempdir().expect("tempdir");
        for weight in [0.0, -1.0, f64::NAN, 1e6] {
            let err =
                CorpusMix::new(vec![(corpus(dir.path(), "a", 3), weight)]).expect_err("bad weight");
            assert!(err.to_string().contains("training corpus 1"), "{err}");
        }
    }
}
