//! Why the scores are divided by sqrt(d_k): for d_k in 8, 32, 64, 128, 512, the mean largest
//! softmax weight and the mean norm of the gradient through the softmax, without and with the
//! scaling, as a table and a PNG plot (see `rosetta_tutorial::scaling` for what is measured).
//!
//! `cargo run -p rosetta-tutorial --example scaling [OUTPUT_DIR]`

use std::error::Error;

use rosetta_tutorial::{output_dir, scaling};

fn main() -> Result<(), Box<dyn Error>> {
    let dir = output_dir(std::env::args().nth(1))?;
    let (rows, keys) = (1000, 16);
    let table = scaling::scaling_table(&scaling::TUTORIAL_D_KS, rows, keys, 0);
    println!(
        "{rows} queries x {keys} keys, components ~ N(0, 1); score = q·k (variance d_k); gradient = ‖Jᵀg‖, g ~ N(0, I)"
    );
    println!("   d_k | max weight        | gradient norm");
    println!("       | unscaled   scaled | unscaled   scaled");
    for row in &table {
        println!(
            "  {:4} |   {:.4}   {:.4} |  {:.4}    {:.4}",
            row.d_k,
            row.max_weight_unscaled,
            row.max_weight_scaled,
            row.grad_norm_unscaled,
            row.grad_norm_scaled
        );
    }
    let path = dir.join("scaling.png");
    scaling::write_plot(&table, &path)?;
    println!("plot written to {}", path.display());
    Ok(())
}
