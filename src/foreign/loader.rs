//! What a failed `dlopen` means, in one line a user can act on.
//!
//! glibc's messages are terse and sometimes wrong for the case at hand: a library built for
//! another architecture is reported as "cannot open shared object file: No such file or
//! directory" although the file is there, and every message repeats the name it was given
//! ("libcuda.so.1: libcuda.so.1: cannot open ..."). The file's ELF header tells the first case
//! apart; the rest is the loader's text without the repeated name.

use std::path::Path;

/// Why `path` could not be loaded, given the loader's error: "no such file", "not found by
/// the system loader" (for a bare soname: `LD_LIBRARY_PATH`, the ldconfig cache, the default
/// folders), "built for aarch64, this program runs on x86_64: use the x86_64 build", "it needs
/// libfoo.so.1, which the system loader cannot find", or the loader's own text without the
/// repeated path.
pub(crate) fn failure(path: &Path, error: &libloading::Error) -> String {
    let text = error.to_string();
    let shown = path.to_string_lossy();
    // libloading wraps dlerror's text; dlerror starts with the name it was given.
    let text = text.split_once(&format!("{shown}: ")).map_or(text.as_str(), |(_, rest)| rest).to_string();
    if is_bare_name(path) {
        return if text.contains("No such file or directory") {
            "not found by the system loader".to_string()
        } else {
            text
        };
    }
    match read_head(path).map(|head| elf_mismatch(&head)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "no such file".to_string(),
        Err(e) => format!("cannot read it: {e}"),
        Ok(Some(mismatch)) => mismatch,
        Ok(None) => match text.strip_suffix(": cannot open shared object file: No such file or directory") {
            // The file is fine; a library it needs is not.
            Some(dependency) => format!("it needs {dependency}, which the system loader cannot find"),
            None => text,
        },
    }
}

/// The first bytes of the file at `path`: enough for the ELF identification and `e_machine`.
fn read_head(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(64);
    std::fs::File::open(path)?.take(64).read_to_end(&mut head)?;
    Ok(head)
}

/// True for a name the system loader searches for (no `/`), such as `libnccl.so.2`.
pub(crate) fn is_bare_name(path: &Path) -> bool {
    !path.as_os_str().as_encoded_bytes().contains(&b'/')
}

/// `e_machine` values of the ELF specification (System V gABI, "ELF Header").
const MACHINES: &[(u16, &str)] = &[
    (3, "32-bit x86"),
    (8, "mips"),
    (20, "powerpc"),
    (21, "powerpc64"),
    (22, "s390x"),
    (40, "32-bit arm"),
    (62, "x86_64"),
    (183, "aarch64"),
    (243, "riscv"),
    (258, "loongarch"),
];

/// The architecture this program was built for, spelled as `MACHINES` spells it.
fn this_machine() -> &'static str {
    match std::env::consts::ARCH {
        "x86" => "32-bit x86",
        "arm" => "32-bit arm",
        "riscv64" => "riscv",
        "loongarch64" => "loongarch",
        other => other,
    }
}

/// Reads the ELF header at the start of `bytes` (only its first 20 bytes are looked at) and
/// says what is wrong with it for this program, if anything can be told from it.
pub(crate) fn elf_mismatch(bytes: &[u8]) -> Option<String> {
    let running = this_machine();
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
        return Some("not a shared library (no ELF header)".to_string());
    }
    let machine = match bytes[5] {
        1 => u16::from_le_bytes([bytes[18], bytes[19]]),
        2 => u16::from_be_bytes([bytes[18], bytes[19]]),
        _ => return Some("not a shared library (unknown ELF byte order)".to_string()),
    };
    let built_for = MACHINES.iter().find(|(m, _)| *m == machine).map(|(_, name)| *name);
    let bits = if bytes[4] == 2 { 64 } else { 32 };
    match built_for {
        Some(name) if name != running => {
            Some(format!("built for {name}, this program runs on {running}: use the {running} build"))
        }
        None => {
            Some(format!("built for ELF machine {machine}, this program runs on {running}: use the {running} build"))
        }
        Some(_) if bits != usize::BITS => {
            Some(format!("a {bits}-bit library, this program is {}-bit: use a {}-bit build", usize::BITS, usize::BITS))
        }
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first 20 bytes of an ELF header: class, byte order, type ET_DYN, machine.
    fn header(class: u8, data: u8, machine: u16) -> Vec<u8> {
        let mut h = b"\x7fELF".to_vec();
        h.extend([class, data, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let m = if data == 1 { machine.to_le_bytes() } else { machine.to_be_bytes() };
        h.extend([3, 0]);
        h.extend(m);
        h
    }

    #[test]
    fn another_architecture_is_named() {
        let other = if cfg!(target_arch = "aarch64") { 62 } else { 183 };
        let name = if other == 62 { "x86_64" } else { "aarch64" };
        let msg = elf_mismatch(&header(2, 1, other)).unwrap();
        assert!(msg.starts_with(&format!("built for {name}, this program runs on {}", this_machine())), "{msg}");
        assert!(elf_mismatch(&header(2, 2, 22)).unwrap().starts_with("built for s390x"));
        assert!(elf_mismatch(&header(2, 1, 9999)).unwrap().starts_with("built for ELF machine 9999"));
    }

    #[test]
    fn this_architecture_passes_and_other_files_are_not_libraries() {
        let own = if cfg!(target_arch = "aarch64") {
            183
        } else if cfg!(target_arch = "riscv64") {
            243
        } else {
            62
        };
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")) {
            assert_eq!(elf_mismatch(&header(2, 1, own)), None);
            assert!(elf_mismatch(&header(1, 1, own)).unwrap().starts_with("a 32-bit library"));
        }
        assert_eq!(elf_mismatch(b"!<arch>\n").unwrap(), "not a shared library (no ELF header)");
        assert_eq!(elf_mismatch(b"").unwrap(), "not a shared library (no ELF header)");
    }

    #[test]
    fn bare_names_are_the_system_loaders() {
        assert!(is_bare_name(Path::new("libnccl.so.2")));
        assert!(!is_bare_name(Path::new("./libnccl.so.2")));
        assert!(!is_bare_name(Path::new("/usr/lib/libnccl.so.2")));
    }
}
