//! The machines: the `e_machine` values this crate runs on, this build's, and what a file built
//! for another machine, byte order or word size is told.

use super::input::u16_at;

/// `e_machine` of the architectures this crate runs on.
pub(crate) const EM_X86_64: u16 = 62;
pub(crate) const EM_AARCH64: u16 = 183;
pub(crate) const EM_RISCV: u16 = 243;

/// The `e_machine` of this build, if it is one of the architectures the reader knows.
pub(crate) fn native_machine() -> Option<u16> {
    match std::env::consts::ARCH {
        "x86_64" => Some(EM_X86_64),
        "aarch64" => Some(EM_AARCH64),
        "riscv64" => Some(EM_RISCV),
        _ => None,
    }
}

/// `e_machine` values of the ELF specification (System V gABI, "ELF Header").
const MACHINES: &[(u16, &str)] = &[
    (3, "32-bit x86"),
    (8, "mips"),
    (20, "powerpc"),
    (21, "powerpc64"),
    (22, "s390x"),
    (40, "32-bit arm"),
    (EM_X86_64, "x86_64"),
    (EM_AARCH64, "aarch64"),
    (EM_RISCV, "riscv"),
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

/// What is wrong with the ELF identification and machine of `head` (at least 20 bytes of an
/// ELF header) for `machine`: this program's wording ([`elf_mismatch`]) when `machine` is this
/// build's, else a plain one. `None` for a 64-bit little-endian file for `machine`.
pub(super) fn target_mismatch(head: &[u8], machine: u16) -> Option<String> {
    let fits = head[4] == 2 && head[5] == 1 && u16_at(head, 18) == machine;
    if fits {
        return None;
    }
    if Some(machine) == native_machine() {
        if let Some(m) = elf_mismatch(head) {
            return Some(m);
        }
    }
    Some(format!(
        "not a 64-bit little-endian ELF file for machine {machine} (class {}, byte order {}, machine {})",
        head[4],
        head[5],
        u16_at(head, 18)
    ))
}
