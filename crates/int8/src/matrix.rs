//! A linear map's weight and bias quantized to int8 per output column, and its product with
//! rows quantized to int8 per row when they arrive.

use std::mem::MaybeUninit;
use std::ops::Range;

use super::kernel::{
    self, Epilogue, GROUP, Kernel, Operands, PANEL, PANEL_GROUP_BYTES, ROW_OFFSET, rounded,
};

/// A `[inner, columns]` weight (Burn's `Linear` layout) and its bias, quantized for
/// [`product`](Self::product): each column `c` is `scale[c] · q[·, c]` with `q` in
/// `-127..=127`, `scale[c]` its largest magnitude over 127.
#[derive(Debug, Clone)]
pub struct Int8Matrix {
    inner: usize,
    columns: usize,
    groups: usize,
    /// The quantized weight in panels (see [`kernel`](super::kernel)).
    panels: Vec<i8>,
    /// Per column (padded to whole panels with 0).
    scales: Vec<f32>,
    /// Per column: `ROW_OFFSET · Σ_k q[k, c]`.
    offsets: Vec<i32>,
    /// Per column, 0 without a bias (padded with 0).
    bias: Vec<f32>,
}

/// Rows quantized to int8, each by its own largest magnitude, stored as unsigned bytes
/// (`q + 128`) in whole groups.
#[derive(Debug, Clone)]
pub struct QuantizedRows {
    rows: usize,
    groups: usize,
    bytes: Vec<u8>,
    scales: Vec<f32>,
}

impl QuantizedRows {
    /// Quantizes `values`, `rows × inner` row after row (with [`Kernel::best`]'s instruction
    /// set; every kernel gives the same bytes).
    ///
    /// # Panics
    /// If `values.len() != rows × inner`.
    pub fn new(values: &[f32], rows: usize, inner: usize) -> Self {
        Self::with_kernel(Kernel::best(), values, rows, inner)
    }

    /// [`new`](Self::new) compiled for `kernel`'s instruction set.
    ///
    /// # Panics
    /// If `values.len() != rows × inner` or `kernel` does not run on this CPU.
    pub fn with_kernel(kernel: Kernel, values: &[f32], rows: usize, inner: usize) -> Self {
        assert_eq!(values.len(), rows * inner, "{rows} rows of {inner}");
        let groups = inner.div_ceil(GROUP);
        let mut bytes = vec![ROW_OFFSET as u8; rows * groups * GROUP];
        let mut scales = vec![0.0f32; rows];
        kernel::quantize_rows(kernel, values, inner, &mut bytes, &mut scales);
        Self {
            rows,
            groups,
            bytes,
            scales,
        }
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
}

impl Int8Matrix {
    /// Quantizes `weight`, `inner × columns` row after row (Burn's `Linear` layout), and keeps
    /// `bias` (`columns` values) as it is.
    ///
    /// # Panics
    /// If the lengths do not match the sizes.
    pub fn new(weight: &[f32], inner: usize, columns: usize, bias: Option<&[f32]>) -> Self {
        assert_eq!(weight.len(), inner * columns, "{inner} × {columns} weight");
        let groups = inner.div_ceil(GROUP);
        let panels = columns.div_ceil(PANEL);
        let padded = panels * PANEL;
        let mut scales = vec![0.0f32; padded];
        for row in weight.chunks_exact(columns.max(1)) {
            for (peak, &w) in scales.iter_mut().zip(row) {
                *peak = peak.max(w.abs());
            }
        }
        for scale in &mut scales {
            *scale = kernel::scale_and_inverse(*scale).0;
        }
        let mut packed = vec![0i8; panels * groups * PANEL_GROUP_BYTES];
        let mut offsets = vec![0i32; padded];
        for k in 0..inner {
            let (group, position) = (k / GROUP, k % GROUP);
            for column in 0..columns {
                let scale = scales[column];
                // A nonzero scale has a finite inverse (`scale_and_inverse`); a zero one (a
                // column of zeros, or one holding an infinity or NaN) quantizes to zeros.
                let q = if scale > 0.0 {
                    rounded(weight[k * columns + column] * (1.0 / scale)) as i8
                } else {
                    0
                };
                let (panel, lane) = (column / PANEL, column % PANEL);
                packed[(panel * groups + group) * PANEL_GROUP_BYTES + lane * GROUP + position] = q;
                offsets[column] += ROW_OFFSET * i32::from(q);
            }
        }
        let mut padded_bias = vec![0.0f32; padded];
        if let Some(bias) = bias {
            assert_eq!(bias.len(), columns, "{columns} biases");
            padded_bias[..columns].copy_from_slice(bias);
        }
        Self {
            inner,
            columns,
            groups,
            panels: packed,
            scales,
            offsets,
            bias: padded_bias,
        }
    }

    /// The inner length (rows of the weight).
    pub fn inner(&self) -> usize {
        self.inner
    }

    /// The number of output columns.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// The number of panels of [`PANEL`] columns.
    pub fn panels(&self) -> usize {
        self.columns.div_ceil(PANEL)
    }

    /// The bytes this matrix holds (weights, scales, offsets, bias).
    pub fn size_bytes(&self) -> usize {
        self.panels.len() + 4 * (self.scales.len() + self.offsets.len() + self.bias.len())
    }

    /// The columns of panels `panels`, clipped to the real columns.
    pub fn panel_columns(&self, panels: Range<usize>) -> Range<usize> {
        (panels.start * PANEL).min(self.columns)..(panels.end * PANEL).min(self.columns)
    }

    /// `rows` times the columns of `panels`, plus the bias: `rows.rows() × width` values, row
    /// after row, `width` the number of those columns ([`panel_columns`](Self::panel_columns)).
    ///
    /// # Panics
    /// If `rows` has another inner length, `panels` reaches past the last panel or `kernel`
    /// does not run on this CPU.
    #[allow(unsafe_code)] // The output is not zero-filled first: `product_into` writes it all.
    pub fn product(&self, kernel: Kernel, rows: &QuantizedRows, panels: Range<usize>) -> Vec<f32> {
        let len = rows.rows * self.panel_columns(panels.clone()).len();
        let mut out = Vec::with_capacity(len);
        self.product_into(
            kernel,
            rows,
            0..rows.rows,
            panels,
            &mut out.spare_capacity_mut()[..len],
        );
        // SAFETY: `product_into` wrote every one of the `len` values.
        unsafe { out.set_len(len) };
        out
    }

    /// [`product`](Self::product) of the rows `row_range` of `rows` only, into `out`
    /// (`row_range.len() × width` values, every one written: `out` may start uninitialized, so
    /// that a product's output is not zero-filled first).
    ///
    /// # Panics
    /// As [`product`](Self::product), and if `row_range` is not inside `rows` or `out` has
    /// another length.
    pub fn product_into(
        &self,
        kernel: Kernel,
        rows: &QuantizedRows,
        row_range: Range<usize>,
        panels: Range<usize>,
        out: &mut [MaybeUninit<f32>],
    ) {
        assert_eq!(rows.groups, self.groups, "rows of another inner length");
        assert!(
            panels.end <= self.panels(),
            "panels {panels:?} of {}",
            self.panels()
        );
        let row_len = rows.groups * GROUP;
        let operands = Operands {
            rows_bytes: &rows.bytes[row_range.start * row_len..row_range.end * row_len],
            rows: row_range.len(),
            groups: self.groups,
            panels_bytes: &self.panels,
        };
        let epilogue = Epilogue {
            row_scales: &rows.scales[row_range],
            offsets: &self.offsets,
            scales: &self.scales,
            bias: &self.bias,
            columns: self.columns,
        };
        kernel::product(kernel, &operands, &epilogue, panels, out);
    }

    /// The weight as the floats it stands for, `inner × columns` (for tests and exports).
    pub fn dequantized(&self) -> Vec<f32> {
        let mut weight = vec![0.0f32; self.inner * self.columns];
        for k in 0..self.inner {
            let (group, position) = (k / GROUP, k % GROUP);
            for column in 0..self.columns {
                let (panel, lane) = (column / PANEL, column % PANEL);
                let q = self.panels
                    [(panel * self.groups + group) * PANEL_GROUP_BYTES + lane * GROUP + position];
                weight[k * self.columns + column] = f32::from(q) * self.scales[column];
            }
        }
        weight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64, for reproducible test values.
    struct SplitMix64(u64);

    impl SplitMix64 {
        fn new(seed: u64) -> Self {
            Self(seed)
        }

        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    /// `n` values uniform in `[-spread, spread)`.
    fn random(rng: &mut SplitMix64, n: usize, spread: f32) -> Vec<f32> {
        (0..n)
            .map(|_| ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * spread)
            .collect()
    }

    /// Every kernel this CPU runs gives the same floats as the integer sums written out plainly,
    /// on shapes with partial groups, panels and tiles.
    #[test]
    fn every_kernel_computes_the_plain_sums() {
        let mut rng = SplitMix64::new(11);
        // AMX's blocks: whole (32 rows, 64 inner, 2 panels), with rows (6 for VNNI), an odd
        // panel and partial columns left over (70 × 128 × 100), an inner length it does not
        // take (96), last blocks of 27, 17 and 16 rows (59, 17, 48). The others: partial
        // groups, panels and tiles.
        for (rows, inner, columns) in [
            (1, 256, 768),
            (5, 7, 33),
            (9, 130, 70),
            (64, 64, 16),
            (3, 1, 1),
            (32, 64, 32),
            (70, 128, 100),
            (40, 96, 64),
            (59, 64, 48),
            (17, 64, 40),
            (48, 64, 32),
        ] {
            let weight = random(&mut rng, inner * columns, 0.5);
            let bias = random(&mut rng, columns, 1.0);
            let x = random(&mut rng, rows * inner, 3.0);
            let matrix = Int8Matrix::new(&weight, inner, columns, Some(&bias));
            let quantized = QuantizedRows::new(&x, rows, inner);
            for kernel in Kernel::ALL.into_iter().filter(|k| k.is_available()) {
                let again = QuantizedRows::with_kernel(kernel, &x, rows, inner);
                assert_eq!(
                    (&again.bytes, &again.scales),
                    (&quantized.bytes, &quantized.scales)
                );
            }
            // The plain sums, from the quantized values.
            let q_weight: Vec<i32> = matrix
                .dequantized()
                .iter()
                .enumerate()
                .map(|(i, &w)| {
                    let scale = matrix.scales[i % columns];
                    if scale > 0.0 {
                        (w / scale).round() as i32
                    } else {
                        0
                    }
                })
                .collect();
            let mut expected = vec![0.0f32; rows * columns];
            for r in 0..rows {
                for c in 0..columns {
                    let sum: i32 = (0..inner)
                        .map(|k| {
                            (i32::from(quantized.bytes[r * quantized.groups * GROUP + k])
                                - ROW_OFFSET)
                                * q_weight[k * columns + c]
                        })
                        .sum();
                    expected[r * columns + c] =
                        sum as f32 * (quantized.scales[r] * matrix.scales[c]) + bias[c];
                }
            }
            let mut ran = 0;
            for kernel in Kernel::ALL.into_iter().filter(|k| k.is_available()) {
                let whole = matrix.product(kernel, &quantized, 0..matrix.panels());
                assert_eq!(whole, expected, "{kernel:?} at {rows}x{inner}x{columns}");
                // Into an output that starts as NaNs, the rows after the first: every value
                // written (the output is not zero-filled before a product).
                let mut into = vec![MaybeUninit::new(f32::NAN); (rows - 1) * columns];
                matrix.product_into(kernel, &quantized, 1..rows, 0..matrix.panels(), &mut into);
                let into: Vec<f32> = into.into_iter().map(read).collect();
                assert_eq!(into, expected[columns..], "{kernel:?} into rows 1..{rows}");
                // Two halves of the panels give the same columns.
                let middle = matrix.panels() / 2;
                let first = matrix.product(kernel, &quantized, 0..middle);
                let second = matrix.product(kernel, &quantized, middle..matrix.panels());
                let split = matrix.panel_columns(0..middle).len();
                for r in 0..rows {
                    assert_eq!(
                        first[r * split..(r + 1) * split],
                        expected[r * columns..r * columns + split]
                    );
                    assert_eq!(
                        second[r * (columns - split)..(r + 1) * (columns - split)],
                        expected[r * columns + split..(r + 1) * columns]
                    );
                }
                ran += 1;
            }
            assert!(ran >= 1);
        }
    }

    /// A value of a buffer that started as NaNs.
    #[allow(unsafe_code)]
    fn read(value: MaybeUninit<f32>) -> f32 {
        // SAFETY: the buffers read here start initialized (NaNs), and products only ever store
        // floats into them.
        unsafe { value.assume_init() }
    }

    /// The product is within the quantization's rounding of the float product: each weight is
    /// off by at most half its column's step, each input by half its row's step.
    #[test]
    fn the_product_is_within_the_rounding_bound_of_the_float_product() {
        let mut rng = SplitMix64::new(3);
        let (rows, inner, columns) = (6, 96, 40);
        let weight = random(&mut rng, inner * columns, 0.2);
        let x = random(&mut rng, rows * inner, 2.0);
        let matrix = Int8Matrix::new(&weight, inner, columns, None);
        let quantized = QuantizedRows::new(&x, rows, inner);
        let got = matrix.product(Kernel::best(), &quantized, 0..matrix.panels());
        let mut worst = 0.0f32;
        for r in 0..rows {
            let row = &x[r * inner..(r + 1) * inner];
            let row_step = quantized.scales[r];
            for c in 0..columns {
                let step = matrix.scales[c];
                let (mut exact, mut bound) = (0.0f64, 0.0f64);
                for k in 0..inner {
                    let w = weight[k * columns + c];
                    exact += f64::from(row[k]) * f64::from(w);
                    bound += f64::from(row[k].abs()) * f64::from(step) / 2.0
                        + f64::from(w.abs()) * f64::from(row_step) / 2.0
                        + f64::from(step * row_step) / 4.0;
                }
                let error = (f64::from(got[r * columns + c]) - exact).abs();
                assert!(
                    error <= bound * 1.001 + 1e-5,
                    "row {r} column {c}: {error} > {bound}"
                );
                worst = worst.max((error / bound) as f32);
            }
        }
        assert!(worst > 0.0, "some rounding happened");
    }

    /// A row or column whose largest magnitude is too small for its inverse scale to be finite
    /// quantizes to zeros (not to -127 through 0 · ∞ = NaN), as do rows holding infinities.
    #[test]
    fn vanishing_and_infinite_rows_quantize_to_zeros() {
        for kernel in Kernel::ALL.into_iter().filter(|k| k.is_available()) {
            let rows = QuantizedRows::with_kernel(
                kernel,
                &[0.0, 1e-37, -1e-37, 0.0, 1.0, f32::INFINITY, 2.0, 0.0],
                2,
                4,
            );
            assert_eq!(rows.scales, vec![0.0, 0.0], "{kernel:?}");
            assert_eq!(rows.bytes, vec![ROW_OFFSET as u8; 8], "{kernel:?}");
        }
        let matrix = Int8Matrix::new(&[1e-37, 1.0, -1e-37, 0.5], 2, 2, None);
        assert_eq!(matrix.scales[0], 0.0);
        assert_eq!(matrix.dequantized(), vec![0.0, 1.0, 0.0, 0.503937]);
    }

    #[test]
    fn kernels_are_found_by_their_names() {
        for kernel in Kernel::ALL {
            assert_eq!(Kernel::named(kernel.name()), Some(kernel));
        }
        assert_eq!(Kernel::named("sse"), None);
        assert!(Kernel::best().is_available());
    }

    #[test]
    fn zero_rows_and_columns_quantize_to_zero_without_dividing_by_zero() {
        let matrix = Int8Matrix::new(&[0.0, 1.0, 0.0, -2.0], 2, 2, Some(&[0.5, 0.25]));
        let rows = QuantizedRows::new(&[0.0, 0.0, 1.0, 1.0], 2, 2);
        let out = matrix.product(Kernel::Portable, &rows, 0..1);
        assert_eq!(out[..2], [0.5, 0.25]);
        assert_eq!(out[2], 0.5);
        // 1 · 1 + 1 · (-2) + 0.25, the weight 1 off by at most half a step (2 / 127 / 2).
        assert!(
            (out[3] - (-1.0 + 0.25)).abs() <= 1.0 / 127.0 + 1e-6,
            "{}",
            out[3]
        );
    }
}
