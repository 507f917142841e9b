//! `rosetta eval`: scores translations with BLEU and chrF, sacreBLEU style.
//!
//! Two modes: `--hyp FILE --ref FILE [--ref FILE ...]` scores an existing hypothesis file (one
//! segment per line) against one or more reference files; `--checkpoint PATH --src FILE --ref
//! FILE` first translates the source file with a trained model (the search options of
//! `rosetta translate`: `--beam`, `--alpha`, `--max-len-a`, `--max-len-b`), then scores.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rosetta_eval::{SACREBLEU_COMPATIBLE_VERSION, corpus_bleu, corpus_chrf, read_segments};

use crate::search_args::SearchArgs;

use crate::output::outln;

/// Arguments of `rosetta eval`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Hypothesis file (system output), one segment per line: score it.
    #[arg(long, conflicts_with_all = ["checkpoint", "src"], required_unless_present = "checkpoint")]
    hyp: Option<PathBuf>,
    /// Translate `--src` with this checkpoint (or run directory, or bundle), then score. Repeat
    /// for an ensemble (log-probabilities averaged at each step).
    #[arg(long, requires = "src")]
    checkpoint: Vec<PathBuf>,
    /// Source file to translate (with `--checkpoint`).
    #[arg(long, requires = "checkpoint")]
    src: Option<PathBuf>,
    /// Also write the translations here (with `--checkpoint`).
    #[arg(long, requires = "checkpoint")]
    output: Option<PathBuf>,
    /// The language to translate into (with `--checkpoint`): required by a multilingual model,
    /// which refuses a language it was not trained for, naming those it was.
    #[arg(long, requires = "checkpoint")]
    target_lang: Option<String>,
    // Search options for translating, as `rosetta translate` has them.
    #[command(flatten)]
    search: SearchArgs,
    /// Sentences per batch (inputs are sorted by length within each batch of work).
    #[arg(long, default_value_t = 64)]
    batch_size: usize,
    /// Device for translating.
    #[arg(long, default_value = "flex")]
    device: String,
    #[command(flatten)]
    quantize: crate::ensemble::QuantizeArgs,
    /// Reference file, one segment per line; repeat for several references.
    #[arg(long = "ref", required = true)]
    refs: Vec<PathBuf>,
}

/// Reads the files, checks that they align, and prints the BLEU and chrF lines.
pub fn run(args: &Args) -> Result<()> {
    let checkpoint = (!args.checkpoint.is_empty()).then_some(args.checkpoint.as_slice());
    let (hyps, hyp_name) = match (&args.hyp, checkpoint, &args.src) {
        (Some(path), _, _) => (
            read_segments(path)
                .with_context(|| format!("reading hypotheses {}", path.display()))?,
            path.display().to_string(),
        ),
        (None, Some(checkpoint), Some(src)) => (
            translate(args, checkpoint, src)?,
            format!("translations of {}", src.display()),
        ),
        _ => bail!("give --hyp FILE, or --checkpoint PATH with --src FILE"),
    };
    let mut refs = Vec::with_capacity(args.refs.len());
    for path in &args.refs {
        let stream = read_segments(path)
            .with_context(|| format!("reading references {}", path.display()))?;
        if stream.len() != hyps.len() {
            bail!(
                "{} has {} lines but {} has {} lines: hypotheses and references must align",
                hyp_name,
                hyps.len(),
                path.display(),
                stream.len()
            );
        }
        refs.push(stream);
    }
    let bleu = corpus_bleu(&hyps, &refs)?;
    let chrf = corpus_chrf(&hyps, &refs)?;
    outln!("{}", bleu.line(refs.len()));
    outln!("{}", chrf.line(refs.len()));
    outln!(
        "(rosetta {}: {} segments; scores and signatures compatible with sacreBLEU {})",
        env!("CARGO_PKG_VERSION"),
        hyps.len(),
        SACREBLEU_COMPATIBLE_VERSION
    );
    Ok(())
}

/// Translates every line of `src` with the checkpoint(s) (writing `--output` if asked).
fn translate(args: &Args, checkpoints: &[PathBuf], src: &std::path::Path) -> Result<Vec<String>> {
    args.search
        .options(&Default::default(), 1, args.batch_size)?;
    let device = rosetta_model::parse_device(&args.device)?;
    let translator = crate::ensemble::load(checkpoints, &device, args.quantize.quantize)?;
    let target = args.target_lang.as_deref();
    translator.target_prefix(target)?;
    let options = args
        .search
        .options(&translator.decoding, 1, args.batch_size)?;
    let lines = read_segments(src).with_context(|| format!("reading source {}", src.display()))?;
    let translations = translator.translate_lines_into(&lines, &options, target)?;
    let hyps: Vec<String> = translations.into_iter().map(|t| t.text).collect();
    if let Some(path) = &args.output {
        let mut text = hyps.join("\n");
        text.push('\n');
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(hyps)
}
