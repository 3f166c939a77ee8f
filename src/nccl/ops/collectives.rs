//! The collectives and point-to-point calls, declared once each: one row per operation, from
//! which `collectives!` (`forms`) writes every form the facade offers of it.
//!
//! A row, with the grammar `forms` reads:
//!
//! - `/// ...`: what the operation does, in words that hold for every form (the rustdoc of
//!   the raw and safe forms carries it); then the name (in error messages: "all_reduce recv")
//!   and a title for the safe forms' rustdoc;
//! - `raw: METHOD calls FIELD "C NAME" [since "X.Y.Z"];`: the raw form on device pointers and
//!   the function of NCCL's table (`library::functions`) it calls; its version where it is
//!   newer than NCCL's first releases. A unit test checks the name and the version against the
//!   declaration;
//! - `config raw: METHOD calls FIELD "C NAME" since "X.Y.Z";` or `no config raw;`: the raw
//!   per-collective-config form (NCCL 2.31.2's `nccl*Config`, which takes an
//!   `ncclCollConfig_t*` after the stream);
//! - `buffers`, `count`, `arguments`: the raw arguments before `comm` and `stream`: the device
//!   pointers (`send` is `*const c_void`, `recv` `*mut c_void`), the element count
//!   (`usize`), `dtype: DataType`, then the operation's own arguments. The declaration table
//!   types every call: an argument that differs from it does not compile;
//! - `watchdog peer:` the root or peer the watchdog reports (it also reports the count and the
//!   element type);
//! - `sizes:` what the raw forms' callers vouch for, the start of their `# Safety` sentence;
//! - `safe: METHOD held HELD [BUFFERS], safe config METHOD | no safe config;` for each safe
//!   form on typed buffers, or `no safe form;`. From each come the safe form, its held form
//!   and its group-scope form (`GroupScope::METHOD`), and the safe per-collective-config form
//!   where the line names one. BUFFERS: `send -> recv: RULE` (a length rule of `forms`'s
//!   `@rule`, which also gives the raw call's count), `in place` (one buffer as `send` and
//!   `recv`, its length the count), `send` or `recv` (one buffer, all of it).
//!
//! Every operation's forms go through one enqueue path (`enqueue`); the safe forms' checks and
//! buffer accesses are `safe`'s.

mod forms;

use core::ffi::c_void;

use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::grouped;
use crate::nccl::comm::watchdog::OpInfo;
use crate::nccl::library::load::Nccl;
use crate::nccl::ops::buffers::{DeviceBuffer, DeviceBufferMut, Stream};
use crate::nccl::ops::group::GroupScope;
use crate::nccl::ops::safe::{at_least, equal_blocks, times_ranks};
use crate::nccl::types::coll_config::CollConfig;
use crate::nccl::types::enums::{DataType, NcclScalar, RedOp};
use crate::nccl::types::error::Error;
use forms::collectives;

collectives! {
    /// Every rank receives the reduction, by `op`, of all ranks' data.
    all_reduce "All-reduce" {
        raw: all_reduce_raw calls all_reduce "ncclAllReduce";
        config raw: all_reduce_config_raw calls all_reduce_config "ncclAllReduceConfig" since "2.31.2";
        buffers: send, recv; count: count; arguments: (op: RedOp); watchdog peer: None;
        sizes: "`send` and `recv` must point to `count` elements of `dtype` each (they may be equal: in place)";
        safe: all_reduce held all_reduce_held [send -> recv: recv >= send], safe config all_reduce_config;
        safe: all_reduce_in_place held all_reduce_in_place_held [in place], no safe config;
    }

    /// Every rank receives `root`'s data.
    broadcast "Broadcast" {
        raw: broadcast_raw calls broadcast "ncclBroadcast";
        config raw: broadcast_config_raw calls broadcast_config "ncclBroadcastConfig" since "2.31.2";
        buffers: send, recv; count: count; arguments: (root: i32); watchdog peer: Some(root);
        sizes: "`send` (read on `root` only) and `recv` must point to `count` elements of `dtype` each (they \
            may be equal: in place)";
        safe: broadcast held broadcast_held [in place], safe config broadcast_config;
    }

    /// `root` receives the reduction, by `op`, of all ranks' data.
    reduce "Reduce" {
        raw: reduce_raw calls reduce "ncclReduce";
        config raw: reduce_config_raw calls reduce_config "ncclReduceConfig" since "2.31.2";
        buffers: send, recv; count: count; arguments: (op: RedOp, root: i32); watchdog peer: Some(root);
        sizes: "`send` and `recv` (written on `root` only) must point to `count` elements of `dtype` each \
            (they may be equal: in place)";
        safe: reduce held reduce_held [send -> recv: recv >= send], safe config reduce_config;
    }

    /// Every rank receives all ranks' data, in rank order.
    all_gather "All-gather" {
        raw: all_gather_raw calls all_gather "ncclAllGather";
        config raw: all_gather_config_raw calls all_gather_config "ncclAllGatherConfig" since "2.31.2";
        buffers: send, recv; count: send_count; arguments: (); watchdog peer: None;
        sizes: "`send` must point to `send_count` elements of `dtype` and `recv` to `send_count * nranks`";
        safe: all_gather held all_gather_held [send -> recv: recv >= send * nranks], safe config all_gather_config;
    }

    /// The reduction, by `op`, of all ranks' data, in `nranks` blocks: rank i receives block i.
    reduce_scatter "Reduce-scatter" {
        raw: reduce_scatter_raw calls reduce_scatter "ncclReduceScatter";
        config raw: reduce_scatter_config_raw calls reduce_scatter_config "ncclReduceScatterConfig" since "2.31.2";
        buffers: send, recv; count: recv_count; arguments: (op: RedOp); watchdog peer: None;
        sizes: "`send` must point to `recv_count * nranks` elements of `dtype` and `recv` to `recv_count`";
        safe: reduce_scatter held reduce_scatter_held [send -> recv: send >= recv * nranks],
            safe config reduce_scatter_config;
    }

    /// To `peer`, which receives it with a matching receive; a send and its receive usually go
    /// together in one group.
    send "Send" {
        raw: send_raw calls send "ncclSend" since "2.7.3";
        no config raw;
        buffers: send; count: count; arguments: (peer: i32); watchdog peer: Some(peer);
        sizes: "`send` must point to `count` elements of `dtype`";
        safe: send held send_held [send], no safe config;
    }

    /// From `peer`, which sends with a matching send.
    recv "Receive" {
        raw: recv_raw calls recv "ncclRecv" since "2.7.3";
        no config raw;
        buffers: recv; count: count; arguments: (peer: i32); watchdog peer: Some(peer);
        sizes: "`recv` must point to `count` elements of `dtype`";
        safe: recv held recv_held [recv], no safe config;
    }

    /// Rank i's block j, of `nranks` blocks of `count` elements, goes to rank j's block i.
    all_to_all "All-to-all" {
        raw: all_to_all_raw calls all_to_all "ncclAlltoAll" since "2.28.3";
        config raw: all_to_all_config_raw calls all_to_all_config "ncclAlltoAllConfig" since "2.31.2";
        buffers: send, recv; count: count; arguments: (); watchdog peer: None;
        sizes: "`send` and `recv` must point to `count * nranks` elements of `dtype` each";
        safe: all_to_all held all_to_all_held [send -> recv: send == recv, a multiple of nranks],
            safe config all_to_all_config;
    }

    /// `root` receives all ranks' data, in rank order.
    gather "Gather" {
        raw: gather_raw calls gather "ncclGather" since "2.28.3";
        config raw: gather_config_raw calls gather_config "ncclGatherConfig" since "2.31.2";
        buffers: send, recv; count: count; arguments: (root: i32); watchdog peer: Some(root);
        sizes: "`send` must point to `count` elements of `dtype`, and on `root` `recv` to `count * nranks`";
        no safe form;
    }

    /// Rank i receives block i of `root`'s data, of `nranks` blocks of `count` elements.
    scatter "Scatter" {
        raw: scatter_raw calls scatter "ncclScatter" since "2.28.3";
        config raw: scatter_config_raw calls scatter_config "ncclScatterConfig" since "2.31.2";
        buffers: send, recv; count: count; arguments: (root: i32); watchdog peer: Some(root);
        sizes: "On `root`, `send` must point to `count * nranks` elements of `dtype`, and `recv` to `count`";
        no safe form;
    }
}
