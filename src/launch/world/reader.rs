//! Reading one variable: a number, a host or a port, a malformed value a typed error naming
//! the variable; and how an error shows a variable.

use crate::launch::error::Error;

/// One field and the variable it came from, for error messages.
#[derive(Clone, Debug)]
pub(super) struct Field {
    pub(super) value: u32,
    pub(super) var: &'static str,
    /// How an error shows a value derived from a variable rather than read from it (Slurm's
    /// tasks on this node, from the task count list): `VAR=value (what was derived)`.
    pub(super) derived: Option<String>,
}

impl Field {
    pub(super) fn new(value: u32, var: &'static str) -> Self {
        Field { value, var, derived: None }
    }

    pub(super) fn shown(&self) -> String {
        match &self.derived {
            Some(d) => d.clone(),
            None => format!("{}={}", self.var, self.value),
        }
    }
}

/// Reads variables through `get`, turning a malformed value into a typed error.
pub(super) struct Reader<'a> {
    pub(super) get: &'a dyn Fn(&str) -> Option<String>,
}

impl Reader<'_> {
    pub(super) fn raw(&self, var: &str) -> Option<String> {
        (self.get)(var).filter(|v| !v.is_empty())
    }

    pub(super) fn has(&self, var: &str) -> bool {
        self.raw(var).is_some()
    }

    pub(super) fn number(&self, var: &'static str) -> Result<Option<Field>, Error> {
        let Some(v) = self.raw(var) else { return Ok(None) };
        let value = v.trim().parse::<u32>().map_err(|_| Error::LauncherVariable {
            variable: var.into(),
            value: v.clone(),
            expected: "a non-negative integer",
        })?;
        Ok(Some(Field::new(value, var)))
    }

    /// A launcher's root address (`MASTER_ADDR`): a host name or address, `[v6]` allowed; one
    /// that names no host (blank, `[]`) is an error, not a root host of "".
    pub(super) fn host(&self, var: &'static str) -> Result<Option<String>, Error> {
        let Some(v) = self.raw(var) else { return Ok(None) };
        match host_of(&v) {
            h if h.is_empty() => {
                Err(Error::LauncherVariable { variable: var.into(), value: v, expected: "a host name or address" })
            }
            h => Ok(Some(h)),
        }
    }

    pub(super) fn port(&self, var: &'static str) -> Result<Option<u16>, Error> {
        let Some(v) = self.raw(var) else { return Ok(None) };
        match v.trim().parse::<u16>() {
            Ok(p) if p > 0 => Ok(Some(p)),
            _ => Err(Error::LauncherVariable { variable: var.into(), value: v, expected: "a TCP port (1-65535)" }),
        }
    }
}

/// `VAR=value` for an error message, the value's control characters escaped (`\n`, `\u{0}`):
/// a message stays on one line whatever a variable holds.
pub(super) fn shown(var: &str, value: &str) -> String {
    format!("{var}={}", value.escape_debug())
}

fn host_of(addr: &str) -> String {
    let a = addr.trim();
    a.strip_prefix('[').and_then(|a| a.strip_suffix(']')).unwrap_or(a).to_string()
}

#[cfg(test)]
mod tests {
    use crate::launch::error::Error;
    use crate::launch::world::fixtures::world;
    use crate::launch::world::vars;

    #[test]
    fn malformed_values_are_typed_errors() {
        for (var, value) in [
            ("RANK", "-1"),
            ("WORLD_SIZE", "two"),
            ("OMPI_COMM_WORLD_SIZE", "4x"),
            ("MASTER_PORT", "70000"),
            (vars::PORT, "0"),
            (vars::ROOT, "host:port"),
            (vars::ROOT, "[::1"),
            // A root address that names no host (a root host of "" before).
            ("MASTER_ADDR", " "),
            ("MASTER_ADDR", "[]"),
        ] {
            let mut v = vec![("RANK", "0"), ("WORLD_SIZE", "1"), ("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "1")];
            if var.starts_with("OMPI") {
                v = vec![
                    ("OMPI_COMM_WORLD_RANK", "0"),
                    ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
                    ("OMPI_COMM_WORLD_LOCAL_SIZE", "1"),
                ];
            }
            v.retain(|(k, _)| *k != var);
            v.push((var, value));
            match world(&v) {
                Err(Error::LauncherVariable { variable, value: got, .. }) => {
                    assert_eq!((variable.as_str(), got.as_str()), (var, value))
                }
                other => panic!("{var}={value}: {other:?}"),
            }
        }
    }
}
