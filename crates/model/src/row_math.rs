//! The host-side loops over a row of logits that every decoding step runs (`vocab` values per
//! row, 2.56 M values a step for beam 5 at batch 64), written so that the compiler vectorizes
//! them: fixed-width lanes, no early exit, no call into `libm` per value.
//!
//! The row's log-normalizer `ln Σ exp(x)` took 12% of beam search's time at batch 64 (9.6% in
//! `f32::exp`, a scalar `libm` call per value, and its sequential sum); here the exponential is a
//! branch-free polynomial and the sum runs in [`LANES`] partial sums. Both are deterministic:
//! the same values give the same bits on every target (the lanes are added in a fixed order,
//! and Rust never fuses a multiply and an add on its own).

/// Values processed side by side: 16 floats, one AVX-512 register, two AVX2 ones.
pub(crate) const LANES: usize = 16;

/// `e^x` for `x <= 0` (the terms of a log-softmax after the row's maximum is subtracted), within
/// 2 ulp of the exact value (checked on a grid). Below `-87` (`e^x` leaves the normal floats
/// below about -87.34) it returns `e^-87 ≈ 1.6e-38`, which adds nothing to a sum that holds the
/// maximum's term of 1; `NaN` is treated the same way. Positive `x` is outside its range.
///
/// Cephes' `expf`: `x = n ln 2 + r` with `|r| <= ln 2 / 2` (`ln 2` split in two so that `n ln 2`
/// is exact), a degree-6 polynomial for `e^r`, and `2^n` put together from its exponent bits.
/// `n` is rounded by adding `1.5 · 2^23`, which leaves it in the low bits of the sum's mantissa
/// (no float-to-integer conversion, so the loop vectorizes on every x86-64).
#[inline(always)]
pub(crate) fn exp_nonpositive(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    const LN2_HIGH: f32 = 0.693_359_4;
    const LN2_LOW: f32 = -2.121_944_4e-4;
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2^23
    // `x > -87` is false for NaN as well: both become -87.
    let x = if x > -87.0 { x } else { -87.0 };
    let shifted = x * LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = x - n * LN2_HIGH - n * LN2_LOW;
    let r2 = r * r;
    let poly =
        (((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
            + 1.666_666_5e-1)
            * r
            + 0.5)
            * r2
            + r
            + 1.0;
    // `n` in [-126, 0]: its biased exponent `n + 127` is that of a normal float.
    let n_bits = shifted.to_bits().wrapping_sub(ROUND.to_bits());
    let scale = f32::from_bits(n_bits.wrapping_add(127) << 23);
    poly * scale
}

/// The largest value of `row`, ignoring `NaN`; `-inf` for an empty row.
#[inline(always)]
pub(crate) fn row_max(row: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = row.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane = if x > *lane { x } else { *lane };
        }
    }
    let mut max = f32::NEG_INFINITY;
    for &x in lanes.iter().chain(rest) {
        max = if x > max { x } else { max };
    }
    max
}

/// `ln Σ exp(x)` over a row of logits, from its maximum (so that no term overflows): the row's
/// log-softmax is `x - log_normalizer(row)`. Within `1e-6` of the exact value (relative, or
/// absolute below 1). A `NaN` logit counts as nothing (as `e^-87`), where a plain sum would
/// make the whole row `NaN`: the row's other tokens keep their probabilities. A row whose
/// maximum is `+inf` has the normalizer `+inf`; one of only `-inf`, `-inf`.
///
/// Compiled twice: for the baseline instruction set and, run where the CPU has it, for AVX-512
/// (16 lanes a register instead of SSE2's 4; beam 5 at batch 64 spent 7–12% of its time here).
/// The same operations lane by lane in the same order, so the same bits either way.
pub(crate) fn log_normalizer(row: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        return avx512::log_normalizer(row);
    }
    log_normalizer_lanes(row)
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    /// [`log_normalizer`](super::log_normalizer) compiled for AVX-512.
    // The exception to the crate's safe code (Cargo.toml), here and below: calling a function
    // compiled for AVX-512, after the caller has detected it.
    #[allow(unsafe_code)]
    pub(super) fn log_normalizer(row: &[f32]) -> f32 {
        #[target_feature(enable = "avx512f")]
        fn compiled(row: &[f32]) -> f32 {
            super::log_normalizer_lanes(row)
        }
        debug_assert!(std::arch::is_x86_feature_detected!("avx512f"));
        // SAFETY: only called where the CPU has AVX-512 F (`super::log_normalizer` checks).
        unsafe { compiled(row) }
    }

    /// [`cross_entropy_row`](super::cross_entropy_row) compiled for AVX-512.
    #[allow(unsafe_code)]
    pub(super) fn cross_entropy_row(
        row: &mut [f32],
        target: usize,
        smoothing: f32,
        weight: f32,
    ) -> super::CrossEntropyRow {
        #[target_feature(enable = "avx512f")]
        fn compiled(
            row: &mut [f32],
            target: usize,
            smoothing: f32,
            weight: f32,
        ) -> super::CrossEntropyRow {
            super::cross_entropy_row_lanes(row, target, smoothing, weight)
        }
        debug_assert!(std::arch::is_x86_feature_detected!("avx512f"));
        // SAFETY: only called where the CPU has AVX-512 F (`super::cross_entropy_row` checks).
        unsafe { compiled(row, target, smoothing, weight) }
    }
}

/// [`log_normalizer`] for whatever instruction set it is compiled into.
#[inline(always)]
fn log_normalizer_lanes(row: &[f32]) -> f32 {
    let max = row_max(row);
    max + lane_sum(row, |x| exp_nonpositive(x - max)).ln()
}

/// What [`cross_entropy_row`] learns of a row besides its gradient.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrossEntropyRow {
    /// The smoothed loss of the row's target, `(1 - eps)(-log p(y)) + eps mean_v(-log p(v))`
    /// (not multiplied by the row's weight).
    pub loss: f32,
    /// `-log p(y)`, without smoothing.
    pub nll: f32,
    /// The first index of the row's largest logit (the token the model ranks first).
    pub argmax: usize,
}

/// The label-smoothed cross-entropy of one row of logits against `target`, and its gradient
/// written over the row: `row[v]` becomes `weight · (softmax(row)[v] - q[v])`, with
/// `q = (1 - smoothing)·onehot(target) + smoothing / vocab`, the derivative of
/// `weight · loss` with respect to each logit. Four passes over a row that stays in cache
/// (its maximum; the first position of it; the exponentials, kept in the row, with the sums;
/// the scaling), where Burn's composed log-softmax, gather, mean and their backward steps make
/// about fifteen passes over the whole batch's logits.
///
/// `target` must be an index of `row` (callers check the ids against the vocabulary). `NaN`
/// among the logits makes the loss `NaN`, so that training stops on it.
///
/// Compiled for AVX-512 too, like `log_normalizer`, and chosen at run time: the same bits.
pub fn cross_entropy_row(
    row: &mut [f32],
    target: usize,
    smoothing: f32,
    weight: f32,
) -> CrossEntropyRow {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        return avx512::cross_entropy_row(row, target, smoothing, weight);
    }
    cross_entropy_row_lanes(row, target, smoothing, weight)
}

/// [`cross_entropy_row`] for whatever instruction set it is compiled into.
#[inline(always)]
fn cross_entropy_row_lanes(
    row: &mut [f32],
    target: usize,
    smoothing: f32,
    weight: f32,
) -> CrossEntropyRow {
    let max = row_max(row);
    let argmax = row.iter().position(|&x| x == max).unwrap_or(0);
    let target_logit = row[target];
    // The logits' sum (for the smoothing term) and the exponentials' sum, in one pass that
    // replaces each logit by its exponential.
    let (sum, normalizer) = {
        let mut logits = [0.0f32; LANES];
        let mut exps = [0.0f32; LANES];
        let mut chunks = row.chunks_exact_mut(LANES);
        for chunk in &mut chunks {
            for ((sum, exp), x) in logits.iter_mut().zip(exps.iter_mut()).zip(chunk) {
                *sum += *x;
                *x = exp_nonpositive(*x - max);
                *exp += *x;
            }
        }
        let rest = chunks.into_remainder();
        for ((sum, exp), x) in logits.iter_mut().zip(exps.iter_mut()).zip(rest) {
            *sum += *x;
            *x = exp_nonpositive(*x - max);
            *exp += *x;
        }
        (add_lanes(logits), add_lanes(exps))
    };
    let log_normalizer = max + normalizer.ln();
    let vocab = row.len() as f32;
    let nll = log_normalizer - target_logit;
    let mean_nll = log_normalizer - sum / vocab;
    let loss = (1.0 - smoothing) * nll + smoothing * mean_nll;
    let scale = weight / normalizer;
    let offset = weight * smoothing / vocab;
    for x in row.iter_mut() {
        *x = *x * scale - offset;
    }
    row[target] -= weight * (1.0 - smoothing);
    CrossEntropyRow { loss, nll, argmax }
}

/// `Σ f(x)` over `row` in [`LANES`] partial sums, added pairwise in a fixed order.
#[inline(always)]
fn lane_sum(row: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let chunks = row.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane += f(x);
        }
    }
    for (lane, &x) in lanes.iter_mut().zip(rest) {
        *lane += f(x);
    }
    add_lanes(lanes)
}

/// The lanes' sum, pairwise in a fixed order.
#[inline(always)]
fn add_lanes(mut lanes: [f32; LANES]) -> f32 {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            lanes[i] += lanes[i + width];
        }
    }
    lanes[0]
}

/// Whether some value of `chunk`, plus `offset`, is greater than `bound` (`NaN` never is): the
/// test that lets a scan for the best values skip a whole chunk with one vectorized pass.
/// `value + offset` is computed exactly as the scan computes it, so a skipped chunk holds no
/// value the scan would have kept.
#[inline(always)]
pub(crate) fn any_above(chunk: &[f32], offset: f32, bound: f32) -> bool {
    let mut above = false;
    for &x in chunk {
        above |= x + offset > bound;
    }
    above
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The dispatched log-normalizer (AVX-512 where the CPU has it) gives the baseline build's
    /// bits, on rows of every remainder length, with `NaN` and `-inf` among the values.
    #[test]
    fn the_avx512_build_gives_the_baseline_bits() {
        let mut state = 0x9e37_79b9_u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 40.0
        };
        for len in [1, 15, 16, 17, 100, 8000, 8007] {
            let mut row: Vec<f32> = (0..len).map(|_| next()).collect();
            assert_eq!(
                log_normalizer(&row).to_bits(),
                log_normalizer_lanes(&row).to_bits(),
                "{len}"
            );
            if len > 2 {
                row[1] = f32::NAN;
                row[len - 1] = f32::NEG_INFINITY;
                assert_eq!(
                    log_normalizer(&row).to_bits(),
                    log_normalizer_lanes(&row).to_bits()
                );
            }
        }
    }

    #[test]
    fn the_cross_entropy_row_matches_a_double_precision_reference() {
        let mut state = 0x2545_f491_u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 30.0
        };
        for (len, target, smoothing, weight) in [
            (1, 0, 0.1f32, 1.0f32),
            (17, 3, 0.0, 1.0),
            (100, 99, 0.1, 1.0),
            (8007, 4000, 0.2, 0.5),
            (64, 5, 0.1, 0.0),
        ] {
            let logits: Vec<f32> = (0..len).map(|_| next()).collect();
            let x: Vec<f64> = logits.iter().map(|&v| f64::from(v)).collect();
            let max = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let z = max + x.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
            let eps = f64::from(smoothing);
            let nll = z - x[target];
            let mean_nll = z - x.iter().sum::<f64>() / len as f64;
            let expected = (1.0 - eps) * nll + eps * mean_nll;
            let mut row = logits.clone();
            let out = cross_entropy_row(&mut row, target, smoothing, weight);
            assert!((f64::from(out.loss) - expected).abs() < 1e-5 * expected.abs().max(1.0));
            assert!((f64::from(out.nll) - nll).abs() < 1e-5 * nll.abs().max(1.0));
            let first_max = logits.iter().position(|&v| f64::from(v) == max);
            assert_eq!(Some(out.argmax), first_max);
            for (v, &g) in row.iter().enumerate() {
                let q = if v == target { 1.0 - eps } else { 0.0 } + eps / len as f64;
                let exact = f64::from(weight) * ((x[v] - z).exp() - q);
                assert!(
                    (f64::from(g) - exact).abs() < 1e-6,
                    "{len} {v}: {g} vs {exact}"
                );
            }
            // The AVX-512 build (where the CPU has it) gives the baseline build's bits.
            let mut baseline = logits.clone();
            let lanes = cross_entropy_row_lanes(&mut baseline, target, smoothing, weight);
            assert_eq!(lanes, out);
            assert_eq!(
                row.iter().map(|g| g.to_bits()).collect::<Vec<_>>(),
                baseline.iter().map(|g| g.to_bits()).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_nan_logit_makes_the_cross_entropy_nan() {
        let mut row = vec![1.0f32, f32::NAN, 2.0];
        assert!(cross_entropy_row(&mut row, 0, 0.1, 1.0).loss.is_nan());
    }

    /// Units in the last place between `a` and the exact, positive, normal `b`: the spacing of
    /// the floats in `b`'s binade, `2^(e - 23)` for `b` in `[2^e, 2^(e+1))`.
    fn ulps(a: f32, b: f64) -> f64 {
        let ulp = 2f64.powf(b.log2().floor() - 23.0);
        (f64::from(a) - b).abs() / ulp
    }

    #[test]
    fn the_exponential_is_within_two_ulp_of_the_exact_one() {
        let mut worst: f64 = 0.0;
        // Every 1/1000 from -87 to 0, the first thousandth in steps of a millionth, and the
        // points where the range reduction changes `n`.
        let grid = (0..=87_000)
            .map(|i| -(i as f32) / 1000.0)
            .chain((1..1000).map(|i| -(i as f32) * 1e-6));
        let steps = (0..=125).map(|n| -(n as f32 + 0.5) * std::f32::consts::LN_2);
        for x in grid.chain(steps) {
            let exact = f64::from(x).exp();
            worst = worst.max(ulps(exp_nonpositive(x), exact));
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-0.0), 1.0);
    }

    #[test]
    fn the_exponential_of_far_negative_values_and_nan_is_negligible() {
        let floor = exp_nonpositive(-87.0);
        assert!(floor > 0.0 && floor < 1.7e-38, "{floor}");
        for x in [-88.0, -104.0, -1.0e30, f32::NEG_INFINITY, f32::NAN] {
            assert_eq!(exp_nonpositive(x), floor, "{x}");
        }
    }

    #[test]
    fn the_maximum_ignores_nan_and_sees_every_lane_and_the_rest() {
        for len in [0, 1, 15, 16, 17, 33, 100] {
            for at in 0..len {
                let mut row: Vec<f32> = (0..len).map(|i| -(i as f32)).collect();
                row[at] = 5.0;
                if len > 1 {
                    row[(at + 1) % len] = f32::NAN;
                }
                assert_eq!(row_max(&row), 5.0, "len {len}, max at {at}");
            }
        }
        assert_eq!(row_max(&[]), f32::NEG_INFINITY);
    }

    #[test]
    fn the_log_normalizer_matches_a_double_precision_reference() {
        // Rows of logits of several lengths (a remainder after the lanes, or none), with a wide
        // range of values.
        let mut state = 0x9e37_79b9_u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            f64::from(state) / f64::from(u32::MAX)
        };
        for len in [1, 2, 16, 31, 100, 8000] {
            for spread in [0.1, 10.0, 100.0] {
                let row: Vec<f32> = (0..len).map(|_| ((next() - 0.5) * spread) as f32).collect();
                let max = row
                    .iter()
                    .copied()
                    .fold(f64::NEG_INFINITY, |m, x| m.max(f64::from(x)));
                let exact = max
                    + row
                        .iter()
                        .map(|&x| (f64::from(x) - max).exp())
                        .sum::<f64>()
                        .ln();
                let got = f64::from(log_normalizer(&row));
                assert!(
                    (got - exact).abs() <= 1e-6 * exact.abs().max(1.0),
                    "len {len}, spread {spread}: {got} against {exact}"
                );
            }
        }
        // One value: the normalizer is the value itself.
        assert_eq!(log_normalizer(&[3.25]), 3.25);
    }

    #[test]
    fn nan_and_negative_infinity_count_as_nothing_and_positive_infinity_dominates() {
        let row: Vec<f32> = (0..37).map(|i| (i % 7) as f32 - 3.0).collect();
        let plain = log_normalizer(&row);
        for odd in [f32::NAN, f32::NEG_INFINITY] {
            for at in [0, 16, 36] {
                let mut with = row.clone();
                with.insert(at, odd);
                let got = log_normalizer(&with);
                assert!(
                    (got - plain).abs() <= 1e-6,
                    "{odd} at {at}: {got} against {plain}"
                );
            }
        }
        let mut infinite = row.clone();
        infinite[20] = f32::INFINITY;
        assert_eq!(log_normalizer(&infinite), f32::INFINITY);
        assert_eq!(log_normalizer(&[f32::NEG_INFINITY; 3]), f32::NEG_INFINITY);
    }

    #[test]
    fn a_chunk_is_above_the_bound_exactly_when_one_of_its_values_is() {
        let chunk = [1.0, 2.0, f32::NAN, 0.5];
        assert!(any_above(&chunk, 0.0, 1.5));
        assert!(!any_above(&chunk, 0.0, 2.0));
        assert!(any_above(&chunk, 0.25, 2.0));
        assert!(!any_above(&[f32::NAN], 0.0, f32::NEG_INFINITY));
        assert!(!any_above(&[], 0.0, f32::NEG_INFINITY));
    }
}
