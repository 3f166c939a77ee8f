//! Groups: `ncclGroupStart`/`ncclGroupEnd` on one thread, the communicators that joined, and
//! the end of a non-blocking group (which NCCL finishes on its own thread).

use core::cell::RefCell;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr;
use std::sync::Arc;

use crate::nccl::communicator::{Deadline, Shared};
use crate::nccl::library::{Nccl, Sym};
use crate::nccl::types::NcclResult;
use crate::nccl::watchdog::OpInfo;
use crate::Error;

/// An operation the watchdog records once the group has launched it, and its stream.
type Watched = Option<(OpInfo, *mut c_void)>;

/// The open groups of this thread: their depth, and every communicator that enqueued work in
/// them.
#[derive(Default)]
struct OpenGroups {
    depth: u32,
    members: Vec<(Arc<Shared>, Watched)>,
}

thread_local! {
    // NCCL's groups are per thread (ncclGroupDepth is thread-local: src/group.cc:20-32).
    static GROUPS: RefCell<OpenGroups> = RefCell::new(OpenGroups::default());
}

/// Refuses to create a communicator while a group is open on this thread: NCCL would write the
/// handle at `ncclGroupEnd`, after the creating call returned (src/group.cc:35-72 queues the
/// job while the depth is above zero).
pub(crate) fn refuse_in_group(operation: &'static str) -> Result<(), Error> {
    if GROUPS.with(|g| g.borrow().depth) > 0 {
        return Err(Error::InGroup { operation });
    }
    Ok(())
}

/// True while a group is open on this thread.
pub(crate) fn in_group() -> bool {
    GROUPS.with(|g| g.borrow().depth > 0)
}

/// Records that `shared` enqueued work in the open group (`op`: what the watchdog tracks).
pub(crate) fn join(shared: &Arc<Shared>, op: Watched) {
    GROUPS.with(|g| g.borrow_mut().members.push((Arc::clone(shared), op)));
}

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

    fn finish(&mut self) -> Result<(), Error> {
        let members = GROUPS.with(|g| {
            let mut g = g.borrow_mut();
            g.depth = g.depth.saturating_sub(1);
            if g.depth == 0 {
                core::mem::take(&mut g.members)
            } else {
                Vec::new()
            }
        });
        let r = self.nccl.raw(Sym::GroupEnd, &[])?;
        if r == NcclResult::IN_PROGRESS {
            for (shared, _) in &members {
                shared.saw_in_progress();
            }
            for (shared, _) in &members {
                shared.wait_done(Sym::GroupEnd, Deadline::after(shared.timeouts().operation))?;
            }
        } else if !r.is_success() {
            return Err(self.nccl.failure(Sym::GroupEnd, r, ptr::null_mut()));
        }
        for (shared, op) in members {
            if let (Some(w), Some((op, stream))) = (shared.watchdog.get(), op) {
                w.record(op, stream)?;
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
        self.check(Sym::GroupStart, &[], ptr::null_mut())?;
        GROUPS.with(|g| g.borrow_mut().depth += 1);
        Ok(Group { nccl: self, open: true, _per_thread: PhantomData })
    }
}
