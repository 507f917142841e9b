//! Data parallelism on the CPU: rayon's thread pool natively (a single chunk on the calling
//! thread); in sequence in WebAssembly, which runs on one thread (and where rayon's code would
//! only add to the download).

/// `f(index, chunk)` for each `size`-element chunk of `data`, results in chunk order.
pub(crate) fn map_chunks<T, R>(
    data: &[T],
    size: usize,
    f: impl Fn(usize, &[T]) -> R + Sync + Send,
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    // One chunk runs here: handing it to rayon's pool from outside the pool would wait for a
    // sleeping worker to wake (tens of microseconds, a greedy step's host pass at batch 1).
    #[cfg(not(target_arch = "wasm32"))]
    if data.len() > size {
        use rayon::prelude::*;
        return data
            .par_chunks(size)
            .enumerate()
            .map(|(i, chunk)| f(i, chunk))
            .collect();
    }
    data.chunks(size)
        .enumerate()
        .map(|(i, chunk)| f(i, chunk))
        .collect()
}

/// `f(index, chunk)` for each `size`-element chunk of `data`, mutably.
pub(crate) fn for_each_chunk_mut<T>(
    data: &mut [T],
    size: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) where
    T: Send,
{
    #[cfg(not(target_arch = "wasm32"))]
    if data.len() > size {
        use rayon::prelude::*;
        data.par_chunks_mut(size)
            .enumerate()
            .for_each(|(i, chunk)| f(i, chunk));
        return;
    }
    data.chunks_mut(size)
        .enumerate()
        .for_each(|(i, chunk)| f(i, chunk));
}

#[cfg(test)]
mod tests {
    use super::{for_each_chunk_mut, map_chunks};

    #[test]
    fn chunks_come_back_in_order_with_their_index() {
        let data: Vec<u32> = (0..10).collect();
        let sums = map_chunks(&data, 4, |i, chunk| (i, chunk.iter().sum::<u32>()));
        assert_eq!(sums, vec![(0, 6), (1, 22), (2, 17)]);
        let mut data = vec![0usize; 7];
        for_each_chunk_mut(&mut data, 3, |i, chunk| {
            chunk.iter_mut().for_each(|x| *x = i)
        });
        assert_eq!(data, vec![0, 0, 0, 1, 1, 1, 2]);
    }
}
