//! The GPU examples on a machine without a GPU (feature `cudarc`): one line that says what is
//! missing, exit status 1; no panic, backtrace or list of the names cudarc searched.
//!
//! The examples are binaries this test runs, so they must be built first, with the same
//! profile: `cargo build --features cudarc-nccl --examples` (scripts/test.sh does). The CUDA
//! driver is pointed at a file that does not exist, so the result is the same on a GPU machine.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

use std::path::PathBuf;
use std::process::Command;

/// `target/<profile>/examples`, beside this test's `target/<profile>/deps`.
fn examples_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("this test's path");
    exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>").join("examples")
}

#[test]
fn gpu_examples_without_a_gpu_say_so_in_one_line() {
    for (name, args) in [
        ("init_all", &[][..]),
        ("allreduce", &[][..]),
        ("cudarc_streams", &[][..]),
        ("cudarc_allreduce_perf", &["-b", "8", "-e", "8"][..]),
    ] {
        let exe = examples_dir().join(name);
        assert!(
            exe.is_file(),
            "{} is not built: run `cargo build --features cudarc-nccl --examples` first",
            exe.display()
        );
        let out = Command::new(&exe)
            .args(args)
            .env("NCCL_TRAMPOLINE_CUDA_DRIVER", "/nonexistent/libcuda.so.1")
            .env("RUST_BACKTRACE", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line, got:\n{err}");
        assert!(err.starts_with(&format!("{name}: ")), "{name}: {err}");
        assert!(
            err.contains("needs NVIDIA GPUs and their driver: cannot load the CUDA driver /nonexistent/libcuda.so.1: no such file"),
            "{name}: {err}"
        );
        assert!(!err.contains("panicked") && !err.contains("libcuda64"), "{name}: {err}");
    }
}
