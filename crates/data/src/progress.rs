//! Progress of long data preparation, reported to whoever draws it (the command line draws
//! bars; a library user may ignore it with [`Silent`]).

/// Observes the stages of data preparation: tokenizer training and encoding, one split at a
/// time. Called from the preparing thread, at most every few thousand pairs.
pub trait Progress: Sync {
    /// A stage begins: what it does (`"encoding train"`) and the bytes of input it will read
    /// (the files' sizes on disk, compressed size for `.gz`).
    fn begin(&self, stage: &str, total_bytes: u64);

    /// `bytes` of the stage's input read so far, `pairs` pairs done.
    fn update(&self, bytes: u64, pairs: u64);

    /// The stage is over.
    fn end(&self);
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn begin(&self, _stage: &str, _total_bytes: u64) {}
    fn update(&self, _bytes: u64, _pairs: u64) {}
    fn end(&self) {}
}
