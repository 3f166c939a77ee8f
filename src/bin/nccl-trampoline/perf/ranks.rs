//! The ranks this process drives: their buffers and streams, and the measurement of one
//! placement of one size as nccl-tests 2.19.6 makes it (src/common.cu, v2.19.6: `startColl`
//! 544-629, `completeColl` 631-636, `BenchTime` 692-897, `TimeTest` 914-949,
//! `testStreamSynchronize` 488-542).

use std::ffi::c_void;
use std::time::Instant;

use nccl_trampoline::cuda::Event;
use nccl_trampoline::nccl::{Communicator, Nccl, Registration, WatchdogConfig};

use super::collective::{reduction_op, Collective, Layout};
use super::data::{Elem, Op, TestData};
use super::device::{free_memory, gather_on, poll, register, register_mode, Buffer};
use super::options::Args;
use super::plan::Plan;
use super::report::Measured;
use crate::cuda::{DeviceStream, Driver};
use crate::error::{Error, GpuStep, LibraryError};

/// The ranks this process drives and the memory they use.
pub struct Ranks<'c, 'd, 'n> {
    nccl: &'n Nccl,
    driver: &'d Driver,
    ranks: Vec<Rank<'c, 'd, 'n>>,
    nranks: usize,
    /// Processes of the job: more than one, and the barriers and agreements cross them.
    processes: usize,
    /// [`Collective::native_in`] for the sweep's collective.
    native: bool,
    /// Bytes of each buffer, the `-u` padding left out.
    bytes: usize,
    /// `-u`: elements the buffers are moved by.
    unalign: usize,
    /// `-T`, seconds (0: no limit).
    timeout: u32,
}

struct Rank<'c, 'd, 'n> {
    /// Ended before the buffers are freed (fields drop in order).
    registrations: Vec<Registration<'c>>,
    comm: &'c Communicator,
    device: i32,
    global: usize,
    send: Buffer<'d, 'n>,
    recv: Buffer<'d, 'n>,
    stream: DeviceStream<'d>,
}

/// GPU memory taken, in bytes, the maximum over this process's GPUs (`-M 1`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryUse {
    pub init: i64,
    pub buffers: i64,
    pub collective: i64,
}

impl<'c, 'd, 'n> Ranks<'c, 'd, 'n> {
    /// The ranks of `comms` (communicator, device, global rank), each with buffers for the
    /// largest step of `plan` and a stream; `processes` is the job's count. `free_before`
    /// holds each device's free memory before its communicator was made (`-M 1`).
    pub fn new(
        nccl: &'n Nccl,
        driver: &'d Driver,
        comms: &'c [(Communicator, i32, usize)],
        plan: &Plan,
        args: &Args,
        processes: usize,
    ) -> Result<Self, Error> {
        let bytes = buffer_bytes(plan);
        // Room for the largest type moved by -u elements (src/common.cu:1121).
        let padded = bytes + 8 * args.unalign as usize;
        let mut ranks = Vec::new();
        for (comm, device, global) in comms {
            let (device, global) = (*device, *global);
            let gpu = |step| move |source: LibraryError| Error::Gpu { rank: global, device, step, source };
            driver.activate(device).map_err(|e| gpu(GpuStep::Activate)(e.into()))?;
            if let Some(timeout) = args.watchdog {
                comm.start_watchdog(WatchdogConfig::new(timeout)).map_err(|e| gpu(GpuStep::Watchdog)(e.into()))?;
            }
            let send = Buffer::new(nccl, driver, padded).map_err(gpu(GpuStep::Alloc))?;
            let recv = Buffer::new(nccl, driver, padded).map_err(gpu(GpuStep::Alloc))?;
            let stream = driver.stream().map_err(|e| gpu(GpuStep::Stream)(e.into()))?;
            ranks.push(Rank { registrations: Vec::new(), comm, device, global, send, recv, stream });
        }
        // Every rank's buffers registered in one group, as nccl-tests does: a window
        // registration is collective (src/common.cu:1604-1616).
        let how = register_mode(args, nccl);
        if how > 0 {
            let group = if ranks.len() > 1 { Some(nccl.group().map_err(collective)?) } else { None };
            for r in &mut ranks {
                let gpu = |source: LibraryError| Error::Gpu {
                    rank: r.global,
                    device: r.device,
                    step: GpuStep::Register,
                    source,
                };
                r.registrations = register(r.comm, &r.send, &r.recv, padded, how).map_err(gpu)?;
            }
            if let Some(g) = group {
                g.end().map_err(collective)?;
            }
        }
        Ok(Ranks {
            nccl,
            driver,
            ranks,
            nranks: plan.nranks,
            processes,
            native: plan.collective.native_in(nccl),
            bytes,
            unalign: args.unalign as usize,
            timeout: args.timeout,
        })
    }

    /// The free memory of each local device now (`-M 1`).
    pub fn free_memory(&self) -> Result<Vec<i64>, Error> {
        self.ranks.iter().map(|r| free_memory(self.driver, r.device).map_err(r.error(GpuStep::Memory))).collect()
    }

    /// One operation on every local rank (in one group when there are several), nccl-tests'
    /// `startColl`: iteration `iter` works `iter` buffer-lengths into the buffers (cycling),
    /// and with `-z` each operation is waited for (and followed by a barrier with `-z 1`).
    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        args: &Args,
        c: Collective,
        l: &Layout,
        elem: Elem,
        op: Option<Op>,
        root: usize,
        in_place: bool,
        iter: usize,
        in_group: bool,
    ) -> Result<(), Error> {
        let group = if self.ranks.len() > 1 { Some(self.nccl.group().map_err(collective)?) } else { None };
        let need = layout_bytes(l, elem, self.nranks);
        let shift = if need == 0 { 0 } else { need * (iter % (self.bytes / need).max(1)) };
        for r in &self.ranks {
            let (send, recv) = self.buffers(r, l, elem, in_place, shift);
            // mulsum: an op of this rank's for this call, destroyed when `custom` drops, after
            // the call is enqueued or failed (src/common.cu:561-625).
            let (red_op, custom) = reduction_op(r.comm, op, elem, r.global).map_err(collective)?;
            // SAFETY: both buffers hold `bytes` past the -u shift, which bounds every layout
            // at every iteration's offset (`need * (bytes / need - 1) + need <= bytes`); they
            // live until the ranks are dropped, after the streams are synchronised.
            unsafe {
                c.enqueue(
                    self.nccl,
                    self.native,
                    r.comm,
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
        // Inside `-m`'s group nothing has run yet: nccl-tests' wait finds its streams idle and
        // its MPI barrier orders no operation. Ours goes through NCCL, which a group would
        // defer: both are left out there.
        if args.blocking != 0 && !in_group {
            self.synchronize()?;
        }
        if args.blocking == 1 && !in_group {
            self.barrier()?;
        }
        Ok(())
    }

    /// nccl-tests' `completeColl`: waits for every stream, unless `-z` already did.
    fn complete(&self, args: &Args) -> Result<(), Error> {
        if args.blocking != 0 && args.agg <= 1 {
            return Ok(());
        }
        self.synchronize()
    }

    /// nccl-tests' `testStreamSynchronize`: polls every stream until its work is done, asking
    /// NCCL for an asynchronous error meanwhile; either, or `-T` seconds passing, aborts every
    /// communicator.
    fn synchronize(&self) -> Result<(), Error> {
        let items: Vec<_> = self.ranks.iter().map(|r| (&r.stream, r.comm, r.global, r.device)).collect();
        poll(&items, self.timeout, &|| self.abort_all())
    }

    fn abort_all(&self) {
        for r in &self.ranks {
            let _ = r.comm.abort_handle().abort();
        }
    }

    /// A barrier across the job's processes (nccl-tests' `Barrier`, an MPI barrier): nothing
    /// within one process, else an all-gather of one byte through NCCL, waited for.
    fn barrier(&self) -> Result<(), Error> {
        if self.processes > 1 {
            self.gather(&[0])?;
        }
        Ok(())
    }

    /// `x` summed over the job's processes (this process's sum over its ranks in `x`).
    fn sum_over_processes(&self, x: u64) -> Result<u64, Error> {
        if self.processes == 1 {
            return Ok(x);
        }
        let all = self.gather(&x.to_le_bytes())?;
        Ok(all.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).sum())
    }

    /// Every rank's `mine` (all of the same length), in rank order (one local rank only):
    /// [`gather_on`].
    pub fn gather(&self, mine: &[u8]) -> Result<Vec<u8>, Error> {
        let [r] = &self.ranks[..] else { return Err(Error::GatherLocalRanks { local: self.ranks.len() }) };
        gather_on(self.driver, r.comm, r.device, &r.stream, self.nranks, self.timeout, mine)
    }

    /// nccl-tests' warm-up (`TimeTest`): `-w` operations out of place at every size from -b,
    /// doubling, up to -e, once per type and op.
    pub fn warm_up(&self, args: &Args, plan: &Plan, elem: Elem, op: Option<Op>) -> Result<(), Error> {
        let (mut size, max) = (plan.sizes[0], *plan.sizes.last().expect("a sweep has sizes"));
        while size <= max {
            let l = plan.collective.sized_layout(size / elem.size(), elem.size(), plan.nranks);
            for iter in 0..args.warmup as usize {
                self.start(args, plan.collective, &l, elem, op, plan.root, false, iter, false)?;
            }
            self.complete(args)?;
            // nccl-tests doubles 0 for ever; once is enough.
            match size.checked_mul(2) {
                Some(next) if next > size => size = next,
                _ => break,
            }
        }
        Ok(())
    }

    /// nccl-tests' `BenchTime` for one placement: data written (when checking), one
    /// operation waited for, a barrier, `-n` timed iterations of `-m` operations, then `-c`
    /// check runs.
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
        let l = c.sized_layout(size / elem.size(), elem.size(), plan.nranks);
        if args.check > 0 {
            self.initialise(plan, &l, elem, op, in_place)?;
        }
        self.start(args, c, &l, elem, op, plan.root, in_place, 0, false)?;
        self.complete(args)?;
        self.barrier()?;

        let (iters, agg) = (args.iters as usize, args.agg as usize);
        let paired = args.blocking == 3;
        let events =
            if args.per_iter == 1 { Some(self.events(if paired { 2 * iters } else { iters + 1 })?) } else { None };
        let record = |at: usize| match &events {
            Some(e) => self.record(e, at),
            None => Ok(()),
        };
        let mut ops_only = 0.0f64;
        let start = Instant::now();
        for iter in 0..iters {
            let t0 = start.elapsed().as_secs_f64();
            let group = if agg > 1 { Some(self.nccl.group().map_err(collective)?) } else { None };
            record(if paired { 2 * iter } else { iter })?;
            for a in 0..agg {
                self.start(args, c, &l, elem, op, plan.root, in_place, iter * agg + a, agg > 1)?;
            }
            if let Some(g) = group {
                g.end().map_err(collective)?;
            }
            if paired {
                self.synchronize()?;
                record(2 * iter + 1)?;
                ops_only += start.elapsed().as_secs_f64() - t0;
                self.barrier()?;
            }
        }
        if !paired {
            record(iters)?;
        }
        let n = (iters * agg) as f64;
        let cpu = if paired { ops_only } else { start.elapsed().as_secs_f64() } / n;
        self.complete(args)?;
        let time = if paired { ops_only } else { start.elapsed().as_secs_f64() } / n;
        let mut measured = Measured::new(time, cpu, None);
        if let Some(events) = &events {
            if args.blocking != 0 && agg <= 1 {
                self.synchronize()?;
            }
            measured.iterations = self.iteration_times(events, iters, agg, paired)?;
        }

        let checked = !in_place || c.checks_in_place();
        let mut wrong = 0;
        let mut local = 0;
        for _ in 0..args.check {
            self.initialise(plan, &l, elem, op, in_place)?;
            self.start(args, c, &l, elem, op, plan.root, in_place, 0, false)?;
            self.complete(args)?;
            local = self.count_wrong(plan, &l, elem, op, in_place)?;
            wrong = self.sum_over_processes(local)?;
            if wrong > 0 {
                break;
            }
        }
        measured.wrong = (args.check > 0 && checked).then_some(wrong);
        // nccl-tests counts a failed check once per process that saw a wrong element
        // (src/common.cu:478, summed over processes at 1786).
        measured.failed = u64::from(checked && local > 0);
        Ok(measured)
    }

    /// `count` timed events on each local rank's device.
    fn events(&self, count: usize) -> Result<Vec<Vec<Event<'d>>>, Error> {
        self.ranks
            .iter()
            .map(|r| {
                self.driver.activate(r.device).map_err(r.error(GpuStep::Activate))?;
                (0..count).map(|_| self.driver.timed_event().map_err(r.error(GpuStep::Events))).collect()
            })
            .collect()
    }

    fn record(&self, events: &[Vec<Event<'d>>], at: usize) -> Result<(), Error> {
        for (r, e) in self.ranks.iter().zip(events) {
            // SAFETY: the event was made on the rank's device, whose stream this is.
            unsafe { e[at].record(r.stream.raw()) }.map_err(r.error(GpuStep::Events))?;
        }
        Ok(())
    }

    /// Each iteration's time per operation, the maximum over this process's GPUs
    /// (src/common.cu:640-658, 850-860).
    fn iteration_times(
        &self,
        events: &[Vec<Event<'d>>],
        iters: usize,
        agg: usize,
        paired: bool,
    ) -> Result<Vec<f64>, Error> {
        let mut times = vec![0.0f64; iters];
        for (r, e) in self.ranks.iter().zip(events) {
            for (j, t) in times.iter_mut().enumerate() {
                let (a, b) = if paired { (2 * j, 2 * j + 1) } else { (j, j + 1) };
                let d = e[b].elapsed_since(&e[a]).map_err(r.error(GpuStep::Events))?;
                // nccl-tests keeps milliseconds in a float and divides by -m there.
                let ms = (d.as_secs_f64() * 1e3) as f32 / agg as f32;
                *t = t.max(f64::from(ms) * 1e-3);
            }
        }
        Ok(times)
    }

    /// Writes every rank's send data (into the receive buffer, in place) and fills the rest of
    /// the receive buffer with a byte pattern no result matches, in the order of the rank's
    /// stream: the collectives launched there next read these bytes and write after them (a
    /// bare `cuMemcpyHtoD` would land after the launch on this non-blocking stream:
    /// src/cuda/mod.rs, "What is synchronous").
    fn initialise(&self, plan: &Plan, l: &Layout, elem: Elem, op: Option<Op>, in_place: bool) -> Result<(), Error> {
        let data = TestData::new(elem, op.filter(|_| plan.collective.reduces()), plan.nranks);
        let size = elem.size();
        let pad = self.unalign * size;
        for r in &self.ranks {
            self.driver.activate(r.device).map_err(r.error(GpuStep::Activate))?;
            let mut recv = vec![0xa5u8; pad + l.recv.max(l.send_offset * plan.nranks) * size];
            let mut send = vec![0u8; pad + l.send * size];
            for (j, chunk) in send[pad..].chunks_exact_mut(size).enumerate() {
                elem.encode(data.send(r.global, j), chunk);
            }
            if in_place {
                let at = pad + l.send_offset * r.global * size;
                if recv.len() < at + send.len() - pad {
                    recv.resize(at + send.len() - pad, 0xa5);
                }
                recv[at..at + send.len() - pad].copy_from_slice(&send[pad..]);
            } else {
                r.send.upload_on(&r.stream, &send).map_err(r.error(GpuStep::Upload))?;
            }
            r.recv.upload_on(&r.stream, &recv).map_err(r.error(GpuStep::Upload))?;
        }
        Ok(())
    }

    /// Wrong elements over this process's ranks.
    fn count_wrong(&self, plan: &Plan, l: &Layout, elem: Elem, op: Option<Op>, in_place: bool) -> Result<u64, Error> {
        let c = plan.collective;
        let data = TestData::new(elem, op.filter(|_| plan.collective.reduces()), plan.nranks);
        let size = elem.size();
        let pad = self.unalign * size;
        let mut wrong = 0u64;
        for r in &self.ranks {
            let Some((offset, len)) = c.result_region(l, r.global, plan.root, in_place) else { continue };
            self.driver.activate(r.device).map_err(r.error(GpuStep::Activate))?;
            let mut host = vec![0u8; pad + (offset + len) * size];
            r.recv.download_on(&r.stream, &mut host).map_err(r.error(GpuStep::Download))?;
            let send = |rank: usize, j: usize| data.contribution(rank, j);
            let reduce = |it: &mut dyn Iterator<Item = i64>| data.reduce(it);
            for (i, bytes) in host[pad + offset * size..].chunks_exact(size).enumerate() {
                let want = c.expected(l, r.global, plan.nranks, plan.root, i, &send, &reduce);
                if !elem.matches(bytes, want) {
                    wrong += 1;
                }
            }
        }
        Ok(wrong)
    }

    /// The send and receive pointers of one rank's operation: `-u` elements in, `shift` bytes
    /// on, and in place at the layout's offsets into the receive buffer.
    fn buffers(
        &self,
        r: &Rank<'_, '_, '_>,
        l: &Layout,
        elem: Elem,
        in_place: bool,
        shift: usize,
    ) -> (*mut c_void, *mut c_void) {
        let skip = self.unalign * elem.size() + shift;
        let base = r.recv.ptr().cast::<u8>().wrapping_add(skip);
        if in_place {
            let s = base.wrapping_add(l.send_offset * r.global * elem.size());
            let d = base.wrapping_add(l.recv_offset * r.global * elem.size());
            (s.cast(), d.cast())
        } else {
            (r.send.ptr().cast::<u8>().wrapping_add(skip).cast(), base.cast())
        }
    }
}

/// After an error half way through a step, operations may still be queued on the streams:
/// the communicators are aborted and the streams waited for (at most 10 s each) before the
/// buffers under them are freed.
impl Drop for Ranks<'_, '_, '_> {
    fn drop(&mut self) {
        if self.ranks.iter().all(|r| r.stream.is_idle().unwrap_or(true)) {
            return;
        }
        self.abort_all();
        for r in &self.ranks {
            let _ = r.stream.wait(Some(std::time::Duration::from_secs(10)));
        }
    }
}

impl Rank<'_, '_, '_> {
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

/// The bytes one operation of layout `l` spans in a buffer.
fn layout_bytes(l: &Layout, elem: Elem, nranks: usize) -> usize {
    l.send.max(l.recv).max(l.send_offset * nranks + l.send) * elem.size()
}

/// The largest buffer any step needs on one rank.
fn buffer_bytes(plan: &Plan) -> usize {
    plan.steps()
        .map(|(e, _, s)| {
            layout_bytes(&plan.collective.sized_layout(s / e.size(), e.size(), plan.nranks), e, plan.nranks)
        })
        .max()
        .unwrap_or(0)
}
