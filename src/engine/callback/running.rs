//! Which callback calls are running, so that dropping a [`Callback`](super::Callback) can wait
//! for exactly the calls of its entry, while a call pays no locked instruction
//! (docs/adr/0025-callbacks.md, "The call path's synchronisation").
//!
//! An asymmetric barrier: the call path only writes a bit of its own thread's marker word and
//! orders it with a compiler fence; the drop, which is rare, pays for the ordering with
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, a full memory barrier run on every CPU that
//! is running one of the process's threads (Linux 4.14; liburcu's "memb" flavour and folly's
//! `asymmetric_thread_fence_heavy` rest on the same guarantee).
//!
//! - A call of entry `i`, on a thread: sets bit `i` of the thread's [`Marks`] (a plain store:
//!   only the thread writes its marks), a compiler fence, then loads the slot's state; when the
//!   call ends it clears the bit (a release store). A nested call of the same entry on the same
//!   thread finds the bit set and leaves it to the outer call.
//! - The drop of entry `i`: empties the slot (a sequentially consistent swap), runs the barrier,
//!   then waits until bit `i` is clear in every thread's marks.
//!
//! Why that is exact: the barrier runs a full fence on every thread between the drop's swap and
//! its scan. A call whose mark was stored before that fence is seen by the scan, which waits
//! for it; a call whose mark was stored after it loads the state after it too, and finds the
//! slot empty (the swap precedes the barrier): it never holds the state (and aborts with the
//! call-after-drop message, as before). Bits are per entry, so a handler may drop *another*
//! callback: the drop waits only for calls of that one.
//!
//! Marks live in a fixed array of [`THREADS`] records that threads claim on their first call and
//! release when they exit: no allocation ever. Where the barrier is unavailable (an old kernel, a
//! seccomp filter, not Linux), or a thread has no record (all taken, or the thread is past its
//! thread-local destructors), the call falls back to the symmetric scheme: a full fence after
//! the mark, or the slot's counter of such calls (two locked read-modify-writes), which the drop
//! also waits on.

use core::cell::Cell;
use core::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use super::entry::POOL_SIZE;

/// Thread records: at most this many threads have a record at once; calls from further threads
/// take the counted fallback.
pub(super) const THREADS: usize = 256;

const WORDS: usize = POOL_SIZE.div_ceil(64);

/// One thread's marks: bit `i` set while a call of entry `i` runs on the thread. Two cache
/// lines of its own (128 bytes: a line and the one the adjacent-line prefetcher pairs it
/// with), so that threads calling at once never write the same line (false sharing doubled the
/// cost of a call on two threads when records were packed).
#[repr(align(128))]
struct Marks {
    /// 0: free; 1: claimed by a live thread.
    claimed: AtomicU8,
    bits: [AtomicU64; WORDS],
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE_MARKS: Marks = Marks { claimed: AtomicU8::new(0), bits: [const { AtomicU64::new(0) }; WORDS] };
static MARKS: [Marks; THREADS] = [FREE_MARKS; THREADS];

/// Calls of each entry made without a thread record (the fallback), counted.
static UNMARKED: [AtomicUsize; POOL_SIZE] = [const { AtomicUsize::new(0) }; POOL_SIZE];

/// True once `membarrier(PRIVATE_EXPEDITED)` is registered: marks need only a compiler fence.
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);

/// Stands for "no record was free" in a thread's [`Claim`]: never claimed, never scanned.
static NO_MARKS: Marks = FREE_MARKS;

thread_local! {
    /// The thread's record: null before its first call, [`NO_MARKS`] when none was free or
    /// after the thread released it. No destructor, so reading it is one thread-local load.
    static CLAIM: Cell<*const Marks> = const { Cell::new(core::ptr::null()) };
    /// Registered on the thread's first call: releases its record when the thread exits.
    static RELEASE: Release = const { Release };
}

/// Releases the thread's record when the thread exits.
struct Release;

impl Drop for Release {
    fn drop(&mut self) {
        release();
    }
}

/// Gives the thread's record back (its bits are clear: no call runs on the thread now), and
/// sends any later call of the thread (from another thread-local destructor) to the counted
/// fallback.
fn release() {
    let _ = CLAIM.try_with(|c| {
        let marks = c.replace(&NO_MARKS);
        if !marks.is_null() && !core::ptr::eq(marks, &NO_MARKS) {
            // SAFETY: a record of MARKS (static), claimed by this thread.
            unsafe { (*marks).claimed.store(0, Ordering::Release) };
        }
    });
}

/// Sets up the barrier; the pool calls it once, before it hands out the first entry (so every
/// call sees the final value of [`ASYMMETRIC`]: C gets an entry's address only after this).
pub(super) fn install() {
    ASYMMETRIC.store(membarrier::register(), Ordering::SeqCst);
}

/// Whether calls use the asymmetric barrier (`super::uses_membarrier`).
pub(super) fn asymmetric() -> bool {
    ASYMMETRIC.load(Ordering::Relaxed)
}

/// A running call of one entry, from [`enter`] to its drop.
pub(super) enum Running {
    /// Marked in the thread's record: `clear` is the bit to clear when the call ends (0 for a
    /// nested call of the same entry, which the outer call covers).
    Marked { word: &'static AtomicU64, clear: u64 },
    /// Counted in `UNMARKED[index]` (a thread without a record).
    Counted { index: usize },
}

/// Counts the calling thread in as running entry `index`; the caller loads the slot's state
/// only after this returns, and drops the guard when it no longer uses the state.
#[inline(always)]
pub(super) fn enter(index: usize) -> Running {
    let mut marks = CLAIM.with(Cell::get);
    if marks.is_null() {
        marks = claim();
    }
    if core::ptr::eq(marks, &NO_MARKS) {
        return enter_counted(index);
    }
    // SAFETY: a record of MARKS (static), claimed by this thread until it exits.
    let word = unsafe { &(*marks).bits[index / 64] };
    let bit = 1u64 << (index % 64);
    // Only this thread writes its marks: a load and a store, no read-modify-write.
    let bits = word.load(Ordering::Relaxed);
    word.store(bits | bit, Ordering::Relaxed);
    if ASYMMETRIC.load(Ordering::Relaxed) {
        // The mark's store stays before the state's load in program order; the drop's
        // membarrier supplies the hardware fence.
        compiler_fence(Ordering::SeqCst);
    } else {
        fence(Ordering::SeqCst);
    }
    Running::Marked { word, clear: bit & !bits }
}

/// The fallback of a thread without a record: a counted call.
#[cold]
fn enter_counted(index: usize) -> Running {
    UNMARKED[index].fetch_add(1, Ordering::SeqCst);
    Running::Counted { index }
}

impl Drop for Running {
    #[inline(always)]
    fn drop(&mut self) {
        match *self {
            Running::Marked { word, clear } => {
                // Release: every use of the state happens before the drop sees the bit clear.
                word.store(word.load(Ordering::Relaxed) & !clear, Ordering::Release);
            }
            Running::Counted { index } => {
                UNMARKED[index].fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

/// Claims a free thread record for this thread (and registers its release at the thread's
/// exit), or gives [`NO_MARKS`].
#[cold]
fn claim() -> *const Marks {
    let marks: *const Marks = MARKS
        .iter()
        .find(|m| m.claimed.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok())
        .unwrap_or(&NO_MARKS);
    let _ = CLAIM.try_with(|c| c.set(marks));
    if RELEASE.try_with(|_| ()).is_err() {
        // The thread is past its thread-local destructors: nothing would release the record.
        release();
        return &NO_MARKS;
    }
    marks
}

/// Waits until no call of entry `index` runs; the caller emptied the slot (a sequentially
/// consistent store) just before. Must not be called from a call of entry `index`.
pub(super) fn wait_for(index: usize) {
    if ASYMMETRIC.load(Ordering::Relaxed) {
        membarrier::barrier();
    }
    let (w, bit) = (index / 64, 1u64 << (index % 64));
    for marks in &MARKS {
        while marks.bits[w].load(Ordering::Acquire) & bit != 0 {
            std::thread::yield_now();
        }
    }
    while UNMARKED[index].load(Ordering::SeqCst) != 0 {
        std::thread::yield_now();
    }
}

#[cfg(target_os = "linux")]
mod membarrier {
    // linux/membarrier.h.
    const CMD_QUERY: libc::c_long = 0;
    const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    fn call(cmd: libc::c_long) -> libc::c_long {
        // SAFETY: membarrier(cmd, flags = 0, cpu_id = 0) reads and writes no memory of ours.
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as libc::c_long, 0 as libc::c_long) }
    }

    /// Registers the process for expedited private barriers; false where the kernel (or a
    /// seccomp filter) refuses.
    pub(super) fn register() -> bool {
        if std::env::var_os("NCCL_TRAMPOLINE_NO_MEMBARRIER").is_some() {
            return false;
        }
        let supported = call(CMD_QUERY);
        supported >= 0 && supported & CMD_PRIVATE_EXPEDITED != 0 && call(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
    }

    /// A full memory barrier on every CPU running a thread of this process.
    pub(super) fn barrier() {
        // Registered in `register` (ASYMMETRIC is true only then): cannot fail.
        let r = call(CMD_PRIVATE_EXPEDITED);
        if r != 0 {
            super::super::entry::fatal(format_args!(
                "membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed after registration ({})",
                std::io::Error::last_os_error()
            ));
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod membarrier {
    pub(super) fn register() -> bool {
        false
    }
    pub(super) fn barrier() {}
}

#[cfg(all(test, nccl_trampoline_callbacks))]
mod tests {
    use super::*;

    fn claimed() -> usize {
        MARKS.iter().filter(|m| m.claimed.load(Ordering::SeqCst) != 0).count()
    }

    /// A thread claims a record on its first call and releases it at its exit: 2 × THREADS
    /// threads one after another never hold more than one, and calls mark and unmark their bit
    /// (a nested call of the same entry leaves the bit to the outer one).
    #[test]
    fn records_are_released_at_thread_exit_and_marks_cleared() {
        let before = claimed();
        for _ in 0..2 * THREADS {
            std::thread::spawn(|| {
                let outer = enter(70);
                let Running::Marked { word, clear } = outer else { panic!("no record for a new thread") };
                assert_eq!((clear, word.load(Ordering::SeqCst) & (1 << 6)), (1 << 6, 1 << 6));
                let inner = enter(70);
                assert!(matches!(inner, Running::Marked { clear: 0, .. }), "a nested call clears nothing");
                drop(inner);
                assert_ne!(word.load(Ordering::SeqCst) & (1 << 6), 0, "the outer call is still marked");
                drop(outer);
                assert_eq!(word.load(Ordering::SeqCst), 0);
            })
            .join()
            .unwrap();
        }
        assert_eq!(claimed(), before, "records held by threads that have exited");
        // The drop's wait returns at once when no call of the entry runs.
        wait_for(70);
    }
}
