//! Shared by the conformance tests: the C compiler as oracle. Generates C callees that record
//! every byte they receive and C callers that give the reference, builds them for the target
//! with the target's gcc, loads them with libloading, and compares byte for byte.
#![allow(dead_code)]

pub use nccl_trampoline::oracle::*;
pub mod standin;

use std::ffi::c_void;

use nccl_trampoline::__private::PlanCode;
use nccl_trampoline::{CallPlan, Signature, Type};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The C compiler for the target: `NCCL_TRAMPOLINE_TEST_CC` (a program and its arguments,
/// split at spaces: `clang --target=aarch64-linux-gnu`), else the cross gcc for AArch64 and
/// riscv64 and `cc` natively.
pub fn target_cc() -> String {
    if let Ok(cc) = std::env::var("NCCL_TRAMPOLINE_TEST_CC") {
        return cc;
    }
    // Cross-testing AArch64 under qemu-user: the compiler is the host's cross gcc (qemu passes
    // the exec of a host binary through). On a native AArch64 machine without it, plain `cc`.
    if cfg!(target_arch = "aarch64") && in_path("aarch64-linux-gnu-gcc") {
        return "aarch64-linux-gnu-gcc".to_string();
    }
    if cfg!(target_arch = "riscv64") && in_path("riscv64-linux-gnu-gcc") {
        return "riscv64-linux-gnu-gcc".to_string();
    }
    "cc".to_string()
}

/// The oracle compiler's family and major version, from `<cc> --version`: `("clang", 14)`,
/// `("gcc", 12)`.
pub fn compiler_version() -> (String, u32) {
    let cc = target_cc();
    let mut words = cc.split_whitespace();
    let out = Command::new(words.next().unwrap_or("cc"))
        .args(words)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{cc} --version`: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or("");
    let family = if first.contains("clang") { "clang" } else { "gcc" };
    // The first word that starts with digits and a dot: "14.0.6", "12.2.0".
    let major = first
        .split_whitespace()
        .find_map(|w| w.split_once('.').and_then(|(m, _)| m.parse().ok()))
        .unwrap_or_else(|| panic!("no version in `{cc} --version`: {first}"));
    (family.to_string(), major)
}

/// A disagreement between the oracle compiler and the ABI document that the suite knows,
/// with its upstream reference, if `sig` meets it: the placement is right by the document and
/// gcc, the compiler is not, so the comparison would only measure the compiler's bug.
///
/// - clang before 20 on x86-64, a bare `__int128` argument passed in memory: LLVM before 18
///   splits it between r9 and the stack and aligns it to 8 on the stack
///   (<https://github.com/llvm/llvm-project/issues/41784>, fixed in LLVM 18 by D158169); LLVM
///   18 and 19 still keep r9 from the next integer
///   (<https://github.com/llvm/llvm-project/issues/123935>, fixed in LLVM 20 by #124134).
pub fn known_compiler_bug(compiler: &(String, u32), sig: &Signature) -> Option<&'static str> {
    let (family, major) = compiler;
    if cfg!(target_arch = "x86_64") && family == "clang" && *major < 20 {
        let placement = nccl_trampoline::Abi::SysVX86_64.place(sig).ok()?;
        let on_stack = placement.moves.iter().any(|m| {
            matches!(m, nccl_trampoline::abi::Move::Bytes { arg, to: nccl_trampoline::abi::Loc::Stack(_), .. }
                if matches!(sig.args()[usize::from(*arg)], Type::I128 | Type::U128))
        });
        if on_stack {
            return Some("clang < 20 on x86-64: a bare __int128 in memory (llvm/llvm-project#41784, #123935)");
        }
    }
    None
}

/// The optimisation levels the callback tests build their generated C callers at: the oracle
/// compiler's callers must agree with the callbacks unoptimised and optimised (at -O2 the
/// compiler keeps values in registers across the call and may narrow what it reads of a result).
pub const CALLER_OPT_LEVELS: [&str; 2] = ["-O0", "-O2"];

/// True if `tool` is an executable file in a directory of `PATH`.
pub fn in_path(tool: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// A fresh directory for this test's build products.
/// Build products go under `NCCL_TRAMPOLINE_TEST_TMPDIR` when it is set (a test binary run on
/// another machine than the one it was built on), else under cargo's target tmp directory.
pub fn work_dir(name: &str) -> PathBuf {
    let base = std::env::var_os("NCCL_TRAMPOLINE_TEST_TMPDIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from);
    let dir = base.join(format!("{name}-{}", std::env::consts::ARCH));
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
    let mut words = cc.split_whitespace();
    let program = words.next().unwrap_or("cc");
    let cc_args: Vec<&str> = words.collect();
    let mut children = Vec::new();
    let mut objects = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        let obj = dir.join(format!("{name}-{i}.o"));
        let child = Command::new(program)
            .args(&cc_args)
            .args(["-c", "-fPIC", "-O1", "-std=gnu11", "-Wall", "-Wno-psabi", "-Werror=implicit-function-declaration"])
            // Call frame information for the C side of the unwinding test: GCC's default on
            // x86-64 and AArch64, not on riscv64.
            .arg("-fasynchronous-unwind-tables")
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
    let out = Command::new(program)
        .args(&cc_args)
        .arg("-shared")
        .arg("-o")
        .arg(&lib)
        .args(&objects)
        .output()
        .expect("run the linker");
    assert!(out.status.success(), "linking {} failed:\n{}", lib.display(), String::from_utf8_lossy(&out.stderr));
    lib
}

/// The project's TCP loopback network plugin (tests/c/plugins/net_tcp.c) built into `dir` as
/// `lib<name>.so`: the working one for `variant` `""`, else `-DMISBEHAVE=<variant>`.
pub fn build_net_plugin(dir: &Path, name: &str, variant: &str) -> PathBuf {
    let include = format!("-I{}", repo_file("tests/c/plugin_abi").display());
    let misbehave = format!("-DMISBEHAVE={variant}");
    let mut flags = vec![include.as_str()];
    if !variant.is_empty() {
        flags.push(&misbehave);
    }
    build_shared_with(dir, name, &[repo_file("tests/c/plugins/net_tcp.c")], &flags)
}

/// Extra flags for every C file the tests build, from `NCCL_TRAMPOLINE_TEST_CFLAGS` (the
/// AddressSanitizer run instruments the stand-ins with `-fsanitize=address`).
fn extra_cflags() -> Vec<String> {
    std::env::var("NCCL_TRAMPOLINE_TEST_CFLAGS")
        .map(|f| f.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// A file of the repository: under `NCCL_TRAMPOLINE_REPO` when it is set (a test binary run on
/// another machine, from a copy of the repository), else where it was built.
pub fn repo_file(rel: &str) -> PathBuf {
    std::env::var_os("NCCL_TRAMPOLINE_REPO")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join(rel)
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
        // SAFETY: `void nt_rec_reset(void)` in oracle/runtime.c.
        unsafe { std::mem::transmute::<*const c_void, extern "C" fn()>(self.sym("nt_rec_reset"))() }
    }

    fn recording(&self) -> Vec<u8> {
        // SAFETY: prototypes from oracle/runtime.c; the buffer holds `size` bytes.
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

/// The word of an argument (`CArg::word`) from its bytes: integers extended by their type,
/// pointers as they are, floats' bits zero-extended, aggregates by address.
pub fn word_of(ty: &Type, bytes: &[u8]) -> u64 {
    let mut raw = [0u8; 8];
    let n = ty.size().min(8);
    match ty {
        t if !t.is_word() => return bytes.as_ptr() as u64,
        _ => raw[..n].copy_from_slice(&bytes[..n]),
    }
    let v = u64::from_ne_bytes(raw);
    match ty {
        Type::I8 => v as u8 as i8 as i64 as u64,
        Type::I16 => v as u16 as i16 as i64 as u64,
        Type::I32 => v as u32 as i32 as i64 as u64,
        // LP64D sign-extends uint32_t (CArg::word does the same there).
        Type::U32 if cfg!(target_arch = "riscv64") => v as u32 as i32 as i64 as u64,
        _ => v,
    }
}

/// As [`check_call`], through a given plan: checked (`CallPlan::call`, argument pointers) or
/// typed (`CallPlan::call_words`, argument words: the typed bindings' program), so that every
/// copy width and both entry families are compared with the C compiler. Returns a description
/// of the first mismatch.
pub fn check_plan_call(
    oracle: &impl OracleRuntime,
    name: &str,
    sig: &Signature,
    plan: &CallPlan,
    unchecked: bool,
    pattern: &mut Pattern,
) -> Result<(), String> {
    let args: Vec<Vec<u8>> = sig.args().iter().map(|t| pattern.value(t)).collect();
    let before = args.clone();
    let ret_size = sig.ret().map_or(0, Type::size);
    let ret_bytes = sig.ret().map_or_else(Vec::new, |t| pattern.value(t));
    oracle.set_return_bytes(&ret_bytes);
    let arg_ptrs: Vec<*const c_void> = args.iter().map(|a| a.as_ptr().cast()).collect();

    let mut ret_t = aligned(ret_size);
    oracle.rec_reset();
    let func = oracle.sym(name);
    if unchecked {
        let words: Vec<u64> = sig.args().iter().zip(&args).map(|(t, b)| word_of(t, b)).collect();
        // SAFETY: `name` was generated from `sig`; the words encode its arguments (aggregates
        // point into `args`, alive); the result buffer has its size.
        unsafe { plan.call_words(func, &words, ret_t.as_mut_ptr().cast()) }
            .map_err(|e| format!("{name}: call_words: {e}"))?;
    } else {
        // SAFETY: as above.
        unsafe { plan.call(func, &arg_ptrs, ret_t.as_mut_ptr().cast()) }.map_err(|e| format!("{name}: call: {e}"))?;
    }
    let rec_t = oracle.recording();

    let mut ret_c = aligned(ret_size);
    oracle.rec_reset();
    // SAFETY: `void ref_<name>(void *const *args, void *ret)`, generated with the callee.
    unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(*const *const c_void, *mut c_void)>(
            oracle.sym(&format!("ref_{name}")),
        )(arg_ptrs.as_ptr(), ret_c.as_mut_ptr().cast())
    };
    let rec_c = oracle.recording();

    let how = if unchecked { "typed" } else { "checked" };
    if rec_t != rec_c {
        let at = rec_t.iter().zip(&rec_c).position(|(a, b)| a != b).unwrap_or(rec_t.len().min(rec_c.len()));
        return Err(format!(
            "{name} ({how}, {:?}): callee received other bytes than from the C caller (first difference at recorded byte {at})\n sig: {sig:?}\n trampoline: {rec_t:02x?}\n C:          {rec_c:02x?}",
            plan.vector_copy()
        ));
    }
    if args != before {
        return Err(format!("{name} ({how}): the caller's argument bytes changed during the call"));
    }
    if let Some(rt) = sig.ret() {
        let ranges = value_ranges(rt);
        // SAFETY: both buffers are at least ret_size bytes.
        let (t, c) = unsafe {
            (
                std::slice::from_raw_parts(ret_t.as_ptr().cast::<u8>(), ret_size),
                std::slice::from_raw_parts(ret_c.as_ptr().cast::<u8>(), ret_size),
            )
        };
        let pick = |b: &[u8]| -> Vec<u8> { ranges.iter().flat_map(|&(o, l)| b[o..o + l].iter().copied()).collect() };
        if pick(t) != pick(c) || pick(c) != pick(&ret_bytes) {
            return Err(format!(
                "{name} ({how}): result differs from the C caller's\n sig: {sig:?}\n trampoline: {:02x?}\n C:          {:02x?}",
                pick(t),
                pick(c)
            ));
        }
    }
    Ok(())
}

/// Runs this test binary again with only the test `name`, `env` set. Under qemu-user the host
/// kernel cannot exec an AArch64 or riscv64 child (no binfmt_misc) and the failed exec shows only
/// as status 127 with no output (tests/real_nccl.rs): that case runs again through qemu, with the
/// runner's arguments (.cargo/config.toml; `-cpu max` keeps BTI and PAC on).
pub fn rerun_self(name: &str, env: &[(&str, &str)]) -> std::process::Output {
    let exe = std::env::current_exe().unwrap();
    let args = ["--exact", name, "--nocapture", "--test-threads=1"];
    let run = |program: &std::ffi::OsStr, pre: &[&str]| {
        std::process::Command::new(program)
            .args(pre)
            .arg(&exe)
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
    };
    let out = run(exe.as_os_str(), &[]);
    let exec_failed = out.status.code() == Some(127) && out.stdout.is_empty() && out.stderr.is_empty();
    let qemu = if cfg!(target_arch = "aarch64") {
        Some(("qemu-aarch64", &["-cpu", "max", "-L", "/usr/aarch64-linux-gnu"][..]))
    } else if cfg!(target_arch = "riscv64") {
        Some(("qemu-riscv64", &["-L", "/usr/riscv64-linux-gnu"][..]))
    } else {
        None
    };
    match qemu {
        Some((default, pre)) if exec_failed => {
            let qemu = std::env::var("NCCL_TRAMPOLINE_TEST_QEMU").unwrap_or_else(|_| default.into());
            run(qemu.as_ref(), pre)
        }
        _ => out,
    }
}
