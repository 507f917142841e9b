//! `rosetta describe`: the architecture and parameter counts of a model configuration.

use std::path::PathBuf;

use anyhow::Result;
use rosetta_model::params;

use crate::output::outln;

/// Arguments of `rosetta describe`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Model configuration (TOML or JSON, the fields of `TransformerConfig`).
    #[arg(long)]
    model_config: PathBuf,
}

/// Prints one line per component with its closed-form parameter count.
pub fn run(args: &Args) -> Result<()> {
    let c = crate::model_config::read(&args.model_config)?;
    outln!(
        "Transformer: d_model {}, {} heads of {}, d_ff {}, {} encoder + {} decoder layers, {:?}-norm, {:?}",
        c.d_model,
        c.n_heads,
        c.d_k(),
        c.d_ff,
        c.n_encoder_layers,
        c.n_decoder_layers,
        c.norm_position,
        c.activation
    );
    let breakdown = params::breakdown(&c);
    for (name, count) in breakdown.rows() {
        outln!("  {name:<18} {count:>12}");
    }
    outln!("  {:<18} {:>12}", "total", breakdown.total());
    Ok(())
}
