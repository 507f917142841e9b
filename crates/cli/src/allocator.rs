//! The allocator of the `rosetta` binary, also compiled into the decoding bench
//! (`crates/model/benches/decode.rs`) so that the bench measures what `rosetta translate` runs.
//!
//! mimalloc, built with its `no_thp` feature (the workspace's `Cargo.toml`): it does not ask the
//! kernel for transparent huge pages, whose first touch zeroes 2 MiB at a time. On the virtual
//! machines we measure on (Firecracker guests), memory a process has not touched before is
//! slow to fault in, and huge pages made the first batches of a decoding run touch more of it:
//! greedy search at batch 64 over 128 sentences ran at 5,137 / 4,534 target tokens/s with them
//! and 8,659 / 7,765 without, while training and long decoding runs were as fast either way
//! (docs/performance.md, "The bench under the binary's allocator").

/// mimalloc, in place of the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (the same index in its v2 and v3).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Tells mimalloc never to give freed memory back to the system. Training and batch decoding
/// free and reallocate the same large buffers at every step (activations and gradients; the
/// logits and the growing self-attention cache), and glibc (which unmaps every buffer above
/// 32 MiB) or mimalloc's default 10 ms purge make the kernel fault them in and zero them again
/// at each step (docs/performance.md).
// The workspace denies unsafe code; this one call into mimalloc is audited.
#[allow(unsafe_code)]
pub fn keep_freed_memory() {
    // SAFETY: mi_option_set only stores an integer option; -1 means "never purge".
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}
