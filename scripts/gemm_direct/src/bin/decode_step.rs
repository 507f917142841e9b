//! One decoding step's matrix products at greedy batch 1 (one row), as the random-weight anchor
//! has them (d_model 256, d_ff 1,024, 3 decoder layers, an untied 8,000-word output projection:
//! 19 MB of weights), each product's columns split in two halves on two spinning threads, as
//! Rosetta splits them. Three ways to read the weights, milliseconds per step (median of ROUNDS,
//! default 7, of STEPS steps each, default 500):
//!
//! - `gemm`: `gemm::gemm` as burn-flex calls it, its matrix-vector kernel (one row of the weight
//!   read at a time, every output loaded and stored once per row of the weight);
//! - `eight-rows`: the weight row-major, eight of its rows read at a time (the one-row kernel of
//!   `crates/model/src/row_product.rs`, restated here);
//! - `panels`: the weight copied once into panels of 16 columns (`[columns / 16][inner][16]`),
//!   four panels at a time, each output's sum held in a register: the layout a packed float32
//!   form of the decoder's weights would have.
//!
//! All three sum each output in the same order (a product, then one fused multiply-add per row
//! of the weight), which the program checks (the same bits) before timing.
//!
//!   cargo run --release --manifest-path scripts/gemm_direct/Cargo.toml --bin decode_step

use std::arch::x86_64::{
    _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_mul_ps, _mm256_set1_ps, _mm256_setzero_ps,
    _mm256_storeu_ps,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// `(inner, columns)` of one step's products, in order.
fn shapes() -> Vec<(usize, usize)> {
    let mut shapes = Vec::new();
    for _ in 0..3 {
        // Self-attention's query, key and value; its output; cross-attention's query and
        // output; the feed-forward network's two maps.
        shapes.extend([
            (256, 768),
            (256, 256),
            (256, 256),
            (256, 256),
            (256, 1024),
            (1024, 256),
        ]);
    }
    shapes.push((256, 8000));
    shapes
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// `gemm`'s product of one row `x` by `width` columns of `weight` (rows `stride` apart) into `y`.
fn gemm_row(
    x: &[f32],
    weight: *const f32,
    inner: usize,
    width: usize,
    stride: usize,
    y: &mut [f32],
) {
    // SAFETY: `weight` holds `inner` rows of at least `width` values `stride` apart; `y` holds
    // `width` values.
    unsafe {
        gemm::gemm(
            1,
            width,
            inner,
            y.as_mut_ptr(),
            1,
            width as isize,
            false,
            x.as_ptr(),
            1,
            inner as isize,
            weight,
            1,
            stride as isize,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// Eight rows of the weight at a time (`width` a multiple of 8).
///
/// # Safety
/// AVX2 and FMA; `weight` holds `inner` rows of `width` values `stride` apart; `y` `width`.
#[target_feature(enable = "avx2,fma")]
unsafe fn eight_rows(
    x: &[f32],
    weight: *const f32,
    inner: usize,
    width: usize,
    stride: usize,
    y: &mut [f32],
) {
    unsafe {
        let y = y.as_mut_ptr();
        let x0 = _mm256_set1_ps(x[0]);
        for c in (0..width).step_by(8) {
            _mm256_storeu_ps(y.add(c), _mm256_mul_ps(_mm256_loadu_ps(weight.add(c)), x0));
        }
        let mut depth = 1;
        while depth < inner {
            let block = if depth + 8 <= inner { 8 } else { 1 };
            let mut lanes = [_mm256_setzero_ps(); 8];
            for (j, lane) in lanes.iter_mut().enumerate().take(block) {
                *lane = _mm256_set1_ps(x[depth + j]);
            }
            let rows = weight.add(depth * stride);
            for c in (0..width).step_by(8) {
                let mut sum = _mm256_loadu_ps(y.add(c));
                for (j, lane) in lanes.iter().enumerate().take(block) {
                    sum = _mm256_fmadd_ps(_mm256_loadu_ps(rows.add(j * stride + c)), *lane, sum);
                }
                _mm256_storeu_ps(y.add(c), sum);
            }
            depth += block;
        }
    }
}

/// Panels of 16 columns, `[panels][inner][16]`, four at a time.
///
/// # Safety
/// AVX2 and FMA; `panels` holds `count` panels of `inner` × 16 values; `y` `count × 16`.
#[target_feature(enable = "avx2,fma")]
unsafe fn panels(x: &[f32], panels: &[f32], inner: usize, count: usize, y: &mut [f32]) {
    unsafe {
        let mut panel = 0;
        while panel < count {
            let group = (count - panel).min(4);
            let base = panels.as_ptr().add(panel * inner * 16);
            let mut sums = [_mm256_setzero_ps(); 8];
            let x0 = _mm256_set1_ps(x[0]);
            for q in 0..group {
                let at = base.add(q * inner * 16);
                sums[2 * q] = _mm256_mul_ps(_mm256_loadu_ps(at), x0);
                sums[2 * q + 1] = _mm256_mul_ps(_mm256_loadu_ps(at.add(8)), x0);
            }
            for depth in 1..inner {
                let lane = _mm256_set1_ps(x[depth]);
                for q in 0..group {
                    let at = base.add(q * inner * 16 + depth * 16);
                    sums[2 * q] = _mm256_fmadd_ps(_mm256_loadu_ps(at), lane, sums[2 * q]);
                    sums[2 * q + 1] =
                        _mm256_fmadd_ps(_mm256_loadu_ps(at.add(8)), lane, sums[2 * q + 1]);
                }
            }
            for (q, sum) in sums.iter().enumerate().take(2 * group) {
                _mm256_storeu_ps(y.as_mut_ptr().add(panel * 16 + q * 8), *sum);
            }
            panel += group;
        }
    }
}

/// The products' weights: row-major, and each half in panels.
struct Weights {
    shapes: Vec<(usize, usize)>,
    row_major: Vec<Vec<f32>>,
    panels: Vec<[Vec<f32>; 2]>,
}

impl Weights {
    fn new() -> Self {
        let shapes = shapes();
        let row_major: Vec<Vec<f32>> = shapes
            .iter()
            .enumerate()
            .map(|(i, &(inner, columns))| {
                (0..inner * columns)
                    .map(|j| (((j * 7 + i * 13) % 29) as f32 - 14.0) * 0.01)
                    .collect()
            })
            .collect();
        let panels = shapes
            .iter()
            .zip(&row_major)
            .map(|(&(inner, columns), weight)| {
                let half = |h: usize| {
                    let (first, width) = (h * columns / 2, columns / 2);
                    let mut packed = vec![0.0; width * inner];
                    for panel in 0..width / 16 {
                        for depth in 0..inner {
                            for c in 0..16 {
                                packed[(panel * inner + depth) * 16 + c] =
                                    weight[depth * columns + first + panel * 16 + c];
                            }
                        }
                    }
                    packed
                };
                [half(0), half(1)]
            })
            .collect();
        Self {
            shapes,
            row_major,
            panels,
        }
    }

    /// Half `h` of product `i` by `how`.
    fn half(&self, how: &str, i: usize, h: usize, x: &[f32], y: &mut [f32]) {
        let (inner, columns) = self.shapes[i];
        let width = columns / 2;
        let weight = self.row_major[i][h * width..].as_ptr();
        // SAFETY (both kernels): the CPU was checked for AVX2 and FMA in `main`; the weights
        // and outputs hold what the kernels read and write.
        match how {
            "gemm" => gemm_row(x, weight, inner, width, columns, y),
            "eight-rows" => unsafe { eight_rows(x, weight, inner, width, columns, y) },
            _ => unsafe { panels(x, &self.panels[i][h], inner, width / 16, y) },
        }
    }
}

const WAYS: [&str; 3] = ["gemm", "eight-rows", "panels"];

fn main() {
    if !(std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma"))
    {
        eprintln!("decode_step: needs AVX2 and FMA");
        std::process::exit(2);
    }
    let (steps, rounds) = (env("STEPS", 500), env("ROUNDS", 7));
    let weights = Weights::new();
    let x: Vec<f32> = (0..1024).map(|i| ((i % 11) as f32 - 5.0) * 0.1).collect();
    // The same bits three ways.
    for (i, &(_, columns)) in weights.shapes.iter().enumerate() {
        let outputs: Vec<Vec<u32>> = WAYS
            .iter()
            .map(|how| {
                let mut y = vec![0.0; columns];
                for h in 0..2 {
                    let width = columns / 2;
                    weights.half(how, i, h, &x, &mut y[h * width..(h + 1) * width]);
                }
                y.iter().map(|v| v.to_bits()).collect()
            })
            .collect();
        assert!(
            outputs.windows(2).all(|w| w[0] == w[1]),
            "product {i}: the ways differ"
        );
    }
    let mb = weights.row_major.iter().map(|w| w.len() * 4).sum::<usize>() as f64 / 1e6;
    println!(
        "one greedy step at batch 1: {} products, {mb:.1} MB of weights, 2 threads",
        weights.shapes.len()
    );
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); WAYS.len()];
    for _ in 0..rounds {
        for (way, how) in WAYS.iter().enumerate() {
            // Both threads take their half of each product, then meet (spinning) before the next.
            let met = AtomicUsize::new(0);
            let start = Instant::now();
            std::thread::scope(|s| {
                for h in 0..2 {
                    let (weights, x, met) = (&weights, &x, &met);
                    s.spawn(move || {
                        let mut y = vec![0.0f32; 4000];
                        let mut goal = 0;
                        for _ in 0..steps {
                            for i in 0..weights.shapes.len() {
                                let width = weights.shapes[i].1 / 2;
                                weights.half(how, i, h, x, &mut y[..width]);
                                goal += 2;
                                met.fetch_add(1, Ordering::AcqRel);
                                while met.load(Ordering::Acquire) < goal {
                                    std::hint::spin_loop();
                                }
                            }
                        }
                        std::hint::black_box(&y);
                    });
                }
            });
            times[way].push(start.elapsed().as_secs_f64() * 1e3 / steps as f64);
        }
    }
    for (way, how) in WAYS.iter().enumerate() {
        let mut t = times[way].clone();
        t.sort_by(f64::total_cmp);
        let median = t[t.len() / 2];
        println!(
            "{how:>10}: {median:.3} ms/step ({:.1} GB/s), rounds {}",
            mb / median,
            times[way]
                .iter()
                .map(|t| format!("{t:.3}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
}
