//! Shapes through attention (the third tutorial's table), an encoder layer, a decoder layer and
//! the full model, for batch 2, length 4, d_model 512.
//!
//! `cargo run -p rosetta-tutorial --example shapes`

use std::error::Error;

use rosetta_model::TransformerConfig;
use rosetta_tutorial::format_shape;
use rosetta_tutorial::shapes::{ShapeRow, attention_shape_table, model_shape_table};

fn print_table(rows: &[ShapeRow]) {
    let width = rows
        .iter()
        .map(|r| r.stage.chars().count())
        .max()
        .unwrap_or(0);
    for r in rows {
        let pad = width - r.stage.chars().count();
        println!(
            "  {}{} | {:14} | {}",
            r.stage,
            " ".repeat(pad),
            format_shape(&r.shape),
            r.note
        );
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let (batch, len, d_model) = (2, 4, 512);
    println!(
        "scaled dot-product attention, batch {batch}, length {len}, d_model {d_model} (d_k = {d_model}):"
    );
    print_table(&attention_shape_table(batch, len, d_model, 0));
    // The second tutorial's first test: batch 2, length 3, depth 4.
    println!("\nscaled dot-product attention, batch 2, length 3, depth 4:");
    print_table(&attention_shape_table(2, 3, 4, 0));
    // The paper's base model; a small vocabulary keeps it quick, shapes do not depend on it.
    let config = TransformerConfig::new(1000, 1200);
    println!(
        "\nthe full model (d_model {}, {} heads, d_ff {}, {}+{} layers, vocabularies {}/{}):",
        config.d_model,
        config.n_heads,
        config.d_ff,
        config.n_encoder_layers,
        config.n_decoder_layers,
        config.source_vocab_size,
        config.target_vocab_size
    );
    print_table(&model_shape_table(&config, batch, len, 0)?);
    Ok(())
}
