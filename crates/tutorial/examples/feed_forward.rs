//! The position-wise feed-forward network: d_model 512, d_ff 2048 (4x expansion), shapes and
//! parameter count.
//!
//! `cargo run -p rosetta-tutorial --example feed_forward`

use rosetta_tutorial::feed_forward::feed_forward_demo;
use rosetta_tutorial::format_shape;

fn main() {
    let demo = feed_forward_demo(512, 2048, 2, 10, 0);
    println!(
        "d_model = {}, d_ff = {}, expansion = {}x",
        demo.d_model, demo.d_ff, demo.expansion
    );
    println!(
        "input {} -> hidden {} -> output {}",
        format_shape(&demo.input_shape),
        format_shape(&demo.hidden_shape),
        format_shape(&demo.output_shape)
    );
    println!(
        "parameters: {} (closed form 2·d·d_ff + d_ff + d = {})",
        demo.params, demo.closed_form
    );
}
