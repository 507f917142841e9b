//! The self-attention cache's two copies per decoding step, on flex, split between rayon's
//! threads: appending the step's keys and values (`cat` along the length axis) and, in beam
//! search, reordering the rows (`select`).
//!
//! At beam 5 and batch 64 these copies move the whole cache twice a step (320 rows × 4 heads ×
//! the length so far × 64 values, keys and values, every layer), and flex runs each on the
//! calling thread while rayon's threads, which run the step's products, wait: 15% of the run's
//! wall time in `memmove` (`perf record` on `decode --grid 5:64:128:13:20`, docs/performance.md).
//! Here a large copy is split in two halves of its rows, one per thread. The values are copied,
//! not computed: the result is Burn's, bit for bit (tests below).

use std::mem::MaybeUninit;

use burn::tensor::{DType, Int, Tensor, TensorData};
use burn_flex::{Flex, FlexTensor};

/// The fewest bytes a copy must write to be split between two threads: below, waking a rayon
/// thread costs about what it saves.
const MIN_SPLIT_BYTES: usize = 1 << 20;

/// `Tensor::cat(vec![cached, new], 2)` for `cached` `[b, h, len, d]` and `new` `[b, h, q, d]`.
pub(crate) fn append(cached: Tensor<4>, new: Tensor<4>) -> Tensor<4> {
    let [b, h, len, d] = cached.dims();
    let [nb, nh, q, nd] = new.dims();
    let (Some(old), Some(fresh)) = (values_of(&cached), values_of(&new)) else {
        return Tensor::cat(vec![cached, new], 2);
    };
    if (nb, nh, nd) != (b, h, d) {
        return Tensor::cat(vec![cached, new], 2);
    }
    let (old_block, new_block) = (len * d, q * d);
    let block = old_block + new_block;
    let fill = |out: &mut [MaybeUninit<f32>], first: usize| {
        for (i, out) in out.chunks_exact_mut(block).enumerate() {
            let at = first + i;
            out[..old_block].write_copy_of_slice(&old.values()[at * old_block..][..old_block]);
            out[old_block..].write_copy_of_slice(&fresh.values()[at * new_block..][..new_block]);
        }
    };
    let out = filled(b * h, block, fill);
    from_values(out, [b, h, len + q, d])
}

/// `t.select(0, rows)` for `t` `[n, h, len, d]`: row `i` of the result is row `rows[i]` of `t`.
pub(crate) fn select_rows(t: Tensor<4>, rows: &Tensor<1, Int>) -> Tensor<4> {
    let [n, h, len, d] = t.dims();
    let Some(source) = values_of(&t) else {
        return t.select(0, rows.clone());
    };
    let indices: Option<Vec<usize>> = rows
        .clone()
        .into_data()
        .convert::<i64>()
        .iter::<i64>()
        .map(|row| usize::try_from(row).ok().filter(|&row| row < n))
        .collect();
    let Some(indices) = indices else {
        // An index out of range: Burn's `select` says so.
        return t.select(0, rows.clone());
    };
    let block = h * len * d;
    let fill = |out: &mut [MaybeUninit<f32>], first: usize| {
        for (out, &row) in out.chunks_exact_mut(block).zip(&indices[first..]) {
            out.write_copy_of_slice(&source.values()[row * block..][..block]);
        }
    };
    let out = filled(indices.len(), block, fill);
    from_values(out, [indices.len(), h, len, d])
}

/// A contiguous float32 flex tensor and where its values lie in its storage.
struct Values {
    tensor: FlexTensor,
    range: std::ops::Range<usize>,
}

impl Values {
    /// Its values, row-major.
    fn values(&self) -> &[f32] {
        &self.tensor.storage::<f32>()[self.range.clone()]
    }
}

/// `t`'s flex primitive, when `t` is a contiguous float32 flex tensor.
fn values_of(t: &Tensor<4>) -> Option<Values> {
    let tensor = t.clone().try_into_primitive::<Flex>().ok()?;
    if tensor.dtype() != DType::F32 {
        return None;
    }
    let (start, end) = tensor.layout().contiguous_offsets()?;
    Some(Values {
        tensor,
        range: start..end,
    })
}

/// `blocks` blocks of `block` values, every one written by `fill(out, first)` (`out` the
/// blocks from `first` on): in two halves on rayon's threads when the output is large enough.
fn filled(
    blocks: usize,
    block: usize,
    fill: impl Fn(&mut [MaybeUninit<f32>], usize) + Sync,
) -> Vec<f32> {
    let len = blocks * block;
    let mut out = Vec::with_capacity(len);
    let spare = &mut out.spare_capacity_mut()[..len];
    if blocks >= 2 && len * size_of::<f32>() >= MIN_SPLIT_BYTES && rayon::current_num_threads() >= 2
    {
        let middle = blocks / 2;
        let (first, second) = spare.split_at_mut(middle * block);
        rayon::join(|| fill(first, 0), || fill(second, middle));
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
    use burn::tensor::{Device, Distribution};

    use super::*;

    fn values(t: Tensor<4>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().expect("f32")
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
                values(select_rows(cached.clone(), &order)),
                values(cached.select(0, order))
            );
        }
    }

    #[test]
    fn views_are_left_to_burn_with_the_same_result() {
        let device = Device::flex();
        let t = Tensor::<4>::random([2, 3, 4, 5], Distribution::Default, &device).swap_dims(1, 2);
        let new = Tensor::<4>::random([2, 4, 1, 5], Distribution::Default, &device);
        assert_eq!(
            values(append(t.clone(), new.clone())),
            values(Tensor::cat(vec![t, new], 2))
        );
    }
}
