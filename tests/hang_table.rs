//! The hang table: the stand-in libnccl (tests/c/fake_nccl.c, `fake_hang_in`) blocks inside one
//! entry point at a time — a peer that never answers, a lock NCCL never gets — and every public
//! method of `Communicator`, `AbortHandle`, `Pending`, `Group`/`GroupScope` and the watchdog
//! that reaches it is run against it. Each must either return a typed result within its
//! documented bound + 10 % (docs/adr/0009-fault-model.md, "What is bounded"), or, for the calls
//! documented as one NCCL call on the caller's own thread (a collective, a group's end, a query),
//! be blocked inside NCCL on that very thread — never waiting in the facade — while the
//! communicator's abort handle still answers within its bounds, and return once NCCL does.
//!
//! Which entry points a method reaches is read from the stand-in itself (a dry run records
//! them), so the table follows the code: a method that starts calling something new is tried
//! against a hang there too. Native x86-64 only: the logic is the same on every architecture,
//! and its timing bounds (+10 %) are not kept by an emulator.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

mod common;

use std::ffi::c_void;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::standin::{id, load, serial, FakeStream, HostBuf, Log};
use nccl_trampoline::nccl::{
    AbortHandle, CommOptions, Communicator, Config, DataType, Error, Nccl, RedOp, ShrinkMode, Timeouts, WatchdogConfig,
};

/// Every timeout of the fixtures: creation, operation and teardown.
const BOUND: Duration = Duration::from_millis(600);
/// How long the abort handle's `state` (and its `Debug`) may take: they never wait for NCCL.
const AT_ONCE: Duration = Duration::from_millis(50);

fn timeouts() -> Timeouts {
    Timeouts { create: Some(BOUND), operation: Some(BOUND), teardown: Some(BOUND) }
}

fn options(nonblocking: bool) -> CommOptions {
    let options = CommOptions::new().timeouts(timeouts());
    if nonblocking {
        options.config(Config::new().blocking(false))
    } else {
        options
    }
}

/// What each row starts from, made before the hang is set.
struct Fixture {
    nccl: Nccl,
    comm: Communicator,
}

impl Fixture {
    fn run(self, run: &Run) -> String {
        match run {
            Run::Uses(f) => {
                let out = f(&self);
                std::mem::forget(self.comm);
                out
            }
            Run::Takes(f) => f(self),
        }
    }
}

/// How long a method may take, from the fixture's timeouts (docs/adr/0009-fault-model.md).
#[derive(Clone, Copy, Debug)]
enum Bound {
    /// No NCCL call, no wait: at once.
    AtOnce,
    /// One deadline of the fixture (creation, operation or teardown: all `BOUND`).
    One,
    /// Two in a row (a non-blocking call's wait after its bounded start, drop's finalize then
    /// abort).
    Two,
}

impl Bound {
    fn limit(self) -> Duration {
        match self {
            Bound::AtOnce => AT_ONCE,
            Bound::One => BOUND,
            Bound::Two => BOUND * 2,
        }
    }
}

struct Row {
    method: &'static str,
    /// Made non-blocking (`Config::blocking(false)`).
    nonblocking: bool,
    bound: Bound,
    /// Documented as NCCL calls on the caller's own thread: NCCL bounds them, not the facade.
    direct: bool,
    run: Run,
}

/// A row's method: one that uses the fixture (its communicator is then left alone: its teardown
/// is other rows' business, so that the row reaches only what it calls itself), or one that
/// takes it (destroy, abort, drop).
#[derive(Clone, Copy)]
enum Run {
    Uses(fn(&Fixture) -> String),
    Takes(fn(Fixture) -> String),
}

fn shown<T: std::fmt::Debug, E: std::fmt::Display>(r: Result<T, E>) -> String {
    match r {
        Ok(v) => format!("Ok({v:?})"),
        Err(e) => format!("Err({e})"),
    }
}

fn raw_all_reduce(c: &Communicator) -> String {
    // SAFETY: the stand-in only records the pointers; the stream is a made-up handle.
    shown(unsafe {
        c.all_reduce_raw(16 as *const c_void, 16 as *mut c_void, 4, DataType::FLOAT32, RedOp::SUM, 0x51 as *mut c_void)
    })
}

const ROWS: &[Row] = &[
    // ---- creation: the call and the polling on the creation's thread ----
    Row {
        method: "Communicator::init_rank_with",
        nonblocking: false,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| {
            shown(Communicator::init_rank_with(&f.nccl, 2, &id(), 0, &options(false)).map(std::mem::forget))
        }),
    },
    Row {
        method: "Communicator::init_rank_with (non-blocking)",
        nonblocking: true,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| {
            shown(Communicator::init_rank_with(&f.nccl, 2, &id(), 0, &options(true)).map(std::mem::forget))
        }),
    },
    Row {
        method: "Pending::poll until done",
        nonblocking: true,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| {
            let started = Instant::now();
            let mut p = match Communicator::begin_init_rank(&f.nccl, 2, &id(), 0, &options(true)) {
                Ok(p) => p,
                Err(e) => return format!("Err({e})"),
            };
            loop {
                match p.poll() {
                    Ok(true) => return shown(p.wait().map(|c| c.map(std::mem::forget).is_some())),
                    Ok(false) if started.elapsed() < BOUND * 3 => std::thread::sleep(Duration::from_millis(5)),
                    Ok(false) => return "still polling past the deadline".into(),
                    Err(e) => return format!("Err({e})"),
                }
            }
        }),
    },
    Row {
        method: "drop(Pending)",
        nonblocking: true,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| {
            let p = Communicator::begin_init_rank(&f.nccl, 2, &id(), 0, &options(true));
            // Dropped before NCCL's job is done: the drop aborts what it made.
            std::thread::sleep(Duration::from_millis(10));
            drop(p);
            "dropped".into()
        }),
    },
    Row {
        method: "Communicator::init_all",
        nonblocking: false,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| {
            shown(Communicator::init_all_with(&f.nccl, &[0, 1], timeouts()).map(|c| {
                let n = c.len();
                std::mem::forget(c);
                n
            }))
        }),
    },
    Row {
        method: "Communicator::split",
        nonblocking: false,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| shown(f.comm.split(0, 0, None).map(|c| c.map(std::mem::forget).is_some()))),
    },
    Row {
        method: "Communicator::split (non-blocking)",
        nonblocking: true,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| shown(f.comm.split(0, 0, None).map(|c| c.map(std::mem::forget).is_some()))),
    },
    Row {
        method: "Communicator::shrink (non-blocking)",
        nonblocking: true,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| shown(f.comm.shrink(&[1], None, ShrinkMode::Default).map(std::mem::forget))),
    },
    Row {
        method: "Nccl::split_all",
        nonblocking: false,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| {
            shown(f.nccl.split_all(&[(&f.comm, 0, 0)], None).map(|c| {
                let n = c.len();
                std::mem::forget(c);
                n
            }))
        }),
    },
    Row {
        method: "Communicator::init_rank_scalable",
        nonblocking: false,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| {
            shown(Communicator::init_rank_scalable(&f.nccl, 2, 0, &[id()], &options(false)).map(std::mem::forget))
        }),
    },
    Row {
        method: "Communicator::join_grow",
        nonblocking: false,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| shown(Communicator::join_grow(&f.nccl, 3, &id(), 2, &options(false)).map(std::mem::forget))),
    },
    // ---- ending: finalize, destroy, drop and abort run bounded ----
    Row {
        method: "Communicator::finalize",
        nonblocking: false,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| shown(f.comm.finalize())),
    },
    Row {
        method: "Communicator::finalize (non-blocking)",
        nonblocking: true,
        bound: Bound::One,
        direct: false,
        run: Run::Uses(|f| shown(f.comm.finalize())),
    },
    Row {
        method: "Communicator::destroy",
        nonblocking: false,
        bound: Bound::One,
        direct: false,
        run: Run::Takes(|f| shown(f.comm.destroy())),
    },
    Row {
        method: "drop(Communicator)",
        nonblocking: false,
        bound: Bound::Two,
        direct: false,
        run: Run::Takes(|f| {
            drop(f.comm);
            "dropped".into()
        }),
    },
    Row {
        method: "drop(Communicator) (non-blocking)",
        nonblocking: true,
        bound: Bound::Two,
        direct: false,
        run: Run::Takes(|f| {
            drop(f.comm);
            "dropped".into()
        }),
    },
    Row {
        method: "Communicator::abort",
        nonblocking: false,
        bound: Bound::One,
        direct: false,
        run: Run::Takes(|f| shown(f.comm.abort())),
    },
    Row {
        method: "AbortHandle::abort",
        nonblocking: true,
        bound: Bound::One,
        direct: false,
        run: Run::Takes(|f| shown(f.comm.abort_handle().abort())),
    },
    Row {
        method: "AbortHandle::state and Debug",
        nonblocking: false,
        bound: Bound::AtOnce,
        direct: false,
        run: Run::Uses(|f| {
            let h = f.comm.abort_handle();
            format!("{:?} {h:?}", h.state())
        }),
    },
    Row {
        method: "count, rank, cu_device, state, as_raw",
        nonblocking: false,
        bound: Bound::AtOnce,
        direct: false,
        run: Run::Uses(|f| {
            format!(
                "{:?} {:?} {:?} {:?} {}",
                f.comm.count(),
                f.comm.rank(),
                f.comm.cu_device(),
                f.comm.state(),
                f.comm.as_raw().is_null()
            )
        }),
    },
    // ---- one NCCL call on the caller's thread (documented as NCCL's to bound) ----
    Row {
        method: "Communicator::all_reduce_raw",
        nonblocking: false,
        bound: Bound::One,
        direct: true,
        run: Run::Uses(|f| raw_all_reduce(&f.comm)),
    },
    Row {
        method: "Communicator::all_reduce_raw (non-blocking)",
        nonblocking: true,
        bound: Bound::Two,
        direct: true,
        run: Run::Uses(|f| raw_all_reduce(&f.comm)),
    },
    Row {
        method: "Communicator::all_reduce_in_place",
        nonblocking: false,
        bound: Bound::One,
        direct: true,
        run: Run::Uses(|f| {
            let mut buf = HostBuf::new(vec![1.0; 4]);
            shown(f.comm.all_reduce_in_place(&mut buf, RedOp::SUM, &FakeStream::new(0x52)))
        }),
    },
    Row {
        method: "Nccl::group_scope",
        nonblocking: false,
        bound: Bound::One,
        direct: true,
        run: Run::Uses(|f| {
            let mut buf = HostBuf::new(vec![1.0; 4]);
            let stream = FakeStream::new(0x53);
            shown(f.nccl.group_scope(|g| g.all_reduce_in_place(&f.comm, &mut buf, RedOp::SUM, &stream)))
        }),
    },
    Row {
        method: "Group::end (non-blocking)",
        nonblocking: true,
        bound: Bound::Two,
        direct: true,
        run: Run::Uses(|f| match f.nccl.group() {
            Ok(g) => {
                let _ = raw_all_reduce(&f.comm);
                shown(g.end())
            }
            Err(e) => format!("Err({e})"),
        }),
    },
    Row {
        method: "Communicator::wait (stream wait)",
        nonblocking: false,
        bound: Bound::One,
        direct: true,
        run: Run::Uses(|f| shown(f.comm.wait(&FakeStream::new(0x51)))),
    },
    Row {
        method: "Communicator::async_error",
        nonblocking: false,
        bound: Bound::One,
        direct: true,
        run: Run::Uses(|f| shown(f.comm.async_error())),
    },
    Row {
        method: "Communicator::revoke (non-blocking)",
        nonblocking: true,
        bound: Bound::Two,
        direct: true,
        run: Run::Uses(|f| shown(f.comm.revoke())),
    },
    Row {
        method: "Communicator::properties",
        nonblocking: false,
        bound: Bound::One,
        direct: true,
        run: Run::Uses(|f| shown(f.comm.properties().map(|_| ()))),
    },
    Row {
        method: "Communicator::register",
        nonblocking: false,
        bound: Bound::One,
        direct: true,
        run: Run::Uses(|f| {
            let mut buf = vec![0u8; 64];
            // SAFETY: the stand-in only records the address.
            shown(unsafe { f.comm.register(buf.as_mut_ptr().cast(), buf.len()) }.map(drop))
        }),
    },
    // Last: its watchdog keeps polling NCCL in the background.
    Row {
        method: "Communicator::watchdog_report (watchdog running)",
        nonblocking: false,
        bound: Bound::AtOnce,
        direct: false,
        run: Run::Uses(|f| format!("{:?}", f.comm.watchdog_report())),
    },
];

/// Which entry points `row` reaches, from a dry run without a hang.
fn reached(log: &Log, row: &Row) -> Vec<String> {
    let f = fixture(row);
    log.f::<extern "C" fn()>("fake_seen_reset")();
    let _ = f.run(&row.run);
    let n = log.f::<extern "C" fn() -> i32>("fake_seen_count")();
    let at = log.f::<extern "C" fn(i32) -> *const std::ffi::c_char>("fake_seen_at");
    // SAFETY: the stand-in's names are NUL-terminated literals.
    (0..n).map(|i| unsafe { std::ffi::CStr::from_ptr(at(i)) }.to_string_lossy().into_owned()).collect()
}

fn fixture(row: &Row) -> Fixture {
    let (nccl, log) = load(23203);
    log.release_hang();
    let comm = Communicator::init_rank_with(&nccl, 2, &id(), 0, &options(row.nonblocking)).expect("fixture");
    if row.method.contains("stream wait") {
        // Work that never finishes on the stream: the wait polls NCCL's state until its deadline.
        log.set("hang_collective", 1);
        let _ = raw_all_reduce(&comm);
    }
    if row.method.contains("watchdog") {
        comm.start_watchdog(WatchdogConfig::new(BOUND)).expect("watchdog");
        let _ = raw_all_reduce(&comm);
    }
    Fixture { nccl, comm }
}

/// What went wrong with one (row, entry point) pair, if anything.
fn try_row(log: &Log, row: &Row, entry: &str) -> Result<String, String> {
    let f = fixture(row);
    let handle: AbortHandle = f.comm.abort_handle();
    log.hang_in(entry);
    let (tx, rx) = mpsc::channel();
    let started = Instant::now();
    let (run, thread_self) = (row.run, log.f::<extern "C" fn() -> u64>("fake_thread_self"));
    let worker = std::thread::spawn(move || {
        let _ = tx.send(Err(thread_self()));
        let out = f.run(&run);
        let _ = tx.send(Ok(out));
    });
    let thread = match rx.recv() {
        Ok(Err(t)) => t,
        other => return Err(format!("the row's thread did not start: {other:?}")),
    };
    let limit = row.bound.limit() + row.bound.limit() / 10;
    let verdict = match rx.recv_timeout(limit.saturating_sub(started.elapsed())) {
        Ok(Ok(out)) => Ok(format!("returned in {:?}: {out}", started.elapsed())),
        _ => {
            let inside = log.f::<extern "C" fn(u64) -> i32>("fake_hung_on")(thread) != 0;
            if !(row.direct && inside) {
                Err(format!(
                    "did not return within {limit:?}, and its thread is {} inside NCCL{}",
                    if inside { "blocked" } else { "not" },
                    if inside { " (not a documented direct call)" } else { ": the facade is waiting on its own" }
                ))
            } else {
                // A documented direct call, blocked in NCCL on the caller's thread: the abort
                // handle still answers within its bounds.
                let t = Instant::now();
                let state = handle.state();
                let _ = format!("{handle:?}");
                let state_took = t.elapsed();
                let t = Instant::now();
                let aborted = handle.abort();
                let abort_took = t.elapsed();
                if state_took > AT_ONCE {
                    Err(format!("blocked in NCCL, and AbortHandle::state took {state_took:?}"))
                } else if abort_took > BOUND + BOUND / 10 {
                    Err(format!("blocked in NCCL, and AbortHandle::abort took {abort_took:?}: {aborted:?}"))
                } else if !matches!(aborted, Ok(()) | Err(Error::AbortPending)) {
                    Err(format!("blocked in NCCL, and AbortHandle::abort gave {aborted:?}"))
                } else {
                    Ok(format!(
                        "blocked in NCCL on the caller's thread (documented); state {state:?}, abort {aborted:?}"
                    ))
                }
            }
        }
    };
    log.release_hang();
    // Once NCCL returns, so does the method (and whatever it left to its threads).
    let after = match rx.recv_timeout(BOUND * 4) {
        Ok(_) | Err(mpsc::RecvTimeoutError::Disconnected) => Ok(()),
        Err(_) => Err("did not return after NCCL did".to_string()),
    };
    let _ = worker.join();
    verdict.and_then(|v| after.map(|()| v))
}

#[test]
fn every_public_method_returns_within_its_bound_whichever_nccl_call_hangs() {
    let _g = serial();
    let (_, log) = load(23203);
    let mut failures = Vec::new();
    let mut tried = 0;
    for row in ROWS {
        let entries = reached(&log, row);
        assert!(
            !entries.is_empty() || matches!(row.bound, Bound::AtOnce),
            "{} reaches no NCCL entry point",
            row.method
        );
        if entries.is_empty() {
            // Nothing of NCCL's to hang: it must keep its bound all the same.
            tried += 1;
            match try_row(&log, row, "") {
                Ok(v) => println!("  {:<48} {:<34} {v}", row.method, "(reaches no NCCL call)"),
                Err(e) => failures.push(format!("{}: {e}", row.method)),
            }
        }
        for entry in &entries {
            tried += 1;
            match try_row(&log, row, entry) {
                Ok(v) => println!("  {:<48} hang in {entry:<26} {v}", row.method),
                Err(e) => {
                    println!("  {:<48} hang in {entry:<26} FAILED: {e}", row.method);
                    failures.push(format!("{} with {entry} hanging: {e}", row.method));
                }
            }
        }
    }
    // Quiet the leftovers of abandoned calls before the next test binary's run.
    std::thread::sleep(Duration::from_millis(200));
    println!("hang table: {tried} (method, entry point) pairs, {} failed", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(tried > ROWS.len(), "the table reached too few entry points: {tried}");
}
