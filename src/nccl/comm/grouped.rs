//! This thread's open NCCL groups: their depth and the communicators that enqueued work in them
//! (NCCL's groups are per thread: `ncclGroupDepth` is thread-local, src/group.cc:20-32). Below
//! the creation calls, which must refuse to run inside a group, and the group API
//! (`nccl::ops::group`), which opens and closes them.

use core::cell::{Cell, RefCell};
use core::ffi::c_void;
use std::sync::Arc;

use crate::nccl::comm::shared::Shared;
use crate::nccl::comm::watchdog::OpInfo;
use crate::nccl::types::error::Error;

/// An operation the watchdog records once the group has launched it, and its stream.
type ToWatch = Option<(OpInfo, *mut c_void)>;

thread_local! {
    // NCCL's groups are per thread (ncclGroupDepth is thread-local: src/group.cc:20-32). The
    // depth is read by every enqueue: a plain word, initialised without a first-use check.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    // Every communicator that enqueued work in this thread's open groups.
    static MEMBERS: RefCell<Vec<(Arc<Shared>, ToWatch)>> = const { RefCell::new(Vec::new()) };
}

/// Refuses to create a communicator while a group is open on this thread: NCCL would write the
/// handle at `ncclGroupEnd`, after the creating call returned (src/group.cc:35-72 queues the
/// job while the depth is above zero).
pub(crate) fn refuse_in_group(operation: &'static str) -> Result<(), Error> {
    if in_group() {
        return Err(Error::InGroup { operation });
    }
    Ok(())
}

/// Refuses a safe collective inside an open [`Group`]: NCCL launches its work only at
/// `ncclGroupEnd`, after the call returned, so its buffers must stay borrowed (and their access
/// guards alive) until then; a [`GroupScope`] does that.
#[inline]
pub(crate) fn refuse_safe_in_group() -> Result<(), Error> {
    if in_group() {
        return Err(Error::InGroup { operation: "a safe collective (use Nccl::group_scope)" });
    }
    Ok(())
}

/// True while a group is open on this thread.
#[inline]
pub(crate) fn in_group() -> bool {
    DEPTH.get() > 0
}

/// Records that `shared` enqueued work in the open group (`op`: what the watchdog tracks).
pub(crate) fn join(shared: &Arc<Shared>, op: ToWatch) {
    MEMBERS.with_borrow_mut(|m| m.push((Arc::clone(shared), op)));
}

/// A group was opened on this thread (`ncclGroupStart` succeeded).
pub(crate) fn opened() {
    DEPTH.set(DEPTH.get() + 1);
}

/// A group of this thread ends: its depth drops; the communicators that joined are returned
/// when it was the outermost one (`launched`: NCCL launched the work; a simulated end launched
/// nothing, and its members are forgotten).
pub(crate) fn closed(launched: bool) -> Vec<(Arc<Shared>, ToWatch)> {
    let depth = DEPTH.get().saturating_sub(1);
    DEPTH.set(depth);
    if depth > 0 {
        return Vec::new();
    }
    let members = MEMBERS.take();
    if launched {
        members
    } else {
        Vec::new()
    }
}
