//! Discovery and load errors against fake directory trees holding the C stand-in libnccl: the
//! order of the candidates, an explicit request that fails loudly, `load_from`'s strictness,
//! a library for another architecture, and the pip wheel (and CUDA major) a library came from.
//! The same against the real wheels is in tests/real_nccl.rs.
//!
//! One test runs the scenarios in order: NCCL stays mapped once loaded, and an NCCL already
//! loaded in the process is a candidate ahead of every environment, so the scenarios that need
//! nothing loaded yet come first, and no other test in this binary loads a library.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use common::standin::fake_nccl;
use nccl_trampoline::nccl::Error;
use nccl_trampoline::nccl::{Flavor, Nccl, PythonWheel, Source, Version, LIBRARY_ENV};

/// The variables discovery reads. Each test sets the ones it needs and clears the others, so
/// the machine's own Python environments do not take part.
const DISCOVERY_VARS: [&str; 6] = [LIBRARY_ENV, "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONUSERBASE", "HOME", "PATH"];

/// Runs `f` with exactly `vars` set among [`DISCOVERY_VARS`] (one test at a time: the
/// environment is the process's), then restores them.
fn with_env<T>(vars: &[(&str, &Path)], f: impl FnOnce() -> T) -> T {
    static ENV: Mutex<()> = Mutex::new(());
    let _g = ENV.lock().unwrap_or_else(PoisonError::into_inner);
    let saved: Vec<(&str, Option<OsString>)> = DISCOVERY_VARS.iter().map(|k| (*k, std::env::var_os(k))).collect();
    for k in DISCOVERY_VARS {
        std::env::remove_var(k);
    }
    for (k, v) in vars {
        std::env::set_var(k, v);
    }
    let out = f();
    for (k, v) in saved {
        match v {
            Some(v) => std::env::set_var(k, v),
            None => std::env::remove_var(k),
        }
    }
    out
}

/// `site`/nvidia/nccl/lib/libnccl.so.2: a copy of the stand-in `code`, listed in the RECORD of
/// an `nvidia-nccl-<flavour>` dist-info as pip writes it.
fn install_wheel(site: &Path, flavour: &str, code: u32) -> PathBuf {
    let lib = site.join("nvidia/nccl/lib/libnccl.so.2");
    std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
    std::fs::copy(fake_nccl(code), &lib).unwrap();
    let size = std::fs::metadata(&lib).unwrap().len();
    let version = Version::from_code(code as i32).unwrap().to_string();
    let info = site.join(format!("nvidia_nccl_{flavour}-{version}.dist-info"));
    std::fs::create_dir_all(&info).unwrap();
    let metadata = format!("Metadata-Version: 2.4\nName: nvidia-nccl-{flavour}\nVersion: {version}\n\n");
    std::fs::write(info.join("METADATA"), metadata).unwrap();
    let record = format!(
        "nvidia/nccl/lib/libnccl.so.2,sha256=x,{size}\nnvidia/__init__.py,,0\n{}/RECORD,,\n",
        info.file_name().unwrap().to_string_lossy()
    );
    std::fs::write(info.join("RECORD"), record).unwrap();
    lib
}

fn discovery_order_and_failures_list_every_candidate() {
    let root = common::work_dir("discovery-order");
    let venv_lib = install_wheel(&root.join("venv/lib/python3.11/site-packages"), "cu12", 21803);
    let user_lib = install_wheel(&root.join("home/.local/lib/python3.12/site-packages"), "cu12", 2708);
    let env_lib = fake_nccl(23203);
    let (venv, home) = (root.join("venv"), root.join("home"));
    let c = with_env(&[(LIBRARY_ENV, &env_lib), ("VIRTUAL_ENV", &venv), ("HOME", &home)], Nccl::candidates);
    let at = |source: Source, path: &Path| c.iter().position(|c| c.source == source && c.path == path);
    let env = at(Source::Environment, &env_lib).expect("the variable's file");
    let venv_at = at(Source::PythonEnvironment, &venv_lib).expect("the venv's wheel");
    let system = at(Source::System, Path::new("libnccl.so.2")).expect("the system loader");
    let user = at(Source::UserSite, &user_lib).expect("the user site-packages' wheel");
    assert!(env < venv_at && venv_at < system && system < user, "{c:?}");
    assert!(c.iter().any(|c| c.path.as_os_str() == "librccl.so.1"));

    // Without the variable, the venv's wheel is used: the Python environment comes first.
    let nccl = with_env(&[("VIRTUAL_ENV", &venv), ("HOME", &home)], Nccl::load).unwrap();
    assert_eq!((nccl.version(), nccl.path()), (Version::new(2, 18, 3), venv_lib.as_path()));

    // With it, the variable's file; the others are shadowed (the venv's is loaded by now).
    let found = with_env(&[(LIBRARY_ENV, &env_lib), ("VIRTUAL_ENV", &venv), ("HOME", &home)], Nccl::discover);
    assert_eq!(found.result.as_ref().map(|n| n.version()).ok(), Some(Version::new(2, 32, 3)));
    assert_eq!(found.chosen.as_ref().map(|c| c.source), Some(Source::Environment));
    assert!(found.shadowed.iter().any(|s| s.path == venv_lib), "{found:?}");
    assert!(found.shadowed.iter().any(|s| s.source == Source::UserSite && s.path == user_lib), "{found:?}");
}

fn a_failing_library_variable_fails_loudly_and_nothing_else_is_tried() {
    let root = common::work_dir("discovery-explicit");
    install_wheel(&root.join("venv/lib/python3.11/site-packages"), "cu12", 21803);
    let missing = root.join("nowhere/libnccl.so.2");
    let venv = root.join("venv");
    let err = with_env(&[(LIBRARY_ENV, &missing), ("VIRTUAL_ENV", &venv)], Nccl::load).unwrap_err();
    match &err {
        Error::LibraryLoad { path, variable, reason } => {
            assert_eq!(
                (path.as_str(), *variable, reason.as_str()),
                (missing.to_str().unwrap(), Some(LIBRARY_ENV), "no such file")
            )
        }
        other => panic!("{other:?}"),
    }
    let text = err.to_string();
    assert_eq!(
        text,
        format!(
            "{LIBRARY_ENV}={} cannot be loaded: no such file (fix {LIBRARY_ENV}, or unset it to search the usual places)",
            missing.display()
        )
    );
    let found = with_env(&[(LIBRARY_ENV, &missing), ("VIRTUAL_ENV", &venv)], Nccl::discover);
    assert!(found.chosen.is_none() && found.shadowed.is_empty() && found.result.is_err(), "{found:?}");
}

fn load_from_is_strict_and_says_why() {
    let err = Nccl::load_from("/nonexistent/libnccl.so.2").unwrap_err();
    assert_eq!(err.to_string(), "cannot load /nonexistent/libnccl.so.2: no such file");
    assert!(matches!(err, Error::LibraryLoad { variable: None, .. }), "{err:?}");
    // A library that is not NCCL: libm loads, but exports no ncclGetVersion.
    let err = Nccl::load_from("libm.so.6").unwrap_err();
    assert_eq!(err.to_string(), "cannot load libm.so.6: it exports no ncclGetVersion: not an NCCL library");
    let err = Nccl::load_from("libnccl-no-such-name.so.9").unwrap_err();
    assert_eq!(err.to_string(), "cannot load libnccl-no-such-name.so.9: not found by the system loader");
}

/// A library with NCCL's first functions but no `ncclGetVersion` is an NCCL older than 2.3.4
/// (the stand-in built as 2.2.12): refused with that reason, not taken for "not NCCL".
fn an_nccl_older_than_get_version_is_refused_with_the_reason() {
    let dir = common::work_dir("fake-nccl-2212");
    let src = common::repo_file("tests/c/fake_nccl.c");
    let lib = common::build_shared_with(&dir, "nccl", &[src], &["-DFAKE_VERSION=2212"]);
    let err = Nccl::load_from(&lib).unwrap_err();
    assert!(matches!(err, Error::LibraryLoad { variable: None, .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "cannot load {}: it exports no ncclGetVersion (NCCL 2.3.4 and later do): an NCCL older than 2.3.4, which is not supported",
            lib.display()
        )
    );
}

fn a_library_built_for_another_architecture_is_named() {
    let dir = common::work_dir("discovery-foreign");
    // The ELF identification and header of a shared object for the other architecture: all
    // the loader needs to refuse it, and all the message is made from.
    let (machine, name) = if cfg!(target_arch = "aarch64") { (62u16, "x86_64") } else { (183u16, "aarch64") };
    let mut header = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0".to_vec();
    header.extend(machine.to_le_bytes());
    header.resize(64, 0);
    let lib = dir.join("libnccl.so.2");
    std::fs::write(&lib, &header).unwrap();
    let err = Nccl::load_from(&lib).unwrap_err();
    let this = std::env::consts::ARCH;
    assert_eq!(
        err.to_string(),
        format!("cannot load {}: built for {name}, this program runs on {this}: use the {this} build", lib.display())
    );
    // Through the variable: the same reason, and what to do with the variable.
    let err = with_env(&[(LIBRARY_ENV, &lib)], Nccl::load).unwrap_err().to_string();
    assert!(err.contains(&format!("built for {name}")) && err.contains(&format!("fix {LIBRARY_ENV}")), "{err}");
    // A file that is no ELF object at all.
    std::fs::write(&lib, b"#!/bin/sh\n").unwrap();
    assert!(Nccl::load_from(&lib).unwrap_err().to_string().ends_with("not a shared library (no ELF header)"));
}

fn nothing_found_is_one_line_with_what_to_do() {
    let empty = common::work_dir("discovery-empty");
    let found = with_env(&[("HOME", &empty), ("PATH", &empty)], Nccl::discover);
    match found.result {
        Err(e @ Error::LibraryNotFound { .. }) => {
            let text = e.to_string();
            assert!(!text.contains('\n'), "{text}");
            // The three sonames fail alike and share one entry.
            assert!(
                text.contains("libnccl.so.2, libnccl.so, librccl.so.1 (system loader): not found by the system loader"),
                "{text}"
            );
            assert!(text.contains("pip install nvidia-nccl-cu12") && text.contains(LIBRARY_ENV), "{text}");
        }
        // A machine with NCCL installed for the system loader, or for its interpreter.
        Ok(n) => {
            let source = found.chosen.map(|c| c.source);
            assert!(matches!(source, Some(Source::System | Source::SystemSite)), "{source:?} {}", n.path().display());
        }
        Err(e) => panic!("{e}"),
    }
}

fn the_wheel_and_its_cuda_major_are_reported() {
    let root = common::work_dir("discovery-wheel");
    let site = root.join("env/lib/python3.12/site-packages");
    let lib = install_wheel(&site, "cu13", 23203);
    // The environment's python3 first on PATH, not activated: as container images do.
    std::fs::create_dir_all(root.join("env/bin")).unwrap();
    std::fs::write(root.join("env/bin/python3"), "").unwrap();
    let c = with_env(&[("PATH", &root.join("env/bin")), ("HOME", &root)], Nccl::candidates);
    let first_environment = c.iter().find(|c| c.source != Source::AlreadyLoaded).expect("a candidate");
    assert_eq!(
        (first_environment.source, first_environment.path.as_path()),
        (Source::PythonEnvironment, lib.as_path())
    );
    let nccl = Nccl::load_from(&lib).unwrap();
    let wheel = nccl.python_wheel().expect("the dist-info lists the file");
    assert_eq!(
        (wheel.name.as_str(), wheel.version.as_str(), wheel.cuda_major),
        ("nvidia-nccl-cu13", "2.32.3", Some(13))
    );
    assert_eq!(wheel.to_string(), "the nvidia-nccl-cu13 2.32.3 wheel, built for CUDA 13");
    // A library no wheel installed.
    assert_eq!(PythonWheel::owning(&fake_nccl(23203)), None);
}

/// RCCL is told from what the library is (RCCL's soname or file name, RCCL's own exports),
/// not from a folder it lies in; and `ncclAlltoAll` is bound under the spelling the library
/// exports (RCCL's `ncclAllToAll` where that is the one it has).
fn rccl_is_told_from_the_library_not_its_folders() {
    let root = common::work_dir("discovery-flavor");
    let standin = fake_nccl(23203);
    let barcclays = root.join("barcclays/libnccl.so.2");
    std::fs::create_dir_all(barcclays.parent().unwrap()).unwrap();
    std::fs::copy(&standin, &barcclays).unwrap();
    let nccl = Nccl::load_from(&barcclays).unwrap();
    assert_eq!(nccl.flavor(), Flavor::Nccl, "a folder whose name contains \"rccl\"");
    assert!(nccl.has("ncclAlltoAll"), "ncclAlltoAll bound");
    let rccl = root.join("librccl.so.1");
    std::fs::copy(&standin, &rccl).unwrap();
    assert_eq!(Nccl::load_from(&rccl).unwrap().flavor(), Flavor::Rccl, "RCCL's file name");
    // A library that spells it RCCL's way: bound all the same, and counted as bound.
    let dir = common::work_dir("discovery-alltoall-spelling");
    let src = common::repo_file("tests/c/fake_nccl.c");
    let lib = common::build_shared_with(&dir, "nccl", &[src], &["-DFAKE_VERSION=23203", "-DncclAlltoAll=ncclAllToAll"]);
    let n = Nccl::load_from(&lib).unwrap();
    assert_eq!(n.flavor(), Flavor::Nccl);
    assert!(n.has("ncclAlltoAll"), "bound through ncclAllToAll");
    let coverage = n.coverage().unwrap();
    assert!(coverage.bound.iter().any(|f| f == "ncclAllToAll") && coverage.unbound.is_empty(), "{coverage:?}");
}

/// `ncclGetVersion` codes that no NCCL 2 returns are refused with the code, not read as
/// versions (1000 was 1.0.0, 99999999 was 9999.99.99).
fn codes_that_are_no_nccl_version_are_refused() {
    let dir = common::work_dir("discovery-version-codes");
    for code in [1000, 99_999_999, 2950] {
        let src = dir.join(format!("version-{code}.c"));
        std::fs::write(
            &src,
            format!(
                "int ncclGetVersion(int *v) {{ *v = {code}; return 0; }}\nint ncclGetUniqueId(void *id) {{ return id == 0; }}\n"
            ),
        )
        .unwrap();
        let lib = common::build_shared(&dir, &format!("version-{code}"), &[src]);
        let err = Nccl::load_from(&lib).unwrap_err();
        assert!(matches!(err, Error::LibraryLoad { .. }), "{err:?}");
        assert!(
            err.to_string().ends_with(&format!(
                ": ncclGetVersion returned {code}, which is no NCCL 2 version (2.0.0 to 2.8.99 are 2000 to 2899, 2.9.0 to 2.99.99 are 20900 to 29999)"
            )),
            "{err}"
        );
    }
}

#[test]
fn discovery_scenarios_in_order() {
    // Nothing loaded yet.
    nothing_found_is_one_line_with_what_to_do();
    discovery_order_and_failures_list_every_candidate();
    // From here on, libraries are loaded only explicitly or fail to load.
    a_failing_library_variable_fails_loudly_and_nothing_else_is_tried();
    load_from_is_strict_and_says_why();
    an_nccl_older_than_get_version_is_refused_with_the_reason();
    a_library_built_for_another_architecture_is_named();
    the_wheel_and_its_cuda_major_are_reported();
    rccl_is_told_from_the_library_not_its_folders();
    codes_that_are_no_nccl_version_are_refused();
}
