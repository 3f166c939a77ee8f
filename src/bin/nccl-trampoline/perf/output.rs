//! What `perf` prints, in nccl-tests 2.19.6's order (src/util.cu `jsonOutputInit`,
//! `writeDeviceReport`, `writeResultHeader`, the rows, `writeResultFooter`, `writeMemInfo`,
//! `writeErrors`; src/common.cu `run` 1479-1857): the JSON file's line, the preamble and
//! "Using devices", the memory limit, the table, the footer; and the `-J` document, written
//! at the end. Line numbers cite nccl-tests v2.19.6.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use nccl_trampoline::nccl::Nccl;

use super::options::Args;
use super::plan::Plan;
use super::ranks::MemoryUse;
use super::report::{self, Columns, Json, Progress, Row};
use crate::error::Error;

/// The nccl-tests release whose output `perf` reproduces (its first line names it).
pub const NCCL_TESTS_VERSION: &str = "2.19.6";

/// Where one rank runs, for the "Using devices" lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceLine {
    pub rank: usize,
    pub pid: u32,
    pub host: String,
    pub device: i32,
    pub name: String,
    pub bus: String,
}

impl DeviceLine {
    /// nccl-tests' line (src/util.cu:687): the PCI address as domain:bus:device.
    pub fn text(&self) -> String {
        format!(
            "#  Rank {:2} Group {:2} Pid {:6} on {:>10} device {:2} [{}] {}",
            self.rank,
            0,
            self.pid,
            self.host,
            self.device,
            pci_address(&self.bus),
            self.name
        )
    }

    /// Its JSON object, as nccl-tests reads it back from the line (src/util.cu:421-450).
    fn json(&self) -> Json {
        Json::Object(vec![
            ("rank", Json::Int(self.rank as i64)),
            ("group", Json::Int(0)),
            ("pid", Json::Int(i64::from(self.pid))),
            ("hostname", Json::str(self.host.split_whitespace().next().unwrap_or(""))),
            ("device", Json::Int(i64::from(self.device))),
            ("device_hex", Json::str(pci_address(&self.bus))),
            ("device_info", Json::str(self.name.clone())),
        ])
    }
}

/// `0000:19:00.0` (the driver's PCI bus id) as nccl-tests prints it: `%04x:%02x:%02x`.
pub fn pci_address(bus_id: &str) -> String {
    let mut parts = bus_id.split(':');
    let (Some(d), Some(b), Some(rest)) = (parts.next(), parts.next(), parts.next()) else { return bus_id.to_owned() };
    let dev = rest.split('.').next().unwrap_or("");
    match (u32::from_str_radix(d, 16), u32::from_str_radix(b, 16), u32::from_str_radix(dev, 16)) {
        (Ok(d), Ok(b), Ok(v)) => format!("{d:04x}:{b:02x}:{v:02x}"),
        _ => bus_id.to_owned(),
    }
}

/// This host's name up to its first dot, as nccl-tests' `getHostName`.
pub fn short_hostname(host: &str) -> String {
    host.split('.').next().unwrap_or("").to_owned()
}

/// nccl-tests' memory limit (src/common.cu:1536-1545): each GPU keeps 1 GiB per 16 GiB (at
/// most 4 GiB) and 1 GiB more; the rest holds the two or three buffers. `None` when `-e`
/// fits. Computed in C's unsigned arithmetic, as nccl-tests: a GPU below 2 GiB wraps round
/// and limits nothing.
pub fn memory_limit(min_total: u64, max_bytes: u64, check: bool) -> Option<u64> {
    const GB: u64 = 1 << 30;
    let reserve = (min_total.div_ceil(16 * GB) * GB).min(4 * GB);
    let limit = min_total.wrapping_sub(reserve).wrapping_sub(GB) / if check { 3 } else { 2 };
    (max_bytes > limit).then_some(limit)
}

/// An environment variable as the JSON document lists it: the value of one that may hold a
/// secret replaced (nccl-tests lists every variable as it is).
pub fn env_entry(name: &str, value: &str) -> String {
    if crate::secrets::secret_name(name) || name.eq_ignore_ascii_case("NCCL_COMM_ID") {
        format!("{name}=<redacted>")
    } else {
        format!("{name}={value}")
    }
}

/// The environment as the program started, before NCCL set anything from its `nccl.conf`
/// files (nccl-tests lists `main`'s `envp`): taken by [`start_environment`]'s first call,
/// which `perf` makes before loading NCCL.
pub fn start_environment() -> &'static [(String, String)] {
    static ENV: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    ENV.get_or_init(|| {
        std::env::vars_os().map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned())).collect()
    })
}

/// The JSON file of `-J`: created new (an existing file is kept: `FILE.0`, `FILE.1`, ... are
/// tried, as nccl-tests' `fopen(path, "wx")` loop, src/util.cu:331-349); only a name ending
/// in `.json` (any case) asks for one, as nccl-tests' `classifyOutputFile`.
fn create_json_file(path: &Path) -> Option<(std::fs::File, PathBuf)> {
    let is_json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
    if !is_json {
        return None;
    }
    let mut attempt = path.to_path_buf();
    for n in 0.. {
        match OpenOptions::new().write(true).create_new(true).open(&attempt) {
            Ok(f) => return Some((f, attempt)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let mut name = path.as_os_str().to_owned();
                name.push(format!(".{n}"));
                attempt = PathBuf::from(name);
            }
            Err(_) => {
                println!("# skipping json output; {} not accessible", attempt.display());
                return None;
            }
        }
    }
    None
}

/// Prints the table as it comes and builds the JSON document.
pub struct Output<'a> {
    args: &'a Args,
    columns: Columns,
    rows: Vec<Row>,
    progress: Progress,
    /// The document's fields before the results.
    head: Vec<(&'static str, Json)>,
    file: Option<(std::fs::File, PathBuf)>,
    table: bool,
}

impl<'a> Output<'a> {
    /// The JSON file's line, the preamble, "Using devices" (`devices`: every rank), the memory
    /// limit's line (`reduced_to`) and the table's header.
    pub fn new(args: &'a Args, plan: &Plan, nccl: &Nccl, devices: &[DeviceLine], reduced_to: Option<u64>) -> Self {
        let table = !args.json;
        let file = args.output_file.as_deref().and_then(create_json_file);
        if let Some((_, path)) = &file {
            // Not into --json's document on stdout.
            let line = format!("# Writing JSON output to {}", path.display());
            if table {
                println!("{line}");
            } else {
                eprintln!("{line}");
            }
        }
        let code = nccl.version().code();
        let step = if args.step_factor > 1 {
            format!("{}(factor)", args.step_factor)
        } else {
            format!("{}(bytes)", args.step_bytes)
        };
        if table {
            // nccl-headers: the version whose declarations perf uses, the library's own (it
            // binds at run time, src/nccl/library/).
            println!("# nccl-tests version {NCCL_TESTS_VERSION} nccl-headers={code} nccl-library={code}");
            println!("# Collective test starting: {}", args.program());
            println!(
                "# nThread 1 nGpus {} minBytes {} maxBytes {} step: {step} warmup iters: {} iters: {} agg iters: {} validation: {} graph: 0 unalign: {}",
                args.ngpus, args.min_bytes, args.max_bytes, args.warmup, args.iters, args.agg, args.check, args.unalign
            );
            match args.blocking {
                1 => println!("# Blocking Enabled: wait and barrier after each inner iteration (-m) "),
                2 => println!("# Blocking Enabled: wait after each inner iteration (-m), no barrier "),
                3 => println!(
                    "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier "
                ),
                _ => {}
            }
            if args.per_iter == 1 {
                let skip = if args.per_iter_skip > 0 {
                    format!("; summary skips first {} iterations", args.per_iter_skip)
                } else {
                    String::new()
                };
                println!("# Per-Iteration Report: CUDA event timing; i_* uses max over process rows{skip} ");
            }
            if args.parallel_init == 1 {
                println!("# Parallel Init Enabled: threads call into NcclInitRank concurrently ");
            }
            println!("#");
            println!("# Using devices");
            for d in devices {
                println!("{}", d.text());
            }
            if let Some(limit) = reduced_to {
                println!("#\n# Reducing maxBytes to {limit} due to memory limitation");
            }
        }
        let mut config = vec![
            ("nthreads", Json::Int(1)),
            ("ngpus", Json::Int(i64::from(args.ngpus))),
            ("minimum_bytes", Json::Int(args.min_bytes as i64)),
            ("maximum_bytes", Json::Int(args.max_bytes as i64)),
        ];
        config.push(if args.step_factor > 1 {
            ("step_factor", Json::Int(args.step_factor as i64))
        } else {
            ("step_bytes", Json::Int(args.step_bytes as i64))
        });
        config.extend([
            ("warmup_iters", Json::Int(i64::from(args.warmup))),
            ("iterations", Json::Int(i64::from(args.iters))),
            ("aggregated_iterations", Json::Int(i64::from(args.agg))),
            ("validation", Json::Int(i64::from(args.check))),
            ("graph", Json::Int(0)),
            ("blocking_collectives", Json::Bool(args.blocking != 0)),
            ("per_iter_timing", Json::Bool(args.per_iter == 1)),
            ("per_iter_skip", Json::Int(i64::from(args.per_iter_skip))),
            ("parallel_init", Json::Bool(args.parallel_init == 1)),
            // One entry per process, its first rank, as nccl-tests parses its lines.
            ("devices", Json::List(first_rank_per_process(devices).map(DeviceLine::json).collect())),
        ]);
        let head = vec![
            ("version", Json::Int(3)),
            ("start_time", Json::Str(now())),
            ("args", Json::List(std::env::args().map(Json::Str).collect())),
            ("env", Json::List(start_environment().iter().map(|(k, v)| Json::Str(env_entry(k, v))).collect())),
            ("nccl_version", Json::Int(i64::from(code))),
            ("config", Json::Object(config)),
        ];
        let columns = Columns {
            cputime: args.cputime == 1,
            timestamps: args.timestamps == 1,
            per_iteration: args.per_iter == 1,
            skip: args.per_iter_skip as usize,
        };
        if table {
            print!("{}", report::table_header(columns));
        }
        let total = plan.sizes.len() * plan.cases.len() * (args.run_cycles.max(1) as usize);
        Output { args, columns, rows: Vec::new(), progress: Progress::new(total, true), head, file, table }
    }

    pub fn row(&mut self, mut row: Row) {
        self.progress.advance(&format!("{} B", row.size));
        if self.columns.timestamps {
            row.timestamp = Some(now());
        }
        if self.table {
            self.progress.clear();
            println!("{}", report::table_row(&row, self.columns));
        }
        self.rows.push(row);
    }

    /// The footer, `-M`'s line, the last line, and the JSON document. True when every check
    /// passed and the bandwidth met `NCCL_TESTS_MIN_BW`.
    pub fn finish(self, nccl: &Nccl, memory: Option<MemoryUse>) -> Result<bool, Error> {
        self.progress.clear();
        let min_bw = std::env::var("NCCL_TESTS_MIN_BW").ok().map(|v| v.trim().parse::<f64>().unwrap_or(0.0));
        let avg = report::average_busbw(&self.rows);
        let failed = report::failed_checks(&self.rows);
        let last_error = nccl.last_error().ok().flatten().unwrap_or_default();
        if self.table {
            print!("{}", report::table_footer(failed, avg, min_bw, &self.args.program()));
            if let Some(m) = memory {
                print!("{}", report::memory_line(m.init, m.buffers, m.collective));
            }
            println!("#");
            if last_error.is_empty() {
                println!();
            } else {
                println!("# error: {last_error}");
            }
        }
        let mut doc = self.head;
        doc.push((
            "results",
            Json::List(self.rows.iter().map(|r| report::json_row(r, self.columns, self.args.iters)).collect()),
        ));
        doc.extend(report::json_summary(failed, avg, min_bw));
        doc.push(("errors", Json::List(vec![Json::Str(last_error)])));
        doc.push(("end_time", Json::Str(now())));
        let text = Json::Object(doc).render();
        if self.args.json {
            println!("{text}");
        }
        if let Some((mut f, path)) = self.file {
            f.write_all(text.as_bytes()).map_err(|source| Error::WriteOutput { path, source })?;
        }
        Ok(failed == 0 && min_bw.map_or(true, |m| avg >= m * 0.9))
    }
}

/// The first rank of each process (by host and pid), in rank order.
fn first_rank_per_process(devices: &[DeviceLine]) -> impl Iterator<Item = &DeviceLine> {
    let mut seen = std::collections::BTreeSet::new();
    devices.iter().filter(move |d| seen.insert((d.host.clone(), d.pid)))
}

/// The local time as nccl-tests formats it (`%Y-%m-%d %H:%M:%S`, src/util.cu:300-308).
pub fn now() -> String {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 64];
        // SAFETY: time, localtime_r and strftime get valid pointers to local storage; strftime
        // writes at most buf.len() bytes, the terminating NUL included.
        unsafe {
            let t = libc::time(std::ptr::null_mut());
            let mut tm: libc::tm = std::mem::zeroed();
            if !libc::localtime_r(&t, &mut tm).is_null() {
                let n = libc::strftime(buf.as_mut_ptr().cast(), buf.len(), c"%Y-%m-%d %H:%M:%S".as_ptr(), &tm);
                return String::from_utf8_lossy(&buf[..n]).into_owned();
            }
        }
    }
    String::from("1970-01-01 00:00:00")
}

/// nccl-tests' `-a` across ranks (its `Allreduce` of the time, src/common.cu:300-360): rank
/// 0's time, or the average, minimum or maximum. The host time is rank 0's (nccl-tests reports
/// its own thread's); the wrong elements and the iteration times were already agreed.
pub fn aggregate(per_rank: &[report::Measured], mode: u8) -> report::Measured {
    let times = per_rank.iter().map(|m| m.time);
    let time = match mode {
        0 => per_rank[0].time,
        2 => times.fold(f64::INFINITY, f64::min),
        3 => times.fold(0.0, f64::max),
        _ => times.sum::<f64>() / per_rank.len() as f64,
    };
    // Each process's row of iteration times (its own maximum over its GPUs), and their
    // maximum per iteration (src/common.cu:426-435).
    let rows: Vec<Vec<f64>> = per_rank.iter().map(|m| m.iterations.clone()).collect();
    let iterations = (0..per_rank[0].iterations.len())
        .map(|i| rows.iter().map(|r| r[i]).fold(f64::NEG_INFINITY, f64::max))
        .collect();
    let failed = per_rank.iter().map(|m| m.failed).sum();
    report::Measured { time, iterations, per_process: rows, failed, ..per_rank[0].clone() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::report::Measured;

    #[test]
    fn device_lines_are_nccl_tests_own() {
        let d = DeviceLine {
            rank: 0,
            pid: 4242,
            host: "gpu01".into(),
            device: 1,
            name: "NVIDIA H200".into(),
            bus: "0000:1B:00.0".into(),
        };
        assert_eq!(d.text(), "#  Rank  0 Group  0 Pid   4242 on      gpu01 device  1 [0000:1b:00] NVIDIA H200");
        assert_eq!(pci_address("garbage"), "garbage");
        assert_eq!(short_hostname("node1.cluster.example"), "node1");
    }

    #[test]
    fn memory_limit_follows_nccl_tests() {
        const GB: u64 = 1 << 30;
        // An H200 (140 GiB): 4 GiB kept plus 1, the rest over three buffers.
        assert_eq!(memory_limit(140 * GB, 64 * GB, true), Some(45 * GB));
        assert_eq!(memory_limit(140 * GB, 32 * GB, true), None);
        assert_eq!(memory_limit(140 * GB, 70 * GB, false), Some(135 * GB / 2));
        // 1 GiB: the subtraction wraps in nccl-tests' size_t and limits nothing.
        assert_eq!(memory_limit(GB, u64::MAX / 4, true), None);
    }

    #[test]
    fn secrets_stay_out_of_the_environment_list() {
        assert_eq!(env_entry("NCCL_TRAMPOLINE_SECRET", "abc"), "NCCL_TRAMPOLINE_SECRET=<redacted>");
        assert_eq!(env_entry("aws_secret_access_key", "x"), "aws_secret_access_key=<redacted>");
        assert_eq!(env_entry("NCCL_COMM_ID", "10.0.0.1:1234"), "NCCL_COMM_ID=<redacted>");
        assert_eq!(env_entry("NCCL_DEBUG", "INFO"), "NCCL_DEBUG=INFO");
    }

    #[test]
    fn ranks_aggregate_like_nccl_tests() {
        let m = |t: f64, it: Vec<f64>| Measured { iterations: it, failed: 1, ..Measured::new(t, t / 2.0, Some(0)) };
        let per = [m(1.0, vec![1.0, 5.0]), m(3.0, vec![2.0, 4.0])];
        assert_eq!(aggregate(&per, 0).time, 1.0);
        assert_eq!(aggregate(&per, 1).time, 2.0);
        assert_eq!(aggregate(&per, 2).time, 1.0);
        assert_eq!(aggregate(&per, 3).time, 3.0);
        assert_eq!(aggregate(&per, 3).cpu, 0.5);
        assert_eq!(aggregate(&per, 1).iterations, vec![2.0, 5.0]);
        assert_eq!(aggregate(&per, 1).per_process.len(), 2);
        assert_eq!(aggregate(&per, 1).failed, 2, "one per process");
    }
}
