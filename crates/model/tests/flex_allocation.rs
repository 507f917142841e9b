//! Burn's flex backend as Rosetta builds it (`vendor/burn-flex`, patched): a tensor that an
//! operation creates is allocated once. Published flex allocated every new buffer as a
//! `Vec<u8>` and, that allocation recording an alignment of 1, copied it into a second, aligned
//! one: two allocations of the output's size per operation, and one more pass over its memory
//! (beam search at 64 sentences decoded 16-22% faster without it; docs/performance.md).
//!
//! This test binary counts, through its own global allocator, the allocations of exactly the
//! output's size made by one matrix product; the patch lost, it counts two.

// A global allocator is unsafe to implement; this one only counts and forwards to the system's.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use rosetta_model::burn::tensor::{Device, Tensor, TensorData};

/// The system allocator, counting the allocations of `WATCHED` bytes made by the thread that
/// watches, at an alignment of at most 16 (a tensor's buffer; the matrix kernels' own buffers,
/// made on any thread, are aligned further).
struct Counting;

static WATCHED: AtomicUsize = AtomicUsize::new(0);
static COUNT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static WATCHING: Cell<bool> = const { Cell::new(false) };
}

fn note(layout: Layout) {
    if layout.size() == WATCHED.load(Ordering::SeqCst)
        && layout.align() <= 16
        && WATCHING.with(Cell::get)
    {
        COUNT.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; counting has no effect on
// the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if let Ok(grown) = Layout::from_size_align(new_size, layout.align()) {
            note(grown);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn a_matrix_product_allocates_its_output_once() {
    let device = Device::flex();
    let (m, k, n) = (64, 256, 1000);
    let lhs = Tensor::<2>::from_data(TensorData::new(vec![1.0f32; m * k], [m, k]), &device);
    let rhs = Tensor::<2>::from_data(TensorData::new(vec![0.5f32; k * n], [k, n]), &device);
    // A first product starts the thread pool and the matrix kernels' buffers.
    drop(lhs.clone().matmul(rhs.clone()));

    WATCHED.store(m * n * size_of::<f32>(), Ordering::SeqCst);
    COUNT.store(0, Ordering::SeqCst);
    WATCHING.with(|w| w.set(true));
    let product = lhs.matmul(rhs);
    WATCHING.with(|w| w.set(false));
    let allocations = COUNT.load(Ordering::SeqCst);
    WATCHED.store(0, Ordering::SeqCst);

    assert_eq!(
        allocations,
        1,
        "a [{m}, {n}] product allocated its {} bytes {allocations} times: is burn-flex patched \
         (Cargo.toml's [patch.crates-io], vendor/README.md)?",
        m * n * size_of::<f32>()
    );
    let values = product.into_data().try_to_vec::<f32>().expect("f32 values");
    assert_eq!(values.len(), m * n);
    assert!(
        values.iter().all(|&v| v == 128.0),
        "1 × 0.5 summed over 256"
    );
}
