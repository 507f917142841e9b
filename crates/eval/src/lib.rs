//! Translation quality metrics (`rosetta-eval`), identical to sacreBLEU's defaults: corpus [BLEU](bleu) (13a
//! tokenization, `exp` smoothing) and [chrF2](chrf), with sacreBLEU's signatures.
//!
//! Checked against sacreBLEU [`SACREBLEU_COMPATIBLE_VERSION`] on the fixtures written by
//! `scripts/make_bleu_fixture.py` (`crates/eval/tests/bleu_parity.rs`). Both metrics expose
//! their sufficient statistics ([`BleuStats`], [`ChrfStats`]) so that scores can be
//! accumulated over batches or shards and computed once at the end.
//!
//! References come as *streams*: `refs[k][i]` is the `k`-th reference of hypothesis `i`, as in
//! `sacrebleu.corpus_bleu(hyps, [refs_1, refs_2])`.
//!
//! ```
//! use rosetta_eval::{corpus_bleu, corpus_chrf};
//!
//! let hyps = ["the cat sat on the mat", "a dog runs in the park"];
//! let refs = [["the cat sat on the mat", "a dog ran in the park"]];
//! let bleu = corpus_bleu(&hyps, &refs)?;
//! assert!(bleu.score > 60.0 && bleu.score < 100.0, "{}", bleu.score);
//! let perfect = corpus_bleu(&refs[0], &refs)?;
//! assert!((perfect.score - 100.0).abs() < 1e-9);
//! assert!(corpus_chrf(&hyps, &refs)?.score > 80.0);
//! # Ok::<(), rosetta_eval::MetricError>(())
//! ```

pub mod bleu;
pub mod chrf;
mod read;
pub mod text;
pub mod tokenize_13a;

pub use bleu::{
    BLEU_MAX_ORDER, BleuScore, BleuStats, bleu_signature, corpus_bleu, corpus_bleu_stats,
};
pub use chrf::{Chrf, ChrfConfig, ChrfScore, ChrfStats, chrf_signature, corpus_chrf};
pub use read::read_segments;
pub use tokenize_13a::tokenize_13a;

use std::path::PathBuf;

/// The sacreBLEU release whose scores and signatures these metrics reproduce (the version in
/// the signatures; the scores were checked against it, not produced by it).
pub const SACREBLEU_COMPATIBLE_VERSION: &str = "2.6.0";

/// What can go wrong when scoring.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MetricError {
    /// No reference stream was given.
    #[error("no reference stream given")]
    NoReferences,
    /// A reference stream does not have one line per hypothesis.
    #[error("reference stream {stream} has {refs} segments but there are {hyps} hypotheses")]
    StreamLength {
        /// Index of the stream (0-based).
        stream: usize,
        /// Its number of segments.
        refs: usize,
        /// The number of hypotheses.
        hyps: usize,
    },
    /// A segment file could not be read (or is not UTF-8).
    #[error("cannot read {}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error, as text.
        message: String,
    },
}

/// Checks that there is at least one reference stream and each has one segment per hypothesis.
fn check_streams<R: AsRef<[S]>, S>(hyps: usize, refs: &[R]) -> Result<(), MetricError> {
    if refs.is_empty() {
        return Err(MetricError::NoReferences);
    }
    for (stream, r) in refs.iter().enumerate() {
        let len = r.as_ref().len();
        if len != hyps {
            return Err(MetricError::StreamLength {
                stream,
                refs: len,
                hyps,
            });
        }
    }
    Ok(())
}
