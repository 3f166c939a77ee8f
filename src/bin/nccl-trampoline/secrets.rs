//! Which environment variables may hold a secret: their values are never printed (`doctor`'s
//! environment, `perf -J`'s `env` list), since both end up in bug reports.

/// True for a name that looks like it holds a secret (`*KEY*`, `*SECRET*`, `*TOKEN*`,
/// `*PASSWORD*`, …), the crate's rendezvous secret `NCCL_TRAMPOLINE_SECRET` among them.
pub fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["SECRET", "TOKEN", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH", "COOKIE"].iter().any(|w| upper.contains(w))
}

/// `value`, or `<redacted>` for a secret-looking `name`.
pub fn shown(name: &str, value: &str) -> String {
    if secret_name(name) {
        "<redacted>".to_string()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_recognised() {
        for n in ["NCCL_TRAMPOLINE_SECRET", "aws_secret_access_key", "HF_TOKEN", "PGPASSWORD", "API_KEY"] {
            assert!(secret_name(n), "{n}");
        }
        for n in ["NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "CUDA_VISIBLE_DEVICES", "PATH"] {
            assert!(!secret_name(n), "{n}");
        }
        assert_eq!(shown("HF_TOKEN", "abc"), "<redacted>");
    }
}
