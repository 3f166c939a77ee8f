//! `doctor`: what NCCL this process would get, and what else is on the machine.
//!
//! Each candidate is loaded in a fresh process (`nccl-trampoline probe`, probe.rs), so one
//! library does not answer for another (the loader matches a soname against libraries already
//! loaded) and a library that crashes on load is reported instead of taking `doctor` down. The
//! net plugin is opened in one too. Every such process (and the `ldconfig` and `python3` that
//! `doctor` asks) runs for at most `--probe-timeout` seconds, and dies with `doctor` (Linux:
//! `PR_SET_PDEATHSIG`): a library whose loading blocks, or a `doctor` killed half way, leaves
//! nothing running. The checks' verdicts are decided in checks/.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nccl_trampoline::nccl::{Candidate, Nccl, PythonWheel, Source, LIBRARY_ENV};

use crate::args::DoctorArgs as Args;
use crate::checks::{conf, cuda_compat, socket, torch, Check, Verdict};
use crate::cuda;
use crate::error::Error as CliError;
use crate::json::Json;
use crate::probe::{output_within, params_in_child, probe_in_child, Probe};

/// What the wheel that installed `path` says about it: " (the nvidia-nccl-cu12 2.28.9 wheel,
/// built for CUDA 12)", or nothing.
fn wheel_note(path: &str) -> String {
    PythonWheel::owning(Path::new(path)).map(|w| format!(" ({w})")).unwrap_or_default()
}

/// Prints `line` unless the report is JSON.
macro_rules! say {
    ($text:expr) => { if $text { println!() } };
    ($text:expr, $($arg:tt)*) => { if $text { println!($($arg)*) } };
}

pub fn run(args: &Args) -> Result<bool, CliError> {
    let limit = args.probe_timeout;
    let text = !args.json;
    say!(text, "nccl-trampoline {} ({})", env!("CARGO_PKG_VERSION"), nccl_trampoline::engine::TARGET);
    say!(text);
    let candidates = Nccl::candidates();
    say!(text, "NCCL candidates, in discovery order (the first that loads is used):");
    let mut chosen: Option<(Candidate, Probe)> = None;
    // NCCL_TRAMPOLINE_LIBRARY that fails to load: Nccl::load fails with it, tries nothing else.
    let mut refused: Option<(Candidate, CliError)> = None;
    let mut resolved = BTreeSet::new();
    // Every file that loads (for the CUDA check), in the order found.
    let mut libraries: Vec<String> = Vec::new();
    let mut candidates_json = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        let result = probe_in_child(&c.path, limit);
        let status = match (&result, &chosen) {
            _ if refused.is_some() => "not tried",
            (Ok(_), None) => "LOADS",
            (Ok(p), Some((_, q))) if p.path == q.path => "same file",
            (Ok(_), Some(_)) => "shadowed",
            (Err(_), _) => "fails",
        };
        let source = c.source.to_string();
        let mut entry = vec![
            ("index", Json::Int(i as i64 + 1)),
            ("status", Json::from(status)),
            ("source", Json::from(source.as_str())),
            ("path", Json::from(c.path.display().to_string())),
        ];
        match &result {
            Ok(p) => {
                // The file the loader mapped, where the candidate is a soname or a link.
                let at = if Path::new(&p.path) == c.path { String::new() } else { format!(" at {}", p.path) };
                say!(
                    text,
                    "  {}. [{status:>9}] {source:<23} {}  ->  {} {}{at}{}",
                    i + 1,
                    c.path.display(),
                    p.flavor,
                    p.version,
                    wheel_note(&p.path)
                );
                resolved.insert(canonical(&p.path));
                if !libraries.contains(&p.path) {
                    libraries.push(p.path.clone());
                }
                entry.extend(probe_json(p));
            }
            Err(e) => {
                say!(text, "  {}. [{status:>9}] {source:<23} {}  ->  {e}", i + 1, c.path.display());
                entry.push(("error", Json::from(e.to_string())));
            }
        }
        candidates_json.push(Json::object(entry));
        match result {
            Err(e) if c.source == Source::Environment => refused = Some((c.clone(), e)),
            Ok(p) if chosen.is_none() && refused.is_none() => chosen = Some((c.clone(), p)),
            _ => {}
        }
    }
    let others: Vec<PathBuf> =
        libraries_on_disk(limit).into_iter().filter(|p| !resolved.contains(&canonical_path(p))).collect();
    let mut others_json = Vec::new();
    if !others.is_empty() {
        say!(
            text,
            "  Also on this machine, not reached by the discovery order (set NCCL_TRAMPOLINE_LIBRARY to use one):"
        );
        for p in others {
            let mut entry = vec![("path", Json::from(p.display().to_string()))];
            match probe_in_child(&p, limit) {
                Ok(q) => {
                    say!(text, "     {}  ->  {} {}{}", p.display(), q.flavor, q.version, wheel_note(&q.path));
                    if !libraries.contains(&q.path) {
                        libraries.push(q.path.clone());
                    }
                    entry.extend(probe_json(&q));
                }
                Err(e) => {
                    say!(text, "     {}  ->  {e}", p.display());
                    entry.push(("error", Json::from(e.to_string())));
                }
            }
            others_json.push(Json::object(entry));
        }
    }
    say!(text);
    let mut loaded_json = vec![];
    match (&chosen, &refused) {
        (_, Some((c, reason))) => {
            let line = format!(
                "nothing; {LIBRARY_ENV}={} cannot be loaded: {reason} (fix {LIBRARY_ENV}, or unset it to search the usual places)",
                c.path.display()
            );
            say!(text, "Loaded: {line}");
            loaded_json.push(("error", Json::from(line)));
        }
        (Some((c, p)), None) => {
            let wheel = PythonWheel::owning(Path::new(&p.path)).map(|w| format!("; {w}")).unwrap_or_default();
            say!(text, "Loaded: {} {} from {} ({}{wheel})", p.flavor, p.version, p.path, c.source);
            loaded_json.push(("source", Json::from(c.source.to_string())));
            loaded_json.extend(probe_json(p));
            if p.missing.is_empty() {
                say!(text, "  every symbol the facade knows is present");
            } else {
                say!(text, "  symbols this library lacks (the calls that need them return Error::Unsupported, or Error::SymbolMissing where the version should have them):");
                let loaded = parse_version(&p.version);
                for m in &p.missing {
                    let (name, since) = m.split_once('@').unwrap_or((m, "?"));
                    match (loaded, parse_version(since)) {
                        (Some(l), Some(s)) if l >= s => say!(text, "    {name:<28} missing (in NCCL since {since})"),
                        _ => say!(text, "    {name:<28} needs {since}"),
                    }
                }
            }
            match &p.coverage {
                Ok((line, unbound)) if unbound.is_empty() => say!(text, "  NCCL API coverage: {line}"),
                Ok((line, unbound)) => say!(text, "  NCCL API coverage: {line}; not bound: {}", unbound.join(", ")),
                Err(reason) => say!(text, "  NCCL API coverage: unknown ({reason})"),
            }
        }
        (None, None) => {
            let line = format!("nothing; no candidate loads. Install NCCL (`pip install nvidia-nccl-cu12`, or -cu13 for CUDA 13) or set {LIBRARY_ENV} to its path; the call core works without it (`nccl-trampoline selftest`)");
            say!(text, "Loaded: {line}");
            loaded_json.push(("error", Json::from(line)));
        }
    }
    say!(text);
    let environment = print_environment(text);
    say!(text);
    let plugins = crate::plugins::print_plugins(limit, text);
    say!(text);
    let (gpus, driver) = print_gpus(text);
    say!(text);

    // The checks (checks/): the facts gathered here, the verdicts decided there.
    let env: Vec<(String, String)> = std::env::vars().collect();
    let var = |k: &str| std::env::var(k).ok();
    let conf_paths = conf::files(var("NCCL_CONF_FILE").as_deref(), conf::passwd_home().as_deref());
    let conf_read = conf::read_files(&conf_paths);
    let conf_pairs: Vec<(PathBuf, Vec<(String, String)>)> =
        conf_read.iter().filter_map(|(p, r)| Some((p.clone(), r.clone().ok()??))).collect();
    let settings = conf::effective(&env, &conf_pairs);
    say!(text, "NCCL parameters in effect (the environment wins over the files, the first file over /etc/nccl.conf):");
    if settings.is_empty() {
        say!(text, "  none set");
    }
    for s in &settings {
        let value = s.value.as_deref().unwrap_or("(set; not an NCCL variable, value not shown)");
        let hidden: Vec<String> =
            s.overridden.iter().map(|(o, v)| format!("{}={v} in {}", s.key, o.describe())).collect();
        let hidden = if hidden.is_empty() { String::new() } else { format!("; ignored: {}", hidden.join(", ")) };
        say!(text, "  {}={value}  (from {}{hidden})", s.key, s.origin.describe());
    }
    // What the loaded library itself reads, where it can say (its parameter API).
    let chosen_path = chosen.as_ref().map(|(_, p)| PathBuf::from(&p.path));
    let own = match &chosen_path {
        Some(path) => {
            let keys: Vec<&str> = settings.iter().map(|s| s.key.as_str()).filter(|k| k.starts_with("NCCL_")).collect();
            params_in_child(path, &keys, limit).map_err(|e| e.to_string())
        }
        None => Err("no NCCL loads".to_string()),
    };
    let own_json = match &own {
        Ok(Ok(values)) => {
            say!(
                text,
                "NCCL's own values (ncclParamGetParameter, NCCL 2.30.4): {} parameters; of those set here:",
                values.len()
            );
            let mut shown = 0;
            for s in &settings {
                if let Some((k, v)) = values.iter().find(|(k, _)| *k == s.key) {
                    say!(text, "  {k}={v}  (as the library reads it)");
                    shown += 1;
                }
            }
            if shown == 0 {
                say!(text, "  none of those set here is one it reports");
            }
            Json::object([
                ("available", Json::Bool(true)),
                (
                    "values",
                    Json::Array(
                        values
                            .iter()
                            .map(|(k, v)| {
                                Json::object([("key", Json::from(k.as_str())), ("value", Json::from(v.as_str()))])
                            })
                            .collect(),
                    ),
                ),
            ])
        }
        Ok(Err(reason)) | Err(reason) => {
            say!(
                text,
                "NCCL's own values: not available ({reason}); the values above are the environment's and the files'"
            );
            Json::object([("available", Json::Bool(false)), ("reason", Json::from(reason.as_str()))])
        }
    };
    say!(text);
    let setting = |k: &str| settings.iter().find(|s| s.key == k).and_then(|s| s.value.clone());

    let mut checks: Vec<Check> = Vec::new();
    for path in &libraries {
        let wheel = PythonWheel::owning(Path::new(path)).map(|w| (w.name, w.cuda_major));
        let banner = cuda_compat::banner_of(Path::new(path));
        let mut c = cuda_compat::check(&driver, &cuda_compat::LibraryBuild { path: path.clone(), wheel, banner });
        // Only the library this program loads can fail the run; the others are warnings.
        let loaded = chosen.as_ref().is_some_and(|(_, p)| canonical(&p.path) == canonical(path));
        if c.verdict == Verdict::Failed && !loaded {
            c.verdict = Verdict::Warning;
            c.detail.push_str(" (not the library this program loads)");
        }
        checks.push(c);
    }
    if libraries.is_empty() {
        checks.push(Check::new(
            "cuda-compat",
            "no library",
            Verdict::Skipped,
            "no NCCL loads: nothing to compare with the driver",
        ));
    }
    let (present, usable) = socket::interfaces();
    let ifname = setting("NCCL_SOCKET_IFNAME");
    checks.push(socket::check(ifname.as_deref(), setting("NCCL_COMM_ID").as_deref(), &usable, &present));
    checks.push(conf::check(var("NCCL_CONF_FILE").as_deref(), &conf_read, &settings, false));
    let mut python = Command::new("python3");
    python.args(["-c", torch::SCRIPT]);
    let facts = match output_within(python, limit) {
        Ok(o) => torch::parse(&String::from_utf8_lossy(&o.stdout)),
        Err(e) => torch::TorchFacts { error: Some(format!("python3: {e}")), ..Default::default() },
    };
    let chosen_real = chosen.as_ref().map(|(_, p)| (canonical(&p.path), p.version.clone()));
    let same = |a: &Path, b: &Path| canonical_path(a) == canonical_path(b);
    let chosen_ref = chosen_real.as_ref().map(|(path, version)| torch::Chosen { path, version });
    checks.push(torch::check(&facts, chosen_ref, &same));

    say!(text, "Checks (verdict, check, what it looked at: what it found; fix):");
    for c in &checks {
        say!(text, "  {c}");
    }
    let failed = checks.iter().filter(|c| c.verdict == Verdict::Failed).count();
    say!(text);
    say!(text, "{}", if failed == 0 { "No check failed.".to_string() } else { format!("{failed} check(s) FAILED.") });

    if args.json {
        let parameters = settings
            .iter()
            .map(|s| {
                Json::object([
                    ("key", Json::from(s.key.as_str())),
                    ("value", Json::opt_str(s.value.as_deref())),
                    ("origin", Json::from(s.origin.describe())),
                    (
                        "ignored",
                        Json::Array(
                            s.overridden
                                .iter()
                                .map(|(o, v)| {
                                    Json::object([
                                        ("origin", Json::from(o.describe())),
                                        ("value", Json::from(v.as_str())),
                                    ])
                                })
                                .collect(),
                        ),
                    ),
                ])
            })
            .collect();
        let doc = Json::object([
            ("schema", Json::Int(1)),
            (
                "tool",
                Json::object([
                    ("version", Json::from(env!("CARGO_PKG_VERSION"))),
                    ("target", Json::from(nccl_trampoline::engine::TARGET)),
                ]),
            ),
            ("candidates", Json::Array(candidates_json)),
            ("also_on_disk", Json::Array(others_json)),
            ("loaded", Json::object(loaded_json)),
            ("environment", environment),
            ("plugins", plugins),
            ("gpus", gpus),
            ("parameters", Json::Array(parameters)),
            ("nccl_parameters", own_json),
            ("checks", Json::Array(checks.iter().map(Check::to_json).collect())),
            ("failed", Json::Int(failed as i64)),
            ("ok", Json::Bool(failed == 0)),
        ]);
        println!("{}", doc.render());
    }
    Ok(failed == 0)
}

/// A probe's facts as JSON fields.
fn probe_json(p: &Probe) -> Vec<(&'static str, Json)> {
    let wheel = PythonWheel::owning(Path::new(&p.path));
    vec![
        ("resolved", Json::from(p.path.as_str())),
        ("flavor", Json::from(p.flavor.as_str())),
        ("version", Json::from(p.version.as_str())),
        ("wheel", Json::opt_str(wheel.as_ref().map(|w| w.name.as_str()))),
        ("wheel_cuda_major", wheel.and_then(|w| w.cuda_major).map_or(Json::Null, |m| Json::Int(m.into()))),
        ("missing", Json::strings(p.missing.iter().map(String::as_str))),
        (
            "coverage",
            match &p.coverage {
                Ok((line, _)) => Json::from(line.as_str()),
                Err(reason) => Json::from(format!("unknown ({reason})")),
            },
        ),
    ]
}

fn canonical(path: &str) -> PathBuf {
    canonical_path(Path::new(path))
}

fn canonical_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// NCCL and RCCL libraries the system loader's cache, `LD_LIBRARY_PATH` and the Python
/// interpreter on `PATH` know of, one per real file.
fn libraries_on_disk(limit: Duration) -> Vec<PathBuf> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut add = |p: PathBuf| {
        if p.is_file() && seen.insert(canonical_path(&p)) {
            out.push(p);
        }
    };
    for dir in
        std::env::var_os("LD_LIBRARY_PATH").map(|v| std::env::split_paths(&v).collect::<Vec<_>>()).unwrap_or_default()
    {
        for name in ["libnccl.so.2", "libnccl.so", "librccl.so.1"] {
            add(dir.join(name));
        }
    }
    for ldconfig in ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"] {
        let mut command = Command::new(ldconfig);
        command.arg("-p");
        if let Ok(out) = output_within(command, limit) {
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                let name = line.trim_start();
                if name.starts_with("libnccl.so") || name.starts_with("librccl.so") {
                    if let Some((_, path)) = line.rsplit_once(" => ") {
                        add(PathBuf::from(path.trim()));
                    }
                }
            }
            break;
        }
    }
    let script = "import os,nvidia.nccl as m;print(os.path.join(list(m.__path__)[0],'lib','libnccl.so.2'))";
    let mut command = Command::new("python3");
    command.args(["-c", script]);
    if let Ok(o) = output_within(command, limit) {
        if o.status.success() {
            add(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        }
    }
    out
}

fn print_environment(text: bool) -> Json {
    let under_cargo = CargoRun::detect();
    let mut vars: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("NCCL_")
                || k.starts_with("RCCL_")
                || [
                    "CUDA_VISIBLE_DEVICES",
                    "LD_LIBRARY_PATH",
                    "VIRTUAL_ENV",
                    "CONDA_PREFIX",
                    "PYTHONUSERBASE",
                    nccl_trampoline::cuda::DRIVER_ENV,
                ]
                .contains(&k.as_str())
        })
        .filter_map(|(k, v)| match &under_cargo {
            Some(cargo) => cargo.users_part(&k, &v).map(|v| (k, v)),
            None => Some((k, v)),
        })
        // A secret (the rendezvous key of a job script) never reaches the report.
        .map(|(k, v)| {
            let v = crate::secrets::shown(&k, &v);
            (k, v)
        })
        .collect();
    vars.sort();
    say!(text, "Environment (NCCL_*, RCCL_*, and what discovery reads):");
    if vars.is_empty() {
        say!(text, "  none set");
    }
    for (k, v) in &vars {
        say!(text, "  {k}={v}");
    }
    if under_cargo.is_some() {
        say!(text, "  (run by cargo: the variables and LD_LIBRARY_PATH entries cargo adds for itself are left out)");
    }
    Json::Object(vars.into_iter().map(|(k, v)| (k, Json::Str(v))).collect())
}

/// What `cargo run` adds to the environment of the program it runs: its own variables, the
/// build script's `NCCL_TRAMPOLINE_*` compile-time values, and `LD_LIBRARY_PATH` entries in
/// the target folder and the toolchain.
struct CargoRun {
    /// Folders whose entries in `LD_LIBRARY_PATH` are cargo's: the target folder and the
    /// toolchain's sysroot.
    own_dirs: Vec<PathBuf>,
}

impl CargoRun {
    /// `Some` when this process was started by `cargo run` for this package.
    fn detect() -> Option<CargoRun> {
        if std::env::var("CARGO_PKG_NAME").ok()? != env!("CARGO_PKG_NAME") {
            return None;
        }
        let cargo = PathBuf::from(std::env::var_os("CARGO")?);
        let mut own_dirs: Vec<PathBuf> =
            cargo.parent().and_then(Path::parent).map(Path::to_path_buf).into_iter().collect();
        if let Ok(exe) = std::env::current_exe() {
            // target/<profile>/nccl-trampoline, or target/<triple>/<profile>/...: the folder
            // named by CARGO_TARGET_DIR is not told to the program, so take the profile's parent.
            own_dirs.extend(exe.parent().and_then(Path::parent).map(Path::to_path_buf));
        }
        Some(CargoRun { own_dirs })
    }

    /// The user's part of variable `key`, or `None` when it is all cargo's.
    fn users_part(&self, key: &str, value: &str) -> Option<String> {
        const READ_AT_RUN_TIME: [&str; 2] = [LIBRARY_ENV, nccl_trampoline::cuda::DRIVER_ENV];
        if key.starts_with("NCCL_TRAMPOLINE_") && !READ_AT_RUN_TIME.contains(&key) {
            return None;
        }
        if key != "LD_LIBRARY_PATH" {
            return Some(value.to_string());
        }
        let kept: Vec<&str> = value
            .split(':')
            .filter(|entry| !entry.is_empty() && !self.own_dirs.iter().any(|d| Path::new(entry).starts_with(d)))
            .collect();
        (!kept.is_empty()).then(|| kept.join(":"))
    }
}

/// The GPUs section, and the driver's CUDA version (`cuDriverGetVersion`) or why there is none.
fn print_gpus(text: bool) -> (Json, Result<i32, String>) {
    say!(text, "GPUs:");
    let driver = match cuda::Driver::load() {
        Ok(d) => d,
        Err(e) => {
            say!(text, "  none: {e}");
            let json = Json::object([("error", Json::from(e.to_string()))]);
            return (json, Err(e.to_string()));
        }
    };
    let version = driver.version().map_err(|e| e.to_string());
    let cuda_version = version.as_ref().map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10));
    let display = cuda::nvml_driver_version();
    say!(
        text,
        "  driver {}, {}",
        display.as_deref().unwrap_or("unknown (no NVML)"),
        cuda_version.as_ref().map(|v| format!("CUDA {v}")).unwrap_or_else(|e| e.to_string())
    );
    let mut devices = Vec::new();
    let mut error = None;
    match driver.device_count() {
        Ok(0) => say!(text, "  no visible devices"),
        Ok(n) => {
            for i in 0..n {
                match driver.device_info(i) {
                    Ok(d) => {
                        say!(text, "  {}: {}, {} MiB, PCI {}", d.ordinal, d.name, d.memory >> 20, d.pci_bus_id);
                        devices.push(Json::object([
                            ("ordinal", Json::Int(d.ordinal.into())),
                            ("name", Json::from(d.name.as_str())),
                            ("memory_mib", Json::Int((d.memory >> 20) as i64)),
                            ("pci_bus_id", Json::from(d.pci_bus_id.as_str())),
                        ]));
                    }
                    Err(e) => {
                        say!(text, "  {i}: {e}");
                        devices.push(Json::object([
                            ("ordinal", Json::Int(i.into())),
                            ("error", Json::from(e.to_string())),
                        ]));
                    }
                }
            }
        }
        Err(e) => {
            say!(text, "  {e}");
            error = Some(e.to_string());
        }
    }
    let json = Json::object([
        ("driver", Json::opt_str(display)),
        ("cuda_version", Json::opt_str(cuda_version.as_ref().ok().cloned())),
        ("devices", Json::Array(devices)),
        ("error", Json::opt_str(error.or(version.as_ref().err().cloned()))),
    ]);
    (json, version)
}

/// `major.minor.patch` as numbers, for comparing versions printed by the probe.
fn parse_version(v: &str) -> Option<(u32, u32, u32)> {
    let mut parts = v.split('.').map(|p| p.trim().parse::<u32>().ok());
    Some((parts.next()??, parts.next()??, parts.next()??))
}
