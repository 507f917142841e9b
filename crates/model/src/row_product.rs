//! A few rows times a row-major weight (`[inner, columns]`, column stride 1): the products of
//! decoding at batch 1 to 8 (one row a step in greedy search at batch 1, five in beam 5's), each
//! of which reads the whole weight for a few rows of output.
//!
//! `gemm` multiplies one row by such a weight in its matrix-vector kernel, which reads one row
//! of the weight at a time and loads and stores every output once per row of the weight; and a
//! few rows in its matrix kernels, which read the weight a 64-byte piece of a row at a time,
//! jumping from row to row of it. Here eight rows of the weight are read at a time, whole (eight
//! streams from memory at once), and each output is loaded and stored once per eight: the same
//! chain of operations per output, in the same order, as `gemm`'s, so the same bits, which the
//! tests compare with `gemm` itself (and `in_place_linear`'s with Burn's `linear`); shapes that
//! `gemm` sums another way ([`takes`]) are left to it. The chains:
//! - one row: the first a product alone, then one fused `fma(weight, x, sum)` per row of the
//!   weight (the matrix-vector kernel's);
//! - two to [`MAX_ROWS`] rows: one `fma` per row of the weight onto zero (the matrix kernels',
//!   whose sums start at zero), for an inner dimension of at most [`MAX_INNER`], which the matrix
//!   kernels sum in one piece.
//!
//! One greedy batch-1 step's products of the anchor model on two threads (`scripts/gemm_direct`,
//! `--bin decode_step`; AMD EPYC Zen 3, AVX2): 0.688 ms through `gemm`, 0.459 ms here. In
//! decoding (docs/performance.md), greedy search at batch 2, 4 and 8
//! ran 1.5x, 1.4x and 1.3x as fast as through `gemm`; at 12 and 16 rows, 0.84x and 0.95x, which
//! is why more rows stay with `gemm`, whose kernels reuse each piece of the weight across the
//! rows from registers. `ROSETTA_ROW_PRODUCT=gemm` leaves every product to `gemm`, to compare
//! the two in one binary.

/// The most rows multiplied here (see the module's text for the measurements).
pub(crate) const MAX_ROWS: usize = 8;

/// The longest inner dimension of a product of two or more rows multiplied here: `gemm`'s matrix
/// kernels sum a longer one in pieces (`kc`: 512, or from the cache sizes past 512), each piece's
/// sum then added, which would not be the chains here.
pub(crate) const MAX_INNER: usize = 512;

/// The operands of one [`product`]: `dst` `[rows, width]` (rows `dst_row` apart) = `x` `[rows,
/// inner]` (strides `x_row`, `x_column`) times `weight` `[inner, width]` (rows `weight_row`
/// apart, columns contiguous; `in_place_linear::gemm_product` takes other column strides too).
#[derive(Clone, Copy)]
pub(crate) struct Operands {
    /// `x`'s first value.
    pub x: *const f32,
    /// From one row of `x` to the next, in values.
    pub x_row: isize,
    /// From one column of `x` to the next, in values.
    pub x_column: isize,
    /// Rows of `x` and of `dst`.
    pub rows: usize,
    /// The weight's first value.
    pub weight: *const f32,
    /// From one row of the weight to the next, in values.
    pub weight_row: isize,
    /// Columns of `x`, rows of the weight.
    pub inner: usize,
    /// Columns of the weight and of `dst`.
    pub width: usize,
    /// The output's first value.
    pub dst: *mut f32,
    /// From one row of `dst` to the next, in values.
    pub dst_row: isize,
}

/// Whether `gemm` (called as `in_place_linear` calls it: `dst` row-major, its column stride 1)
/// would sum these operands as the kernels here do: one to [`MAX_ROWS`] rows, at most
/// [`MAX_INNER`] inner values for two rows or more, and not one of the shapes `gemm` sends
/// elsewhere first: an inner dimension of 1 or 2 (its `gevv`, unfused multiply-adds), an output
/// of one column or with rows less than 2 apart (not transposed: its dot-product kernels), a
/// weight with rows less than 2 apart (stored transposed: its dot-product kernels; or flipped: the
/// inner dimension summed backwards).
fn takes(operands: &Operands) -> bool {
    let Operands {
        rows,
        inner,
        width,
        weight_row,
        dst_row,
        ..
    } = *operands;
    (1..=MAX_ROWS).contains(&rows)
        && inner >= 3
        && (rows == 1 || inner <= MAX_INNER)
        && width >= 2
        && dst_row >= 2
        && weight_row >= 2
}

/// Whether these kernels run: on an x86-64 CPU with AVX2 and FMA, unless the environment
/// variable `ROSETTA_ROW_PRODUCT` is `gemm`, which leaves every product to `gemm`, to measure the
/// one against the other in one binary (the same bits either way). Decided once.
pub(crate) fn runs_here() -> bool {
    static RUNS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *RUNS.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        let cpu = std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        let cpu = false;
        let switched_off = std::env::var("ROSETTA_ROW_PRODUCT").is_ok_and(|v| v == "gemm");
        cpu && !switched_off
    })
}

/// Stores `x` times the weight in `dst`, summed as `gemm` sums it (see the module's text).
/// Returns `false`, with nothing written, when the operands are not for these kernels (see
/// [`takes`]), the CPU lacks AVX2 and FMA, or `ROSETTA_ROW_PRODUCT=gemm`: `gemm` multiplies
/// those.
///
/// # Safety
/// The pointers must be valid for the reads and writes `operands` describes, and `dst` must not
/// overlap `x` or the weight.
pub(crate) unsafe fn product(operands: Operands) -> bool {
    if !takes(&operands) || !runs_here() {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the CPU has AVX2 and FMA (`runs_here`); one to `MAX_ROWS` rows and at least
        // three inner values; the caller's contract for the pointers.
        unsafe { avx2::product(operands) };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256, _mm256_fmadd_ps, _mm256_mul_ps, _mm256_set1_ps, _mm256_setzero_ps,
    };

    use super::{MAX_ROWS, Operands};

    /// Values in a vector.
    const LANES: usize = 8;

    /// The rows of the weight read at a time.
    const BLOCK: usize = 8;

    /// Eight values at any address: a packed struct's field is moved by one unaligned load or
    /// store. `_mm256_loadu_ps` and `_mm256_storeu_ps` copy through a local vector with
    /// `copy_nonoverlapping`, whose overlap check (on in debug builds, this crate's) kept every
    /// vector in memory and doubled the loop's instructions.
    #[repr(C, packed)]
    #[derive(Clone, Copy)]
    struct Unaligned(__m256);

    /// The eight values from `at` on.
    ///
    /// # Safety
    /// `at` must be valid for eight reads.
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn load(at: *const f32) -> __m256 {
        // SAFETY: the caller's contract; `Unaligned` may sit at any address.
        unsafe { (*at.cast::<Unaligned>()).0 }
    }

    /// Stores `values` from `at` on.
    ///
    /// # Safety
    /// `at` must be valid for eight writes.
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn store(at: *mut f32, values: __m256) {
        // SAFETY: the caller's contract; `Unaligned` may sit at any address.
        unsafe { (*at.cast::<Unaligned>()).0 = values }
    }

    /// [`super::product`] on AVX2 and FMA. Pointers move by `wrapping_add` and `wrapping_offset`
    /// (the same addresses, without `add`'s checks in debug builds).
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; one to [`MAX_ROWS`] rows and at least one inner value;
    /// [`super::product`]'s contract.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn product(p: Operands) {
        let vectors = p.width / LANES * LANES;
        // SAFETY (whole body): within the rows and columns of `x`, the weight and `dst` that `p`
        // describes: the caller's contract.
        unsafe {
            let mut depth = 0;
            if p.rows == 1 {
                // The first row of the weight: the products alone, as `gemm`'s matrix-vector
                // kernel starts its sums.
                let x0 = *p.x;
                let x0_lanes = _mm256_set1_ps(x0);
                let mut column = 0;
                while column < vectors {
                    let weights = load(p.weight.wrapping_add(column));
                    store(p.dst.wrapping_add(column), _mm256_mul_ps(weights, x0_lanes));
                    column += LANES;
                }
                for column in vectors..p.width {
                    *p.dst.wrapping_add(column) = *p.weight.wrapping_add(column) * x0;
                }
                depth = 1;
            } else {
                // Sums from zero, as `gemm`'s matrix kernels start theirs.
                for row in 0..p.rows {
                    std::ptr::write_bytes(
                        p.dst.wrapping_offset(row as isize * p.dst_row),
                        0,
                        p.width,
                    );
                }
            }
            while depth + BLOCK <= p.inner {
                add_rows::<BLOCK>(p, depth);
                depth += BLOCK;
            }
            while depth < p.inner {
                add_rows::<1>(p, depth);
                depth += 1;
            }
        }
    }

    /// Adds the weight's rows `depth..depth + N` times `x`'s columns there to `dst`, one fused
    /// multiply-add per row of the weight in their order. One row's values of `x` are held in
    /// registers; more rows' are broadcast once each into memory that the multiply-adds read.
    ///
    /// # Safety
    /// As [`product`], with `depth + N ≤ inner`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn add_rows<const N: usize>(p: Operands, depth: usize) {
        let vectors = p.width / LANES * LANES;
        let mut xs = [[0.0f32; N]; MAX_ROWS];
        let mut lanes = [[_mm256_setzero_ps(); N]; MAX_ROWS];
        let mut weights = [p.weight; N];
        let mut outs = [p.dst; MAX_ROWS];
        // SAFETY: columns `depth..depth + N` of `x` and rows `depth..depth + N` of the weight
        // are within `inner`, the rows below `rows` and every column read or written below
        // `width`: the caller's contract.
        unsafe {
            for j in 0..N {
                let at = (depth + j) as isize;
                weights[j] = p.weight.wrapping_offset(at * p.weight_row);
                for row in 0..p.rows {
                    xs[row][j] =
                        *p.x.wrapping_offset(row as isize * p.x_row + at * p.x_column);
                    lanes[row][j] = _mm256_set1_ps(xs[row][j]);
                }
            }
            for (row, out) in outs.iter_mut().enumerate().take(p.rows) {
                *out = p.dst.wrapping_offset(row as isize * p.dst_row);
            }
            let mut column = 0;
            if p.rows == 1 {
                let lanes = lanes[0];
                while column < vectors {
                    let at = p.dst.wrapping_add(column);
                    let mut sum = load(at);
                    for j in 0..N {
                        sum = _mm256_fmadd_ps(load(weights[j].wrapping_add(column)), lanes[j], sum);
                    }
                    store(at, sum);
                    column += LANES;
                }
            } else {
                while column < vectors {
                    let mut w = [_mm256_setzero_ps(); N];
                    for j in 0..N {
                        w[j] = load(weights[j].wrapping_add(column));
                    }
                    for row in 0..p.rows {
                        let at = outs[row].wrapping_add(column);
                        let mut sum = load(at);
                        for j in 0..N {
                            sum = _mm256_fmadd_ps(w[j], lanes[row][j], sum);
                        }
                        store(at, sum);
                    }
                    column += LANES;
                }
            }
            for row in 0..p.rows {
                for column in vectors..p.width {
                    let at = outs[row].wrapping_add(column);
                    let mut sum = *at;
                    for j in 0..N {
                        sum = (*weights[j].wrapping_add(column)).mul_add(xs[row][j], sum);
                    }
                    *at = sum;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic stream of values in [-1, 1), every fifth of them zero (for signed zeros).
    fn values(seed: u32) -> impl FnMut() -> f32 {
        let mut state = seed;
        let mut count = 0u32;
        move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            count += 1;
            if count.is_multiple_of(5) {
                return 0.0;
            }
            (state as f32 / u32::MAX as f32) * 2.0 - 1.0
        }
    }

    /// The kernels and `gemm` on the same operands: the same bits, or the kernels refusing
    /// (`None`) and writing nothing.
    fn both(
        rows: usize,
        inner: usize,
        (columns, first, width): (usize, usize, usize),
        flipped: bool,
        next: &mut impl FnMut() -> f32,
    ) -> Option<(Vec<u32>, Vec<u32>)> {
        let weight: Vec<f32> = (0..inner * columns).map(|_| next()).collect();
        // `x` stored transposed, its columns 3 × rows values apart.
        let stored: Vec<f32> = (0..inner * 3 * rows).map(|_| next()).collect();
        let dst_row = width + 2;
        let (start, weight_row) = if flipped {
            ((inner - 1) * columns + first, -(columns as isize))
        } else {
            (first, columns as isize)
        };
        let operands = |dst: &mut Vec<f32>| Operands {
            x: stored.as_ptr(),
            x_row: 1,
            x_column: 3 * rows as isize,
            rows,
            weight: weight[start..].as_ptr(),
            weight_row,
            inner,
            width,
            dst: dst.as_mut_ptr(),
            dst_row: dst_row as isize,
        };
        let mut here = vec![f32::NAN; rows * dst_row];
        // SAFETY: `stored` holds `inner` columns of `rows` values 3 × rows apart, `weight`
        // `inner` rows of `columns ≥ first + width` values from `start` on, `weight_row` apart,
        // and `here` `rows` rows of `width` values `dst_row` apart.
        if !unsafe { product(operands(&mut here)) } {
            assert!(
                here.iter().all(|v| v.is_nan()),
                "refused, and nothing written"
            );
            return None;
        }
        let mut theirs = vec![f32::NAN; rows * dst_row];
        // SAFETY: as above.
        unsafe { crate::in_place_linear::gemm_product(operands(&mut theirs), 1) };
        let bits = |values: Vec<f32>| values.iter().map(|v| v.to_bits()).collect();
        Some((bits(here), bits(theirs)))
    }

    /// Inner lengths around the block of eight and past it, one row and several, widths with
    /// and without a tail: the bits of `gemm` itself (NaNs left between the rows included), for
    /// `x` read with strides, a range of the weight's columns, and rows of output apart.
    #[test]
    fn sums_each_output_as_gemm_does() {
        let mut next = values(0x2545_f491);
        for rows in [1, 2, 5, MAX_ROWS] {
            for inner in [3, 7, 8, 9, 16, 17, 256, 512, 1023] {
                for columns in [(40, 0, 40), (45, 3, 37), (7, 1, 5), (8, 0, 8), (9, 3, 2)] {
                    let done = both(rows, inner, columns, false, &mut next);
                    if rows > 1 && inner > MAX_INNER {
                        assert!(done.is_none(), "{rows} rows, inner {inner}: left to gemm");
                        continue;
                    }
                    let Some((here, theirs)) = done else {
                        assert!(!runs_here(), "{rows} rows, inner {inner}: refused");
                        eprintln!(
                            "row_product: kernels not run here (no AVX2 and FMA, or \
                             ROSETTA_ROW_PRODUCT=gemm)"
                        );
                        return;
                    };
                    assert_eq!(here, theirs, "{rows} rows, inner {inner}, {columns:?}");
                }
            }
        }
    }

    /// The shapes `gemm` sums another way are left to it: an inner dimension of 1 or 2, one
    /// column of output, a weight flipped (its rows backwards) or with rows 1 apart, more rows
    /// than [`MAX_ROWS`].
    #[test]
    fn leaves_to_gemm_what_gemm_sums_another_way() {
        let mut next = values(7);
        for rows in [1, 2] {
            for inner in [1, 2] {
                assert!(both(rows, inner, (8, 0, 8), false, &mut next).is_none());
            }
            assert!(both(rows, 16, (8, 0, 1), false, &mut next).is_none());
            assert!(both(rows, 16, (8, 0, 8), true, &mut next).is_none());
        }
        assert!(both(MAX_ROWS + 1, 16, (8, 0, 8), false, &mut next).is_none());
        let mut dst = [f32::NAN; 16];
        let weight = [1.0f32; 16];
        let transposed = Operands {
            x: weight.as_ptr(),
            x_row: 4,
            x_column: 1,
            rows: 1,
            weight: weight.as_ptr(),
            weight_row: 1,
            inner: 4,
            width: 4,
            dst: dst.as_mut_ptr(),
            dst_row: 4,
        };
        // SAFETY: refused before any pointer is read (and within `weight` and `dst` anyway).
        assert!(!unsafe { product(transposed) });
    }

    /// All-zero sums keep the sign `gemm` gives them: a weight of zeros by `x` of −1, −0 for
    /// one row (its plain first product), +0 for two (its sums from +0).
    #[test]
    fn gives_a_zero_sum_the_sign_gemm_gives_it() {
        for rows in [1, 2] {
            // The weight's 3 × 8 values first, then `x`'s.
            let mut count = 0;
            let mut next = move || {
                count += 1;
                if count <= 3 * 8 { 0.0 } else { -1.0 }
            };
            let Some((here, theirs)) = both(rows, 3, (8, 0, 8), false, &mut next) else {
                assert!(!runs_here(), "{rows} rows: refused");
                return;
            };
            assert_eq!(here, theirs, "{rows} rows");
            let zero = if rows == 1 {
                (-0.0f32).to_bits()
            } else {
                0.0f32.to_bits()
            };
            for row in here.chunks(10) {
                assert!(
                    row[..8].iter().all(|bits| *bits == zero),
                    "{rows} rows: {row:x?}"
                );
            }
        }
    }
}
