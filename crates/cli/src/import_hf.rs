//! `rosetta import-hf`: a Hugging Face MarianMT directory (an OPUS-MT model as `save_pretrained`
//! writes it) into a Rosetta run directory.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rosetta_convert::marian::{ImportOptions, import_marian};

use crate::output::outln;

/// Arguments of `rosetta import-hf`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The MarianMT directory: `config.json`, `model.safetensors` or `pytorch_model.bin`,
    /// `source.spm`, `target.spm`, `vocab.json` (and `generation_config.json`,
    /// `target_vocab.json`, `tokenizer_config.json` where present).
    dir: PathBuf,
    /// New run directory to write (refused if it holds files).
    #[arg(long)]
    output: PathBuf,
    /// The source language's code, recorded in the run (default: from an `opus-mt-SRC-TGT`
    /// directory name).
    #[arg(long)]
    source_lang: Option<String>,
    /// The target language's code, recorded in the run.
    #[arg(long)]
    target_lang: Option<String>,
}

/// Imports and reports what was read.
pub fn run(args: &Args) -> Result<()> {
    let options = ImportOptions {
        source_lang: args.source_lang.clone(),
        target_lang: args.target_lang.clone(),
    };
    let report = import_marian(&args.dir, &args.output, &options)
        .with_context(|| format!("cannot import {}", args.dir.display()))?;
    let m = &report.model;
    outln!(
        "imported {} ({}) into {}",
        args.dir.display(),
        report.weights.display(),
        report.run_dir.display()
    );
    outln!(
        "  model: d_model {}, {} + {} layers, {} heads, d_ff {}, {:?}, vocabularies {} / {}, {} parameters",
        m.d_model,
        m.n_encoder_layers,
        m.n_decoder_layers,
        m.n_heads,
        m.d_ff,
        m.activation,
        m.source_vocab_size,
        m.target_vocab_size,
        report.parameters
    );
    let d = &report.decoding;
    outln!(
        "  decoding by default: beam {}, length penalty {} ({}), stop rule {}, at most {} tokens",
        d.beam,
        d.alpha,
        serde_json::to_value(d.length_norm)?.as_str().unwrap_or("?"),
        serde_json::to_value(d.beam_stop)?.as_str().unwrap_or("?"),
        d.max_len_b
    );
    match &report.languages {
        (Some(source), Some(target)) => outln!("  languages: {source} -> {target}"),
        _ => outln!("  languages: unknown (give --source-lang and --target-lang to record them)"),
    }
    for note in &report.notes {
        outln!("  note: {note}");
    }
    outln!("  checkpoint: {}", report.checkpoint.display());
    Ok(())
}
