//! Builds the assembly call core for the target and generates its single source of truth: the
//! layout of a call program (header words, op fields, frame slots, status codes), the order of
//! the code table the assembly exports (handler families and their members, walks, typed word
//! bodies, checked straight-line bodies) and the version-suffixed table symbol.
//!
//! Outputs in `OUT_DIR`:
//! - `layout.h`: `#define`s for the assembly (and the C programs of the tests): every offset,
//!   every table index, and the member lists the assembly's `.irp` loops walk, so the table the
//!   assembly emits is in exactly the order the Rust side indexes;
//! - `layout.rs`: the same numbers as `pub const`, the name of every table slot, and the
//!   `extern` declaration of the table under its versioned link name (`src/engine/code.rs` includes
//!   it and asserts the numbers against its own types).

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Layout of a call program (`src/engine/program/` builds it, `asm/<arch>.S` walks it). Byte offsets.
const PROGRAM_LAYOUT: &[(&str, i64, &str)] = &[
    ("HDR_FRAME", 0, "header: bytes of outgoing stack arguments plus private copies (multiple of 16)"),
    ("HDR_ARGC", 8, "header: argument count (the checked walk null-checks argv[0..argc])"),
    ("HDR_OPS", 16, "header size: the first op"),
    ("OP_HANDLER", 0, "op: address of its handler"),
    ("OP_A", 8, "op: first operand (u64)"),
    ("OP_B", 16, "op: second operand (u64)"),
    ("OP_SIZE", 24, "size of one op"),
    ("STATUS_OK", 0, "checked entry: the function was called"),
    ("STATUS_NULL_ARGUMENT", 1, "checked entry: an argument pointer was null, nothing was called"),
    ("STATUS_NOT_NATIVE", 2, "checked entry: the plan cannot run on this target (Rust stub only)"),
    ("PROBE_PAGE", 4096, "frames larger than this are touched page by page (guard pages)"),
];

/// Frame slots of the framed walks, per architecture: x86-64 addresses them below %rbp, AArch64
/// above x29 (beside the frame record).
const FRAME_X86_64: &[(&str, i64, &str)] = &[
    ("SLOT_FUNC", -8, "framed walk: the function to call"),
    ("SLOT_CONT", -16, "framed walk: the op the walk continues at after the call"),
    ("SLOT_RET", -24, "checked walk: the caller's result buffer"),
    ("FRAME_SLOTS", 32, "bytes of slots below the saved %rbp (keeps %rsp 16-aligned)"),
];
const FRAME_RISCV64: &[(&str, i64, &str)] = &[
    ("SLOT_RET", -24, "checked walk: the caller's result buffer (below the saved ra and s0)"),
    ("SLOT_CONT", -32, "framed walk: the op the walk continues at after the call"),
    ("FRAME_RECORD", 32, "saved ra, s0 and the two slots, a multiple of 16; s0 = sp + FRAME_RECORD"),
];
const FRAME_AARCH64: &[(&str, i64, &str)] = &[
    ("SLOT_RET", 16, "checked walk: the caller's result buffer"),
    ("SLOT_CONT", 24, "framed walk: the op the walk continues at after the call"),
    ("FRAME_RECORD", 48, "frame record (x29, x30) plus slots, a multiple of 16"),
];

/// The frame record of a callback on x86-64: `nt_cb_common` (asm/x86_64.S) builds it at the
/// bottom of its frame from the registers the C caller left, the Rust dispatcher
/// (src/engine/callback/frame.rs, checked with `offset_of!`) reads the arguments from it and
/// writes the result registers into it, and `nt_cb_common` loads them back. Byte offsets from
/// the record's start (%rsp inside `nt_cb_common`, 16-aligned).
const CALLBACK_X86_64: &[(&str, i64, &str)] = &[
    ("CB_INT", 0, "callback record: rdi, rsi, rdx, rcx, r8, r9 as the C caller left them, 8 bytes each"),
    ("CB_VEC", 48, "callback record: xmm0..xmm7 as the C caller left them, 16 bytes each"),
    ("CB_STACK", 176, "callback record: the address of the first stack argument (the caller's %rsp at its call)"),
    ("CB_AL", 184, "callback record: %al zero-extended (vector registers used, set by variadic callers only)"),
    ("CB_INDEX", 192, "callback record: the pool index of the entry C called"),
    ("CB_X87", 200, "callback record, result: how many long doubles to push on the x87 stack (0, 1 or 2)"),
    ("CB_RET_INT", 208, "callback record, result: %rax then %rdx"),
    ("CB_RET_VEC", 224, "callback record, result: %xmm0 then %xmm1, 16 bytes each"),
    ("CB_RET_ST", 256, "callback record, result: the st(0) then st(1) images, 16 bytes each (10 value bytes)"),
    ("CB_SIZE", 288, "bytes of the callback record, a multiple of 16"),
];
/// The frame record of a callback on AArch64 (asm/aarch64.S, `nt_cb_common`): the same roles as
/// on x86-64. x0..x7 and q0..q7 are two contiguous areas, so a `va_list`'s `__gr_top` and
/// `__vr_top` (AAPCS64, appendix "Variable argument lists") can point at their ends. Byte offsets from
/// the record's start (sp inside `nt_cb_common`, 16-aligned, below the frame record x29, x30).
const CALLBACK_AARCH64: &[(&str, i64, &str)] = &[
    ("CB_INT", 0, "callback record: x0..x7 as the C caller left them, 8 bytes each"),
    (
        "CB_VEC",
        64,
        "callback record: q0..q7 as the C caller left them, 16 bytes each (whole: a long double is binary128)",
    ),
    ("CB_X8", 192, "callback record: x8, the indirect result address (AAPCS64 6.9: composites over 16 bytes)"),
    ("CB_STACK", 200, "callback record: the address of the first stack argument (the caller's sp at its call)"),
    ("CB_INDEX", 208, "callback record: the pool index of the entry C called"),
    ("CB_RET_INT", 224, "callback record, result: x0 then x1"),
    ("CB_RET_VEC", 240, "callback record, result: q0..q3, 16 bytes each (HFAs of up to four members)"),
    ("CB_SIZE", 304, "bytes of the callback record, a multiple of 16"),
];
/// The frame record of a callback on riscv64 (asm/riscv64.S, `nt_cb_common`). The record is the
/// stub's whole frame and ends at the caller's sp: a0..a7 are its last 64 bytes, immediately
/// below the caller's stack arguments, so one pointer walks from the register-passed variadic
/// arguments into the stack ones (as a variadic prologue of gcc lays them out). Byte offsets
/// from the record's start (sp inside `nt_cb_common`, 16-aligned).
const CALLBACK_RISCV64: &[(&str, i64, &str)] = &[
    ("CB_RET_INT", 0, "callback record, result: a0 then a1"),
    ("CB_RET_VEC", 16, "callback record, result: fa0 then fa1, 8 bytes each (a float NaN-boxed)"),
    ("CB_VEC", 32, "callback record: fa0..fa7 as the C caller left them, 8 bytes each"),
    ("CB_STACK", 96, "callback record: the address of the first stack argument (the caller's sp at its call)"),
    ("CB_INDEX", 104, "callback record: the pool index of the entry C called"),
    ("CB_RA", 112, "callback record: the stub's own return address (not read by Rust)"),
    ("CB_INT", 128, "callback record: a0..a7 as the C caller left them, 8 bytes each, ending at the caller's sp"),
    ("CB_SIZE", 192, "bytes of the callback record (the stub's whole frame), a multiple of 16"),
];
/// Callback entries per pool (docs/adr/0025-callbacks.md): each one is 16 bytes of `.text`, a
/// table slot and a slot of the dispatcher's; a callback holds one from creation to drop.
const CALLBACK_POOL: i64 = 256;

/// Integer widths and extensions of the `int` and `stk` handlers (ADR 2): sign- or zero-extended
/// 8, 16 and 32 bits, and 64 bits as is.
const EXT: &[&str] = &["s8", "s16", "s32", "z8", "z16", "z32", "q64"];
/// LP64D has no zero-extended 32-bit integer: a `uint32_t` is sign-extended to 64 bits like an
/// `int32_t` (RISC-V psABI, "Integer Calling Convention").
const EXT_RISCV64: &[&str] = &["s8", "s16", "s32", "z8", "z16", "q64"];
const LENS: &[&str] = &["1", "2", "3", "4", "5", "6", "7", "8"];
const FLOAT_LENS: &[&str] = &["4", "8"];

/// One architecture's code table: handler families (name, member lists), then the fixed parts.
struct Arch {
    asm: &'static str,
    cfg: &'static str,
    /// Integer widths and extensions (`EXT` or a subset).
    ext: &'static [&'static str],
    /// Integer argument registers, in ABI order.
    int_regs: &'static [&'static str],
    vec_regs: &'static [&'static str],
    families: Vec<(&'static str, Vec<&'static [&'static str]>)>,
    /// Most arguments of a checked straight-line body (`MAX_LINE_ARGS`).
    line_args: u32,
    /// Typed register bodies (`regs_<ni>_<nv>`, integer and vector registers) where true.
    regs_bodies: bool,
    frame: &'static [(&'static str, i64, &'static str)],
    /// The callback record's layout where the architecture has callback entries.
    callback: Option<&'static [(&'static str, i64, &'static str)]>,
}

fn arch(arch: &str, os: &str) -> Option<Arch> {
    const X86_INT: &[&str] = &["rdi", "rsi", "rdx", "rcx", "r8", "r9"];
    const X86_VEC: &[&str] = &["xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7"];
    const A64_INT: &[&str] = &["x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"];
    const A64_VEC: &[&str] = &["v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"];
    const RV_INT: &[&str] = &["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"];
    const RV_VEC: &[&str] = &["fa0", "fa1", "fa2", "fa3", "fa4", "fa5", "fa6", "fa7"];
    match (arch, os) {
        ("x86_64", "linux") => Some(Arch {
            asm: "asm/x86_64.S",
            cfg: "x86_64_sysv",
            ext: EXT,
            int_regs: X86_INT,
            vec_regs: X86_VEC,
            families: vec![
                ("int", vec![X86_INT, EXT]),
                ("vec", vec![X86_VEC, FLOAT_LENS]),
                ("load", vec![LENS]),
                ("movi", vec![X86_INT]),
                ("wint", vec![X86_INT]),
                ("wvec", vec![X86_VEC, FLOAT_LENS]),
                ("call", vec![]),
                ("stk", vec![EXT]),
                ("wstk", vec![]),
                ("copy", vec![&["sse", "avx", "avx512vl"]]),
                ("retaddr", vec![]),
                ("enter", vec![]),
                // enter for a typed call whose register arguments are all words: a register
                // body (regs_<ni>_<nv>) loads them (ADR 33).
                ("enterb", vec![]),
                // A multi-piece result: %rax holds 4 (after an SSE eightbyte, align-4 structs)
                // or 8 bytes, %rdx 1 to 8; one-piece results use donei / donev.
                ("resa", vec![&["4", "8"]]),
                ("resd", vec![LENS]),
                ("resv", vec![&["xmm0", "xmm1"], FLOAT_LENS]),
                // A long double result (X87, COMPLEX_X87): %st(0) stored and popped.
                ("resx", vec![]),
                ("donei", vec![LENS]),
                ("donev", vec![FLOAT_LENS]),
                ("return", vec![]),
                ("done", vec![]),
            ],
            // Seven and eight: the two stack words of ncclReduce's and ncclBroadcast's shapes.
            line_args: 8,
            regs_bodies: true,
            frame: FRAME_X86_64,
            callback: Some(CALLBACK_X86_64),
        }),
        ("aarch64", "linux") => Some(Arch {
            asm: "asm/aarch64.S",
            cfg: "aarch64_aapcs64",
            ext: EXT,
            int_regs: A64_INT,
            vec_regs: A64_VEC,
            families: vec![
                ("int", vec![A64_INT, EXT]),
                ("vec", vec![A64_VEC, FLOAT_LENS]),
                // A whole q register: a long double (binary128) or a member of an HFA of them.
                ("vecq", vec![A64_VEC]),
                ("load", vec![LENS]),
                ("movi", vec![A64_INT]),
                ("caddr", vec![A64_INT]),
                ("wint", vec![A64_INT]),
                ("wvec", vec![A64_VEC, FLOAT_LENS]),
                ("call", vec![]),
                ("stk", vec![EXT]),
                ("wstk", vec![]),
                ("copy", vec![&["neon"]]),
                ("stkcaddr", vec![]),
                ("x8", vec![]),
                ("enter", vec![]),
                // A multi-piece result in x0:x1: x0 holds 8 bytes, x1 1 to 8; one-piece
                // results use donei / donev.
                ("resa", vec![&["8"]]),
                ("resd", vec![LENS]),
                ("resv", vec![&["v0", "v1", "v2", "v3"], FLOAT_LENS]),
                ("resq", vec![&["v0", "v1", "v2", "v3"]]),
                ("donei", vec![LENS]),
                ("donev", vec![FLOAT_LENS]),
                ("return", vec![]),
                ("done", vec![]),
            ],
            line_args: MAX_LINE_ARGS_DEFAULT,
            regs_bodies: false,
            frame: FRAME_AARCH64,
            callback: Some(CALLBACK_AARCH64),
        }),
        ("riscv64", "linux") => Some(Arch {
            asm: "asm/riscv64.S",
            cfg: "riscv64_lp64d",
            ext: EXT_RISCV64,
            int_regs: RV_INT,
            vec_regs: RV_VEC,
            families: vec![
                ("int", vec![RV_INT, EXT_RISCV64]),
                ("vec", vec![RV_VEC, FLOAT_LENS]),
                ("load", vec![LENS]),
                ("movi", vec![RV_INT]),
                // The second half of an aggregate split between a7 and the stack: the bytes of
                // the load op before it, stored at the bottom of the outgoing area.
                ("movstk", vec![]),
                ("caddr", vec![RV_INT]),
                ("wint", vec![RV_INT]),
                ("wvec", vec![RV_VEC, FLOAT_LENS]),
                ("call", vec![]),
                ("stk", vec![EXT_RISCV64]),
                ("wstk", vec![]),
                ("copy", vec![&["xlen"]]),
                ("stkcaddr", vec![]),
                ("retaddr", vec![]),
                ("enter", vec![]),
                // A multi-piece result: a0 holds the integer member of a flattened struct (1,
                // 2, 4 or 8 bytes) or the first 8 bytes of one in a0:a1, a1 1 to 8; one-piece
                // results at offset 0 use donei / donev.
                ("resa", vec![&["1", "2", "4", "8"]]),
                ("resd", vec![LENS]),
                ("resv", vec![&["fa0", "fa1"], FLOAT_LENS]),
                ("donei", vec![LENS]),
                ("donev", vec![FLOAT_LENS]),
                ("return", vec![]),
                ("done", vec![]),
            ],
            line_args: MAX_LINE_ARGS_DEFAULT,
            regs_bodies: false,
            frame: FRAME_RISCV64,
            callback: Some(CALLBACK_RISCV64),
        }),
        _ => None,
    }
}

/// Checked straight-line bodies: at most this many arguments where the architecture says no
/// more (`Arch::line_args`; all in registers on every ABI), one body per width mask and result
/// kind.
const MAX_LINE_ARGS_DEFAULT: u32 = 6;
/// The width masks of checked straight-line bodies cover the first this many arguments; any
/// after them (x86-64: the seventh and eighth, stack words) are 64-bit integers or pointers.
const LINE_REG_ARGS: u32 = 6;
/// Typed register bodies (x86-64): `regs_<ni>_<nv>` for ni = 0 to this many integer registers
/// and nv = 0 to `REGS_VEC` vector registers.
const REGS_INT: u32 = 6;
const REGS_VEC: u32 = 8;
/// Their result kinds: a 4-byte or an 8-byte integer result stored at `ret`.
const LINE_KINDS: &[&str] = &["r4", "r8"];
/// Typed word bodies: one per argument count, 0 to this (the most a typed binding takes).
const MAX_WORD_ARGS: u32 = 12;
/// The walk entries, in table order.
const WALKS: &[&str] = &["walk_tail", "walk_framed", "walk_checked"];

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
    println!("cargo:rustc-check-cfg=cfg(nccl_trampoline_asm, values(\"x86_64_sysv\", \"aarch64_aapcs64\", \"riscv64_lp64d\"))");
    // cargo fuzz builds the library with `--cfg fuzzing` (the `fuzzing` module: fuzz/).
    println!("cargo:rustc-check-cfg=cfg(fuzzing)");
    println!("cargo:rustc-check-cfg=cfg(docsrs)");
    // Set where the target's assembly has callback entries (docs/adr/0025-callbacks.md).
    println!("cargo:rustc-check-cfg=cfg(nccl_trampoline_callbacks)");
    println!("cargo:rerun-if-changed=build.rs");
    for f in ["asm/asm.h", "asm/x86_64.S", "asm/aarch64.S", "asm/riscv64.S"] {
        println!("cargo:rerun-if-changed={f}");
    }

    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let target_arch = env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let table = format!("nccl_trampoline_table_{}", symbol_suffix(&version));
    let arch = arch(&target_arch, &os);

    write_layout(&out, &table, arch.as_ref());
    println!("cargo:rustc-env=NCCL_TRAMPOLINE_TARGET={target_arch}-{os}");

    let Some(arch) = arch else {
        // No trampoline for this target: the crate still builds; calls return `Unsupported`.
        return;
    };
    let lib = format!("nccl_trampoline_core_{}", symbol_suffix(&version));
    cc::Build::new()
        .file(arch.asm)
        .include(&out)
        .include("asm")
        .define("TRAMPOLINE_TABLE", table.as_str())
        .compile(&lib);
    println!("cargo:rustc-cfg=nccl_trampoline_asm=\"{}\"", arch.cfg);
    if arch.callback.is_some() {
        println!("cargo:rustc-cfg=nccl_trampoline_callbacks");
    }
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
    let sources = ["oracle/runtime.c", "generated/selftest_oracle.c"];
    for f in sources {
        println!("cargo:rerun-if-changed={f}");
    }
    let name = "nccl_trampoline_selftest_oracle";
    cc::Build::new()
        .files(sources)
        .flag("-std=gnu11")
        .flag("-fvisibility=hidden")
        .flag("-Wno-unused-const-variable")
        // gcc's note that it passes structs with a `_Complex float` member as it has since 4.4.
        .flag("-Wno-psabi")
        .opt_level(1)
        .cargo_metadata(false)
        .compile(name);
    println!("cargo:rustc-link-arg-bin=nccl-trampoline={}", out.join(format!("lib{name}.a")).display());
}

/// Every member name of a family: `family_d1_d2`, the last dimension varying fastest.
fn members(family: &str, dims: &[&[&str]]) -> Vec<String> {
    let mut names = vec![family.to_string()];
    for dim in dims {
        names = names.iter().flat_map(|n| dim.iter().map(move |d| format!("{n}_{d}"))).collect();
    }
    names
}

/// The checked straight-line body names in table order: for n = 0..=max, the signatures of n
/// arguments, each of the first LINE_REG_ARGS `i` (int32_t, sign-extended) or `q` (a 64-bit
/// integer or pointer), argument 0 first and most significant in the index, the rest `q`; each
/// with every result kind.
fn line_names(max: u32) -> Vec<String> {
    let mut names = Vec::new();
    for n in 0..=max {
        let masked = n.min(LINE_REG_ARGS);
        for mask in 0..(1u32 << masked) {
            let mut bits: String =
                (0..masked).map(|k| if mask >> (masked - 1 - k) & 1 == 1 { 'q' } else { 'i' }).collect();
            bits.extend((masked..n).map(|_| 'q'));
            let bits = if n == 0 { "none".to_string() } else { bits };
            names.extend(LINE_KINDS.iter().map(|k| format!("line_{bits}_{k}")));
        }
    }
    names
}

fn write_layout(out: &Path, table: &str, arch: Option<&Arch>) {
    let mut h = String::from(
        "/* Generated by build.rs: the call-program layout and the code-table order. */\n\
         #ifndef NCCL_TRAMPOLINE_LAYOUT_H\n#define NCCL_TRAMPOLINE_LAYOUT_H\n",
    );
    let mut rs = String::from("// Generated by build.rs: the call-program layout and the code-table order.\n");
    let mut constant = |name: &str, value: i64, what: &str| {
        writeln!(h, "#define {name} {value} /* {what} */").unwrap();
        writeln!(rs, "/// {what} (generated by build.rs).\npub const {name}: i64 = {value};").unwrap();
    };
    for (name, value, what) in PROGRAM_LAYOUT {
        constant(name, *value, what);
    }

    let mut names: Vec<String> = Vec::new();
    if let Some(a) = arch {
        for (name, value, what) in a.frame {
            constant(name, *value, what);
        }
        for (family, dims) in &a.families {
            let upper = family.to_uppercase();
            constant(&format!("H_{upper}"), names.len() as i64, &format!("table index of the first {family} handler"));
            names.extend(members(family, dims));
        }
        let handlers = names.len() as i64;
        constant("H_COUNT", handlers, "handlers in the table");
        constant("T_WALK", handlers, "table index of the walk entries (tail, framed, checked)");
        names.extend(WALKS.iter().map(|w| w.to_string()));
        constant("T_WORDS", names.len() as i64, "table index of the typed word bodies (by argument count)");
        constant("MAX_WORD_ARGS", i64::from(MAX_WORD_ARGS), "most arguments of a word body");
        names.extend((0..=MAX_WORD_ARGS).map(|n| format!("words_{n}")));
        constant("T_LINE", names.len() as i64, "table index of the checked straight-line bodies");
        constant("MAX_LINE_ARGS", i64::from(a.line_args), "most arguments of a checked straight-line body");
        constant(
            "LINE_REG_ARGS",
            i64::from(LINE_REG_ARGS),
            "arguments a line body's width mask covers (the rest: 64-bit)",
        );
        names.extend(line_names(a.line_args));
        let (ni, nv) = if a.regs_bodies { (REGS_INT, REGS_VEC) } else { (0, 0) };
        constant("T_REGS", names.len() as i64, "table index of the typed register bodies (`regs_<ni>_<nv>`)");
        constant("REGS_INT", i64::from(ni), "most integer registers of a register body (0: none)");
        constant("REGS_VEC", i64::from(nv), "most vector registers of a register body (0: none)");
        if a.regs_bodies {
            names.extend((0..=ni).flat_map(|i| (0..=nv).map(move |v| format!("regs_{i}_{v}"))));
        }
        if let Some(record) = a.callback {
            for (name, value, what) in record {
                constant(name, *value, what);
            }
            constant("CB_POOL", CALLBACK_POOL, "callback entries in the pool");
            constant("T_CB_INSTALL", names.len() as i64, "table index of cb_install (sets the Rust dispatcher)");
            names.push("cb_install".to_string());
            constant(
                "T_CB_DIRECT_SLOTS",
                names.len() as i64,
                "table index of cb_direct_slots (the address of the entries' direct targets)",
            );
            names.push("cb_direct_slots".to_string());
            constant("T_CB_COMMON", names.len() as i64, "table index of cb_common (every callback entry jumps there)");
            names.push("cb_common".to_string());
            constant("T_CB_ENTRY", names.len() as i64, "table index of callback entry 0 (then 1 to CB_POOL - 1)");
            names.extend((0..CALLBACK_POOL).map(|i| format!("cb_{i}")));
        }
        constant("T_LEN", names.len() as i64, "slots in the table");
        if a.callback.is_some() {
            let entries: Vec<String> = (0..CALLBACK_POOL).map(|i| i.to_string()).collect();
            writeln!(h, "#define L_CB_ENTRIES {}", entries.join(",")).unwrap();
        }
        let list = |v: &[&str]| v.join(",");
        writeln!(h, "#define L_INT_REGS {}", list(a.int_regs)).unwrap();
        writeln!(h, "#define L_VEC_REGS {}", list(a.vec_regs)).unwrap();
        writeln!(h, "#define L_EXT {}", list(a.ext)).unwrap();
        writeln!(h, "#define L_LENS {}", list(LENS)).unwrap();
        writeln!(h, "#define L_FLOAT_LENS {}", list(FLOAT_LENS)).unwrap();
        for (family, dims) in &a.families {
            for (i, dim) in dims.iter().enumerate() {
                writeln!(h, "#define L_{}_{i} {}", family.to_uppercase(), list(dim)).unwrap();
            }
        }
        writeln!(rs, "/// Integer argument registers, in ABI order.\npub const INT_REGS: &[&str] = &{:?};", a.int_regs)
            .unwrap();
        writeln!(rs, "/// Vector argument registers, in ABI order.\npub const VEC_REGS: &[&str] = &{:?};", a.vec_regs)
            .unwrap();
        writeln!(rs, "/// Integer widths and extensions, in family order.\npub const EXT: &[&str] = &{:?};", a.ext)
            .unwrap();
        for (family, dims) in &a.families {
            for (i, dim) in dims.iter().enumerate() {
                writeln!(
                    rs,
                    "/// Members of dimension {i} of the `{family}` handlers.\npub const L_{}_{i}: &[&str] = &{dim:?};",
                    family.to_uppercase()
                )
                .unwrap();
            }
        }
    }
    writeln!(h, "#define TRAMPOLINE_TABLE_NAME \"{table}\"\n#endif").unwrap();
    writeln!(rs, "/// Link name of the assembly's code table for this crate version.\npub const TABLE_SYMBOL: &str = \"{table}\";")
        .unwrap();
    writeln!(
        rs,
        "/// The name of every table slot, in table order (the assembly's symbol is `nt_` + name).\npub const TABLE_NAMES: &[&str] = &{names:?};"
    )
    .unwrap();
    fs::write(out.join("layout.h"), h).expect("write layout.h");
    fs::write(out.join("layout.rs"), rs).expect("write layout.rs");
    let decl = format!(
        "extern \"C\" {{\n    /// The code table of the assembly (asm/<arch>.S): handlers, walks, word and line bodies.\n    #[link_name = \"{table}\"]\n    static TABLE: [usize; T_LEN as usize];\n}}\n"
    );
    fs::write(out.join("table.rs"), decl).expect("write table.rs");
}
