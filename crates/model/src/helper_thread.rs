//! Two pieces of work at once, one on the calling thread and one on a helper thread that
//! spins between pieces instead of sleeping.
//!
//! Decoding's matrix products at one to a few rows take 0.01–0.4 ms. Burn's flex backend runs
//! products under 192³ multiply-adds on one thread, and rayon, which runs the larger ones, puts
//! its threads to sleep between operations: waking one costs about as much as such a product,
//! so splitting it through rayon gains nothing (measured with `scripts/gemm_direct`). The
//! helper thread here waits for work by spinning, as OpenMP's threads do in PyTorch and
//! CTranslate2, for [`SPIN`] after each piece, then parks until the next one. A greedy step at
//! batch 1 hands it a piece every 0.5–1 ms, so it stays awake for the whole search and parks
//! [`SPIN`] after the search ends. While it spins it yields its core now and then, so that
//! rayon's threads, which run flex's larger operations between the products, are not kept
//! waiting for a core by it: greedy search at batch 64 ran 8.6% faster (median of six runs,
//! `decode --grid 1:64:256:13:20`, docs/performance.md), batch 1 unchanged.
//!
//! One caller at a time: a second thread calling [`join`] while the helper works for another
//! runs both pieces itself, as do callers where threads cannot help (WebAssembly, or rayon's
//! pool set to one thread). A caller whose first piece ends before the helper has started the
//! second takes the second back and runs it too: on a machine busy with other work the helper
//! may wait long for a core, and waiting for it made greedy search at batch 1 run at under a
//! tenth of its one-thread speed (docs/performance.md).

/// How long the helper spins after a piece before it parks.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) const SPIN: std::time::Duration = std::time::Duration::from_millis(2);

/// A thread spinning here (the helper for a piece, a caller for the helper's result) yields its
/// core once every this many spins.
#[cfg(not(target_arch = "wasm32"))]
const YIELD_EVERY: u32 = 64;

/// Whether [`join`] runs its second piece on the helper thread here: natively, when rayon's
/// pool (the threads Rosetta computes with) has at least two threads.
pub(crate) fn available() -> bool {
    #[cfg(not(target_arch = "wasm32"))]
    {
        native::usable().is_some()
    }
    #[cfg(target_arch = "wasm32")]
    {
        false
    }
}

/// Runs `a` on this thread and `b` on the helper thread at the same time, and returns both
/// results. Runs them one after the other on this thread when the helper is not
/// [`available`], is working for another caller, or has not claimed `b` when `a` ends. A
/// panic in either reaches the caller: when the helper runs `b`, after both have finished; when
/// this thread runs both, a panic in the first to run skips the other.
pub(crate) fn join<A, B>(a: impl FnOnce() -> A, b: impl FnOnce() -> B + Send + 'static) -> (A, B)
where
    B: Send + 'static,
{
    #[cfg(not(target_arch = "wasm32"))]
    if let Some(helper) = native::usable() {
        return helper.join(a, b);
    }
    let b = b();
    (a(), b)
}

/// [`join`] for a second piece that borrows from the caller's stack (as `rayon::join`'s pieces
/// may): `a` here and `b` on the helper at the same time, both ended when this returns.
#[allow(unsafe_code)]
pub(crate) fn join_borrowing<'b, A>(a: impl FnOnce() -> A, b: impl FnOnce() + Send + 'b) -> A {
    let b: Box<dyn FnOnce() + Send + 'b> = Box::new(b);
    // SAFETY: only the lifetime is erased. `join` returns, or unwinds, only after `b` has run
    // and been dropped (on the helper, or here when it is busy or has not claimed `b` when `a`
    // ends; a panic in `a` is held until then), so nothing `b` borrows is used after its
    // lifetime `'b`, which outlasts this call.
    let b: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(b) };
    join(a, b).0
}

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    use std::sync::{Arc, Mutex, OnceLock, PoisonError};
    use std::thread::{self, Thread};
    use std::time::Instant;

    use super::{SPIN, YIELD_EVERY};

    /// Spin number `spins` of a wait: a pause, or every [`YIELD_EVERY`]th one a yield of the
    /// core, so that a thread waiting for it (one of rayon's between two products, or the helper
    /// on a busy machine) gets it now rather than at the end of the scheduler's time slice;
    /// with none, the yield returns at once. Returns whether it yielded.
    fn pause(spins: u32) -> bool {
        if spins.is_multiple_of(YIELD_EVERY) {
            thread::yield_now();
            true
        } else {
            std::hint::spin_loop();
            false
        }
    }

    type Job = Box<dyn FnOnce() + Send>;

    /// Nothing posted (or the last piece's result taken, or the piece taken back by its caller).
    const IDLE: u8 = 0;
    /// A piece is waiting in `job`.
    const POSTED: u8 = 1;
    /// The helper has taken the posted piece and is running it.
    const RUNNING: u8 = 2;
    /// The posted piece has run.
    const DONE: u8 = 3;

    /// The helper thread and its one-piece mailbox.
    pub(super) struct Helper {
        /// A caller holds the helper (from posting to taking the result).
        taken: AtomicBool,
        state: AtomicU8,
        job: Mutex<Option<Job>>,
        /// The helper is parked (or about to park): a caller posting must unpark it.
        parked: AtomicBool,
        thread: OnceLock<Thread>,
    }

    /// The helper when rayon's pool has at least two threads (and the helper could start).
    pub(super) fn usable() -> Option<&'static Helper> {
        if rayon::current_num_threads() < 2 {
            return None;
        }
        helper()
    }

    /// The process's helper, started on first use; `None` if the thread could not be started.
    fn helper() -> Option<&'static Helper> {
        static HELPER: OnceLock<Option<&'static Helper>> = OnceLock::new();
        *HELPER.get_or_init(|| {
            let helper: &'static Helper = Box::leak(Box::new(Helper {
                taken: AtomicBool::new(false),
                state: AtomicU8::new(IDLE),
                job: Mutex::new(None),
                parked: AtomicBool::new(false),
                thread: OnceLock::new(),
            }));
            let handle = thread::Builder::new()
                .name("rosetta-product-helper".into())
                .spawn(move || helper.serve())
                .ok()?;
            helper.thread.set(handle.thread().clone()).ok()?;
            Some(helper)
        })
    }

    impl Helper {
        /// The helper thread's loop: wait for a piece (spinning, then parked), run it, mark it
        /// done.
        fn serve(&self) {
            loop {
                let mut since = Instant::now();
                let mut spins = 0u32;
                while self.state.load(Ordering::SeqCst) != POSTED {
                    spins = spins.wrapping_add(1);
                    // The clock is read only after a yield: reading it is slower than a spin.
                    if !pause(spins) || since.elapsed() < SPIN {
                        continue;
                    }
                    self.parked.store(true, Ordering::SeqCst);
                    // A caller that posted before seeing `parked` did not unpark: look again.
                    if self.state.load(Ordering::SeqCst) != POSTED {
                        thread::park();
                    }
                    self.parked.store(false, Ordering::SeqCst);
                    since = Instant::now();
                }
                // The caller may have taken the piece back meanwhile (see `join`).
                if self
                    .state
                    .compare_exchange(POSTED, RUNNING, Ordering::SeqCst, Ordering::SeqCst)
                    .is_err()
                {
                    continue;
                }
                self.run_posted();
                self.state.store(DONE, Ordering::SeqCst);
            }
        }

        /// Runs the piece in the mailbox (it fills its caller's result slot).
        fn run_posted(&self) {
            let job = self
                .job
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(job) = job {
                job();
            }
        }

        pub(super) fn join<A, B>(
            &self,
            a: impl FnOnce() -> A,
            b: impl FnOnce() -> B + Send + 'static,
        ) -> (A, B)
        where
            B: Send + 'static,
        {
            if self
                .taken
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                let b = b();
                return (a(), b);
            }
            let slot: Arc<Mutex<Option<thread::Result<B>>>> = Arc::new(Mutex::new(None));
            let filled = Arc::clone(&slot);
            *self.job.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(move || {
                let result = catch_unwind(AssertUnwindSafe(b));
                *filled.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
            }));
            self.state.store(POSTED, Ordering::SeqCst);
            if self.parked.load(Ordering::SeqCst)
                && let Some(thread) = self.thread.get()
            {
                thread.unpark();
            }
            let a = catch_unwind(AssertUnwindSafe(a));
            if self
                .state
                .compare_exchange(POSTED, IDLE, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                // The helper has not started `b` (on a busy machine it may be waiting for a
                // core): run it here rather than wait for it.
                self.run_posted();
            } else {
                let mut spins = 0u32;
                while self.state.load(Ordering::SeqCst) != DONE {
                    spins = spins.wrapping_add(1);
                    pause(spins);
                }
                self.state.store(IDLE, Ordering::SeqCst);
            }
            let b = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            self.taken.store(false, Ordering::Release);
            match (a, b) {
                (Ok(a), Some(Ok(b))) => (a, b),
                (Err(panic), _) | (_, Some(Err(panic))) => resume_unwind(panic),
                (Ok(_), None) => {
                    unreachable!("a piece is marked done, or taken back, after filling its slot")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spins for `micros` microseconds: a first piece long enough for the helper to claim the
    /// second (a piece it has not claimed when the first ends runs on the caller).
    fn busy(micros: u64) {
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_micros(micros) {
            std::hint::spin_loop();
        }
    }

    /// Tries for the tests that wait for the helper to run a piece: 5,000 a millisecond apart
    /// where it is available (other tests may hold it), one where it is not.
    fn tries() -> usize {
        if available() { 5000 } else { 1 }
    }

    #[test]
    fn both_pieces_run_and_return_their_results() {
        // A first piece that ends at once (the second is usually taken back) and one that
        // takes a while (the second usually runs on the helper).
        for i in 0..200u64 {
            let (a, b) = join(
                move || {
                    busy(if i % 2 == 0 { 0 } else { 50 });
                    i * 2
                },
                move || i * 3,
            );
            assert_eq!((a, b), (i * 2, i * 3));
        }
    }

    #[test]
    fn the_second_piece_runs_on_the_helper_when_it_is_available() {
        let here = std::thread::current().id();
        // Other tests may hold the helper for a while (then both pieces run here): try again,
        // a millisecond apart, for up to five seconds.
        let elsewhere = (0..tries()).any(|_| {
            let ran_elsewhere = join(|| busy(200), || std::thread::current().id()).1 != here;
            if !ran_elsewhere {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            ran_elsewhere
        });
        assert_eq!(elsewhere, available());
    }

    #[test]
    fn a_borrowing_second_piece_writes_the_callers_buffer() {
        for i in 0..200usize {
            let mut out = vec![0usize; 64];
            let (first, second) = out.split_at_mut(32);
            let a = join_borrowing(
                || {
                    busy(if i % 2 == 0 { 0 } else { 50 });
                    first.iter_mut().enumerate().for_each(|(k, v)| *v = k);
                    i
                },
                || second.iter_mut().enumerate().for_each(|(k, v)| *v = 32 + k),
            );
            assert_eq!(a, i);
            assert!(out.iter().enumerate().all(|(k, v)| *v == k));
        }
    }

    #[test]
    fn callers_on_many_threads_each_get_their_own_results() {
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..100u64 {
                        let (a, b) = join(move || t * 1000 + i, move || t * 1000 + i + 1);
                        assert_eq!(b, a + 1);
                    }
                })
            })
            .collect();
        for thread in threads {
            assert!(thread.join().is_ok());
        }
    }

    #[test]
    fn a_panic_on_the_helper_reaches_the_caller_and_leaves_it_usable() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let here = std::thread::current().id();
        // Until the panicking piece has run on the helper (other tests may hold it, or it may
        // not claim the piece in time), for up to five seconds.
        let on_helper = (0..tries()).any(|_| {
            let elsewhere = Arc::new(AtomicBool::new(false));
            let seen = Arc::clone(&elsewhere);
            let caught = std::panic::catch_unwind(|| {
                join(
                    || busy(200),
                    move || -> u32 {
                        seen.store(std::thread::current().id() != here, Ordering::SeqCst);
                        panic!("piece b")
                    },
                )
            });
            assert!(
                caught.is_err(),
                "the panic of the second piece reaches the caller"
            );
            assert_eq!(join(|| 1, || 2), (1, 2));
            let ran_elsewhere = elsewhere.load(Ordering::SeqCst);
            if !ran_elsewhere {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            ran_elsewhere
        });
        assert_eq!(on_helper, available());
    }
}
