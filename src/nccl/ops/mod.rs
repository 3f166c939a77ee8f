//! The operations on communicators: what the safe forms take (`buffers`), the collectives and
//! point-to-point calls declared once each, every form generated from their table
//! (`collectives`), the one enqueue path (`enqueue`), what the safe forms share (`safe`), groups
//! (`group`, `simulate`), stream waits with deadlines (`wait`), and the handles tied to a
//! communicator or the library (`memory`).

pub(crate) mod buffers;
pub(crate) mod collectives;
pub(crate) mod enqueue;
pub(crate) mod group;
pub(crate) mod memory;
pub(crate) mod safe;
pub(crate) mod simulate;
pub(crate) mod wait;
