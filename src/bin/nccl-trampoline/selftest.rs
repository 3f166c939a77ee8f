//! `selftest`: the call core against the C oracle linked into this program, then the real
//! library if one is found, then a verified all-reduce across all local GPUs if any.
//!
//! The core checks need neither NCCL nor a GPU; the later stages report `skip` (not a
//! failure) when what they need is absent. The exit status is 1 if any check failed.

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};

use nccl_trampoline::nccl::{Communicator, DataType, Nccl, NcclResult, RedOp, UNIQUE_ID_BYTES};
use nccl_trampoline::{arg, Abi, Aggregate, CallPlan, Signature, Type};

use crate::args::SelftestArgs as Args;
use crate::cuda::Driver;
use crate::error::{Error as CliError, GpuStep, LibraryError};
use nccl_trampoline::oracle::{self, check_call, OracleRuntime, Pattern};

/// The tally of one run.
#[derive(Default)]
struct Report {
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl Report {
    fn pass(&mut self, what: &str) {
        self.passed += 1;
        println!("  pass  {what}");
    }
    fn fail(&mut self, what: &str) {
        self.failed += 1;
        println!("  FAIL  {what}");
    }
    fn check(&mut self, ok: bool, what: &str) {
        if ok {
            self.pass(what)
        } else {
            self.fail(what)
        }
    }
    fn skip(&mut self, what: &str) {
        self.skipped += 1;
        println!("  skip  {what}");
    }
}

#[repr(C)]
struct OracleEntry {
    name: *const c_char,
    callee: *const c_void,
    reference: *const c_void,
}

// The built-in oracle: oracle/runtime.c and generated/selftest_oracle.c, compiled by build.rs
// for this program only.
extern "C" {
    static nt_selftest_functions: [OracleEntry; 0];
    static nt_selftest_function_count: usize;
    static nt_selftest_fingerprint: u64;
    fn nt_rec_reset();
    fn nt_rec_data() -> *const u8;
    fn nt_rec_size() -> usize;
    fn nt_ret_bytes() -> *mut u8;
    fn nt_stack_alignment(a: i64, b: i64, c: i64, d: i64, e: i64, f: i64, g: i64, h: i64, i: i64) -> i64;
}

/// The linked oracle, by name.
struct BuiltInOracle {
    functions: HashMap<String, *const c_void>,
    fingerprint: u64,
}

impl BuiltInOracle {
    fn new() -> Self {
        // SAFETY: the generated C defines the table with `nt_selftest_function_count` entries
        // of static strings and function addresses, and the two constants.
        unsafe {
            let count = nt_selftest_function_count;
            let table = std::slice::from_raw_parts(nt_selftest_functions.as_ptr(), count);
            let mut functions = HashMap::new();
            for e in table {
                let name = CStr::from_ptr(e.name).to_string_lossy().into_owned();
                functions.insert(format!("ref_{name}"), e.reference);
                functions.insert(name, e.callee);
            }
            BuiltInOracle { functions, fingerprint: nt_selftest_fingerprint }
        }
    }
}

impl OracleRuntime for BuiltInOracle {
    fn sym(&self, name: &str) -> *const c_void {
        self.functions.get(name).copied().unwrap_or(std::ptr::null())
    }
    fn rec_reset(&self) {
        // SAFETY: resets a static buffer of the oracle runtime.
        unsafe { nt_rec_reset() }
    }
    fn recording(&self) -> Vec<u8> {
        // SAFETY: the runtime's buffer holds `nt_rec_size()` recorded bytes.
        unsafe { std::slice::from_raw_parts(nt_rec_data(), nt_rec_size()).to_vec() }
    }
    fn set_return_bytes(&self, bytes: &[u8]) {
        // SAFETY: the runtime's return buffer is 8 KiB; results are at most 4 KiB.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), nt_ret_bytes(), bytes.len()) }
    }
}

pub fn run(args: &Args) -> Result<bool, CliError> {
    let mut report = Report::default();
    println!("nccl-trampoline selftest ({})", nccl_trampoline::engine::TARGET);
    call_core(&mut report);
    let nccl = library(args, &mut report);
    match (&nccl, args.no_gpu) {
        (_, true) => {
            println!("\n[3/3] all-reduce across local GPUs");
            report.skip("--no-gpu");
        }
        (Some(n), false) => gpus(n, args.count as usize, &mut report),
        (None, false) => {
            println!("\n[3/3] all-reduce across local GPUs");
            report.skip("no NCCL library");
        }
    }
    println!("\n{} passed, {} failed, {} skipped", report.passed, report.failed, report.skipped);
    Ok(report.failed == 0)
}

/// Stage 1: every built-in shape, twice with different bytes, against the C caller.
fn call_core(report: &mut Report) {
    println!("\n[1/3] call core against the built-in C oracle");
    let Some(abi) = Abi::native() else {
        report.fail("this target has no trampoline");
        return;
    };
    println!("  ABI {}", abi.name());
    let oracle = BuiltInOracle::new();
    let functions = oracle::selftest_functions();
    let expected = oracle::fingerprint(&functions);
    if oracle.fingerprint != expected {
        report.fail(&format!(
            "the built-in oracle is stale (fingerprint {:#x}, shapes give {expected:#x}): regenerate generated/selftest_oracle.c",
            oracle.fingerprint
        ));
        return;
    }
    let pinned = functions.len() - oracle::SELFTEST_RANDOM;
    let mut pattern = Pattern::new(oracle::SELFTEST_SEED);
    for (label, range) in [
        (format!("{pinned} pinned shapes (the trap rules and NCCL's prototypes)"), 0..pinned),
        (
            format!("{} random signatures (seed {:#x})", oracle::SELFTEST_RANDOM, oracle::SELFTEST_SEED),
            pinned..functions.len(),
        ),
    ] {
        let mut failures = Vec::new();
        for (name, sig) in &functions[range] {
            if oracle.sym(name).is_null() {
                failures.push(format!("{name}: missing from the built-in oracle"));
                continue;
            }
            for _ in 0..2 {
                if let Err(e) = check_call(&oracle, name, sig, &mut pattern) {
                    failures.push(e);
                }
            }
        }
        for f in failures.iter().take(3) {
            println!("        {}", f.lines().next().unwrap_or(""));
        }
        report.check(failures.is_empty(), &format!("{label}: {} mismatches", failures.len()));
    }
    report.check(stack_aligned(), "stack 16-byte aligned at the call, with stack arguments");
    report.check(
        negative_control_caught(&oracle, &mut pattern),
        "negative control: two floats planned as two ints (same bytes, other registers) is caught",
    );
}

/// The comparison must be able to fail: `st_hfa_floatx2` takes and returns `struct { float
/// f[2]; }` (vector registers); planning it as `struct { int i[2]; }` puts the same bytes in
/// integer registers, which the callee never reads.
fn negative_control_caught(oracle: &BuiltInOracle, pattern: &mut Pattern) -> bool {
    let Ok(ints) = Aggregate::builder().array(Type::I32, 2).build() else { return false };
    let ints = Type::Aggregate(ints);
    let Ok(wrong) = Signature::new(vec![ints, Type::I32, ints], Some(ints)) else { return false };
    !oracle.sym("st_hfa_floatx2").is_null() && check_call(oracle, "st_hfa_floatx2", &wrong, pattern).is_err()
}

fn stack_aligned() -> bool {
    let Ok(sig) = Signature::new(vec![Type::I64; 9], Some(Type::I64)) else { return false };
    let Ok(plan) = CallPlan::new(&sig) else { return false };
    let vals: Vec<i64> = (1..=9).collect();
    let ptrs: Vec<*const c_void> = vals.iter().map(arg).collect();
    let mut r = 0i64;
    // SAFETY: nt_stack_alignment takes nine int64_t and returns int64_t.
    let called = unsafe { plan.call(nt_stack_alignment as *const c_void, &ptrs, (&mut r as *mut i64).cast()) };
    called.is_ok() && r == 45
}

/// Stage 2: the real library: version, unique id, error paths.
fn library(args: &Args, report: &mut Report) -> Option<Nccl> {
    println!("\n[2/3] the NCCL library");
    let loaded = match &args.library {
        Some(p) => Nccl::load_from(p),
        None => Nccl::discover().result,
    };
    let nccl = match loaded {
        Ok(n) => n,
        Err(nccl_trampoline::nccl::Error::LibraryNotFound { .. }) if args.library.is_none() => {
            report.skip(&format!(
                "no NCCL found ({} candidates tried; `nccl-trampoline doctor` lists them)",
                Nccl::candidates().len()
            ));
            return None;
        }
        Err(e) => {
            report.fail(&format!("loading NCCL: {e}"));
            return None;
        }
    };
    let v = nccl.version();
    report.check(
        v.major >= 2,
        &format!(
            "ncclGetVersion: {} {v} at {}{}",
            nccl.flavor(),
            nccl.path().display(),
            nccl.python_wheel().map(|w| format!(" ({w})")).unwrap_or_default()
        ),
    );
    let names: Vec<String> =
        (0..=8).map(|c| nccl.error_string(NcclResult(c)).unwrap_or_default()).filter(|s| !s.is_empty()).collect();
    report.check(names.len() == 9, &format!("ncclGetErrorString for the 9 result codes ({} texts)", names.len()));
    match (nccl.unique_id(), nccl.unique_id()) {
        (Ok(a), Ok(b)) => report.check(
            a.as_bytes() != &[0; UNIQUE_ID_BYTES] && a.as_bytes() != b.as_bytes(),
            "ncclGetUniqueId: two fresh, distinct 128-byte ids",
        ),
        (Err(e), _) | (_, Err(e)) => report.fail(&format!("ncclGetUniqueId: {e}")),
    }
    // An invalid device: NCCL itself must reject it (ncclInvalidArgument, or
    // ncclUnhandledCudaError without a GPU) and the error must carry its name.
    match Communicator::init_all(&nccl, &[-1]) {
        Err(nccl_trampoline::nccl::Error::Nccl { function, result, name, .. }) => {
            let code = result.0;
            report.check(
                function == "ncclCommInitAll" && [1, 4, 5].contains(&code) && !name.is_empty(),
                &format!("NCCL's own error for device -1: {function} -> {name} ({code})"),
            );
        }
        Err(e) => report.fail(&format!("ncclCommInitAll(device -1): unexpected error {e}")),
        Ok(_) => report.fail("ncclCommInitAll(device -1) succeeded"),
    }
    let missing = nccl.missing_symbols();
    if !missing.is_empty() {
        println!("        {} symbols newer than {v} are absent (see `doctor`)", missing.len());
    }
    Some(nccl)
}

/// Stage 3: all-reduce (sum, float32) of rank-dependent data over every visible GPU, each
/// element compared with the exact host result.
fn gpus(nccl: &Nccl, count: usize, report: &mut Report) {
    println!("\n[3/3] all-reduce across local GPUs");
    let driver = match Driver::load() {
        Ok(d) => d,
        Err(e) => return report.skip(&format!("no CUDA driver ({e})")),
    };
    let n = match driver.device_count() {
        Ok(0) | Err(_) => return report.skip("no visible GPU"),
        Ok(n) => n,
    };
    match all_reduce_on_all(nccl, &driver, n, count) {
        Ok(wrong) => report.check(
            wrong == 0,
            &format!("ncclAllReduce float32 sum, {count} elements on each of {n} GPUs: {wrong} wrong elements"),
        ),
        Err(e) => report.fail(&format!("all-reduce on {n} GPUs: {e}")),
    }
}

fn value(rank: usize, i: usize) -> f32 {
    ((rank * 7 + i * 3) % 17) as f32
}

/// The error of a CUDA `step` on `device` (rank and device are one here).
fn gpu<E: Into<LibraryError>>(device: i32, step: GpuStep) -> impl Fn(E) -> CliError {
    move |source| CliError::Gpu { rank: device as usize, device, step, source: source.into() }
}

fn collective(source: impl Into<LibraryError>) -> CliError {
    CliError::Collective { source: source.into() }
}

fn all_reduce_on_all(nccl: &Nccl, driver: &Driver, n: i32, count: usize) -> Result<usize, CliError> {
    let devices: Vec<i32> = (0..n).collect();
    let comms = Communicator::init_all(nccl, &devices).map_err(|source| CliError::InitAll { source: source.into() })?;
    let mut buffers = Vec::new();
    for &d in &devices {
        driver.activate(d).map_err(gpu(d, GpuStep::Activate))?;
        let send = driver.alloc(count * 4).map_err(gpu(d, GpuStep::Alloc))?;
        let recv = driver.alloc(count * 4).map_err(gpu(d, GpuStep::Alloc))?;
        let stream = driver.stream().map_err(gpu(d, GpuStep::Stream))?;
        let host: Vec<u8> = (0..count).flat_map(|i| value(d as usize, i).to_ne_bytes()).collect();
        // In the order of the stream the all-reduce runs on (a non-blocking one).
        send.upload_on(&stream, &host).map_err(gpu(d, GpuStep::Upload))?;
        buffers.push((send, recv, stream));
    }
    {
        let group = nccl.group().map_err(collective)?;
        for (comm, (send, recv, stream)) in comms.iter().zip(&buffers) {
            // SAFETY: both buffers hold `count` floats on this communicator's device and
            // live until the stream is synchronised below.
            unsafe { comm.all_reduce_raw(send.ptr(), recv.ptr(), count, DataType::FLOAT32, RedOp::SUM, stream.raw()) }
                .map_err(collective)?;
        }
        group.end().map_err(collective)?;
    }
    let mut wrong = 0;
    let mut host = vec![0u8; count * 4];
    for (&d, (_, recv, stream)) in devices.iter().zip(&buffers) {
        driver.activate(d).map_err(gpu(d, GpuStep::Activate))?;
        recv.download_on(stream, &mut host).map_err(gpu(d, GpuStep::Download))?;
        for (i, chunk) in host.chunks_exact(4).enumerate() {
            let want: f32 = (0..n as usize).map(|r| value(r, i)).sum();
            if f32::from_ne_bytes(chunk.try_into().expect("4 bytes")) != want {
                wrong += 1;
            }
        }
    }
    for c in comms {
        c.destroy().map_err(collective)?;
    }
    Ok(wrong)
}
