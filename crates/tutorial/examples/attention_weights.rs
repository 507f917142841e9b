//! What the attention weights are: self-attention over 3 positions with Q = K, the weight
//! matrix, position 0's distribution, and the zeros a padding mask and a look-ahead mask leave.
//!
//! `cargo run -p rosetta-tutorial --example attention_weights`

use rosetta_tutorial::attention_weights::attention_weights_demo;

fn print_matrix(title: &str, rows: &[Vec<f32>]) {
    println!("{title}");
    for row in rows {
        let cells: Vec<String> = row.iter().map(|w| format!("{w:.3}")).collect();
        println!("  [{}]", cells.join(", "));
    }
}

fn main() {
    let demo = attention_weights_demo(64, 3, 1, 0);
    println!("d_k = {}, Q = K (self-attention), no dropout", demo.d_k);
    println!(
        "attention weights shape: {:?} (batch = 1, heads = 1, 3 positions x 3 positions)",
        demo.weights_shape
    );
    println!("attended values shape:   {:?}", demo.context_shape);
    print_matrix(
        "weights (row i = position i's distribution over all positions):",
        &demo.weights,
    );
    if let Some(row) = demo.weights.first() {
        let cells: Vec<String> = row.iter().map(|w| format!("{w:.3}")).collect();
        println!("position 0's distribution: [{}]", cells.join(", "));
    }
    println!(
        "(with Q = K the diagonal score q·q/sqrt(d_k) ≈ sqrt(64) = 8 dwarfs the others, so each position attends to itself)"
    );
    let padded: Vec<usize> = (0..demo.padding.len())
        .filter(|&j| demo.padding[j])
        .collect();
    print_matrix(
        &format!("with a padding mask (key positions {padded:?} are padding: their column is 0):"),
        &demo.padded_weights,
    );
    print_matrix(
        "with a look-ahead mask (position i sees only positions <= i: zeros above the diagonal):",
        &demo.look_ahead_weights,
    );
}
