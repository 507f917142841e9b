//! Decoding options shared by `rosetta translate`, `rosetta eval` and `rosetta serve`, so that a
//! score from `eval --checkpoint`, a file from `translate` and a server's answer come from the
//! same search.
//!
//! Every option is optional: what is not given comes from the model (an imported model decodes
//! as its `generation_config.json` says; a model Rosetta trained as
//! `rosetta_infer::TranslateOptions::default()` says, the one place the defaults are written).

use rosetta_infer::{BeamStop, LengthNorm, TranslateOptions};

/// How beam search scores and ends hypotheses: shared by [`SearchArgs`] and
/// `rosetta bench-decode` (which takes several beam sizes).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BeamRules {
    /// Length-penalty exponent alpha (beam search): larger favours longer outputs (default: the
    /// model's; 0.6 for a model Rosetta trained).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// The length penalty's form, len counting the EOS: gnmt (((5 + len) / 6)^alpha) or power
    /// (len^alpha: fairseq's lenpen, CTranslate2's and transformers' length_penalty) (default:
    /// the model's; gnmt for a model Rosetta trained).
    #[arg(long, value_name = "gnmt|power")]
    pub length_norm: Option<LengthNorm>,
    /// When beam search stops a sentence: bound (once no open beam can beat the best finished;
    /// exact), count (once `--beam` hypotheses have finished, as fairseq does, and CTranslate2
    /// with a length penalty other than 0) or transformers (Hugging Face generate's heuristic)
    /// (default: the model's; bound for a model Rosetta trained, transformers for an imported
    /// one).
    #[arg(long, value_name = "bound|count|transformers")]
    pub beam_stop: Option<BeamStop>,
}

impl BeamRules {
    /// `options` with the rules given on the command line.
    pub fn apply(&self, options: TranslateOptions) -> TranslateOptions {
        TranslateOptions {
            alpha: self.alpha.unwrap_or(options.alpha),
            length_norm: self.length_norm.unwrap_or(options.length_norm),
            beam_stop: self.beam_stop.unwrap_or(options.beam_stop),
            ..options
        }
    }
}

/// Beam size, length penalty and output-length limit of a decoding run.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SearchArgs {
    /// Beam size; 1 is greedy search (default: the model's; 5 for a model Rosetta trained).
    #[arg(long)]
    pub beam: Option<usize>,
    /// How beam search scores and ends hypotheses.
    #[command(flatten)]
    pub rules: BeamRules,
    /// Maximum output length is `a * source_len + b` subwords: a, 0 to 1000 (default: the
    /// model's; 1.5 for a model Rosetta trained, 0 for an imported one).
    #[arg(long)]
    pub max_len_a: Option<f64>,
    /// Maximum output length is `a * source_len + b` subwords: b (default: the model's; 10 for a
    /// model Rosetta trained, max_length − 2 for an imported one).
    #[arg(long)]
    pub max_len_b: Option<usize>,
}

impl SearchArgs {
    /// The translation options these arguments describe over the model's `defaults`, keeping
    /// `nbest` hypotheses and decoding `batch_size` sentences at a time; checked (an impossible
    /// value is refused naming its option).
    pub fn options(
        &self,
        defaults: &TranslateOptions,
        nbest: usize,
        batch_size: usize,
    ) -> anyhow::Result<TranslateOptions> {
        let options = self.rules.apply(TranslateOptions {
            beam: self.beam.unwrap_or(defaults.beam),
            max_len_a: self.max_len_a.unwrap_or(defaults.max_len_a),
            max_len_b: self.max_len_b.unwrap_or(defaults.max_len_b),
            nbest,
            batch_size,
            ..defaults.clone()
        });
        options.validate()?;
        Ok(options)
    }
}
