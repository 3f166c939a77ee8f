//! The `tracing` feature's events (README, "Logging"; docs/adr/0028-operator-events.md),
//! captured by a small in-test subscriber while the facade drives the C stand-in of NCCL
//! (tests/c/fake_nccl.c) and its fake CUDA driver, the rendezvous runs on loopback and a plugin
//! logger is called from C: every event the README lists appears with its target, level and
//! fields, and no event, in any field, carries the unique id's bytes (hex, decimal list, Debug,
//! raw), its fingerprint, the rendezvous secret or its key, the job id the key can come from,
//! or `NCCL_COMM_ID`'s address. Needs `--features tracing` (`required-features`).
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::ffi::c_void;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use common::standin::{id, load, serial, FakeStream, Log};
use nccl_trampoline::launch::rendezvous::{self, RendezvousKey, TcpRoot};
use nccl_trampoline::launch::{vars, IdRoute, World};
use nccl_trampoline::nccl::{
    CommOptions, Communicator, Config, DataType, Error, Nccl, RedOp, ShrinkMode, Timeouts, UniqueId, WatchdogConfig,
};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

// ---- the capturing subscriber ------------------------------------------------------------------

/// One event as the subscriber saw it: every field rendered as text (`Display` and strings as
/// they are, the rest with `Debug`).
#[derive(Clone, Debug)]
struct Captured {
    name: &'static str,
    target: String,
    level: Level,
    fields: Vec<(String, String)>,
}

impl Captured {
    fn get(&self, field: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == field).map(|(_, v)| v.as_str())
    }

    fn has(&self, want: &[(&str, &str)]) -> bool {
        want.iter().all(|(k, v)| self.get(k) == Some(*v))
    }
}

struct Fields(Vec<(String, String)>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.push((field.name().to_string(), format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_string(), value.to_string()));
    }
}

/// Every event of the process, from every thread (creations, aborts and the watchdog run on
/// threads of their own), in order.
#[derive(Default)]
struct Capture {
    events: Mutex<Vec<Captured>>,
    spans: AtomicU64,
}

struct Global(&'static Capture);

impl Subscriber for Global {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.0.spans.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(Vec::new());
        event.record(&mut fields);
        let m = event.metadata();
        let captured = Captured { name: m.name(), target: m.target().to_string(), level: *m.level(), fields: fields.0 };
        self.0.events.lock().unwrap_or_else(PoisonError::into_inner).push(captured);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let c: &'static Capture = Box::leak(Box::default());
        tracing::subscriber::set_global_default(Global(c)).expect("the only subscriber");
        c
    })
}

/// The events from `from` (an index of [`mark`]) on.
fn since(from: usize) -> Vec<Captured> {
    capture().events.lock().unwrap_or_else(PoisonError::into_inner)[from..].to_vec()
}

/// Where the events of what follows begin.
fn mark() -> usize {
    capture().events.lock().unwrap_or_else(PoisonError::into_inner).len()
}

/// The first event `name` with every field of `want`, checked to have the target and level
/// the README gives it; panics with the events of that name otherwise.
fn expect(events: &[Captured], name: &str, want: &[(&str, &str)]) -> Captured {
    let found = events.iter().find(|e| e.name == name && e.has(want));
    let Some(e) = found else {
        let same: Vec<_> = events.iter().filter(|e| e.name == name).collect();
        panic!("no event {name} with {want:?}; events of that name: {same:#?}");
    };
    let (target, level) = table(name);
    assert_eq!((e.target.as_str(), e.level), (target, level), "{name}'s target and level");
    e.clone()
}

/// Waits (at most 3 s) for an event that a thread of the facade emits later.
fn eventually(from: usize, name: &str, want: &[(&str, &str)]) -> Captured {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        if let Some(e) = since(from).into_iter().find(|e| e.name == name && e.has(want)) {
            return e;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    expect(&since(from), name, want)
}

/// Asserts that `e` has each of `fields` (whatever their values).
fn fields(e: &Captured, fields: &[&str]) {
    for f in fields {
        assert!(e.get(f).is_some(), "{} has no field {f}: {e:#?}", e.name);
    }
}

/// The README's table: each event's target and level.
fn table(name: &str) -> (&'static str, Level) {
    const NCCL: &str = "nccl_trampoline::nccl";
    const LAUNCH: &str = "nccl_trampoline::launch";
    match name {
        "library.loaded" => (NCCL, Level::INFO),
        "library.refused" => (NCCL, Level::DEBUG),
        "creation.begun" | "creation.done" | "creation.dropped" | "creation.returned_late" | "creation.stopped" => {
            (NCCL, Level::INFO)
        }
        "creation.failed" | "creation.leaked" => (NCCL, Level::WARN),
        "abort.requested" => (NCCL, Level::WARN),
        "abort.pending" => (NCCL, Level::WARN),
        "abort.done" => (NCCL, Level::INFO),
        "abort.timed_out" => (NCCL, Level::ERROR),
        "comm.revoked" => (NCCL, Level::INFO),
        "comm.call_abandoned" | "teardown.finalize_failed" => (NCCL, Level::WARN),
        "watchdog.started" => (NCCL, Level::INFO),
        "watchdog.report" => (NCCL, Level::ERROR),
        "launch.world" | "launch.route" => (LAUNCH, Level::INFO),
        "rendezvous.listening" | "rendezvous.served" | "rendezvous.fetching" | "rendezvous.fetched" => {
            (LAUNCH, Level::INFO)
        }
        "rendezvous.rank_served"
        | "rendezvous.retry"
        | "rendezvous.connect_failed"
        | "rendezvous.file_removed"
        | "rendezvous.denied"
        | "rendezvous.wrong_rank" => (LAUNCH, Level::DEBUG),
        "rendezvous.accepted" | "rendezvous.connect_refused" => (LAUNCH, Level::TRACE),
        "rendezvous.fetch_failed" | "rendezvous.fetch_timed_out" => (LAUNCH, Level::WARN),
        "rendezvous.missing_ranks" => (LAUNCH, Level::ERROR),
        "rendezvous.file_published" | "rendezvous.file_read" => (LAUNCH, Level::INFO),
        "rendezvous.file_refused" | "rendezvous.file_timed_out" => (LAUNCH, Level::WARN),
        other => panic!("{other} is not in the README's table"),
    }
}

// ---- what no event may carry ------------------------------------------------------------------

/// The secrets of this process's runs: unique ids (their bytes and fingerprints), the
/// rendezvous secrets and keys, job ids, `NCCL_COMM_ID` addresses.
static SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records an id whose bytes no event may show, in any rendering.
fn secret_id(id: &UniqueId) {
    let b = id.as_bytes();
    let mut s = SECRETS.lock().unwrap_or_else(PoisonError::into_inner);
    s.push(id.fingerprint());
    // Every window of 6 bytes: a part of the id is as bad as the whole.
    for w in b.windows(6) {
        s.push(w.iter().map(|x| format!("{x:02x}")).collect());
        s.push(w.iter().map(|x| format!("{x:02X}")).collect());
        for sep in [":", " ", "-", ", "] {
            s.push(w.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(sep));
        }
        s.push(w.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "));
        s.push(w.iter().map(|&x| (x as i8).to_string()).collect::<Vec<_>>().join(", "));
        if w.iter().all(|x| x.is_ascii_graphic()) {
            s.push(String::from_utf8_lossy(w).into_owned());
        }
    }
    s.push(format!("{:?}", &b[..]));
}

/// Records a secret string and the rendezvous key made from it.
fn secret_text(text: &str) {
    use hmac::{Hmac, Mac};
    let mut m = <Hmac<sha2::Sha256> as Mac>::new_from_slice(b"nccl-trampoline rendezvous key v2").unwrap();
    m.update(text.as_bytes());
    let key: Vec<u8> = m.finalize().into_bytes().to_vec();
    let mut s = SECRETS.lock().unwrap_or_else(PoisonError::into_inner);
    s.push(text.to_string());
    s.push(key.iter().map(|x| format!("{x:02x}")).collect());
    s.push(format!("{:?}", &key[..6]).trim_end_matches(']').to_string());
}

/// No event captured so far shows a recorded secret in any field.
fn no_secret_anywhere() {
    let events = since(0);
    let secrets = SECRETS.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert!(!events.is_empty());
    for e in &events {
        for (k, v) in &e.fields {
            for s in &secrets {
                assert!(!v.contains(s.as_str()), "event {} field {k} = {v:?} shows the secret {s:?}", e.name);
            }
        }
    }
}

// ---- helpers -----------------------------------------------------------------------------------

const DEADLINE: Duration = Duration::from_millis(1000);

fn timeouts(limit: Duration) -> Timeouts {
    Timeouts { create: Some(limit), operation: Some(limit), teardown: Some(limit) }
}

fn stand_in() -> (Nccl, Log) {
    capture();
    secret_id(&id());
    load(23203)
}

fn comm(nccl: &Nccl, ranks: i32, config: Option<Config>) -> Communicator {
    let mut options = CommOptions::new().timeouts(timeouts(DEADLINE));
    if let Some(c) = config {
        options = options.config(c);
    }
    Communicator::init_rank_with(nccl, ranks, &id(), 0, &options).expect("init")
}

fn nonblocking(limit: Duration) -> CommOptions {
    CommOptions::new().config(Config::new().blocking(false)).timeouts(timeouts(limit))
}

fn all_reduce(c: &Communicator, count: usize, stream: usize) -> Result<(), Error> {
    // SAFETY: the stand-ins only record pointers; the stream is a made-up handle.
    unsafe {
        c.all_reduce_raw(
            16 as *const c_void,
            16 as *mut c_void,
            count,
            DataType::FLOAT32,
            RedOp::SUM,
            stream as *mut c_void,
        )
    }
}

/// Sets an environment variable for one test (tests are serialized) and removes it after.
struct EnvVar(&'static str);

impl EnvVar {
    fn set(name: &'static str, value: &str) -> Self {
        std::env::set_var(name, value);
        EnvVar(name)
    }
}

impl Drop for EnvVar {
    fn drop(&mut self) {
        std::env::remove_var(self.0);
    }
}

// ---- the events --------------------------------------------------------------------------------

#[test]
fn a_library_load_says_what_was_loaded_from_where_and_what_was_refused_why() {
    let _g = serial();
    let from = mark();
    let (nccl, _log) = stand_in();
    let path = nccl.path().display().to_string();
    let e = expect(&since(from), "library.loaded", &[("version", "2.32.3"), ("source", "the path given")]);
    assert_eq!((e.get("path"), e.get("flavor")), (Some(path.as_str()), Some("NCCL")));

    let from = mark();
    assert!(Nccl::load_from("/nonexistent/libnccl.so.2").is_err());
    let e = expect(&since(from), "library.refused", &[("path", "/nonexistent/libnccl.so.2")]);
    assert!(e.get("reason").is_some_and(|r| r.contains("no such file")), "{e:#?}");

    // Discovery: the variable's library, and a variable naming nothing.
    let from = mark();
    let _env = EnvVar::set("NCCL_TRAMPOLINE_LIBRARY", &path);
    assert!(Nccl::discover().result.is_ok());
    expect(&since(from), "library.loaded", &[("path", &path), ("source", "NCCL_TRAMPOLINE_LIBRARY")]);
    let _env = EnvVar::set("NCCL_TRAMPOLINE_LIBRARY", "/nonexistent/elsewhere/libnccl.so.2");
    assert!(Nccl::discover().result.is_err());
    expect(&since(from), "library.refused", &[("source", "NCCL_TRAMPOLINE_LIBRARY")]);
    no_secret_anywhere();
}

#[test]
fn creations_report_begun_done_and_their_facts() {
    let _g = serial();
    let (nccl, log) = stand_in();
    log.set("late_ms", 20);
    let from = mark();
    let c = comm(&nccl, 2, None);
    let events = since(from);
    let begun = expect(
        &events,
        "creation.begun",
        &[
            ("function", "init"),
            ("operation", "ncclCommInitRank"),
            ("nranks", "2"),
            ("rank", "0"),
            ("nonblocking", "false"),
            ("communicators", "1"),
            ("create_timeout", "1s"),
            ("operation_timeout", "1s"),
            ("teardown_timeout", "1s"),
        ],
    );
    fields(&begun, &["message"]);
    let done =
        expect(&events, "creation.done", &[("function", "init"), ("nranks", "2"), ("rank", "0"), ("device", "0")]);
    fields(&done, &["took_ms", "nonblocking", "made"]);

    let from = mark();
    let _child = c.split(0, 0, None).unwrap().expect("a child");
    let _none = c.split(-1, 0, None).unwrap();
    let shrunk = c.shrink(&[1], None, ShrinkMode::Default).unwrap();
    let all = Communicator::init_all(&nccl, &[0, 1]).unwrap();
    let nb = Communicator::init_rank_with(&nccl, 2, &id(), 1, &nonblocking(DEADLINE)).unwrap();
    let events = since(from);
    expect(&events, "creation.begun", &[("function", "split"), ("operation", "ncclCommSplit"), ("nranks", "2")]);
    expect(&events, "creation.done", &[("function", "split"), ("made", "true"), ("nranks", "1")]);
    expect(&events, "creation.done", &[("function", "split"), ("made", "false")]);
    expect(&events, "creation.begun", &[("function", "shrink"), ("operation", "ncclCommShrink")]);
    expect(&events, "creation.done", &[("function", "shrink"), ("nranks", "1")]);
    let b = expect(&events, "creation.begun", &[("function", "init_all"), ("nranks", "2"), ("communicators", "2")]);
    assert_eq!(b.get("rank"), None, "init_all has no one rank");
    expect(&events, "creation.done", &[("function", "init_all"), ("rank", "0"), ("device", "0")]);
    expect(&events, "creation.done", &[("function", "init_all"), ("rank", "1"), ("device", "1")]);
    expect(&events, "creation.begun", &[("function", "init"), ("nonblocking", "true"), ("rank", "1")]);
    expect(&events, "creation.done", &[("function", "init"), ("nonblocking", "true"), ("device", "1")]);
    drop((shrunk, all, nb, c));
    no_secret_anywhere();
}

#[test]
fn creations_that_fail_or_are_given_up_say_so_and_what_became_of_the_handle() {
    let _g = serial();
    let (nccl, log) = stand_in();

    // An NCCL error.
    let from = mark();
    log.fail_next(2, "a socket closed");
    let err = Communicator::init_rank_with(&nccl, 2, &id(), 0, &CommOptions::new()).unwrap_err();
    let e = expect(&since(from), "creation.failed", &[("function", "init"), ("outcome", "error")]);
    // The error without NCCL's own last-error text (it may name the bootstrap root's address).
    assert!(err.to_string().contains("a socket closed"), "{err}");
    let shown = e.get("error").unwrap_or_default();
    assert!(shown.starts_with("ncclCommInitRank") && shown.contains("failed"), "{shown}");
    assert!(!shown.contains("a socket closed"), "{shown}");
    fields(&e, &["waited_ms", "left_to_thread", "nranks", "rank"]);

    // A blocking init past its deadline: abandoned, then aborted by its thread when it returns.
    log.set("block_ms", 400);
    let from = mark();
    let limit = Duration::from_millis(100);
    let options = CommOptions::new().timeouts(timeouts(limit));
    assert!(matches!(Communicator::init_rank_with(&nccl, 2, &id(), 0, &options), Err(Error::Timeout { .. })));
    expect(&since(from), "creation.failed", &[("outcome", "deadline"), ("left_to_thread", "true")]);
    eventually(from, "creation.returned_late", &[("function", "init"), ("operation", "ncclCommInitRank")]);
    let stopped = eventually(from, "creation.stopped", &[("function", "init"), ("aborted", "1")]);
    fields(&stopped, &["cause", "never_stored", "job_joined"]);
    eventually(from, "abort.done", &[]);
    log.set("block_ms", 0);

    // A non-blocking init past its deadline: aborted before the error returns.
    log.set("hang_init", 1);
    let from = mark();
    assert!(Communicator::init_rank_with(&nccl, 2, &id(), 0, &nonblocking(limit)).is_err());
    let events = since(from);
    expect(&events, "creation.failed", &[("outcome", "deadline"), ("left_to_thread", "false")]);
    let stopped = expect(&events, "creation.stopped", &[("operation", "ncclCommInitRankConfig"), ("aborted", "1")]);
    assert!(stopped.get("cause").is_some_and(|c| c.contains("timed out")), "{stopped:#?}");

    // Cancelled through the creation's abort handle.
    let from = mark();
    let pending = Communicator::begin_init_rank(&nccl, 2, &id(), 0, &nonblocking(Duration::from_secs(30))).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    pending.abort_handle().unwrap().abort().unwrap();
    assert!(pending.wait().is_err());
    let events = since(from);
    expect(&events, "abort.requested", &[("by", "abort handle"), ("cause", "by request")]);
    expect(&events, "creation.failed", &[("outcome", "aborted")]);
    log.set("hang_init", 0);

    // Dropped unfinished: a non-blocking one is aborted before drop returns...
    log.set("late_ms", 300);
    let from = mark();
    let pending = Communicator::begin_init_rank(&nccl, 2, &id(), 0, &nonblocking(DEADLINE)).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    drop(pending);
    let events = since(from);
    expect(&events, "creation.dropped", &[("function", "init"), ("left_to_thread", "false")]);
    expect(&events, "creation.stopped", &[("aborted", "1")]);
    // ... a blocking one is left to its thread, which aborts what NCCL hands back.
    log.set("block_ms", 300);
    let from = mark();
    let pending = Communicator::begin_init_rank(&nccl, 2, &id(), 0, &CommOptions::new()).unwrap();
    drop(pending);
    expect(&since(from), "creation.dropped", &[("stage", "calling"), ("left_to_thread", "true")]);
    eventually(from, "creation.returned_late", &[]);
    eventually(from, "creation.stopped", &[("aborted", "1")]);
    log.set("block_ms", 0);

    // A library that stores the handle only after ncclInProgress, given up first: the slot
    // stays allocated for good.
    log.set("late_handle", 1);
    log.set("late_ms", 400);
    let from = mark();
    assert!(Communicator::init_rank_with(&nccl, 2, &id(), 0, &nonblocking(limit)).is_err());
    let leaked = expect(&since(from), "creation.leaked", &[("what", "slots")]);
    fields(&leaked, &["function", "operation", "slots"]);
    std::thread::sleep(Duration::from_millis(500)); // the late store has happened
    no_secret_anywhere();
}

#[test]
fn aborts_revokes_and_teardown_timeouts_are_reported() {
    let _g = serial();
    let (nccl, log) = stand_in();

    // A plain abort through a handle, and Communicator::abort.
    let from = mark();
    let c = comm(&nccl, 2, None);
    c.abort_handle().abort().unwrap();
    let c2 = comm(&nccl, 2, None);
    c2.abort().unwrap();
    let events = since(from);
    let r = expect(&events, "abort.requested", &[("by", "abort handle"), ("rank", "0"), ("state", "ready")]);
    fields(&r, &["cause"]);
    expect(&events, "abort.requested", &[("by", "caller")]);
    let done = expect(&events, "abort.done", &[("rank", "0")]);
    assert!(done.get("state").is_some_and(|s| s.starts_with("aborted")), "{done:#?}");
    assert!(done.get("result").is_some_and(|s| s.contains("Ok")), "{done:#?}");

    // Pending behind a blocking call that holds the communicator, run when it returns.
    let c = comm(&nccl, 2, None);
    c.set_timeouts(Timeouts { teardown: Some(Duration::from_millis(100)), ..timeouts(DEADLINE) });
    let handle = c.abort_handle();
    log.hang_in("ncclAllReduce");
    let from = mark();
    let caller = std::thread::spawn(move || {
        let r = all_reduce(&c, 4, 0x91);
        (r, c)
    });
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(handle.abort(), Err(Error::AbortPending));
    log.release_hang();
    let (_, c) = caller.join().unwrap();
    expect(&since(from), "abort.pending", &[("waiting_for", "an NCCL call on the communicator")]);
    eventually(from, "abort.done", &[]);
    drop(c);

    // ncclCommAbort itself does not return in time.
    let c = comm(&nccl, 2, None);
    c.set_timeouts(Timeouts { teardown: Some(Duration::from_millis(100)), ..timeouts(DEADLINE) });
    log.hang_in("ncclCommAbort");
    let from = mark();
    assert!(matches!(c.abort_handle().abort(), Err(Error::Timeout { operation: "ncclCommAbort", .. })));
    log.release_hang();
    fields(&expect(&since(from), "abort.timed_out", &[("rank", "0")]), &["waited_ms"]);
    drop(c);

    // Revoke.
    let from = mark();
    let c = comm(&nccl, 2, None);
    c.revoke().unwrap();
    fields(&expect(&since(from), "comm.revoked", &[("rank", "0"), ("nonblocking", "false")]), &["result"]);
    drop(c);

    // Finalize and destroy that do not return at drop: blocking, left to their threads...
    let limit = Duration::from_millis(200);
    let c = comm(&nccl, 2, None);
    c.set_timeouts(timeouts(limit));
    log.hang_in("ncclCommFinalize");
    let from = mark();
    drop(c);
    log.release_hang();
    let events = since(from);
    expect(&events, "comm.call_abandoned", &[("operation", "ncclCommFinalize"), ("rank", "0")]);
    expect(&events, "teardown.finalize_failed", &[("then", "lost")]);
    let c = comm(&nccl, 2, None);
    c.set_timeouts(timeouts(limit));
    log.hang_in("ncclCommDestroy");
    let from = mark();
    drop(c);
    log.release_hang();
    fields(&expect(&since(from), "comm.call_abandoned", &[("operation", "ncclCommDestroy")]), &["waited_ms"]);
    // ... non-blocking: the finalize is polled to its deadline, then the communicator aborted.
    log.set("late_ms", 20);
    let c = Communicator::init_rank_with(&nccl, 2, &id(), 0, &nonblocking(limit)).unwrap();
    log.set("late_ms", 60_000);
    let from = mark();
    drop(c);
    let events = since(from);
    expect(&events, "teardown.finalize_failed", &[("then", "abort")]);
    let r = expect(&events, "abort.requested", &[("by", "drop")]);
    assert!(r.get("cause").is_some_and(|c| c.contains("ncclCommFinalize timed out")), "{r:#?}");
    // A failed communicator at drop.
    log.set("late_ms", 20);
    let c = comm(&nccl, 2, None);
    log.fail_next(2, "a socket closed");
    assert!(all_reduce(&c, 4, 0x92).is_err());
    let from = mark();
    drop(c);
    let r = expect(&since(from), "abort.requested", &[("by", "drop")]);
    assert!(r.get("state").is_some_and(|s| s.starts_with("failed")), "{r:#?}");
    no_secret_anywhere();
}

#[test]
fn the_watchdog_reports_its_start_and_what_it_acted_on() {
    let _g = serial();
    let (nccl, log) = stand_in();
    let c = comm(&nccl, 2, None);
    let from = mark();
    c.start_watchdog(WatchdogConfig::new(Duration::from_millis(300))).unwrap();
    let stream = FakeStream::new(0x81);
    all_reduce(&c, 8, 0x81).unwrap();
    c.wait(&stream).unwrap();
    log.set("hang_collective", 1);
    all_reduce(&c, 1234, 0x81).unwrap();
    assert!(c.wait(&stream).is_err());
    let events = since(from);
    let started = expect(
        &events,
        "watchdog.started",
        &[("rank", "0"), ("nranks", "2"), ("device", "0"), ("timeout_ms", "300.0"), ("action", "Abort")],
    );
    fields(&started, &["poll_ms"]);
    let report = expect(
        &events,
        "watchdog.report",
        &[
            ("operation", "ncclAllReduce"),
            ("sequence", "2"),
            ("count", "1234"),
            ("data_type", "7"),
            ("problem", "NotFinished"),
            ("action", "Abort"),
        ],
    );
    fields(&report, &["waited_ms", "report"]);
    assert_eq!(report.get("peer"), None, "an all-reduce has no peer");
    let r = expect(&events, "abort.requested", &[("by", "watchdog")]);
    assert!(r.get("cause").is_some_and(|c| c.starts_with("by the watchdog")), "{r:#?}");
    eventually(from, "abort.done", &[]);
    no_secret_anywhere();
}

#[test]
fn the_tcp_rendezvous_reports_each_step_and_never_the_id_or_the_key() {
    let _g = serial();
    capture();
    let secret = RendezvousKey::random_secret().unwrap();
    secret_text(&secret);
    let key = RendezvousKey::from_secret(secret.as_bytes());
    let id = UniqueId::from_bytes(&std::array::from_fn::<u8, 128, _>(|i| (i as u8).wrapping_mul(29) ^ 0xa5)).unwrap();
    secret_id(&id);

    let from = mark();
    let root = TcpRoot::bind_loopback(key.clone()).unwrap();
    let addr = root.local_addr().unwrap();
    let served = {
        let id = id.clone();
        std::thread::spawn(move || root.serve(&id, 1..2, Duration::from_secs(10)))
    };
    // Another key: denied; a rank not served: refused; then the rank.
    let wrong = RendezvousKey::from_secret(b"another job");
    assert!(rendezvous::fetch_tcp(addr, &wrong, 1, Duration::from_secs(5)).is_err());
    assert!(rendezvous::fetch_tcp(addr, &key, 7, Duration::from_secs(5)).is_err());
    assert_eq!(rendezvous::fetch_tcp(addr, &key, 1, Duration::from_secs(5)).unwrap(), id);
    served.join().unwrap().unwrap();
    let events = since(from);
    let addr_text = addr.to_string();
    let l = expect(&events, "rendezvous.listening", &[("address", &addr_text), ("ranks", "1"), ("first_rank", "1")]);
    fields(&l, &["timeout"]);
    expect(&events, "rendezvous.accepted", &[]);
    expect(&events, "rendezvous.denied", &[("rank", "1")]);
    expect(&events, "rendezvous.wrong_rank", &[("rank", "7")]);
    expect(&events, "rendezvous.rank_served", &[("rank", "1")]);
    expect(&events, "rendezvous.served", &[("served", "1"), ("refused", "1"), ("wrong_rank", "1")]);
    expect(&events, "rendezvous.fetching", &[("root", &addr_text), ("rank", "1")]);
    let failed = expect(&events, "rendezvous.fetch_failed", &[("rank", "1")]);
    assert!(failed.get("error").is_some_and(|e| e.contains("authentication")), "{failed:#?}");
    expect(&events, "rendezvous.fetch_failed", &[("rank", "7")]);
    fields(&expect(&events, "rendezvous.fetched", &[("root", &addr_text), ("rank", "1")]), &["took_ms"]);

    // Nobody listening: refused, then the deadline; a root nobody comes to.
    let from = mark();
    let closed = TcpRoot::bind_loopback(key.clone()).unwrap().local_addr().unwrap();
    assert!(rendezvous::fetch_tcp(closed, &key, 1, Duration::from_millis(150)).is_err());
    let lonely = TcpRoot::bind_loopback(key.clone()).unwrap();
    assert!(lonely.serve(&id, 1..3, Duration::from_millis(100)).is_err());
    let events = since(from);
    expect(&events, "rendezvous.connect_refused", &[("rank", "1")]);
    fields(&expect(&events, "rendezvous.fetch_timed_out", &[("rank", "1")]), &["waited_ms", "error"]);
    let missing = expect(&events, "rendezvous.missing_ranks", &[("served", "0")]);
    assert!(missing.get("error").is_some_and(|e| e.contains("2 rank(s) never fetched")), "{missing:#?}");

    // A peer that closes every connection at once: each attempt is retried until the deadline.
    let from = mark();
    let closer = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = closer.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        closer.set_nonblocking(true).unwrap();
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(400) {
            match closer.accept() {
                Ok((stream, _)) => drop(stream),
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    });
    assert!(rendezvous::fetch_tcp(at, &key, 1, Duration::from_millis(200)).is_err());
    server.join().unwrap();
    let events = since(from);
    let retry = expect(&events, "rendezvous.retry", &[("root", &at.to_string()), ("rank", "1")]);
    // Closed or reset, as the timing has it.
    assert!(retry.get("error").is_some_and(|e| e.contains("the root")), "{retry:#?}");
    let timed_out = expect(&events, "rendezvous.fetch_timed_out", &[("root", &at.to_string())]);
    assert!(timed_out.get("error").is_some_and(|e| e.contains("last failure")), "{timed_out:#?}");
    no_secret_anywhere();
}

#[test]
fn the_world_and_its_route_are_reported_without_the_job_or_the_secret() {
    let _g = serial();
    let (nccl, _log) = stand_in();
    let secret = RendezvousKey::random_secret().unwrap();
    secret_text(&secret);
    let job = "job-id-4711-tracing";
    secret_text(job);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let world = |rank: &str| {
        // torchrun's variables on one host, with the crate's secret and port.
        let vars: Vec<(&str, String)> = vec![
            ("RANK", rank.into()),
            ("WORLD_SIZE", "2".into()),
            ("LOCAL_RANK", rank.into()),
            ("LOCAL_WORLD_SIZE", "2".into()),
            ("MASTER_ADDR", "127.0.0.1".into()),
            ("MASTER_PORT", "1".into()),
            ("TORCHELASTIC_RUN_ID", job.into()),
            (vars::SECRET, secret.clone()),
            (vars::PORT, port.to_string()),
        ];
        World::from_vars(|k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())).unwrap()
    };
    let from = mark();
    let (w0, w1) = (world("0"), world("1"));
    let route = w0.id_route().unwrap();
    assert!(matches!(route, IdRoute::Tcp { .. }));
    let fetcher = {
        let (nccl, route) = (nccl.clone(), route.clone());
        std::thread::spawn(move || w1.unique_id(&nccl, &route, Duration::from_secs(10)))
    };
    let id0 = w0.unique_id(&nccl, &route, Duration::from_secs(10)).unwrap();
    let id1 = fetcher.join().unwrap().unwrap();
    assert_eq!(id0, id1);
    secret_id(&id0);
    let events = since(from);
    let w = expect(
        &events,
        "launch.world",
        &[("launcher", "torchrun"), ("rank", "1"), ("size", "2"), ("local_size", "2"), ("key", "secret")],
    );
    fields(&w, &["route", "local_rank", "port", "root_host"]);
    assert_eq!(w.get("route"), Some("tcp"));
    let to = format!("127.0.0.1:{port}");
    expect(&events, "launch.route", &[("route", "tcp"), ("rank", "0"), ("root", "true"), ("to", &to)]);
    expect(&events, "launch.route", &[("route", "tcp"), ("rank", "1"), ("root", "false")]);
    expect(&events, "rendezvous.served", &[("served", "1")]);
    expect(&events, "rendezvous.fetched", &[("rank", "1")]);

    // NCCL_COMM_ID: the route is named, its address (the id's, with NCCL's constant magic) never.
    let address = "127.0.0.1:45678";
    secret_text(address);
    let from = mark();
    let w = World::from_vars(|k| (k == "NCCL_COMM_ID").then(|| address.to_string())).unwrap();
    let route = w.id_route().unwrap();
    assert_eq!(route, IdRoute::NcclCommId(address.into()));
    let id = w.unique_id(&nccl, &route, Duration::from_secs(5)).unwrap();
    secret_id(&id);
    let events = since(from);
    expect(&events, "launch.world", &[("rank", "0"), ("size", "1"), ("key", "none"), ("route", "nccl-comm-id")]);
    let r = expect(&events, "launch.route", &[("route", "nccl-comm-id")]);
    assert_eq!(r.get("to"), None);
    no_secret_anywhere();
}

#[test]
fn the_file_rendezvous_reports_publication_reading_refusal_and_timeout() {
    let _g = serial();
    capture();
    let secret = RendezvousKey::random_secret().unwrap();
    secret_text(&secret);
    let key = RendezvousKey::from_secret(secret.as_bytes());
    let id = UniqueId::from_bytes(&std::array::from_fn::<u8, 128, _>(|i| (i as u8).wrapping_mul(101) ^ 0x5a)).unwrap();
    secret_id(&id);
    let dir = common::work_dir("tracing-file-rendezvous");
    let path = dir.join("id");
    let from = mark();
    rendezvous::publish_file(&path, &id, &key).unwrap();
    let not_before = SystemTime::now() - Duration::from_secs(60);
    assert_eq!(rendezvous::wait_file(&path, &key, not_before, Duration::from_secs(5)).unwrap(), id);
    rendezvous::remove_file(&path, &id, &key).unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    assert!(rendezvous::wait_file(&link, &key, not_before, Duration::from_secs(5)).is_err());
    assert!(rendezvous::wait_file(&path, &key, not_before, Duration::from_millis(50)).is_err());
    let events = since(from);
    let p = path.display().to_string();
    expect(&events, "rendezvous.file_published", &[("path", &p)]);
    fields(&expect(&events, "rendezvous.file_read", &[("path", &p)]), &["waited_ms"]);
    expect(&events, "rendezvous.file_removed", &[("path", &p)]);
    let refused = expect(&events, "rendezvous.file_refused", &[("path", &link.display().to_string())]);
    assert!(refused.get("reason").is_some_and(|r| r.contains("symbolic link")), "{refused:#?}");
    expect(&events, "rendezvous.file_timed_out", &[("path", &p), ("seen", "no file")]);
    no_secret_anywhere();
}

#[test]
fn a_plugin_s_log_lines_become_events_at_the_mapped_level() {
    use nccl_trampoline::plugin::host::logger::Logger;
    let _g = serial();
    capture();
    let logger = Logger::new(false).unwrap();
    let f = logger.as_c().0.unwrap();
    let from = mark();
    // SAFETY: the logger's C type; the arguments match each format's conversions.
    unsafe {
        f(2, 0x11, c"net.cc".as_ptr(), 225, c"dev %d %s".as_ptr(), 7, c"lo".as_ptr());
        f(3, 0x4000, c"prof.cc".as_ptr(), 12, c"%s".as_ptr(), c"chatter".as_ptr());
        f(4, 0x1, c"init.cc".as_ptr(), 1, c"fatal".as_ptr());
        f(5, 0x10000, c"t.cc".as_ptr(), 2, c"trace %u".as_ptr(), 3u32);
    }
    let events = since(from);
    let target = "nccl_trampoline::plugin";
    let cases = [
        (Level::WARN, "WARN", "INIT|NET", "dev 7 lo"),
        (Level::DEBUG, "INFO", "PROFILE", "chatter"),
        (Level::ERROR, "ABORT", "INIT", "fatal"),
        (Level::TRACE, "TRACE", "0x10000", "trace 3"),
    ];
    for (level, nccl_level, subsystem, text) in cases {
        let e = events
            .iter()
            .find(|e| e.name == "plugin.log" && e.get("message") == Some(text))
            .unwrap_or_else(|| panic!("no plugin.log {text:?}: {events:#?}"));
        assert_eq!((e.target.as_str(), e.level), (target, level), "{e:#?}");
        assert!(e.has(&[("nccl_level", nccl_level), ("subsystem", subsystem), ("malformed", "false")]), "{e:#?}");
        fields(e, &["file", "line", "flags", "level_code"]);
    }
    assert_eq!(logger.take().len(), 4, "the lines are still kept for the host's readers");
    no_secret_anywhere();
}

/// The checker itself sees a leak: an event that shows an id's bytes as a decimal list, and one
/// with its hex, are caught.
#[test]
fn the_secret_check_catches_an_id_in_an_event() {
    let _g = serial();
    capture();
    let leaked =
        UniqueId::from_bytes(&std::array::from_fn::<u8, 128, _>(|i| (i as u8).wrapping_mul(53) ^ 0x17)).unwrap();
    let from = mark();
    tracing::info!(target: "leak_control", bytes = ?&leaked.as_bytes()[20..40], "a careless event");
    tracing::info!(target: "leak_control", hex = %leaked.as_bytes()[90..100].iter().map(|b| format!("{b:02x}")).collect::<String>(), "another");
    let events: Vec<Captured> = since(from).into_iter().filter(|e| e.target == "leak_control").collect();
    assert_eq!(events.len(), 2);
    let known = SECRETS.lock().unwrap_or_else(PoisonError::into_inner).len();
    secret_id(&leaked);
    // This id's renderings are this test's alone: taken back out of the list.
    let secrets = SECRETS.lock().unwrap_or_else(PoisonError::into_inner).split_off(known);
    for e in &events {
        let shown = e.fields.iter().any(|(_, v)| secrets.iter().any(|s| v.contains(s.as_str())));
        assert!(shown, "the check misses {e:#?}");
    }
    // And the careless events out of the record the other tests check.
    capture().events.lock().unwrap_or_else(PoisonError::into_inner).retain(|e| e.target != "leak_control");
}
