//! Decoding's matrix products split in two halves of their columns, multiplied at the same time
//! on the calling thread and the [helper thread](crate::helper_thread), each half on its own
//! thread alone.
//!
//! A decoding step multiplies a few rows (1 at greedy batch 1, 5 at beam 5, 64 at greedy batch
//! 64) by weights of 0.25–8 MB. Flex runs a product under [`FLEX_PARALLEL_PRODUCT`]
//! multiply-adds on one thread, and a larger one on rayon's threads, which sleep between
//! operations and take about as long to wake as such a product takes. Split here, the same
//! products column by column (equal to the last bit). Timed with `gemm` called directly on two
//! cores (Intel Xeon, AVX-512; a variant of `scripts/gemm_direct` with a spinning second thread,
//! not committed): one row × 256 × 8,000 0.29 → 0.14 ms; 5 rows 0.40 → 0.18 ms; 64 rows 1.35
//! ms on rayon's two threads → 0.96 ms. In decoding: `decode --grid` (docs/performance.md).
//!
//! Which products are split, on a flex device that is not recording gradients, with the helper
//! [available](crate::helper_thread::available):
//! - those whose halves flex would run on one thread anyway, and
//! - those of at most [`MAX_SPLIT_ROWS`] rows when rayon's pool has two threads, where the
//!   helper's two halves use the same two cores as rayon would, without its wake-ups.
//!
//! Natively, a split product, and one flex would run on this thread anyway, is written in place
//! ([`crate::in_place_linear`]): both halves and the bias straight into one output, instead of
//! two products, two additions and a copy joining them.

use burn::nn::Linear;
use burn::tensor::{Device, Tensor};

/// Flex runs a matrix product of at least this many multiply-adds on rayon's threads, and a
/// smaller one on the calling thread (`PARALLEL_THRESHOLD` in burn-flex's `ops/matmul.rs`,
/// checked by a test here).
pub(crate) const FLEX_PARALLEL_PRODUCT: usize = 192 * 192 * 192;

/// The fewest multiply-adds of a product worth splitting: below, the handing over and the
/// joining cost about what the second thread saves. A one-row product reads its weight once, at
/// about 30 GB/s on one core (`gemm`'s one-row path, Intel Xeon), so two cores read it in about
/// half the time. In decoding (`decode --grid 1:1:64:13:20`, d_model 256, ten runs alternating,
/// docs/performance.md), 2¹⁷ (splitting one row's fused query/key/value and feed-forward
/// products too) ran greedy search at batch 1 4.7% faster than 2²⁰ (median); 2¹⁶ (also the
/// 256 × 256 ones) gained less in three runs.
pub(crate) const MIN_SPLIT_PRODUCT: usize = 1 << 17;

/// The most rows of a product split when its halves are larger than [`FLEX_PARALLEL_PRODUCT`]:
/// beam 5 at batch 64 (320 rows) included. At 64 (2026-12-05) its products stayed with rayon,
/// split on the helper 4% slower, the helper's spinning taking a core from rayon's other
/// operations; once the cache's copies ran on the helper too (crate::cache_copy), splitting them
/// ran it faster: `rosetta bench-decode` on the trained Multi30k model, five rounds alternating,
/// 1,955 → 2,142 target tokens/s (`decode --grid`, two runs: +6%, +3%; docs/performance.md). The
/// helper's half of a product's output goes through its scratch buffer, which keeps up to 512
/// rows of half the output projection (8 MB at 8,000 words).
pub(crate) const MAX_SPLIT_ROWS: usize = 512;

/// Whether products on `device` may be split at all.
pub(crate) fn splits_on(device: &Device) -> bool {
    in_place_on(device) && crate::helper_thread::available()
}

/// Whether linear maps on `device` may be written in place ([`crate::in_place_linear`]): flex,
/// not recording gradients.
fn in_place_on(device: &Device) -> bool {
    *device == Device::flex() && !device.is_autodiff()
}

/// Whether a product of `rows` × `inner` by `inner` × `columns` (on a device where
/// [`splits_on`] holds) is split.
pub(crate) fn splits(rows: usize, inner: usize, columns: usize) -> bool {
    let product = rows.saturating_mul(inner).saturating_mul(columns);
    if columns < 2 || product < MIN_SPLIT_PRODUCT {
        return false;
    }
    let half = rows
        .saturating_mul(inner)
        .saturating_mul(columns.div_ceil(2));
    half < FLEX_PARALLEL_PRODUCT || (rows <= MAX_SPLIT_ROWS && two_threads())
}

/// `linear.forward(x)`, split when [`splits`] says so.
pub(crate) fn forward<const D: usize>(linear: &Linear, x: Tensor<D>) -> Tensor<D> {
    self::linear(
        x,
        linear.weight.val(),
        linear.bias.as_ref().map(|bias| bias.val()),
    )
}

/// Burn's [`linear`](burn::tensor::module::linear): `x` `[..., inner]` times `weight`
/// `[inner, columns]` plus `bias`, its two halves of the columns (views of `weight`, read in
/// place) multiplied at the same time when [`splits`] says so and the device allows it, written
/// in place on flex ([`crate::in_place_linear`]) where it is split or small.
pub(crate) fn linear<const D: usize>(
    x: Tensor<D>,
    weight: Tensor<2>,
    bias: Option<Tensor<1>>,
) -> Tensor<D> {
    let dims = x.dims();
    let [inner, columns] = weight.dims();
    let rows = dims[..D - 1].iter().product();
    let split = splits(rows, inner, columns);
    let mut out = dims;
    out[D - 1] = columns;
    // Written in place where flex would run the product on this thread, or where it is split.
    #[cfg(not(target_arch = "wasm32"))]
    if in_place_on(&x.device())
        && (split || rows.saturating_mul(inner).saturating_mul(columns) < FLEX_PARALLEL_PRODUCT)
    {
        let split = split && crate::helper_thread::available();
        let flat = x.clone().reshape([rows, inner]);
        if let Some(product) = crate::in_place_linear::linear(&flat, &weight, bias.as_ref(), split)
        {
            return product.reshape(out);
        }
    }
    if !(split && splits_on(&x.device())) {
        return burn::tensor::module::linear(x, weight, bias);
    }
    let middle = columns / 2;
    let half = |range: std::ops::Range<usize>| {
        (
            weight.clone().slice([0..inner, range.clone()]),
            bias.clone().map(|bias| bias.slice([range])),
        )
    };
    let (first_weight, first_bias) = half(0..middle);
    let (second_weight, second_bias) = half(middle..columns);
    let x = x.reshape([rows, inner]);
    let x_second = x.clone();
    let joined = join_columns(
        || burn::tensor::module::linear(x, first_weight, first_bias),
        move || burn::tensor::module::linear(x_second, second_weight, second_bias),
    );
    joined.reshape(out)
}

/// Whether rayon's pool, which flex's large products use, has exactly two threads.
fn two_threads() -> bool {
    #[cfg(not(target_arch = "wasm32"))]
    {
        rayon::current_num_threads() == 2
    }
    #[cfg(target_arch = "wasm32")]
    {
        false
    }
}

/// `first()` here and `second()` on the helper thread, each with its products on its own thread
/// alone, joined side by side: `[rows, a]` and `[rows, b]` → `[rows, a + b]`.
pub(crate) fn join_columns(
    first: impl FnOnce() -> Tensor<2>,
    second: impl FnOnce() -> Tensor<2> + Send + 'static,
) -> Tensor<2> {
    let (first, second) =
        crate::helper_thread::join(|| on_this_thread(first), move || on_this_thread(second));
    Tensor::cat(vec![first, second], 1)
}

/// `f()` with its flex products on this thread alone (the vendored flex's patch,
/// vendor/README.md).
fn on_this_thread<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(not(target_arch = "wasm32"))]
    {
        burn_flex::ops::matmul::on_this_thread(f)
    }
    #[cfg(target_arch = "wasm32")]
    {
        f()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_flexs() {
        let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../vendor/burn-flex/src/ops/matmul.rs");
        let text = std::fs::read_to_string(&source).expect("the vendored burn-flex");
        assert!(
            text.contains("const PARALLEL_THRESHOLD: usize = 192 * 192 * 192;"),
            "burn-flex's parallel threshold changed: update FLEX_PARALLEL_PRODUCT"
        );
    }

    #[test]
    fn small_products_split_and_large_ones_only_at_few_rows_on_two_threads() {
        assert!(splits(1, 256, 8000));
        assert!(splits(5, 256, 8000));
        assert!(!splits(1, 256, 1));
        assert!(!splits(1, 256, 256));
        assert!(splits(1, 256, 768));
        assert!(splits(1, 1024, 256));
        assert!(splits(5, 256, 1024));
        assert_eq!(splits(64, 256, 8000), two_threads());
        assert_eq!(splits(320, 256, 8000), two_threads());
        assert!(!splits(1024, 256, 8000));
    }

    #[test]
    fn a_split_linear_equals_burns() {
        use burn::tensor::Distribution;
        let device = Device::flex();
        device.seed(5);
        let weight = Tensor::<2>::random([256, 1025], Distribution::Normal(0.0, 1.0), &device);
        let bias = Tensor::<1>::random([1025], Distribution::Normal(0.0, 1.0), &device);
        for bias in [Some(bias), None] {
            for (batch, len) in [(5, 1), (64, 1), (2, 13)] {
                let x = Tensor::<3>::random([batch, len, 256], Distribution::Default, &device);
                let split = linear(x.clone(), weight.clone(), bias.clone());
                let whole = burn::tensor::module::linear(x, weight.clone(), bias.clone());
                assert_eq!(split.dims(), [batch, len, 1025]);
                // The same products column by column: equal to the last bit.
                assert_eq!(
                    split.into_data().try_to_vec::<f32>().expect("f32"),
                    whole.into_data().try_to_vec::<f32>().expect("f32")
                );
            }
        }
    }

    #[test]
    fn the_halves_join_side_by_side_in_order() {
        let device = Device::flex();
        let a = Tensor::<2>::from_floats([[1.0, 2.0], [5.0, 6.0]], &device);
        let b = Tensor::<2>::from_floats([[3.0], [7.0]], &device);
        let joined = join_columns(|| a, move || b);
        assert_eq!(
            joined.into_data().try_to_vec::<f32>().expect("f32"),
            vec![1.0, 2.0, 3.0, 5.0, 6.0, 7.0]
        );
    }
}
