//! Decoding options shared by `rosetta translate`, `rosetta eval` and `rosetta serve`, so that a
//! score from `eval --checkpoint`, a file from `translate` and a server's answer come from the
//! same search.

use rosetta_infer::{BeamStop, LengthNorm, TranslateOptions};

/// How beam search scores and ends hypotheses: shared by [`SearchArgs`] and
/// `rosetta bench-decode` (which takes several beam sizes).
#[derive(clap::Args, Debug, Clone)]
pub struct BeamRules {
    /// Length-penalty exponent alpha (beam search): larger favours longer outputs.
    #[arg(long, default_value_t = 0.6)]
    pub alpha: f64,
    /// The length penalty's form, len counting the EOS: gnmt (((5 + len) / 6)^alpha) or power
    /// (len^alpha: fairseq's lenpen, CTranslate2's length_penalty).
    #[arg(long, default_value = "gnmt", value_name = "gnmt|power")]
    pub length_norm: LengthNorm,
    /// When beam search stops a sentence: bound (once no open beam can beat the best
    /// finished; exact) or count (once `--beam` hypotheses have finished, as fairseq does, and
    /// CTranslate2 with a length penalty other than 0).
    #[arg(long, default_value = "bound", value_name = "bound|count")]
    pub beam_stop: BeamStop,
}

impl BeamRules {
    /// `options` with these rules.
    pub fn apply(&self, options: TranslateOptions) -> TranslateOptions {
        TranslateOptions {
            alpha: self.alpha,
            length_norm: self.length_norm,
            beam_stop: self.beam_stop,
            ..options
        }
    }
}

/// Beam size, length penalty and output-length limit of a decoding run.
#[derive(clap::Args, Debug, Clone)]
pub struct SearchArgs {
    /// Beam size; 1 is greedy search. The default search is beam search with 5 beams.
    #[arg(long, default_value_t = 5)]
    pub beam: usize,
    /// How beam search scores and ends hypotheses.
    #[command(flatten)]
    pub rules: BeamRules,
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
        let options = self.rules.apply(TranslateOptions {
            beam: self.beam,
            max_len_a: self.max_len_a,
            max_len_b: self.max_len_b,
            nbest,
            batch_size,
            ..TranslateOptions::default()
        });
        options.validate()?;
        Ok(options)
    }
}
