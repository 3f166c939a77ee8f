//! Where NCCL is looked for, and which pip wheel a library file came from.
//!
//! The discovery order (docs/adr/0011-discovery-for-what-users-have.md): the file named by
//! `NCCL_TRAMPOLINE_LIBRARY` (alone: an explicit request is never passed over); an NCCL or RCCL
//! already mapped into the process; the active Python environment; the system loader; the
//! user's site-packages; the system interpreter's site-packages. Only files that exist become
//! candidates, except the system loader's names, which only the loader can look up.

use core::fmt;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Environment variable naming the library to load, ahead of every other candidate but an
/// explicit path. When it is set, [`Nccl::load`](crate::nccl::Nccl::load) loads that file or
/// fails; it never falls back to another candidate.
pub const LIBRARY_ENV: &str = "NCCL_TRAMPOLINE_LIBRARY";

/// Where a candidate library came from, in discovery order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A path given by the caller ([`Nccl::load_from`](crate::nccl::Nccl::load_from)).
    Explicit,
    /// The `NCCL_TRAMPOLINE_LIBRARY` environment variable.
    Environment,
    /// An NCCL or RCCL already mapped into this process.
    AlreadyLoaded,
    /// The active Python environment: `VIRTUAL_ENV`, `CONDA_PREFIX`, or the environment whose
    /// `python3` comes first on `PATH`.
    PythonEnvironment,
    /// The system loader's search, by soname (`LD_LIBRARY_PATH`, the ldconfig cache).
    System,
    /// The user's site-packages (`pip install --user`): `$PYTHONUSERBASE`, else `~/.local`.
    UserSite,
    /// The system interpreter's site-packages and dist-packages under `/usr/local` and `/usr`
    /// (`pip install` without an environment).
    SystemSite,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::Explicit => "the path given",
            Source::Environment => LIBRARY_ENV,
            Source::AlreadyLoaded => "already loaded",
            Source::PythonEnvironment => "Python environment",
            Source::System => "system loader",
            Source::UserSite => "user site-packages",
            Source::SystemSite => "system site-packages",
        })
    }
}

/// A library the loader may try.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Candidate {
    /// Where it came from.
    pub source: Source,
    /// A path, or a bare soname for the system loader.
    pub path: PathBuf,
}

/// The system loader's names, in order: NCCL's soname, the development symlink, RCCL's soname.
pub(crate) const SYSTEM_NAMES: [&str; 3] = ["libnccl.so.2", "libnccl.so", "librccl.so.1"];

/// The candidates of this process's environment, in discovery order.
pub(crate) fn candidates() -> Vec<Candidate> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    candidates_in(&env, &[PathBuf::from("/usr/local"), PathBuf::from("/usr")], already_loaded())
}

/// The discovery order for the environment `env` (a variable's value, `None` when unset or
/// empty), the system prefixes whose interpreter site-packages are searched, and the NCCL/RCCL
/// files already mapped into the process.
fn candidates_in(
    env: &dyn Fn(&str) -> Option<OsString>,
    system_prefixes: &[PathBuf],
    loaded: Vec<PathBuf>,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    // One candidate per file: a virtual environment's `lib64` is a link to its `lib`, and one
    // environment can be named twice (`VIRTUAL_ENV` and `PATH`).
    let mut files: Vec<PathBuf> = Vec::new();
    let mut add = |source: Source, path: PathBuf| {
        let file = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !files.contains(&file) {
            files.push(file);
            out.push(Candidate { source, path });
        }
    };
    if let Some(p) = env(LIBRARY_ENV) {
        add(Source::Environment, PathBuf::from(p));
    }
    for p in loaded {
        add(Source::AlreadyLoaded, p);
    }
    for prefix in python_environments(env, system_prefixes) {
        for p in prefix_libraries(&prefix) {
            add(Source::PythonEnvironment, p);
        }
    }
    for soname in SYSTEM_NAMES {
        add(Source::System, PathBuf::from(soname));
    }
    let user_base =
        env("PYTHONUSERBASE").map(PathBuf::from).or_else(|| env("HOME").map(|h| Path::new(&h).join(".local")));
    for site in user_base.iter().flat_map(|base| site_packages(base)) {
        for p in site_libraries(&site) {
            add(Source::UserSite, p);
        }
    }
    for site in system_prefixes.iter().flat_map(|prefix| site_packages(prefix)) {
        for p in site_libraries(&site) {
            add(Source::SystemSite, p);
        }
    }
    out
}

/// The prefixes of the active Python environment: `$VIRTUAL_ENV`, `$CONDA_PREFIX`, then the
/// prefix of the first `python3` on `PATH` (a virtual environment or conda installation put on
/// `PATH` without being activated, as container images often do) unless that is a system
/// prefix, searched later as the system interpreter's.
fn python_environments(env: &dyn Fn(&str) -> Option<OsString>, system_prefixes: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        ["VIRTUAL_ENV", "CONDA_PREFIX"].iter().filter_map(|v| env(v).map(PathBuf::from)).collect();
    let first_python = env("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .find(|dir| dir.join("python3").is_file());
    // The folder holding `bin/python3` (a venv's python3 is a link to the system's: do not
    // follow it).
    if let Some(prefix) = first_python.as_deref().filter(|d| d.ends_with("bin")).and_then(Path::parent) {
        let system = system_prefixes.iter().any(|s| s == prefix) || prefix == Path::new("/");
        if !system && !out.iter().any(|p| p == prefix) {
            out.push(prefix.to_path_buf());
        }
    }
    out
}

/// NCCL in a Python environment's prefix: its site-packages, and for a conda environment the
/// `lib/libnccl.so.2` of conda's own `nccl` package.
fn prefix_libraries(prefix: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = site_packages(prefix).iter().flat_map(|s| site_libraries(s)).collect();
    let conda_nccl = prefix.join("lib/libnccl.so.2");
    if prefix.join("conda-meta").is_dir() && conda_nccl.is_file() {
        out.push(conda_nccl);
    }
    out
}

/// The site-packages folders under `prefix`, newest Python first: `lib/python3.X/site-packages`
/// (virtual environments, conda, Fedora, Arch, `pip install --user`), `lib64/...` (Fedora's
/// platform libraries), `lib/python3.X/dist-packages` and `lib/python3/dist-packages` (Debian
/// and Ubuntu: `pip` writes under `/usr/local`, `apt` under `/usr`).
fn site_packages(prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for lib in ["lib", "lib64"] {
        let Ok(entries) = std::fs::read_dir(prefix.join(lib)) else { continue };
        let mut pythons: Vec<(i64, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let minor = match name.strip_prefix("python3")? {
                    "" => -1,
                    rest => rest.strip_prefix('.')?.parse::<i64>().ok()?,
                };
                Some((minor, e.path()))
            })
            .collect();
        pythons.sort_by(|a, b| b.cmp(a));
        for (_, python) in pythons {
            for site in ["site-packages", "dist-packages"] {
                if python.join(site).is_dir() {
                    out.push(python.join(site));
                }
            }
        }
    }
    out
}

/// NCCL inside one site-packages folder: the `nvidia-nccl-cu12`/`-cu13` wheels'
/// `nvidia/nccl/lib/libnccl.so.2` (both install that same path), then a copy PyTorch ships in
/// its own `torch/lib` (`libnccl.so*`, or `librccl.so*` in ROCm builds).
fn site_libraries(site: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let wheel = site.join("nvidia/nccl/lib/libnccl.so.2");
    if wheel.is_file() {
        out.push(wheel);
    }
    if let Ok(entries) = std::fs::read_dir(site.join("torch/lib")) {
        let mut torch: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                (name.starts_with("libnccl.so") || name.starts_with("librccl.so")) && p.is_file()
            })
            .collect();
        torch.sort();
        out.extend(torch);
    }
    out
}

/// NCCL or RCCL objects already mapped into this process (from `/proc/self/maps`).
fn already_loaded() -> Vec<PathBuf> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return Vec::new() };
    let mut out: Vec<PathBuf> = Vec::new();
    for line in maps.lines() {
        let Some(path) = line.split_whitespace().nth(5) else { continue };
        let file = Path::new(path).file_name().and_then(|f| f.to_str()).unwrap_or("");
        if (file.starts_with("libnccl.so") || file.starts_with("librccl.so"))
            && !out.iter().any(|p| p == Path::new(path))
        {
            out.push(PathBuf::from(path));
        }
    }
    out
}

/// The pip distribution a library file belongs to, read from the `*.dist-info` folder next to
/// it (the wheel's own record of the files it installed).
///
/// `nvidia-nccl-cu12` and `nvidia-nccl-cu13` install the same file,
/// `nvidia/nccl/lib/libnccl.so.2`; the name says which CUDA major the build is for. When both
/// are installed, the one whose recorded size matches the file is the one that wrote it last.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PythonWheel {
    /// The distribution's name as its METADATA spells it (`nvidia-nccl-cu12`, `torch`).
    pub name: String,
    /// Its version (`2.28.9`, `2.5.1+cu121`).
    pub version: String,
    /// The CUDA major version it was built for: the name's `-cuNN` suffix, else the version's
    /// `+cuNNN` local part; `None` when neither says.
    pub cuda_major: Option<u32>,
    /// The `*.dist-info` folder it was read from.
    pub dist_info: PathBuf,
}

impl PythonWheel {
    /// The wheel that installed `library`, if a `*.dist-info` folder in one of its parent
    /// folders lists it. `None` for a file no wheel installed, and when two installed wheels
    /// list it and the recorded sizes do not tell which one wrote it.
    pub fn owning(library: &Path) -> Option<PythonWheel> {
        Self::owning_path(library).or_else(|| {
            let real = std::fs::canonicalize(library).ok()?;
            (real != library).then(|| Self::owning_path(&real)).flatten()
        })
    }

    fn owning_path(library: &Path) -> Option<PythonWheel> {
        let size = std::fs::metadata(library).ok()?.len();
        // site-packages/torch/lib/libnccl.so.2 is three levels down; look no further than five.
        for site in library.ancestors().skip(1).take(5) {
            let Ok(entries) = std::fs::read_dir(site) else { continue };
            let mut infos: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "dist-info") && p.is_dir())
                .collect();
            if infos.is_empty() {
                continue;
            }
            infos.sort();
            let relative: Vec<String> = library
                .strip_prefix(site)
                .ok()?
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            let relative = relative.join("/");
            let mut owners: Vec<(PathBuf, Option<u64>)> = infos
                .into_iter()
                .filter_map(|info| {
                    let record = read_text(&info.join("RECORD"), MAX_RECORD_BYTES)?;
                    let size = record.lines().find_map(|line| record_size(line, &relative))?;
                    Some((info, size))
                })
                .collect();
            if owners.len() > 1 {
                owners.retain(|(_, recorded)| *recorded == Some(size));
            }
            return match owners.as_slice() {
                [(info, _)] => Self::read(info),
                _ => None,
            };
        }
        None
    }

    /// The name and version in `info/METADATA`.
    fn read(info: &Path) -> Option<PythonWheel> {
        let metadata = read_text(&info.join("METADATA"), MAX_METADATA_BYTES)?;
        let header = |key: &str| {
            metadata
                .lines()
                .take_while(|l| !l.is_empty())
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.trim().to_string())
        };
        let (name, version) = (header("Name:")?, header("Version:")?);
        let cuda_major = cuda_major(&name, &version);
        Some(PythonWheel { name, version, cuda_major, dist_info: info.to_path_buf() })
    }
}

impl fmt::Display for PythonWheel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the {} {} wheel", self.name, self.version)?;
        match self.cuda_major {
            Some(major) => write!(f, ", built for CUDA {major}"),
            None => Ok(()),
        }
    }
}

/// The most of a wheel's RECORD (a line per installed file: PyTorch's has about 20 000) and
/// METADATA (its description included) that is read.
const MAX_RECORD_BYTES: u64 = 64 << 20;
const MAX_METADATA_BYTES: u64 = 16 << 20;

/// The text of the regular file at `path`, if it has at most `limit` bytes: a FIFO planted in
/// a dist-info folder is not opened for reading (that would wait for a writer for ever).
fn read_text(path: &Path, limit: u64) -> Option<String> {
    let bytes = crate::foreign::file::read_regular(path, limit).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// `Some(size)` (or `Some(None)` without one) when the RECORD line lists `relative`. A RECORD
/// line is `path,sha256=...,size` (CSV; a path with a comma is quoted).
fn record_size(line: &str, relative: &str) -> Option<Option<u64>> {
    let (path, rest) = match line.strip_prefix('"') {
        Some(quoted) => {
            let (path, rest) = quoted.split_once("\",")?;
            (path.replace("\"\"", "\""), rest)
        }
        None => {
            let (path, rest) = line.split_once(',')?;
            (path.to_string(), rest)
        }
    };
    (path == relative).then(|| rest.rsplit(',').next().and_then(|s| s.trim().parse().ok()))
}

/// The CUDA major version a distribution was built for: `nvidia-nccl-cu12` → 12, and
/// `torch 2.5.1+cu121` → 12 (PyTorch's local version: major and minor, `cu118`, `cu130`).
fn cuda_major(name: &str, version: &str) -> Option<u32> {
    let digits = |s: &str| s.chars().take_while(char::is_ascii_digit).collect::<String>();
    let lower = name.to_ascii_lowercase().replace('_', "-");
    if let Some((_, suffix)) = lower.rsplit_once("-cu") {
        let d = digits(suffix);
        if !d.is_empty() && d.len() == suffix.len() {
            return d.parse().ok();
        }
    }
    let (_, local) = version.split_once('+')?;
    let d = digits(local.strip_prefix("cu")?);
    match d.len() {
        3.. => d[..d.len() - 1].parse().ok(),
        2 => d.parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A fresh folder for one test's fake tree.
    fn tree(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nccl-trampoline-discovery-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn file(path: &Path, bytes: &[u8]) -> PathBuf {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
        path.to_path_buf()
    }

    /// A wheel's dist-info folder in `site`, listing `files` with their sizes.
    fn dist_info(site: &Path, name: &str, version: &str, files: &[(&str, u64)]) {
        let info = site.join(format!("{}-{version}.dist-info", name.replace('-', "_")));
        file(
            &info.join("METADATA"),
            format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nbody\n").as_bytes(),
        );
        let mut record: String = files.iter().map(|(p, size)| format!("{p},sha256=AAAA,{size}\n")).collect();
        record.push_str(&format!("{}-{version}.dist-info/RECORD,,\n", name.replace('-', "_")));
        file(&info.join("RECORD"), record.as_bytes());
    }

    fn order(env: &HashMap<&str, PathBuf>, system: &[PathBuf]) -> Vec<(Source, PathBuf)> {
        let lookup = |k: &str| env.get(k).map(|p| p.clone().into_os_string());
        candidates_in(&lookup, system, Vec::new()).into_iter().map(|c| (c.source, c.path)).collect()
    }

    #[test]
    fn every_python_location_in_order() {
        let root = tree("order");
        let wheel = "nvidia/nccl/lib/libnccl.so.2";
        let venv = file(&root.join("venv/lib/python3.12/site-packages").join(wheel), b"v");
        let venv_torch = file(&root.join("venv/lib/python3.12/site-packages/torch/lib/libnccl.so.2"), b"t");
        let conda_site = file(&root.join("conda/lib/python3.11/site-packages").join(wheel), b"c");
        let conda_pkg = file(&root.join("conda/lib/libnccl.so.2"), b"c");
        std::fs::create_dir_all(root.join("conda/conda-meta")).unwrap();
        let user = file(&root.join("home/.local/lib/python3.11/site-packages").join(wheel), b"u");
        let usr_local = root.join("usr/local");
        let debian_pip = file(&usr_local.join("lib/python3.11/dist-packages").join(wheel), b"d");
        let newer_python = file(&usr_local.join("lib/python3.12/dist-packages").join(wheel), b"d");
        let debian_apt = file(&root.join("usr/lib/python3/dist-packages").join(wheel), b"a");
        let fedora = file(&root.join("usr/lib64/python3.13/site-packages/torch/lib/librccl.so.1"), b"f");
        let system = [usr_local, root.join("usr")];

        let mut env = HashMap::new();
        env.insert("VIRTUAL_ENV", root.join("venv"));
        env.insert("CONDA_PREFIX", root.join("conda"));
        env.insert("HOME", root.join("home"));
        let got = order(&env, &system);
        let sys = |n: &str| (Source::System, PathBuf::from(n));
        assert_eq!(
            got,
            vec![
                (Source::PythonEnvironment, venv.clone()),
                (Source::PythonEnvironment, venv_torch),
                (Source::PythonEnvironment, conda_site),
                (Source::PythonEnvironment, conda_pkg),
                sys("libnccl.so.2"),
                sys("libnccl.so"),
                sys("librccl.so.1"),
                (Source::UserSite, user.clone()),
                (Source::SystemSite, newer_python),
                (Source::SystemSite, debian_pip),
                (Source::SystemSite, debian_apt),
                (Source::SystemSite, fedora),
            ]
        );

        // NCCL_TRAMPOLINE_LIBRARY first; PYTHONUSERBASE replaces ~/.local.
        env.insert(LIBRARY_ENV, PathBuf::from("/opt/nccl/libnccl.so.2"));
        env.insert("PYTHONUSERBASE", root.join("nowhere"));
        let got = order(&env, &system);
        assert_eq!(got[0], (Source::Environment, PathBuf::from("/opt/nccl/libnccl.so.2")));
        assert!(!got.iter().any(|(_, p)| *p == user));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_python_environment_on_path_counts_as_active() {
        let root = tree("path");
        let lib = file(&root.join("opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"), b"x");
        file(&root.join("opt/venv/bin/python3"), b"");
        file(&root.join("usr/bin/python3"), b"");
        let system = [root.join("usr/local"), root.join("usr")];
        let mut env = HashMap::new();
        // The system interpreter first on PATH: no Python environment.
        env.insert(
            "PATH",
            PathBuf::from(format!("{}:{}", root.join("usr/bin").display(), root.join("opt/venv/bin").display())),
        );
        assert!(!order(&env, &system).iter().any(|(s, _)| *s == Source::PythonEnvironment));
        env.insert(
            "PATH",
            PathBuf::from(format!("{}:{}", root.join("opt/venv/bin").display(), root.join("usr/bin").display())),
        );
        assert_eq!(order(&env, &system)[0], (Source::PythonEnvironment, lib.clone()));
        // The same environment named twice is one candidate, and so is the file seen again
        // through the environment's `lib64`, a link to `lib` (as `python3 -m venv` makes it).
        std::os::unix::fs::symlink("lib", root.join("opt/venv/lib64")).unwrap();
        env.insert("VIRTUAL_ENV", root.join("opt/venv"));
        let got = order(&env, &system);
        assert_eq!(got.iter().filter(|(_, p)| p.ends_with("nvidia/nccl/lib/libnccl.so.2")).count(), 1, "{got:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_wheel_that_installed_a_file_and_its_cuda_major() {
        let root = tree("wheel");
        let site = root.join("site-packages");
        let lib = file(&site.join("nvidia/nccl/lib/libnccl.so.2"), b"thirteen bytes");
        dist_info(&site, "nvidia-nccl-cu12", "2.28.9", &[("nvidia/nccl/lib/libnccl.so.2", 14)]);
        let w = PythonWheel::owning(&lib).expect("one wheel lists it");
        assert_eq!((w.name.as_str(), w.version.as_str(), w.cuda_major), ("nvidia-nccl-cu12", "2.28.9", Some(12)));
        assert_eq!(w.to_string(), "the nvidia-nccl-cu12 2.28.9 wheel, built for CUDA 12");

        // cu13 installed over cu12: same path, the recorded size tells which one wrote it.
        dist_info(&site, "nvidia-nccl-cu13", "2.32.3", &[("nvidia/nccl/lib/libnccl.so.2", 15)]);
        assert_eq!(PythonWheel::owning(&lib).map(|w| w.cuda_major), Some(Some(12)));
        std::fs::write(&lib, b"fifteen bytes!!").unwrap();
        assert_eq!(
            PythonWheel::owning(&lib).map(|w| (w.name, w.cuda_major)),
            Some(("nvidia-nccl-cu13".into(), Some(13)))
        );
        // Sizes that do not tell them apart: no guess.
        std::fs::write(&lib, b"x").unwrap();
        assert_eq!(PythonWheel::owning(&lib), None);

        // PyTorch's own copy: the CUDA major from the local version.
        let torch = file(&site.join("torch/lib/libnccl.so.2"), b"t");
        dist_info(&site, "torch", "2.5.1+cu121", &[("torch/lib/libnccl.so.2", 1), ("torch/__init__.py", 9)]);
        assert_eq!(PythonWheel::owning(&torch).map(|w| (w.name, w.cuda_major)), Some(("torch".into(), Some(12))));
        // No wheel lists a file copied in by hand.
        let stray = file(&site.join("nvidia/nccl/lib/libnccl.so.2.bak"), b"s");
        assert_eq!(PythonWheel::owning(&stray), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// A FIFO where a wheel's RECORD belongs is passed over, not opened for reading (which
    /// would wait for a writer for ever: `doctor` and `Nccl::python_wheel` read it).
    #[test]
    #[cfg_attr(miri, ignore = "makes a FIFO")]
    fn a_fifo_in_a_dist_info_is_not_waited_on() {
        let root = tree("wheel-fifo");
        let site = root.join("site-packages");
        let lib = file(&site.join("nvidia/nccl/lib/libnccl.so.2"), b"x");
        dist_info(&site, "nvidia-nccl-cu12", "2.28.9", &[("nvidia/nccl/lib/libnccl.so.2", 1)]);
        let record = site.join("nvidia_nccl_cu12-2.28.9.dist-info/RECORD");
        std::fs::remove_file(&record).unwrap();
        let c = std::ffi::CString::new(record.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(PythonWheel::owning(&lib)));
        let owner = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("PythonWheel::owning returns");
        assert_eq!(owner, None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn cuda_major_from_names_and_local_versions() {
        assert_eq!(cuda_major("nvidia-nccl-cu12", "2.28.9"), Some(12));
        assert_eq!(cuda_major("nvidia_nccl_cu13", "2.32.3"), Some(13));
        assert_eq!(cuda_major("nvidia-nccl-cu11", "2.21.5"), Some(11));
        assert_eq!(cuda_major("torch", "2.5.1+cu118"), Some(11));
        assert_eq!(cuda_major("torch", "2.9.0+cu130"), Some(13));
        assert_eq!(cuda_major("torch", "2.5.1"), None);
        assert_eq!(cuda_major("torch", "2.5.1+rocm6.2"), None);
        assert_eq!(cuda_major("nvidia-nccl-cuda", "1"), None);
    }

    #[test]
    fn record_lines_quoted_and_plain() {
        assert_eq!(record_size("a/b.so,sha256=x,12", "a/b.so"), Some(Some(12)));
        assert_eq!(record_size("a/b.so,,", "a/b.so"), Some(None));
        assert_eq!(record_size("\"a,b/c.so\",sha256=x,7", "a,b/c.so"), Some(Some(7)));
        assert_eq!(record_size("a/c.so,sha256=x,12", "a/b.so"), None);
    }
}
