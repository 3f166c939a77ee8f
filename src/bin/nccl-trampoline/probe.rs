//! The probe processes of `doctor` and the plugin commands: a candidate library (or its
//! parameter values) loaded in a fresh process (`nccl-trampoline probe`), so one library does
//! not answer for another and one that crashes on load is reported instead of taking the
//! command down; each child runs for at most its limit and dies with its parent (Linux:
//! `PR_SET_PDEATHSIG`).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nccl_trampoline::nccl::{Error, Nccl};

use crate::error::Error as CliError;

/// The facts `probe` reports about one candidate.
#[derive(Debug, PartialEq)]
pub struct Probe {
    pub version: String,
    pub flavor: String,
    pub path: String,
    pub missing: Vec<String>,
    /// `Nccl::coverage`'s line ("36 of 97 functions exported by this library are bound") and
    /// the exported functions not bound, or why the library's symbol table could not be read.
    pub coverage: Result<(String, Vec<String>), String>,
}

/// Prints one line: `ok<TAB>version<TAB>flavor<TAB>resolved path<TAB>missing,symbols<TAB>
/// coverage<TAB>unbound,functions` (coverage `error: reason` where the symbol table cannot be
/// read) or `error<TAB>reason`. Returns whether the library loaded.
pub fn probe(library: &Path) -> Result<bool, CliError> {
    match Nccl::load_from(library) {
        Ok(n) => {
            let missing: Vec<String> = n.missing_symbols().iter().map(|(s, v)| format!("{s}@{v}")).collect();
            let (coverage, unbound) = match n.coverage() {
                Ok(c) => (c.to_string(), c.unbound.join(",")),
                Err(e) => (format!("error: {}", one_line(&e.to_string())), String::new()),
            };
            println!(
                "ok\t{}\t{}\t{}\t{}\t{coverage}\t{unbound}",
                n.version(),
                n.flavor(),
                n.path().display(),
                missing.join(",")
            );
            Ok(true)
        }
        Err(Error::LibraryLoad { reason, .. }) => {
            println!("error\t{}", one_line(&reason));
            Ok(false)
        }
        Err(e) => {
            println!("error\t{}", one_line(&e.to_string()));
            Ok(false)
        }
    }
}

/// `probe --params`: the library's own parameter values through its parameter API
/// (`ncclParamGetAllParameterKeys`, `ncclParamGetParameter`: NCCL 2.30.4), a
/// `param<TAB>key<TAB>value` line each; `none<TAB>reason` when the library has no such API,
/// `error<TAB>reason` when it does not load. NCCL lists only its documented parameters
/// (unless `NCCL_PARAM_DUMP_ALL=1`): `extra` keys are read too, where NCCL has them.
pub fn probe_params(library: &Path, extra: &[String]) -> Result<bool, CliError> {
    let nccl = match Nccl::load_from(library) {
        Ok(n) => n,
        Err(e) => {
            println!("error\t{}", one_line(&e.to_string()));
            return Ok(false);
        }
    };
    match nccl.param_keys() {
        Err(e) => println!("none\t{}", one_line(&e.to_string())),
        Ok(mut keys) => {
            keys.extend(extra.iter().filter(|k| !keys.contains(k)).cloned().collect::<Vec<_>>());
            for key in keys {
                match nccl.param_string(&key) {
                    Ok(value) => println!("param\t{}\t{}", one_line(&key), one_line(&value)),
                    Err(Error::ParamNotFound { .. }) => {}
                    Err(e) => println!("param\t{}\t(unreadable: {})", one_line(&key), one_line(&e.to_string())),
                }
            }
        }
    }
    Ok(true)
}

/// The library's own parameter values ([`probe_params`] in a child, for at most `limit`):
/// `Ok(Err(reason))` when it has no parameter API.
pub fn params_in_child(
    library: &Path,
    keys: &[&str],
    limit: Duration,
) -> Result<Result<Vec<(String, String)>, String>, CliError> {
    let exe = std::env::current_exe().map_err(|source| CliError::CurrentExe { source })?;
    let mut command = Command::new(exe);
    command.arg("probe").arg("--params").arg(library);
    for k in keys {
        command.arg("--key").arg(k);
    }
    let out = output_within(command, limit)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut values = Vec::new();
    for line in text.lines() {
        match line.split('\t').collect::<Vec<_>>().as_slice() {
            ["param", key, value] => values.push((key.to_string(), value.to_string())),
            ["none", reason] => return Ok(Err(reason.to_string())),
            ["error", reason] => return Err(CliError::ProbeRefused { reason: reason.to_string() }),
            _ => {}
        }
    }
    if !out.status.success() && values.is_empty() {
        let stderr = one_line(String::from_utf8_lossy(&out.stderr).trim());
        return Err(CliError::ProbeDied { status: out.status, stderr });
    }
    Ok(Ok(values))
}

pub fn one_line(s: &str) -> String {
    s.replace(['\n', '\t'], " ")
}

/// Runs `command` with its output captured, for at most `limit`: killed after it (and on
/// Linux whenever `doctor` dies first).
pub fn output_within(mut command: Command, limit: Duration) -> Result<Output, CliError> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    die_with_parent(&mut command);
    let mut child = command.spawn().map_err(|source| CliError::ProbeStart { source })?;
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take());
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.as_mut().map(|o| o.read_to_end(&mut v));
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.as_mut().map(|e| e.read_to_end(&mut v));
        v
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(10)),
            // Out of time (or unable to ask): stop it. The readers end with its pipes.
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(CliError::ProbeTimedOut { limit });
            }
        }
    };
    Ok(Output { status, stdout: out.join().unwrap_or_default(), stderr: err.join().unwrap_or_default() })
}

/// Makes the child of `command` die with this process: Linux sends it SIGKILL when the thread
/// that started it ends (`PR_SET_PDEATHSIG`; `doctor` starts every child from its main thread,
/// which ends only with the process). A parent that died between the fork and the `prctl` is
/// seen through `getppid` and the child gives up before it runs.
fn die_with_parent(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (prctl, getppid); it allocates nothing (an OS error
        // code is stored inline).
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// Runs `probe` for `library` in a child process, for at most `limit`.
pub fn probe_in_child(library: &Path, limit: Duration) -> Result<Probe, CliError> {
    let exe = std::env::current_exe().map_err(|source| CliError::CurrentExe { source })?;
    let mut command = Command::new(exe);
    command.arg("probe").arg(library).env_remove("NCCL_DEBUG");
    let out = output_within(command, limit)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or("");
    let fields: Vec<&str> = line.split('\t').collect();
    match fields.as_slice() {
        ["ok", version, flavor, path, missing, coverage, unbound] => Ok(Probe {
            version: version.to_string(),
            flavor: flavor.to_string(),
            path: path.to_string(),
            missing: missing.split(',').filter(|s| !s.is_empty()).map(String::from).collect(),
            coverage: match coverage.strip_prefix("error: ") {
                Some(reason) => Err(reason.to_string()),
                None => {
                    Ok((coverage.to_string(), unbound.split(',').filter(|s| !s.is_empty()).map(String::from).collect()))
                }
            },
        }),
        ["error", reason] => Err(CliError::ProbeRefused { reason: reason.to_string() }),
        _ => Err(CliError::ProbeDied {
            status: out.status,
            stderr: one_line(String::from_utf8_lossy(&out.stderr).trim()),
        }),
    }
}
