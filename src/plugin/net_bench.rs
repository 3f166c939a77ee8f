//! A network plugin's test bench: what NCCL asks of a network plugin, in host memory over the
//! plugin's own loopback, in one process, every result checked and every step bounded.
//!
//! `init` with the host's logger, `devices`, `getProperties` of every device, then on one
//! device `listen`, the non-blocking `connect`/`accept` loops NCCL's proxy runs (each call
//! may hand back NULL: "call again"), `regMr` of host buffers, and for each size from
//! `min_size` to `max_size` (powers of two) `irecv` then `isend` (each retried while the plugin
//! hands back a NULL request, as NCCL retries) and `test` until both complete, the received
//! size and every byte checked, `iflush` after the receive when the plugin asks for it
//! (`forceFlush`) or the caller does; then `deregMr` and the three close calls.
//!
//! Never a hang: every plugin call runs on a thread of the bench's own, watched; a loop that
//! does not finish within the deadline ends with [`PluginError::Deadline`], and so does a
//! call that does not return (that thread is then left to itself). Never a crash from what a
//! plugin hands back: NULL comms and requests reported as success, impossible sizes and
//! unreadable strings are typed errors; its log's formats are read with the host's `printf`.

use core::ffi::{c_int, c_void};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::nccl::NcclResult;
use crate::plugin::error::PluginError;
use crate::plugin::host::load::Plugin;
use crate::plugin::host::logger::{LogLine, Logger};
use crate::plugin::host::names::Family;
use crate::plugin::net;
pub use crate::plugin::net_ops::DeviceProperties;
use crate::plugin::net_ops::NetOps;

/// What the bench does.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// The longest any one call or loop may take.
    pub deadline: Duration,
    /// The first message size (bytes, at least 1).
    pub min_size: usize,
    /// The last message size (bytes).
    pub max_size: usize,
    /// Timed round trips per size (at least one; fewer for sizes above 1 MiB).
    pub iterations: usize,
    /// Call `iflush` after every receive even when the plugin does not ask for it.
    pub flush: bool,
    /// The device (default 0).
    pub device: i32,
    /// Print the plugin's log lines to standard error as they come.
    pub echo_log: bool,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            deadline: Duration::from_secs(10),
            min_size: 1,
            max_size: 64 << 20,
            iterations: 20,
            flush: false,
            device: 0,
            echo_log: false,
        }
    }
}

/// One size's result.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SizeResult {
    /// Bytes per message.
    pub size: usize,
    /// The tag used.
    pub tag: i32,
    /// Round trips timed.
    pub iterations: usize,
    /// Mean time from posting the receive to both requests done, µs.
    pub latency_us: f64,
    /// `size / latency`, GB/s.
    pub bandwidth_gbs: f64,
}

/// What the bench saw.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct BenchReport {
    /// The plugin's name (its table's `name`).
    pub name: String,
    /// Every device's properties.
    pub devices: Vec<DeviceProperties>,
    /// `connect` and `accept` calls until both comms were there.
    pub connect_calls: usize,
    /// As above, `accept`.
    pub accept_calls: usize,
    /// `iflush` calls made.
    pub flushes: usize,
    /// Each size, every byte checked.
    pub sizes: Vec<SizeResult>,
    /// What the plugin logged.
    pub log: Vec<LogLine>,
}

/// A step of the bench: a plugin entry and what it was asked, formatted only when reported.
#[derive(Clone, Copy, Debug)]
struct Step {
    name: &'static str,
    detail: Detail,
}

#[derive(Clone, Copy, Debug)]
enum Detail {
    None,
    Device(c_int),
    Bytes(usize),
    Message(usize, c_int),
}

impl Step {
    const fn named(name: &'static str) -> Step {
        Step { name, detail: Detail::None }
    }
    const fn with(name: &'static str, detail: Detail) -> Step {
        Step { name, detail }
    }
}

impl core::fmt::Display for Step {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // `test(recv)` with a message reads `test(recv, 2 B, tag 2)`.
        let (name, open) = match self.name.strip_suffix(')') {
            Some(inside) => (inside, ", "),
            None => (self.name, "("),
        };
        match self.detail {
            Detail::None => write!(f, "{}", self.name),
            Detail::Device(d) => write!(f, "{name}{open}{d})"),
            Detail::Bytes(n) => write!(f, "{name}{open}{n} B)"),
            Detail::Message(n, tag) => write!(f, "{name}{open}{n} B, tag {tag})"),
        }
    }
}

/// The call in progress on the bench's thread, for the watch.
type Current = Arc<Mutex<Option<(Step, Instant)>>>;

/// Runs the bench on `plugin` (a network plugin).
pub fn run(plugin: &Plugin, options: &BenchOptions) -> Result<BenchReport, PluginError> {
    watched(plugin, options, false)
}

/// `init`, `devices` and every device's `getProperties` only, watched as the bench is: what
/// `doctor` reports of a network plugin.
pub fn describe(plugin: &Plugin, options: &BenchOptions) -> Result<BenchReport, PluginError> {
    watched(plugin, options, true)
}

fn watched(plugin: &Plugin, options: &BenchOptions, describe_only: bool) -> Result<BenchReport, PluginError> {
    if plugin.family != Family::Net {
        return Err(PluginError::Contract {
            call: "net-bench".into(),
            what: format!("{} is a {} plugin, not a network plugin", plugin.path.display(), plugin.family.label()),
        });
    }
    if options.min_size == 0 || options.min_size > options.max_size || options.max_size > i32::MAX as usize {
        return Err(PluginError::Contract {
            call: "net-bench".into(),
            what: format!("sizes {}..{}: give 1 <= min <= max < 2 GiB", options.min_size, options.max_size),
        });
    }
    let logger = Arc::new(Logger::new(options.echo_log)?);
    let current: Current = Arc::default();
    let (done, result) = mpsc::channel();
    let (plugin, options, worker_logger, watched) = (plugin.clone(), options.clone(), logger.clone(), current.clone());
    let deadline = options.deadline;
    std::thread::Builder::new()
        .name("net-bench".into())
        .spawn(move || {
            let outcome =
                Bench::new(&plugin, &options, &worker_logger, watched).and_then(|mut bench| bench.run(describe_only));
            let _ = done.send(outcome);
        })
        .map_err(|e| PluginError::Contract {
            call: "net-bench".into(),
            what: format!("cannot start its thread: {e}"),
        })?;
    loop {
        match result.recv_timeout(Duration::from_millis(5)) {
            Ok(outcome) => {
                return outcome.map(|mut report| {
                    report.log = logger.take();
                    report
                })
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PluginError::Contract {
                    call: "net-bench".into(),
                    what: "its thread ended without a result".into(),
                })
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        let late = current
            .lock()
            .ok()
            .and_then(|c| c.as_ref().filter(|(_, t)| t.elapsed() > deadline).map(|(n, _)| n.to_string()));
        if let Some(call) = late {
            // The plugin's function has not returned: leave its thread (and the logger it may
            // still call, which it holds) and report.
            std::mem::forget(logger);
            return Err(PluginError::Deadline { call, deadline, returned: false });
        }
    }
}

/// The bench's state on its own thread.
struct Bench<'a> {
    ops: Arc<NetOps>,
    name: String,
    options: &'a BenchOptions,
    logger: &'a Logger,
    current: Current,
    report: BenchReport,
    /// `max_size + 251` bytes of a pseudo-random pattern, the messages' contents.
    pattern: Vec<u8>,
}

impl<'a> Bench<'a> {
    fn new(
        plugin: &Plugin,
        options: &'a BenchOptions,
        logger: &'a Logger,
        current: Current,
    ) -> Result<Self, PluginError> {
        let (ops, name) = NetOps::new(plugin)?;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let pattern = (0..options.max_size + 251)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect();
        Ok(Bench { ops: Arc::new(ops), name, options, logger, current, report: BenchReport::default(), pattern })
    }

    /// Calls `f` (one plugin function) watched; an error result becomes [`PluginError::Call`].
    fn call(&self, what: Step, f: impl FnOnce() -> NcclResult) -> Result<(), PluginError> {
        if let Ok(mut c) = self.current.lock() {
            *c = Some((what, Instant::now()));
        }
        let code = f();
        if let Ok(mut c) = self.current.lock() {
            *c = None;
        }
        if let Some(line) = self.logger.first_malformed() {
            return Err(PluginError::LogFormat { call: what.to_string(), line: line.to_string() });
        }
        if code.is_success() {
            Ok(())
        } else {
            let log = self.logger.lines().last().map(ToString::to_string);
            Err(PluginError::Call { call: what.to_string(), code, log })
        }
    }

    fn late(&self, started: Instant, what: Step) -> Result<(), PluginError> {
        if started.elapsed() > self.options.deadline {
            Err(PluginError::Deadline { call: what.to_string(), deadline: self.options.deadline, returned: true })
        } else {
            Ok(())
        }
    }

    fn run(&mut self, describe_only: bool) -> Result<BenchReport, PluginError> {
        let ops = self.ops.clone();
        let logger = self.logger.as_c();
        // Every plugin call below passes what its contract asks (net_ops): out-pointers to
        // live locals, buffers of the sizes given, comms and requests the plugin handed out
        // and has not been told to close.
        self.call(Step::named("init"), || (ops.init)(logger))?;
        let mut ndev: c_int = -1;
        self.call(Step::named("devices"), || (ops.devices)(&mut ndev))?;
        if !(1..=1024).contains(&ndev) {
            return Err(PluginError::Contract { call: "devices".into(), what: format!("reports {ndev} devices") });
        }
        for dev in 0..ndev {
            let call = Step::with("getProperties", Detail::Device(dev));
            let mut props = None;
            self.call(call, || match (ops.properties)(dev) {
                Ok(p) => {
                    props = Some(Ok(p));
                    NcclResult::SUCCESS
                }
                Err((code, what)) => {
                    props = Some(Err(what));
                    code
                }
            })?;
            match props {
                Some(Ok(p)) => self.report.devices.push(p),
                Some(Err(what)) => return Err(PluginError::Contract { call: call.to_string(), what }),
                None => unreachable!("the closure ran"),
            }
        }
        self.report.name = self.name.clone();
        if describe_only {
            self.finalize()?;
            return Ok(std::mem::take(&mut self.report));
        }
        let dev = self.options.device;
        let props = self.report.devices.get(dev as usize).cloned().ok_or_else(|| PluginError::Contract {
            call: "net-bench".into(),
            what: format!("device {dev} asked for, the plugin has {ndev}"),
        })?;
        if props.ptr_support & net::PTR_HOST == 0 {
            return Err(PluginError::Contract {
                call: Step::with("getProperties", Detail::Device(dev)).to_string(),
                what: format!("ptrSupport {:#x} lacks NCCL_PTR_HOST: the bench sends host memory", props.ptr_support),
            });
        }
        let (send, recv, listen) = self.connect(dev)?;
        let outcome = self.exchange(send, recv, props.force_flush == Some(true));
        let closed = self.close(send, recv, listen);
        outcome.and(closed).and(self.finalize())?;
        Ok(std::mem::take(&mut self.report))
    }

    fn finalize(&self) -> Result<(), PluginError> {
        match &self.ops.finalize {
            Some(f) => self.call(Step::named("finalize"), f),
            None => Ok(()),
        }
    }

    /// `listen`, then `connect` and `accept` in turn until both hand back a comm.
    fn connect(&mut self, dev: c_int) -> Result<(*mut c_void, *mut c_void, *mut c_void), PluginError> {
        let ops = self.ops.clone();
        let mut handle = [0u8; net::HANDLE_MAXSIZE];
        let mut listen_comm: *mut c_void = core::ptr::null_mut();
        self.call(Step::named("listen"), || (ops.listen)(dev, handle.as_mut_ptr().cast(), &mut listen_comm))?;
        if listen_comm.is_null() {
            return Err(PluginError::Contract { call: "listen".into(), what: "success with a NULL listenComm".into() });
        }
        let (mut send, mut recv) = (core::ptr::null_mut::<c_void>(), core::ptr::null_mut::<c_void>());
        let started = Instant::now();
        while send.is_null() || recv.is_null() {
            if send.is_null() {
                self.report.connect_calls += 1;
                // The same handle each time: a plugin keeps its connection state in it.
                self.call(Step::named("connect"), || (ops.connect)(dev, handle.as_mut_ptr().cast(), &mut send))?;
            }
            if recv.is_null() {
                self.report.accept_calls += 1;
                self.call(Step::named("accept"), || (ops.accept)(listen_comm, &mut recv))?;
            }
            self.late(started, Step::named("connect/accept"))?;
        }
        Ok((send, recv, listen_comm))
    }

    /// Every size, timed, every byte checked.
    fn exchange(&mut self, send: *mut c_void, recv: *mut c_void, force_flush: bool) -> Result<(), PluginError> {
        let ops = self.ops.clone();
        let max = self.options.max_size;
        let mut out = vec![0u8; max];
        let mut into = vec![0u8; max];
        let (mut send_mr, mut recv_mr) = (core::ptr::null_mut::<c_void>(), core::ptr::null_mut::<c_void>());
        // The buffers outlive their registrations (deregMr below, before they drop).
        self.call(Step::with("regMr(send)", Detail::Bytes(max)), || {
            (ops.reg_mr)(send, out.as_mut_ptr().cast(), max, &mut send_mr)
        })?;
        let registered = self.call(Step::with("regMr(recv)", Detail::Bytes(max)), || {
            (ops.reg_mr)(recv, into.as_mut_ptr().cast(), max, &mut recv_mr)
        });
        let outcome = registered.and_then(|()| {
            let mut size = self.options.min_size;
            let mut tag = 1;
            loop {
                self.one_size(send, recv, (&mut out, send_mr), (&mut into, recv_mr), size, tag, force_flush)?;
                if size >= max {
                    return Ok(());
                }
                size = (size * 2).min(max);
                tag += 1;
            }
        });
        let freed = self.call(Step::named("deregMr(send)"), || (ops.dereg_mr)(send, send_mr));
        let freed = freed.and(if recv_mr.is_null() {
            Ok(())
        } else {
            self.call(Step::named("deregMr(recv)"), || (ops.dereg_mr)(recv, recv_mr))
        });
        outcome.and(freed)
    }

    #[allow(clippy::too_many_arguments)]
    fn one_size(
        &mut self,
        send: *mut c_void,
        recv: *mut c_void,
        (out, send_mr): (&mut [u8], *mut c_void),
        (into, recv_mr): (&mut [u8], *mut c_void),
        size: usize,
        tag: i32,
        force_flush: bool,
    ) -> Result<(), PluginError> {
        let iterations =
            if size > 1 << 20 { self.options.iterations.clamp(1, 3) } else { self.options.iterations.max(1) };
        let mut total = Duration::ZERO;
        for round in 0..iterations {
            // A different stretch of the pattern each time (no two rounds, sizes or
            // neighbouring bytes alike), copied rather than computed byte by byte.
            let shift = (size.trailing_zeros() as usize * 7 + round * 13) % 251;
            out[..size].copy_from_slice(&self.pattern[shift..shift + size]);
            into[..size].fill(!out[0]);
            let started = Instant::now();
            self.transfer(
                send,
                recv,
                (out.as_mut_ptr(), send_mr),
                (into.as_mut_ptr(), recv_mr),
                size,
                tag,
                force_flush,
            )?;
            total += started.elapsed();
            if out[..size] != into[..size] {
                let offset = out[..size].iter().zip(&into[..size]).position(|(a, b)| a != b).unwrap_or(0);
                return Err(PluginError::Corrupt { size, tag, offset, got: into[offset], expected: out[offset] });
            }
        }
        let latency_us = total.as_secs_f64() * 1e6 / iterations as f64;
        self.report.sizes.push(SizeResult {
            size,
            tag,
            iterations,
            latency_us,
            bandwidth_gbs: size as f64 / (latency_us * 1e3),
        });
        Ok(())
    }

    /// One message: `irecv`, `isend` (each retried while the request is NULL, as NCCL's
    /// proxy retries), `test` both to completion, the received size checked, then `iflush`
    /// if asked.
    #[allow(clippy::too_many_arguments)]
    fn transfer(
        &mut self,
        send: *mut c_void,
        recv: *mut c_void,
        (out, send_mr): (*mut u8, *mut c_void),
        (into, recv_mr): (*mut u8, *mut c_void),
        size: usize,
        tag: i32,
        force_flush: bool,
    ) -> Result<(), PluginError> {
        let ops = self.ops.clone();
        let started = Instant::now();
        let mut recv_req: *mut c_void = core::ptr::null_mut();
        while recv_req.is_null() {
            self.call(Step::with("irecv", Detail::Message(size, tag)), || {
                (ops.irecv)(recv, into.cast(), size, tag, recv_mr, &mut recv_req)
            })?;
            self.late(started, Step::with("irecv", Detail::Message(size, tag)))?;
        }
        let mut send_req: *mut c_void = core::ptr::null_mut();
        while send_req.is_null() {
            self.call(Step::with("isend", Detail::Message(size, tag)), || {
                (ops.isend)(send, out.cast(), size, tag, send_mr, &mut send_req)
            })?;
            self.late(started, Step::with("isend", Detail::Message(size, tag)))?;
        }
        let (mut send_done, mut recv_done) = (false, false);
        let mut received: c_int = -1;
        while !(send_done && recv_done) {
            if !send_done {
                let (mut done, mut sent) = (0, 0);
                self.call(Step::with("test(send)", Detail::Message(size, tag)), || {
                    (ops.test)(send_req, &mut done, &mut sent)
                })?;
                send_done = done != 0;
            }
            if !recv_done {
                let mut done = 0;
                self.call(Step::with("test(recv)", Detail::Message(size, tag)), || {
                    (ops.test)(recv_req, &mut done, &mut received)
                })?;
                recv_done = done != 0;
            }
            self.late(started, Step::with("test", Detail::Message(size, tag)))?;
        }
        if received as usize != size {
            return Err(PluginError::Contract {
                call: Step::with("test(recv)", Detail::Message(size, tag)).to_string(),
                what: format!("reports {received} bytes received, {size} were sent"),
            });
        }
        if force_flush || self.options.flush {
            self.flush(recv, into, recv_mr, size as c_int)?;
        }
        Ok(())
    }

    fn flush(&mut self, recv: *mut c_void, into: *mut u8, recv_mr: *mut c_void, n: c_int) -> Result<(), PluginError> {
        let ops = self.ops.clone();
        let started = Instant::now();
        let mut request: *mut c_void = core::ptr::null_mut();
        self.call(Step::named("iflush"), || (ops.iflush)(recv, into.cast(), n, recv_mr, &mut request))?;
        self.report.flushes += 1;
        // A NULL request: nothing to wait for (net_v8.h: iflush may complete at once).
        let mut done = request.is_null() as c_int;
        while done == 0 {
            let mut flushed = 0;
            self.call(Step::named("test(flush)"), || (ops.test)(request, &mut done, &mut flushed))?;
            self.late(started, Step::named("test(flush)"))?;
        }
        Ok(())
    }

    fn close(&mut self, send: *mut c_void, recv: *mut c_void, listen: *mut c_void) -> Result<(), PluginError> {
        let ops = self.ops.clone();
        let a = self.call(Step::named("closeSend"), || (ops.close_send)(send));
        let b = self.call(Step::named("closeRecv"), || (ops.close_recv)(recv));
        let d = self.call(Step::named("closeListen"), || (ops.close_listen)(listen));
        a.and(b).and(d)
    }
}
