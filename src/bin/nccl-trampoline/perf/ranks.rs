//! The ranks this process drives: their communicators, buffers and streams, and the
//! measurement of one step (warm-up, the timed loop, the check run).

use std::ffi::c_void;
use std::time::Instant;

use nccl_trampoline::nccl::{Communicator, DataType, Nccl, WatchdogConfig};

use super::collective::{reduction_op, Collective, Layout};
use super::data::{Elem, Op, TestData};
use super::options::Args;
use super::plan::Plan;
use super::report::Measured;
use crate::cuda::{DeviceMemory, DeviceStream, Driver};
use crate::error::{Error, GpuStep, LibraryError};

/// The ranks this process drives and the memory they use.
pub struct Ranks<'d, 'n> {
    nccl: &'n Nccl,
    driver: &'d Driver,
    ranks: Vec<Rank<'d>>,
    nranks: usize,
    /// [`Collective::native_in`] for the sweep's collective.
    native: bool,
}

struct Rank<'d> {
    comm: Communicator,
    device: i32,
    global: usize,
    send: DeviceMemory<'d>,
    recv: DeviceMemory<'d>,
    stream: DeviceStream<'d>,
}

impl<'d, 'n> Ranks<'d, 'n> {
    /// The ranks of `comms` (communicator, device, global rank), each with buffers for the
    /// largest step of `plan` and a stream.
    pub fn new(
        nccl: &'n Nccl,
        driver: &'d Driver,
        comms: Vec<(Communicator, i32, usize)>,
        plan: &Plan,
        watchdog: Option<std::time::Duration>,
    ) -> Result<Self, Error> {
        let bytes = buffer_bytes(plan);
        let mut ranks = Vec::new();
        for (comm, device, global) in comms {
            let gpu = |step| move |source: LibraryError| Error::Gpu { rank: global, device, step, source };
            driver.activate(device).map_err(|e| gpu(GpuStep::Activate)(e.into()))?;
            if let Some(timeout) = watchdog {
                comm.start_watchdog(WatchdogConfig::new(timeout)).map_err(|e| gpu(GpuStep::Watchdog)(e.into()))?;
            }
            let send = driver.alloc(bytes).map_err(|e| gpu(GpuStep::Alloc)(e.into()))?;
            let recv = driver.alloc(bytes).map_err(|e| gpu(GpuStep::Alloc)(e.into()))?;
            let stream = driver.stream().map_err(|e| gpu(GpuStep::Stream)(e.into()))?;
            ranks.push(Rank { comm, device, global, send, recv, stream });
        }
        Ok(Ranks { nccl, driver, ranks, nranks: plan.nranks, native: plan.collective.native_in(nccl) })
    }

    /// One operation on every local rank (in one group when there are several).
    fn launch(
        &self,
        c: Collective,
        l: &Layout,
        elem: Elem,
        op: Option<Op>,
        root: usize,
        in_place: bool,
    ) -> Result<(), Error> {
        let group = if self.ranks.len() > 1 { Some(self.nccl.group().map_err(collective)?) } else { None };
        for r in &self.ranks {
            let (send, recv) = buffers(r, l, elem, in_place);
            // mulsum: an op of this rank's for this call, destroyed when `custom` drops, after
            // the call is enqueued or failed.
            let (red_op, custom) = reduction_op(&r.comm, op, elem, r.global).map_err(collective)?;
            // SAFETY: both buffers were allocated for the largest size of the sweep, which
            // bounds every layout; they live until the world is dropped, after the streams
            // are synchronised.
            unsafe {
                c.enqueue(
                    self.nccl,
                    self.native,
                    &r.comm,
                    send,
                    recv,
                    l,
                    elem.nccl(),
                    red_op,
                    root as i32,
                    r.global,
                    self.nranks,
                    r.stream.raw(),
                )
            }
            .map_err(collective)?;
            drop(custom);
        }
        if let Some(g) = group {
            g.end().map_err(collective)?;
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<(), Error> {
        for r in &self.ranks {
            r.stream.synchronize().map_err(r.error(GpuStep::Synchronize))?;
        }
        Ok(())
    }

    /// Every rank's `mine` (all of the same length), in rank order, through NCCL itself (an
    /// all-gather of bytes): how ranks in separate processes share what they measured, under
    /// any launcher. One local rank only.
    pub fn gather(&self, mine: &[u8]) -> Result<Vec<u8>, Error> {
        let [r] = &self.ranks[..] else { return Err(Error::GatherLocalRanks { local: self.ranks.len() }) };
        self.driver.activate(r.device).map_err(r.error(GpuStep::Activate))?;
        let send = self.driver.alloc(mine.len()).map_err(r.error(GpuStep::Alloc))?;
        let recv = self.driver.alloc(mine.len() * self.nranks).map_err(r.error(GpuStep::Alloc))?;
        // In the stream's order: the all-gather below reads the bytes, not what was there.
        send.upload_on(&r.stream, mine).map_err(r.error(GpuStep::Upload))?;
        // SAFETY: both buffers were just allocated on the rank's device with the sizes an
        // all-gather of `mine.len()` bytes per rank needs; `download_on` waits for the stream
        // before they are read or freed.
        unsafe { r.comm.all_gather_raw(send.ptr(), recv.ptr(), mine.len(), DataType::INT8, r.stream.raw()) }
            .map_err(collective)?;
        let mut all = vec![0u8; mine.len() * self.nranks];
        recv.download_on(&r.stream, &mut all).map_err(r.error(GpuStep::Download))?;
        Ok(all)
    }

    /// Warm-up, the timed loop, and the check run of one placement.
    pub fn measure(
        &self,
        args: &Args,
        plan: &Plan,
        elem: Elem,
        op: Option<Op>,
        size: usize,
        in_place: bool,
    ) -> Result<Measured, Error> {
        let c = plan.collective;
        let l = c.layout(size / elem.size(), plan.nranks);
        if args.check == 1 {
            // Defined data for the timed runs too (the check run re-initialises).
            self.initialise(plan, &l, elem, op, in_place)?;
        }
        for _ in 0..args.warmup {
            self.launch(c, &l, elem, op, plan.root, in_place)?;
        }
        self.synchronize()?;
        let start = Instant::now();
        for _ in 0..args.iters {
            if args.agg > 1 {
                let g = self.nccl.group().map_err(collective)?;
                for _ in 0..args.agg {
                    self.launch(c, &l, elem, op, plan.root, in_place)?;
                }
                g.end().map_err(collective)?;
            } else {
                self.launch(c, &l, elem, op, plan.root, in_place)?;
            }
            if args.blocking == 1 {
                self.synchronize()?;
            }
        }
        let cpu = start.elapsed();
        self.synchronize()?;
        let time = start.elapsed();
        let n = f64::from(args.iters) * f64::from(args.agg);
        let wrong = if args.check == 1 && (!in_place || c.checks_in_place()) {
            self.initialise(plan, &l, elem, op, in_place)?;
            self.launch(c, &l, elem, op, plan.root, in_place)?;
            self.synchronize()?;
            Some(self.count_wrong(plan, &l, elem, op, in_place)?)
        } else {
            None
        };
        Ok(Measured { time: time.as_secs_f64() / n, cpu: cpu.as_secs_f64() / n, algbw: 0.0, busbw: 0.0, wrong })
    }

    /// Writes every rank's send data (into the receive buffer, in place) and fills the rest of
    /// the receive buffer with a byte pattern no result matches, in the order of the rank's
    /// stream: the collectives launched there next read these bytes and write after them (a
    /// bare `cuMemcpyHtoD` would land after the launch on this non-blocking stream:
    /// src/cuda/mod.rs, "What is synchronous").
    fn initialise(&self, plan: &Plan, l: &Layout, elem: Elem, op: Option<Op>, in_place: bool) -> Result<(), Error> {
        let data = TestData::new(elem, op, plan.nranks);
        let size = elem.size();
        for r in &self.ranks {
            self.driver.activate(r.device).map_err(r.error(GpuStep::Activate))?;
            let mut recv = vec![0xa5u8; l.recv.max(l.send_offset * plan.nranks) * size];
            let mut send = vec![0u8; l.send * size];
            for (j, chunk) in send.chunks_exact_mut(size).enumerate() {
                elem.encode(data.send(r.global, j), chunk);
            }
            if in_place {
                let at = l.send_offset * r.global * size;
                if recv.len() < at + send.len() {
                    recv.resize(at + send.len(), 0xa5);
                }
                recv[at..at + send.len()].copy_from_slice(&send);
            } else {
                r.send.upload_on(&r.stream, &send).map_err(r.error(GpuStep::Upload))?;
            }
            r.recv.upload_on(&r.stream, &recv).map_err(r.error(GpuStep::Upload))?;
        }
        Ok(())
    }

    fn count_wrong(&self, plan: &Plan, l: &Layout, elem: Elem, op: Option<Op>, in_place: bool) -> Result<u64, Error> {
        let c = plan.collective;
        let data = TestData::new(elem, op, plan.nranks);
        let size = elem.size();
        let mut wrong = 0u64;
        for r in &self.ranks {
            let Some((offset, len)) = c.result_region(l, r.global, plan.root, in_place) else { continue };
            self.driver.activate(r.device).map_err(r.error(GpuStep::Activate))?;
            let mut host = vec![0u8; (offset + len) * size];
            r.recv.download_on(&r.stream, &mut host).map_err(r.error(GpuStep::Download))?;
            let send = |rank: usize, j: usize| data.contribution(rank, j);
            let reduce = |it: &mut dyn Iterator<Item = i64>| data.reduce(it);
            for (i, bytes) in host[offset * size..].chunks_exact(size).enumerate() {
                let want = c.expected(l, r.global, plan.nranks, plan.root, i, &send, &reduce);
                if !elem.matches(bytes, want) {
                    wrong += 1;
                }
            }
        }
        Ok(wrong)
    }
}

impl Rank<'_> {
    /// The error of a CUDA `step` of this rank.
    fn error<E: Into<LibraryError>>(&self, step: GpuStep) -> impl Fn(E) -> Error {
        let (rank, device) = (self.global, self.device);
        move |source| Error::Gpu { rank, device, step, source: source.into() }
    }
}

/// The error of a collective or a group.
fn collective(source: impl Into<LibraryError>) -> Error {
    Error::Collective { source: source.into() }
}

fn buffers(r: &Rank<'_>, l: &Layout, elem: Elem, in_place: bool) -> (*mut c_void, *mut c_void) {
    let base = r.recv.ptr().cast::<u8>();
    if in_place {
        let s = base.wrapping_add(l.send_offset * r.global * elem.size());
        let d = base.wrapping_add(l.recv_offset * r.global * elem.size());
        (s.cast(), d.cast())
    } else {
        (r.send.ptr(), r.recv.ptr())
    }
}

/// The largest buffer any step needs on one rank: of its layout sized for the element
/// ([`Collective::sized_layout`]) and, for alltoallv, of the 1-byte-element layout too (so
/// that a step laid out by [`Collective::layout`] also fits).
fn buffer_bytes(plan: &Plan) -> usize {
    let c = plan.collective;
    let bytes = |l: Layout, elem_size: usize| l.send.max(l.recv).max(l.send_offset * plan.nranks + l.send) * elem_size;
    plan.steps()
        .map(|(e, _, s)| {
            let count = s / e.size();
            let sized = bytes(c.sized_layout(count, e.size(), plan.nranks), e.size());
            if c == Collective::AllToAllV {
                sized.max(bytes(c.layout(count, plan.nranks), e.size()))
            } else {
                sized
            }
        })
        .max()
        .unwrap_or(0)
}
