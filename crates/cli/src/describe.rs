//! `rosetta describe`: the architecture and parameter counts of a model configuration.

use std::path::PathBuf;

use anyhow::Result;
use rosetta_model::params;

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
    let d = c.d_model;
    println!(
        "Transformer: d_model {d}, {} heads of {}, d_ff {}, {} encoder + {} decoder layers, {:?}-norm, {:?}",
        c.n_heads,
        c.d_k(),
        c.d_ff,
        c.n_encoder_layers,
        c.n_decoder_layers,
        c.norm_position,
        c.activation
    );
    let embeddings = c.source_vocab_size * d
        + if c.share_embeddings {
            0
        } else {
            c.target_vocab_size * d
        };
    let rows = [
        ("embeddings", embeddings),
        (
            "encoder layers",
            c.n_encoder_layers * params::encoder_layer(d, c.d_ff),
        ),
        (
            "decoder layers",
            c.n_decoder_layers * params::decoder_layer(d, c.d_ff),
        ),
        (
            "final norms",
            if c.has_final_norm() {
                2 * params::layer_norm(d)
            } else {
                0
            },
        ),
        (
            "output projection",
            if c.tie_output_projection {
                0
            } else {
                d * c.target_vocab_size + c.target_vocab_size
            },
        ),
    ];
    for (name, count) in rows {
        println!("  {name:<18} {count:>12}");
    }
    println!("  {:<18} {:>12}", "total", params::transformer(&c));
    Ok(())
}
