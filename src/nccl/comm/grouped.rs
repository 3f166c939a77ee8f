//! This thread's open NCCL groups: their depth and the communicators that enqueued work in them
//! (NCCL's groups are per thread: `ncclGroupDepth` is thread-local, src/group.cc:20-32). Below
//! the creation calls, which must refuse to run inside a group, and the group API
//! (`nccl::ops::group`), which opens and closes them.

use core::cell::RefCell;
use core::ffi::c_void;
use std::sync::Arc;

use crate::nccl::comm::shared::Shared;
use crate::nccl::comm::watchdog::OpInfo;
use crate::nccl::types::error::Error;

/// An operation the watchdog records once the group has launched it, and its stream.
type ToWatch = Option<(OpInfo, *mut c_void)>;

/// The open groups of this thread: their depth, and every communicator that enqueued work in
/// them.
#[derive(Default)]
struct OpenGroups {
    depth: u32,
    members: Vec<(Arc<Shared>, ToWatch)>,
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

/// Refuses a safe collective inside an open [`Group`]: NCCL launches its work only at
/// `ncclGroupEnd`, after the call returned, so its buffers must stay borrowed (and their access
/// guards alive) until then; a [`GroupScope`] does that.
pub(crate) fn refuse_safe_in_group() -> Result<(), Error> {
    if in_group() {
        return Err(Error::InGroup { operation: "a safe collective (use Nccl::group_scope)" });
    }
    Ok(())
}

/// True while a group is open on this thread.
pub(crate) fn in_group() -> bool {
    GROUPS.with(|g| g.borrow().depth > 0)
}

/// Records that `shared` enqueued work in the open group (`op`: what the watchdog tracks).
pub(crate) fn join(shared: &Arc<Shared>, op: ToWatch) {
    GROUPS.with(|g| g.borrow_mut().members.push((Arc::clone(shared), op)));
}

/// A group was opened on this thread (`ncclGroupStart` succeeded).
pub(crate) fn opened() {
    GROUPS.with(|g| g.borrow_mut().depth += 1);
}

/// A group of this thread ends: its depth drops; the communicators that joined are returned
/// when it was the outermost one (`launched`: NCCL launched the work; a simulated end launched
/// nothing, and its members are forgotten).
pub(crate) fn closed(launched: bool) -> Vec<(Arc<Shared>, ToWatch)> {
    GROUPS.with(|g| {
        let mut g = g.borrow_mut();
        g.depth = g.depth.saturating_sub(1);
        if g.depth > 0 {
            return Vec::new();
        }
        let members = core::mem::take(&mut g.members);
        if launched {
            members
        } else {
            Vec::new()
        }
    })
}
