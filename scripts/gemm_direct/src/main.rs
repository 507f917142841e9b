//! `gemm::gemm` 0.19 called directly, exactly as burn-flex's `matmul_2d_strided` calls it
//! (row-major, `Parallelism::Rayon(0)`), on the matrix products of a training step: GFLOP/s, median
//! of REPS calls (default 15). Measures what Cargo's debug assertions and overflow checks cost the
//! kernels (docs/performance.md):
//!
//!   cargo run --release --manifest-path scripts/gemm_direct/Cargo.toml
//!   cargo run --profile checks --manifest-path scripts/gemm_direct/Cargo.toml
//!
//! Columns: one thread; two threads; two threads with A stored transposed; the rows split in two
//! single-threaded halves. RHS, LHS, THR set gemm-common's packing and threading thresholds.

use std::time::Instant;

fn env(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

/// Row-major C[m,n] = A[m,k] B[k,n] (A transposed in storage when `ta`), called as burn-flex
/// calls gemm.
#[allow(clippy::too_many_arguments)]
fn run(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    ta: bool,
    b: &[f32],
    c: &mut [f32],
    par: gemm::Parallelism,
) {
    let (a_cs, a_rs) = if ta { (m as isize, 1) } else { (1, k as isize) };
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            a_cs,
            a_rs,
            b.as_ptr(),
            1,
            n as isize,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            par,
        );
    }
}

/// Two halves of the rows, one per core, each single-threaded.
fn run_split(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    let h = m / 2;
    let (a0, a1) = a.split_at(h * k);
    let (c0, c1) = c.split_at_mut(h * n);
    rayon::join(
        || run(h, k, n, a0, false, b, c0, gemm::Parallelism::None),
        || run(m - h, k, n, a1, false, b, c1, gemm::Parallelism::None),
    );
}

fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut v: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[reps / 2]
}

fn main() {
    if let Some(v) = env("RHS") {
        gemm_common::gemm::set_rhs_packing_threshold(v);
    }
    if let Some(v) = env("LHS") {
        gemm_common::gemm::set_lhs_packing_threshold_multi_thread(v);
        gemm_common::gemm::set_lhs_packing_threshold_single_thread(v);
    }
    if let Some(v) = env("THR") {
        gemm_common::gemm::set_threading_threshold(v);
    }
    let reps = env("REPS").unwrap_or(15);
    println!(
        "rhs {} lhs {} thr {}",
        gemm_common::gemm::get_rhs_packing_threshold(),
        gemm_common::gemm::get_lhs_packing_threshold_multi_thread(),
        gemm_common::gemm::get_threading_threshold()
    );
    let shapes = [
        (1536, 256, 1024),
        (1536, 1024, 256),
        (1536, 256, 8000),
        (256, 1536, 8000),
        (1536, 256, 256),
    ];
    for (m, k, n) in shapes {
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 104729) % 1000) as f32 / 1000.0)
            .collect();
        let mut c = vec![0f32; m * n];
        let g = |s: f64| 2.0 * (m * k * n) as f64 / s / 1e9;
        let t1 = time(reps, || {
            run(m, k, n, &a, false, &b, &mut c, gemm::Parallelism::None)
        });
        let t2 = time(reps, || {
            run(m, k, n, &a, false, &b, &mut c, gemm::Parallelism::Rayon(0))
        });
        let tt = time(reps, || {
            run(m, k, n, &a, true, &b, &mut c, gemm::Parallelism::Rayon(0))
        });
        let ts = time(reps, || run_split(m, k, n, &a, &b, &mut c));
        println!(
            "{m:>5}x{k:>4}x{n:>4}  1t {:6.1}  2t {:6.1}  2t(A^T) {:6.1}  split {:6.1}",
            g(t1),
            g(t2),
            g(tt),
            g(ts)
        );
    }
}
