//! `rosetta eval`: scores translations with BLEU and chrF, sacreBLEU style.
//!
//! Today this is the scorer mode: `--hyp FILE --ref FILE [--ref FILE ...]` scores an existing
//! hypothesis file (one segment per line) against one or more reference files. The mode that
//! first translates a source file with a trained model (`--checkpoint`, `--src`) will be added
//! beside it; `--hyp` keeps meaning "score this file".

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rosetta_train::metrics::{self, SACREBLEU_COMPATIBLE_VERSION};

/// Arguments of `rosetta eval`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Hypothesis file (system output), one segment per line.
    #[arg(long)]
    hyp: PathBuf,
    /// Reference file, one segment per line; repeat for several references.
    #[arg(long = "ref", required = true)]
    refs: Vec<PathBuf>,
}

/// Reads the files, checks that they align, and prints the BLEU and chrF lines.
pub fn run(args: &Args) -> Result<()> {
    let hyps = metrics::read_segments(&args.hyp)
        .with_context(|| format!("reading hypotheses {}", args.hyp.display()))?;
    let mut refs = Vec::with_capacity(args.refs.len());
    for path in &args.refs {
        let stream = metrics::read_segments(path)
            .with_context(|| format!("reading references {}", path.display()))?;
        if stream.len() != hyps.len() {
            bail!(
                "{} has {} lines but {} has {} lines: hypotheses and references must align",
                args.hyp.display(),
                hyps.len(),
                path.display(),
                stream.len()
            );
        }
        refs.push(stream);
    }
    let bleu = metrics::corpus_bleu(&hyps, &refs)?;
    let chrf = metrics::corpus_chrf(&hyps, &refs)?;
    println!("{}", bleu.line(refs.len()));
    println!("{}", chrf.line(refs.len()));
    println!(
        "(rosetta {}: {} segments; scores and signatures compatible with sacreBLEU {})",
        env!("CARGO_PKG_VERSION"),
        hyps.len(),
        SACREBLEU_COMPATIBLE_VERSION
    );
    Ok(())
}
