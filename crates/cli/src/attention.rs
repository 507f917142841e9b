//! `rosetta attention`: a heatmap of the cross-attention of one translated sentence.

use std::path::PathBuf;

use anyhow::{Context, Result};
use rosetta_infer::Translator;
use rosetta_model::parse_device;
use rosetta_tutorial::plot::attention_png;

use crate::output::outln;

/// Arguments of `rosetta attention`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A checkpoint directory, or a run directory (its best checkpoint, else its newest).
    #[arg(long)]
    checkpoint: PathBuf,
    /// The sentence to translate (greedy) and plot.
    #[arg(long)]
    text: String,
    /// Where to write the PNG.
    #[arg(long)]
    out: PathBuf,
    /// Decoder layer, from 0 (default: the last).
    #[arg(long)]
    layer: Option<usize>,
    /// Attention head, from 0 (default: the mean over heads).
    #[arg(long)]
    head: Option<usize>,
    /// Device to run on.
    #[arg(long, default_value = "flex")]
    device: String,
}

/// Translates, takes the chosen layer and head, draws the map.
pub fn run(args: &Args) -> Result<()> {
    let device = parse_device(&args.device)?;
    let translator = Translator::load(&args.checkpoint, &device)
        .with_context(|| format!("cannot load {}", args.checkpoint.display()))?;
    crate::translate::bilingual_only(&translator, "attention")?;
    let map = translator.attention(&args.text, args.layer, args.head)?;
    let layers = translator.model.decoder.layers.len();
    let which = format!(
        "layer {}, {}",
        args.layer.unwrap_or(layers.saturating_sub(1)),
        args.head
            .map(|h| format!("head {h}"))
            .unwrap_or_else(|| "mean of heads".into())
    );
    attention_png(
        &args.out,
        &format!("Cross-attention ({which})"),
        &map.weights,
        &map.output_labels,
        &map.source_labels,
    )?;
    outln!("{}", map.translation);
    outln!("attention map ({which}) written to {}", args.out.display());
    Ok(())
}
