//! Builds the assembly call core for the target and generates its single source of truth:
//! the byte offsets of `CallFrame` that the assembly reads, and the version-suffixed entry symbol.
//!
//! Outputs in `OUT_DIR`:
//! - `frame_offsets.h`: `#define FRAME_*` for the assembly (and the C programs of the tests);
//! - `frame_offsets.rs`: the same numbers as `pub const`, asserted against `offset_of!` in
//!   `src/engine.rs`;
//! - `entry.rs`: the `extern "C"` declaration of the entry under its versioned link name.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Byte offsets of the fields of `engine::CallFrame`. `src/engine.rs` fails to compile if the
/// struct and this table ever disagree.
const FRAME_OFFSETS: &[(&str, usize, &str)] = &[
    ("FRAME_FUNC", 0, "function to call"),
    ("FRAME_STACK_ARGS", 8, "pointer to the stack-argument image"),
    ("FRAME_STACK_LEN", 16, "its length in bytes, a multiple of 16"),
    ("FRAME_INDIRECT_RESULT", 24, "x8 on AArch64 (unused on x86-64)"),
    ("FRAME_VECTOR_COUNT", 32, "%al on x86-64 (unused on AArch64)"),
    ("FRAME_INT_REGS", 48, "8 x u64: rdi rsi rdx rcx r8 r9 / x0..x7"),
    ("FRAME_VEC_REGS", 112, "8 x 16 bytes: xmm0..xmm7 / q0..q7"),
    ("FRAME_RET_INT", 240, "2 x u64: rax rdx / x0 x1"),
    ("FRAME_RET_VEC", 256, "4 x 16 bytes: xmm0 xmm1 / q0..q3"),
    ("FRAME_SIZE", 320, "size of the whole frame"),
];

/// The assembly file for a target, chosen explicitly (no guessing from the host).
fn find_assembly(arch: &str, os: &str) -> Option<(&'static str, &'static str)> {
    match (arch, os) {
        ("x86_64", "linux") => Some(("asm/x86_64.S", "x86_64_sysv")),
        ("aarch64", "linux") => Some(("asm/aarch64.S", "aarch64_aapcs64")),
        _ => None,
    }
}

/// Symbols carry the semver-compatibility part of the version, so two incompatible copies of
/// the crate can be linked into one binary: 0.1.x -> v0_1, 1.4.2 -> v1, 0.0.3 -> v0_0_3.
fn symbol_suffix(version: &str) -> String {
    let core = version.split(['-', '+']).next().unwrap_or(version);
    let parts: Vec<&str> = core.split('.').collect();
    let (major, minor, patch) = (parts[0], parts.get(1).copied().unwrap_or("0"), parts.get(2).copied().unwrap_or("0"));
    let mut suffix = if major != "0" {
        format!("v{major}")
    } else if minor != "0" {
        format!("v0_{minor}")
    } else {
        format!("v0_0_{patch}")
    };
    if let Some(pre) = version.split_once('-').map(|(_, pre)| pre) {
        // Pre-releases are incompatible with each other: keep the tag, made symbol-safe.
        let pre: String = pre
            .split('+')
            .next()
            .unwrap_or("")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        suffix.push('_');
        suffix.push_str(&pre);
    }
    suffix
}

fn main() {
    println!("cargo:rustc-check-cfg=cfg(nccl_trampoline_asm, values(\"x86_64_sysv\", \"aarch64_aapcs64\"))");
    println!("cargo:rerun-if-changed=build.rs");
    for f in ["asm/asm.h", "asm/x86_64.S", "asm/aarch64.S"] {
        println!("cargo:rerun-if-changed={f}");
    }

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let entry = format!("nccl_trampoline_call_{}", symbol_suffix(&version));

    write_offsets(&out, &entry);
    println!("cargo:rustc-env=NCCL_TRAMPOLINE_TARGET={arch}-{os}");

    let Some((source, cfg)) = find_assembly(&arch, &os) else {
        // No trampoline for this target: the crate still builds; calls return `Unsupported`.
        return;
    };
    let lib = format!("nccl_trampoline_core_{}", symbol_suffix(&version));
    cc::Build::new().file(source).include(&out).include("asm").define("TRAMPOLINE_ENTRY", entry.as_str()).compile(&lib);
    println!("cargo:rustc-cfg=nccl_trampoline_asm=\"{cfg}\"");
    // Where the tests find the built object (hardening checks) and the generated header.
    println!("cargo:rustc-env=NCCL_TRAMPOLINE_CORE_ARCHIVE={}", out.join(format!("lib{lib}.a")).display());
    println!("cargo:rustc-env=NCCL_TRAMPOLINE_CORE_INCLUDE={}", out.display());

    if env::var_os("CARGO_FEATURE_CLI").is_some() {
        build_selftest_oracle(&out);
    }
}

/// The C oracle of `nccl-trampoline selftest`: the recording runtime and the generated
/// callees and callers, linked into that program only (not into the library). Hidden
/// visibility: nothing of it is exported.
fn build_selftest_oracle(out: &Path) {
    let sources = ["tests/c/oracle_runtime.c", "src/bin/nccl-trampoline/selftest_oracle.c"];
    for f in sources {
        println!("cargo:rerun-if-changed={f}");
    }
    let name = "nccl_trampoline_selftest_oracle";
    cc::Build::new()
        .files(sources)
        .flag("-std=gnu11")
        .flag("-fvisibility=hidden")
        .flag("-Wno-unused-const-variable")
        .opt_level(1)
        .cargo_metadata(false)
        .compile(name);
    println!("cargo:rustc-link-arg-bin=nccl-trampoline={}", out.join(format!("lib{name}.a")).display());
}

fn write_offsets(out: &Path, entry: &str) {
    let mut h = String::from("/* Generated by build.rs: offsets of CallFrame (src/engine.rs). */\n#ifndef NCCL_TRAMPOLINE_FRAME_OFFSETS_H\n#define NCCL_TRAMPOLINE_FRAME_OFFSETS_H\n");
    let mut rs = String::from("// Generated by build.rs: offsets of CallFrame, asserted against offset_of! below.\n");
    for (name, value, what) in FRAME_OFFSETS {
        writeln!(h, "#define {name} {value} /* {what} */").unwrap();
        writeln!(rs, "/// Byte offset generated by build.rs: {what}.\npub const {name}: usize = {value};").unwrap();
    }
    writeln!(h, "#define TRAMPOLINE_ENTRY_NAME \"{entry}\"\n#endif").unwrap();
    writeln!(
        rs,
        "/// Link name of the assembly entry for this crate version.\npub const ENTRY_SYMBOL: &str = \"{entry}\";"
    )
    .unwrap();
    fs::write(out.join("frame_offsets.h"), h).expect("write frame_offsets.h");
    fs::write(out.join("frame_offsets.rs"), rs).expect("write frame_offsets.rs");
    let decl = format!(
        "extern \"C\" {{\n    /// The assembly entry (asm/<arch>.S).\n    #[link_name = \"{entry}\"]\n    fn trampoline_entry(frame: *mut CallFrame);\n}}\n"
    );
    fs::write(out.join("entry.rs"), decl).expect("write entry.rs");
}
