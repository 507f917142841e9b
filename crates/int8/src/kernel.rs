//! The integer products: unsigned 8-bit rows times signed 8-bit weight panels, summed exactly
//! in 32-bit integers, on the best instruction set the CPU has.
//!
//! The weight is stored in **panels** of [`PANEL`] columns. A panel holds, for each **group**
//! of [`GROUP`] consecutive inner positions, its 16 columns' 4 bytes side by side: 64 bytes,
//! the operand of one AVX-512 VNNI `vpdpbusd`, which multiplies 4 unsigned bytes of a row by 4
//! signed bytes of each of 16 columns and adds each column's four products to its 32-bit sum.
//! The inner length is padded to whole groups with zero weights, the columns to whole panels.
//!
//! Four kernels compute the same sums, to the last bit (integer arithmetic, no rounding, no
//! overflow: at most 255 · 127 in magnitude per product, so an inner length up to 66,000 sums
//! within 32 bits): [`Kernel::Amx`] (Intel AMX's tile products, inline assembly),
//! [`Kernel::Avx512Vnni`], [`Kernel::Avx2`] (`vpmaddwd` on bytes widened to 16 bits, for x86-64
//! CPUs without VNNI) and [`Kernel::Portable`] (plain Rust, for every other target, WebAssembly
//! included).
//! [`Kernel::best`] picks one at run time; the tests run all that the CPU has.
//!
//! The workspace denies unsafe code; this file is the exception it names (Cargo.toml): the
//! x86-64 kernels call `#[target_feature]` functions, only after [`Kernel::is_available`] has
//! checked the CPU, and load through pointers, each unsafe block with the bounds that keep its
//! loads inside the operands written beside it (asserted once in [`sums`]).
#![allow(unsafe_code)]

use std::mem::MaybeUninit;
use std::ops::Range;

/// Columns per panel: one 512-bit vector of 32-bit sums.
pub(crate) const PANEL: usize = 16;
/// Inner positions per group: the bytes `vpdpbusd` multiplies and sums into one 32-bit lane.
pub(crate) const GROUP: usize = 4;
/// Bytes of one group of one panel.
pub(crate) const PANEL_GROUP_BYTES: usize = PANEL * GROUP;

/// An implementation of the integer products.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Intel AMX's `tdpbusd` (Sapphire Rapids and later, on Linux, which must grant the
    /// process the tile registers), one 16 × 64 by 64 × 16 product per instruction, for blocks
    /// of 32 rows whose inner length is a multiple of 64; the rest of a product (fewer rows,
    /// a last odd panel) on [`Kernel::Avx512Vnni`].
    Amx,
    /// AVX-512 with VNNI's `vpdpbusd` (Intel Cascade Lake and later, AMD Zen 4 and later).
    Avx512Vnni,
    /// AVX2's `vpmaddwd` on bytes widened to 16 bits (x86-64 CPUs without AVX-512 VNNI).
    Avx2,
    /// Plain Rust, compiled for any target.
    Portable,
}

impl Kernel {
    /// All kernels, fastest first.
    pub const ALL: [Kernel; 4] = [
        Kernel::Amx,
        Kernel::Avx512Vnni,
        Kernel::Avx2,
        Kernel::Portable,
    ];

    /// Whether this CPU runs the kernel.
    pub fn is_available(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            Kernel::Amx => Kernel::Avx512Vnni.is_available() && amx::available(),
            #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
            Kernel::Amx => false,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Avx512Vnni | Kernel::Avx2 => false,
        }
    }

    /// The kernel products run on (chosen once): the one `ROSETTA_INT8_KERNEL` names (`amx`,
    /// `avx512-vnni`, `avx2`, `portable`) when this CPU runs it, else the fastest this CPU runs.
    /// The variable is for measuring one kernel against another (the same bits on each); a
    /// name that is unknown or does not run here is ignored.
    pub fn best() -> Kernel {
        static BEST: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
        *BEST.get_or_init(|| {
            let chosen = std::env::var("ROSETTA_INT8_KERNEL")
                .ok()
                .and_then(|name| Kernel::named(&name))
                .filter(|kernel| kernel.is_available());
            chosen.unwrap_or_else(|| {
                Kernel::ALL
                    .into_iter()
                    .find(|kernel| kernel.is_available())
                    .unwrap_or(Kernel::Portable)
            })
        })
    }

    /// The kernel `name` names (`amx`, `avx512-vnni`, `avx2`, `portable`).
    pub fn named(name: &str) -> Option<Kernel> {
        Kernel::ALL.into_iter().find(|kernel| kernel.name() == name)
    }

    /// The kernel's name, as [`named`](Self::named) takes it.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Amx => "amx",
            Kernel::Avx512Vnni => "avx512-vnni",
            Kernel::Avx2 => "avx2",
            Kernel::Portable => "portable",
        }
    }
}

/// The scale of values whose largest magnitude is `peak` (`peak / 127`) and its inverse; `(0,
/// 0)`, quantizing to zeros, for a peak of 0, infinity or NaN, or one so small that the inverse
/// overflows.
#[inline(always)]
pub(crate) fn scale_and_inverse(peak: f32) -> (f32, f32) {
    let scale = peak / LEVELS as f32;
    let inverse = 1.0 / scale;
    if peak > 0.0 && peak.is_finite() && inverse.is_finite() {
        (scale, inverse)
    } else {
        (0.0, 0.0)
    }
}

/// The largest magnitude of a quantized value: symmetric, so that -x quantizes to -q(x).
pub(crate) const LEVELS: i32 = 127;

/// Activations are stored as unsigned bytes `q + 128` (what `vpdpbusd` multiplies); the
/// weight's column sums times this offset take it back out.
pub(crate) const ROW_OFFSET: i32 = 128;

/// `v` (at most 127 in magnitude, up to rounding) to the nearest integer, halves away from zero
/// (up to the rounding of `v ± 0.5`: 0.49999997 gives 1, in every kernel alike), clamped to ±127
/// (NaN to -127). Written so that it vectorizes: `f32::round` is a library call
/// on baseline x86-64, and a saturating `as i32` is converted lane by lane.
#[inline(always)]
pub(crate) fn rounded(v: f32) -> i32 {
    let limit = LEVELS as f32;
    // `max` then `min` take NaN to -127 and the rest into [-127, 127].
    let clamped = (v + 0.5f32.copysign(v)).max(-limit).min(limit);
    // SAFETY: `clamped` is finite and within i32's range.
    unsafe { clamped.to_int_unchecked::<i32>() }
}

/// The operands of [`product`]: `rows` rows of `groups` groups of unsigned bytes, and a weight
/// of panels of `groups` groups (see the module documentation).
pub(crate) struct Operands<'a> {
    /// `rows × groups × GROUP` bytes, row after row.
    pub rows_bytes: &'a [u8],
    /// The number of rows.
    pub rows: usize,
    /// Groups per row and per panel.
    pub groups: usize,
    /// `panels × groups × PANEL_GROUP_BYTES` bytes, panel after panel.
    pub panels_bytes: &'a [i8],
}

/// How the integer sums become floats: `(sum - offsets[c]) · (row_scales[r] · scales[c]) +
/// bias[c]`, the same operations in the same order in every kernel (no fused multiply-add), so
/// that all give the same bits.
pub(crate) struct Epilogue<'a> {
    /// Per row.
    pub row_scales: &'a [f32],
    /// Per column, padded to whole panels.
    pub offsets: &'a [i32],
    /// Per column, padded to whole panels.
    pub scales: &'a [f32],
    /// Per column, padded to whole panels.
    pub bias: &'a [f32],
    /// The real columns (the rest of the last panel is padding).
    pub columns: usize,
}

impl Epilogue<'_> {
    /// The floats of one row's sums over one panel into `out` (the real columns only).
    #[inline(always)]
    fn apply(&self, row: usize, panel: usize, sums: &[i32; PANEL], out: &mut [MaybeUninit<f32>]) {
        let first = panel * PANEL;
        let lanes = first..first + PANEL;
        let (offsets, scales, bias) = (
            &self.offsets[lanes.clone()],
            &self.scales[lanes.clone()],
            &self.bias[lanes],
        );
        let row_scale = self.row_scales[row];
        let mut values = [0.0f32; PANEL];
        for lane in 0..PANEL {
            values[lane] = sums[lane].wrapping_sub(offsets[lane]) as f32
                * (row_scale * scales[lane])
                + bias[lane];
        }
        let real = PANEL.min(self.columns - first);
        if real == PANEL {
            out[..PANEL].write_copy_of_slice(&values);
        } else {
            out[..real].write_copy_of_slice(&values[..real]);
        }
    }
}

/// `rows` times the columns of `panels`, through `epilogue`, into `out`: `rows × width` floats
/// row after row, `width` the real columns of `panels`, every one written (none read: `out` may
/// start uninitialized).
///
/// # Panics
/// If `kernel` is not [available](Kernel::is_available) or the operands' lengths do not match
/// their sizes (both are the callers' invariants, not input).
pub(crate) fn product(
    kernel: Kernel,
    operands: &Operands<'_>,
    epilogue: &Epilogue<'_>,
    panels: Range<usize>,
    out: &mut [MaybeUninit<f32>],
) {
    let Operands {
        rows_bytes,
        rows,
        groups,
        panels_bytes,
    } = *operands;
    assert!(kernel.is_available(), "{kernel:?} does not run on this CPU");
    assert_eq!(rows_bytes.len(), rows * groups * GROUP, "row bytes");
    assert!(
        panels.end * groups * PANEL_GROUP_BYTES <= panels_bytes.len(),
        "panel bytes"
    );
    assert!(
        panels.end * PANEL <= epilogue.offsets.len(),
        "padded columns"
    );
    assert!(
        panels.end * PANEL <= epilogue.scales.len(),
        "padded columns"
    );
    assert!(panels.end * PANEL <= epilogue.bias.len(), "padded columns");
    assert_eq!(epilogue.row_scales.len(), rows, "row scales");
    let first = (panels.start * PANEL).min(epilogue.columns);
    let width = (panels.end * PANEL).min(epilogue.columns) - first;
    assert_eq!(out.len(), rows * width, "output");
    let shape = Shape { first, width };
    match kernel {
        Kernel::Portable => portable::product(operands, epilogue, panels, shape, out),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU runs the kernel (asserted above) and the lengths match (asserted).
        Kernel::Avx512Vnni => unsafe { avx512::product(operands, epilogue, panels, shape, out) },
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        // SAFETY: as above (AMX implies AVX-512 VNNI, checked by `is_available`).
        Kernel::Amx => unsafe { amx::product(operands, epilogue, panels, shape, out) },
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        Kernel::Amx => unreachable!("not available off x86-64 Linux"),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Kernel::Avx2 => unsafe { avx2::product(operands, epilogue, panels, shape, out) },
        #[cfg(not(target_arch = "x86_64"))]
        Kernel::Avx512Vnni | Kernel::Avx2 => unreachable!("not available off x86-64"),
    }
}

/// Where a product's output columns start and how many there are per row.
#[derive(Clone, Copy)]
struct Shape {
    first: usize,
    width: usize,
}

impl Shape {
    /// Where row `row`'s values of panel `panel` start in the output.
    #[inline(always)]
    fn at(self, row: usize, panel: usize) -> usize {
        row * self.width + panel * PANEL - self.first
    }
}

/// Quantizes `rows` rows of `inner` values: row `r`'s scale (its largest magnitude over 127, 0
/// for a row of zeros or one holding an infinity or NaN, which quantizes to zeros) into
/// `scales[r]`, its bytes `round(x / scale) + 128` into `bytes` (`groups × GROUP` per row, the
/// padding left as it is). Compiled for the kernel's instruction set; the same bytes on each.
pub(crate) fn quantize_rows(
    kernel: Kernel,
    values: &[f32],
    inner: usize,
    bytes: &mut [u8],
    scales: &mut [f32],
) {
    assert!(kernel.is_available(), "{kernel:?} does not run on this CPU");
    match kernel {
        Kernel::Portable => quantize_rows_body(values, inner, bytes, scales),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has the instruction set (asserted above).
        Kernel::Avx512Vnni | Kernel::Amx => unsafe {
            avx512::quantize_rows(values, inner, bytes, scales)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Kernel::Avx2 => unsafe { avx2::quantize_rows(values, inner, bytes, scales) },
        #[cfg(not(target_arch = "x86_64"))]
        Kernel::Amx | Kernel::Avx512Vnni | Kernel::Avx2 => unreachable!("not available off x86-64"),
    }
}

#[inline(always)]
fn quantize_rows_body(values: &[f32], inner: usize, bytes: &mut [u8], scales: &mut [f32]) {
    if inner == 0 {
        scales.fill(0.0);
        return;
    }
    let stored_len = bytes.len() / scales.len().max(1);
    for ((row, stored), scale) in values
        .chunks_exact(inner)
        .zip(bytes.chunks_exact_mut(stored_len.max(1)))
        .zip(scales.iter_mut())
    {
        // The largest magnitude as the largest bit pattern without the sign: the same order
        // for every float but NaN, and a reduction that vectorizes (`f32::max` does not).
        let peak = f32::from_bits(
            row.iter()
                .map(|x| x.to_bits() & 0x7fff_ffff)
                .max()
                .unwrap_or(0),
        );
        let (row_scale, inverse) = scale_and_inverse(peak);
        *scale = row_scale;
        if row_scale == 0.0 {
            // Zeros, whatever the row holds (an infinity times 0 would be NaN).
            stored.fill(ROW_OFFSET as u8);
            continue;
        }
        for (byte, &x) in stored.iter_mut().zip(row) {
            // -127..=127 + 128: no overflow (wrapping, so that no check stops vectorizing).
            *byte = rounded(x * inverse).wrapping_add(ROW_OFFSET) as u8;
        }
    }
}

mod portable {
    use super::*;

    pub(super) fn product(
        operands: &Operands<'_>,
        epilogue: &Epilogue<'_>,
        panels: Range<usize>,
        shape: Shape,
        out: &mut [MaybeUninit<f32>],
    ) {
        let groups = operands.groups;
        let row_len = groups * GROUP;
        let panel_len = groups * PANEL_GROUP_BYTES;
        for panel in panels {
            let weight = &operands.panels_bytes[panel * panel_len..(panel + 1) * panel_len];
            for row in 0..operands.rows {
                let bytes = &operands.rows_bytes[row * row_len..(row + 1) * row_len];
                let mut acc = [0i32; PANEL];
                for (four, block) in bytes
                    .chunks_exact(GROUP)
                    .zip(weight.chunks_exact(PANEL_GROUP_BYTES))
                {
                    for (sum, column) in acc.iter_mut().zip(block.chunks_exact(GROUP)) {
                        // Products of at most 255 · 127 in magnitude: no overflow for inner
                        // lengths up to 66,000 (wrapping, so that no check stops vectorizing).
                        *sum = four.iter().zip(column).fold(*sum, |sum, (&a, &b)| {
                            sum.wrapping_add(i32::from(a).wrapping_mul(i32::from(b)))
                        });
                    }
                }
                epilogue.apply(row, panel, &acc, &mut out[shape.at(row, panel)..]);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::*;

    /// Rows per tile.
    const ROWS: usize = 4;
    /// Panels per tile: 4 × 4 accumulators of 16 lanes.
    const PANELS: usize = 4;
    /// Rows per block (see [`product`]): 32 rows' sums of 4 panels are 8 KiB of output.
    const BLOCK_ROWS: usize = 32;

    /// [`quantize_rows`](super::quantize_rows) compiled for AVX-512.
    ///
    /// # Safety
    /// The CPU has AVX-512 F and BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn quantize_rows(
        values: &[f32],
        inner: usize,
        bytes: &mut [u8],
        scales: &mut [f32],
    ) {
        quantize_rows_body(values, inner, bytes, scales);
    }

    /// # Safety
    /// The CPU has AVX-512 F, BW and VNNI; the operands' lengths match their sizes (asserted
    /// by [`super::product`]).
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn product(
        operands: &Operands<'_>,
        epilogue: &Epilogue<'_>,
        panels: Range<usize>,
        shape: Shape,
        out: &mut [MaybeUninit<f32>],
    ) {
        // SAFETY: as this function's.
        unsafe { product_rows(operands, epilogue, 0..operands.rows, panels, shape, out) };
    }

    /// [`product`] of the rows `rows` only.
    ///
    /// # Safety
    /// As [`product`], and `rows` lies inside the operands' rows.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn product_rows(
        operands: &Operands<'_>,
        epilogue: &Epilogue<'_>,
        rows: Range<usize>,
        panels: Range<usize>,
        shape: Shape,
        out: &mut [MaybeUninit<f32>],
    ) {
        // Blocks of rows, each across all the panels: the block's output rows are written
        // panel after panel while they stay in cache, and the weight is read once per block.
        let mut block = rows.start;
        while block < rows.end {
            let block_end = (block + BLOCK_ROWS).min(rows.end);
            // SAFETY: as this function's.
            unsafe {
                product_block(
                    operands,
                    epilogue,
                    block..block_end,
                    panels.clone(),
                    shape,
                    out,
                );
            }
            block = block_end;
        }
    }

    /// [`product`] of the rows `rows` (at most [`BLOCK_ROWS`]).
    ///
    /// # Safety
    /// As [`product`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn product_block(
        operands: &Operands<'_>,
        epilogue: &Epilogue<'_>,
        rows: Range<usize>,
        panels: Range<usize>,
        shape: Shape,
        out: &mut [MaybeUninit<f32>],
    ) {
        let mut panel = panels.start;
        while panel < panels.end {
            let tile_panels = (panels.end - panel).min(PANELS);
            let mut row = rows.start;
            while row < rows.end {
                let tile_rows = (rows.end - row).min(ROWS);
                // SAFETY: the tile lies inside the operands and the output (the loops' bounds
                // and the lengths asserted by `super::product`).
                unsafe {
                    macro_rules! tile {
                        ($($r:literal, $p:literal);*) => {
                            match (tile_rows, tile_panels) {
                                $(($r, $p) => tile::<$r, $p>(operands, epilogue, row, panel, shape, out),)*
                                _ => unreachable!("tiles are 1-4 rows by 1-4 panels"),
                            }
                        };
                    }
                    if (tile_rows, tile_panels) == (ROWS, PANELS) {
                        full_tile(operands, epilogue, row, panel, shape, out);
                    } else {
                        tile!(1,1; 1,2; 1,3; 1,4; 2,1; 2,2; 2,3; 2,4; 3,1; 3,2; 3,3; 3,4; 4,1; 4,2; 4,3);
                    }
                }
                row += tile_rows;
            }
            panel += tile_panels;
        }
    }

    /// [`tile`] of 4 rows and 4 panels, its 16 accumulators named one by one: the array form
    /// kept moving them between registers and the stack in the inner loop (105 GMAC/s on
    /// 320 × 256 × 8,000, one thread, Intel Xeon with AVX-512).
    ///
    /// # Safety
    /// As [`tile`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    unsafe fn full_tile(
        operands: &Operands<'_>,
        epilogue: &Epilogue<'_>,
        row: usize,
        panel: usize,
        shape: Shape,
        out: &mut [MaybeUninit<f32>],
    ) {
        let groups = operands.groups;
        let row_len = groups * GROUP;
        let panel_len = groups * PANEL_GROUP_BYTES;
        // The tile's first row and panel; the loads below stay inside the operands: rows
        // `row..row + 4` and panels `panel..panel + 4` exist (the callers' bounds), and each
        // reads group `group < groups` of its row or panel.
        assert!(
            (row + 4) * row_len <= operands.rows_bytes.len(),
            "tile rows"
        );
        assert!(
            (panel + 4) * panel_len <= operands.panels_bytes.len(),
            "tile panels"
        );
        // One pointer per row and per panel, each moved on by a group per step (the form that
        // keeps the loop's pointers in registers).
        let mut x0 = operands.rows_bytes.as_ptr().wrapping_add(row * row_len);
        let mut x1 = x0.wrapping_add(row_len);
        let mut x2 = x1.wrapping_add(row_len);
        let mut x3 = x2.wrapping_add(row_len);
        let mut w0 = operands
            .panels_bytes
            .as_ptr()
            .wrapping_add(panel * panel_len);
        let mut w1 = w0.wrapping_add(panel_len);
        let mut w2 = w1.wrapping_add(panel_len);
        let mut w3 = w2.wrapping_add(panel_len);
        let zero = _mm512_setzero_si512();
        let (mut c00, mut c01, mut c02, mut c03) = (zero, zero, zero, zero);
        let (mut c10, mut c11, mut c12, mut c13) = (zero, zero, zero, zero);
        let (mut c20, mut c21, mut c22, mut c23) = (zero, zero, zero, zero);
        let (mut c30, mut c31, mut c32, mut c33) = (zero, zero, zero, zero);
        for _ in 0..groups {
            // SAFETY: inside the operands (asserted above): each pointer reads its row's or
            // panel's group `g` at step `g < groups`.
            unsafe {
                let b0 = _mm512_loadu_si512(w0.cast());
                let b1 = _mm512_loadu_si512(w1.cast());
                let b2 = _mm512_loadu_si512(w2.cast());
                let b3 = _mm512_loadu_si512(w3.cast());
                let a = _mm512_set1_epi32(x0.cast::<i32>().read_unaligned());
                c00 = _mm512_dpbusd_epi32(c00, a, b0);
                c01 = _mm512_dpbusd_epi32(c01, a, b1);
                c02 = _mm512_dpbusd_epi32(c02, a, b2);
                c03 = _mm512_dpbusd_epi32(c03, a, b3);
                let a = _mm512_set1_epi32(x1.cast::<i32>().read_unaligned());
                c10 = _mm512_dpbusd_epi32(c10, a, b0);
                c11 = _mm512_dpbusd_epi32(c11, a, b1);
                c12 = _mm512_dpbusd_epi32(c12, a, b2);
                c13 = _mm512_dpbusd_epi32(c13, a, b3);
                let a = _mm512_set1_epi32(x2.cast::<i32>().read_unaligned());
                c20 = _mm512_dpbusd_epi32(c20, a, b0);
                c21 = _mm512_dpbusd_epi32(c21, a, b1);
                c22 = _mm512_dpbusd_epi32(c22, a, b2);
                c23 = _mm512_dpbusd_epi32(c23, a, b3);
                let a = _mm512_set1_epi32(x3.cast::<i32>().read_unaligned());
                c30 = _mm512_dpbusd_epi32(c30, a, b0);
                c31 = _mm512_dpbusd_epi32(c31, a, b1);
                c32 = _mm512_dpbusd_epi32(c32, a, b2);
                c33 = _mm512_dpbusd_epi32(c33, a, b3);
            }
            x0 = x0.wrapping_add(GROUP);
            x1 = x1.wrapping_add(GROUP);
            x2 = x2.wrapping_add(GROUP);
            x3 = x3.wrapping_add(GROUP);
            w0 = w0.wrapping_add(PANEL_GROUP_BYTES);
            w1 = w1.wrapping_add(PANEL_GROUP_BYTES);
            w2 = w2.wrapping_add(PANEL_GROUP_BYTES);
            w3 = w3.wrapping_add(PANEL_GROUP_BYTES);
        }
        let sums = [
            [c00, c01, c02, c03],
            [c10, c11, c12, c13],
            [c20, c21, c22, c23],
            [c30, c31, c32, c33],
        ];
        // SAFETY: as `tile`'s epilogue.
        unsafe { store(epilogue, row, panel, shape, out, &sums) };
    }

    /// The floats of a tile's sums (`sums[r][p]`: row `row + r`, panel `panel + p`) through
    /// `epilogue` into `out`.
    ///
    /// # Safety
    /// As [`product`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    pub(super) unsafe fn store<const R: usize, const P: usize>(
        epilogue: &Epilogue<'_>,
        row: usize,
        panel: usize,
        shape: Shape,
        out: &mut [MaybeUninit<f32>],
        sums: &[[__m512i; P]; R],
    ) {
        for (r, acc) in sums.iter().enumerate() {
            let row_scale = _mm512_set1_ps(epilogue.row_scales[row + r]);
            for (p, &acc) in acc.iter().enumerate() {
                let first = (panel + p) * PANEL;
                let lanes = first..first + PANEL;
                // SAFETY: the padded per-column vectors hold whole panels (asserted).
                let (offsets, scales, bias) = unsafe {
                    (
                        _mm512_loadu_si512(epilogue.offsets[lanes.clone()].as_ptr().cast()),
                        _mm512_loadu_ps(epilogue.scales[lanes.clone()].as_ptr()),
                        _mm512_loadu_ps(epilogue.bias[lanes].as_ptr()),
                    )
                };
                let values = _mm512_add_ps(
                    _mm512_mul_ps(
                        _mm512_cvtepi32_ps(_mm512_sub_epi32(acc, offsets)),
                        _mm512_mul_ps(row_scale, scales),
                    ),
                    bias,
                );
                let real = PANEL.min(epilogue.columns - first);
                let at = &mut out[shape.at(row + r, panel + p)..];
                assert!(at.len() >= real, "output row");
                // SAFETY: `real` values fit at `at` (asserted).
                unsafe {
                    if real == PANEL {
                        _mm512_storeu_ps(at.as_mut_ptr().cast::<f32>(), values);
                    } else {
                        _mm512_mask_storeu_ps(
                            at.as_mut_ptr().cast::<f32>(),
                            (1u16 << real) - 1,
                            values,
                        );
                    }
                }
            }
        }
    }

    /// Rows `row..row + R` times panels `panel..panel + P`, through `epilogue`, into `out`.
    ///
    /// # Safety
    /// As [`product`], and the tile lies inside the operands and the output.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    unsafe fn tile<const R: usize, const P: usize>(
        operands: &Operands<'_>,
        epilogue: &Epilogue<'_>,
        row: usize,
        panel: usize,
        shape: Shape,
        out: &mut [MaybeUninit<f32>],
    ) {
        let groups = operands.groups;
        let row_len = groups * GROUP;
        let panel_len = groups * PANEL_GROUP_BYTES;
        let a: [*const u8; R] =
            std::array::from_fn(|r| operands.rows_bytes[(row + r) * row_len..].as_ptr());
        let b: [*const i8; P] =
            std::array::from_fn(|p| operands.panels_bytes[(panel + p) * panel_len..].as_ptr());
        let mut acc = [[_mm512_setzero_si512(); P]; R];
        for group in 0..groups {
            let mut weights = [_mm512_setzero_si512(); P];
            for (weight, b) in weights.iter_mut().zip(&b) {
                // SAFETY: group `group` of each panel of the tile is inside `panels_bytes`.
                *weight = unsafe { _mm512_loadu_si512(b.add(group * PANEL_GROUP_BYTES).cast()) };
            }
            for (acc, a) in acc.iter_mut().zip(&a) {
                // SAFETY: group `group` of each row of the tile is inside `rows_bytes`.
                let four = unsafe { a.add(group * GROUP).cast::<i32>().read_unaligned() };
                let four = _mm512_set1_epi32(four);
                for (acc, &weight) in acc.iter_mut().zip(&weights) {
                    *acc = _mm512_dpbusd_epi32(*acc, four, weight);
                }
            }
        }
        // SAFETY: the tile lies inside the output (the callers' bounds).
        unsafe { store(epilogue, row, panel, shape, out, &acc) };
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod amx {
    use std::arch::asm;
    use std::arch::x86_64::*;

    use super::*;

    /// Rows per block: two 16-row tiles of the input (the last block of a product may have
    /// 17-31, its second tile fewer rows; fewer than 17 rows go to the VNNI kernel).
    const ROWS: usize = 32;
    /// Rows per tile.
    const TILE_ROWS: usize = 16;
    /// Groups per tile step: a 16 × 64-byte input tile and 16 groups of a panel.
    const CHUNK_GROUPS: usize = 16;

    /// The tile configuration (palette 1): eight tiles of 16 rows of 64 bytes. Tiles 0-3 hold
    /// the 32-bit sums of two row tiles by two panels, 4-5 the two row tiles' bytes, 6-7 the two
    /// panels' groups.
    #[repr(C, align(64))]
    struct TileConfig {
        palette: u8,
        start_row: u8,
        reserved: [u8; 14],
        bytes_per_row: [u16; 16],
        rows: [u8; 16],
    }

    /// The configuration for blocks whose second row tile has `second` rows (1-16; the first
    /// always has 16): tiles 2, 3 (its sums) and 5 (its bytes) have `second` rows.
    fn config(second: u8) -> TileConfig {
        let mut bytes_per_row = [0u16; 16];
        let mut rows = [0u8; 16];
        for tile in 0..8 {
            bytes_per_row[tile] = 64;
            rows[tile] = if matches!(tile, 2 | 3 | 5) {
                second
            } else {
                16
            };
        }
        TileConfig {
            palette: 1,
            start_row: 0,
            reserved: [0; 14],
            bytes_per_row,
            rows,
        }
    }

    /// Runs `tilerelease` when dropped.
    struct Release;

    impl Drop for Release {
        fn drop(&mut self) {
            // SAFETY: only made where AMX is available; releasing tiles that are not
            // configured is allowed.
            unsafe { asm!("tilerelease", options(nostack, nomem, preserves_flags)) };
        }
    }

    /// Whether the CPU has AMX-TILE and AMX-INT8 and Linux grants this process the tile data
    /// (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`, asked once).
    pub(super) fn available() -> bool {
        static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVAILABLE.get_or_init(|| {
            // CPUID leaf 7, sub-leaf 0: EDX bit 24 AMX-TILE, bit 25 AMX-INT8.
            #[allow(unused_unsafe)] // `__cpuid_count` is safe on newer compilers.
            // SAFETY: CPUID exists on every x86-64 CPU.
            let leaf = unsafe { __cpuid_count(7, 0) };
            let tiles = leaf.edx & (1 << 24) != 0 && leaf.edx & (1 << 25) != 0;
            tiles && request_tile_data()
        })
    }

    /// Asks Linux for the AMX tile state (`arch_prctl` 0x1023 = `ARCH_REQ_XCOMP_PERM`, feature
    /// 18 = `XFEATURE_XTILEDATA`); whether it was granted.
    fn request_tile_data() -> bool {
        const SYS_ARCH_PRCTL: i64 = 158;
        const ARCH_REQ_XCOMP_PERM: i64 = 0x1023;
        const XFEATURE_XTILEDATA: i64 = 18;
        let result: i64;
        // SAFETY: the system call takes two integers and changes only this process's
        // permitted extended state; it clobbers rcx and r11.
        unsafe {
            asm!(
                "syscall",
                inlateout("rax") SYS_ARCH_PRCTL => result,
                in("rdi") ARCH_REQ_XCOMP_PERM,
                in("rsi") XFEATURE_XTILEDATA,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack)
            );
        }
        result == 0
    }

    /// # Safety
    /// The CPU has AMX (granted) and AVX-512 VNNI; the operands' lengths match their sizes.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn product(
        operands: &Operands<'_>,
        epilogue: &Epilogue<'_>,
        panels: Range<usize>,
        shape: Shape,
        out: &mut [MaybeUninit<f32>],
    ) {
        let groups = operands.groups;
        // Blocks of 32 rows and a last one of 17-31; a last 1-16 rows go to the VNNI kernel.
        let tail = operands.rows % ROWS;
        let amx_rows = if tail <= TILE_ROWS {
            operands.rows - tail
        } else {
            operands.rows
        };
        let pairs = panels.len() / 2;
        if groups == 0 || !groups.is_multiple_of(CHUNK_GROUPS) || amx_rows == 0 || pairs == 0 {
            // SAFETY: as this function's.
            unsafe { avx512::product(operands, epilogue, panels, shape, out) };
            return;
        }
        let row_len = groups * GROUP;
        let panel_len = groups * PANEL_GROUP_BYTES;
        let paired = panels.start..panels.start + 2 * pairs;
        let mut sums = [[0i32; PANEL]; 4 * 16];
        // Releases the tiles however this function ends (a panic included), so that the
        // thread does not keep their state.
        let _release = Release;
        let mut configured = 0;
        let mut row = 0;
        while row < amx_rows {
            let block_rows = (amx_rows - row).min(ROWS);
            let second = block_rows - TILE_ROWS;
            if second != configured {
                let config = config(second as u8);
                // SAFETY: a valid palette-1 configuration; the tiles are released below.
                unsafe { asm!("ldtilecfg [{}]", in(reg) &config, options(nostack)) };
                configured = second;
            }
            let mut panel = paired.start;
            while panel < paired.end {
                let a = operands.rows_bytes[row * row_len..(row + block_rows) * row_len].as_ptr();
                let b = operands.panels_bytes[panel * panel_len..(panel + 2) * panel_len].as_ptr();
                // SAFETY: every tile load reads its configured rows of 64 bytes inside the slices
                // above: rows `row..row + block_rows` (stride `row_len`, bytes `64c..64c + 64`
                // of each for chunk `c < chunks`, chunks ≥ 1; the second tile `second` rows from
                // row 16) and panels `panel, panel + 1` (16 groups from group `16c`, stride 64
                // bytes); the stores write 16 rows of 64 bytes each into `sums` (4 × 16 rows of
                // 16 sums), through pointers derived from the whole array.
                let chunks = groups / CHUNK_GROUPS;
                let sums_base = sums.as_mut_ptr().cast::<i32>();
                // One block from the zeroed sums to their store, so that nothing of the
                // compiler's can come between (it uses no tile register, and each is declared
                // clobbered); the loop steps through the chunks of 64 inner bytes.
                unsafe {
                    asm!(
                        "tilezero tmm0",
                        "tilezero tmm1",
                        "tilezero tmm2",
                        "tilezero tmm3",
                        "2:",
                        "tileloadd tmm4, [{x} + {row_len}*1]",
                        "tileloadd tmm5, [{x2} + {row_len}*1]",
                        "tileloadd tmm6, [{w} + {stride}*1]",
                        "tileloadd tmm7, [{w2} + {stride}*1]",
                        "tdpbusd tmm0, tmm4, tmm6",
                        "tdpbusd tmm1, tmm4, tmm7",
                        "tdpbusd tmm2, tmm5, tmm6",
                        "tdpbusd tmm3, tmm5, tmm7",
                        "add {x}, 64",
                        "add {x2}, 64",
                        "add {w}, 1024",
                        "add {w2}, 1024",
                        "dec {chunks}",
                        "jnz 2b",
                        "tilestored [{s0} + {out_stride}*1], tmm0",
                        "tilestored [{s1} + {out_stride}*1], tmm1",
                        "tilestored [{s2} + {out_stride}*1], tmm2",
                        "tilestored [{s3} + {out_stride}*1], tmm3",
                        x = inout(reg) a => _,
                        x2 = inout(reg) a.add(TILE_ROWS * row_len) => _,
                        row_len = in(reg) row_len,
                        w = inout(reg) b => _,
                        w2 = inout(reg) b.add(panel_len) => _,
                        stride = in(reg) PANEL_GROUP_BYTES,
                        chunks = inout(reg) chunks => _,
                        s0 = in(reg) sums_base,
                        s1 = in(reg) sums_base.add(16 * PANEL),
                        s2 = in(reg) sums_base.add(32 * PANEL),
                        s3 = in(reg) sums_base.add(48 * PANEL),
                        out_stride = in(reg) PANEL * 4,
                        out("tmm0") _,
                        out("tmm1") _,
                        out("tmm2") _,
                        out("tmm3") _,
                        out("tmm4") _,
                        out("tmm5") _,
                        out("tmm6") _,
                        out("tmm7") _,
                        options(nostack)
                    );
                }
                // sums[16 t + i]: tile t = 2 · (row tile) + (panel of the pair), its row i.
                let mut vectors = [[_mm512_setzero_si512(); 2]; ROWS];
                for (r, pair) in vectors.iter_mut().enumerate() {
                    for (p, vector) in pair.iter_mut().enumerate() {
                        let tile = 2 * (r / TILE_ROWS) + p;
                        // SAFETY: one row of 16 sums.
                        *vector = unsafe {
                            _mm512_loadu_si512(sums[16 * tile + r % TILE_ROWS].as_ptr().cast())
                        };
                    }
                }
                // SAFETY: the block lies inside the output (the loops' bounds).
                unsafe {
                    if block_rows == ROWS {
                        avx512::store(epilogue, row, panel, shape, out, &vectors);
                    } else {
                        store_rows(epilogue, row, block_rows, panel, shape, out, &vectors);
                    }
                }
                panel += 2;
            }
            row += block_rows;
        }
        // SAFETY: as this function's: the last odd panel of the rows done here, and the rows
        // left, all panels.
        unsafe {
            if amx_rows < operands.rows {
                avx512::product_rows(
                    operands,
                    epilogue,
                    amx_rows..operands.rows,
                    panels.clone(),
                    shape,
                    out,
                );
            }
            if paired.end < panels.end {
                avx512::product_rows(
                    operands,
                    epilogue,
                    0..amx_rows,
                    paired.end..panels.end,
                    shape,
                    out,
                );
            }
        }
    }

    /// [`avx512::store`] of the first `count` rows of `vectors` (a block of fewer than 32).
    ///
    /// # Safety
    /// As [`product`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn store_rows(
        epilogue: &Epilogue<'_>,
        row: usize,
        count: usize,
        panel: usize,
        shape: Shape,
        out: &mut [MaybeUninit<f32>],
        vectors: &[[__m512i; 2]; ROWS],
    ) {
        for (r, pair) in vectors.iter().enumerate().take(count) {
            // SAFETY: as this function's.
            unsafe { avx512::store::<1, 2>(epilogue, row + r, panel, shape, out, &[*pair]) };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::*;

    /// A value read at any address: a packed struct's field is moved by one unaligned load.
    /// `_mm_loadu_si128` and `read_unaligned` copy through a local with `copy_nonoverlapping`,
    /// whose overlap check (on in debug builds, this crate's: the dev profile keeps its debug
    /// assertions) kept the tile's loads in memory and ran the dev build's int8 decoding at
    /// less than half the release build's speed.
    #[repr(C, packed)]
    #[derive(Clone, Copy)]
    struct Unaligned<T>(T);

    /// The value at `at`.
    ///
    /// # Safety
    /// `at` must be valid for reading a `T` (at any alignment).
    #[inline(always)]
    unsafe fn read<T: Copy>(at: *const T) -> T {
        // SAFETY: the caller's contract; `Unaligned` may sit at any address.
        unsafe { (*at.cast::<Unaligned<T>>()).0 }
    }

    /// Rows per tile of half a panel: 6 × 2 accumulators, the half's 2 widened quarters and a
    /// broadcast row group in 15 of the 16 registers, so that each quarter widened serves 6 rows.
    const ROWS: usize = 6;
    /// Columns per tile of half a panel.
    const HALF: usize = PANEL / 2;
    /// Rows per block (see [`product`]): 32 rows' sums of a panel are 2 KiB of output.
    const BLOCK_ROWS: usize = 32;

    /// [`quantize_rows`](super::quantize_rows) compiled for AVX2.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn quantize_rows(
        values: &[f32],
        inner: usize,
        bytes: &mut [u8],
        scales: &mut [f32],
    ) {
        quantize_rows_body(values, inner, bytes, scales);
    }

    /// # Safety
    /// The CPU has AVX2; the operands' lengths match their sizes (asserted by
    /// [`super::product`]).
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn product(
        operands: &Operands<'_>,
        epilogue: &Epilogue<'_>,
        panels: Range<usize>,
        shape: Shape,
        out: &mut [MaybeUninit<f32>],
    ) {
        // The rows' bytes widened to 16 bits once, so that a step broadcasts a group's four
        // with one load (widening them in the loop cost as much as the products).
        let wide: Vec<u16> = operands.rows_bytes.iter().map(|&b| u16::from(b)).collect();
        // Blocks of rows, each across all the panels, as AVX-512's: the block's output rows
        // are written panel after panel while they stay in cache, the weight read once per
        // block.
        let mut block = 0;
        while block < operands.rows {
            let block_end = (block + BLOCK_ROWS).min(operands.rows);
            for panel in panels.clone() {
                let mut row = block;
                while row < block_end {
                    let tile_rows = (block_end - row).min(ROWS);
                    let mut sums = [[0i32; PANEL]; ROWS];
                    // SAFETY: the tile lies inside the operands (the loops' bounds); `wide`
                    // has the rows' layout.
                    unsafe {
                        match tile_rows {
                            6 => panel_tile::<6>(operands, &wide, row, panel, &mut sums),
                            5 => panel_tile::<5>(operands, &wide, row, panel, &mut sums),
                            4 => panel_tile::<4>(operands, &wide, row, panel, &mut sums),
                            3 => panel_tile::<3>(operands, &wide, row, panel, &mut sums),
                            2 => panel_tile::<2>(operands, &wide, row, panel, &mut sums),
                            _ => panel_tile::<1>(operands, &wide, row, panel, &mut sums),
                        }
                    }
                    for (r, sums) in sums.iter().take(tile_rows).enumerate() {
                        epilogue.apply(row + r, panel, sums, &mut out[shape.at(row + r, panel)..]);
                    }
                    row += tile_rows;
                }
            }
            block = block_end;
        }
    }

    /// The sums of rows `row..row + R` and panel `panel` into `out[r]`: from 3 rows half a
    /// panel at a time ([`tile`] with 2 quarters, each widened quarter serving the rows); one
    /// or two rows the whole panel at once (4 quarters: 4 sums in flight a row where half a
    /// panel would keep 2, which halved batch 1's speed).
    ///
    /// # Safety
    /// As [`tile`].
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn panel_tile<const R: usize>(
        operands: &Operands<'_>,
        wide: &[u16],
        row: usize,
        panel: usize,
        out: &mut [[i32; PANEL]; ROWS],
    ) {
        // SAFETY: as this function's.
        unsafe {
            if R >= 3 {
                tile::<R, 2>(operands, wide, row, panel, 0, out);
                tile::<R, 2>(operands, wide, row, panel, HALF, out);
            } else {
                tile::<R, 4>(operands, wide, row, panel, 0, out);
            }
        }
    }

    /// The sums of rows `row..row + R` and the `4 · Q` columns of panel `panel` from column
    /// `first` (0, or 8 for the second half) into `out[r][first..]`, the rows read from `wide`
    /// (`operands.rows_bytes` widened to 16 bits).
    ///
    /// # Safety
    /// As [`product`], and the tile lies inside the operands: `first + 4 · Q <= PANEL`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn tile<const R: usize, const Q: usize>(
        operands: &Operands<'_>,
        wide: &[u16],
        row: usize,
        panel: usize,
        first: usize,
        out: &mut [[i32; PANEL]; ROWS],
    ) {
        let groups = operands.groups;
        let row_len = groups * GROUP;
        let a: [*const u16; R] = std::array::from_fn(|r| wide[(row + r) * row_len..].as_ptr());
        let b =
            operands.panels_bytes[panel * groups * PANEL_GROUP_BYTES + first * GROUP..].as_ptr();
        // acc[r][q]: columns first + 4q..first + 4q + 4 of row r, each as two lanes (inner
        // positions 0-1, 2-3).
        let mut acc = [[_mm256_setzero_si256(); Q]; R];
        for group in 0..groups {
            let weights: [__m256i; Q] = std::array::from_fn(|q| {
                // SAFETY: quarter `q` from column `first` of the group (16 bytes) is inside
                // `panels_bytes`.
                _mm256_cvtepi8_epi16(unsafe {
                    read(
                        b.wrapping_add(group * PANEL_GROUP_BYTES + q * 16)
                            .cast::<__m128i>(),
                    )
                })
            });
            for (acc, a) in acc.iter_mut().zip(&a) {
                // SAFETY: group `group` of each row of the tile (four 16-bit values) is inside
                // `wide`.
                let four = unsafe { read(a.wrapping_add(group * GROUP).cast::<i64>()) };
                let four = _mm256_set1_epi64x(four);
                for (acc, &weight) in acc.iter_mut().zip(&weights) {
                    *acc = _mm256_add_epi32(*acc, _mm256_madd_epi16(four, weight));
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for (pair, acc) in acc.chunks_exact(2).enumerate() {
                // hadd pairs the lanes per 128-bit half: [c0 c1 c4 c5 | c2 c3 c6 c7]; the
                // permute puts the columns in order.
                let sums =
                    _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_hadd_epi32(acc[0], acc[1]));
                // SAFETY: `out[r]` holds 16 lanes, of which these 8 start at `first + 8 · pair`.
                unsafe {
                    _mm256_storeu_si256(out[r].as_mut_ptr().add(first + 8 * pair).cast(), sums);
                }
            }
        }
    }
}
