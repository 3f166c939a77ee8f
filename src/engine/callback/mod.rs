//! Calls into Rust: a [`Callback`] is a C function pointer of any signature the core describes,
//! variadic ones included, whose calls run a Rust handler (docs/adr/0025-callbacks.md).
//!
//! - `plan`: where each argument arrives and where the result goes, read backwards from the
//!   forward placement of `crate::abi` (pure Rust, every ABI);
//! - `frame`: the callback record the assembly saves the caller's registers into;
//! - `view`: the handler's checked views of its arguments and result;
//! - `va`: the variable arguments of a variadic callback, read by each ABI's `va_arg` rules
//!   (pure Rust over the record's saved registers and the caller's stack, every ABI);
//! - `typed`: the typed form, [`TypedCallback`]: a Rust closure of C types, no per-call checks;
//! - `running`: which calls are running, so that a drop waits for exactly its entry's calls;
//! - here: the object, the pool of assembly entries it takes one from, and the dispatcher
//!   every entry reaches.
//!
//! The entries are a fixed pool assembled into `.text` (`nt_cb_<i>` in `asm/<arch>.S`,
//! `CB_POOL` of them): no page is ever writable and executable. Entry `i` loads `i` and jumps to
//! the common stub, `nt_cb_common`, which calls the dispatcher (`pool::dispatch`) with the
//! record; the dispatcher finds the callback in slot `i`. A callback holds its entry from creation to drop; a dropped callback's entry goes to the
//! back of the free queue, so it is reused as late as possible.

mod entry;
pub(crate) mod frame;
pub(crate) mod place;
pub(crate) mod plan;
#[cfg_attr(not(nccl_trampoline_callbacks), allow(dead_code))]
mod running;
pub(crate) mod typed;
pub(crate) mod va;
pub(crate) mod value;
pub(crate) mod view;

use core::any::Any;
use core::ffi::c_void;
use core::fmt;

use crate::ctype::error::Error;
use crate::ctype::types::Signature;
pub use entry::POOL_SIZE;
use frame::Record;
use plan::CallbackPlan;
pub use typed::{CallbackArgTypes, CallbackFn, TypedCallback};
pub use va::{CVaList, VaList};
pub use value::{CValue, CallbackReturn, CallbackValue};
pub use view::{CallbackArgs, CallbackResult};

/// The handler of a dynamic callback: reads its arguments through [`CallbackArgs`] and sets its
/// result through [`CallbackResult`]. Called from whatever thread C calls from, possibly
/// several at once and re-entrantly, hence `Send + Sync`.
pub type Handler = dyn Fn(&CallbackArgs<'_>, &mut CallbackResult<'_>) + Send + Sync + 'static;

/// True when callback calls synchronise with drops through Linux's `membarrier`
/// (`MEMBARRIER_CMD_PRIVATE_EXPEDITED`): a call then stores a mark and pays no locked
/// instruction. False before the first callback is made, where the kernel refuses the barrier,
/// and with `NCCL_TRAMPOLINE_NO_MEMBARRIER` set in the environment (then each call pays one full
/// fence). See docs/adr/0025-callbacks.md, "The call path's synchronisation".
pub fn uses_membarrier() -> bool {
    running::asymmetric()
}

/// What a slot of the pool points to while its callback lives.
#[cfg_attr(not(nccl_trampoline_callbacks), allow(dead_code))]
struct State {
    plan: CallbackPlan,
    signature: Signature,
    /// Runs one call on the record: the dynamic form's views around its handler
    /// (`pool::run::<F>`), or a typed callback's monomorphised reads and writes
    /// (`typed::invoke`). Made together with `handler`, whose concrete type it knows.
    invoke: unsafe fn(&State, &mut Record),
    /// The handler, of the type `invoke` was instantiated for.
    handler: Box<dyn Any + Send + Sync>,
}

impl State {
    /// The handler as the `H` it was made with.
    ///
    /// # Safety
    ///
    /// `H` is the handler's concrete type: `invoke` was instantiated for it (the only caller).
    #[inline(always)]
    unsafe fn handler<H>(&self) -> &H {
        // SAFETY: the caller's contract; a thin pointer to the box's contents.
        unsafe { &*(&*self.handler as *const (dyn Any + Send + Sync)).cast::<H>() }
    }
}

/// A C function pointer that calls a Rust handler, valid while this object lives.
///
/// Made from a [`Signature`] (any the forward core places) and a handler;
/// [`as_ptr`](Callback::as_ptr) is the function to give C, to be called with exactly that
/// signature. Dropping the callback waits for calls already running on other threads, then
/// returns the entry to the pool.
///
/// A variadic C function type, `ret f(named..., ...)`, is
/// `Signature::variadic(named.len(), named, ret)`: the named arguments only. The handler reads
/// them as usual and the variable ones through [`CallbackArgs::va_list`].
///
/// ```
/// use core::ffi::c_void;
/// use nccl_trampoline::{Callback, Signature, Type};
///
/// # if nccl_trampoline::engine::callback::POOL_SIZE == 0 { return Ok(()); }
/// let sig = Signature::new(vec![Type::I32, Type::F64], Some(Type::F64))?;
/// let scale = Callback::new(&sig, |args, result| {
///     let (n, x) = (args.get::<i32>(0).unwrap(), args.get::<f64>(1).unwrap());
///     result.set(f64::from(n) * x).unwrap();
/// })?;
/// // SAFETY: the entry takes (int32_t, double) and returns double, as the signature says.
/// let f = unsafe { std::mem::transmute::<*const c_void, extern "C" fn(i32, f64) -> f64>(scale.as_ptr()) };
/// assert_eq!(f(3, 0.5), 1.5);
/// # Ok::<(), nccl_trampoline::Error>(())
/// ```
///
/// Panics: a handler that panics aborts the process with a message on stderr (the panic never
/// unwinds into the C caller, whose frames have no unwind information to run, ADR 25); a
/// handler that can fail should set a result that says so.
///
/// Contract with C (not checked, cannot be): C calls the pointer only while the callback lives
/// and only with its signature. A call after the drop finds an empty slot and aborts with a
/// message, as long as no newer callback has taken the entry (entries are reused last-released
/// last). A handler must not drop its own callback: the drop would wait for itself.
pub struct Callback {
    index: usize,
    code: *const c_void,
    state: *const State,
    /// The entry has a direct target (`TypedCallback::direct`), cleared first in the drop.
    #[cfg_attr(not(nccl_trampoline_callbacks), allow(dead_code))]
    direct: bool,
}

// SAFETY: the callback owns its State (a Send + Sync handler, plain data) and its pool entry;
// moving it to another thread moves that ownership, and the pool is locked on release.
unsafe impl Send for Callback {}
// SAFETY: `&Callback` gives out only the code address and the signature (immutable).
unsafe impl Sync for Callback {}

impl Callback {
    /// The pool size, [`POOL_SIZE`].
    pub const POOL_SIZE: usize = POOL_SIZE;

    /// A callback of `signature` running `handler`.
    ///
    /// Errors: [`Error::CallbacksUnsupported`] where the target has no callback entries yet,
    /// [`Error::VariadicCallbackArguments`] (a variadic signature lists its named arguments
    /// only), the placement's errors (limits), and
    /// [`Error::CallbackPoolExhausted`] when [`POOL_SIZE`] callbacks are alive.
    pub fn new<F>(signature: &Signature, handler: F) -> Result<Callback, Error>
    where
        F: Fn(&CallbackArgs<'_>, &mut CallbackResult<'_>) + Send + Sync + 'static,
    {
        #[cfg(nccl_trampoline_callbacks)]
        {
            let abi = crate::abi::Abi::native().ok_or(Error::CallbacksUnsupported { target: crate::engine::TARGET })?;
            let plan = CallbackPlan::new(abi, signature)?;
            let invoke: unsafe fn(&State, &mut Record) = pool::run::<F>;
            Callback::from_state(State { plan, signature: signature.clone(), invoke, handler: Box::new(handler) })
        }
        #[cfg(not(nccl_trampoline_callbacks))]
        {
            let _ = (signature, handler, CallbackPlan::new);
            Err(Error::CallbacksUnsupported { target: crate::engine::TARGET })
        }
    }

    /// Takes a pool entry for `state`.
    #[cfg_attr(not(nccl_trampoline_callbacks), allow(dead_code))]
    fn from_state(state: State) -> Result<Callback, Error> {
        #[cfg(nccl_trampoline_callbacks)]
        {
            let (index, state, code) = pool::take(Box::new(state))?;
            Ok(Callback { index, code, state, direct: false })
        }
        #[cfg(not(nccl_trampoline_callbacks))]
        {
            let _ = state;
            Err(Error::CallbacksUnsupported { target: crate::engine::TARGET })
        }
    }

    /// The C function pointer: call it with exactly the callback's signature, while the
    /// callback lives. Cast it to the matching `extern "C" fn` type, or hand it to C.
    pub fn as_ptr(&self) -> *const c_void {
        self.code
    }

    /// The signature the callback was made for.
    pub fn signature(&self) -> &Signature {
        // SAFETY: the state lives until drop (it is freed only there).
        unsafe { &(*self.state).signature }
    }

    /// The index of the pool entry this callback holds (`0..POOL_SIZE`): for diagnostics and
    /// tests of reuse.
    pub fn pool_index(&self) -> usize {
        self.index
    }
}

impl fmt::Debug for Callback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Callback")
            .field("pool_index", &self.index)
            .field("code", &self.code)
            .field("signature", self.signature())
            .finish()
    }
}

impl Drop for Callback {
    fn drop(&mut self) {
        #[cfg(nccl_trampoline_callbacks)]
        {
            if self.direct {
                pool::clear_direct(self.index);
            }
            pool::give_back(self.index, self.state);
        }
    }
}

#[cfg(nccl_trampoline_callbacks)]
mod pool {
    use core::ffi::c_void;
    use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::entry::{fatal, panic_message, POOL_SIZE};
    use super::frame::Record;
    use super::plan::ResultSink;
    use super::running;
    use super::view::{CallbackArgs, CallbackResult};
    use super::State;
    use crate::ctype::error::Error;
    use crate::engine::layout::{T_CB_DIRECT_SLOTS, T_CB_ENTRY, T_CB_INSTALL};

    /// One pool entry's slot: the state of the callback holding it (null while free). Which
    /// calls run in it is `running`'s.
    struct Slot {
        state: AtomicPtr<State>,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const FREE_SLOT: Slot = Slot { state: AtomicPtr::new(core::ptr::null_mut()) };
    static SLOTS: [Slot; POOL_SIZE] = [FREE_SLOT; POOL_SIZE];

    /// The free entries, oldest release first; filled, and the dispatcher installed, on first use.
    struct Free {
        installed: bool,
        queue: VecDeque<usize>,
    }
    static FREE: Mutex<Free> = Mutex::new(Free { installed: false, queue: VecDeque::new() });

    fn free() -> std::sync::MutexGuard<'static, Free> {
        // Nothing panics while holding the lock; a poisoned lock still holds a consistent queue.
        FREE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes a free entry for `state`: its index, code address and the state's address.
    pub(super) fn take(state: Box<State>) -> Result<(usize, *const State, *const c_void), Error> {
        let table = crate::engine::table().expect("a target with callback entries has the code table");
        let index = {
            let mut free = free();
            if !free.installed {
                // SAFETY: cb_install(dispatcher) stores the address for the entries; `dispatch`
                // has the type the stub calls (`void (record *)`).
                unsafe {
                    let install = core::mem::transmute::<usize, unsafe extern "C" fn(unsafe extern "C" fn(*mut Record))>(
                        table[T_CB_INSTALL as usize],
                    );
                    install(dispatch);
                }
                running::install();
                free.queue.extend(0..POOL_SIZE);
                free.installed = true;
            }
            free.queue.pop_front().ok_or(Error::CallbackPoolExhausted { size: POOL_SIZE })?
        };
        let state = Box::into_raw(state);
        SLOTS[index].state.store(state, Ordering::SeqCst);
        Ok((index, state, table[T_CB_ENTRY as usize + index] as *const c_void))
    }

    /// The entries' direct targets: `nt_cb_direct` in the assembly, CB_POOL code addresses
    /// (0: none), which `nt_cb_common` loads before anything else.
    fn direct_targets() -> &'static [AtomicUsize; POOL_SIZE] {
        let table = crate::engine::table().expect("a target with callback entries has the code table");
        // SAFETY: cb_direct_slots() returns the address of nt_cb_direct: CB_POOL (= POOL_SIZE)
        // 8-byte words of .bss, 8-aligned, living for the process, written only through this
        // view (atomic stores); AtomicUsize has usize's layout, 8 bytes on these targets.
        unsafe {
            let slots = core::mem::transmute::<usize, unsafe extern "C" fn() -> *const AtomicUsize>(
                table[T_CB_DIRECT_SLOTS as usize],
            );
            &*slots().cast::<[AtomicUsize; POOL_SIZE]>()
        }
    }

    /// Sends every call of entry `index` to `target`, a function of the entry's signature; the
    /// caller holds the entry and has not handed its address out yet.
    pub(super) fn set_direct(index: usize, target: *const c_void) {
        // Release: published before the entry's address reaches C, through whatever passes it.
        direct_targets()[index].store(target as usize, Ordering::Release);
    }

    /// Sends the calls of entry `index` to the record path again (the drop, before the entry
    /// goes back to the pool, so no later holder of the entry inherits the target).
    pub(super) fn clear_direct(index: usize) {
        direct_targets()[index].store(0, Ordering::SeqCst);
    }

    /// Empties slot `index`, waits for its running calls, frees `state` and queues the entry.
    pub(super) fn give_back(index: usize, state: *const State) {
        let slot = &SLOTS[index];
        let old = slot.state.swap(core::ptr::null_mut(), Ordering::SeqCst);
        debug_assert_eq!(old.cast_const(), state);
        // A call marks itself running before it loads the state: once the slot is empty and no
        // call of this entry is marked, no call holds the state any more (running.rs).
        running::wait_for(index);
        // SAFETY: made by Box::into_raw in `take`; no call holds it (above) and the Callback
        // that owned it is being dropped.
        drop(unsafe { Box::from_raw(old) });
        free().queue.push_back(index);
    }

    /// The dispatcher: `nt_cb_common` calls it with the record of the call C made.
    ///
    /// # Safety
    ///
    /// `record` is the stub's live record (every argument register saved, the stack address
    /// and the entry's index set), exclusively ours until we return.
    unsafe extern "C" fn dispatch(record: *mut Record) {
        // SAFETY: the function's contract.
        let record = unsafe { &mut *record };
        let index = record.index as usize;
        let Some(slot) = SLOTS.get(index) else {
            fatal(format_args!("callback entry {index} is outside the pool of {POOL_SIZE}"))
        };
        let running = running::enter(index);
        let state = slot.state.load(Ordering::Acquire);
        if state.is_null() {
            fatal(format_args!("callback entry {index} was called after its Callback was dropped"));
        }
        // SAFETY: not null, so the slot's callback is alive, and it is not freed before this
        // call's mark is cleared (give_back waits for it, running.rs).
        let state = unsafe { &*state };
        // SAFETY: `invoke` was made with the state, for this signature; the record is the
        // live one of a call C made with it (the Callback's contract with C).
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (state.invoke)(state, record) }));
        drop(running);
        if let Err(payload) = outcome {
            fatal(format_args!(
                "the handler of callback entry {index} panicked ({}); a panic must not unwind into the C caller",
                panic_message(&*payload)
            ));
        }
    }

    /// The dynamic form's `invoke`: runs the handler `F` on the record through the checked views
    /// and places its result.
    ///
    /// # Safety
    ///
    /// `state.handler` is an `F`; the record is the live one of a call with `state`'s signature.
    pub(super) unsafe fn run<F>(state: &State, record: &mut Record)
    where
        F: Fn(&CallbackArgs<'_>, &mut CallbackResult<'_>) + Send + Sync + 'static,
    {
        // SAFETY: the function's contract.
        let handler = unsafe { state.handler::<F>() };
        // Register results are at most 64 bytes (AAPCS64: an HFA of four long doubles in
        // q0..q3; x86-64's largest is 32, a `_Complex long double`), then zeros.
        #[repr(C, align(16))]
        struct Buffer([u8; super::place::RESULT_BUFFER]);
        let mut buffer = Buffer([0; super::place::RESULT_BUFFER]);
        let ty = state.signature.ret();
        let dst = match state.plan.result {
            ResultSink::Memory { from } => {
                let address = match from {
                    // SAFETY: an integer location of the live record: 8 saved bytes.
                    Some(loc) => unsafe { record.arg_location(loc).cast::<u64>().read_unaligned() },
                    None => record.indirect_result_register().expect("the plan names the ABI's register"),
                };
                let dst = address as usize as *mut u8;
                // SAFETY: the caller's result memory, valid for writes of the result's size (the
                // ABI's contract for a MEMORY result); zeroed so an unset result is zero.
                unsafe { dst.write_bytes(0, ty.map_or(0, |t| t.size())) };
                dst
            }
            _ => buffer.0.as_mut_ptr(),
        };
        {
            let args = CallbackArgs { record: &*record, plan: &state.plan, signature: &state.signature };
            let mut result = CallbackResult { dst, ty };
            handler(&args, &mut result);
        }
        match &state.plan.result {
            ResultSink::Void => record.clear_result(),
            ResultSink::Memory { .. } => {
                record.clear_result();
                *record.first_int_result() = dst as usize as u64
            }
            ResultSink::Regs { pieces, extend } => {
                super::place::place_register_result(pieces, &buffer.0, record);
                if let (Some(signed), Some(p)) = (extend, pieces.first()) {
                    let word = record.first_int_result();
                    let bits = 8 * p.len;
                    *word = if *signed {
                        (((*word << (64 - bits)) as i64) >> (64 - bits)) as u64
                    } else {
                        *word & (u64::MAX >> (64 - bits))
                    };
                }
            }
        }
    }
}
