//! The facade against the REAL libnccl.so.2 from the `nvidia-nccl-cu12` wheels, without a GPU:
//! version, error strings, unique ids, and init failing cleanly with NCCL's own error. Runs
//! natively and under qemu-aarch64 (the aarch64 build). `scripts/test.sh` fetches the wheels
//! (scripts/fetch-nccl.sh) and runs these with `--ignored`; the paths come from
//! NCCL_TRAMPOLINE_REAL_NCCL (newest build for this architecture, with
//! NCCL_TRAMPOLINE_REAL_NCCL_VERSION), NCCL_TRAMPOLINE_REAL_NCCL_OLD (an old x86_64 build) and
//! NCCL_TRAMPOLINE_REAL_NCCL_FOREIGN (the newest build for the other architecture).
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::path::{Path, PathBuf};

use nccl_trampoline::nccl::Error;
use nccl_trampoline::nccl::{Communicator, Config, Nccl, NcclResult, Version};

const NEEDS: &str = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this";

fn lib(var: &str) -> PathBuf {
    let p = std::env::var_os(var).unwrap_or_else(|| panic!("{var} is not set ({NEEDS})"));
    let p = PathBuf::from(p);
    assert!(p.is_file(), "{var}={} is not a file", p.display());
    p
}

fn expected_version(var: &str) -> Version {
    let s = std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set ({NEEDS})"));
    let v: Vec<u32> = s.split('.').map(|p| p.parse().expect("a version like 2.32.3")).collect();
    Version::new(v[0], v[1], v[2])
}

fn gpu_present() -> bool {
    Path::new("/dev/nvidiactl").exists()
}

/// Unique ids and bootstrap sockets stay on loopback.
fn loopback_only() {
    assert_eq!(std::env::var("NCCL_SOCKET_IFNAME").as_deref(), Ok("lo"), "run with NCCL_SOCKET_IFNAME=lo");
}

#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
fn newest_build_version_errors_and_unique_id() {
    loopback_only();
    let path = lib("NCCL_TRAMPOLINE_REAL_NCCL");
    let nccl = Nccl::load_from(&path).unwrap();
    eprintln!("real NCCL: {} from {}", nccl.version(), nccl.path().display());
    assert_eq!(nccl.version(), expected_version("NCCL_TRAMPOLINE_REAL_NCCL_VERSION"));
    assert_eq!(nccl.path(), path);
    assert!(nccl.missing_symbols().is_empty(), "{:?}", nccl.missing_symbols());
    assert_eq!(nccl.error_string(NcclResult::SUCCESS).unwrap(), "no error");
    assert_eq!(nccl.error_string(NcclResult::TIMEOUT).unwrap(), "timeout");
    assert!(nccl.error_string(NcclResult::INVALID_ARGUMENT).unwrap().starts_with("invalid argument"));

    let id = nccl.unique_id().unwrap();
    let b = id.as_bytes();
    // The id carries the root's bootstrap address: AF_INET on loopback.
    assert_eq!(u16::from_ne_bytes([b[8], b[9]]), 2, "sockaddr family");
    assert_eq!(&b[12..16], &[127, 0, 0, 1], "bootstrap address on lo");
    let other = nccl.unique_id().unwrap();
    assert_ne!(id, other, "every id is fresh");
    assert!(!format!("{id:?}").contains("127"), "Debug must not print the id");
}

#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
fn init_rank_without_a_gpu_fails_cleanly_with_nccls_error() {
    loopback_only();
    let nccl = Nccl::load_from(lib("NCCL_TRAMPOLINE_REAL_NCCL")).unwrap();
    let id = nccl.unique_id().unwrap();
    for config in [None, Some(Config::new().blocking(true).ctas(1, 4))] {
        let result = match &config {
            None => Communicator::init_rank(&nccl, 1, &id, 0),
            Some(c) => Communicator::init_rank_config(&nccl, 1, &id, 0, c),
        };
        if gpu_present() {
            let comm = result.expect("with a GPU, a one-rank communicator initialises");
            assert_eq!(comm.count().unwrap(), 1);
            comm.destroy().unwrap();
            continue;
        }
        match result {
            Err(Error::Nccl { function, result, name, last_error, .. }) => {
                assert!(function.starts_with("ncclCommInitRank"), "{function}");
                assert_eq!((result.0, name.as_str()), (1, "ncclUnhandledCudaError"));
                assert!(last_error.to_lowercase().contains("cuda"), "NCCL's last-error text: {last_error:?}");
                eprintln!("{function} without a GPU: {last_error}");
            }
            other => panic!("expected NCCL's CUDA error, got {other:?}"),
        }
    }
}

/// Coverage read from the real wheel's ELF symbol table: NCCL 2.32.3 exports 97 public
/// functions (`readelf --dyn-syms`: defined `FUNC` symbols named `nccl` then a capital), the
/// `pnccl*` aliases do not count, and every function of the table that the library exports is
/// bound.
#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
fn coverage_of_the_real_library() {
    let mut paths = vec![lib("NCCL_TRAMPOLINE_REAL_NCCL")];
    if cfg!(target_arch = "x86_64") {
        paths.push(lib("NCCL_TRAMPOLINE_REAL_NCCL_OLD"));
    }
    for path in paths {
        let nccl = Nccl::load_from(&path).unwrap();
        let coverage = nccl.coverage().unwrap();
        eprintln!("NCCL {}: {coverage}; unbound: {}", nccl.version(), coverage.unbound.join(", "));
        let table = nccl_trampoline::nccl::Sym::ALL.len();
        assert_eq!(coverage.bound.len(), table - nccl.missing_symbols().len(), "{coverage:?}");
        assert_eq!(coverage.bound.len() + coverage.unbound.len(), coverage.exported.len());
        assert!(coverage.exported.iter().all(|n| n.starts_with("nccl")), "{coverage:?}");
        assert!(coverage.exported.iter().any(|n| n == "ncclBcast"), "ncclBcast is exported and not bound");
        assert!(coverage.unbound.iter().any(|n| n == "ncclBcast"));
        if nccl.version() == Version::new(2, 32, 3) {
            assert_eq!(coverage.exported.len(), 97);
            assert!(coverage.bound.iter().any(|n| *n == "ncclParamGetI32"), "{coverage:?}");
            assert!(coverage.unbound.iter().any(|n| n == "ncclResetDebugInit"), "{coverage:?}");
        }
    }
}

#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
#[cfg(target_arch = "x86_64")]
fn old_build_is_gated_by_version() {
    loopback_only();
    let nccl = Nccl::load_from(lib("NCCL_TRAMPOLINE_REAL_NCCL_OLD")).unwrap();
    let v = nccl.version();
    assert!(v < Version::new(2, 19, 0), "an old build, got {v}");
    eprintln!("old real NCCL: {v}");
    let missing: Vec<&str> = nccl.missing_symbols().iter().map(|(n, _)| *n).collect();
    for sym in ["ncclAlltoAll", "ncclGather", "ncclScatter", "ncclMemAlloc", "ncclCommShrink"] {
        assert!(missing.contains(&sym), "{sym} should be missing from {v}: {missing:?}");
    }
    assert!(matches!(nccl.mem_alloc(1024), Err(Error::Unsupported { symbol: "ncclMemAlloc", .. })));
    assert_eq!(nccl.error_string(NcclResult::TIMEOUT).unwrap(), "unknown result code", "2.18 predates ncclTimeout");
    let id = nccl.unique_id().unwrap();
    let err = Communicator::init_rank_config(&nccl, 1, &id, 0, &Config::new().comm_name("x")).unwrap_err();
    assert!(matches!(err, Error::Unsupported { symbol: "commName", .. }), "{err}");
    if !gpu_present() {
        let err = Communicator::init_rank(&nccl, 1, &id, 0).unwrap_err();
        assert!(matches!(err, Error::Nccl { result: NcclResult(1), .. }), "{err}");
    }
}

/// The wheel's files laid out as pip installs them (`site-packages/nvidia/nccl/lib/libnccl.so.2`
/// next to `nvidia_nccl_cu12-<version>.dist-info/`, from the real wheel's METADATA and RECORD
/// that scripts/fetch-nccl.sh keeps beside the library): the wheel and its CUDA major are named.
#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
fn the_real_wheel_as_pip_installs_it_is_named_with_its_cuda_major() {
    let real = lib("NCCL_TRAMPOLINE_REAL_NCCL");
    let version = expected_version("NCCL_TRAMPOLINE_REAL_NCCL_VERSION");
    let cache = real.parent().unwrap();
    let info = std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "dist-info"))
        .unwrap_or_else(|| panic!("no *.dist-info beside {} (fetched by an older fetch-nccl.sh?)", real.display()));
    let site = std::env::temp_dir().join(format!("nccl-trampoline-real-wheel-{}/site-packages", std::process::id()));
    let _ = std::fs::remove_dir_all(&site);
    let installed = site.join("nvidia/nccl/lib/libnccl.so.2");
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, &installed).unwrap();
    let info_copy = site.join(info.file_name().unwrap());
    std::fs::create_dir_all(&info_copy).unwrap();
    for f in ["METADATA", "RECORD"] {
        std::fs::copy(info.join(f), info_copy.join(f)).unwrap();
    }
    let nccl = Nccl::load_from(&installed).unwrap();
    assert_eq!(nccl.version(), version);
    let wheel = nccl.python_wheel().expect("the real RECORD lists the file, with its size");
    assert_eq!((wheel.name.as_str(), wheel.cuda_major), ("nvidia-nccl-cu12", Some(12)));
    assert_eq!(wheel.version, version.to_string());
    eprintln!("real wheel: {} at {}", wheel, installed.display());
    // The same file, not installed by a wheel: nothing to name.
    assert_eq!(nccl_trampoline::nccl::PythonWheel::owning(&real), None);
    std::fs::remove_dir_all(site.parent().unwrap()).unwrap();
}

/// The real build for the other architecture (aarch64 on x86-64, x86_64 under qemu-aarch64):
/// the loader says "No such file or directory"; the error says what the file is.
#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
fn a_real_build_for_another_architecture_is_named() {
    let foreign = lib("NCCL_TRAMPOLINE_REAL_NCCL_FOREIGN");
    let other = if cfg!(target_arch = "x86_64") { "aarch64" } else { "x86_64" };
    let this = std::env::consts::ARCH;
    let err = Nccl::load_from(&foreign).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot load {}: built for {other}, this program runs on {this}: use the {this} build",
            foreign.display()
        )
    );
}

// ---- The rest of the host API (part A) on the real library, without a GPU ------------------------------------

/// Set in the child process `runtime_parameters_and_host_only_calls_of_the_real_library` starts.
const PARAM_CHILD: &str = "NCCL_TRAMPOLINE_REAL_PARAM_CHILD";

/// Runs this test binary again as a child with `env`, only the test `name`, and returns its
/// output. Under qemu-user an aarch64 child cannot be exec'd by the host kernel (no binfmt_misc),
/// and the failed exec is not reported back (glibc's vfork-style posix_spawn becomes a plain
/// fork: the child exits 127 without a word): that case is run again through qemu-aarch64.
fn rerun_self(name: &str, env: &[(&str, &str)]) -> std::process::Output {
    let exe = std::env::current_exe().expect("this test's path");
    let args = ["--ignored", "--exact", name, "--nocapture", "--test-threads=1"];
    let run = |program: &std::ffi::OsStr, pre: &[&str]| {
        let mut cmd = std::process::Command::new(program);
        cmd.args(pre).arg(&exe).args(args).envs(env.iter().copied());
        cmd.output().unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
    };
    let mut direct = std::process::Command::new(&exe);
    direct.args(args).envs(env.iter().copied());
    let out = direct.output().unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let exec_failed = out.status.code() == Some(127) && out.stdout.is_empty();
    if cfg!(target_arch = "aarch64") && exec_failed {
        let qemu = std::env::var("NCCL_TRAMPOLINE_TEST_QEMU").unwrap_or_else(|_| "qemu-aarch64".into());
        return run(qemu.as_ref(), &["-cpu", "max", "-L", "/usr/aarch64-linux-gnu"]);
    }
    out
}

/// The `ncclParam*` functions really run in the real library: values NCCL resolved from the
/// environment of a child process, typed reads, a missing key and a wrong type as typed errors.
/// With them, what else runs without a GPU: `ncclGroupSimulateEnd` on an empty group and
/// `ncclSetEncryption` (accepted and refused).
#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
fn runtime_parameters_and_host_only_calls_of_the_real_library() {
    let path = lib("NCCL_TRAMPOLINE_REAL_NCCL");
    let debug_file = std::env::temp_dir().join(format!("nccl-trampoline-param-{}.%h", std::process::id()));
    let debug_file = debug_file.to_str().expect("a UTF-8 temporary path").to_string();
    if std::env::var_os(PARAM_CHILD).is_none() {
        // The parent: NCCL reads its parameters once per process, so the values come from a
        // child's environment.
        let out = rerun_self(
            "runtime_parameters_and_host_only_calls_of_the_real_library",
            &[
                (PARAM_CHILD, "1"),
                ("NCCL_DEBUG", "WARN"),
                ("NCCL_DEBUG_SUBSYS", "INIT,ENV"),
                ("NCCL_DEBUG_FILE", &debug_file),
            ],
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "the child failed: {}\n{stdout}\n{stderr}", out.status);
        assert!(stdout.contains("1 passed"), "the child ran the test: {stdout}");
        assert!(stdout.contains("=== ncclParam Registry Dump ==="), "ncclParamDumpAll printed: {stdout}");
        return;
    }
    // The child, with the environment above (the path named after the parent's pid).
    let debug_file = std::env::var("NCCL_DEBUG_FILE").unwrap();
    let nccl = Nccl::load_from(&path).unwrap();
    assert!(nccl.version() >= Version::new(2, 30, 4), "the newest build has the parameters");

    assert_eq!(nccl.param_string("NCCL_DEBUG").unwrap(), "WARN");
    assert_eq!(nccl.param_string("NCCL_DEBUG_SUBSYS").unwrap(), "INIT,ENV");
    let file = nccl.param("NCCL_DEBUG_FILE").unwrap();
    assert_eq!(file.get_str().unwrap(), debug_file);
    let mut with_nul = debug_file.clone().into_bytes();
    with_nul.push(0);
    assert_eq!(file.raw().unwrap(), with_nul, "a string's raw bytes end with its NUL");
    // A 64-bit mask: the typed read agrees with the raw bytes; another width is refused.
    let subsys = nccl.param("NCCL_DEBUG_SUBSYS").unwrap();
    let mask = subsys.get::<u64>().unwrap();
    assert_eq!(subsys.raw().unwrap(), mask.to_ne_bytes());
    assert_ne!(mask, 0);
    assert_eq!(
        subsys.get::<u32>().unwrap_err(),
        Error::ParamType { key: "NCCL_DEBUG_SUBSYS".into(), requested: "uint32_t" }
    );
    assert_eq!(
        file.get::<i32>().unwrap_err(),
        Error::ParamType { key: "NCCL_DEBUG_FILE".into(), requested: "int32_t" }
    );
    let missing = "NCCL_TRAMPOLINE_NO_SUCH_PARAMETER";
    assert_eq!(nccl.param(missing).unwrap_err(), Error::ParamNotFound { key: missing.into() });
    assert_eq!(nccl.param_string(missing).unwrap_err(), Error::ParamNotFound { key: missing.into() });
    let keys = nccl.param_keys().unwrap();
    for k in ["NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS"] {
        assert!(keys.iter().any(|x| x == k), "{k} in {keys:?}");
    }
    nccl.dump_params().unwrap();

    // An empty group simulated: NCCL leaves the estimate undefined (-1).
    assert_eq!(nccl.group().unwrap().simulate_end().unwrap().estimated_time_us, None);
    // Encryption: accepted (a build without TLS fails only when a connection is made), and
    // NCCL's refusal of a short key with its own text.
    use nccl_trampoline::nccl::{Encryption, PreSharedKey};
    nccl.set_encryption(&Encryption::None).unwrap();
    nccl.set_encryption(&Encryption::PreSharedKey(PreSharedKey::new(vec![b'k'; 48]).unwrap())).unwrap();
    let err = nccl.set_encryption(&Encryption::PreSharedKey(PreSharedKey::new("short").unwrap())).unwrap_err();
    match err {
        Error::Nccl { function: "ncclSetEncryption", result: NcclResult(4), last_error, .. } => {
            assert!(last_error.contains("at least"), "{last_error}")
        }
        e => panic!("{e}"),
    }
    nccl.set_encryption(&Encryption::None).unwrap();
    println!("real NCCL {}: parameters, simulated group end and encryption checked", nccl.version());
}

/// The old build (2.18.3) refuses every call of part A with the version it needs.
#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
#[cfg(target_arch = "x86_64")]
fn old_build_refuses_the_newer_host_api() {
    use nccl_trampoline::nccl::Encryption;
    let nccl = Nccl::load_from(lib("NCCL_TRAMPOLINE_REAL_NCCL_OLD")).unwrap();
    let loaded = nccl.version();
    let unsupported = |symbol: &'static str, needs: &str| {
        let n: Vec<u32> = needs.split('.').map(|p| p.parse().unwrap()).collect();
        Error::Unsupported { symbol, needs: Version::new(n[0], n[1], n[2]), loaded }
    };
    assert_eq!(nccl.param("NCCL_DEBUG").unwrap_err(), unsupported("ncclParamBind", "2.30.4"));
    assert_eq!(nccl.param_keys().unwrap_err(), unsupported("ncclParamGetAllParameterKeys", "2.30.4"));
    assert_eq!(nccl.set_encryption(&Encryption::None).unwrap_err(), unsupported("ncclSetEncryption", "2.32.3"));
    assert_eq!(nccl.group().unwrap().simulate_end().unwrap_err(), unsupported("ncclGroupSimulateEnd", "2.22.3"));
    let id = nccl.unique_id().unwrap();
    let err = Communicator::init_rank_scalable(&nccl, 1, 0, &[id], &Default::default()).unwrap_err();
    assert_eq!(err, unsupported("ncclCommInitRankScalable", "2.23.4"));
}

/// Scalable init and a new rank joining a grow reach the real library and, without a GPU, fail
/// with NCCL's own CUDA error (with one, the one-rank scalable communicator is made).
#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
fn scalable_init_and_joining_a_grow_without_a_gpu_fail_with_nccls_error() {
    use nccl_trampoline::nccl::CommOptions;
    loopback_only();
    let nccl = Nccl::load_from(lib("NCCL_TRAMPOLINE_REAL_NCCL")).unwrap();
    let ids = [nccl.unique_id().unwrap()];
    let scalable = Communicator::init_rank_scalable(&nccl, 1, 0, &ids, &CommOptions::new());
    if gpu_present() {
        scalable.expect("with a GPU, a one-rank communicator initialises").destroy().unwrap();
        return;
    }
    let joined = Communicator::join_grow(&nccl, 2, &ids[0], 1, &CommOptions::new());
    for (symbol, result) in [("ncclCommInitRankScalable", scalable), ("ncclCommGrow", joined)] {
        match result {
            Err(Error::Nccl { function, result, last_error, .. }) => {
                assert_eq!((function, result), (symbol, NcclResult(1)), "{last_error}");
                assert!(last_error.to_lowercase().contains("cuda"), "NCCL's last-error text: {last_error:?}");
                eprintln!("{function} without a GPU: {last_error}");
            }
            other => panic!("{symbol}: expected NCCL's CUDA error, got {other:?}"),
        }
    }
}

// ---- The device-API host helpers and ncclCollConfig_t against the real library and header.
// Of the device-API, one-sided and per-collective-config calls, only these run without a GPU:
// the ones that take no communicator. Every other one needs an ncclComm_t, which needs a GPU
// (init fails with ncclUnhandledCudaError above), and ncclTeamWorld reads comm->nRanks from it
// (v2.30.7-1 src/nccl_device/core.cc:13-19), as the one-sided and config calls enqueue on it.

/// `ncclTeam` BY VALUE into the real library: `ncclLsaBarrierCreateRequirement` sizes its
/// buffer from `team.nRanks` (v2.30.7-1 src/nccl_device/lsa_barrier.cc:13-21:
/// `(3 * nBarriers + nBarriers * team.nRanks) * sizeof(uint32_t)`), so a misplaced team shows
/// in the answer. The LL all-to-all helpers likewise (ll_a2a.cc:12-26).
#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
fn device_api_host_helpers_without_a_gpu() {
    use nccl_trampoline::nccl::Team;
    let nccl = Nccl::load_from(lib("NCCL_TRAMPOLINE_REAL_NCCL")).unwrap();
    for (n_ranks, n_barriers) in [(8, 3), (72, 1), (1, 16)] {
        let team = Team { n_ranks, rank: 0x5a5a, stride: -3 };
        let mut req = nccl.lsa_barrier_requirement(&team, n_barriers).unwrap();
        let want = (3 * n_barriers + n_barriers * n_ranks) as usize * 4;
        assert_eq!((req.requirement().buffer_size, req.requirement().buffer_align), (want, 4), "{team:?}");
        assert_eq!(req.handle().n_barriers, n_barriers);
        let handle_at: *const u32 = &req.handle().buf_handle;
        assert_eq!(req.requirement().out_buffer_handle.cast_const(), handle_at);
        assert!(!req.as_raw().is_null());
    }
    assert_eq!(nccl.lla2a_calc_slots(10, 12).unwrap(), 20, "maxElts * divUp(maxEltSize, 8)");
    assert_eq!(nccl.lla2a_calc_slots(7, 8).unwrap(), 7);
    let a2a = nccl.lla2a_requirement(4, 5).unwrap();
    assert_eq!((a2a.requirement().buffer_size, a2a.requirement().buffer_align), (4 * (1 + 2 * 5) * 16, 16));
    assert_eq!(a2a.handle().n_slots, 5);
    eprintln!("real {}: ncclTeam by value and the LL all-to-all helpers answer as NCCL's source says", nccl.version());
}

/// `ncclCollConfig_t` as the C compiler lays out the REAL header beside the library (nccl.h,
/// compiled with tests/c/cuda_shim for its two CUDA handle types) against the offsets the
/// crate writes for that version.
#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
fn coll_config_offsets_match_the_real_header() {
    let real = lib("NCCL_TRAMPOLINE_REAL_NCCL");
    let header = real.parent().unwrap().join("nccl.h");
    assert!(header.is_file(), "{} (kept by scripts/fetch-nccl.sh)", header.display());
    let version = expected_version("NCCL_TRAMPOLINE_REAL_NCCL_VERSION");
    let dir = common::work_dir("coll-config-layout-real");
    let shim = common::repo_file("tests/c/cuda_shim");
    let lib = common::build_shared_with(
        &dir,
        "layout",
        &[common::repo_file("tests/c/coll_config_layout.c")],
        &[&format!("-I{}", shim.display()), &format!("-DREAL_NCCL_H=\"{}\"", header.display())],
    );
    // SAFETY: the layout library built above; its functions only compute.
    let lib = unsafe { libloading::Library::new(lib) }.unwrap();
    // SAFETY: the prototypes of tests/c/coll_config_layout.c.
    let (offsets, header_version, desc) = unsafe {
        let layout = lib.get::<extern "C" fn(*mut usize, usize) -> usize>(b"coll_config_layout").unwrap();
        let code = lib.get::<extern "C" fn() -> i32>(b"coll_config_layout_version").unwrap();
        let desc = lib.get::<extern "C" fn() -> usize>(b"wait_signal_desc_size").unwrap();
        let mut out = [0usize; 32];
        let n = layout(out.as_mut_ptr(), out.len());
        (out[..n].to_vec(), code(), desc())
    };
    assert_eq!(header_version, version.code(), "the header beside the library is its own");
    let mut want: Vec<usize> =
        nccl_trampoline::nccl::coll_config_fields(version).into_iter().map(|(_, offset)| offset).collect();
    want.push(nccl_trampoline::nccl::coll_config_size(version).unwrap());
    assert_eq!(offsets, want, "ncclCollConfig_t of {version}");
    assert_eq!(desc, std::mem::size_of::<nccl_trampoline::nccl::WaitSignalDesc>());
}

/// The old real build (2.18.3) lacks every device-API helper: typed refusals, nothing called.
#[test]
#[ignore = "needs the real NCCL wheels: scripts/test.sh fetches them and runs this"]
#[cfg(target_arch = "x86_64")]
fn old_build_refuses_the_device_api_helpers() {
    let nccl = Nccl::load_from(lib("NCCL_TRAMPOLINE_REAL_NCCL_OLD")).unwrap();
    let loaded = nccl.version();
    let team = nccl_trampoline::nccl::Team { n_ranks: 2, rank: 0, stride: 1 };
    let unsupported = |symbol: &'static str, needs: &str| {
        let n: Vec<u32> = needs.split('.').map(|p| p.parse().unwrap()).collect();
        Error::Unsupported { symbol, needs: Version::new(n[0], n[1], n[2]), loaded }
    };
    assert_eq!(nccl.lla2a_calc_slots(1, 1).unwrap_err(), unsupported("ncclLLA2ACalcSlots", "2.28.3"));
    assert_eq!(nccl.lla2a_requirement(1, 1).unwrap_err(), unsupported("ncclLLA2ACreateRequirement", "2.28.3"));
    assert_eq!(
        nccl.lsa_barrier_requirement(&team, 1).unwrap_err(),
        unsupported("ncclLsaBarrierCreateRequirement", "2.28.3")
    );
    let missing: Vec<&str> = nccl.missing_symbols().iter().map(|(n, _)| *n).collect();
    for sym in ["ncclTeamWorld", "ncclPutSignal", "ncclAllReduceConfig", "ncclGetCftDeviceLeInfo"] {
        assert!(missing.contains(&sym), "{sym}: {missing:?}");
    }
}
