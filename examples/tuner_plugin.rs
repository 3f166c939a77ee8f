//! A tuner plugin for NCCL in Rust, on the crate's declaration of the table
//! (`nccl_trampoline::plugin::tuner::TunerV5`): a shared library that exports
//! `ncclTunerPlugin_v5`, the newest version NCCL 2.28 knows (2.28 to 2.32 load it).
//!
//! ```text
//! cargo build --release --example tuner_plugin     # target/release/examples/libtuner_plugin.so
//! NCCL_TUNER_PLUGIN=$PWD/target/release/examples/libtuner_plugin.so \
//! NCCL_TRAMPOLINE_TUNER_CHOICE=ring,simple NCCL_TRAMPOLINE_TUNER_OUT=/tmp/tuner.txt \
//! NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,TUNING <a program of two ranks or more>
//! ```
//!
//! - `init` logs `rust tuner: init nRanks=.. nNodes=..` through NCCL's logger.
//! - `getCollInfo` makes the algorithm and protocol named by `NCCL_TRAMPOLINE_TUNER_CHOICE`
//!   (`ring,simple`, `tree,ll`: NCCL's names, any case) the cheapest by setting its cost to 0,
//!   unless NCCL marked it unusable for this collective (`NCCL_ALGO_PROTO_IGNORE`); unset, it
//!   leaves NCCL's choice. It counts its calls and logs each decision at INFO.
//! - `finalize` appends `calls=<n> choice=<algo,proto>` to the file `NCCL_TRAMPOLINE_TUNER_OUT`.
//!
//! The plugin's lines carry the INIT and TUNING flags, so that `NCCL_DEBUG=INFO` alone shows
//! them (NCCL's default subsystems are INIT, BOOTSTRAP and ENV: v2.28.3-1 src/debug.cc:44);
//! NCCL's own line of the algorithm it used, `AllReduce: 1048576 Bytes -> Algo Ring proto
//! Simple ...`, is TUNING only (v2.28.3-1 src/enqueue.cc:723-726). NCCL never asks a tuner
//! about a one-rank communicator's collectives (v2.28.3-1 src/enqueue.cc:2552-2554).
//!
//! Nothing here unwinds into NCCL: every entry catches panics and answers `ncclInternalError`.
#![allow(non_upper_case_globals)]

use std::ffi::{c_int, c_void};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

use nccl_trampoline::plugin::tuner::{
    self, Func, NvlDomainInfoV5, TunerConstantsV5, TunerV5, ALGORITHM_NAMES, ALGO_PROTO_IGNORE, PROTOCOL_NAMES,
};
use nccl_trampoline::plugin::{DebugLogger, LogLevel, NcclResult, Subsystem};

/// The variable that names the algorithm and protocol to pick.
const CHOICE_VAR: &str = "NCCL_TRAMPOLINE_TUNER_CHOICE";
/// The variable that names the file `finalize` appends to.
const OUT_VAR: &str = "NCCL_TRAMPOLINE_TUNER_OUT";

/// The table NCCL looks up (`dlsym(lib, "ncclTunerPlugin_v5")`, v2.28.3-1
/// src/plugin/tuner/tuner_v5.cc:15).
#[no_mangle]
pub static ncclTunerPlugin_v5: TunerV5 = TunerV5 {
    name: c"nccl-trampoline-rust-tuner".as_ptr(),
    init: Some(init),
    getCollInfo: Some(get_coll_info),
    finalize: Some(finalize),
};

/// One communicator's tuner: what `init` puts in NCCL's context pointer.
struct Tuner {
    log: DebugLogger,
    /// The algorithm and protocol to pick, as indices of the cost table.
    choice: Option<(c_int, c_int)>,
    calls: AtomicU64,
}

impl Tuner {
    fn log(&self, level: LogLevel, message: &str) {
        let flags = Subsystem(Subsystem::INIT.0 | Subsystem::TUNING.0);
        // SAFETY: the logger NCCL passed to `init` (ncclDebugLog, which lives as long as
        // libnccl), or none.
        unsafe { self.log.log(level, flags, c"tuner_plugin", line!() as c_int, message) }
    }

    fn choice_name(&self) -> String {
        match self.choice {
            Some((a, p)) => format!(
                "{},{}",
                ALGORITHM_NAMES[a as usize].to_ascii_lowercase(),
                PROTOCOL_NAMES[p as usize].to_ascii_lowercase()
            ),
            None => "none".to_string(),
        }
    }
}

/// `ring,simple` into its indices; `Err` says what is wrong.
fn parse_choice(text: &str) -> Result<(c_int, c_int), String> {
    let (algo, proto) = text.split_once(',').ok_or_else(|| format!("`{text}` is not `<algorithm>,<protocol>`"))?;
    let a = tuner::algorithm_by_name(algo)
        .ok_or_else(|| format!("no algorithm `{}` (NCCL's: {})", algo.trim(), ALGORITHM_NAMES.join(", ")))?;
    let p = tuner::protocol_by_name(proto)
        .ok_or_else(|| format!("no protocol `{}` (NCCL's: {})", proto.trim(), PROTOCOL_NAMES.join(", ")))?;
    Ok((a, p))
}

/// Runs an entry's body, turning a panic into `ncclInternalError` (a panic must not unwind
/// through NCCL's C frames).
fn guarded(body: impl FnOnce() -> NcclResult) -> NcclResult {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(NcclResult::INTERNAL_ERROR)
}

/// `init` (tuner_v5.h:53-54): called once per communicator, after its topology is known
/// (v2.28.3-1 src/init.cc:1307-1310).
unsafe extern "C" fn init(
    ctx: *mut *mut c_void,
    _comm_id: u64,
    n_ranks: usize,
    n_nodes: usize,
    log: DebugLogger,
    _nvl_domain_info: *mut NvlDomainInfoV5,
    _constants: *mut TunerConstantsV5,
) -> NcclResult {
    guarded(|| {
        if ctx.is_null() {
            return NcclResult::INVALID_ARGUMENT;
        }
        let mut tuner = Tuner { log, choice: None, calls: AtomicU64::new(0) };
        tuner.log(LogLevel::INFO, &format!("rust tuner: init nRanks={n_ranks} nNodes={n_nodes}"));
        match std::env::var(CHOICE_VAR) {
            Ok(text) if !text.trim().is_empty() => match parse_choice(&text) {
                Ok(choice) => {
                    tuner.choice = Some(choice);
                    tuner.log(LogLevel::INFO, &format!("rust tuner: {CHOICE_VAR}={} wanted", tuner.choice_name()));
                }
                Err(why) => tuner.log(LogLevel::WARN, &format!("rust tuner: {CHOICE_VAR} ignored: {why}")),
            },
            _ => tuner.log(LogLevel::INFO, &format!("rust tuner: {CHOICE_VAR} unset, NCCL chooses")),
        }
        // SAFETY: ctx is NCCL's `&comm->tunerContext` (not NULL: checked above).
        unsafe { *ctx = Box::into_raw(Box::new(tuner)).cast() };
        NcclResult::SUCCESS
    })
}

/// `getCollInfo` (tuner_v5.h:78-80), called for each collective (or group of aggregated ones)
/// NCCL schedules, with the cost table it has just filled (v2.28.3-1 src/enqueue.cc:1916-1929).
unsafe extern "C" fn get_coll_info(
    context: *mut c_void,
    coll_type: Func,
    n_bytes: usize,
    num_pipe_ops: c_int,
    coll_cost_table: *mut *mut f32,
    num_algo: c_int,
    num_proto: c_int,
    _reg_buff: c_int,
    _n_channels: *mut c_int,
) -> NcclResult {
    guarded(|| {
        if context.is_null() {
            return NcclResult::SUCCESS;
        }
        // SAFETY: the context `init` made for this communicator, alive until `finalize`.
        let tuner = unsafe { &*context.cast::<Tuner>() };
        let n = tuner.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let what = format!(
            "rust tuner: call {n}: {} {n_bytes} bytes ({num_pipe_ops} op(s))",
            coll_type.name().unwrap_or("(unknown collective)")
        );
        let Some((a, p)) = tuner.choice else {
            tuner.log(LogLevel::INFO, &format!("{what}: NCCL's choice"));
            return NcclResult::SUCCESS;
        };
        let name = format!("{}/{}", ALGORITHM_NAMES[a as usize], PROTOCOL_NAMES[p as usize]);
        if coll_cost_table.is_null() {
            tuner.log(LogLevel::WARN, &format!("{what}: no cost table, NCCL's choice"));
            return NcclResult::SUCCESS;
        }
        if a >= num_algo || p >= num_proto {
            tuner.log(
                LogLevel::INFO,
                &format!("{what}: {name} not in NCCL's {num_algo}x{num_proto} table, NCCL's choice"),
            );
            return NcclResult::SUCCESS;
        }
        // The table is `float[numAlgo][numProto]` passed as `float**` (v2.28.3-1
        // src/enqueue.cc:1916, 1925-1927): entry [a][p] is float number a * numProto + p.
        // SAFETY: NCCL's table of num_algo * num_proto floats; a < num_algo, p < num_proto,
        // both non-negative (indices of the name lists).
        let cost = unsafe { &mut *coll_cost_table.cast::<f32>().add(a as usize * num_proto as usize + p as usize) };
        if *cost == ALGO_PROTO_IGNORE {
            tuner.log(LogLevel::INFO, &format!("{what}: {name} unavailable for it, NCCL's choice"));
        } else {
            tuner.log(LogLevel::INFO, &format!("{what}: {name} (cost {:.1} us -> 0)", *cost));
            *cost = 0.0;
        }
        NcclResult::SUCCESS
    })
}

/// `finalize` (tuner_v5.h:84), when the communicator is freed (v2.28.3-1 src/init.cc:2179-2183).
unsafe extern "C" fn finalize(context: *mut c_void) -> NcclResult {
    guarded(|| {
        if context.is_null() {
            return NcclResult::SUCCESS;
        }
        // SAFETY: the Box `init` leaked for this communicator; NCCL finalises it once.
        let tuner = unsafe { Box::from_raw(context.cast::<Tuner>()) };
        let line = format!("calls={} choice={}", tuner.calls.load(Ordering::Relaxed), tuner.choice_name());
        tuner.log(LogLevel::INFO, &format!("rust tuner: finalize {line}"));
        if let Some(path) = std::env::var_os(OUT_VAR) {
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
            if let Err(e) = written {
                let path = path.to_string_lossy();
                // A report lost is no reason to fail the communicator's destruction.
                tuner.log(LogLevel::WARN, &format!("rust tuner: cannot append to {OUT_VAR}={path}: {e}"));
            }
        }
        NcclResult::SUCCESS
    })
}
