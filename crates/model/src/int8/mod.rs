//! int8 inference on the CPU: the linear maps' weights quantized to 8-bit integers per output
//! column, their inputs per row as they arrive (dynamic quantization, as CTranslate2's and
//! Marian's int8), multiplied in integers and scaled back to floats.
//!
//! [`Transformer::quantize_int8`](crate::Transformer::quantize_int8) gives every attention
//! projection, feed-forward map and the output projection an int8 form; the forward passes
//! (encoder, full and incremental decoder) then run those products through [`linear`]: the
//! input is read from the device, quantized, multiplied by one of the [`Kernel`]s of
//! `rosetta-int8` (AMX, AVX-512 VNNI, AVX2 or portable Rust, the same bits on each) and written back
//! as a float tensor. The
//! rest of the model (embeddings, attention over the cache, normalization, softmax) stays in
//! floating point. int8 needs a CPU device (flex or ndarray) that is not recording gradients.

mod forms;

use std::sync::Arc;

use burn::nn::Linear;
use burn::tensor::{Device, Tensor, TensorData};

pub use forms::{AttentionInt8, FeedForwardInt8};
pub use rosetta_int8::{Int8Matrix, Kernel, QuantizedRows};

/// The fewest multiply-adds of an int8 product run on two threads: about a quarter of the
/// float rule's ([`MIN_SPLIT_PRODUCT`](crate::split_product::MIN_SPLIT_PRODUCT)) work per
/// byte, so about the same time.
const MIN_SPLIT_PRODUCT: usize = 1 << 19;

/// The fewest rows of a product split by rows, each half written in place; fewer are split by
/// columns, whose halves are joined by a copy. Both on the [helper thread](crate::helper_thread).
/// (No second thread in WebAssembly.)
const MIN_ROW_SPLIT: usize = 8;

/// How a model's linear maps multiply at inference (`rosetta translate --quantize`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Quantization {
    /// In float32, as trained.
    #[default]
    Float32,
    /// In int8 ([`Transformer::quantize_int8`](crate::Transformer::quantize_int8)), on a CPU
    /// device.
    Int8,
}

impl Quantization {
    /// The names [`FromStr`](std::str::FromStr) takes.
    pub const NAMES: [&'static str; 2] = ["float32", "int8"];
}

impl std::fmt::Display for Quantization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Quantization::Float32 => "float32",
            Quantization::Int8 => "int8",
        })
    }
}

impl std::str::FromStr for Quantization {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "float32" => Ok(Quantization::Float32),
            "int8" => Ok(Quantization::Int8),
            other => Err(format!(
                "{other:?} is not a quantization: expected {}",
                Self::NAMES.join(" or ")
            )),
        }
    }
}

/// Whether int8 products run on `device`: a native CPU device not recording gradients. Not in
/// WebAssembly: the browser build offers no int8, and with this `false` there its kernels are
/// left out of the module.
pub fn runs_on(device: &Device) -> bool {
    !cfg!(target_arch = "wasm32")
        && !device.is_autodiff()
        && crate::device::cpu_devices()
            .iter()
            .any(|(_, cpu)| cpu == device)
}

/// `linear`'s weight and bias quantized ([`Int8Matrix::new`]).
pub fn quantize_linear(linear: &Linear) -> Arc<Int8Matrix> {
    let bias = linear.bias.as_ref().map(|bias| host_values(bias.val()));
    quantize_weight(linear.weight.val(), bias.as_deref())
}

/// `weight` `[inner, columns]` and `bias` quantized ([`Int8Matrix::new`]).
pub fn quantize_weight(weight: Tensor<2>, bias: Option<&[f32]>) -> Arc<Int8Matrix> {
    let [inner, columns] = weight.dims();
    Arc::new(Int8Matrix::new(&host_values(weight), inner, columns, bias))
}

/// The values of `tensor`, row after row, as `f32` on the host.
pub(crate) fn host_values<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    with_host_values(tensor, <[f32]>::to_vec)
}

/// `f` of the values of `tensor`, row after row, as `f32` on the host (read in place when the
/// device hands them out as they are).
fn with_host_values<const D: usize, R>(tensor: Tensor<D>, f: impl FnOnce(&[f32]) -> R) -> R {
    let data = tensor.into_data().convert::<f32>();
    match data.as_slice::<f32>() {
        Ok(values) => f(values),
        Err(_) => f(&data.iter::<f32>().collect::<Vec<_>>()),
    }
}

/// `x` `[..., inner]` times `matrix` plus its bias: `[..., columns]`, on the same device. On two
/// threads (the calling one and the helper) when the product is large enough.
///
/// # Panics
/// If `x`'s last axis is not `matrix`'s inner length.
pub fn linear<const D: usize>(x: Tensor<D>, matrix: &Arc<Int8Matrix>) -> Tensor<D> {
    let dims = x.dims();
    let device = x.device();
    let inner = dims[D - 1];
    assert_eq!(
        inner,
        matrix.inner(),
        "an input of {inner} for {} rows",
        matrix.inner()
    );
    let rows: usize = dims[..D - 1].iter().product();
    let quantized = with_host_values(x, |values| QuantizedRows::new(values, rows, inner));
    let out = product(matrix, &quantized);
    let mut shape = dims;
    shape[D - 1] = matrix.columns();
    Tensor::from_data(TensorData::new(out, shape), &device)
}

/// `rows` times `matrix`, `rows × columns` values, on two threads when large enough, the
/// calling one and the helper: split by rows (each half written in place) when there are
/// [`MIN_ROW_SPLIT`] rows, else by columns (a one-row product reads the weight once: two threads
/// read it in about half the time). The helper spins between products where rayon's threads,
/// which ran the row halves before, slept: greedy search at batch 64 spent a tenth of its time
/// in the scheduler waking them, 19 times a step (docs/performance.md).
#[allow(unsafe_code)] // The row halves' output is not zero-filled first: both halves write it all.
fn product(matrix: &Int8Matrix, rows: &QuantizedRows) -> Vec<f32> {
    let kernel = Kernel::best();
    let (count, columns, panels) = (rows.rows(), matrix.columns(), matrix.panels());
    if count * matrix.inner() * columns < MIN_SPLIT_PRODUCT || !crate::helper_thread::available() {
        return matrix.product(kernel, rows, 0..panels);
    }
    if count >= MIN_ROW_SPLIT {
        let (middle, len) = (count / 2, count * columns);
        let mut out = Vec::with_capacity(len);
        let (first, second) = out.spare_capacity_mut()[..len].split_at_mut(middle * columns);
        crate::helper_thread::join_borrowing(
            || matrix.product_into(kernel, rows, 0..middle, 0..panels, first),
            || matrix.product_into(kernel, rows, middle..count, 0..panels, second),
        );
        // SAFETY: the two halves' products wrote every value of their rows, which are all the
        // `len` values (not zero-filled first: 2% of int8 beam search at batch 64, `perf`).
        unsafe { out.set_len(len) };
        return out;
    }
    if panels < 2 {
        return matrix.product(kernel, rows, 0..panels);
    }
    let middle = panels / 2;
    let mut second = Vec::new();
    let first = crate::helper_thread::join_borrowing(
        || matrix.product(kernel, rows, 0..middle),
        || second = matrix.product(kernel, rows, middle..panels),
    );
    let split = matrix.panel_columns(0..middle).len();
    let rest = columns - split;
    let mut out = Vec::with_capacity(count * columns);
    for (first, second) in first
        .chunks_exact(split)
        .zip(second.chunks_exact(rest.max(1)))
    {
        out.extend_from_slice(first);
        out.extend_from_slice(second);
    }
    out
}

#[cfg(test)]
mod tests {
    use burn::tensor::Distribution;

    use super::*;

    #[test]
    fn an_int8_linear_is_close_to_the_float_one_and_equal_split_or_not() {
        let device = Device::flex();
        device.seed(9);
        let weight = Tensor::<2>::random([256, 1000], Distribution::Normal(0.0, 0.05), &device);
        let bias = Tensor::<1>::random([1000], Distribution::Normal(0.0, 0.1), &device);
        let bias_values = host_values(bias.clone());
        let matrix = quantize_weight(weight.clone(), Some(&bias_values));
        for (batch, len) in [(1, 1), (5, 1), (3, 7), (64, 1)] {
            let x = Tensor::<3>::random([batch, len, 256], Distribution::Normal(0.0, 1.0), &device);
            let int8 = linear(x.clone(), &matrix);
            assert_eq!(int8.dims(), [batch, len, 1000]);
            let float = burn::tensor::module::linear(x.clone(), weight.clone(), Some(bias.clone()));
            let (got, want) = (host_values(int8), host_values(float));
            let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() < 0.02 * scale, "{g} vs {w}");
            }
            // One thread, whole: the same values (the halves are the same sums).
            let rows = QuantizedRows::new(&host_values(x), batch * len, 256);
            assert_eq!(
                got,
                matrix.product(Kernel::Portable, &rows, 0..matrix.panels())
            );
        }
    }
}
