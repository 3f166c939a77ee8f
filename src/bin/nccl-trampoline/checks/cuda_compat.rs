//! Check 1: the CUDA major version each NCCL library was built for against the driver's.
//!
//! NVIDIA's rule (CUDA Compatibility guide, "Minor Version Compatibility"): an application or
//! library built with CUDA toolkit M.x runs on any driver that supports CUDA M.0 or newer
//! within the same major (minor-version compatibility, since CUDA 11; features of a newer
//! minor that need driver support may be unavailable), and on any driver of a later major.
//! It does not run on a driver whose CUDA major is lower than M: there NCCL's first CUDA call
//! fails with cudaErrorInsufficientDriver ("CUDA driver version is insufficient").
//!
//! What a library was built for comes from two places:
//! - the pip wheel's distribution name, `nvidia-nccl-cu12` / `nvidia-nccl-cu13`
//!   ([`PythonWheel::cuda_major`](nccl_trampoline::nccl::PythonWheel));
//! - the banner NCCL prints at init, which the library carries whole: `strings -a
//!   libnccl.so.2` shows `NCCL version 2.32.3+cuda12.9` as one NUL-terminated literal in
//!   `.rodata` (checked in the 2.18.3 and 2.32.3 wheels, x86-64 and AArch64; not a printf
//!   format: the `%s` variants nearby are other messages). It is found by scanning the file
//!   for `NCCL version ` followed by a digit: the crate's ELF reader is private to the
//!   library, and the literal needs no section lookup (it sits in the first few MiB).

use std::io::Read;
use std::path::Path;

use super::{Check, Verdict};

/// What NCCL's banner says: `NCCL version 2.28.9+cuda13.0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Banner {
    /// `2.28.9`.
    pub version: String,
    /// `(13, 0)`; `None` when the banner has no well-formed `+cudaM.m`.
    pub cuda: Option<(u32, u32)>,
}

const MARK: &[u8] = b"NCCL version ";
/// The longest banner read after the mark (the real ones are about 16 bytes).
const MAX_BANNER: usize = 64;

/// Parses the text after `NCCL version ` (up to its NUL): `2.28.9+cuda13.0`. `None` unless it
/// starts with a version number (a printf format such as `%s` is not a banner).
pub fn parse_banner(rest: &[u8]) -> Option<Banner> {
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len()).min(MAX_BANNER);
    let text = std::str::from_utf8(&rest[..end]).ok()?;
    let (version, build) = match text.split_once('+') {
        Some((v, b)) => (v, Some(b)),
        None => (text, None),
    };
    let numbers: Vec<&str> = version.split('.').collect();
    if numbers.len() < 2 || numbers.iter().any(|n| n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let cuda = build.and_then(|b| b.strip_prefix("cuda")).and_then(|c| {
        let (major, minor) = c.split_once('.')?;
        Some((major.parse().ok()?, minor.parse().ok()?))
    });
    Some(Banner { version: version.to_string(), cuda })
}

/// The first banner in `reader`'s bytes, read in chunks (a library is hundreds of MiB; the
/// banner sits in the first few).
pub fn find_banner(mut reader: impl Read) -> std::io::Result<Option<Banner>> {
    let mut buf: Vec<u8> = Vec::with_capacity(2 << 20);
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let n = reader.read(&mut chunk)?;
        buf.extend_from_slice(&chunk[..n]);
        let eof = n == 0;
        let (mut from, mut pending) = (0, None);
        while let Some(at) = find(&buf[from..], MARK).map(|i| i + from) {
            let rest = &buf[at + MARK.len()..];
            if !eof && rest.len() < MAX_BANNER && !rest.contains(&0) {
                pending = Some(at); // the banner may go on in the next chunk
                break;
            }
            if let Some(b) = parse_banner(rest) {
                return Ok(Some(b));
            }
            from = at + 1;
        }
        if eof {
            return Ok(None);
        }
        // Keep an unfinished banner, or a tail that may be the start of a mark.
        let keep_from = pending.unwrap_or(buf.len().saturating_sub(MARK.len() - 1));
        buf.drain(..keep_from);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The banner of the library at `path`: a regular file only (opened without blocking, so a
/// FIFO put in its place is not waited on).
pub fn banner_of(path: &Path) -> Result<Option<Banner>, String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| e.to_string())?;
    if !file.metadata().map_err(|e| e.to_string())?.is_file() {
        return Err("not a regular file".to_string());
    }
    find_banner(std::io::BufReader::new(file)).map_err(|e| e.to_string())
}

/// What is known of one library's build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryBuild {
    /// Its path, as reported.
    pub path: String,
    /// The wheel that installed it: its name and the CUDA major that name (or version) says.
    pub wheel: Option<(String, Option<u32>)>,
    /// Its banner, or why it could not be read.
    pub banner: Result<Option<Banner>, String>,
}

/// The driver's CUDA version (`cuDriverGetVersion`: major * 1000 + minor * 10) against what
/// `lib` was built for.
pub fn check(driver: &Result<i32, String>, lib: &LibraryBuild) -> Check {
    let banner_cuda = lib.banner.as_ref().ok().and_then(|b| b.as_ref()).and_then(|b| b.cuda);
    let wheel_major = lib.wheel.as_ref().and_then(|(_, m)| *m);
    let mut said = Vec::new();
    if let Some((major, minor)) = banner_cuda {
        said.push(format!("its banner says CUDA {major}.{minor}"));
    }
    if let Some((name, Some(major))) = &lib.wheel {
        said.push(format!("the {name} wheel says CUDA {major}"));
    }
    let built_for = banner_cuda.map(|(major, _)| major).or(wheel_major);
    let Some(major) = built_for else {
        let why = match &lib.banner {
            Err(e) => format!("its banner could not be read ({e}) and no wheel names it"),
            Ok(_) => "no `NCCL version X+cudaM.m` banner in the file and no wheel names it".to_string(),
        };
        return Check::new(
            "cuda-compat",
            &lib.path,
            Verdict::Skipped,
            format!("CUDA version it was built for unknown: {why}"),
        );
    };
    let said = said.join(", ");
    let driver = match driver {
        Ok(v) => *v,
        Err(e) => {
            return Check::new(
                "cuda-compat",
                &lib.path,
                Verdict::Skipped,
                format!("built for CUDA {major} ({said}); no CUDA driver to compare with ({e})"),
            )
        }
    };
    let (d_major, d_minor) = ((driver / 1000) as u32, ((driver % 1000) / 10) as u32);
    let disagree = matches!((banner_cuda, wheel_major), (Some((b, _)), Some(w)) if b != w);
    if d_major < major {
        let fix = match &lib.wheel {
            Some(_) => format!(
                "install the wheel for your driver: pip install nvidia-nccl-cu{d_major} (and uninstall the -cu{major} one), or update the driver to one for CUDA {major}"
            ),
            None => format!(
                "update the driver to one for CUDA {major}.0 or newer, or use an NCCL built for CUDA {d_major} (pip install nvidia-nccl-cu{d_major}, then NCCL_TRAMPOLINE_LIBRARY=<its libnccl.so.2>)"
            ),
        };
        return Check::new(
            "cuda-compat",
            &lib.path,
            Verdict::Failed,
            format!("built for CUDA {major} ({said}) but the driver supports CUDA {d_major}.{d_minor}: NCCL's first CUDA call will fail with cudaErrorInsufficientDriver"),
        )
        .fix(fix);
    }
    if disagree {
        return Check::new(
            "cuda-compat",
            &lib.path,
            Verdict::Warning,
            format!("{said}: the file is not the build its wheel names (two nvidia-nccl-cuNN wheels installed over each other?); the driver supports CUDA {d_major}.{d_minor}"),
        )
        .fix("pip uninstall the nvidia-nccl wheels and install the one for your driver's CUDA major");
    }
    let how = if d_major == major {
        format!("minor-version compatibility within CUDA {major}")
    } else {
        "a driver of a later major runs older builds".to_string()
    };
    Check::new(
        "cuda-compat",
        &lib.path,
        Verdict::Ok,
        format!("built for CUDA {major} ({said}); the driver supports CUDA {d_major}.{d_minor} ({how})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banners_parse_and_malformed_ones_do_not() {
        type Want = Option<(&'static str, Option<(u32, u32)>)>;
        let cases: [(&[u8], Want); 9] = [
            (b"2.28.9+cuda13.0\0junk", Some(("2.28.9", Some((13, 0))))),
            (b"2.18.3+cuda12.1", Some(("2.18.3", Some((12, 1))))),
            (b"2.32.3+cuda12.9\0", Some(("2.32.3", Some((12, 9))))),
            (b"2.28.3\0", Some(("2.28.3", None))),
            (b"2.28.3+cuda\0", Some(("2.28.3", None))),
            (b"2.28.3+cuda13\0", Some(("2.28.3", None))),
            (b"2.28.3+hip6.2\0", Some(("2.28.3", None))),
            (b"%s, but is running\0", None),
            (b"information\0", None),
        ];
        for (bytes, want) in cases {
            let got = parse_banner(bytes);
            let want = want.map(|(v, cuda)| Banner { version: v.to_string(), cuda });
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(bytes));
        }
    }

    #[test]
    fn the_banner_is_found_across_chunks_after_formats() {
        let mut file = vec![0x7fu8; 3 << 20];
        let at = (1 << 20) - 5; // the mark straddles the first chunk's end
        let text = b"NCCL version %s\0NCCL version information\0";
        file[100..100 + text.len()].copy_from_slice(text);
        let banner = b"NCCL version 2.28.9+cuda13.0\0";
        file[at..at + banner.len()].copy_from_slice(banner);
        let got = find_banner(&file[..]).unwrap();
        assert_eq!(got, Some(Banner { version: "2.28.9".into(), cuda: Some((13, 0)) }));
        assert_eq!(find_banner(&text[..]).unwrap(), None);
        assert_eq!(find_banner(&b""[..]).unwrap(), None);
    }

    fn lib(wheel: Option<(&str, Option<u32>)>, cuda: Option<(u32, u32)>) -> LibraryBuild {
        LibraryBuild {
            path: "/x/libnccl.so.2".into(),
            wheel: wheel.map(|(n, m)| (n.to_string(), m)),
            banner: Ok(Some(Banner { version: "2.28.9".into(), cuda })),
        }
    }

    #[test]
    fn a_library_needs_a_driver_of_its_cuda_major_or_newer() {
        let cu12 = Some(("nvidia-nccl-cu12", Some(12)));
        let cu13 = Some(("nvidia-nccl-cu13", Some(13)));
        type Case = (Result<i32, String>, LibraryBuild, Verdict, Option<&'static str>);
        let cases: [Case; 10] = [
            (Ok(13000), lib(cu13, Some((13, 0))), Verdict::Ok, None),
            (Ok(13000), lib(cu12, Some((12, 9))), Verdict::Ok, None),
            // Minor-version compatibility: a 12.9 build on a 12.2 driver.
            (Ok(12020), lib(None, Some((12, 9))), Verdict::Ok, None),
            (Ok(12080), lib(cu13, Some((13, 0))), Verdict::Failed, Some("pip install nvidia-nccl-cu12")),
            (Ok(12080), lib(None, Some((13, 0))), Verdict::Failed, Some("update the driver to one for CUDA 13")),
            // The wheel's name alone decides when the file has no banner.
            (Ok(12080), lib(cu13, None), Verdict::Failed, Some("pip install nvidia-nccl-cu12")),
            (Ok(13000), lib(cu12, Some((13, 0))), Verdict::Warning, Some("uninstall")),
            (Err("no driver".into()), lib(cu13, Some((13, 0))), Verdict::Skipped, None),
            (Ok(13000), lib(None, None), Verdict::Skipped, None),
            (Ok(13000), lib(Some(("torch", None)), Some((13, 0))), Verdict::Ok, None),
        ];
        for (driver, lib, verdict, fix) in cases {
            let c = check(&driver, &lib);
            assert_eq!(c.verdict, verdict, "{c}");
            match fix {
                Some(f) => assert!(c.fix.as_deref().unwrap_or("").contains(f), "{c}"),
                None => assert_eq!(c.fix, None, "{c}"),
            }
        }
        let c = check(&Err("libcuda.so.1: not found".into()), &lib(cu13, Some((13, 0))));
        assert!(c.detail.contains("no CUDA driver"), "{c}");
    }
}
