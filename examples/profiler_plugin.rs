//! An NCCL profiler plugin in Rust: a `cdylib` exporting `ncclProfiler_v5`, built on the crate's
//! declaration of the table (`nccl_trampoline::plugin::profiler`). It counts the events NCCL
//! starts, per type, for each communicator; at the communicator's destruction it appends one line
//! of counts to the file named by `NCCL_TRAMPOLINE_PROFILER_OUT` and logs it through NCCL's
//! logger (shown with `NCCL_DEBUG=INFO`).
//!
//! Build: `cargo build --release --example profiler_plugin`, then run any NCCL 2.28 or later
//! program with `NCCL_PROFILER_PLUGIN=$PWD/target/release/examples/libprofiler_plugin.so`.
//! `NCCL_TRAMPOLINE_PROFILER_MASK` (decimal or `0x` hex) replaces the activation mask it asks
//! for, every v5 event type (`0xfff`) by default.
//!
//! Line written: `comm=0x<hash> rank=<r> nranks=<n> GroupApi=.. CollApi=.. P2pApi=..
//! KernelLaunch=.. Group=.. Coll=.. P2p=.. ProxyOp=.. ProxyStep=.. ProxyCtrl=.. KernelCh=..
//! NetPlugin=.. other=.. stops=.. records=..`, `<hash>` as NCCL logs it in `commId 0x..`.
//!
//! Nothing here may unwind into NCCL: every entry runs under `catch_unwind` and answers
//! `ncclInternalError` if something panicked; every pointer from NCCL is checked for NULL
//! (NCCL passes `commName` NULL unless the config names the communicator, and `eStateArgs` NULL
//! for the group API states).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use nccl_trampoline::plugin::profiler::{
    EventDescrV5, EventState, EventStateArgsV5, ProfilerV5, EVENT_TYPES, PROFILE_COLL, PROFILE_COLL_API, PROFILE_GROUP,
    PROFILE_GROUP_API, PROFILE_KERNEL_CH, PROFILE_KERNEL_LAUNCH, PROFILE_NET_PLUGIN, PROFILE_P2P, PROFILE_P2P_API,
    PROFILE_PROXY_CTRL, PROFILE_PROXY_OP, PROFILE_PROXY_STEP,
};
use nccl_trampoline::plugin::{DebugLogger, LogLevel, NcclResult, Subsystem};

/// The event types of v5: bits 0 to 11.
const TYPES: usize = 12;
/// Every v5 type.
const ALL_V5: c_int = (1 << TYPES) - 1;
/// The order of the counts in the line written: the API events first, then the rest by bit.
const REPORT_ORDER: [c_int; TYPES] = [
    PROFILE_GROUP_API,
    PROFILE_COLL_API,
    PROFILE_P2P_API,
    PROFILE_KERNEL_LAUNCH,
    PROFILE_GROUP,
    PROFILE_COLL,
    PROFILE_P2P,
    PROFILE_PROXY_OP,
    PROFILE_PROXY_STEP,
    PROFILE_PROXY_CTRL,
    PROFILE_KERNEL_CH,
    PROFILE_NET_PLUGIN,
];
/// The logger's flags: `NCCL_INIT` (in NCCL's default subsystem mask) and `NCCL_PROFILE`.
const LOG_FLAGS: Subsystem = Subsystem(Subsystem::INIT.0 | Subsystem::PROFILE.0);

/// One event type's counters. An event's handle is the address of its type's slot, so that
/// `stopEvent` and `recordEventState`, which get no context, can count too.
#[derive(Default)]
struct Slot {
    starts: AtomicU64,
    stops: AtomicU64,
    records: AtomicU64,
}

/// One communicator's state: what `init` was told, and the counters. Never freed: NCCL may
/// still hold a handle into it after `finalize` (2.28.3 keeps a stale CollApi handle per thread
/// and may stop it again), so it is leaked, a few hundred bytes per communicator.
struct Context {
    comm_hash: u64,
    rank: c_int,
    nranks: c_int,
    logger: DebugLogger,
    slots: [Slot; TYPES],
    /// Types this plugin does not know (a bit above 11, or not one bit).
    other: Slot,
    finalized: AtomicBool,
}

impl Context {
    /// The slot of an event type.
    fn slot(&self, kind: u64) -> &Slot {
        if kind.is_power_of_two() && (kind.trailing_zeros() as usize) < TYPES {
            &self.slots[kind.trailing_zeros() as usize]
        } else {
            &self.other
        }
    }

    /// `Name=count` for each type, then the totals of stops and records.
    fn counts(&self) -> String {
        let mut line = format!("comm=0x{:x} rank={} nranks={}", self.comm_hash, self.rank, self.nranks);
        let mut stops = self.other.stops.load(Ordering::Relaxed);
        let mut records = self.other.records.load(Ordering::Relaxed);
        for bit in REPORT_ORDER {
            let name = EVENT_TYPES.iter().find(|&&(_, b, _)| b == bit).map_or("?", |&(n, _, _)| n);
            let slot = self.slot(bit as u64);
            line += &format!(" {name}={}", slot.starts.load(Ordering::Relaxed));
        }
        for slot in &self.slots {
            stops += slot.stops.load(Ordering::Relaxed);
            records += slot.records.load(Ordering::Relaxed);
        }
        line += &format!(" other={} stops={stops} records={records}", self.other.starts.load(Ordering::Relaxed));
        line
    }

    /// Logs `message` at INFO through NCCL's logger, as from `line` of this file.
    fn log(&self, line: u32, message: &str) {
        let line = c_int::try_from(line).unwrap_or(0);
        // SAFETY: the logger NCCL passed to `init` (`ncclDebugLog`), valid while NCCL is loaded.
        unsafe { self.logger.log(LogLevel::INFO, LOG_FLAGS, c"profiler_plugin.rs", line, message) }
    }
}

/// Runs an entry's body; a panic becomes `ncclInternalError` instead of unwinding into C.
fn guarded(body: impl FnOnce() -> NcclResult) -> NcclResult {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(NcclResult::INTERNAL_ERROR)
}

/// The activation mask: `NCCL_TRAMPOLINE_PROFILER_MASK` if set and readable, else every v5 type.
fn wanted_mask() -> Result<c_int, String> {
    let Ok(text) = std::env::var("NCCL_TRAMPOLINE_PROFILER_MASK") else { return Ok(ALL_V5) };
    let t = text.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => c_int::from_str_radix(hex, 16),
        None => t.parse::<c_int>(),
    };
    parsed.map_err(|_| format!("NCCL_TRAMPOLINE_PROFILER_MASK={text:?} is not a number"))
}

unsafe extern "C" fn init(
    context: *mut *mut c_void,
    comm_id: u64,
    e_activation_mask: *mut c_int,
    comm_name: *const c_char,
    n_nodes: c_int,
    nranks: c_int,
    rank: c_int,
    logfn: DebugLogger,
) -> NcclResult {
    guarded(|| {
        if context.is_null() {
            return NcclResult::INVALID_ARGUMENT;
        }
        let (mask, note) = match wanted_mask() {
            Ok(mask) => (mask, String::new()),
            Err(why) => (ALL_V5, format!(" ({why}: default used)")),
        };
        if !e_activation_mask.is_null() {
            // SAFETY: NCCL's `&ncclProfilerEventMask`, a valid int (non-NULL checked).
            unsafe { *e_activation_mask = mask };
        }
        let name = if comm_name.is_null() {
            "(none)".to_string()
        } else {
            // SAFETY: NCCL's `comm->config.commName`, a C string (non-NULL checked).
            unsafe { CStr::from_ptr(comm_name) }.to_string_lossy().into_owned()
        };
        let ctx = Box::new(Context {
            comm_hash: comm_id,
            rank,
            nranks,
            logger: logfn,
            slots: Default::default(),
            other: Slot::default(),
            finalized: AtomicBool::new(false),
        });
        ctx.log(line!(), &format!(
            "rust profiler: init comm 0x{comm_id:x} name {name} rank {rank}/{nranks} nodes {n_nodes}, mask 0x{mask:x}{note}"
        ));
        // SAFETY: `context` is NCCL's `&comm->profilerContext` (non-NULL checked). A non-NULL
        // context is also what makes NCCL call `finalize` (profiler.cc:203 in 2.28).
        unsafe { *context = Box::into_raw(ctx).cast() };
        NcclResult::SUCCESS
    })
}

unsafe extern "C" fn start_event(
    context: *mut c_void,
    e_handle: *mut *mut c_void,
    e_descr: *mut EventDescrV5,
) -> NcclResult {
    guarded(|| {
        if e_handle.is_null() {
            return NcclResult::SUCCESS;
        }
        // SAFETY: NCCL's handle slot (non-NULL checked): NULL until an event is tracked.
        unsafe { *e_handle = core::ptr::null_mut() };
        if context.is_null() || e_descr.is_null() {
            return NcclResult::SUCCESS;
        }
        // SAFETY: a context this plugin's `init` made (never freed); the descriptor's `type`
        // read alone, through the raw pointer (the union behind it may be partly uninitialised).
        let (ctx, kind) = unsafe { (&*context.cast::<Context>(), core::ptr::addr_of!((*e_descr).kind).read()) };
        let slot = ctx.slot(kind);
        slot.starts.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { *e_handle = (slot as *const Slot).cast_mut().cast() };
        NcclResult::SUCCESS
    })
}

unsafe extern "C" fn stop_event(e_handle: *mut c_void) -> NcclResult {
    guarded(|| {
        if !e_handle.is_null() {
            // SAFETY: a handle `start_event` gave out: a slot of a never-freed context.
            unsafe { &*e_handle.cast::<Slot>() }.stops.fetch_add(1, Ordering::Relaxed);
        }
        NcclResult::SUCCESS
    })
}

unsafe extern "C" fn record_event_state(
    e_handle: *mut c_void,
    _e_state: EventState,
    _e_state_args: *mut EventStateArgsV5,
) -> NcclResult {
    guarded(|| {
        if !e_handle.is_null() {
            // SAFETY: as in `stop_event`.
            unsafe { &*e_handle.cast::<Slot>() }.records.fetch_add(1, Ordering::Relaxed);
        }
        NcclResult::SUCCESS
    })
}

unsafe extern "C" fn finalize(context: *mut c_void) -> NcclResult {
    guarded(|| {
        if context.is_null() {
            return NcclResult::SUCCESS;
        }
        // SAFETY: a context this plugin's `init` made (never freed).
        let ctx = unsafe { &*context.cast::<Context>() };
        if ctx.finalized.swap(true, Ordering::AcqRel) {
            return NcclResult::SUCCESS;
        }
        let line = ctx.counts();
        let written = match std::env::var_os("NCCL_TRAMPOLINE_PROFILER_OUT") {
            None => "NCCL_TRAMPOLINE_PROFILER_OUT unset".to_string(),
            Some(path) => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()))
                .map_or_else(
                    |e| format!("cannot append to {}: {e}", path.to_string_lossy()),
                    |()| format!("appended to {}", path.to_string_lossy()),
                ),
        };
        ctx.log(line!(), &format!("rust profiler: finalize {line} ({written})"));
        NcclResult::SUCCESS
    })
}

/// The table NCCL 2.28+ finds with `dlsym(lib, "ncclProfiler_v5")`.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static ncclProfiler_v5: ProfilerV5 = ProfilerV5 {
    name: c"nccl-trampoline-rust".as_ptr(),
    init: Some(init),
    startEvent: Some(start_event),
    stopEvent: Some(stop_event),
    recordEventState: Some(record_event_state),
    finalize: Some(finalize),
};
