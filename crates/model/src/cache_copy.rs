//! The self-attention cache's two copies per decoding step, on flex, split between the calling
//! thread and the spinning [helper](crate::helper_thread): appending the step's keys and values
//! (`cat` along the length axis) and, in beam search, reordering the rows (`select`).
//!
//! At beam 5 and batch 64 these copies move the whole cache twice a step (320 rows × 4 heads ×
//! the length so far × 64 values, keys and values, every layer), and flex runs each on the
//! calling thread while rayon's threads, which run the step's products, wait: 15% of the run's
//! wall time in `memmove` (`perf record` on `decode --grid 5:64:128:13:20`, docs/performance.md).
//! Here a large copy is split in two halves of its rows, one per thread. The values are copied,
//! not computed: the result is Burn's, bit for bit (tests below). The halves ran on rayon's
//! threads at first; on the helper, which spins between pieces where rayon's threads sleep, and
//! from 256 KB instead of 1 MB, `rosetta bench-decode` on the trained Multi30k model ran beam 5
//! at batch 64 16% faster and greedy 7% (four rounds alternating, 2026-12-07).

use std::mem::MaybeUninit;

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_flex::{Flex, FlexTensor};

/// The fewest bytes a copy must write to be split between two threads: a quarter of a
/// megabyte, at greedy batch 64 the cache's copies from the fourth step on. (`decode --grid`,
/// seven rounds alternating, from 1 MB to 256 KB: greedy batch 64 9,612 → 10,179 target
/// tokens/s, beam 5 batch 64 2,296 → 2,307, beam 5 batch 1, whose copies stay below, unchanged;
/// docs/performance.md.)
const MIN_SPLIT_BYTES: usize = 1 << 18;

/// `Tensor::cat(vec![cached, new], 2)` for `cached` `[b, h, len, d]` and `new` `[b, h, q, d]`
/// (either may be a view, such as the heads split out of the fused projection).
pub(crate) fn append(cached: Tensor<4>, new: Tensor<4>) -> Tensor<4> {
    let [b, h, len, d] = cached.dims();
    let [nb, nh, q, nd] = new.dims();
    let (Some(old), Some(fresh)) = (Blocks::of(&cached), Blocks::of(&new)) else {
        return Tensor::cat(vec![cached, new], 2);
    };
    if (nb, nh, nd) != (b, h, d) {
        return Tensor::cat(vec![cached, new], 2);
    }
    let (old_block, new_block) = (len * d, q * d);
    let block = old_block + new_block;
    let fill = |out: &mut [MaybeUninit<f32>], first: usize| {
        for (i, out) in out.chunks_exact_mut(block).enumerate() {
            let (old_part, new_part) = out.split_at_mut(old_block);
            old.write(first + i, old_part);
            fresh.write(first + i, new_part);
        }
    };
    let out = filled(b * h, block, fill);
    from_values(out, [b, h, len + q, d])
}

/// `rows`' values on the host, read once for every tensor a reordering copies; `None` when one
/// is negative, or when `rows` is not on flex (the only device [`select_rows`] copies on: a GPU
/// would be made to wait for its indices at every reordering for nothing).
pub(crate) fn host_rows(rows: &Tensor<1, Int>) -> Option<Vec<usize>> {
    if rows.device() != Device::flex() {
        return None;
    }
    rows.clone()
        .into_data()
        .convert::<i64>()
        .iter::<i64>()
        .map(|row| usize::try_from(row).ok())
        .collect()
}

/// `t.select(0, rows)` for `t` `[n, h, len, d]`: row `i` of the result is row `rows[i]` of `t`;
/// `host` is [`host_rows`] of `rows`.
pub(crate) fn select_rows(
    t: Tensor<4>,
    rows: &Tensor<1, Int>,
    host: Option<&[usize]>,
) -> Tensor<4> {
    let [n, h, len, d] = t.dims();
    let (Some(source), Some(indices)) = (Blocks::of(&t), host) else {
        return t.select(0, rows.clone());
    };
    if indices.iter().any(|&row| row >= n) {
        // An index out of range: Burn's `select` says so.
        return t.select(0, rows.clone());
    }
    let block = len * d;
    let fill = |out: &mut [MaybeUninit<f32>], first: usize| {
        for (out, &row) in out.chunks_exact_mut(h * block).zip(&indices[first..]) {
            for (head, out) in out.chunks_exact_mut(block).enumerate() {
                source.write(row * h + head, out);
            }
        }
    };
    let out = filled(indices.len(), h * block, fill);
    from_values(out, [indices.len(), h, len, d])
}

/// A float32 flex tensor `[n, h, len, d]` read in place, a block (`len × d` values) per pair of
/// its first two indices; any layout whose last axis is contiguous.
struct Blocks {
    tensor: FlexTensor,
    start: usize,
    /// The strides of the first three axes, in values.
    strides: [usize; 3],
    /// `h`, `len` and `d`.
    dims: [usize; 3],
}

impl Blocks {
    /// `t`'s flex primitive, when `t` is a float32 flex tensor with non-negative strides and
    /// its last axis contiguous.
    fn of(t: &Tensor<4>) -> Option<Self> {
        let tensor = t.clone().try_into_primitive::<Flex>().ok()?;
        if tensor.dtype() != DType::F32 {
            return None;
        }
        let layout = tensor.layout();
        let shape = layout.shape();
        let stride = |axis: usize| usize::try_from(layout.strides()[axis]).ok();
        if shape[3] > 1 && stride(3)? != 1 {
            return None;
        }
        let strides = [stride(0)?, stride(1)?, stride(2)?];
        let (start, dims) = (layout.start_offset(), [shape[1], shape[2], shape[3]]);
        Some(Self {
            tensor,
            start,
            strides,
            dims,
        })
    }

    /// Writes block `i` (first index `i / h`, second `i % h`) into `out`, row after row.
    fn write(&self, i: usize, out: &mut [MaybeUninit<f32>]) {
        let [h, len, d] = self.dims;
        let storage = self.tensor.storage::<f32>();
        let base = self.start + (i / h) * self.strides[0] + (i % h) * self.strides[1];
        if self.strides[2] == d || len <= 1 {
            out.write_copy_of_slice(&storage[base..][..len * d]);
        } else {
            for (row, out) in out.chunks_exact_mut(d).enumerate() {
                out.write_copy_of_slice(&storage[base + row * self.strides[2]..][..d]);
            }
        }
    }
}

/// `blocks` blocks of `block` values, every one written by `fill(out, first)` (`out` the
/// blocks from `first` on): in two halves, the second on the helper thread, when the output is
/// large enough.
fn filled(
    blocks: usize,
    block: usize,
    fill: impl Fn(&mut [MaybeUninit<f32>], usize) + Sync,
) -> Vec<f32> {
    let len = blocks * block;
    let mut out = Vec::with_capacity(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    if blocks >= 2 && len * size_of::<f32>() >= MIN_SPLIT_BYTES && crate::helper_thread::available()
    {
        let middle = blocks / 2;
        let (first, second) = spare.split_at_mut(middle * block);
        let fill = &fill;
        crate::helper_thread::join_borrowing(|| fill(first, 0), move || fill(second, middle));
    } else {
        fill(spare, 0);
    }
    // SAFETY: `fill` wrote every value of every block it was given (whole chunks of `block`
    // values, `blocks` of them in all), so the first `len` values are initialized.
    unsafe { out.set_len(len) };
    out
}

/// A flex tensor of `values` in `shape`, row-major.
fn from_values(values: Vec<f32>, shape: [usize; 4]) -> Tensor<4> {
    Tensor::from_primitive::<Flex>(FlexTensor::from_data(TensorData::new(values, shape)))
}

#[cfg(test)]
mod tests {
    use burn::tensor::Distribution;

    use super::*;

    use crate::int8::host_values as values;

    /// [`select_rows`] as incremental decoding calls it.
    fn select(t: Tensor<4>, rows: &Tensor<1, Int>) -> Tensor<4> {
        select_rows(t, rows, host_rows(rows).as_deref())
    }

    /// Indices are read to the host on flex only; on other devices the reordering is Burn's
    /// `select`, and still right.
    #[cfg(feature = "ndarray")]
    #[test]
    fn indices_are_read_on_flex_only() {
        let order = |device: &Device| {
            Tensor::<1, Int>::from_data(TensorData::new(vec![1i64, 0], [2]), device)
        };
        assert_eq!(host_rows(&order(&Device::flex())), Some(vec![1, 0]));
        let device = crate::parse_device("ndarray").expect("ndarray is compiled in");
        let rows = order(&device);
        assert_eq!(host_rows(&rows), None);
        let t = Tensor::<4>::random([2, 1, 2, 3], Distribution::Default, &device);
        assert_eq!(values(select(t.clone(), &rows)), values(t.select(0, rows)));
    }

    /// Small (one thread) and large (two) caches, as Burn's `cat` and `select` give them.
    #[test]
    fn equals_burns_cat_and_select() {
        let device = Device::flex();
        device.seed(3);
        for (rows, len) in [(3, 1), (5, 7), (320, 20)] {
            let cached = Tensor::<4>::random([rows, 4, len, 64], Distribution::Default, &device);
            let new = Tensor::<4>::random([rows, 4, 1, 64], Distribution::Default, &device);
            let appended = append(cached.clone(), new.clone());
            assert_eq!(appended.dims(), [rows, 4, len + 1, 64]);
            assert_eq!(
                values(appended),
                values(Tensor::cat(vec![cached.clone(), new], 2))
            );
            let order: Vec<i64> = (0..rows as i64)
                .map(|r| (r * 7 + 2) % rows as i64)
                .collect();
            let order = Tensor::<1, Int>::from_data(TensorData::new(order, [rows]), &device);
            assert_eq!(
                values(select(cached.clone(), &order)),
                values(cached.select(0, order))
            );
        }
    }

    /// Views, as decoding hands them over: the heads split out of the fused projection's
    /// output (a slice, reshaped, two axes swapped), and a view whose last axis is not
    /// contiguous (left to Burn).
    #[test]
    fn views_copy_as_burn_does() {
        let device = Device::flex();
        for (rows, q) in [(3, 1), (2, 4), (320, 1)] {
            let fused = Tensor::<3>::random([rows, q, 3 * 256], Distribution::Default, &device);
            let heads = |part: usize| {
                fused
                    .clone()
                    .slice([0..rows, 0..q, part * 256..(part + 1) * 256])
                    .reshape([rows, q, 4, 64])
                    .swap_dims(1, 2)
            };
            let (cached, new) = (heads(1), heads(2));
            assert_eq!(
                values(append(cached.clone(), new.clone())),
                values(Tensor::cat(vec![cached.clone(), new], 2))
            );
            let order: Vec<i64> = (0..rows as i64).rev().collect();
            let order = Tensor::<1, Int>::from_data(TensorData::new(order, [rows]), &device);
            assert_eq!(
                values(select(cached.clone(), &order)),
                values(cached.select(0, order))
            );
        }
        let t = Tensor::<4>::random([2, 3, 4, 5], Distribution::Default, &device).swap_dims(2, 3);
        let new = Tensor::<4>::random([2, 3, 1, 4], Distribution::Default, &device);
        assert_eq!(
            values(append(t.clone(), new.clone())),
            values(Tensor::cat(vec![t, new], 2))
        );
    }
}
