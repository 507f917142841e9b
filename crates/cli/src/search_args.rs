//! Decoding options shared by `rosetta translate`, `rosetta eval` and `rosetta serve`, so that a
//! score from `eval --checkpoint`, a file from `translate` and a server's answer come from the
//! same search.

use rosetta_infer::TranslateOptions;

/// Beam size, length penalty and output-length limit of a decoding run.
#[derive(clap::Args, Debug, Clone)]
pub struct SearchArgs {
    /// Beam size; 1 is greedy search. The default search is beam search with 5 beams.
    #[arg(long, default_value_t = 5)]
    pub beam: usize,
    /// GNMT length-penalty exponent alpha (beam search): larger favours longer outputs.
    #[arg(long, default_value_t = 0.6)]
    pub alpha: f64,
    /// Maximum output length is `a * source_len + b` subwords: a (0 to 1000).
    #[arg(long, default_value_t = 1.5)]
    pub max_len_a: f64,
    /// Maximum output length is `a * source_len + b` subwords: b.
    #[arg(long, default_value_t = 10)]
    pub max_len_b: usize,
}

impl SearchArgs {
    /// The translation options these arguments describe, keeping `nbest` hypotheses and
    /// decoding `batch_size` sentences at a time; checked (an impossible value is refused
    /// naming its option).
    pub fn options(&self, nbest: usize, batch_size: usize) -> anyhow::Result<TranslateOptions> {
        let options = TranslateOptions {
            beam: self.beam,
            alpha: self.alpha,
            max_len_a: self.max_len_a,
            max_len_b: self.max_len_b,
            nbest,
            batch_size,
        };
        options.validate()?;
        Ok(options)
    }
}
