//! Sinusoidal positional encoding: the 20 x 64 matrix, the first 8 values at positions 0, 5
//! and 10, and a PNG heatmap of 100 positions x 128 dimensions.
//!
//! `cargo run -p rosetta-tutorial --example positional_encoding [OUTPUT_DIR]`

use std::error::Error;

use rosetta_tutorial::{format_shape, output_dir, positional};

fn main() -> Result<(), Box<dyn Error>> {
    let dir = output_dir(std::env::args().nth(1))?;
    let demo = positional::positional_demo(20, 64, &[0, 5, 10], 8);
    println!(
        "positional encoding shape: {} (20 positions x 64 dimensions)",
        format_shape(&demo.shape)
    );
    println!("dimensions 2i and 2i+1 share a frequency 1/10000^(2i/64), decreasing with i:");
    for (position, first) in &demo.shown {
        let cells: Vec<String> = first.iter().map(|v| format!("{v:6.3}")).collect();
        println!(
            "position {position:2}, first 8 dimensions: [{}]",
            cells.join(", ")
        );
    }
    let path = dir.join("positional_encoding.png");
    positional::write_heatmap(100, 128, &path)?;
    println!(
        "heatmap (100 positions x 128 dimensions) written to {}",
        path.display()
    );
    Ok(())
}
