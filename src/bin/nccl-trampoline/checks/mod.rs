//! `doctor`'s checks: each compares two facts of this machine and says whether NCCL will work
//! with them, and what to do if not. The deciding logic of each is a pure function of the
//! facts (tested beside it); gathering the facts (files, interfaces, child processes) is kept
//! apart, in `doctor.rs` and the `gather` functions here.

pub mod conf;
pub mod cuda_compat;
pub mod socket;
pub mod torch;

use std::fmt;

use crate::json::Json;

/// What a check concluded. `FAILED` is in capitals like the other words `doctor` shouts
/// (`LOADS`): it is the one a reader must not miss.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Nothing to compare (no driver, no torch): says why.
    Skipped,
    /// A fact worth showing that is neither good nor bad.
    Info,
    Ok,
    /// Works, but is likely to surprise (two NCCLs, a setting NCCL ignores).
    Warning,
    /// NCCL will fail (or pick nothing) with this.
    Failed,
}

impl Verdict {
    /// The word printed and written to JSON: `skipped`, `info`, `ok`, `warning`, `FAILED`.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Skipped => "skipped",
            Verdict::Info => "info",
            Verdict::Ok => "ok",
            Verdict::Warning => "warning",
            Verdict::Failed => "FAILED",
        }
    }
}

/// One check's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// Which check: `cuda-compat`, `socket-ifname`, `nccl-params`, `torch-nccl`.
    pub id: &'static str,
    /// What it looked at (a library's path, the variable's value).
    pub subject: String,
    pub verdict: Verdict,
    /// What was found.
    pub detail: String,
    /// What to do, where there is something to do.
    pub fix: Option<String>,
}

impl Check {
    pub fn new(id: &'static str, subject: impl Into<String>, verdict: Verdict, detail: impl Into<String>) -> Check {
        Check { id, subject: subject.into(), verdict, detail: detail.into(), fix: None }
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Check {
        self.fix = Some(fix.into());
        self
    }

    pub fn to_json(&self) -> Json {
        Json::object([
            ("id", Json::from(self.id)),
            ("subject", Json::from(self.subject.as_str())),
            ("verdict", Json::from(self.verdict.word())),
            ("detail", Json::from(self.detail.as_str())),
            ("fix", Json::opt_str(self.fix.as_deref())),
        ])
    }
}

impl fmt::Display for Check {
    /// One line: `FAILED   socket-ifname (=nonexistent0): detail; fix: what to do`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<8} {} ({}): {}", self.verdict.word(), self.id, self.subject, self.detail)?;
        match &self.fix {
            Some(fix) => write!(f, "; fix: {fix}"),
            None => Ok(()),
        }
    }
}
