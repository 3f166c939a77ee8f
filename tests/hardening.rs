//! Hardening of the assembly call core, checked on what the build produced rather than on the
//! source: the static archive build.rs assembled (`NCCL_TRAMPOLINE_CORE_ARCHIVE`), this test
//! executable, and, on AArch64, a program run with BTI enforced under `qemu-aarch64 -cpu max`.
//!
//! What asm/asm.h promises, and the check that keeps each promise true:
//! - a non-executable stack (`.note.GNU-stack` without X; `PT_GNU_STACK` RW in the linked test);
//! - the GNU property note: IBT, SHSTK on x86-64, BTI, PAC on AArch64 (the linker ANDs it, so
//!   one object without it unprotects the whole binary);
//! - the only global symbol is the code table: hidden and version-suffixed;
//! - every piece of code (entry, straight-line body, checked wrapper, handler) is a function
//!   symbol in the table, every table slot points at the start of the function build.rs named
//!   for it, and each starts with its landing pad: the call pad for entries, the jump pad
//!   (`endbr64` / `bti j`) for handlers (negative control: a copy of the object with one
//!   callback entry's pad replaced by a no-op is caught, and only that entry);
//! - call frame information covers every function (unwinders and profilers walk through it);
//! - on AArch64, the landing pads work: a BTI-enforced program calls through the trampoline
//!   (walks, every handler kind it uses, a straight-line body, a checked wrapper), and its
//!   negative control (a callee without a landing pad) dies with SIGILL; and C calls into
//!   callback entries (their `bti c`, cb_common's PAC pair, a C dispatcher), whose negative
//!   control (every entry entered past its pad) dies with SIGILL.
//!
//! Every tool is required: a missing one fails the test and names the tool, so a check that
//! could not run is never reported as passed. Overrides: `NCCL_TRAMPOLINE_OBJDUMP`,
//! `NCCL_TRAMPOLINE_TEST_CC`, `NCCL_TRAMPOLINE_TEST_QEMU`. Under qemu-user the test still
//! spawns the host's tools: qemu passes execve through to the host kernel.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nccl_trampoline::__private::layout::{H_COUNT, TABLE_NAMES, TABLE_SYMBOL};

/// The static archive holding the assembled trampoline object (build.rs).
const ARCHIVE: &str = env!("NCCL_TRAMPOLINE_CORE_ARCHIVE");

/// What the assembly must look like on this target.
#[cfg_attr(target_arch = "riscv64", allow(dead_code))]
struct Expected {
    /// Properties line of `readelf -n`, after "Properties: "; `None`: no property note at all.
    property_note: Option<&'static str>,
    /// First instruction of every entry (called), as objdump's whitespace-separated words.
    call_pad: &'static [&'static str],
    /// First instruction of every handler (jumped to).
    jump_pad: &'static [&'static str],
    /// objdump that can disassemble this target.
    objdump: &'static str,
}

#[cfg(target_arch = "x86_64")]
const EXPECTED: Expected = Expected {
    property_note: Some("x86 feature: IBT, SHSTK"),
    call_pad: &["endbr64"],
    jump_pad: &["endbr64"],
    objdump: "objdump",
};

#[cfg(target_arch = "aarch64")]
const EXPECTED: Expected = Expected {
    property_note: Some("AArch64 feature: BTI, PAC"),
    call_pad: &["bti", "c"],
    jump_pad: &["bti", "j"],
    objdump: "aarch64-linux-gnu-objdump",
};

/// riscv64: no landing pads and no property note. The Debian 12 toolchain (binutils 2.40, GCC
/// 12) has no Zicfilp/Zicfiss (`lpad`, `sspush`, GNU_PROPERTY_RISCV_FEATURE_1_AND) and qemu 7.2
/// cannot enforce them (asm/asm.h, ADR 5): the note must be absent, so that nothing claims a
/// protection the code was never checked against; the landing-pad test does not exist here.
#[cfg(target_arch = "riscv64")]
const EXPECTED: Expected =
    Expected { property_note: None, call_pad: &[], jump_pad: &[], objdump: "riscv64-linux-gnu-objdump" };

#[cfg_attr(target_arch = "riscv64", allow(dead_code))]
/// The landing pad a table slot's code must start with: handlers are jumped to, the rest called.
fn landing_pad(symbol: &str) -> &'static [&'static str] {
    let handlers = &TABLE_NAMES[..H_COUNT as usize];
    if handlers.iter().any(|h| symbol.strip_prefix("nt_") == Some(h)) {
        EXPECTED.jump_pad
    } else {
        EXPECTED.call_pad
    }
}

// ---------------------------------------------------------------------------------------------
// Running the tools.

/// `name`, or the program named by the environment variable `var` when it is set.
#[cfg_attr(target_arch = "riscv64", allow(dead_code))]
fn tool(var: &str, name: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| name.to_string())
}

/// The path of `program`, searched on PATH unless it names a path; panics naming the tool when
/// there is none. Looked up here rather than left to spawn: under qemu-user a failed exec in
/// the child is not reported back to the parent (glibc's vfork-style posix_spawn becomes a
/// plain fork), so a missing tool would read as a tool that failed without a word.
fn resolve(program: &str) -> PathBuf {
    let is_executable =
        |p: &Path| p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false);
    let found = if program.contains('/') {
        Some(PathBuf::from(program)).filter(|p| is_executable(p))
    } else {
        std::env::var_os("PATH")
            .and_then(|path| std::env::split_paths(&path).map(|dir| dir.join(program)).find(|p| is_executable(p)))
    };
    found.unwrap_or_else(|| {
        panic!(
            "required tool `{program}` not found (PATH or its override variable): install it; this check did not run"
        )
    })
}

/// Runs `program`; panics naming the tool when it cannot be started, so a missing tool fails.
fn spawn(program: &str, args: &[&str], cwd: Option<&Path>) -> Output {
    let mut cmd = Command::new(resolve(program));
    cmd.args(args);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("required tool `{program}` could not be run ({e}); this check did not run"));
    // 127 with nothing said: the exec itself failed in the child (see `resolve`).
    assert!(
        !(out.status.code() == Some(127) && out.stdout.is_empty() && out.stderr.is_empty()),
        "required tool `{program}` could not be executed; this check did not run"
    );
    out
}

/// Runs a tool that must succeed, and returns its stdout.
fn stdout_of(program: &str, args: &[&str]) -> String {
    let out = spawn(program, args, None);
    assert!(
        out.status.success(),
        "`{program} {}` failed ({}):\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("`{program}` printed non-UTF-8: {e}"))
}

fn readelf(args: &[&str], file: &str) -> String {
    let mut all = args.to_vec();
    all.push(file);
    stdout_of("readelf", &all)
}

/// Splits readelf output on an archive into (member, text) pairs, one per "File: " heading.
fn per_member(output: &str) -> Vec<(String, String)> {
    let mut members = Vec::new();
    for chunk in output.split("\nFile: ").skip(1) {
        let (heading, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
        members.push((heading.trim().to_string(), body.to_string()));
    }
    assert!(!members.is_empty(), "readelf printed no archive member (is {ARCHIVE} an archive?):\n{output}");
    members
}

// ---------------------------------------------------------------------------------------------
// The symbol table.

#[derive(Debug, Clone)]
struct Symbol {
    member: String,
    value: u64,
    size: u64,
    kind: String,
    bind: String,
    vis: String,
    ndx: String,
    name: String,
}

fn parse_number(text: &str) -> u64 {
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    }
    .unwrap_or_else(|e| panic!("readelf printed a size that is not a number: {text:?} ({e})"))
}

/// Every named symbol of every member, from `readelf -sW`.
fn symbols() -> Vec<Symbol> {
    let mut symbols = Vec::new();
    for (member, body) in per_member(&readelf(&["-sW"], ARCHIVE)) {
        for line in body.lines() {
            // "   Num:    Value          Size Type    Bind   Vis      Ndx Name"; Vis may be
            // followed by "[VARIANT_PCS]" and the like, so Ndx and Name are taken from the end.
            let t: Vec<&str> = line.split_whitespace().collect();
            if t.len() < 8 || !t[0].ends_with(':') || t[0].trim_end_matches(':').parse::<u32>().is_err() {
                continue;
            }
            symbols.push(Symbol {
                member: member.clone(),
                value: u64::from_str_radix(t[1], 16).unwrap_or_else(|e| panic!("symbol value {:?}: {e}", t[1])),
                size: parse_number(t[2]),
                kind: t[3].to_string(),
                bind: t[4].to_string(),
                vis: t[5].to_string(),
                ndx: t[t.len() - 2].to_string(),
                name: t[t.len() - 1].to_string(),
            });
        }
    }
    symbols
}

fn is_global(s: &Symbol) -> bool {
    s.bind == "GLOBAL" || s.bind == "WEAK"
}

/// Every piece of code: the defined function symbols, local ones included.
fn functions(symbols: &[Symbol]) -> Vec<Symbol> {
    let functions: Vec<Symbol> = symbols.iter().filter(|s| s.kind == "FUNC" && s.ndx != "UND").cloned().collect();
    assert!(!functions.is_empty(), "no function symbols in {ARCHIVE}");
    functions
}

/// The version suffix the symbols must carry, derived from the package version independently
/// of build.rs: 0.1.x -> v0_1, 1.4.2 -> v1, 0.0.3 -> v0_0_3; a pre-release keeps its tag,
/// made symbol-safe (0.2.0-alpha.1 -> v0_2_alpha_1).
fn version_suffix() -> String {
    let version = env!("CARGO_PKG_VERSION");
    let core = version.split(['-', '+']).next().unwrap_or(version);
    let mut parts = core.split('.');
    let (major, minor, patch) = (parts.next().unwrap_or("0"), parts.next().unwrap_or("0"), parts.next().unwrap_or("0"));
    let mut suffix = if major != "0" {
        format!("v{major}")
    } else if minor != "0" {
        format!("v0_{minor}")
    } else {
        format!("v0_0_{patch}")
    };
    if let Some((_, pre)) = version.split('+').next().unwrap_or(version).split_once('-') {
        suffix.push('_');
        suffix.extend(pre.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }));
    }
    suffix
}

// ---------------------------------------------------------------------------------------------
// 1. The assembled object.

/// (a) `.note.GNU-stack` is present and not executable: without it the linker makes the whole
/// stack executable, and glibc >= 2.41 refuses to dlopen the library.
#[test]
fn object_has_non_executable_stack_note() {
    for (member, body) in per_member(&readelf(&["-SW"], ARCHIVE)) {
        let line = body.lines().find(|l| l.split_whitespace().any(|w| w == ".note.GNU-stack")).unwrap_or_else(|| {
            panic!("{member}: no .note.GNU-stack section: the linker would make the stack executable\n{body}")
        });
        // After the name: Type Address Off Size ES [Flg] Lk Inf Al; Flg is absent when empty.
        let after = line.split(".note.GNU-stack").nth(1).unwrap_or_default();
        let t: Vec<&str> = after.split_whitespace().collect();
        assert!(t.len() == 8 || t.len() == 9, "{member}: cannot read the section line {line:?}");
        let flags = if t.len() == 9 { t[5] } else { "" };
        assert!(!flags.contains('X'), "{member}: .note.GNU-stack has flags {flags:?}: an executable stack\n{line}");
        println!("hardening: {member}: .note.GNU-stack flags {flags:?}");
    }
}

/// (b) The GNU property note declares the control-flow protections (riscv64: declares none,
/// there is no note).
#[test]
fn object_declares_control_flow_protection_property() {
    for (member, body) in per_member(&readelf(&["-n"], ARCHIVE)) {
        let properties: Vec<&str> = body.lines().filter_map(|l| l.trim().strip_prefix("Properties: ")).collect();
        let expected: Vec<&str> = EXPECTED.property_note.into_iter().collect();
        assert_eq!(
            properties, expected,
            "{member}: the NT_GNU_PROPERTY_TYPE_0 note must say exactly {:?}\n{body}",
            EXPECTED.property_note
        );
        println!("hardening: {member}: Properties: {:?}", EXPECTED.property_note);
    }
}

/// (c) The code table is the only global symbol, hidden (linkable from the crate, never exported
/// from a shared object) and version-suffixed, so two semver-incompatible copies of the crate
/// link into one binary; every other symbol is local.
#[test]
fn globals_are_hidden_and_versioned() {
    let suffix = version_suffix();
    assert_eq!(TABLE_SYMBOL, format!("nccl_trampoline_table_{suffix}"), "TABLE_SYMBOL does not carry the version");
    let symbols = symbols();
    let table: Vec<&Symbol> = symbols.iter().filter(|s| s.name == TABLE_SYMBOL).collect();
    assert_eq!(table.len(), 1, "{TABLE_SYMBOL} must be defined exactly once in {ARCHIVE}: {table:?}");
    let table = table[0];
    assert_eq!(
        (table.kind.as_str(), table.bind.as_str(), table.vis.as_str()),
        ("OBJECT", "GLOBAL", "HIDDEN"),
        "{table:?}"
    );
    assert_ne!(table.ndx, "UND", "{table:?}");
    assert_eq!(table.size, 8 * TABLE_NAMES.len() as u64, "{TABLE_SYMBOL} has the wrong .size: {table:?}");

    let globals: Vec<&Symbol> = symbols.iter().filter(|s| is_global(s)).collect();
    for s in &globals {
        assert!(
            s.name.starts_with("nccl_trampoline_") && s.name.ends_with(&format!("_{suffix}")),
            "global symbol {:?} in {} lacks the prefix nccl_trampoline_ or the version suffix _{suffix}: {s:?}",
            s.name,
            s.member
        );
        if s.ndx != "UND" {
            assert_eq!(s.vis, "HIDDEN", "defined global {} is exported: {s:?}", s.name);
        }
    }
    assert!(
        functions(&symbols).iter().all(|f| !is_global(f)),
        "a function is global: only the table may be (the code is reached through it)"
    );
    println!(
        "hardening: globals {:?}: versioned (_{suffix}), defined ones hidden",
        globals.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
}

/// (c') Every table slot points at the start of the function build.rs named for it, and every
/// function is in the table: read from the table section's relocations.
#[test]
fn every_table_slot_points_at_its_function() {
    let symbols = symbols();
    let functions = functions(&symbols);
    let relocs = stdout_of("readelf", &["-rW", ARCHIVE]);
    let section = relocs
        .split("Relocation section ")
        .find(|s| s.starts_with("'.rela.data.rel.ro.nccl_trampoline_table'"))
        .unwrap_or_else(|| panic!("no relocations for the table section in {ARCHIVE}:\n{relocs}"));
    let mut slots = vec![None; TABLE_NAMES.len()];
    for line in section.lines().skip(1) {
        // Offset Info Type Sym.Value Sym.Name + Addend
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.len() < 7 || t[5] != "+" {
            continue;
        }
        let offset = u64::from_str_radix(t[0], 16).expect("relocation offset");
        let target =
            u64::from_str_radix(t[3], 16).expect("symbol value") + u64::from_str_radix(t[6], 16).expect("addend");
        let function = functions
            .iter()
            .find(|f| f.value == target && (t[4] == ".text" || t[4] == f.name))
            .unwrap_or_else(|| panic!("table slot {} points at {t:?}, not at the start of a function", offset / 8));
        slots[(offset / 8) as usize] = Some(function.name.clone());
    }
    for (i, name) in TABLE_NAMES.iter().enumerate() {
        assert_eq!(slots[i].as_deref(), Some(format!("nt_{name}").as_str()), "table slot {i} must be nt_{name}");
    }
    let in_table: std::collections::HashSet<String> = TABLE_NAMES.iter().map(|n| format!("nt_{n}")).collect();
    for f in &functions {
        assert!(in_table.contains(&f.name), "function {} is not in the table (dead code or a missing slot)", f.name);
    }
    println!("hardening: {} table slots, each the start of its function, every function in the table", slots.len());
}

/// (d) The first instruction of every function is its landing pad: `endbr64` on x86-64; on
/// AArch64 `bti c` for entries (called) and `bti j` for handlers (jumped to). (Not on riscv64:
/// see its `EXPECTED`.)
#[cfg(not(target_arch = "riscv64"))]
#[test]
fn every_function_starts_with_its_landing_pad() {
    let (missing, counts) = landing_pads(ARCHIVE);
    assert!(missing.is_empty(), "functions not starting with their landing pad:\n{}", missing.join("\n"));
    println!("hardening: every function starts with its landing pad: {counts:?}");
}

/// The functions of `file` (the archive, or an object of it) that do not start with their
/// landing pad, each with what it starts with instead; and how many start with each pad.
#[cfg(not(target_arch = "riscv64"))]
fn landing_pads(file: &str) -> (Vec<String>, std::collections::BTreeMap<String, usize>) {
    let objdump = tool("NCCL_TRAMPOLINE_OBJDUMP", EXPECTED.objdump);
    let listing = stdout_of(&objdump, &["-d", "--no-show-raw-insn", file]);
    let (mut missing, mut counts) = (Vec::new(), std::collections::BTreeMap::new());
    for function in functions(&symbols()) {
        let heading = format!("<{}>:", function.name);
        let mut lines = listing.lines().skip_while(|l| !l.trim_end().ends_with(&heading));
        assert!(lines.next().is_some(), "{objdump} shows no code for {}:\n{listing}", function.name);
        let first = lines
            .find(|l| !l.trim().is_empty())
            .unwrap_or_else(|| panic!("{objdump} shows no instruction for {}", function.name));
        // "   0:\tbti\tc" -> ["bti", "c"]
        let insn: Vec<&str> = first.split_once(':').map(|(_, i)| i).unwrap_or_default().split_whitespace().collect();
        let pad = landing_pad(&function.name);
        if insn == pad {
            *counts.entry(pad.join(" ")).or_insert(0) += 1;
        } else {
            missing.push(format!("{}: first instruction is {first:?}, not the landing pad {pad:?}", function.name));
        }
    }
    (missing, counts)
}

/// The negative control of (d), on the object itself: a copy of the assembled object whose
/// callback entry 7 starts with a four-byte no-op instead of its landing pad (`endbr64` / `bti
/// c`: a callback entry C would reach by an indirect call without a pad) must be caught, and
/// only that entry. (On AArch64 the pads are also enforced: `bti_negative_control_*` below.)
#[cfg(not(target_arch = "riscv64"))]
#[test]
fn landing_pad_negative_control_a_callback_entry_without_its_pad_is_caught() {
    let (pad, nop): (&[u8], &[u8]) = if cfg!(target_arch = "x86_64") {
        (&[0xf3, 0x0f, 0x1e, 0xfa], &[0x0f, 0x1f, 0x40, 0x00]) // endbr64; nopl 0(%rax)
    } else {
        (&[0x5f, 0x24, 0x03, 0xd5], &[0x1f, 0x20, 0x03, 0xd5]) // bti c; nop
    };
    let symbols = symbols();
    let entry = symbols.iter().find(|s| s.name == "nt_cb_7").expect("callback entry 7 in the object");
    let dir = std::env::temp_dir().join(format!("nt-pad-control-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // readelf names a member "archive.a(member.o)".
    let member = entry.member.rsplit_once('(').map_or(&entry.member[..], |(_, m)| m.trim_end_matches(')'));
    let archive = std::fs::canonicalize(ARCHIVE).unwrap();
    let out = spawn("ar", &["x", archive.to_str().unwrap(), member], Some(&dir));
    assert!(out.status.success(), "ar x {ARCHIVE} {member}: {}", String::from_utf8_lossy(&out.stderr));
    let object = dir.join(member);
    let object = object.to_str().unwrap();
    // The entry's file offset: its section's offset (readelf -SW: "[Nr] Name Type Address Off")
    // plus the symbol's value.
    let sections = readelf(&["-SW"], object);
    let section_offset = sections
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix('[').and_then(|r| r.split_once(']')))
        .find(|(nr, _)| nr.trim() == entry.ndx)
        .and_then(|(_, rest)| rest.split_whitespace().nth(3).map(|off| u64::from_str_radix(off, 16).unwrap()))
        .unwrap_or_else(|| panic!("section {} of nt_cb_7 not in:\n{sections}", entry.ndx));
    let at = (section_offset + entry.value) as usize;
    let mut bytes = std::fs::read(object).unwrap();
    assert_eq!(&bytes[at..at + 4], pad, "nt_cb_7 does not start with the landing pad's bytes at {at:#x}");
    bytes[at..at + 4].copy_from_slice(nop);
    std::fs::write(object, &bytes).unwrap();
    let (missing, _) = landing_pads(object);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(missing.len(), 1, "the copy without entry 7's pad: {missing:#?}");
    assert!(missing[0].starts_with("nt_cb_7:"), "{missing:?}");
}

/// (e) This test executable, which links the object, has a non-executable stack.
#[test]
fn test_executable_stack_is_not_executable() {
    let exe = std::env::current_exe().expect("current_exe");
    let exe = exe.to_str().expect("UTF-8 path of the test executable");
    let headers = readelf(&["-lW"], exe);
    let line = headers
        .lines()
        .find(|l| l.trim_start().starts_with("GNU_STACK"))
        .unwrap_or_else(|| panic!("{exe} has no PT_GNU_STACK program header\n{headers}"));
    // GNU_STACK Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align; Flg may be split ("R E").
    let t: Vec<&str> = line.split_whitespace().collect();
    assert!(t.len() >= 8, "cannot read {line:?}");
    let flags: String = t[6..t.len() - 1].concat();
    assert_eq!(flags, "RW", "{exe}: the stack is mapped {flags:?}, not RW\n{line}");
    println!("hardening: test executable PT_GNU_STACK {flags}");
}

/// (f) Call frame information: an FDE covers every function from its first to its last byte
/// (handlers share one FDE per region, which states the region's stack state from its start).
#[test]
fn every_function_has_call_frame_information() {
    let frames = per_member(&readelf(&["--debug-dump=frames"], ARCHIVE));
    let functions = functions(&symbols());
    for function in &functions {
        let body = &frames
            .iter()
            .find(|(m, _)| *m == function.member)
            .unwrap_or_else(|| panic!("readelf printed no frames for {}", function.member))
            .1;
        let fdes: Vec<(u64, u64)> = body
            .lines()
            .filter(|l| l.contains(" FDE "))
            .filter_map(|l| l.split("pc=").nth(1))
            .filter_map(|r| {
                let (lo, hi) = r.trim().split_once("..")?;
                Some((u64::from_str_radix(lo, 16).ok()?, u64::from_str_radix(hi, 16).ok()?))
            })
            .collect();
        let (lo, hi) = (function.value, function.value + function.size);
        assert!(function.size > 0, "{} has no .size", function.name);
        assert!(
            fdes.iter().any(|&(start, end)| start <= lo && hi <= end),
            "{}: no FDE covers {lo:#x}..{hi:#x} (FDEs: {fdes:x?}): .cfi_startproc/.cfi_endproc missing?\n{body}",
            function.name
        );
    }
    println!("hardening: FDEs cover all {} functions", functions.len());
}

// ---------------------------------------------------------------------------------------------
// 2. AArch64: BTI enforced for real.

#[cfg(target_arch = "aarch64")]
mod bti {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    const SIGILL: i32 = 4;

    fn c_file(name: &str) -> String {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(name).to_str().expect("UTF-8 path").to_string()
    }

    /// A fresh directory for one test's build products (and qemu's core dumps).
    fn work_dir(name: &str) -> PathBuf {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hardening-aarch64-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the work directory");
        dir
    }

    fn qemu() -> String {
        tool("NCCL_TRAMPOLINE_TEST_QEMU", "qemu-aarch64")
    }

    fn describe(status: ExitStatus) -> String {
        match (status.code(), status.signal()) {
            (_, Some(sig)) => format!("killed by signal {sig}"),
            (Some(code), None) => format!("exit status {code}"),
            (None, None) => format!("{status:?}"),
        }
    }

    /// A static, freestanding, BTI-marked program: bti_main.c, the callee, the trampoline.
    /// Returns its path and what the linker printed on stderr.
    fn build(dir: &Path, callee: &str, callee_branch_protection: &str) -> (String, String) {
        build_program(dir, "bti_main.c", &[], Some((callee, callee_branch_protection)))
    }

    /// A static, freestanding, BTI-marked program: `main` (built with `defines`), the callee if
    /// any, the trampoline. Returns its path and what the linker printed on stderr.
    fn build_program(dir: &Path, main: &str, defines: &[&str], callee: Option<(&str, &str)>) -> (String, String) {
        let cc = tool("NCCL_TRAMPOLINE_TEST_CC", "aarch64-linux-gnu-gcc");
        let include = format!("-I{}", env!("NCCL_TRAMPOLINE_CORE_INCLUDE"));
        let c_include = format!("-I{}", c_file(""));
        let entry = format!("-DTRAMPOLINE_TABLE={TABLE_SYMBOL}");
        let common = ["-c", "-O2", "-std=gnu11", "-Wall", "-Werror", "-ffreestanding", "-fno-stack-protector"];
        let compile = |src: &str, obj: &str, branch_protection: &str, defines: &[&str]| {
            let flag = format!("-mbranch-protection={branch_protection}");
            let mut args: Vec<&str> = common.to_vec();
            args.extend(defines);
            args.extend([flag.as_str(), include.as_str(), c_include.as_str(), entry.as_str(), "-o", obj, src]);
            let out = spawn(&cc, &args, Some(dir));
            assert!(out.status.success(), "{cc} {}:\n{}", args.join(" "), String::from_utf8_lossy(&out.stderr));
        };
        compile(&c_file(main), "main.o", "standard", defines);
        let mut args = vec!["-static", "-nostdlib", "-Wl,-z,force-bti", "-o", "prog", "main.o"];
        if let Some((callee, branch_protection)) = callee {
            compile(&c_file(callee), "callee.o", branch_protection, &[]);
            args.push("callee.o");
        }
        args.push(ARCHIVE);
        let out = spawn(&cc, &args, Some(dir));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "linking: {cc} {}:\n{stderr}", args.join(" "));
        (dir.join("prog").to_str().expect("UTF-8 path").to_string(), stderr)
    }

    /// The program carries BTI in its property note and a PT_GNU_PROPERTY header, which is
    /// what makes the loader (the kernel, or qemu-user for a static binary) map its code with
    /// the guarded-page bit.
    fn assert_bti_marked(prog: &str) {
        let notes = readelf(&["-n"], prog);
        let features: Vec<&str> =
            notes.lines().filter_map(|l| l.trim().strip_prefix("Properties: AArch64 feature: ")).collect();
        assert!(
            features.len() == 1 && features[0].split(", ").any(|f| f == "BTI"),
            "{prog} does not carry the BTI property, so BTI would not be enforced:\n{notes}"
        );
        let headers = readelf(&["-lW"], prog);
        assert!(
            headers.lines().any(|l| l.trim_start().starts_with("GNU_PROPERTY")),
            "{prog} has no PT_GNU_PROPERTY header, so the loader would not enable BTI:\n{headers}"
        );
    }

    fn run(dir: &Path, cpu: &str, prog: &str) -> Output {
        spawn(&qemu(), &["-cpu", cpu, prog], Some(dir))
    }

    /// A negative control's verdict: `prog` exits 0 on a CPU without FEAT_BTI (so the program is
    /// correct and whatever kills it under `-cpu max` is BTI, not a bug in it), and dies with
    /// SIGILL under `-cpu max` (`what` was entered past its landing pad). Returns how it died.
    fn exits_0_without_bti_and_sigill_with_it(dir: &Path, prog: &str, what: &str) -> String {
        let out = run(dir, "cortex-a57", prog);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{prog} under `{} -cpu cortex-a57` (no BTI): {}; the negative control is broken\n{}",
            qemu(),
            describe(out.status),
            String::from_utf8_lossy(&out.stderr)
        );
        // qemu-user re-raises the guest's fatal signal on itself; through a shell that reads 132.
        let out = run(dir, "max", prog);
        let sigill = out.status.signal() == Some(SIGILL) || out.status.code() == Some(128 + SIGILL);
        assert!(
            sigill,
            "{prog} under `{} -cpu max`: {}, expected SIGILL: BTI is not enforced on {what}\n{}",
            qemu(),
            describe(out.status),
            String::from_utf8_lossy(&out.stderr)
        );
        describe(out.status)
    }

    /// Called indirectly from BTI-guarded code, the entries' `bti c` lets the calls in, the
    /// handlers' `bti j` lets the walk's jumps in; the `paciasp`/`autiasp` pairs round-trip;
    /// the call op and a straight-line body enter C callees with landing pads by `br x16`;
    /// integer registers, the stack argument and the B.4 struct address arrive, and results
    /// come back in x0 and through the checked entries' result buffers.
    #[test]
    fn bti_enforced_call_through_trampoline() {
        let dir = work_dir("bti-positive");
        let (prog, link_stderr) = build(&dir, "bti_callee.c", "standard");
        // Every input (the trampoline included) carries BTI by itself: -z force-bti had
        // nothing to force, so it did not warn.
        assert!(
            !link_stderr.contains("BTI"),
            "the linker had to force BTI, so an input lacks the BTI property (the trampoline?):\n{link_stderr}"
        );
        assert_bti_marked(&prog);
        let notes = readelf(&["-n"], &prog);
        assert!(
            notes.contains("AArch64 feature: BTI, PAC"),
            "all inputs are BTI and PAC, the program must be too:\n{notes}"
        );

        let out = run(&dir, "max", &prog);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{prog} under `{} -cpu max`: {} (10 + n: check n of bti_main.c failed)\n{}",
            qemu(),
            describe(out.status),
            String::from_utf8_lossy(&out.stderr)
        );
        println!("hardening: BTI-enforced program called through {TABLE_SYMBOL}'s walks, word bodies and a checked body: exit 0");
    }

    /// Negative control: the same program with a callee that has no landing pad must die with
    /// SIGILL on the trampoline's BLR. Without this, the positive test could pass with BTI off.
    #[test]
    fn bti_negative_control_dies_with_sigill() {
        let dir = work_dir("bti-negative");
        let (prog, _) = build(&dir, "bti_callee_nopad.c", "none");
        assert_bti_marked(&prog);

        // The callee really starts with no landing pad (not bti, not paciasp/pacibsp).
        let objdump = tool("NCCL_TRAMPOLINE_OBJDUMP", EXPECTED.objdump);
        let listing = stdout_of(&objdump, &["-d", "--no-show-raw-insn", &prog]);
        let first = listing
            .lines()
            .skip_while(|l| !l.trim_end().ends_with("<bti_callee>:"))
            .nth(1)
            .unwrap_or_else(|| panic!("no bti_callee in {prog}"));
        let mnemonic =
            first.split_once(':').map(|(_, i)| i).unwrap_or_default().split_whitespace().next().unwrap_or_default();
        assert!(
            !["bti", "paciasp", "pacibsp"].contains(&mnemonic),
            "the negative callee starts with a landing pad: {first:?}"
        );

        let died = exits_0_without_bti_and_sigill_with_it(&dir, &prog, "the callee");
        println!("hardening: callee without landing pad: exit 0 without BTI, {died} with BTI");
    }

    /// Callback entries (ADR 25) called indirectly from BTI-guarded code: each entry's `bti c`
    /// lets C's BLR in, cb_common signs and authenticates its return address, and its call of
    /// the dispatcher (here a C one, installed with cb_install) and the registers it saves and
    /// loads work: bti_callback_main.c checks x0..x7, x8, d0, the stack argument and the index
    /// in the record, and x0 and d0 back in the caller, for the first, a middle and the last
    /// entry.
    #[test]
    fn bti_enforced_calls_into_callback_entries() {
        let dir = work_dir("bti-callback-positive");
        let (prog, link_stderr) = build_program(&dir, "bti_callback_main.c", &[], None);
        assert!(
            !link_stderr.contains("BTI"),
            "the linker had to force BTI, so an input lacks the BTI property (the trampoline?):\n{link_stderr}"
        );
        assert_bti_marked(&prog);
        let out = run(&dir, "max", &prog);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{prog} under `{} -cpu max`: {} (10 + n: check n of bti_callback_main.c failed)\n{}",
            qemu(),
            describe(out.status),
            String::from_utf8_lossy(&out.stderr)
        );
        println!("hardening: BTI-enforced program called callback entries 0, 100 (direct path) and 255: exit 0");
    }

    /// Negative control for the direct path: the same program with entry 100's direct target
    /// 4 bytes into bti_cb_direct, past its `bti c`. Without BTI it runs correctly; with BTI
    /// cb_common's `br x16` must die with SIGILL. So the target's `bti c` is what admits the
    /// direct path's branch, and BTI is enforced on it.
    #[test]
    fn bti_negative_control_a_direct_target_past_its_pad_dies_with_sigill() {
        let dir = work_dir("bti-callback-direct-negative");
        let (prog, _) = build_program(&dir, "bti_callback_main.c", &["-DDIRECT_OFFSET=4"], None);
        assert_bti_marked(&prog);
        let objdump = tool("NCCL_TRAMPOLINE_OBJDUMP", EXPECTED.objdump);
        let listing = stdout_of(&objdump, &["-d", "--no-show-raw-insn", &prog]);
        let first = listing
            .lines()
            .skip_while(|l| !l.trim_end().ends_with("<bti_cb_direct>:"))
            .nth(1)
            .and_then(|l| l.split_once(':'))
            .map(|(_, i)| i.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .unwrap_or_default();
        assert_eq!(first, "bti c", "bti_cb_direct does not start with `bti c`: the control would prove nothing");
        let died = exits_0_without_bti_and_sigill_with_it(&dir, &prog, "the direct path");
        println!("hardening: a direct target entered past its landing pad: exit 0 without BTI, {died} with BTI");
    }

    /// Negative control for the callback entries: the same program entering every entry 4 bytes
    /// in, past its `bti c`, i.e. an entry as it would be without its landing pad. Without BTI
    /// it runs correctly (the rest of the entry does not need the pad); with BTI the BLR into
    /// the entry's second instruction must die with SIGILL. So `bti c` on the entries is what
    /// admits C's indirect calls, and BTI is really enforced on their pages.
    #[test]
    fn bti_negative_control_a_callback_entry_past_its_pad_dies_with_sigill() {
        let dir = work_dir("bti-callback-negative");
        let (prog, _) = build_program(&dir, "bti_callback_main.c", &["-DENTRY_OFFSET=4"], None);
        assert_bti_marked(&prog);

        // Every entry is `bti c` and then an instruction that is not a landing pad: what the
        // program branches to.
        let objdump = tool("NCCL_TRAMPOLINE_OBJDUMP", EXPECTED.objdump);
        let listing = stdout_of(&objdump, &["-d", "--no-show-raw-insn", &prog]);
        for index in [0, 100, 255] {
            let mut body =
                listing.lines().skip_while(|l| !l.trim_end().ends_with(&format!("<nt_cb_{index}>:"))).skip(1);
            let mnemonic = |line: Option<&str>| -> String {
                line.and_then(|l| l.split_once(':'))
                    .map(|(_, i)| i.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
                    .unwrap_or_default()
            };
            let (pad, next) = (mnemonic(body.next()), mnemonic(body.next()));
            assert_eq!(pad, "bti c", "nt_cb_{index} does not start with its landing pad");
            assert!(
                !next.starts_with("bti") && !next.starts_with("paci"),
                "nt_cb_{index}'s second instruction is a landing pad too: {next:?}"
            );
        }

        let died = exits_0_without_bti_and_sigill_with_it(&dir, &prog, "the callback entries");
        println!("hardening: callback entries entered past their landing pad: exit 0 without BTI, {died} with BTI");
    }
}
