//! A linear map on flex at inference written straight into one output buffer: the product by
//! `gemm`, called exactly as flex calls it (one to eight rows by a row-major weight by
//! [`crate::row_product`] instead, with `gemm`'s sums), the bias added to each row where the
//! product left it, and, for a [split](crate::split_product) product, the two halves of the
//! columns computed by their two threads at the same time.
//!
//! Through Burn the same map is a matrix product, then an addition of the bias; split, each half
//! is a column slice of the weight, a product and an addition, and the halves are joined by a
//! copy: per split product, five tensors allocated and two passes over the output more than
//! here. The sums are those of flex's own product (the same `gemm` call per half, its result
//! stored as it is) and of its addition (`product + bias`, one rounding per element): equal to
//! the last bit, which the tests below check against Burn's `linear`.
//!
//! The helper thread's half is multiplied into a buffer of its own, then copied into place with
//! the bias: written straight into the shared output, the cache line where a row's halves meet
//! (an allocation starts on a 16-byte boundary, a line is 64) went back and forth between the
//! cores while `gemm` accumulated into it, 1 × 256 × 768 taking 35 µs split against 22 µs through
//! Burn; moving the split to the line boundary instead left the weight's second half read
//! unaligned, and beam 5 at batch 1 lost 15% (`decode --grid`, 2026-12-07).

use burn::tensor::{DType, Tensor, TensorData};
use burn_flex::{Flex, FlexTensor};

/// `x` `[rows, inner]` times `weight` `[inner, columns]` plus `bias`, on flex, its two halves of
/// the columns on two threads when `split`; `None` (the inputs untouched, for Burn to multiply
/// or refuse) when one of them is not a float32 flex tensor, the bias is not contiguous, or the
/// shapes do not fit.
pub(crate) fn linear(
    x: &Tensor<2>,
    weight: &Tensor<2>,
    bias: Option<&Tensor<1>>,
    split: bool,
) -> Option<Tensor<2>> {
    let x = Operand::of(x)?;
    let weight = Operand::of(weight)?;
    let bias = match bias {
        Some(bias) => Some(
            bias.clone()
                .try_into_primitive::<Flex>()
                .ok()
                .filter(|bias| bias.dtype() == DType::F32 && bias.layout().strides() == [1])?,
        ),
        None => None,
    };
    let (rows, inner) = (x.dims[0], x.dims[1]);
    let columns = weight.dims[1];
    let bias_fits = bias
        .as_ref()
        .is_none_or(|bias| bias.layout().shape()[0] == columns);
    if weight.dims[0] != inner || !bias_fits {
        return None;
    }
    let mut out: Vec<f32> = Vec::with_capacity(rows.checked_mul(columns)?);
    let target = Target {
        out: out.as_mut_ptr(),
        rows,
        columns,
    };
    let split = split && halves_sum_as_the_whole(rows, inner, columns, weight.strides);
    let middle = if split { columns / 2 } else { columns };
    if middle == columns || middle == 0 {
        // SAFETY: `target` is `out`'s buffer of `rows × columns` values, written here alone.
        unsafe { target.write(&x, &weight, bias.as_ref(), 0..columns, Via::Output) };
    } else {
        let first = (x.clone(), weight.clone(), bias.clone());
        let second = (x, weight, bias);
        crate::helper_thread::join(
            // SAFETY: the two pieces write the disjoint columns `..middle` and `middle..` of
            // `out`'s buffer, and `join` returns (or unwinds) only after both have ended.
            move || unsafe {
                target.write(&first.0, &first.1, first.2.as_ref(), 0..middle, Via::Output)
            },
            move || unsafe {
                target.write(
                    &second.0,
                    &second.1,
                    second.2.as_ref(),
                    middle..columns,
                    Via::Scratch,
                )
            },
        );
    }
    // SAFETY: `write` stored every element of every row of the columns it was given, and the
    // calls above were given all the columns.
    unsafe { out.set_len(rows * columns) };
    let out = FlexTensor::from_data(TensorData::new(out, [rows, columns]));
    Some(Tensor::from_primitive::<Flex>(out))
}

/// Whether `gemm` sums each element of the two halves of a split `rows × inner × columns`
/// product (the weight's `(row, column)` strides `weight`) as it sums the whole product's: the
/// same kernels, with the same cuts of the inner dimension. `gemm` computes the product
/// transposed (the weight's columns as its rows): at most 16 × 16 outputs with a weight stored
/// transposed go to its horizontal kernels (one dot product per output, not the broadcast
/// kernels' chains of multiply-adds); one output column to its matrix-vector ones; and at most
/// 64 × 64 outputs cut the inner dimension every 512 values, where larger products take the cut
/// from the cache sizes. A split that moves a half to another of these paths is not made (a
/// 1 × 2,048 × 512 product with a transposed weight, for one, differed from Burn's in the last
/// bits).
fn halves_sum_as_the_whole(
    rows: usize,
    inner: usize,
    columns: usize,
    weight: (isize, isize),
) -> bool {
    let (smaller, larger) = (columns / 2, columns.div_ceil(2));
    let horizontal = |width: usize| weight.0 == 1 && width * rows <= 16 * 16;
    let small = |width: usize| width <= 64 && rows <= 64;
    smaller >= 2
        && horizontal(smaller) == horizontal(columns)
        && horizontal(larger) == horizontal(columns)
        && (inner <= 512 || (small(smaller) == small(columns) && small(larger) == small(columns)))
}

/// Where [`Target::write`] has `gemm` store the product.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// Straight into the output.
    Output,
    /// Into this thread's scratch buffer, then copied into the output with the bias.
    Scratch,
}

std::thread_local! {
    /// A thread's scratch buffer for [`Via::Scratch`], kept between products (at most one
    /// product's half: 8 MB for 512 rows of an 8,000-word vocabulary, 5 MB at beam 5 and
    /// batch 64).
    static SCRATCH: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A float32 matrix on flex read in place: its storage, where it starts and its strides.
#[derive(Clone)]
struct Operand {
    tensor: FlexTensor,
    dims: [usize; 2],
    /// `(row, column)` strides in elements.
    strides: (isize, isize),
}

impl Operand {
    /// `tensor`'s flex primitive (a reference-counted handle), when it is a float32 flex tensor.
    fn of(tensor: &Tensor<2>) -> Option<Self> {
        let tensor = tensor.clone().try_into_primitive::<Flex>().ok()?;
        if tensor.dtype() != DType::F32 {
            return None;
        }
        let strides = tensor.layout().strides();
        let shape = tensor.layout().shape();
        let dims = [shape[0], shape[1]];
        let strides = (strides[0], strides[1]);
        Some(Self {
            tensor,
            dims,
            strides,
        })
    }

    /// Where the matrix's first element is.
    fn start(&self) -> *const f32 {
        let storage: &[f32] = self.tensor.storage();
        storage[self.tensor.layout().start_offset()..].as_ptr()
    }
}

/// The output buffer, `rows × columns` float32 values row after row.
#[derive(Clone, Copy)]
struct Target {
    out: *mut f32,
    rows: usize,
    columns: usize,
}

// SAFETY: a `Target` is handed to the helper thread for the columns it alone writes (see
// `linear`), and the buffer outlives the `join` that runs it.
unsafe impl Send for Target {}

impl Target {
    /// Writes `x` times `weight`'s `range` of columns, plus that range of `bias`, into the same
    /// columns of every row: `gemm` as flex's `matmul_2d_strided` calls it, on this thread,
    /// storing `via` the output or a scratch buffer.
    ///
    /// # Safety
    /// `self.out` must be valid for `rows × columns` writes, and no other thread may touch those
    /// columns meanwhile.
    unsafe fn write(
        self,
        x: &Operand,
        weight: &Operand,
        bias: Option<&FlexTensor>,
        range: std::ops::Range<usize>,
        via: Via,
    ) {
        let width = range.len();
        let bias = bias.map(|bias| {
            let bias: &[f32] = &bias.storage()[bias.layout().start_offset()..];
            &bias[range.clone()]
        });
        // SAFETY (both arms): the caller's contract for `out`; the scratch buffer holds
        // `rows × width` values, which `product` stores before they are read.
        match via {
            Via::Output => unsafe {
                let dst = self.out.add(range.start);
                product(x, weight, range.start, width, dst, self.columns);
                if let Some(bias) = bias {
                    for row in 0..self.rows {
                        let row =
                            std::slice::from_raw_parts_mut(dst.add(row * self.columns), width);
                        for (value, bias) in row.iter_mut().zip(bias) {
                            *value += *bias;
                        }
                    }
                }
            },
            Via::Scratch => SCRATCH.with_borrow_mut(|scratch| unsafe {
                scratch.clear();
                scratch.reserve(self.rows * width);
                let stored = scratch.as_mut_ptr();
                product(x, weight, range.start, width, stored, width);
                for row in 0..self.rows {
                    let from = std::slice::from_raw_parts(stored.add(row * width), width);
                    let to = std::slice::from_raw_parts_mut(
                        self.out.add(row * self.columns + range.start),
                        width,
                    );
                    match bias {
                        Some(bias) => {
                            for ((to, from), bias) in to.iter_mut().zip(from).zip(bias) {
                                *to = *from + *bias;
                            }
                        }
                        None => to.copy_from_slice(from),
                    }
                }
            }),
        }
    }
}

/// `x` times the `width` columns of `weight` from `first` on, stored at `dst` (rows `stride`
/// apart): `gemm` as flex's `matmul_2d_strided` calls it (`read_dst = false`: every element
/// stored, none read), on this thread; one to eight rows by a row-major weight by
/// [`crate::row_product`], which sums as `gemm` does.
///
/// # Safety
/// `dst` must be valid for `rows` rows of `width` writes, `stride` apart.
unsafe fn product(
    x: &Operand,
    weight: &Operand,
    first: usize,
    width: usize,
    dst: *mut f32,
    stride: usize,
) {
    let (x_row, x_column) = x.strides;
    let (w_row, w_column) = weight.strides;
    let operands = crate::row_product::Operands {
        x: x.start(),
        x_row,
        x_column,
        rows: x.dims[0],
        weight: weight.start().wrapping_offset(first as isize * w_column),
        weight_row: w_row,
        inner: x.dims[1],
        width,
        dst,
        dst_row: stride as isize,
    };
    // SAFETY: the caller's contract for `dst`; `x` and `weight` are read within their layouts
    // (the columns `first..first + width` are within `weight`'s).
    unsafe {
        // A few rows by a row-major weight: `gemm`'s sums, eight rows of the weight read at a
        // time (crate::row_product).
        if w_column == 1 && crate::row_product::product(operands) {
            return;
        }
        gemm_product(operands, w_column);
    }
}

/// `operands`' product by `gemm`, the weight's columns `weight_column` apart: as flex's
/// `matmul_2d_strided` calls it (`read_dst = false`: every element stored, none read), on this
/// thread. Also the reference `crate::row_product`'s tests compare with.
///
/// # Safety
/// The pointers must be valid for the reads and writes `operands` describes (the weight's
/// columns `weight_column` apart), and `dst` must not overlap `x` or the weight.
pub(crate) unsafe fn gemm_product(operands: crate::row_product::Operands, weight_column: isize) {
    // SAFETY: the caller's contract.
    unsafe {
        gemm::gemm(
            operands.rows,
            operands.width,
            operands.inner,
            operands.dst,
            1,
            operands.dst_row,
            false,
            operands.x,
            operands.x_column,
            operands.x_row,
            operands.weight,
            weight_column,
            operands.weight_row,
            0.0f32,
            1.0f32,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Device, Distribution};

    use super::*;

    use crate::int8::host_values as values;

    /// Bit for bit Burn's `linear`, split or not, with or without a bias, for row-major and
    /// transposed weights, an input that is a view, and inner lengths past `gemm`'s blocks.
    #[test]
    fn equals_burns_linear_to_the_last_bit() {
        let device = Device::flex();
        device.seed(11);
        for (rows, inner, columns) in [
            (1, 256, 1025),
            (5, 256, 768),
            (64, 1024, 256),
            (3, 2048, 33),
            (1, 2048, 512),
            (1, 1024, 384),
            (2, 1024, 200),
            (8, 512, 97),
            (5, 256, 2000),
            (9, 64, 40),
        ] {
            let weight =
                Tensor::<2>::random([inner, columns], Distribution::Normal(0.0, 1.0), &device);
            let transposed =
                Tensor::<2>::random([columns, inner], Distribution::Default, &device).transpose();
            let bias = Tensor::<1>::random([columns], Distribution::Normal(0.0, 1.0), &device);
            let x = Tensor::<2>::random([rows, inner], Distribution::Default, &device);
            let x_view = Tensor::<2>::random([rows, inner + 7], Distribution::Default, &device)
                .slice([0..rows, 3..inner + 3]);
            for weight in [&weight, &transposed] {
                for x in [&x, &x_view] {
                    for bias in [Some(&bias), None] {
                        let burns = values(burn::tensor::module::linear(
                            x.clone(),
                            weight.clone(),
                            bias.cloned(),
                        ));
                        for split in [false, true] {
                            let here = linear(x, weight, bias, split).expect("float32 on flex");
                            assert_eq!(here.dims(), [rows, columns]);
                            let bits = |values: Vec<f32>| {
                                values.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                            };
                            assert_eq!(
                                bits(values(here)),
                                bits(burns.clone()),
                                "{rows} x {inner} x {columns}, split {split}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn splits_that_would_change_gemms_sums_are_not_made() {
        // Row-major weights ([inner, columns], column stride 1) keep the broadcast kernels.
        assert!(halves_sum_as_the_whole(1, 2048, 512, (512, 1)));
        assert!(halves_sum_as_the_whole(64, 1024, 256, (256, 1)));
        // Transposed: 512 outputs take the matrix-vector kernel, a half of 256 the horizontal.
        assert!(!halves_sum_as_the_whole(1, 2048, 512, (1, 2048)));
        assert!(halves_sum_as_the_whole(1, 256, 8000, (1, 256)));
        assert!(halves_sum_as_the_whole(3, 2048, 33, (1, 2048)));
        // A half of one column; halves of at most 64 × 64 outputs past 512 inner values.
        assert!(!halves_sum_as_the_whole(5, 256, 3, (3, 1)));
        assert!(!halves_sum_as_the_whole(8, 1024, 100, (100, 1)));
        assert!(halves_sum_as_the_whole(8, 512, 100, (100, 1)));
    }

    #[test]
    fn other_dtypes_are_left_to_burn() {
        let device = Device::flex();
        let x = Tensor::<2>::ones([2, 3], &device).cast(DType::F64);
        let weight = Tensor::<2>::ones([3, 4], &device).cast(DType::F64);
        assert!(linear(&x, &weight, None, true).is_none());
    }

    #[test]
    fn shapes_that_do_not_fit_are_left_to_burn() {
        let device = Device::flex();
        let x = Tensor::<2>::ones([2, 3], &device);
        let weight = Tensor::<2>::ones([3, 4], &device);
        assert!(linear(&x, &Tensor::<2>::ones([4, 4], &device), None, false).is_none());
        let short_bias = Tensor::<1>::ones([3], &device);
        assert!(linear(&x, &weight, Some(&short_bias), true).is_none());
        let bias = Tensor::<1>::ones([4], &device);
        let out = linear(&x, &weight, Some(&bias), true).expect("fits");
        assert_eq!(values(out), vec![4.0; 8]);
    }
}
