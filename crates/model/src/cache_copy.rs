//! The self-attention cache's two copies per decoding step, on flex: appending the step's keys
//! and values (`cat` along the length axis) and, in beam search, reordering the rows (`select`).
//!
//! **The cache grows in place.** A cache this module makes is a view of the first `len`
//! positions of a buffer with room for more (`[rows, heads, capacity, d]`, the view's strides
//! those of the whole buffer); appending to one whose buffer nobody else holds writes the new
//! positions into that room, and copies nothing that was there. Only when the room runs out,
//! or the buffer is shared, or the cache came from elsewhere (the first step's keys, a view of
//! the fused projection), is it copied into a new buffer, with [`room_for`] positions: half as
//! many again as it needs, so that greedy search copies its cache a handful of times in a
//! sentence instead of at every step, whose cost grew with the length. Attention reads the
//! view in place (flex's naive attention takes each head's rows where they lie: the sixth
//! patch, vendor/README.md).
//!
//! Reordering the rows (beam search, every step) still copies each kept row's positions once,
//! into a buffer with room for one more position, so that the step's append after it writes
//! in place.
//!
//! At beam 5 and batch 64 these copies moved the whole cache twice a step (320 rows × 4 heads
//! × the length so far × 64 values, keys and values, every layer), and flex ran each on the
//! calling thread while rayon's threads, which run the step's products, waited: 15% of the
//! run's wall time in `memmove` (`perf record` on `decode --grid 5:64:128:13:20`,
//! docs/performance.md). Here a large copy is split in two halves of its rows, one on the
//! calling thread and one on the spinning [helper](crate::helper_thread). The values are
//! copied, not computed: the cache holds Burn's values, bit for bit (tests below).

use std::mem::MaybeUninit;

use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use burn_flex::{Flex, FlexTensor, Layout};

/// The fewest bytes a copy must write to be split between two threads: a quarter of a
/// megabyte, at greedy batch 64 the cache's copies from the fourth step on. (`decode --grid`,
/// seven rounds alternating, from 1 MB to 256 KB: greedy batch 64 9,612 → 10,179 target
/// tokens/s, beam 5 batch 64 2,296 → 2,307, beam 5 batch 1, whose copies stay below, unchanged;
/// docs/performance.md.)
const MIN_SPLIT_BYTES: usize = 1 << 18;

/// The fewest spare positions a cache copied into a new buffer for appending is given.
const MIN_ROOM: usize = 16;

/// The positions a new buffer gets for a cache of `len` positions that will grow: half as many
/// again, at least [`MIN_ROOM`] more.
fn room_for(len: usize) -> usize {
    len + (len / 2).max(MIN_ROOM)
}

/// `Tensor::cat(vec![cached, new], 2)` for `cached` `[b, h, len, d]` and `new` `[b, h, q, d]`
/// (either may be a view, such as the heads split out of the fused projection): written into
/// `cached`'s own buffer when it has room and nobody else holds it, else copied with `new`
/// into a new buffer with room to grow.
pub(crate) fn append(cached: Tensor<4>, new: Tensor<4>) -> Tensor<4> {
    let [b, h, len, d] = cached.dims();
    let [nb, nh, q, nd] = new.dims();
    let Some(fresh) = Blocks::of(&new) else {
        return Tensor::cat(vec![cached, new], 2);
    };
    if (nb, nh, nd) != (b, h, d) || d == 0 {
        return Tensor::cat(vec![cached, new], 2);
    }
    let cached = match in_place(cached, &fresh) {
        Append::Written(grown) => return grown,
        Append::NoRoom(cached) => cached,
    };
    let Some(old) = Blocks::of(&cached) else {
        return Tensor::cat(vec![cached, new], 2);
    };
    let capacity = room_for(len + q);
    let (old_block, new_block) = (len * d, q * d);
    let fill = |out: &mut [MaybeUninit<f32>], first: usize| {
        for (i, out) in out.chunks_exact_mut(capacity * d).enumerate() {
            let (old_part, rest) = out.split_at_mut(old_block);
            let (new_part, room) = rest.split_at_mut(new_block);
            old.write(first + i, old_part);
            fresh.write(first + i, new_part);
            room.fill(MaybeUninit::new(0.0));
        }
    };
    let out = filled(b * h, capacity * d, fill);
    with_room(out, [b, h, len + q, d], capacity)
}

/// What [`in_place`] did with a cache.
enum Append {
    /// The new positions written into the cache's room: the view of all its positions.
    Written(Tensor<4>),
    /// The cache, untouched: no room, or not its own.
    NoRoom(Tensor<4>),
}

/// `new` written into positions `len..len + q` of `cached`'s buffer, and the view of the
/// `len + q` positions; `cached` untouched when it is not a view this module made with room for
/// `q` more, or its buffer is shared (another tensor still reads it).
fn in_place(cached: Tensor<4>, new: &Blocks) -> Append {
    let [b, h, len, d] = cached.dims();
    let q = new.dims[1];
    let device = cached.device();
    if device != Device::flex() || device.is_autodiff() {
        return Append::NoRoom(cached);
    }
    // The buffer's positions, when `cached` is a view this module made with room for `q` more.
    let capacity = {
        let Some(probe) = cached.clone().try_into_primitive::<Flex>().ok() else {
            return Append::NoRoom(cached);
        };
        let layout = probe.layout();
        let capacity = usize::try_from(layout.strides()[1]).unwrap_or(0) / d.max(1);
        let fits = probe.dtype() == DType::F32
            && layout.start_offset() == 0
            && layout.strides() == strides_with_room(h, capacity, d)
            && len + q <= capacity
            && probe.storage::<f32>().len() == b * h * capacity * d;
        if !fits {
            return Append::NoRoom(cached);
        }
        capacity
    };
    let Ok(mut tensor) = cached.try_into_primitive::<Flex>() else {
        unreachable!("a float flex tensor off autodiff is flex's primitive (checked above)");
    };
    let strides = strides_with_room(h, capacity, d).to_vec();
    let Some(storage) = tensor.try_storage_mut::<f32>() else {
        // Shared: leave the buffer to its other readers and copy.
        return Append::NoRoom(Tensor::from_primitive::<Flex>(tensor));
    };
    let (old_block, new_block) = (len * d, q * d);
    for (i, block) in storage.chunks_exact_mut(capacity * d).enumerate() {
        let room = &mut block[old_block..old_block + new_block];
        new.write(i, as_uninit(room));
    }
    let layout = Layout::new([b, h, len + q, d].into(), strides, 0);
    Append::Written(Tensor::from_primitive::<Flex>(tensor.with_layout(layout)))
}

/// `values` as slots to overwrite.
fn as_uninit(values: &mut [f32]) -> &mut [MaybeUninit<f32>] {
    // SAFETY: `MaybeUninit<f32>` has `f32`'s layout, and only initialized values are written
    // through the result.
    unsafe { &mut *(values as *mut [f32] as *mut [MaybeUninit<f32>]) }
}

/// The strides of a cache view `[b, h, len, d]` of a buffer `[b, h, capacity, d]`.
fn strides_with_room(h: usize, capacity: usize, d: usize) -> [isize; 4] {
    [
        (h * capacity * d) as isize,
        (capacity * d) as isize,
        d as isize,
        1,
    ]
}

/// A flex tensor viewing the first `shape[2]` positions of `values`, a buffer
/// `[shape[0], shape[1], capacity, shape[3]]`.
fn with_room(values: Vec<f32>, shape: [usize; 4], capacity: usize) -> Tensor<4> {
    let [b, h, _, d] = shape;
    debug_assert_eq!(values.len(), b * h * capacity * d);
    let whole = FlexTensor::from_data(TensorData::new(values, [b, h, capacity, d]));
    let strides = strides_with_room(h, capacity, d).to_vec();
    let layout = Layout::new(shape.to_vec().into(), strides, 0);
    Tensor::from_primitive::<Flex>(whole.with_layout(layout))
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

/// `t.select(0, rows)` for `t` `[n, h, len, d]`: row `i` of the result is row `rows[i]` of `t`,
/// in a buffer with room for one more position; `host` is [`host_rows`] of `rows`.
pub(crate) fn select_rows(
    t: Tensor<4>,
    rows: &Tensor<1, Int>,
    host: Option<&[usize]>,
) -> Tensor<4> {
    let [n, h, len, d] = t.dims();
    let (Some(source), Some(indices)) = (Blocks::of(&t), host) else {
        return t.select(0, rows.clone());
    };
    if indices.iter().any(|&row| row >= n) || d == 0 {
        // An index out of range: Burn's `select` says so (and reorders empty rows).
        return t.select(0, rows.clone());
    }
    // Room for the step's append that follows a reordering.
    let capacity = len + 1;
    let (block, spare) = (capacity * d, len * d);
    let fill = |out: &mut [MaybeUninit<f32>], first: usize| {
        for (out, &row) in out.chunks_exact_mut(h * block).zip(&indices[first..]) {
            for (head, out) in out.chunks_exact_mut(block).enumerate() {
                let (kept, room) = out.split_at_mut(spare);
                source.write(row * h + head, kept);
                room.fill(MaybeUninit::new(0.0));
            }
        }
    };
    let out = filled(indices.len(), h * block, fill);
    with_room(out, [indices.len(), h, len, d], capacity)
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

    /// The indices `0..n`.
    fn all(n: i64, device: &Device) -> Tensor<1, Int> {
        Tensor::<1, Int>::from_data(
            TensorData::new((0..n).collect::<Vec<i64>>(), [n as usize]),
            device,
        )
    }

    /// `t`'s strides on flex (a view with room has a longer one over its positions).
    fn strides(t: &Tensor<4>) -> Vec<isize> {
        let primitive = t.clone().try_into_primitive::<Flex>().expect("flex");
        primitive.layout().strides().to_vec()
    }

    /// `t`'s values in a new contiguous tensor.
    fn contiguous(t: &Tensor<4>) -> Tensor<4> {
        Tensor::<4>::from_data(TensorData::new(values(t.clone()), t.dims()), &t.device())
    }

    /// Where `t`'s buffer starts: the same address after an append means it was written in
    /// place.
    fn buffer(t: &Tensor<4>) -> *const f32 {
        let primitive = t.clone().try_into_primitive::<Flex>().expect("flex");
        primitive.storage::<f32>().as_ptr()
    }

    /// One position at a time, as greedy search appends: copied into a buffer with room at the
    /// first append, written in place while the room lasts, copied into a larger buffer when it
    /// runs out; Burn's `cat` at every step.
    #[test]
    fn appends_write_in_place_while_the_room_lasts() {
        let device = Device::flex();
        device.seed(4);
        let position = || Tensor::<4>::random([3, 2, 1, 8], Distribution::Default, &device);
        let mut reference = position();
        let mut cache = reference.clone();
        let mut copies = 0;
        let mut previous = std::ptr::null();
        for len in 1..60 {
            let new = position();
            reference = Tensor::cat(vec![reference, new.clone()], 2);
            cache = append(cache, new);
            assert_eq!(cache.dims(), [3, 2, len + 1, 8]);
            assert_eq!(values(cache.clone()), values(reference.clone()));
            if buffer(&cache) != previous {
                copies += 1;
                previous = buffer(&cache);
            }
        }
        // Room for 17 (1 + 16), then 2 + 16 = 18 → 34, 35 → 52, 53 → 79: four buffers for 60.
        assert_eq!(copies, 4);
        assert_eq!(room_for(1), 17);
        assert_eq!(room_for(35), 52);
    }

    /// A cache whose buffer another tensor still holds (a cloned decoder state) is copied, not
    /// written: each of the two appends keeps its own values.
    #[test]
    fn a_shared_buffer_is_copied_not_overwritten() {
        let device = Device::flex();
        let cache = append(
            Tensor::<4>::random([2, 2, 3, 4], Distribution::Default, &device),
            Tensor::<4>::random([2, 2, 1, 4], Distribution::Default, &device),
        );
        let held = cache.clone();
        let (a, b) = (
            Tensor::<4>::random([2, 2, 1, 4], Distribution::Default, &device),
            Tensor::<4>::random([2, 2, 1, 4], Distribution::Default, &device),
        );
        let with_a = append(cache, a.clone());
        assert_ne!(buffer(&with_a), buffer(&held));
        let (start, before) = (buffer(&held), held.clone().select(0, all(2, &device)));
        let with_b = append(held, b.clone());
        assert_eq!(buffer(&with_b), start, "the last holder writes in place");
        assert_eq!(
            values(with_a),
            values(Tensor::cat(vec![before.clone(), a], 2))
        );
        assert_eq!(values(with_b), values(Tensor::cat(vec![before, b], 2)));
    }

    /// A reordering leaves room for the next step's position, which is then written in place.
    #[test]
    fn a_reordered_cache_takes_the_next_position_in_place() {
        let device = Device::flex();
        let cache = Tensor::<4>::random([4, 2, 5, 8], Distribution::Default, &device);
        let order = Tensor::<1, Int>::from_data(TensorData::from([2i64, 2, 0, 3]), &device);
        let reordered = select(cache.clone(), &order);
        let start = buffer(&reordered);
        let new = Tensor::<4>::random([4, 2, 1, 8], Distribution::Default, &device);
        let appended = append(reordered, new.clone());
        assert_eq!(buffer(&appended), start);
        assert_eq!(
            values(appended),
            values(Tensor::cat(vec![cache.select(0, order), new], 2))
        );
    }

    /// A key and value broadcast along their last axis (stride 0) are not rows of contiguous
    /// values: flex's attention copies them, as published, and gives what it gives over copies.
    #[test]
    fn attention_over_a_broadcast_last_axis_equals_it_over_a_copy() {
        use burn::tensor::module::attention;
        use burn::tensor::ops::AttentionModuleOptions;
        let device = Device::flex();
        device.seed(10);
        let query = Tensor::<4>::random([2, 2, 3, 8], Distribution::Default, &device);
        // One column of wider rows, repeated: rows 16 values apart, each 8 copies of one.
        let broadcast = || {
            Tensor::<4>::random([2, 2, 5, 16], Distribution::Default, &device)
                .slice([0..2, 0..2, 0..5, 0..1])
                .expand([2, 2, 5, 8])
        };
        let (keys, vals) = (broadcast(), broadcast());
        let strides = strides(&keys);
        assert_eq!((strides[2], strides[3]), (16, 0), "a broadcast last axis");
        let attend = |k: Tensor<4>, v: Tensor<4>| {
            let options = AttentionModuleOptions::default();
            values(attention(query.clone(), k, v, None, None, options))
        };
        assert_eq!(
            attend(keys.clone(), vals.clone()),
            attend(contiguous(&keys), contiguous(&vals))
        );
    }

    /// Flex's attention reads a cache with room in place (the vendored patch) and gives, bit
    /// for bit, what it gives over the same values laid out contiguously: one query and a
    /// source mask (a step), and several queries (a chunk).
    #[test]
    fn attention_over_a_cache_with_room_equals_it_over_a_copy() {
        use burn::tensor::Bool;
        use burn::tensor::module::attention;
        use burn::tensor::ops::AttentionModuleOptions;
        let device = Device::flex();
        device.seed(9);
        let mut keys = Tensor::<4>::random([3, 4, 1, 16], Distribution::Default, &device);
        let mut vals = Tensor::<4>::random([3, 4, 1, 16], Distribution::Default, &device);
        for _ in 0..6 {
            let more = || Tensor::<4>::random([3, 4, 1, 16], Distribution::Default, &device);
            keys = append(keys, more());
            vals = append(vals, more());
        }
        let (keys_copy, vals_copy) = (contiguous(&keys), contiguous(&vals));
        let strides = strides(&keys);
        assert_ne!(
            strides[1],
            7 * 16,
            "a view with room, not a contiguous tensor"
        );
        for q in [1, 3] {
            let query = Tensor::<4>::random([3, 4, q, 16], Distribution::Default, &device);
            let mask = Tensor::<4, Bool>::from_data(
                TensorData::new(
                    (0..3 * 7).map(|i| i % 5 == 4).collect::<Vec<bool>>(),
                    [3, 1, 1, 7],
                ),
                &device,
            )
            .expand([3, 4, q, 7]);
            let attend = |k: Tensor<4>, v: Tensor<4>| {
                let options = AttentionModuleOptions::default();
                values(attention(
                    query.clone(),
                    k,
                    v,
                    Some(mask.clone()),
                    None,
                    options,
                ))
            };
            assert_eq!(
                attend(keys.clone(), vals.clone()),
                attend(keys_copy.clone(), vals_copy.clone())
            );
        }
    }
}
