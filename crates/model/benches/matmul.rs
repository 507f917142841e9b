//! Matrix-product throughput of each CPU backend on the shapes of a training step
//! (d_model 256, d_ff 1024, vocabulary 8,000, 64 x 24 = 1,536 tokens): where a training step
//! spends most of its time. `scripts/bench_matmul_torch.py` measures PyTorch on the same shapes.
//!
//! `cargo bench -p rosetta-model --bench matmul --profile dev`

use std::time::Instant;

use rosetta_model::burn::tensor::{Distribution, Tensor};
use rosetta_model::device::cpu_devices;

/// `[m, k] x [k, n]`: projections, feed-forward in and out, output projection, its weight
/// gradient.
const SHAPES: [(usize, usize, usize); 4] = [
    (1536, 256, 1024),
    (1536, 1024, 256),
    (1536, 256, 8000),
    (256, 1536, 8000),
];
const REPEATS: usize = 10;

fn main() {
    let threads = rosetta_model::device::rayon_threads();
    println!("| backend | m x k x n | ms | GFLOP/s |  ({threads} threads)");
    println!("| --- | --- | --- | --- |");
    for (name, device) in cpu_devices() {
        device.seed(0);
        for (m, k, n) in SHAPES {
            let a = Tensor::<2>::random([m, k], Distribution::Default, &device);
            let b = Tensor::<2>::random([k, n], Distribution::Default, &device);
            // Reading one value back makes sure the product was computed.
            let run = || {
                a.clone()
                    .matmul(b.clone())
                    .slice([0..1, 0..1])
                    .into_scalar::<f32>()
            };
            run();
            let start = Instant::now();
            for _ in 0..REPEATS {
                run();
            }
            let seconds = start.elapsed().as_secs_f64() / REPEATS as f64;
            let gflops = 2.0 * (m * k * n) as f64 / seconds / 1e9;
            println!(
                "| {name} | {m} x {k} x {n} | {:.1} | {gflops:.1} |",
                seconds * 1e3
            );
        }
    }
}
