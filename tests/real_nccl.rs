//! The facade against the REAL libnccl.so.2 from the `nvidia-nccl-cu12` wheels, without a GPU:
//! version, error strings, unique ids, and init failing cleanly with NCCL's own error. Runs
//! natively and under qemu-aarch64 (the aarch64 build). `scripts/test.sh` fetches the wheels
//! (scripts/fetch-nccl.sh) and runs these with `--ignored`; the paths come from
//! NCCL_TRAMPOLINE_REAL_NCCL (newest build for this architecture, with
//! NCCL_TRAMPOLINE_REAL_NCCL_VERSION), NCCL_TRAMPOLINE_REAL_NCCL_OLD (an old x86_64 build) and
//! NCCL_TRAMPOLINE_REAL_NCCL_FOREIGN (the newest build for the other architecture).
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

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
