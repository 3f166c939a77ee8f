//! The plugin tables and structs of `nccl_trampoline::plugin`, checked by the C compiler
//! against transcriptions of NCCL's plugin headers (tests/c/plugin_abi/*.h, each declaration
//! citing the NCCL tag, file and lines it transcribes): every type's size and alignment and
//! every field's offset, as `_Static_assert`s the compiler must accept, for the target the
//! test runs on (natively, and under qemu with the cross compiler). A negative control moves
//! one offset and must be refused.
//!
//! `NCCL_TRAMPOLINE_PLUGIN_HEADERS` names a folder with NCCL's own plugin headers
//! (`nccl_net.h`, `nccl_tuner.h`, ... as an NCCL package installs them): the same assertions
//! are then compiled against them too (the GPU machine's check; scripts/gpu-plugins.sh).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use nccl_trampoline::plugin::{layouts, CLayout};

/// The transcriptions, in include order.
const TRANSCRIPTIONS: &[&str] = &["common.h", "net.h", "tuner.h", "env.h", "gin.h", "profiler.h"];

/// A C file of `_Static_assert`s that `layouts` hold, after `includes`.
fn assertions(includes: &[String], layouts: &[CLayout]) -> String {
    // C11 and C++ alike: NCCL's own headers are C++ (nccl_common.h includes <cstdint>).
    let mut c = String::from(
        "#include <stddef.h>\n#include <assert.h>\n#ifdef __cplusplus\n#define ALIGNOF alignof\n#else\n#define ALIGNOF _Alignof\n#endif\n",
    );
    for i in includes {
        c += &format!("#include \"{i}\"\n");
    }
    for l in layouts {
        let t = l.c_name;
        c += &format!("static_assert(sizeof({t}) == {}, \"sizeof({t}): Rust says {}\");\n", l.size, l.size);
        c += &format!("static_assert(ALIGNOF({t}) == {}, \"_Alignof({t}): Rust says {}\");\n", l.align, l.align);
        for (field, offset) in l.fields {
            c += &format!(
                "static_assert(offsetof({t}, {field}) == {offset}, \"offsetof({t}, {field}): Rust says {offset}\");\n"
            );
        }
    }
    c
}

/// Compiles `source` for the target (syntax only: the assertions are all there is); the
/// compiler's messages on failure.
fn compile(dir: &Path, source: &str, include: &Path, cplusplus: bool) -> Result<(), String> {
    let file = dir.join(if cplusplus { "layouts.cc" } else { "layouts.c" });
    std::fs::write(&file, source).unwrap();
    let cc = common::target_cc();
    let mut words = cc.split_whitespace();
    let out = Command::new(words.next().unwrap())
        .args(words)
        .args(if cplusplus { ["-x", "c++", "-std=gnu++17"] } else { ["-x", "c", "-std=gnu11"] })
        .args(["-fsyntax-only", "-I"])
        .arg(include)
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn transcriptions() -> PathBuf {
    common::repo_file("tests/c/plugin_abi")
}

#[test]
fn every_plugin_layout_matches_the_transcribed_headers() {
    let layouts = layouts();
    let dir = common::work_dir("plugin_layouts");
    let includes: Vec<String> = TRANSCRIPTIONS.iter().map(|s| s.to_string()).collect();
    if let Err(errors) = compile(&dir, &assertions(&includes, &layouts), &transcriptions(), false) {
        panic!("the C compiler ({}) disagrees with the Rust declarations:\n{errors}", common::target_cc());
    }
    let fields: usize = layouts.iter().map(|l| l.fields.len()).sum();
    println!(
        "{} types, {fields} fields: sizes, alignments and offsets agree with {}",
        layouts.len(),
        common::target_cc()
    );
}

#[test]
fn a_moved_offset_is_refused() {
    let mut layouts = layouts();
    let victim = layouts.iter_mut().find(|l| l.fields.len() > 2).unwrap();
    let moved: Vec<(&'static str, usize)> =
        victim.fields.iter().enumerate().map(|(i, &(f, o))| (f, if i == 2 { o + 4 } else { o })).collect();
    victim.fields = Box::leak(moved.into_boxed_slice());
    let name = victim.c_name;
    let includes: Vec<String> = TRANSCRIPTIONS.iter().map(|s| s.to_string()).collect();
    let errors = compile(
        &common::work_dir("plugin_layouts_control"),
        &assertions(&includes, &layouts),
        &transcriptions(),
        false,
    )
    .expect_err("an offset moved by 4 bytes was accepted: the check cannot fail");
    assert!(errors.contains(&format!("offsetof({name}, ")), "{errors}");
}

/// NCCL's own headers, where a folder of them is named: `NCCL_TRAMPOLINE_PLUGIN_HEADERS` the
/// folder, `NCCL_TRAMPOLINE_PLUGIN_INCLUDES` the headers to include (default: those of
/// `nccl_net.h nccl_tuner.h nccl_profiler.h nccl_env.h nccl_gin.h` present), and
/// `NCCL_TRAMPOLINE_PLUGIN_TYPES` a prefix of the C type names to check (default: all; a
/// package's headers may be of an older NCCL that lacks the newest versions). Compiled as C++,
/// as NCCL compiles them.
#[test]
fn every_plugin_layout_matches_nccls_own_headers_where_named() {
    let Some(dir) = std::env::var_os("NCCL_TRAMPOLINE_PLUGIN_HEADERS") else {
        println!("NCCL_TRAMPOLINE_PLUGIN_HEADERS unset: the transcriptions are the reference");
        return;
    };
    let dir = PathBuf::from(dir);
    let includes: Vec<String> = match std::env::var("NCCL_TRAMPOLINE_PLUGIN_INCLUDES") {
        Ok(list) => list.split_whitespace().map(String::from).collect(),
        Err(_) => ["nccl_net.h", "nccl_tuner.h", "nccl_profiler.h", "nccl_env.h", "nccl_gin.h"]
            .iter()
            .filter(|h| dir.join(h).exists())
            .map(|h| h.to_string())
            .collect(),
    };
    assert!(!includes.is_empty(), "{} holds no NCCL plugin header", dir.display());
    let prefix = std::env::var("NCCL_TRAMPOLINE_PLUGIN_TYPES").unwrap_or_default();
    let checked: Vec<CLayout> = layouts().into_iter().filter(|l| l.c_name.starts_with(prefix.as_str())).collect();
    compile(&common::work_dir("plugin_layouts_nccls"), &assertions(&includes, &checked), &dir, true)
        .unwrap_or_else(|e| panic!("NCCL's headers in {} disagree:\n{e}", dir.display()));
    println!("{} types agree with {} in {}", checked.len(), includes.join(" "), dir.display());
}
