//! Adopting a communicator made elsewhere (docs/adr/0029-adopting-communicators.md), against
//! the stand-in libnccl (tests/c/fake_nccl.c), which counts the communicators it made and has
//! not freed and the uses of freed memory NCCL would make. The communicators are made through
//! the stand-in's own C entry points, as PyTorch or a C++ program would make them, then adopted:
//! - borrowed: collectives (raw, safe, in a group) and queries work; dropping it makes no NCCL
//!   call and the stand-in still counts it alive (its owner's destroy then succeeds); abort,
//!   finalize, destroy, revoke, a shrink that aborts, the abort handle and a watchdog that
//!   aborts are refused with `Error::NotOwned`; a watchdog that marks it failed does so;
//! - owned: dropped, it is finalized and destroyed exactly once; its abort handle aborts it;
//! - a null handle is refused; one in error is adopted failed; one still in progress is
//!   adopted `Creating` until `wait_ready`; a failing rank query is a typed error;
//! - `Nccl::loaded` finds the library this process already loaded, and never loads one.
//!
//! The stand-in's count of live communicators is global and a split given up leaves the child
//! NCCL was making to its owner (here: to leak), so each test counts from where it started.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::ffi::c_void;
use std::time::{Duration, Instant};

use common::standin::{fake_nccl, id, load, serial, FakeStream, HostBuf, Log};
use nccl_trampoline::nccl::{
    Cause, CommState, Communicator, DataType, Error, Nccl, NcclResult, Ownership, RedOp, ShrinkMode, Timeouts,
    WatchdogAction, WatchdogConfig,
};

/// `ncclUniqueId`, passed by value as C passes it.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawId([u8; 128]);

/// The stand-in's `ncclConfig_t` head (size, magic, version, blocking), as `NCCL_CONFIG_INITIALIZER`
/// and `config.blocking = 0` write it.
#[repr(C)]
struct RawConfig {
    size: usize,
    magic: u32,
    version: u32,
    blocking: i32,
    pad: i32,
}

type InitRank = extern "C" fn(*mut *mut c_void, i32, RawId, i32) -> i32;
type InitRankConfig = extern "C" fn(*mut *mut c_void, i32, RawId, i32, *mut RawConfig) -> i32;
type OneComm = extern "C" fn(*mut c_void) -> i32;

fn raw_id() -> RawId {
    let mut bytes = [0u8; 128];
    bytes.copy_from_slice(id().as_bytes());
    RawId(bytes)
}

/// A blocking communicator of `nranks` (this process is rank 0), made by "other code": the
/// stand-in's `ncclCommInitRank`, called directly.
fn made_elsewhere(log: &Log, nranks: i32) -> *mut c_void {
    let mut comm: *mut c_void = std::ptr::null_mut();
    assert_eq!(log.f::<InitRank>("ncclCommInitRank")(&mut comm, nranks, raw_id(), 0), 0);
    assert!(!comm.is_null());
    comm
}

/// A non-blocking one whose creation is still running (`ncclInProgress`), made directly.
fn made_elsewhere_nonblocking(log: &Log) -> *mut c_void {
    let mut comm: *mut c_void = std::ptr::null_mut();
    let mut config = RawConfig { size: 24, magic: 0xcafe_beef, version: 23203, blocking: 0, pad: 0 };
    let r = log.f::<InitRankConfig>("ncclCommInitRankConfig")(&mut comm, 1, raw_id(), 0, &mut config);
    assert_eq!(r, 7, "ncclInProgress");
    assert!(!comm.is_null(), "NCCL stores an init's handle before its job starts");
    comm
}

/// The owner's own `ncclCommDestroy` (or `ncclCommAbort`), called directly.
fn owner_ends(log: &Log, function: &str, comm: *mut c_void) {
    assert_eq!(log.f::<OneComm>(function)(comm), 0, "{function} by the owner");
}

fn all_reduce(c: &Communicator, stream: usize) -> Result<(), Error> {
    // SAFETY: the stand-ins only record pointers; the stream is a made-up handle.
    unsafe {
        c.all_reduce_raw(
            16 as *const c_void,
            16 as *mut c_void,
            8,
            DataType::FLOAT32,
            RedOp::SUM,
            stream as *mut c_void,
        )
    }
}

fn not_owned(r: Result<(), Error>) -> &'static str {
    match r {
        Err(Error::NotOwned { operation }) => operation,
        other => panic!("expected NotOwned, got {other:?}"),
    }
}

fn short() -> Timeouts {
    let limit = Some(Duration::from_millis(1000));
    Timeouts { create: limit, operation: limit, teardown: limit }
}

#[test]
fn a_borrowed_communicator_works_and_its_drop_calls_nothing() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let base = log.live_comms();
    let raw = made_elsewhere(&log, 2);
    assert_eq!(log.live_comms() - base, 1);
    log.reset();
    // SAFETY: a live communicator of this very library, kept alive below until destroyed.
    let comm = unsafe { Communicator::from_raw(&nccl, raw, Ownership::Borrowed) }.unwrap();
    assert_eq!(log.calls(), ["ncclCommCount", "ncclCommUserRank", "ncclCommCuDevice"]);
    assert_eq!(comm.ownership(), Ownership::Borrowed);
    assert_eq!(comm.state(), CommState::Ready);
    assert_eq!((comm.count().unwrap(), comm.rank().unwrap(), comm.cu_device().unwrap()), (2, 0, 0));
    assert_eq!(comm.as_raw(), raw);
    assert!(!comm.is_nonblocking());
    assert_eq!(comm.async_error().unwrap(), NcclResult::SUCCESS);

    // The raw and the safe collectives, and a group.
    log.reset();
    all_reduce(&comm, 0x61).unwrap();
    let (send, mut recv) = (HostBuf::new(vec![1.0; 8]), HostBuf::new(vec![0.0; 8]));
    comm.all_reduce(&send, &mut recv, RedOp::SUM, &FakeStream::new(0x61)).unwrap();
    let stream = FakeStream::new(0x61);
    nccl.group_scope(|g| g.all_reduce(&comm, &send, &mut recv, RedOp::SUM, &stream)).unwrap();
    comm.wait(&stream).unwrap();
    assert_eq!(log.calls(), ["ncclAllReduce", "ncclAllReduce", "ncclGroupStart", "ncclAllReduce", "ncclGroupEnd"]);

    // What would end or stop it is refused, without an NCCL call.
    log.reset();
    let handle = comm.abort_handle();
    assert_eq!(not_owned(handle.abort()), "ncclCommAbort");
    assert_eq!(not_owned(comm.finalize()), "ncclCommFinalize");
    assert_eq!(not_owned(comm.revoke()), "ncclCommRevoke");
    assert_eq!(not_owned(comm.shrink(&[1], None, ShrinkMode::Abort).map(drop)), "ncclCommShrink (ShrinkMode::Abort)");
    assert_eq!(log.calls(), Vec::<String>::new());
    assert_eq!(comm.state(), CommState::Ready, "a refusal changes nothing");
    all_reduce(&comm, 0x61).unwrap();

    // Dropped: no NCCL call, the communicator lives on with its owner.
    log.reset();
    drop(comm);
    assert_eq!(log.calls(), Vec::<String>::new());
    assert_eq!(log.live_comms() - base, 1);
    assert_eq!(handle.state(), CommState::Released);
    assert_eq!(not_owned(handle.abort()), "ncclCommAbort");
    owner_ends(&log, "ncclCommDestroy", raw);
    assert_eq!((log.live_comms() - base, log.violations()), (0, 0));
}

#[test]
fn destroy_and_abort_of_a_borrowed_communicator_are_refused_and_leave_it_alive() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let base = log.live_comms();
    let raw = made_elsewhere(&log, 1);
    for end in [Communicator::destroy as fn(Communicator) -> Result<(), Error>, Communicator::abort] {
        // SAFETY: as above.
        let comm = unsafe { Communicator::from_raw(&nccl, raw, Ownership::Borrowed) }.unwrap();
        log.reset();
        let operation = not_owned(end(comm));
        assert!(operation == "ncclCommDestroy" || operation == "ncclCommAbort", "{operation}");
        assert_eq!(log.calls(), Vec::<String>::new());
        assert_eq!(log.live_comms() - base, 1);
    }
    owner_ends(&log, "ncclCommDestroy", raw);
    assert_eq!((log.live_comms() - base, log.violations()), (0, 0));
}

#[test]
fn a_borrowed_communicators_watchdog_marks_it_failed_and_never_aborts() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let base = log.live_comms();
    // The log is the process's: a test before this one may have ended with its owner's abort.
    log.reset();
    let raw = made_elsewhere(&log, 2);
    // SAFETY: as above.
    let comm = unsafe { Communicator::from_raw(&nccl, raw, Ownership::Borrowed) }.unwrap();
    let timeout = Duration::from_millis(300);
    // Abort (the default action) is refused: its owner must end stuck work.
    assert_eq!(not_owned(comm.start_watchdog(WatchdogConfig::new(timeout))), "ncclCommAbort (WatchdogAction::Abort)");
    comm.start_watchdog(WatchdogConfig::new(timeout).action(WatchdogAction::MarkFailed)).unwrap();
    all_reduce(&comm, 0x62).unwrap();
    comm.wait(&FakeStream::new(0x62)).unwrap();
    assert_eq!(comm.watchdog_report(), None, "a finished operation is not reported");

    log.set("hang_collective", 1);
    let started = Instant::now();
    all_reduce(&comm, 0x63).unwrap();
    let err = comm.wait(&FakeStream::new(0x63)).unwrap_err();
    assert!(matches!(err, Error::Unusable { state: CommState::Failed(Cause::Watchdog(_)), .. }), "{err}");
    assert!(started.elapsed() < timeout * 4, "took {:?}", started.elapsed());
    let report = comm.watchdog_report().expect("a report");
    assert_eq!(report.operation, Some("ncclAllReduce"));
    assert!(!log.calls().iter().any(|c| c == "ncclCommAbort"), "{:?}", log.calls());
    log.reset();
    drop(comm);
    assert_eq!(log.calls(), Vec::<String>::new());
    assert_eq!(log.live_comms() - base, 1);
    // The owner ends it (its kernel spins on a dead peer: abort, as PyTorch's watchdog would).
    owner_ends(&log, "ncclCommAbort", raw);
    log.set("hang_collective", 0);
    assert_eq!((log.live_comms() - base, log.violations()), (0, 0));
}

#[test]
fn an_owned_communicator_is_destroyed_exactly_once() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let base = log.live_comms();
    let raw = made_elsewhere(&log, 1);
    // SAFETY: a live communicator of this library, which nobody else ends or uses any more.
    let comm = unsafe { Communicator::from_raw(&nccl, raw, Ownership::Owned) }.unwrap();
    assert_eq!(comm.ownership(), Ownership::Owned);
    all_reduce(&comm, 0x64).unwrap();
    log.reset();
    drop(comm);
    assert_eq!(log.calls(), ["ncclCommFinalize", "ncclCommDestroy"]);
    assert_eq!((log.live_comms() - base, log.violations()), (0, 0));

    // Its abort handle aborts it, once; the drop that follows does nothing.
    let raw = made_elsewhere(&log, 1);
    // SAFETY: as above.
    let comm = unsafe { Communicator::from_raw(&nccl, raw, Ownership::Owned) }.unwrap();
    log.reset();
    comm.abort_handle().abort().unwrap();
    drop(comm);
    assert_eq!(log.calls(), ["ncclCommAbort"]);
    assert_eq!((log.live_comms() - base, log.violations()), (0, 0));
}

#[test]
fn a_null_handle_is_refused_before_nccl_is_called() {
    let _g = serial();
    let (nccl, log) = load(23203);
    log.reset();
    for ownership in [Ownership::Borrowed, Ownership::Owned] {
        // SAFETY: null is refused before any use.
        let err = unsafe { Communicator::from_raw(&nccl, std::ptr::null_mut(), ownership) }.unwrap_err();
        assert_eq!(err, Error::NullCommunicator);
    }
    assert_eq!(log.calls(), Vec::<String>::new());
}

#[test]
fn a_communicator_in_error_is_adopted_failed() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let base = log.live_comms();
    let remote_error = NcclResult(6);
    for ownership in [Ownership::Borrowed, Ownership::Owned] {
        let raw = made_elsewhere(&log, 2);
        // A network peer died: NCCL's proxy thread set the async error.
        log.set_async(raw, remote_error.0);
        log.reset();
        // SAFETY: as above (Owned: handed over).
        let comm = unsafe { Communicator::from_raw(&nccl, raw, ownership) }.unwrap();
        let failed = CommState::Failed(Cause::Nccl { function: "ncclCommGetAsyncError", code: remote_error });
        assert_eq!(comm.state(), failed);
        assert_eq!(log.calls(), Vec::<String>::new(), "NCCL gives no rank facts in error");
        assert!(matches!(comm.count(), Err(Error::Unusable { .. })));
        assert!(matches!(all_reduce(&comm, 0x65), Err(Error::Unusable { .. })));
        drop(comm);
        match ownership {
            Ownership::Borrowed => {
                assert_eq!(log.calls(), Vec::<String>::new());
                owner_ends(&log, "ncclCommAbort", raw);
            }
            // A failed communicator of ours is aborted when dropped.
            _ => assert_eq!(log.calls(), ["ncclCommAbort"]),
        }
        assert_eq!((log.live_comms() - base, log.violations()), (0, 0));
    }
}

#[test]
fn a_communicator_still_in_progress_is_adopted_creating_until_wait_ready() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let base = log.live_comms();
    log.set("late_ms", 150);
    let raw = made_elsewhere_nonblocking(&log);
    log.reset();
    // SAFETY: a live communicator of this library; its maker (this thread) stays alive.
    let comm = unsafe { Communicator::from_raw(&nccl, raw, Ownership::Borrowed) }.unwrap();
    assert_eq!(comm.state(), CommState::Creating);
    assert!(comm.is_nonblocking(), "learned from ncclInProgress");
    assert!(matches!(comm.count(), Err(Error::Unusable { state: CommState::Creating, .. })));
    assert!(matches!(all_reduce(&comm, 0x66), Err(Error::Unusable { state: CommState::Creating, .. })));
    assert_eq!(log.calls(), Vec::<String>::new());
    comm.set_timeouts(short());
    comm.wait_ready().unwrap();
    assert_eq!(comm.state(), CommState::Ready);
    assert_eq!(comm.count().unwrap(), 1);
    // A non-blocking collective: its ncclInProgress is waited out.
    all_reduce(&comm, 0x66).unwrap();
    comm.wait_ready().unwrap();
    drop(comm);
    assert_eq!(log.live_comms() - base, 1);
    owner_ends(&log, "ncclCommDestroy", raw);
    assert_eq!((log.live_comms() - base, log.violations()), (0, 0));

    // One whose creation never finishes: wait_ready gives up at its deadline, still Creating.
    log.set("hang_init", 1);
    let raw = made_elsewhere_nonblocking(&log);
    // SAFETY: as above.
    let comm = unsafe { Communicator::from_raw(&nccl, raw, Ownership::Borrowed) }.unwrap();
    comm.set_timeouts(Timeouts { create: Some(Duration::from_millis(200)), ..short() });
    assert!(matches!(comm.wait_ready(), Err(Error::Timeout { operation: "ncclCommGetAsyncError", .. })));
    assert_eq!(comm.state(), CommState::Creating);
    drop(comm);
    owner_ends(&log, "ncclCommAbort", raw);
    log.set("hang_init", 0);
    assert_eq!((log.live_comms() - base, log.violations()), (0, 0));
}

/// A split of a borrowed non-blocking communicator that never finishes: NCCL stops a child only
/// through its parent's abort, which is the owner's; the creation gives up at its deadline
/// without aborting the parent, marks it failed, and keeps the slot NCCL may still write.
#[test]
fn a_split_of_a_borrowed_communicator_past_its_deadline_leaves_the_parent_to_its_owner() {
    let _g = serial();
    let (nccl, log) = load(23203);
    log.set("late_ms", 20);
    let raw = made_elsewhere_nonblocking(&log);
    // SAFETY: as above.
    let comm = unsafe { Communicator::from_raw(&nccl, raw, Ownership::Borrowed) }.unwrap();
    comm.set_timeouts(Timeouts { create: Some(Duration::from_millis(300)), ..short() });
    comm.wait_ready().unwrap();
    log.set("hang_init", 1);
    log.reset();
    let err = comm.split(0, 0, None).unwrap_err();
    assert!(matches!(err, Error::Timeout { operation: "ncclCommSplit", .. }), "{err}");
    assert_eq!(log.calls(), ["ncclCommSplit"], "the parent is not aborted");
    assert!(matches!(comm.state(), CommState::Failed(Cause::Timeout { .. })), "{:?}", comm.state());
    drop(comm);
    // The owner aborts it, which ends NCCL's job; the child NCCL was making is its to leak.
    owner_ends(&log, "ncclCommAbort", raw);
    log.set("hang_init", 0);
    assert!(log.eventually(Duration::from_secs(2), |l| l.live_jobs() == 0));
    assert_eq!(log.violations(), 0);
}

#[test]
fn a_failing_rank_query_is_a_typed_error() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let base = log.live_comms();
    let raw = made_elsewhere(&log, 1);
    log.fail_next(3, "the count went missing");
    // SAFETY: as above.
    let err = unsafe { Communicator::from_raw(&nccl, raw, Ownership::Borrowed) }.unwrap_err();
    match err {
        Error::Nccl { function: "ncclCommCount", result: NcclResult(3), ref last_error, .. } => {
            assert_eq!(last_error, "the count went missing")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(log.live_comms() - base, 1, "a refused adoption ends nothing");
    owner_ends(&log, "ncclCommDestroy", raw);
    assert_eq!(log.live_comms() - base, 0);
}

/// The variable that makes this binary, run again, the process of `nccl_loaded_*`'s child.
const CHILD: &str = "NCCL_TRAMPOLINE_ADOPT_CHILD";

/// Whether this process maps `path`.
fn mapped(path: &std::path::Path) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let path = std::fs::canonicalize(path).unwrap();
    maps.lines().any(|l| l.split_whitespace().nth(5).map(std::path::Path::new) == Some(path.as_path()))
}

/// In a process of its own (the library must not be loaded yet): `Nccl::loaded` finds nothing
/// and maps nothing; once "other code" loaded the stand-in, it finds that very library, and a
/// communicator made through it is adopted and used; with two NCCL files loaded it asks which.
#[test]
fn nccl_loaded_finds_the_library_of_this_process_and_never_loads_one() {
    let (first, second) = match (std::env::var_os(CHILD), std::env::var_os("NCCL_TRAMPOLINE_ADOPT_SECOND")) {
        (Some(first), Some(second)) => (std::path::PathBuf::from(first), std::path::PathBuf::from(second)),
        _ => {
            let (first, second) = (fake_nccl(23203), fake_nccl(22803));
            let out = common::rerun_self(
                "nccl_loaded_finds_the_library_of_this_process_and_never_loads_one",
                &[(CHILD, first.to_str().unwrap()), ("NCCL_TRAMPOLINE_ADOPT_SECOND", second.to_str().unwrap())],
            );
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success() && text.contains("1 passed"), "the child failed:\n{text}");
            return;
        }
    };
    // Nothing loaded: refused, and nothing mapped.
    assert!(!mapped(&first));
    assert_eq!(Nccl::loaded().unwrap_err(), Error::NotLoaded);
    let err = Nccl::loaded_from(&first).unwrap_err();
    assert!(
        matches!(&err, Error::LibraryLoad { reason, .. } if reason.starts_with("not loaded in this process")),
        "{err}"
    );
    assert!(!mapped(&first), "Nccl::loaded_from mapped the library");

    // "Other code" (PyTorch) loads NCCL and makes a communicator with it.
    // SAFETY: the stand-in built by this test; trivial initialisers.
    let theirs = unsafe { libloading::Library::new(&first) }.unwrap();
    let log = Log::open_path(&first);
    let raw = made_elsewhere(&log, 1);
    let nccl = Nccl::loaded().unwrap();
    assert_eq!(std::fs::canonicalize(nccl.path()).unwrap(), std::fs::canonicalize(&first).unwrap());
    assert_eq!(nccl.version().to_string(), "2.32.3");
    // SAFETY: a live communicator of the library just found.
    let comm = unsafe { Communicator::from_raw(&nccl, raw, Ownership::Borrowed) }.unwrap();
    log.reset();
    all_reduce(&comm, 0x67).unwrap();
    assert_eq!(log.calls(), ["ncclAllReduce"], "the call reached the library that made the handle");
    drop(comm);
    owner_ends(&log, "ncclCommDestroy", raw);
    assert_eq!(log.live_comms(), 0);

    // A second NCCL file in the process: which one made a handle cannot be told.
    // SAFETY: as above.
    let other = unsafe { libloading::Library::new(&second) }.unwrap();
    match Nccl::loaded() {
        Err(Error::SeveralLoaded { paths }) => assert_eq!(paths.len(), 2, "{paths:?}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(Nccl::loaded_from(&second).unwrap().version().to_string(), "2.28.3");
    assert_eq!(Nccl::loaded_from(&first).unwrap().version().to_string(), "2.32.3");
    drop((theirs, other));
}

/// `target/<profile>/examples`, beside this test's `target/<profile>/deps`.
fn examples_dir() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("this test's path");
    exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>").join("examples")
}

type AllReduce = unsafe extern "C" fn(
    *mut c_void,
    *const c_void,
    *mut c_void,
    usize,
    std::ffi::c_int,
    *mut c_void,
    *mut std::ffi::c_char,
    usize,
) -> std::ffi::c_int;
type Describe = unsafe extern "C" fn(*mut c_void, *mut std::ffi::c_char, usize) -> std::ffi::c_int;

/// The PyTorch recipe's library (examples/torch_allreduce.rs) as Python's ctypes uses it, on the
/// stand-in executing the collectives (host memory posing as device memory), in a process of its
/// own: "torch" loads NCCL and makes the communicator; the recipe adopts it borrowed with the
/// NCCL it finds loaded, all-reduces (out of place and in place, two types), describes it,
/// refuses a null handle in words, and leaves the communicator to its owner.
#[test]
fn the_torch_recipe_library_all_reduces_on_a_communicator_it_does_not_own() {
    const RECIPE: &str = "NCCL_TRAMPOLINE_ADOPT_RECIPE";
    let recipe = examples_dir().join("libtorch_allreduce.so");
    let Some(standin) = std::env::var_os(RECIPE).map(std::path::PathBuf::from) else {
        assert!(
            recipe.is_file(),
            "{} is not built: run `cargo build --example torch_allreduce` first (cargo test and scripts/test.sh build the examples)",
            recipe.display()
        );
        let standin = fake_nccl(23203);
        let out = common::rerun_self(
            "the_torch_recipe_library_all_reduces_on_a_communicator_it_does_not_own",
            &[(RECIPE, standin.to_str().unwrap()), ("FAKE_NCCL_EXECUTE", "1")],
        );
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("1 passed"), "the child failed:\n{text}");
        return;
    };
    // SAFETY: the stand-in built by the parent; trivial initialisers.
    let torch_nccl = unsafe { libloading::Library::new(&standin) }.unwrap();
    let log = Log::open_path(&standin);
    let raw = made_elsewhere(&log, 1);
    // SAFETY: the example built by cargo; its initialisers are Rust's.
    let lib = unsafe { libloading::Library::new(&recipe) }.unwrap();
    // SAFETY: the exported functions' prototypes (examples/torch_allreduce.rs).
    let (all_reduce, describe) = unsafe {
        (*lib.get::<AllReduce>(b"nt_torch_all_reduce").unwrap(), *lib.get::<Describe>(b"nt_torch_describe").unwrap())
    };
    let mut err = [0 as std::ffi::c_char; 256];
    let text = |buf: &[std::ffi::c_char]| {
        // SAFETY: the library NUL-terminates what it writes.
        unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
    };

    let send: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    let mut recv = vec![0f32; 1000];
    // SAFETY: host memory the stand-in reads and writes; the null stream; a 256-byte buffer.
    let r = unsafe {
        all_reduce(
            raw,
            send.as_ptr().cast(),
            recv.as_mut_ptr().cast(),
            1000,
            7,
            std::ptr::null_mut(),
            err.as_mut_ptr(),
            256,
        )
    };
    assert_eq!(r, 0, "{}", text(&err));
    assert_eq!(recv, send, "one rank's sum is its own data");
    let mut both: Vec<f64> = (0..17).map(f64::from).collect();
    let p = both.as_mut_ptr().cast::<c_void>();
    // SAFETY: as above, in place.
    let r = unsafe { all_reduce(raw, p, p, 17, 8, std::ptr::null_mut(), err.as_mut_ptr(), 256) };
    assert_eq!(r, 0, "{}", text(&err));
    assert_eq!(both, (0..17).map(f64::from).collect::<Vec<_>>());

    // SAFETY: as above.
    assert_eq!(unsafe { describe(raw, err.as_mut_ptr(), 256) }, 0, "{}", text(&err));
    let described = text(&err);
    assert!(
        described.starts_with("NCCL 2.32.3 at ")
            && described.ends_with(": rank 0 of 1 on device 0, ready, no ncclInProgress seen"),
        "{described}"
    );

    // SAFETY: a null handle is refused before any use.
    let r = unsafe { all_reduce(std::ptr::null_mut(), p, p, 17, 8, std::ptr::null_mut(), err.as_mut_ptr(), 256) };
    assert_eq!((r, text(&err)), (1, "Communicator::from_raw: the ncclComm_t is null".to_string()));
    // A message cut to the buffer given, NUL-terminated.
    // SAFETY: as above, 8 bytes.
    let r = unsafe { all_reduce(std::ptr::null_mut(), p, p, 17, 8, std::ptr::null_mut(), err.as_mut_ptr(), 8) };
    assert_eq!((r, text(&err)), (1, "Communi".to_string()));

    // The owner's communicator is still there, and its destroy succeeds.
    assert_eq!(log.live_comms(), 1);
    owner_ends(&log, "ncclCommDestroy", raw);
    assert_eq!((log.live_comms(), log.violations()), (0, 0));
    drop((lib, torch_nccl));
}
