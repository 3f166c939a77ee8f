//! Hostile library files through the safe loading call, `Nccl::load_from`: a FIFO, a folder
//! and a device named as the library, the C stand-in libnccl truncated at every program-header
//! and segment boundary and at many other points, its headers, program headers, dynamic
//! section, hash table, symbols and relocations corrupted, and a library that exports
//! `ncclGetVersion` as a data object. Each is loaded in a child process (this test binary run
//! again), so that a crash is observed, not suffered, and a hang is a timeout: every child must
//! exit normally, having printed one line per file, and every truncated file must be refused in
//! one line. A negative control shows that the system loader itself (a plain `dlopen`) dies of
//! one such file, so the test can see the class of bug it guards against.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nccl_trampoline::nccl::{Error, Nccl, LIBRARY_ENV};

/// Set in a child: the file listing the libraries it loads, one per line.
const CASES_ENV: &str = "NCCL_TRAMPOLINE_HOSTILE_CASES";
/// Set in a child: a library it opens with a plain `dlopen` (the negative control).
const DLOPEN_ENV: &str = "NCCL_TRAMPOLINE_HOSTILE_DLOPEN";
/// How long a child may take for its batch before it counts as hung.
const CHILD_LIMIT: Duration = Duration::from_secs(120);

/// The child's side: loads every listed file and prints `ok`, `refused` (the load error's
/// reason) or `error` with the file, one line each, flushed before the next load.
#[test]
fn child_loads_the_listed_files() {
    if let Some(path) = std::env::var_os(DLOPEN_ENV) {
        // SAFETY: the negative control: loading this file is expected to kill the process.
        let lib = unsafe { libloading::Library::new(&path) };
        println!("dlopen returned: {}", lib.is_ok());
        return;
    }
    let Some(list) = std::env::var_os(CASES_ENV) else { return };
    let mut out = std::io::stdout().lock();
    for file in std::fs::read_to_string(list).unwrap().lines() {
        // `env:PATH`: through NCCL_TRAMPOLINE_LIBRARY and `Nccl::load`.
        // `cuda:PATH` and `mpi:PATH`: the other libraries the crate loads, through the same
        // checked loader.
        if let Some(path) = file.strip_prefix("cuda:") {
            let line = match nccl_trampoline::cuda::Driver::load_from(path) {
                Ok(_) => format!("ok\t{file}"),
                Err(nccl_trampoline::cuda::Error::Load { reason, .. }) => format!("refused\t{file}\t{reason}"),
                Err(e) => format!("error\t{file}\t{e}"),
            };
            writeln!(out, "{line}").unwrap();
            continue;
        }
        if let Some(path) = file.strip_prefix("mpi:") {
            let line = match nccl_trampoline::launch::Mpi::load_from(path) {
                Ok(_) => format!("ok\t{file}"),
                Err(e) => format!("refused\t{file}\t{e}"),
            };
            writeln!(out, "{line}").unwrap();
            continue;
        }
        let loaded = match file.strip_prefix("env:") {
            Some(path) => {
                std::env::set_var(LIBRARY_ENV, path);
                Nccl::load()
            }
            None => Nccl::load_from(file),
        };
        let line = match loaded {
            Ok(n) => format!("ok\t{file}\t{}\t{}", n.version(), n.path().display()),
            Err(Error::LibraryLoad { reason, .. }) => format!("refused\t{file}\t{reason}"),
            Err(e) => format!("error\t{file}\t{e}"),
        };
        writeln!(out, "{line}").unwrap();
        out.flush().unwrap();
    }
}

/// What one child reported for its files, and how it ended.
struct Batch {
    lines: Vec<String>,
    status: std::process::ExitStatus,
    stderr: String,
}

/// Runs this binary's child test with `env` set, killing it after [`CHILD_LIMIT`].
fn child(env: (&str, &Path)) -> Batch {
    child_with(env, None)
}

/// As [`child`], with `LD_LIBRARY_PATH` set (the loader reads it when the child starts).
/// Under qemu-user an aarch64 child cannot be exec'd by the host kernel (no binfmt_misc) and
/// the failed exec shows only as status 127 (see tests/real_nccl.rs): that case is run again
/// through qemu-aarch64.
fn child_with(env: (&str, &Path), library_path: Option<&str>) -> Batch {
    let batch = run_child(None, env, library_path);
    let exec_failed = batch.status.code() == Some(127) && batch.lines.is_empty() && batch.stderr.is_empty();
    if cfg!(target_arch = "aarch64") && exec_failed {
        let qemu = std::env::var("NCCL_TRAMPOLINE_TEST_QEMU").unwrap_or_else(|_| "qemu-aarch64".into());
        return run_child(Some(&qemu), env, library_path);
    }
    batch
}

fn run_child(qemu: Option<&str>, env: (&str, &Path), library_path: Option<&str>) -> Batch {
    let exe = std::env::current_exe().unwrap();
    let mut command = match qemu {
        None => Command::new(&exe),
        Some(q) => {
            let mut c = Command::new(q);
            c.args(["-cpu", "max", "-L", "/usr/aarch64-linux-gnu"]).arg(&exe);
            c
        }
    };
    if let Some(p) = library_path {
        command.env("LD_LIBRARY_PATH", p);
    }
    let mut c = command
        .args(["--exact", "child_loads_the_listed_files", "--nocapture", "--test-threads=1", "-q"])
        .env(env.0, env.1)
        .env_remove("NCCL_TRAMPOLINE_LIBRARY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut out, mut err) = (c.stdout.take().unwrap(), c.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = c.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > CHILD_LIMIT {
            let _ = c.kill();
            let _ = c.wait();
            panic!("a child loading {} ran longer than {CHILD_LIMIT:?}: a hang", env.1.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let lines = out.join().unwrap().lines().filter(|l| l.contains('\t')).map(String::from).collect();
    Batch { lines, status, stderr: err.join().unwrap() }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// The stand-in's layout: program headers, load segments, dynamic entries.
struct Layout<'a> {
    bytes: &'a [u8],
}

impl Layout<'_> {
    /// (file offset of the header, p_type, p_offset, p_vaddr, p_filesz)
    fn phdrs(&self) -> Vec<(usize, u32, u64, u64, u64)> {
        let b = self.bytes;
        let (phoff, phnum) = (u64_at(b, 32) as usize, u16_at(b, 56) as usize);
        (0..phnum)
            .map(|i| {
                let at = phoff + 56 * i;
                (at, u32_at(b, at), u64_at(b, at + 8), u64_at(b, at + 16), u64_at(b, at + 32))
            })
            .collect()
    }
    fn offset(&self, vaddr: u64) -> Option<usize> {
        self.phdrs()
            .into_iter()
            .find(|p| p.1 == 1 && p.3 <= vaddr && vaddr < p.3 + p.4)
            .map(|p| (p.2 + vaddr - p.3) as usize)
    }
    /// (file offset of the entry, tag, value), up to DT_NULL.
    fn dynamic(&self) -> Vec<(usize, u64, u64)> {
        let p = self.phdrs().into_iter().find(|p| p.1 == 2).unwrap();
        let start = self.offset(p.3).unwrap();
        (0..)
            .map(|i| start + 16 * i)
            .map(|at| (at, u64_at(self.bytes, at), u64_at(self.bytes, at + 8)))
            .take_while(|e| e.1 != 0)
            .collect()
    }
    fn tag(&self, tag: u64) -> Option<u64> {
        self.dynamic().into_iter().find(|e| e.1 == tag).map(|e| e.2)
    }
    /// The end of the mapped part of the file: what a truncation must not cut.
    fn mapped_end(&self) -> usize {
        self.phdrs().iter().filter(|p| p.1 == 1).map(|p| (p.2 + p.4) as usize).max().unwrap()
    }
}

/// Truncated copies of `bytes`: at each program header, at each segment's start, end and
/// end less one, at each table of the dynamic section, and at 64 evenly spaced points.
fn truncations(bytes: &[u8]) -> Vec<usize> {
    let l = Layout { bytes };
    let mut at: Vec<usize> = vec![0, 3, 4, 20, 63, 64];
    for p in l.phdrs() {
        at.extend([p.0, p.0 + 28, p.0 + 56]);
        if p.1 == 1 {
            at.extend([p.2 as usize, (p.2 + p.4) as usize - 1, (p.2 + p.4 / 2) as usize]);
        }
    }
    for (_, tag, value) in l.dynamic() {
        if matches!(tag, 4 | 5 | 6 | 7 | 23 | 25 | 0x6fff_fef5 | 0x6fff_fff0 | 0x6fff_fffe) {
            if let Some(o) = l.offset(value) {
                at.extend([o, o + 1, o + 8]);
            }
        }
    }
    let end = l.mapped_end();
    at.extend((0..64).map(|i| i * end / 64));
    at.retain(|&n| n < end);
    at.sort_unstable();
    at.dedup();
    at
}

/// Corrupted copies of `bytes`: (what, the bytes). Out-of-range and shifted values in the
/// fields the loader trusts (not in code or in data the library's code reads: see the module
/// documentation of the crate's ELF reader for what cannot be checked).
fn corruptions(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let l = Layout { bytes };
    let mut out = Vec::new();
    let set = |what: String, at: usize, value: &[u8]| {
        let mut b = bytes.to_vec();
        b[at..at + value.len()].copy_from_slice(value);
        (what, b)
    };
    for at in 0..64 {
        for v in [0x00, 0xff] {
            out.push(set(format!("ELF header byte {at} = {v:#x}"), at, &[v]));
        }
    }
    for (i, p) in l.phdrs().into_iter().enumerate() {
        for field in [0usize, 4, 8, 16, 32, 40, 48] {
            out.push(set(format!("program header {i} field {field}: high byte"), p.0 + field + 3, &[0xff]));
            if field >= 8 {
                out.push(set(
                    format!("program header {i} field {field}: +0x10"),
                    p.0 + field,
                    &[bytes[p.0 + field].wrapping_add(0x10)],
                ));
                out.push(set(format!("program header {i} field {field}: huge"), p.0 + field + 7, &[0x7f]));
            }
        }
    }
    for (i, (at, _, _)) in l.dynamic().into_iter().enumerate() {
        out.push(set(format!("dynamic entry {i}: tag"), at, &[0xff]));
        out.push(set(format!("dynamic entry {i}: value +8"), at + 8, &[bytes[at + 8].wrapping_add(8)]));
        out.push(set(format!("dynamic entry {i}: value huge"), at + 10, &[0xff]));
        out.push(set(format!("dynamic entry {i}: value negative"), at + 15, &[0x80]));
    }
    if let Some(gnu) = l.tag(0x6fff_fef5).and_then(|v| l.offset(v)) {
        for word in 0..4 {
            out.push(set(format!("GNU hash header word {word} = 0"), gnu + 4 * word, &[0, 0, 0, 0]));
            out.push(set(format!("GNU hash header word {word} huge"), gnu + 4 * word, &[0xff, 0xff, 0xff, 0xff]));
        }
        let (nbuckets, bloom) = (u32_at(bytes, gnu) as usize, u32_at(bytes, gnu + 8) as usize);
        let buckets = gnu + 16 + 8 * bloom;
        for b in 0..nbuckets.min(16) {
            out.push(set(format!("GNU hash bucket {b} huge"), buckets + 4 * b, &[0xff, 0xff, 0, 0]));
        }
        // Every chain word's end bit cleared.
        let mut b = bytes.to_vec();
        let symtab = l.tag(6).and_then(|v| l.offset(v)).unwrap();
        for at in (buckets + 4 * nbuckets..symtab).step_by(4) {
            b[at] &= !1;
        }
        out.push(("GNU hash chains without an end".to_string(), b));
    }
    let relocations = [(7u64, 8u64), (23, 2)]
        .into_iter()
        .filter_map(|(table, size)| Some((l.offset(l.tag(table)?)?, l.tag(size)? as usize / 24)));
    for (start, n) in relocations.collect::<Vec<_>>() {
        for i in (0..n.min(6)).chain(n.saturating_sub(3)..n) {
            let r = start + 24 * i;
            out.push(set(format!("relocation {i} at {r:#x}: target outside"), r + 3, &[0xff]));
            out.push(set(format!("relocation {i}: target shifted"), r + 1, &[bytes[r + 1].wrapping_sub(0x10)]));
            out.push(set(format!("relocation {i}: symbol index huge"), r + 13, &[0xff, 0xff]));
            out.push(set(format!("relocation {i}: unknown type"), r + 8, &[0xfe]));
            out.push(set(format!("relocation {i}: addend huge"), r + 21, &[0x7f]));
        }
    }
    if let (Some(symtab), Some(versym)) =
        (l.tag(6).and_then(|v| l.offset(v)), l.tag(0x6fff_fff0).and_then(|v| l.offset(v)))
    {
        for i in 1..12 {
            let s = symtab + 24 * i;
            out.push(set(format!("symbol {i}: name offset huge"), s + 2, &[0xff]));
            out.push(set(format!("symbol {i}: value huge"), s + 8 + 5, &[0x7f]));
            out.push(set(format!("symbol {i}: version index undefined"), versym + 2 * i, &[0xff, 0x7f]));
        }
    }
    out
}

/// Writes `files` to a list and loads them in children, `per_child` at a time; returns every
/// line the children printed. Fails on a child that died of a signal, exited with an error,
/// hung, or left a file without its line.
fn load_in_children(dir: &Path, files: &[PathBuf], what: &[String], per_child: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, (chunk, names)) in files.chunks(per_child).zip(what.chunks(per_child)).enumerate() {
        let list = dir.join(format!("batch-{i}.txt"));
        let text: String = chunk.iter().map(|p| format!("{}\n", p.display())).collect();
        std::fs::write(&list, text).unwrap();
        let batch = child((CASES_ENV, &list));
        let done = batch.lines.len();
        assert!(
            batch.status.success(),
            "the child loading batch {i} ended {:?} (signal {:?}) after {done} of {} files; next: {} ({})\n{}",
            batch.status.code(),
            batch.status.signal(),
            chunk.len(),
            chunk.get(done).map_or("-".into(), |p| p.display().to_string()),
            names.get(done).map_or("-", |w| w.as_str()),
            batch.stderr.lines().rev().take(15).collect::<Vec<_>>().join("\n")
        );
        assert_eq!(done, chunk.len(), "batch {i}: a file without its line\n{}", batch.stderr);
        lines.extend(batch.lines);
    }
    lines
}

#[test]
fn hostile_library_files_are_refused_in_one_line_never_crash_or_hang() {
    let dir = common::work_dir("hostile-libraries");
    let standin = common::standin::fake_nccl(23203);
    let bytes = std::fs::read(&standin).unwrap();
    let mut files: Vec<PathBuf> = Vec::new();
    let mut what: Vec<String> = Vec::new();

    // Not regular files: opening a FIFO for reading would wait for a writer for ever.
    let fifo = dir.join("fifo/libnccl.so.2");
    std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let through_variable = PathBuf::from(format!("env:{}", fifo.display()));
    for (w, p) in [
        ("a FIFO", fifo.clone()),
        ("a directory", dir.clone()),
        ("a device", PathBuf::from("/dev/zero")),
        ("a FIFO named by NCCL_TRAMPOLINE_LIBRARY", through_variable.clone()),
    ] {
        files.push(p);
        what.push(w.to_string());
    }
    // A data object exported as ncclGetVersion: calling it as a function would crash.
    let src = dir.join("data_get_version.c");
    std::fs::write(
        &src,
        "int ncclGetVersion[4] = {23203, 0, 0, 0};\nint ncclGetUniqueId(void *id) { return id == 0; }\n",
    )
    .unwrap();
    files.push(common::build_shared(&dir, "data-get-version", &[src]));
    what.push("ncclGetVersion as a data object".into());

    let truncated = truncations(&bytes);
    for &n in &truncated {
        let p = dir.join(format!("truncated-{n}.so"));
        std::fs::write(&p, &bytes[..n]).unwrap();
        files.push(p);
        what.push(format!("truncated at {n}"));
    }
    for (i, (w, b)) in corruptions(&bytes).into_iter().enumerate() {
        let p = dir.join(format!("corrupt-{i}.so"));
        std::fs::write(&p, b).unwrap();
        files.push(p);
        what.push(w);
    }
    let lines = load_in_children(&dir, &files, &what, 80);

    let by_file = |p: &Path| {
        let prefix = format!("\t{}\t", p.display());
        lines.iter().find(|l| l.contains(&prefix)).cloned().unwrap_or_default()
    };
    for (p, kind) in [(&fifo, "a FIFO"), (&dir, "a directory"), (&PathBuf::from("/dev/zero"), "a character device")] {
        assert!(by_file(p).ends_with(&format!("\tnot a regular file but {kind}")), "{}", by_file(p));
    }
    let env = by_file(&through_variable);
    assert!(env.ends_with("\tnot a regular file but a FIFO"), "{env}");
    // The CUDA driver and MPI go through the same loader.
    let others = [PathBuf::from(format!("cuda:{}", fifo.display())), PathBuf::from(format!("mpi:{}", fifo.display()))];
    let other_lines = load_in_children(&dir, &others, &["a FIFO as the CUDA driver".into(), "a FIFO as MPI".into()], 2);
    for p in &others {
        let prefix = format!("\t{}", p.display());
        let line = other_lines.iter().find(|l| l.contains(&prefix)).cloned().unwrap_or_default();
        assert!(line.starts_with("refused\t") && line.contains("not a regular file but a FIFO"), "{line}");
    }
    let data = by_file(&files[4]);
    assert!(data.ends_with("\tncclGetVersion is a data object in this library, not a function"), "{data}");
    let (mut refused, mut loaded) = (0, Vec::new());
    for (p, w) in files.iter().zip(&what).skip(5) {
        let line = by_file(p);
        assert!(!line.starts_with("error\t"), "{w}: {line}");
        let reason = line.rsplit('\t').next().unwrap_or("");
        assert!(!reason.is_empty() && !reason.contains('\n'), "{w}: {line}");
        if let Some(n) = w.strip_prefix("truncated at ") {
            let ok = line.starts_with("refused\t")
                && (reason.starts_with("truncated: ") || reason == "not a shared library (no ELF header)");
            assert!(ok, "{w} ({n} of {} bytes): {line}", bytes.len());
        }
        refused += usize::from(line.starts_with("refused\t"));
        if line.starts_with("ok\t") {
            loaded.push(w.as_str());
        }
    }
    let total = files.len() - 5;
    eprintln!("{total} truncated or corrupted copies of the stand-in: {refused} refused, {} loaded:", total - refused);
    for w in &loaded {
        eprintln!("  loaded: {w}");
    }
    // Most corruptions are caught. The rest fall on what the loader ignores or uses only
    // later and harmlessly: e_entry, the section header offset, notes, PT_GNU_STACK, the
    // processor bits of p_flags, PT_GNU_RELRO's extent, the values of imported symbols, the
    // addends of symbol relocations, tags such as DT_RELACOUNT and DT_VERNEEDNUM.
    assert!(refused * 3 >= total * 2, "{refused} of {total} refused");
}

/// The negative control: the system loader maps a truncated copy of the stand-in and dies of
/// it (SIGBUS reading past the end of the file), so the test above can see what it guards
/// against.
#[test]
fn the_system_loader_itself_crashes_on_a_truncated_library() {
    let dir = common::work_dir("hostile-negative-control");
    let standin = common::standin::fake_nccl(23203);
    let bytes = std::fs::read(&standin).unwrap();
    // Cut inside the writable segment: the loader maps it whole, then reads the dynamic
    // section and clears the start of .bss there.
    let l = Layout { bytes: &bytes };
    let dynamic = l.phdrs().into_iter().find(|p| p.1 == 2).unwrap();
    let cut = (dynamic.2 as usize & !0xfff).min(bytes.len() - 1);
    let p = dir.join("libnccl-truncated.so");
    std::fs::write(&p, &bytes[..cut]).unwrap();
    let batch = child((DLOPEN_ENV, &p));
    let signal = batch.status.signal();
    assert!(
        matches!(signal, Some(libc::SIGBUS | libc::SIGSEGV)),
        "a plain dlopen of a file cut at {cut} of {} bytes should die of SIGBUS or SIGSEGV: {:?}\n{}",
        bytes.len(),
        batch.status,
        batch.stderr
    );
    // The checked loader refuses the same file in one line.
    let err = Nccl::load_from(&p).unwrap_err().to_string();
    assert!(err.contains(": truncated: a load segment ends at byte "), "{err}");
}

/// A bare name (`libnccl.so.2`, discovery's system-loader candidates) is searched for the way
/// the system loader searches, and what the search reaches is checked like a path: a truncated
/// file is refused, a FIFO is not opened for reading, a library of another machine is passed
/// over as the loader passes over it, and `path()` names the file found.
#[test]
fn bare_names_are_checked_where_the_search_finds_them() {
    let dir = common::work_dir("hostile-bare-names");
    let standin = std::fs::read(common::standin::fake_nccl(23203)).unwrap();
    let folder = |name: &str, bytes: Option<&[u8]>| {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        if let Some(b) = bytes {
            std::fs::write(d.join("libnccl.so.2"), b).unwrap();
        }
        d
    };
    let truncated = folder("truncated", Some(&standin[..standin.len() / 2]));
    let fifo = folder("fifo", None);
    let c = std::ffi::CString::new(fifo.join("libnccl.so.2").to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut other = standin.clone();
    other[18..20].copy_from_slice(&(if cfg!(target_arch = "aarch64") { 62u16 } else { 183u16 }).to_le_bytes());
    let foreign = folder("other-machine", Some(&other));
    let good = folder("good", Some(&standin));
    let list = dir.join("cases.txt");
    std::fs::write(&list, "libnccl.so.2\n").unwrap();
    let run = |path: String| {
        let batch = child_with((CASES_ENV, &list), Some(&path));
        assert!(batch.status.success(), "{:?}\n{}", batch.status, batch.stderr);
        batch.lines.first().cloned().unwrap_or_default()
    };
    let line = run(truncated.display().to_string());
    assert!(line.starts_with("refused\tlibnccl.so.2\ttruncated: a load segment ends at byte "), "{line}");
    let line = run(fifo.display().to_string());
    assert_eq!(
        line,
        format!(
            "refused\tlibnccl.so.2\tthe system loader's search reaches {}, which is not a regular file but a FIFO",
            fifo.join("libnccl.so.2").display()
        )
    );
    let line = run(format!("{}:{}", foreign.display(), good.display()));
    let real = std::fs::canonicalize(good.join("libnccl.so.2")).unwrap();
    assert_eq!(line, format!("ok\tlibnccl.so.2\t2.32.3\t{}", real.display()));
}
