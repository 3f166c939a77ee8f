//! Groups: `ncclGroupStart`/`ncclGroupEnd` on one thread ([`Group`]), the end of a non-blocking
//! group (which NCCL finishes on its own thread), and the scope in which the safe collectives
//! keep their buffers until the group launched them ([`GroupScope`]; its collectives are
//! `collectives`'). Which communicators joined is `nccl::comm::grouped`.

use core::cell::RefCell;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr;
use std::sync::Arc;

use crate::nccl::comm::grouped;
use crate::nccl::comm::shared::Shared;
use crate::nccl::comm::watchdog::OpInfo;
use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::time::Deadline;

/// An open `ncclGroupStart` on this thread; [`end`](Group::end) reports `ncclGroupEnd`'s
/// result. Not `Send`: NCCL groups are per thread. Dropped without `end`, it ends the group
/// and ignores the result (it never panics).
#[derive(Debug)]
pub struct Group<'n> {
    nccl: &'n Nccl,
    open: bool,
    _per_thread: PhantomData<*const ()>,
}

impl<'n> Group<'n> {
    /// `ncclGroupEnd`, with its result. When the outermost group of non-blocking communicators
    /// ends, NCCL launches the work from its own thread: this waits until every communicator
    /// that joined reports it done (each within its operation timeout), so `Ok` means the work
    /// is enqueued.
    pub fn end(mut self) -> Result<(), Error> {
        self.open = false;
        self.finish()
    }

    /// The library the group was opened in.
    pub(crate) fn library(&self) -> &'n Nccl {
        self.nccl
    }

    /// Closes the group for a simulated end (`ncclGroupSimulateEnd`): the thread's depth drops
    /// as `ncclGroupEnd` would, but nothing was launched, so the members are neither waited
    /// for nor recorded by their watchdogs. The library the group was opened in.
    pub(crate) fn close_simulated(&mut self) -> &'n Nccl {
        debug_assert!(self.open);
        self.open = false;
        grouped::closed(false);
        self.nccl
    }

    fn finish(&mut self) -> Result<(), Error> {
        let members = grouped::closed(true);
        // SAFETY: `ncclGroupEnd(void)`, on the thread that started the group.
        let r = unsafe { self.nccl.functions().group_end.call(self.nccl, ()) }?;
        if !r.is_success() && r != NcclResult::IN_PROGRESS {
            return Err(self.nccl.failure(Sym::GroupEnd, r, ptr::null_mut()));
        }
        // A non-blocking group is launched by NCCL's thread (ncclInProgress); every member that
        // may be non-blocking is polled until it is done, whatever the group end returned.
        for (shared, _) in &members {
            if r == NcclResult::IN_PROGRESS {
                shared.saw_in_progress();
            }
            if shared.is_nonblocking() {
                shared.wait_done(Sym::GroupEnd, Deadline::after(shared.timeouts().operation))?;
            }
        }
        // One event per communicator and stream: the group's operations on one stream finish
        // in order, so the event recorded after the last tracks them all; the first one's
        // description (the oldest, which a report names) and how many there are.
        let mut streams: Vec<(&Arc<Shared>, OpInfo, *mut c_void, u64)> = Vec::new();
        for (shared, op) in &members {
            let (Some(_), Some((op, stream))) = (shared.watchdog.get(), op) else { continue };
            match streams.iter_mut().find(|s| Arc::ptr_eq(s.0, shared) && s.2 == *stream) {
                Some(s) => s.3 += 1,
                None => streams.push((shared, *op, *stream, 1)),
            }
        }
        for (shared, first, stream, ops) in streams {
            if let Some(w) = shared.watchdog.get() {
                w.record_ops(first, stream, ops)?;
            }
        }
        Ok(())
    }
}

impl Drop for Group<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.finish();
        }
    }
}

impl Nccl {
    /// `ncclGroupStart`: collectives until [`Group::end`] are fused.
    pub fn group(&self) -> Result<Group<'_>, Error> {
        // SAFETY: `ncclGroupStart(void)`: no arguments, any thread.
        unsafe { self.check(&self.functions().group_start, (), ptr::null_mut()) }?;
        grouped::opened();
        Ok(Group { nccl: self, open: true, _per_thread: PhantomData })
    }
}

/// Anything held until a group has launched its work: buffer access guards.
trait Held {}
impl<T> Held for T {}

/// A group whose safe collectives keep their buffers borrowed, and their access guards alive,
/// until the group has ended and NCCL has launched the work (see [`Nccl::group_scope`]).
///
/// Like `std::thread::scope`: everything the collectives borrow must outlive the scope, so a
/// buffer cannot be dropped (or freed by cudarc on its stream) before the kernel that uses it
/// is launched, and cudarc records its access event after that launch.
pub struct GroupScope<'scope, 'env: 'scope> {
    /// The guards, their lifetime erased: they are dropped inside `group_scope`, while every
    /// `'scope` borrow is still alive (see `hold`).
    held: RefCell<Vec<Box<dyn Held>>>,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'scope> GroupScope<'scope, '_> {
    /// Keeps `guard` until the group has ended (the group-scope forms of the collectives).
    pub(super) fn hold<G: 'scope>(&self, guard: G) {
        let guard: Box<dyn Held + 'scope> = Box::new(guard);
        // SAFETY: only the lifetime changes. `'scope` outlives the call of the scope's closure
        // (it is universally quantified there), so what a guard borrows lives in the caller of
        // `group_scope`, which drops every guard before it returns (or while unwinding, before
        // the caller's frames go).
        let guard: Box<dyn Held> = unsafe { core::mem::transmute::<Box<dyn Held + 'scope>, Box<dyn Held>>(guard) };
        self.held.borrow_mut().push(guard);
    }
}

impl Nccl {
    /// Runs `f` inside one group (`ncclGroupStart` ... `ncclGroupEnd`) in which the safe
    /// collectives can be called: they borrow their buffers until the group has ended, and the
    /// buffers' access guards are dropped only after NCCL launched the work. The group ends even
    /// if `f` fails; `f`'s error comes first, then the group end's.
    ///
    /// ```no_run
    /// # use nccl_trampoline::nccl::{Nccl, Communicator, RedOp, DeviceBufferMut, Stream};
    /// # fn doc<B: DeviceBufferMut<f32>, S: Stream>(nccl: &Nccl, comms: &[Communicator], bufs: &mut [B], streams: &[S]) -> Result<(), nccl_trampoline::nccl::Error> {
    /// nccl.group_scope(|g| {
    ///     for ((comm, buf), stream) in comms.iter().zip(bufs.iter_mut()).zip(streams) {
    ///         g.all_reduce_in_place(comm, buf, RedOp::SUM, stream)?;
    ///     }
    ///     Ok(())
    /// })
    /// # }
    /// ```
    pub fn group_scope<'env, R>(
        &self,
        f: impl for<'scope> FnOnce(&'scope GroupScope<'scope, 'env>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let scope = GroupScope { held: RefCell::new(Vec::new()), _scope: PhantomData, _env: PhantomData };
        let group = self.group()?;
        let result = f(&scope);
        let end = group.end();
        // The work is launched: the guards may now record their accesses.
        drop(scope.held.take());
        let value = result?;
        end?;
        Ok(value)
    }
}
