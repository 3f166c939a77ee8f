//! The operations on communicators: what the safe forms take (`buffers`), one enqueue path and
//! the raw collectives (`enqueue`), the safe collectives on typed buffers (`safe`), the
//! per-collective config calls (`config_calls`), groups (`group`, `simulate`), stream waits with
//! deadlines (`wait`), and the handles tied to a communicator or the library (`memory`).

pub(crate) mod buffers;
pub(crate) mod config_calls;
pub(crate) mod enqueue;
pub(crate) mod group;
pub(crate) mod memory;
pub(crate) mod safe;
pub(crate) mod simulate;
pub(crate) mod wait;
