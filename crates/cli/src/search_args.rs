//! Decoding options shared by `rosetta translate` and `rosetta eval`, so that a score from
//! `eval --checkpoint` and a file from `translate` come from the same search.

use rosetta_model::search::SearchConfig;
use rosetta_train::Translator;

/// Beam size, length penalty, output-length limit and batch size of a decoding run.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// Beam size; 1 is greedy search.
    #[arg(long, default_value_t = 5)]
    pub beam: usize,
    /// GNMT length-penalty exponent alpha (beam search): larger favours longer outputs.
    #[arg(long, default_value_t = 0.6)]
    pub alpha: f64,
    /// Maximum output length is `a * source_len + b` subwords: a.
    #[arg(long, default_value_t = 1.5)]
    pub max_len_a: f64,
    /// Maximum output length is `a * source_len + b` subwords: b.
    #[arg(long, default_value_t = 10)]
    pub max_len_b: usize,
    /// Sentences per batch (inputs are sorted by length within each batch of work).
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
}

impl SearchArgs {
    /// The search configuration these options describe, keeping `n_best` hypotheses.
    pub fn search_config(&self, translator: &Translator, n_best: usize) -> SearchConfig {
        translator
            .search_config(self.beam, n_best)
            .with_length_penalty(self.alpha)
            .with_max_len_a(self.max_len_a)
            .with_max_len_b(self.max_len_b)
    }
}
