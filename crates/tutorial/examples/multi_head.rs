//! Multi-head attention: shapes, and the parameter count, the same for one head or eight.
//!
//! `cargo run -p rosetta-tutorial --example multi_head`

use rosetta_tutorial::format_shape;
use rosetta_tutorial::multi_head::multi_head_demo;

fn main() {
    // d_model 512 with 1 and 8 heads (first tutorial); d_model 128 with 8 heads on a
    // (2, 5, 128) input (second tutorial).
    let rows = multi_head_demo(&[(512, 1), (512, 8), (128, 8)], 2, 5, 0);
    println!(
        "d_model | heads | d_k | parameters | 4(d²+d)   | input         | output        | weights"
    );
    for r in &rows {
        println!(
            "{:7} | {:5} | {:3} | {:10} | {:9} | {:13} | {:13} | {}",
            r.d_model,
            r.n_heads,
            r.d_k,
            r.params,
            r.closed_form,
            format_shape(&r.input_shape),
            format_shape(&r.output_shape),
            format_shape(&r.weights_shape),
        );
    }
    let d = 512;
    println!(
        "at d_model {d}: W_q, W_k, W_v, W_o, each {d}x{d} + {d} bias = 4 x {} = {}, whatever the number of heads",
        d * d + d,
        4 * (d * d + d)
    );
    println!("(the heads split the projections into d_k-wide slices; they add no parameters)");
}
