//! Where the rendezvous meets: the root's host as the launcher names it unless
//! `NCCL_TRAMPOLINE_ROOT` does, the port from `NCCL_TRAMPOLINE_PORT` or the root's
//! `host:port`; two different ports, or the launcher's own reserved port, are contradictions.

use crate::launch::error::Error;
use crate::launch::world::reader::{shown, Reader};
use crate::launch::world::vars;

/// The root's host and the rendezvous port: `launcher_host` unless `NCCL_TRAMPOLINE_ROOT`
/// (`host`, `host:port` or `[v6]:port`) names one; never `reserved_port` (torchrun's store, as
/// the variable that gave it: `MASTER_PORT`, or Kubeflow's `PET_MASTER_PORT`).
pub(super) fn resolve(
    r: &Reader<'_>,
    launcher_host: Option<String>,
    reserved_port: Option<(&'static str, u16)>,
) -> Result<(Option<String>, Option<u16>), Error> {
    let (mut root_host, mut port) = (launcher_host, r.port(vars::PORT)?);
    if let Some(root) = r.raw(vars::ROOT) {
        let (host, p) = split_host_port(&root).ok_or_else(|| Error::LauncherVariable {
            variable: vars::ROOT.into(),
            value: root.clone(),
            expected: "a host, host:port or [IPv6]:port",
        })?;
        root_host = Some(host);
        if let Some(p) = p {
            if port.is_some_and(|q| q != p) {
                return Err(Error::LauncherContradiction {
                    variables: vec![shown(vars::ROOT, &root), format!("{}={}", vars::PORT, port.unwrap())],
                    detail: "two different rendezvous ports".into(),
                });
            }
            port = Some(p);
        }
    }
    if let (Some(p), Some((variable, q))) = (port, reserved_port) {
        if p == q {
            return Err(Error::LauncherContradiction {
                variables: vec![format!("{}={p}", vars::PORT), format!("{variable}={q}")],
                detail: "the rendezvous port is torchrun's own store port".into(),
            });
        }
    }
    Ok((root_host, port))
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`; a bare IPv6 address has no port.
fn split_host_port(s: &str) -> Option<(String, Option<u16>)> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?.parse::<u16>().ok().filter(|p| *p > 0)?),
        };
        return (!host.is_empty()).then(|| (host.to_string(), port));
    }
    match s.matches(':').count() {
        0 => (!s.is_empty()).then(|| (s.to_string(), None)),
        1 => {
            let (h, p) = s.split_once(':')?;
            let p = p.parse::<u16>().ok().filter(|p| *p > 0)?;
            (!h.is_empty()).then(|| (h.to_string(), Some(p)))
        }
        _ => s.parse::<std::net::Ipv6Addr>().ok().map(|_| (s.to_string(), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::split_host_port;

    #[test]
    fn root_addresses_parse() {
        assert_eq!(split_host_port("node1"), Some(("node1".into(), None)));
        assert_eq!(split_host_port("node1:80"), Some(("node1".into(), Some(80))));
        assert_eq!(split_host_port("[::1]:80"), Some(("::1".into(), Some(80))));
        assert_eq!(split_host_port("[::1]"), Some(("::1".into(), None)));
        assert_eq!(split_host_port("fe80::2"), Some(("fe80::2".into(), None)));
        for bad in ["", ":80", "h:0", "h:x", "[::1]x", "[]:1", "a:b:c"] {
            assert_eq!(split_host_port(bad), None, "{bad}");
        }
    }
}
