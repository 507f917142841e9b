//! int8 products on decoding's shapes, one thread: every integer kernel this CPU runs beside
//! flex's float32 product of the same shape (`burn_flex`'s matrix product on the calling thread
//! alone), in multiply-adds per second. Rows: 1 (greedy, batch 1), 5 (beam 5, batch 1), 64
//! (greedy, batch 64), 320 (beam 5, batch 64); inner × columns: d_model 256 with the fused
//! query/key/value (768), the feed-forward maps (1,024 either way) and the output projection
//! (8,000).
//!
//! `cargo bench -p rosetta-model --bench int8` (the release profile: in the dev profile
//! `rosetta-int8` keeps its debug assertions, and their checks on the kernels' loads held the
//! AVX2 kernel to 10–22 GMAC/s against 47–69 in release, on an AMD EPYC; flex's float32 product,
//! a dependency, runs without them in both)

use std::time::Instant;

use rosetta_model::burn::tensor::{Device, Distribution, Tensor};
use rosetta_model::int8::{Int8Matrix, Kernel, QuantizedRows};

const SHAPES: [(usize, usize); 4] = [(256, 768), (256, 1024), (1024, 256), (256, 8000)];
const ROWS: [usize; 4] = [1, 5, 64, 320];

/// Seconds per call of `f`, the median of enough calls to fill about 0.2 s.
fn seconds(mut f: impl FnMut()) -> f64 {
    f();
    let start = Instant::now();
    f();
    let once = start.elapsed().as_secs_f64().max(1e-7);
    let calls = ((0.2 / once) as usize).clamp(3, 2000);
    let mut times: Vec<f64> = (0..calls)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[calls / 2]
}

fn main() {
    let device = Device::flex();
    device.seed(0);
    let kernels: Vec<Kernel> = Kernel::ALL
        .into_iter()
        .filter(|kernel| kernel.is_available())
        .collect();
    print!("| rows x inner x columns | float32 (flex, 1 thread) |");
    for kernel in &kernels {
        print!(" int8 {kernel:?} |");
    }
    println!(" best int8 / float32 |");
    println!("|---|---:|{}---:|", "---:|".repeat(kernels.len()));
    for (inner, columns) in SHAPES {
        let weight =
            Tensor::<2>::random([inner, columns], Distribution::Normal(0.0, 0.05), &device);
        let values = weight.clone().into_data().convert::<f32>();
        let Ok(values) = values.as_slice::<f32>() else {
            eprintln!("the weight's values");
            std::process::exit(1);
        };
        let matrix = Int8Matrix::new(values, inner, columns, None);
        for rows in ROWS {
            let x = Tensor::<2>::random([rows, inner], Distribution::Normal(0.0, 1.0), &device);
            let x_data = x.clone().into_data().convert::<f32>();
            let Ok(x_values) = x_data.as_slice::<f32>() else {
                eprintln!("the input's values");
                std::process::exit(1);
            };
            let macs = (rows * inner * columns) as f64;
            let float = seconds(|| {
                let out =
                    burn_flex::ops::matmul::on_this_thread(|| x.clone().matmul(weight.clone()));
                std::hint::black_box(out.slice([0..1, 0..1]).into_scalar::<f32>());
            });
            print!(
                "| {rows} x {inner} x {columns} | {:.1} GMAC/s |",
                macs / float / 1e9
            );
            let mut best = f64::INFINITY;
            for &kernel in &kernels {
                let int8 = seconds(|| {
                    let quantized = QuantizedRows::with_kernel(kernel, x_values, rows, inner);
                    std::hint::black_box(matrix.product(kernel, &quantized, 0..matrix.panels()));
                });
                best = best.min(int8);
                print!(" {:.1} GMAC/s |", macs / int8 / 1e9);
            }
            println!(" {:.2}x |", float / best);
        }
    }
}
