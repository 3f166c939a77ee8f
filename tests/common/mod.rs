//! Shared by the conformance tests: the C compiler as oracle. Generates C callees that record
//! every byte they receive and C callers that give the reference, builds them for the target
//! with the target's gcc, loads them with libloading, and compares byte for byte.
#![allow(dead_code)]

#[path = "../../src/bin/nccl-trampoline/oracle.rs"]
mod oracle;

pub use oracle::*;
pub mod standin;

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The C compiler for the target: `NCCL_TRAMPOLINE_TEST_CC`, else the cross gcc for AArch64
/// and `cc` natively.
pub fn target_cc() -> String {
    if let Ok(cc) = std::env::var("NCCL_TRAMPOLINE_TEST_CC") {
        return cc;
    }
    // Cross-testing AArch64 under qemu-user: the compiler is the host's cross gcc (qemu passes
    // the exec of a host binary through). On a native AArch64 machine without it, plain `cc`.
    if cfg!(target_arch = "aarch64") && in_path("aarch64-linux-gnu-gcc") {
        return "aarch64-linux-gnu-gcc".to_string();
    }
    "cc".to_string()
}

/// True if `tool` is an executable file in a directory of `PATH`.
pub fn in_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// A fresh directory for this test's build products.
pub fn work_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::env::consts::ARCH));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create test work dir");
    dir
}

/// Compiles `sources` (paths) into a shared library, one compiler process per source in
/// parallel, and returns its path. Panics with the compiler's output on failure.
pub fn build_shared(dir: &Path, name: &str, sources: &[PathBuf]) -> PathBuf {
    build_shared_with(dir, name, sources, &[])
}

/// As [`build_shared`], with extra compiler flags (`-D...`).
pub fn build_shared_with(dir: &Path, name: &str, sources: &[PathBuf], flags: &[&str]) -> PathBuf {
    let cc = target_cc();
    let mut children = Vec::new();
    let mut objects = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        let obj = dir.join(format!("{name}-{i}.o"));
        let child = Command::new(&cc)
            .args(["-c", "-fPIC", "-O1", "-std=gnu11", "-Wall", "-Werror=implicit-function-declaration"])
            .args(flags)
            .args(extra_cflags())
            .arg("-o")
            .arg(&obj)
            .arg(src)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e} (set NCCL_TRAMPOLINE_TEST_CC)"));
        children.push((src.clone(), child));
        objects.push(obj);
    }
    for (src, child) in children {
        let out = child.wait_with_output().expect("wait for the C compiler");
        assert!(out.status.success(), "{cc} failed on {}:\n{}", src.display(), String::from_utf8_lossy(&out.stderr));
    }
    let lib = dir.join(format!("lib{name}.so"));
    let out = Command::new(&cc).arg("-shared").arg("-o").arg(&lib).args(&objects).output().expect("run the linker");
    assert!(out.status.success(), "linking {} failed:\n{}", lib.display(), String::from_utf8_lossy(&out.stderr));
    lib
}

/// Extra flags for every C file the tests build, from `NCCL_TRAMPOLINE_TEST_CFLAGS` (the
/// AddressSanitizer run instruments the stand-ins with `-fsanitize=address`).
fn extra_cflags() -> Vec<String> {
    std::env::var("NCCL_TRAMPOLINE_TEST_CFLAGS")
        .map(|f| f.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

pub fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The oracle library, loaded: the recording buffer and the return bytes.
pub struct Oracle {
    pub lib: libloading::Library,
}

impl Oracle {
    pub fn load(path: &Path) -> Oracle {
        // SAFETY: a library this test just built from its own sources; its initialisers are
        // trivial.
        let lib = unsafe { libloading::Library::new(path) }.expect("load the oracle library");
        Oracle { lib }
    }

    pub fn sym(&self, name: &str) -> *const c_void {
        // SAFETY: we only take the address; callers call it with the generated prototype.
        unsafe { *self.lib.get::<*const c_void>(name.as_bytes()).unwrap_or_else(|e| panic!("symbol {name}: {e}")) }
    }

    pub fn rec_reset_public(&self) {
        OracleRuntime::rec_reset(self)
    }

    pub fn recording_public(&self) -> Vec<u8> {
        OracleRuntime::recording(self)
    }
}

impl OracleRuntime for Oracle {
    fn sym(&self, name: &str) -> *const c_void {
        Oracle::sym(self, name)
    }

    fn rec_reset(&self) {
        // SAFETY: `void nt_rec_reset(void)` in tests/c/oracle_runtime.c.
        unsafe { std::mem::transmute::<*const c_void, extern "C" fn()>(self.sym("nt_rec_reset"))() }
    }

    fn recording(&self) -> Vec<u8> {
        // SAFETY: prototypes from tests/c/oracle_runtime.c; the buffer holds `size` bytes.
        unsafe {
            let data = std::mem::transmute::<*const c_void, extern "C" fn() -> *const u8>(self.sym("nt_rec_data"))();
            let size = std::mem::transmute::<*const c_void, extern "C" fn() -> usize>(self.sym("nt_rec_size"))();
            std::slice::from_raw_parts(data, size).to_vec()
        }
    }

    fn set_return_bytes(&self, bytes: &[u8]) {
        // SAFETY: nt_ret_src is 8 KiB; results are at most 4 KiB (limits::MAX_AGGREGATE_BYTES).
        unsafe {
            let p = std::mem::transmute::<*const c_void, extern "C" fn() -> *mut u8>(self.sym("nt_ret_bytes"))();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
        }
    }
}
