//! Element-wise loops over whole buffers, on rayon's threads when the buffer is large.
//!
//! Rosetta's patch (vendor/README.md): unary and scalar operations, binary operations that
//! allocate their output, and fills ran on the calling thread whatever their size, so half of
//! a training step's time was element-wise work on one core while the others waited. Each
//! element's result depends on that element alone, so splitting the buffer changes no value.

use alloc::vec::Vec;

/// Elements from which a loop is split across rayon's threads (the SIMD element-wise kernels
/// of `simd/portable.rs` use it too).
#[cfg(feature = "rayon")]
pub(crate) const PARALLEL_ELEMENTS: usize = 128 * 1024;

/// Elements per rayon task.
#[cfg(feature = "rayon")]
pub(crate) const CHUNK_ELEMENTS: usize = 32 * 1024;

/// `x = f(x)` for every element of `values`.
#[inline]
pub(crate) fn map_inplace<E, F>(values: &mut [E], f: F)
where
    E: Copy + Send,
    F: Fn(E) -> E + Send + Sync,
{
    #[cfg(feature = "rayon")]
    if values.len() >= PARALLEL_ELEMENTS {
        use rayon::prelude::*;
        values.par_chunks_mut(CHUNK_ELEMENTS).for_each(|chunk| {
            for x in chunk.iter_mut() {
                *x = f(*x);
            }
        });
        return;
    }
    for x in values.iter_mut() {
        *x = f(*x);
    }
}

/// `f(x)` for every element of `values`, collected in order.
#[inline]
pub(crate) fn map_collect<E, R, F>(values: &[E], f: F) -> Vec<R>
where
    E: Copy + Sync,
    R: Send,
    F: Fn(E) -> R + Send + Sync,
{
    #[cfg(feature = "rayon")]
    if values.len() >= PARALLEL_ELEMENTS {
        use rayon::prelude::*;
        let mut out = Vec::with_capacity(values.len());
        values
            .par_iter()
            .with_min_len(CHUNK_ELEMENTS)
            .map(|&x| f(x))
            .collect_into_vec(&mut out);
        return out;
    }
    values.iter().map(|&x| f(x)).collect()
}

/// `f(a, b)` for every pair of elements of `lhs` and `rhs` (of equal length), collected in
/// order.
#[inline]
pub(crate) fn zip_collect<E, R, F>(lhs: &[E], rhs: &[E], f: F) -> Vec<R>
where
    E: Copy + Sync,
    R: Send,
    F: Fn(E, E) -> R + Send + Sync,
{
    debug_assert_eq!(lhs.len(), rhs.len());
    #[cfg(feature = "rayon")]
    if lhs.len() >= PARALLEL_ELEMENTS {
        use rayon::prelude::*;
        let mut out = Vec::with_capacity(lhs.len());
        lhs.par_iter()
            .zip(rhs.par_iter())
            .with_min_len(CHUNK_ELEMENTS)
            .map(|(&a, &b)| f(a, b))
            .collect_into_vec(&mut out);
        return out;
    }
    lhs.iter().zip(rhs).map(|(&a, &b)| f(a, b)).collect()
}

/// `count` copies of `value`, written by rayon's threads when they make a large buffer (the
/// threshold counted in 4-byte elements, whatever `E` is).
#[inline]
pub(crate) fn filled<E: Copy + Send + Sync>(count: usize, value: E) -> Vec<E> {
    #[cfg(feature = "rayon")]
    if count.saturating_mul(core::mem::size_of::<E>()) >= PARALLEL_ELEMENTS * 4 {
        use rayon::prelude::*;
        let per_task = (CHUNK_ELEMENTS * 4).div_ceil(core::mem::size_of::<E>().max(1));
        let mut out = Vec::with_capacity(count);
        rayon::iter::repeat_n(value, count)
            .with_min_len(per_task)
            .collect_into_vec(&mut out);
        return out;
    }
    alloc::vec![value; count]
}
