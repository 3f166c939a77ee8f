//! The collectives `perf` measures, as nccl-tests defines them: buffer sizes per rank, the
//! in-place offsets, the bandwidth formulas, the data each rank sends and the result each
//! rank must hold.

use std::ffi::c_void;
use std::sync::Arc;

use clap::ValueEnum;
use nccl_trampoline::nccl::Error;
use nccl_trampoline::nccl::{Communicator, CustomRedOp, DataType, Nccl, NcclScalar, RedOp};

use super::alltoallv::{self, Pattern, PeerCounts};
use super::data::{premul_scalar, Elem, Op};

/// A collective, named as nccl-tests' binaries are (`all_reduce` for `all_reduce_perf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Collective {
    #[value(name = "all_reduce", alias = "allreduce", alias = "all_reduce_perf")]
    AllReduce,
    #[value(name = "all_gather", alias = "allgather", alias = "all_gather_perf")]
    AllGather,
    #[value(name = "broadcast", alias = "broadcast_perf")]
    Broadcast,
    #[value(name = "reduce", alias = "reduce_perf")]
    Reduce,
    #[value(name = "reduce_scatter", alias = "reducescatter", alias = "reduce_scatter_perf")]
    ReduceScatter,
    #[value(name = "alltoall", alias = "all_to_all", alias = "alltoall_perf")]
    AllToAll,
    /// All-to-all with a different count per pair of ranks (`alltoallv.rs`).
    #[value(name = "alltoallv", alias = "alltoallv_perf")]
    AllToAllV,
    #[value(name = "gather", alias = "gather_perf")]
    Gather,
    #[value(name = "scatter", alias = "scatter_perf")]
    Scatter,
    #[value(name = "sendrecv", alias = "sendrecv_perf")]
    SendRecv,
}

/// Element counts per rank for one size, in elements (nccl-tests' `getCollByteCount`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Elements in the send buffer.
    pub send: usize,
    /// Elements in the receive buffer.
    pub recv: usize,
    /// The count argument of the call (and the table's count column).
    pub param: usize,
    /// In place, the send data starts `send_offset * rank` elements into the receive buffer.
    pub send_offset: usize,
    /// In place, the result starts `recv_offset * rank` elements into the receive buffer.
    pub recv_offset: usize,
    /// Every rank's count for every peer, where they differ (alltoallv); `send` and `recv`
    /// are then the largest rank's totals. `None`: `param` per peer.
    pub peers: Option<Arc<PeerCounts>>,
}

impl Collective {
    /// nccl-tests' name for the output header.
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::AllToAll => "alltoall",
            Collective::AllToAllV => "alltoallv",
            Collective::Gather => "gather",
            Collective::Scatter => "scatter",
            Collective::SendRecv => "sendrecv",
        }
    }

    /// Whether the collective takes a reduction operation.
    pub fn reduces(self) -> bool {
        matches!(self, Collective::AllReduce | Collective::Reduce | Collective::ReduceScatter)
    }

    /// Whether the sweep goes over `-o`'s ops: the reductions, and send/receive, which
    /// nccl-tests runs (and names in the table) once per op though it reduces nothing
    /// (src/sendrecv.cu:91-123).
    pub fn takes_op(self) -> bool {
        self.reduces() || self == Collective::SendRecv
    }

    /// Whether the collective has a root.
    pub fn rooted(self) -> bool {
        matches!(self, Collective::Broadcast | Collective::Reduce | Collective::Gather | Collective::Scatter)
    }

    /// Whether an in-place result is defined and checked. In-place all-to-all is not checked
    /// (as in nccl-tests); in-place send/receive has no defined result (each rank's buffer is
    /// read by one peer while another peer writes it). In-place alltoallv runs (the same
    /// buffer to send from and receive into) and is not checked, as in nccl-tests
    /// (alltoallv.cu:474-475, `reportErrors = in_place ? 0 : 1`).
    pub fn checks_in_place(self) -> bool {
        !matches!(self, Collective::AllToAll | Collective::AllToAllV | Collective::SendRecv)
    }

    /// The layout for `count = bytes / elem_size` elements of `elem_size` bytes on `nranks`
    /// ranks. alltoallv's traffic is this process's [`alltoallv::pattern`] (a plan checks it
    /// first; should it be unusable, the default generated pattern).
    pub fn sized_layout(self, count: usize, elem_size: usize, nranks: usize) -> Layout {
        // Per-rank counts are whole multiples of 16 bytes (src/all_gather.cu:11 and the same
        // line of reduce_scatter, alltoall, gather and scatter).
        let base = (count / nranks) & !(16 / elem_size.clamp(1, 16) - 1);
        let l = |send, recv, param, send_offset, recv_offset| Layout {
            send,
            recv,
            param,
            send_offset,
            recv_offset,
            peers: None,
        };
        match self {
            Collective::AllReduce | Collective::Broadcast | Collective::Reduce | Collective::SendRecv => {
                l(count, count, count, 0, 0)
            }
            Collective::AllGather | Collective::Gather => l(base, base * nranks, base, base, 0),
            Collective::ReduceScatter | Collective::Scatter => l(base * nranks, base, base, 0, base),
            Collective::AllToAll => l(base * nranks, base * nranks, base, 0, 0),
            Collective::AllToAllV => {
                let default = Pattern::default();
                alltoallv_layout(alltoallv::pattern().as_ref().unwrap_or(&default), count, elem_size, nranks)
            }
        }
    }

    /// nccl-tests' `getBw`: (algbw, busbw) in GB/s for `param` elements of `size` bytes in
    /// `seconds`.
    pub fn bandwidth(self, param: usize, size: usize, seconds: f64, nranks: usize) -> (f64, f64) {
        let n = nranks as f64;
        let (bytes, factor) = match self {
            Collective::AllReduce => (param * size, 2.0 * (n - 1.0) / n),
            Collective::Broadcast | Collective::Reduce | Collective::SendRecv => (param * size, 1.0),
            Collective::AllGather
            | Collective::ReduceScatter
            | Collective::AllToAll
            | Collective::Gather
            | Collective::Scatter => (param * size * nranks, (n - 1.0) / n),
            Collective::AllToAllV => {
                let default = Pattern::default();
                let pattern = alltoallv::pattern().as_ref().unwrap_or(&default);
                (alltoallv_bytes(pattern, param, size, nranks), (n - 1.0) / n)
            }
        };
        let alg = bytes as f64 / 1.0e9 / seconds;
        (alg, alg * factor)
    }

    /// Whether the loaded library has the collective's own function. Before 2.28,
    /// all-to-all, gather and scatter are groups of sends and receives, as in nccl-tests.
    /// Asked once per sweep, not per call.
    pub fn native_in(self, nccl: &Nccl) -> bool {
        match self {
            Collective::AllToAll => nccl.has("ncclAlltoAll"),
            Collective::Gather => nccl.has("ncclGather"),
            Collective::Scatter => nccl.has("ncclScatter"),
            _ => true,
        }
    }

    /// Enqueues the collective of global rank `rank` of `nranks` (inside the caller's group
    /// when one thread drives several ranks); `native` is [`native_in`](Self::native_in).
    ///
    /// # Safety
    ///
    /// `send` and `recv` must hold the layout's element counts of `dtype` on the
    /// communicator's device, live until `stream` has run the collective.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn enqueue(
        self,
        nccl: &Nccl,
        native: bool,
        comm: &Communicator,
        send: *mut c_void,
        recv: *mut c_void,
        layout: &Layout,
        dtype: DataType,
        op: RedOp,
        root: i32,
        rank: usize,
        nranks: usize,
        stream: *mut c_void,
    ) -> Result<(), Error> {
        let count = layout.param;
        let size = dtype.size().unwrap_or(1);
        let at = |p: *mut c_void, elems: usize| p.cast::<u8>().wrapping_add(elems * size).cast::<c_void>();
        // SAFETY: (every arm) the caller's contract; peer offsets stay inside the layout.
        unsafe {
            match self {
                Collective::AllReduce => comm.all_reduce_raw(send, recv, count, dtype, op, stream),
                Collective::AllGather => comm.all_gather_raw(send, recv, count, dtype, stream),
                Collective::Broadcast => comm.broadcast_raw(send, recv, count, dtype, root, stream),
                Collective::Reduce => comm.reduce_raw(send, recv, count, dtype, op, root, stream),
                Collective::ReduceScatter => comm.reduce_scatter_raw(send, recv, count, dtype, op, stream),
                Collective::AllToAll if native => comm.all_to_all_raw(send, recv, count, dtype, stream),
                Collective::Gather if native => comm.gather_raw(send, recv, count, dtype, root, stream),
                Collective::Scatter if native => comm.scatter_raw(send, recv, count, dtype, root, stream),
                // Before 2.28: point-to-point in a group, as nccl-tests does.
                Collective::AllToAll => {
                    let g = nccl.group()?;
                    for peer in 0..nranks {
                        comm.send_raw(at(send, peer * count), count, dtype, peer as i32, stream)?;
                        comm.recv_raw(at(recv, peer * count), count, dtype, peer as i32, stream)?;
                    }
                    g.end()
                }
                Collective::Gather => {
                    let g = nccl.group()?;
                    if rank == root as usize {
                        for peer in 0..nranks {
                            comm.recv_raw(at(recv, peer * count), count, dtype, peer as i32, stream)?;
                        }
                    }
                    comm.send_raw(send, count, dtype, root, stream)?;
                    g.end()
                }
                Collective::Scatter => {
                    let g = nccl.group()?;
                    if rank == root as usize {
                        for peer in 0..nranks {
                            comm.send_raw(at(send, peer * count), count, dtype, peer as i32, stream)?;
                        }
                    }
                    comm.recv_raw(recv, count, dtype, root, stream)?;
                    g.end()
                }
                // Each peer's count, sends and receives packed in rank order, zero counts
                // skipped (alltoallv.cu:521-551, `AlltoAllvRunColl`).
                Collective::AllToAllV => {
                    let g = nccl.group()?;
                    let (mut sent, mut received) = (0, 0);
                    for peer in 0..nranks {
                        let (out, inc) = match &layout.peers {
                            Some(p) => (p.count(rank, peer), p.count(peer, rank)),
                            None => (count, count),
                        };
                        if out > 0 {
                            comm.send_raw(at(send, sent), out, dtype, peer as i32, stream)?;
                            sent += out;
                        }
                        if inc > 0 {
                            comm.recv_raw(at(recv, received), inc, dtype, peer as i32, stream)?;
                            received += inc;
                        }
                    }
                    g.end()
                }
                Collective::SendRecv => {
                    let g = nccl.group()?;
                    comm.send_raw(send, count, dtype, ((rank + 1) % nranks) as i32, stream)?;
                    comm.recv_raw(recv, count, dtype, ((rank + nranks - 1) % nranks) as i32, stream)?;
                    g.end()
                }
            }
        }
    }

    /// Where rank `rank`'s result lies in its receive buffer (element offset, length), or
    /// `None` when this rank receives nothing to check (non-root ranks of reduce and gather).
    pub fn result_region(self, layout: &Layout, rank: usize, root: usize, in_place: bool) -> Option<(usize, usize)> {
        let offset = if in_place { layout.recv_offset * rank } else { 0 };
        match self {
            Collective::Reduce | Collective::Gather if rank != root => None,
            Collective::AllToAllV => Some((offset, layout.peers.as_ref().map_or(layout.recv, |p| p.recv_total(rank)))),
            Collective::ReduceScatter | Collective::Scatter => Some((offset, layout.param)),
            _ => Some((offset, layout.recv)),
        }
    }

    /// Element `i` of rank `rank`'s result, from `send(r, j)` (element `j` of rank `r`'s send
    /// data) and `reduce` over all ranks of a column.
    #[allow(clippy::too_many_arguments)]
    pub fn expected(
        self,
        layout: &Layout,
        rank: usize,
        nranks: usize,
        root: usize,
        i: usize,
        send: &dyn Fn(usize, usize) -> i64,
        reduce: &dyn Fn(&mut dyn Iterator<Item = i64>) -> Expected,
    ) -> Expected {
        let base = layout.param;
        match self {
            Collective::AllReduce | Collective::Reduce => reduce(&mut (0..nranks).map(|r| send(r, i))),
            Collective::ReduceScatter => reduce(&mut (0..nranks).map(|r| send(r, rank * base + i))),
            Collective::Broadcast => Expected::Int(send(root, i)),
            Collective::AllGather | Collective::Gather => Expected::Int(send(i / base, i % base)),
            Collective::AllToAll => Expected::Int(send(i / base, rank * base + i % base)),
            Collective::AllToAllV => match &layout.peers {
                Some(p) => p.source(rank, i).map_or(Expected::Int(0), |(src, j)| Expected::Int(send(src, j))),
                None => Expected::Int(send(i / base, rank * base + i % base)),
            },
            Collective::Scatter => Expected::Int(send(root, rank * base + i)),
            Collective::SendRecv => Expected::Int(send((rank + nranks - 1) % nranks, i)),
        }
    }
}

/// alltoallv's layout: the call's count (the count column), the largest rank's send and
/// receive totals (the buffers, and the size column: nccl-tests prints
/// `max(sendBytes, expectedBytes)`, common.cu:938), and every pair's count.
pub fn alltoallv_layout(pattern: &Pattern, count: usize, elem_size: usize, nranks: usize) -> Layout {
    let param = pattern.param_count(count, elem_size, nranks);
    let (send, recv) = pattern.max_counts(param, elem_size, nranks);
    let peers = Some(Arc::new(pattern.counts(param, elem_size, nranks)));
    Layout { send, recv, param, send_offset: 0, recv_offset: 0, peers }
}

/// The bytes alltoallv's bandwidths count: the largest any rank sends or receives
/// (alltoallv.cu:499-519, `AlltoAllvGetBw`), for the call's count `param`.
pub fn alltoallv_bytes(pattern: &Pattern, param: usize, elem_size: usize, nranks: usize) -> usize {
    let (send, recv) = pattern.max_counts(param, elem_size, nranks);
    send.max(recv) * elem_size
}

/// The reduction op of one call of rank `rank`: NCCL's fixed op, or for `mulsum` a PreMulSum
/// op with the rank's scalar ([`premul_scalar`]) in the element type, created for this call
/// and destroyed when the returned handle drops: nccl-tests creates one before each call and
/// destroys it after the call is enqueued (common.cu:561-593 and 613-617). `None` (a
/// collective without an op) is sum, never read.
pub fn reduction_op<'c>(
    comm: &'c Communicator,
    op: Option<Op>,
    elem: Elem,
    rank: usize,
) -> Result<(RedOp, Option<CustomRedOp<'c>>), Error> {
    let Some(op) = op else { return Ok((RedOp::SUM, None)) };
    if let Some(fixed) = op.builtin() {
        return Ok((fixed, None));
    }
    let v = premul_scalar(rank);
    let mut bits = [0u8; 8];
    elem.encode(v, &mut bits[..elem.size()]);
    let custom = match elem {
        Elem::Int8 => comm.create_pre_mul_sum(v as i8),
        Elem::Uint8 => comm.create_pre_mul_sum(v as u8),
        Elem::Int32 => comm.create_pre_mul_sum(v as i32),
        Elem::Uint32 => comm.create_pre_mul_sum(v as u32),
        Elem::Int64 => comm.create_pre_mul_sum(v),
        Elem::Uint64 => comm.create_pre_mul_sum(v as u64),
        Elem::Float => comm.create_pre_mul_sum(v as f32),
        Elem::Double => comm.create_pre_mul_sum(v as f64),
        Elem::Half => comm.create_pre_mul_sum(Half(u16::from_ne_bytes([bits[0], bits[1]]))),
        Elem::Bfloat16 => comm.create_pre_mul_sum(Bfloat16(u16::from_ne_bytes([bits[0], bits[1]]))),
        Elem::F8e4m3 => comm.create_pre_mul_sum(F8e4m3(bits[0])),
        Elem::F8e5m2 => comm.create_pre_mul_sum(F8e5m2(bits[0])),
    }?;
    Ok((custom.op(), Some(custom)))
}

/// The bits of an IEEE binary16 scalar (the crate's `half` feature is not the command's).
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Half(u16);
/// The bits of a bfloat16 scalar.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Bfloat16(u16);
/// The bits of an OCP FP8 E4M3 scalar.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct F8e4m3(u8);
/// The bits of an OCP FP8 E5M2 scalar.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct F8e5m2(u8);

// SAFETY: each is a transparent wrapper of the type's bits, of its NCCL type's size and
// representation (binary16, bfloat16, OCP E4M3 and E5M2: one element each).
unsafe impl NcclScalar for Half {
    const DATA_TYPE: DataType = DataType::FLOAT16;
}
// SAFETY: as above.
unsafe impl NcclScalar for Bfloat16 {
    const DATA_TYPE: DataType = DataType::BFLOAT16;
}
// SAFETY: as above.
unsafe impl NcclScalar for F8e4m3 {
    const DATA_TYPE: DataType = DataType::FLOAT8_E4M3;
}
// SAFETY: as above.
unsafe impl NcclScalar for F8e5m2 {
    const DATA_TYPE: DataType = DataType::FLOAT8_E5M2;
}

/// An expected element: exact integer arithmetic, or a real number (averages of floats).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Expected {
    Int(i64),
    Real(f64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_and_bandwidths_follow_nccl_tests() {
        // 2 ranks, 1024 floats.
        let l = Collective::AllGather.sized_layout(1024, 1, 2);
        assert_eq!(l, Layout { send: 512, recv: 1024, param: 512, send_offset: 512, recv_offset: 0, peers: None });
        let l = Collective::ReduceScatter.sized_layout(1024, 1, 2);
        assert_eq!(l, Layout { send: 1024, recv: 512, param: 512, send_offset: 0, recv_offset: 512, peers: None });
        // all-reduce: 1 GB in 1 s on 2 ranks -> algbw 1, busbw 2*(1/2) = 1.
        assert_eq!(Collective::AllReduce.bandwidth(250_000_000, 4, 1.0, 2), (1.0, 1.0));
        // all-reduce on 8 ranks: busbw = algbw * 2 * 7/8.
        let (a, b) = Collective::AllReduce.bandwidth(250_000_000, 4, 0.5, 8);
        assert_eq!((a, b), (2.0, 3.5));
        // all-gather: param is per rank; algbw counts the whole gathered buffer.
        let (a, b) = Collective::AllGather.bandwidth(125_000_000, 4, 1.0, 2);
        assert_eq!((a, b), (1.0, 0.5));
        assert_eq!(Collective::Broadcast.bandwidth(1_000_000_000, 1, 1.0, 4), (1.0, 1.0));
    }

    #[test]
    fn per_rank_counts_are_whole_16_byte_multiples() {
        // 8 bytes of floats on one rank: nccl-tests' all-gather row is 0 bytes, 0 elements.
        assert_eq!(Collective::AllGather.sized_layout(2, 4, 1).param, 0);
        assert_eq!(Collective::Gather.sized_layout(8, 4, 1).param, 8);
        assert_eq!(Collective::ReduceScatter.sized_layout(100, 1, 3).param, 32);
        assert_eq!(Collective::AllToAll.sized_layout(100, 8, 3).param, 32);
        assert_eq!(Collective::Scatter.sized_layout(9, 8, 1).param, 8);
        // The others take the count as it is.
        assert_eq!(Collective::AllReduce.sized_layout(3, 4, 2).param, 3);
    }

    #[test]
    fn expected_values_follow_the_data_movement() {
        let l = Collective::AllToAll.sized_layout(8, 4, 2); // base 4 floats
        let send = |r: usize, j: usize| (r * 100 + j) as i64;
        let reduce = |it: &mut dyn Iterator<Item = i64>| Expected::Int(it.sum());
        // Rank 1 receives rank 0's second block, then its own second block.
        let got: Vec<Expected> =
            (0..8).map(|i| Collective::AllToAll.expected(&l, 1, 2, 0, i, &send, &reduce)).collect();
        let want: Vec<Expected> = [4, 5, 6, 7, 104, 105, 106, 107].iter().map(|&v| Expected::Int(v)).collect();
        assert_eq!(got, want);
        let l = Collective::ReduceScatter.sized_layout(8, 4, 2);
        assert_eq!(Collective::ReduceScatter.expected(&l, 1, 2, 0, 0, &send, &reduce), Expected::Int(4 + 104));
        assert_eq!(Collective::SendRecv.expected(&l, 0, 2, 0, 3, &send, &reduce), Expected::Int(103));
        assert_eq!(Collective::Reduce.result_region(&l, 1, 0, false), None);
        assert_eq!(Collective::ReduceScatter.result_region(&l, 1, 0, true), Some((4, 4)));
    }

    #[test]
    fn alltoallv_lays_out_and_expects_per_peer_parts() {
        // 3 ranks, 3000 bytes of float, spread 1: per peer 0, 248, 496 floats by distance.
        let p = Pattern::default();
        let l = alltoallv_layout(&p, 750, 4, 3);
        assert_eq!((l.send, l.recv, l.param, l.send_offset, l.recv_offset), (744, 744, 248, 0, 0));
        // Rank 2 receives 496 from rank 0 (its elements 248..744, after its 248 for rank 1),
        // then 248 from rank 1 (its elements 496..744, after its 496 for rank 0).
        let send = |r: usize, j: usize| (r * 1000 + j) as i64;
        let reduce = |_: &mut dyn Iterator<Item = i64>| Expected::Int(-1);
        let at = |i| Collective::AllToAllV.expected(&l, 2, 3, 0, i, &send, &reduce);
        assert_eq!(at(0), Expected::Int(248));
        assert_eq!(at(495), Expected::Int(743));
        assert_eq!(at(496), Expected::Int(1000 + 496));
        assert_eq!(at(743), Expected::Int(1000 + 743));
        assert_eq!(Collective::AllToAllV.result_region(&l, 2, 0, false), Some((0, 744)));
        assert!(!Collective::AllToAllV.checks_in_place());
        // The bandwidths count the largest rank's bytes: 744 floats.
        assert_eq!(alltoallv_bytes(&p, 248, 4, 3), 2976);
        // The count column is 0 with a matrix; the size column its largest row or column.
        let m = alltoallv::Matrix::parse("0 160\n32 0", 1.0, std::path::Path::new("m")).unwrap();
        let l = alltoallv_layout(&Pattern::Matrix(m), 1 << 20, 4, 2);
        assert_eq!((l.send, l.recv, l.param), (40, 40, 0));
    }
}
