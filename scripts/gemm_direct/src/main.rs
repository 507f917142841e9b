//! `gemm::gemm` 0.19 called directly, exactly as burn-flex's `matmul_2d_strided` calls it
//! (row-major, `Parallelism::Rayon(0)`), on the matrix products of a training step: GFLOP/s, median
//! of REPS calls (default 15). Measures what Cargo's debug assertions and overflow checks cost the
//! kernels (docs/performance.md):
//!
//!   cargo run --release --manifest-path scripts/gemm_direct/Cargo.toml
//!   cargo run --profile checks --manifest-path scripts/gemm_direct/Cargo.toml
//!
//! Columns: one thread; two threads; two threads with A stored transposed; two threads with B
//! stored transposed (`[n, k]`, as a tied output projection's embedding table is); the rows
//! split in two single-threaded halves; the columns split in two single-threaded halves
//! (split-n). RHS, LHS and THR set gemm-common's packing and threading thresholds;
//! `SHAPES="320x256x8000,64x256x8000"` measures those products instead of a training step's.

use std::time::Instant;

fn env(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|s| s.parse().ok())
}

/// How A `[m, k]` and B `[k, n]` are stored: row-major, or transposed (`[k, m]`, `[n, k]`).
#[derive(Clone, Copy)]
struct Storage {
    /// A stored as `[k, m]`.
    a_transposed: bool,
    /// B stored as `[n, k]`.
    b_transposed: bool,
}

/// A and B both row-major, as burn-flex's operands usually are.
const ROW_MAJOR: Storage = Storage {
    a_transposed: false,
    b_transposed: false,
};

/// Row-major C[m,n] = A[m,k] B[k,n], A and B stored as `storage` says, called as burn-flex
/// calls gemm.
fn run(
    (m, k, n): (usize, usize, usize),
    (a, b): (&[f32], &[f32]),
    storage: Storage,
    c: &mut [f32],
    par: gemm::Parallelism,
) {
    let (a_cs, a_rs) = if storage.a_transposed {
        (m as isize, 1)
    } else {
        (1, k as isize)
    };
    let (b_cs, b_rs) = if storage.b_transposed {
        (k as isize, 1)
    } else {
        (1, n as isize)
    };
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
            b_cs,
            b_rs,
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
    let single = gemm::Parallelism::None;
    rayon::join(
        || run((h, k, n), (a0, b), ROW_MAJOR, c0, single),
        || run((m - h, k, n), (a1, b), ROW_MAJOR, c1, single),
    );
}

/// Two halves of the columns (of B and C, read and written in place through their row
/// strides), one per core, each single-threaded.
fn run_split_columns(m: usize, k: usize, n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    let h = n / 2;
    // The two halves write disjoint columns of C; the pointers cross the threads as integers
    // because raw pointers are not `Send`.
    let (b_ptr, c_ptr) = (b.as_ptr() as usize, c.as_mut_ptr() as usize);
    // SAFETY: `start + width <= n`, so each half reads columns `start..start + width` of B
    // (`k` rows of stride `n` inside `b`) and writes the same columns of C (`m` rows of stride
    // `n` inside `c`); the two halves' columns do not overlap, and `b` and `c` outlive the join.
    let half = |start: usize, width: usize| unsafe {
        gemm::gemm(
            m,
            width,
            k,
            (c_ptr as *mut f32).add(start),
            1,
            n as isize,
            false,
            a.as_ptr(),
            1,
            k as isize,
            (b_ptr as *const f32).add(start),
            1,
            n as isize,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    };
    rayon::join(|| half(0, h), || half(h, n - h));
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
    // SHAPES="320x256x8000,64x256x8000" measures other products (decoding's, for instance).
    let shapes: Vec<(usize, usize, usize)> = match std::env::var("SHAPES") {
        Ok(list) => list
            .split(',')
            .map(|shape| {
                let dims: Vec<usize> = shape.split('x').filter_map(|d| d.parse().ok()).collect();
                match dims[..] {
                    [m, k, n] if m * k * n > 0 => (m, k, n),
                    _ => {
                        eprintln!("SHAPES: {shape:?} is not MxKxN (three positive numbers)");
                        std::process::exit(2);
                    }
                }
            })
            .collect(),
        Err(_) => vec![
            (1536, 256, 1024),
            (1536, 1024, 256),
            (1536, 256, 8000),
            (256, 1536, 8000),
            (1536, 256, 256),
        ],
    };
    for (m, k, n) in shapes {
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 104729) % 1000) as f32 / 1000.0)
            .collect();
        let mut c = vec![0f32; m * n];
        let g = |s: f64| 2.0 * (m * k * n) as f64 / s / 1e9;
        let shape = (m, k, n);
        let two = gemm::Parallelism::Rayon(0);
        let with = |a_transposed, b_transposed| Storage {
            a_transposed,
            b_transposed,
        };
        let t1 = time(reps, || {
            run(shape, (&a, &b), ROW_MAJOR, &mut c, gemm::Parallelism::None)
        });
        let t2 = time(reps, || run(shape, (&a, &b), ROW_MAJOR, &mut c, two));
        let tt = time(reps, || {
            run(shape, (&a, &b), with(true, false), &mut c, two)
        });
        let tbt = time(reps, || {
            run(shape, (&a, &b), with(false, true), &mut c, two)
        });
        let ts = time(reps, || run_split(m, k, n, &a, &b, &mut c));
        let tc = time(reps, || run_split_columns(m, k, n, &a, &b, &mut c));
        println!(
            "{m:>5}x{k:>4}x{n:>4}  1t {:6.1}  2t {:6.1}  2t(A^T) {:6.1}  \
             2t(B^T) {:6.1}  split {:6.1}  split-n {:6.1}",
            g(t1),
            g(t2),
            g(tt),
            g(tbt),
            g(ts),
            g(tc)
        );
    }
}
