//! The padding mask and the look-ahead mask of a small batch, printed as 0/1 matrices
//! (1 = blocked, as in the tutorial).
//!
//! `cargo run -p rosetta-tutorial --example masks`

use rosetta_tutorial::masks::{format_mask, masks_demo};

fn main() {
    // Three sequences of length 5, padded with id 0.
    let demo = masks_demo(&[[7, 6, 0, 0, 0], [1, 2, 3, 0, 0], [4, 5, 9, 8, 2]], 0);
    println!("tokens (0 = padding): {:?}", demo.tokens);
    println!("padding mask [batch, len] (1 = padding key, blocked for every query):");
    println!("{}", format_mask(&demo.padding));
    println!("look-ahead mask [len, len] (row = query, 1 = a later position, blocked):");
    println!("{}", format_mask(&demo.look_ahead));
    for (b, combined) in demo.combined.iter().enumerate() {
        println!("decoder self-attention mask of sequence {b} (look-ahead or padding):");
        println!("{}", format_mask(combined));
    }
}
