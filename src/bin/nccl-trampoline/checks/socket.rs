//! Check 2: `NCCL_SOCKET_IFNAME` against the network interfaces of this machine, by NCCL's own
//! rules (NCCL v2.30.7-1; the same in v2.28.3-1):
//! - src/misc/socket.cc `ncclFindInterfaces`: a value of at most one character counts as unset
//!   (`strlen(env) > 1`); unset, NCCL tries `ib` (prefix), then an interface in the subnet of
//!   `NCCL_COMM_ID` if set, then `^docker,lo,virbr`, then `docker`, then `lo` (and, 2.30.7,
//!   `virbr`), stopping at the first list that finds any;
//! - src/os/linux.cc `ncclOsFindInterfaces` (2.28: socket.cc `findInterfaces`): a leading `^`
//!   negates the whole list, then a leading `=` makes its entries exact names instead of
//!   prefixes (so `^=` is both); only interfaces that are running (`IFF_RUNNING`) with an IPv4
//!   or a non-loopback IPv6 address count;
//! - src/misc/utils.cc `parseStringList`: entries split at `,` (empty ones skipped), each
//!   `name[:port[:rail[:plane]]]` (the port is ignored for sockets), at most 16 (`MAX_IFS`),
//!   names cut to 63 bytes; `matchIf`/`matchIfList`: `strncmp` over the entry's length (a
//!   prefix) or the name's length plus its NUL (exact); an empty list matches everything.

use super::{Check, Verdict};

/// NCCL's `MAX_IFS` (src/include/socket.h) and `sizeof(netIf::prefix) - 1` (utils.h).
const MAX_ENTRIES: usize = 16;
const MAX_NAME: usize = 63;

/// A parsed interface list: `^=eth0,ib` is `{ negate, exact, [eth0, ib] }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfList {
    pub negate: bool,
    pub exact: bool,
    pub entries: Vec<String>,
}

/// Parses a list as `ncclOsFindInterfaces` and `parseStringList` do.
pub fn parse(value: &str) -> IfList {
    let (negate, rest) = match value.strip_prefix('^') {
        Some(r) => (true, r),
        None => (false, value),
    };
    let (exact, rest) = match rest.strip_prefix('=') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let entries = rest
        .split(',')
        .filter_map(|e| e.split(':').next())
        .filter(|name| !name.is_empty())
        .take(MAX_ENTRIES)
        .map(|name| {
            let mut end = name.len().min(MAX_NAME);
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            name[..end].to_string()
        })
        .collect();
    IfList { negate, exact, entries }
}

impl IfList {
    /// Whether NCCL would use interface `name` under this list (`matchIfList(...) ^ searchNot`).
    pub fn selects(&self, name: &str) -> bool {
        let listed = self.entries.is_empty()
            || self.entries.iter().any(|e| if self.exact { name == e } else { name.starts_with(e.as_str()) });
        listed != self.negate
    }
}

/// The interfaces NCCL would use: those of `usable` that `value` selects, or by NCCL's
/// default order when `value` is unset (or one character). The second item names the rule
/// that chose them.
pub fn select(value: Option<&str>, usable: &[String]) -> (Vec<String>, String) {
    let pick = |list: &str| usable.iter().filter(|n| parse(list).selects(n)).cloned().collect::<Vec<_>>();
    if let Some(v) = value.filter(|v| v.len() > 1) {
        return (pick(v), format!("NCCL_SOCKET_IFNAME={v}"));
    }
    for list in ["ib", "^docker,lo,virbr", "docker", "lo", "virbr"] {
        let found = pick(list);
        if !found.is_empty() {
            return (found, format!("NCCL's default, list \"{list}\""));
        }
    }
    (Vec::new(), "NCCL's default".to_string())
}

/// The check: `value` is `NCCL_SOCKET_IFNAME` (`None` when unset), `usable` the interfaces
/// NCCL would consider (running, with an address), `present` every interface's name.
pub fn check(value: Option<&str>, comm_id: Option<&str>, usable: &[String], present: &[String]) -> Check {
    let (chosen, rule) = select(value, usable);
    let names = |v: &[String]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    let subject = match value {
        Some(v) => format!("NCCL_SOCKET_IFNAME={v}"),
        None => "NCCL_SOCKET_IFNAME unset".to_string(),
    };
    let others = format!("usable here (running, with an address): {}; present: {}", names(usable), names(present));
    match value {
        Some(v) if v.len() > 1 => {
            if chosen.is_empty() {
                let (_, default_rule) = select(None, usable);
                let default = select(None, usable).0;
                let example = usable.iter().find(|n| n.as_str() != "lo" && !n.starts_with("docker")).or(usable.first());
                let fix = match example {
                    Some(e) => format!(
                        "set NCCL_SOCKET_IFNAME to interfaces that exist (e.g. NCCL_SOCKET_IFNAME={e}, or ={e} for that exact name), or unset it ({default_rule} would pick {})",
                        names(&default)
                    ),
                    None => "bring up a network interface with an address, or unset NCCL_SOCKET_IFNAME".to_string(),
                };
                let list = parse(v);
                let how = match (list.negate, list.exact) {
                    (false, false) => "prefixes",
                    (false, true) => "exact names",
                    (true, false) => "excluded prefixes",
                    (true, true) => "excluded exact names",
                };
                Check::new(
                    "socket-ifname",
                    subject,
                    Verdict::Failed,
                    format!("matches no usable interface ({how}: {}); NCCL fails to bootstrap (\"no socket interface found\"); {others}", names(&list.entries)),
                )
                .fix(fix)
            } else {
                Check::new("socket-ifname", subject, Verdict::Ok, format!("NCCL would use {}", chosen.join(", ")))
            }
        }
        Some(v) => Check::new(
            "socket-ifname",
            subject,
            Verdict::Warning,
            format!(
                "{v:?} is one character: NCCL ignores it and uses its default, which picks {} ({rule})",
                names(&chosen)
            ),
        )
        .fix("give the interface's name or a prefix of at least two characters, or unset it"),
        None if chosen.is_empty() => Check::new(
            "socket-ifname",
            subject,
            Verdict::Failed,
            format!("NCCL's default finds no usable interface; {others}"),
        )
        .fix("bring up a network interface with an address (NCCL needs one even on one host)"),
        None => {
            let comm = comm_id
                .map(|_| " (NCCL_COMM_ID is set: NCCL first tries an interface in its subnet, not checked here)");
            let only_loopback = chosen.iter().all(|n| n == "lo");
            let c = Check::new(
                "socket-ifname",
                subject,
                if only_loopback { Verdict::Warning } else { Verdict::Ok },
                format!("NCCL would use {} ({rule}: ib* first, then anything but docker*, lo, virbr*, then docker*, then lo){}", chosen.join(", "), comm.unwrap_or("")),
            );
            if only_loopback {
                c.fix("only the loopback interface: fine on one host, but other hosts cannot reach it; bring up a network interface for multi-host jobs")
            } else {
                c
            }
        }
    }
}

/// The interfaces of this machine: every name, and those NCCL would consider (running, with an
/// IPv4 or non-loopback IPv6 address), from `getifaddrs` as NCCL reads them.
pub fn interfaces() -> (Vec<String>, Vec<String>) {
    let (mut present, mut usable) = (Vec::new(), Vec::new());
    #[cfg(unix)]
    {
        let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
        // SAFETY: getifaddrs writes a list it allocates to the out-pointer; freed below.
        if unsafe { libc::getifaddrs(&mut list) } == 0 {
            let mut at = list;
            while !at.is_null() {
                // SAFETY: `at` is a node of the list getifaddrs returned, not yet freed.
                let ifa = unsafe { &*at };
                at = ifa.ifa_next;
                if ifa.ifa_name.is_null() {
                    continue;
                }
                // SAFETY: a NUL-terminated name owned by the list.
                let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }.to_string_lossy().into_owned();
                if !present.contains(&name) {
                    present.push(name.clone());
                }
                if ifa.ifa_addr.is_null() || ifa.ifa_flags & libc::IFF_RUNNING as libc::c_uint == 0 {
                    continue;
                }
                // SAFETY: a non-null address of the list; `sa_family` says which kind it is.
                let family = i32::from(unsafe { (*ifa.ifa_addr).sa_family });
                let ok = match family {
                    libc::AF_INET => true,
                    libc::AF_INET6 => {
                        // SAFETY: an AF_INET6 address is a sockaddr_in6.
                        let a = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                        a.sin6_addr.s6_addr != std::net::Ipv6Addr::LOCALHOST.octets()
                    }
                    _ => false,
                };
                if ok && !usable.contains(&name) {
                    usable.push(name);
                }
            }
            // SAFETY: the list getifaddrs returned, freed once.
            unsafe { libc::freeifaddrs(list) };
        }
    }
    (present, usable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lists_select_as_nccls_match_if_list() {
        let here = names(&["lo", "eth0", "eth10", "ib0", "docker0", "enp1s0f0"]);
        let cases: [(&str, &[&str]); 14] = [
            ("eth", &["eth0", "eth10"]),
            ("eth0", &["eth0"]),
            ("=eth", &[]),
            ("=eth0", &["eth0"]),
            ("=eth0,ib0", &["eth0", "ib0"]),
            ("^eth", &["lo", "ib0", "docker0", "enp1s0f0"]),
            ("^docker,lo", &["eth0", "eth10", "ib0", "enp1s0f0"]),
            ("^=eth0", &["lo", "eth10", "ib0", "docker0", "enp1s0f0"]),
            ("=^eth0", &[]), // `=` then `^`: the `^` is part of the name
            ("eth0:1,ib", &["eth0", "ib0"]),
            (",,eth1,", &["eth10"]),
            ("=nonexistent0", &[]),
            ("^=", &[]), // an empty list matches everything; negated, nothing
            ("en,:2", &["enp1s0f0"]),
        ];
        for (value, want) in cases {
            let got: Vec<String> = here.iter().filter(|n| parse(value).selects(n)).cloned().collect();
            assert_eq!(got, names(want), "{value}");
        }
        assert_eq!(parse("^=a,b").entries, names(&["a", "b"]));
        assert_eq!(parse(&"x,".repeat(20)).entries.len(), 16);
        assert_eq!(parse(&"y".repeat(80)).entries[0].len(), 63);
    }

    #[test]
    fn unset_follows_nccls_default_order() {
        let cases: [(&[&str], &[&str]); 5] = [
            (&["lo", "eth0", "ib0"], &["ib0"]),
            (&["lo", "docker0", "eth0", "virbr0"], &["eth0"]),
            (&["lo", "docker0"], &["docker0"]),
            (&["lo"], &["lo"]),
            (&[], &[]),
        ];
        for (usable, want) in cases {
            assert_eq!(select(None, &names(usable)).0, names(want), "{usable:?}");
            // One character counts as unset.
            assert_eq!(select(Some("e"), &names(usable)).0, names(want), "{usable:?}");
        }
    }

    #[test]
    fn verdicts() {
        let usable = names(&["lo", "eth0"]);
        let cases: [(Option<&str>, Verdict); 7] = [
            (Some("=nonexistent0"), Verdict::Failed),
            (Some("^=eth0,lo"), Verdict::Failed),
            (Some("eth"), Verdict::Ok),
            (Some("^lo"), Verdict::Ok),
            (Some("e"), Verdict::Warning),
            (None, Verdict::Ok),
            (Some("=lo"), Verdict::Ok),
        ];
        for (value, verdict) in cases {
            let c = check(value, None, &usable, &usable);
            assert_eq!(c.verdict, verdict, "{c}");
        }
        let c = check(Some("=nonexistent0"), None, &usable, &usable);
        assert!(c.detail.contains("present: lo, eth0"), "{c}");
        assert!(c.fix.as_deref().unwrap().contains("NCCL_SOCKET_IFNAME=eth0"), "{c}");
        assert_eq!(check(None, None, &names(&["lo"]), &names(&["lo"])).verdict, Verdict::Warning);
        assert_eq!(check(None, None, &[], &[]).verdict, Verdict::Failed);
    }
}
