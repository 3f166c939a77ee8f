//! Check 3: the NCCL parameters in effect, from the environment and the `nccl.conf` files, as
//! NCCL reads them (v2.28.3-1 and v2.30.7-1 src/misc/param.cc):
//! - `initEnvFunc` (run once by `initEnv`) reads `$NCCL_CONF_FILE` if set and non-empty, else
//!   `~/.nccl.conf` in the password database's home (`userHomeDir`: `getpwuid(getuid())`, not
//!   `$HOME`), and then `/etc/nccl.conf`, always;
//! - `setEnvFile` takes each line without its `\n` (a `\r` before it stays in the value: a
//!   file saved with CRLF sets `eth0\r`), skips lines starting with `#` and lines without `=`, and calls `setenv(name, value, 0)` with everything before the first `=`
//!   as the name (spaces included, at most 1023 bytes) and everything after it as the value:
//!   overwrite 0, so a variable already set wins. The environment therefore wins over both
//!   files, and the first file (the user's, or `NCCL_CONF_FILE`) over `/etc/nccl.conf`.

use std::path::{Path, PathBuf};

use super::{Check, Verdict};

/// Where a parameter's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    Environment,
    File(PathBuf),
}

impl Origin {
    pub fn describe(&self) -> String {
        match self {
            Origin::Environment => "environment".to_string(),
            Origin::File(p) => p.display().to_string(),
        }
    }
}

/// A parameter in effect, and the values it hides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub key: String,
    /// `None` for a variable outside `NCCL_*` taken from the environment: its value is not
    /// ours to print.
    pub value: Option<String>,
    pub origin: Origin,
    /// Values of the same key NCCL ignores (later files), with where they are.
    pub overridden: Vec<(Origin, String)>,
}

/// The files NCCL reads, in its order: `NCCL_CONF_FILE` (if set and non-empty) or
/// `<home>/.nccl.conf` (`home`: [`passwd_home`]), then `/etc/nccl.conf`.
pub fn files(conf_file: Option<&str>, home: Option<&str>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    match (conf_file.filter(|f| !f.is_empty()), home) {
        (Some(f), _) => out.push(PathBuf::from(f)),
        (None, Some(h)) => out.push(Path::new(h).join(".nccl.conf")),
        (None, None) => {}
    }
    out.push(PathBuf::from("/etc/nccl.conf"));
    out
}

/// A file's `(name, value)` pairs, by `setEnvFile`'s rules.
pub fn parse(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.split_inclusive('\n') {
        let line = line.strip_suffix('\n').unwrap_or(line);
        if line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else { continue };
        // setenv refuses an empty name (EINVAL): nothing is set.
        if name.is_empty() {
            continue;
        }
        out.push((cut(name, 1023), cut(value, 1023)));
    }
    out
}

/// The user's home as NCCL finds it (`userHomeDir`: the password database's entry for this
/// user, not `$HOME`).
pub fn passwd_home() -> Option<String> {
    #[cfg(unix)]
    {
        let mut buf = vec![0u8; 16 * 1024];
        // SAFETY: getpwuid_r writes the entry into `pw` and its strings into `buf` (of the
        // length given); `result` says whether there was one.
        unsafe {
            let mut pw: libc::passwd = std::mem::zeroed();
            let mut result: *mut libc::passwd = std::ptr::null_mut();
            let rc = libc::getpwuid_r(libc::getuid(), &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut result);
            if rc == 0 && !result.is_null() && !pw.pw_dir.is_null() {
                return Some(std::ffi::CStr::from_ptr(pw.pw_dir).to_string_lossy().into_owned());
            }
        }
    }
    None
}

fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The parameters in effect: `env` is the environment (every variable: a file's name that is
/// set there is not applied), `files` each file read with its pairs, in NCCL's order.
/// Listed: every `NCCL_*` variable of the environment (but this crate's `NCCL_TRAMPOLINE_*`)
/// and every name in a file.
pub fn effective(env: &[(String, String)], files: &[(PathBuf, Vec<(String, String)>)]) -> Vec<Setting> {
    let mut out: Vec<Setting> = env
        .iter()
        // NCCL_TRAMPOLINE_* are this crate's, not NCCL's.
        .filter(|(k, _)| k.starts_with("NCCL_") && !k.starts_with("NCCL_TRAMPOLINE_"))
        .map(|(k, v)| Setting {
            key: k.clone(),
            value: Some(v.clone()),
            origin: Origin::Environment,
            overridden: vec![],
        })
        .collect();
    for (path, pairs) in files {
        for (k, v) in pairs {
            let origin = Origin::File(path.clone());
            if let Some(s) = out.iter_mut().find(|s| &s.key == k) {
                s.overridden.push((origin, v.clone()));
            } else if env.iter().any(|(ek, _)| ek == k) {
                out.push(Setting {
                    key: k.clone(),
                    value: None,
                    origin: Origin::Environment,
                    overridden: vec![(origin, v.clone())],
                });
            } else {
                out.push(Setting { key: k.clone(), value: Some(v.clone()), origin, overridden: vec![] });
            }
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// How each file read: its pairs, or why not (`None`: it does not exist, which is normal).
pub type FileRead = (PathBuf, Result<Option<Vec<(String, String)>>, String>);

/// Reads `paths` (regular files only, at most 1 MiB: NCCL reads any size, but a larger
/// configuration is not one).
pub fn read_files(paths: &[PathBuf]) -> Vec<FileRead> {
    paths
        .iter()
        .map(|p| {
            let r = match std::fs::metadata(p) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e.to_string()),
                Ok(m) if !m.is_file() => Err("not a regular file".to_string()),
                Ok(m) if m.len() > 1 << 20 => Err(format!("{} bytes: not read", m.len())),
                Ok(_) => std::fs::read(p).map(|b| Some(parse(&String::from_utf8_lossy(&b)))).map_err(|e| e.to_string()),
            };
            (p.clone(), r)
        })
        .collect()
}

/// The check's line: how many parameters come from where; a warning for an `NCCL_CONF_FILE`
/// that cannot be read (NCCL skips it silently).
pub fn check(conf_file: Option<&str>, read: &[FileRead], settings: &[Setting], via_api: bool) -> Check {
    let from_env = settings.iter().filter(|s| s.origin == Origin::Environment).count();
    let from_files = settings.len() - from_env;
    let files: Vec<String> = read
        .iter()
        .map(|(p, r)| match r {
            Ok(Some(pairs)) => format!("{} ({} set)", p.display(), pairs.len()),
            Ok(None) => format!("{} (absent)", p.display()),
            Err(e) => format!("{} (unreadable: {e})", p.display()),
        })
        .collect();
    let source = if via_api {
        "values as the loaded NCCL reports them (ncclParamGetParameter)"
    } else {
        "values from the environment and the files, read as NCCL reads them"
    };
    let detail =
        format!("{from_env} from the environment, {from_files} from files; files read: {}; {source}", files.join(", "));
    let subject = match conf_file {
        Some(f) if !f.is_empty() => format!("NCCL_CONF_FILE={f}"),
        _ => "NCCL_CONF_FILE unset".to_string(),
    };
    // A file saved with CRLF: NCCL keeps the `\r` in every value it sets from it.
    let crlf: Vec<&str> = settings
        .iter()
        .filter(|s| s.origin != Origin::Environment && s.value.as_deref().is_some_and(|v| v.ends_with('\r')))
        .map(|s| s.key.as_str())
        .collect();
    if !crlf.is_empty() {
        return Check::new("nccl-params", subject, Verdict::Warning, detail).fix(format!(
            "{} end in a carriage return (a file saved with CRLF line ends): NCCL keeps it in the value; save the file with LF line ends",
            crlf.join(", ")
        ));
    }
    match (conf_file.filter(|f| !f.is_empty()), read.first()) {
        (Some(f), Some((_, Ok(None)))) | (Some(f), Some((_, Err(_)))) => Check::new("nccl-params", subject, Verdict::Warning, detail)
            .fix(format!("NCCL_CONF_FILE={f} cannot be read and NCCL ignores it without a word: fix the path, or unset it to read ~/.nccl.conf")),
        _ => Check::new("nccl-params", subject, Verdict::Info, detail),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn files_are_parsed_as_set_env_file_does() {
        let text = "# comment\nNCCL_DEBUG=INFO\r\nno equals sign\n=empty name\nNCCL_A=x=y\n NCCL_B = 1\nNCCL_C=\n #not a comment=1\nNCCL_LAST=z";
        assert_eq!(
            parse(text),
            pairs(&[
                ("NCCL_DEBUG", "INFO\r"),
                ("NCCL_A", "x=y"),
                (" NCCL_B ", " 1"),
                ("NCCL_C", ""),
                (" #not a comment", "1"),
                ("NCCL_LAST", "z"),
            ])
        );
        assert_eq!(parse(&format!("K={}", "v".repeat(2000)))[0].1.len(), 1023);
    }

    #[test]
    fn conf_file_replaces_the_users_file_but_not_etc() {
        let cases: [(Option<&str>, Option<&str>, &[&str]); 4] = [
            (Some("/x.conf"), Some("/home/u"), &["/x.conf", "/etc/nccl.conf"]),
            (Some(""), Some("/home/u"), &["/home/u/.nccl.conf", "/etc/nccl.conf"]),
            (None, Some("/home/u"), &["/home/u/.nccl.conf", "/etc/nccl.conf"]),
            (None, None, &["/etc/nccl.conf"]),
        ];
        for (conf, home, want) in cases {
            let want: Vec<PathBuf> = want.iter().map(PathBuf::from).collect();
            assert_eq!(files(conf, home), want);
        }
    }

    #[test]
    fn the_environment_wins_then_the_first_file() {
        let env =
            pairs(&[("NCCL_DEBUG", "WARN"), ("HOME", "/home/u"), ("PATH", "/bin"), ("NCCL_TRAMPOLINE_LIBRARY", "/l")]);
        let user = PathBuf::from("/home/u/.nccl.conf");
        let etc = PathBuf::from("/etc/nccl.conf");
        let files = [
            (user.clone(), pairs(&[("NCCL_DEBUG", "INFO"), ("NCCL_IB_HCA", "mlx5_0"), ("PATH", "/evil")])),
            (etc.clone(), pairs(&[("NCCL_IB_HCA", "mlx5_1"), ("NCCL_SOCKET_IFNAME", "eth0")])),
        ];
        let got = effective(&env, &files);
        let want = vec![
            Setting {
                key: "NCCL_DEBUG".into(),
                value: Some("WARN".into()),
                origin: Origin::Environment,
                overridden: vec![(Origin::File(user.clone()), "INFO".into())],
            },
            Setting {
                key: "NCCL_IB_HCA".into(),
                value: Some("mlx5_0".into()),
                origin: Origin::File(user.clone()),
                overridden: vec![(Origin::File(etc.clone()), "mlx5_1".into())],
            },
            Setting {
                key: "NCCL_SOCKET_IFNAME".into(),
                value: Some("eth0".into()),
                origin: Origin::File(etc),
                overridden: vec![],
            },
            // A name outside NCCL_* set in the environment: its value is not printed.
            Setting {
                key: "PATH".into(),
                value: None,
                origin: Origin::Environment,
                overridden: vec![(Origin::File(user), "/evil".into())],
            },
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn an_unreadable_conf_file_is_a_warning() {
        let absent: Vec<FileRead> = vec![(PathBuf::from("/no.conf"), Ok(None))];
        assert_eq!(check(Some("/no.conf"), &absent, &[], false).verdict, Verdict::Warning);
        let fine: Vec<FileRead> = vec![(PathBuf::from("/a.conf"), Ok(Some(vec![])))];
        assert_eq!(check(Some("/a.conf"), &fine, &[], false).verdict, Verdict::Info);
        assert_eq!(check(None, &absent, &[], false).verdict, Verdict::Info);
    }
}
