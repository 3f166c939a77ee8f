//! Check 4: the NCCL PyTorch uses against the one this program chose. One process with two
//! NCCLs (torch's and ours, different files) has two copies of NCCL's globals: a communicator
//! made by one is not the other's (adopting torch's `ncclComm_t` with the other library is
//! undefined behaviour), and both initialise their own proxy threads and network plugins.

use std::path::{Path, PathBuf};

use super::{Check, Verdict};

/// What `python3` says about torch (`script`'s output, a `key<TAB>value` line each).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TorchFacts {
    /// `torch.__version__`; `None`: torch does not import.
    pub torch: Option<String>,
    /// `torch.cuda.nccl.version()` as `2.28.9`.
    pub nccl: Option<String>,
    /// Why torch or its NCCL version could not be read.
    pub error: Option<String>,
    /// The NCCL files mapped after `import torch` and `torch.cuda.nccl.version()`.
    pub mapped: Vec<PathBuf>,
    /// The `nvidia-nccl-cuNN` wheel's library in that environment, if one is installed.
    pub wheel_library: Option<PathBuf>,
}

/// The Python that `doctor` runs: imports torch, asks its NCCL version (which loads NCCL
/// where torch links it dynamically) and lists the NCCL files then mapped.
pub const SCRIPT: &str = r#"
import os, sys
# Not the current directory's "torch" (a source checkout): the installed one.
sys.path[:] = [p for p in sys.path if p not in ("", ".", os.getcwd())]
def say(k, v): print(k + "\t" + str(v).replace("\t", " ").replace("\n", " "))
try:
    import torch
except Exception as e:
    say("error", "import torch: %r" % (e,)); sys.exit(0)
say("torch", torch.__version__)
try:
    v = torch.cuda.nccl.version()
    say("nccl", ".".join(map(str, v)) if isinstance(v, tuple) else v)
except Exception as e:
    say("error", "torch.cuda.nccl.version(): %r" % (e,))
seen = set()
for line in open("/proc/self/maps"):
    p = line.split()[-1]
    n = os.path.basename(p)
    if p.startswith("/") and (n.startswith("libnccl.so") or n.startswith("librccl.so")) and p not in seen:
        seen.add(p); say("mapped", p)
try:
    import nvidia.nccl
    say("wheel", os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))
except Exception:
    pass
"#;

/// Reads `SCRIPT`'s output.
pub fn parse(out: &str) -> TorchFacts {
    let mut f = TorchFacts::default();
    for line in out.lines() {
        let Some((k, v)) = line.split_once('\t') else { continue };
        match k {
            "torch" => f.torch = Some(v.to_string()),
            "nccl" => f.nccl = Some(v.to_string()),
            "error" => f.error = Some(v.to_string()),
            "mapped" => f.mapped.push(PathBuf::from(v)),
            "wheel" => f.wheel_library = Some(PathBuf::from(v)),
            _ => {}
        }
    }
    f
}

/// The chosen library: its real path (links resolved) and version.
pub struct Chosen<'a> {
    pub path: &'a Path,
    pub version: &'a str,
}

/// `same(a, b)`: whether two paths are one file (compared by the caller's canonical form).
pub fn check(facts: &TorchFacts, chosen: Option<Chosen<'_>>, same: &dyn Fn(&Path, &Path) -> bool) -> Check {
    let Some(torch) = &facts.torch else {
        let why = facts.error.as_deref().unwrap_or("python3 did not answer");
        return Check::new("torch-nccl", "torch", Verdict::Skipped, format!("torch not installed for python3 ({why})"));
    };
    let subject = format!("torch {torch}");
    let Some(version) = &facts.nccl else {
        let why = facts.error.as_deref().unwrap_or("no NCCL version");
        return Check::new(
            "torch-nccl",
            subject,
            Verdict::Info,
            format!("torch has no NCCL (a CPU or ROCm build?): {why}"),
        );
    };
    let file = facts.mapped.first();
    let torch_side = match file {
        Some(f) => format!("torch uses NCCL {version} from {}", f.display()),
        None => format!("torch uses NCCL {version}, linked into its own library (no libnccl file mapped)"),
    };
    let point_at = match file.or(facts.wheel_library.as_ref()) {
        Some(f) => format!("point this program at torch's: NCCL_TRAMPOLINE_LIBRARY={}", f.display()),
        None => format!("install the NCCL wheel of torch's version (pip install nvidia-nccl-cu12=={version}, or -cu13) and set NCCL_TRAMPOLINE_LIBRARY to its libnccl.so.2"),
    };
    let Some(chosen) = chosen else {
        return Check::new(
            "torch-nccl",
            subject,
            Verdict::Warning,
            format!("{torch_side}; this program loads no NCCL"),
        )
        .fix(point_at);
    };
    let ours = format!("this program chose NCCL {} at {}", chosen.version, chosen.path.display());
    if file.is_some_and(|f| same(f, chosen.path)) {
        return Check::new(
            "torch-nccl",
            subject,
            Verdict::Ok,
            format!("{torch_side}: the same file this program chose"),
        );
    }
    let two = "in one process (torch plus this crate) two NCCLs are loaded: each has its own globals, so a communicator of one must never reach the other (adopting torch's ncclComm_t then breaks)";
    if version == chosen.version {
        Check::new(
            "torch-nccl",
            subject,
            Verdict::Warning,
            format!("{torch_side}; {ours}: the same version, another file; {two}"),
        )
        .fix(point_at)
    } else {
        Check::new("torch-nccl", subject, Verdict::Warning, format!("{torch_side}; {ours}: different versions; {two}"))
            .fix(point_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_output_is_read() {
        let f = parse("torch\t2.11.0+cu130\nnccl\t2.28.9\nmapped\t/v/nvidia/nccl/lib/libnccl.so.2\nwheel\t/v/nvidia/nccl/lib/libnccl.so.2\nnoise\n");
        assert_eq!(f.torch.as_deref(), Some("2.11.0+cu130"));
        assert_eq!(f.nccl.as_deref(), Some("2.28.9"));
        assert_eq!(f.mapped, vec![PathBuf::from("/v/nvidia/nccl/lib/libnccl.so.2")]);
        assert!(f.wheel_library.is_some());
    }

    #[test]
    fn verdicts() {
        let same = |a: &Path, b: &Path| a == b;
        let wheel = PathBuf::from("/v/nvidia/nccl/lib/libnccl.so.2");
        let torch = TorchFacts {
            torch: Some("2.11.0".into()),
            nccl: Some("2.28.9".into()),
            mapped: vec![wheel.clone()],
            ..Default::default()
        };
        let system = Path::new("/usr/lib/x86_64-linux-gnu/libnccl.so.2");
        let cases: [(TorchFacts, Option<Chosen<'_>>, Verdict, Option<&str>); 6] = [
            (
                TorchFacts { error: Some("No module named 'torch'".into()), ..Default::default() },
                None,
                Verdict::Skipped,
                None,
            ),
            (torch.clone(), Some(Chosen { path: &wheel, version: "2.28.9" }), Verdict::Ok, None),
            (
                torch.clone(),
                Some(Chosen { path: system, version: "2.28.9" }),
                Verdict::Warning,
                Some("NCCL_TRAMPOLINE_LIBRARY=/v/nvidia"),
            ),
            (
                torch.clone(),
                Some(Chosen { path: system, version: "2.28.3" }),
                Verdict::Warning,
                Some("NCCL_TRAMPOLINE_LIBRARY=/v/nvidia"),
            ),
            (torch.clone(), None, Verdict::Warning, Some("NCCL_TRAMPOLINE_LIBRARY")),
            (TorchFacts { nccl: None, error: Some("no CUDA".into()), ..torch.clone() }, None, Verdict::Info, None),
        ];
        for (facts, chosen, verdict, fix) in cases {
            let c = check(&facts, chosen, &same);
            assert_eq!(c.verdict, verdict, "{c}");
            match fix {
                Some(f) => assert!(c.fix.as_deref().unwrap_or("").contains(f), "{c}"),
                None => assert_eq!(c.fix, None, "{c}"),
            }
        }
        let c = check(&torch, Some(Chosen { path: system, version: "2.28.3" }), &same);
        assert!(c.detail.contains("different versions") && c.detail.contains("two NCCLs"), "{c}");
    }
}
