//! What `perf` prints: the header and "Using devices" lines, the rows as they come, the
//! footer or the JSON document, and nccl-tests' aggregation of ranks (`-a`).

use nccl_trampoline::nccl::Nccl;

use super::options::Args;
use super::plan::Plan;
use super::report::{self, Measured, Progress, Row};
use crate::error::Error;

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

/// Prints rows as they come (or collects them for JSON) and writes the JSON file.
pub struct Output<'a> {
    args: &'a Args,
    rows: Vec<Row>,
    progress: Progress,
    fields: Vec<(&'static str, String)>,
}

impl<'a> Output<'a> {
    /// `devices`: where each rank runs.
    pub fn new(args: &'a Args, plan: &Plan, nccl: &Nccl, devices: &[DeviceLine]) -> Self {
        let procs = devices.iter().map(|d| (&d.host, d.pid)).collect::<std::collections::BTreeSet<_>>().len();
        use report::json_str;
        let gpus_per_proc = plan.nranks / procs;
        let step = if args.step_factor > 1 {
            format!("{}(factor)", args.step_factor)
        } else {
            format!("{}(bytes)", args.step_bytes)
        };
        if !args.json {
            println!(
                "# nccl-trampoline perf {}: nProcs {procs} nGpus {gpus_per_proc} minBytes {} maxBytes {} step: {step} warmup iters: {} iters: {} agg iters: {} validation: {} blocking: {}",
                plan.collective.name(),
                args.min_bytes,
                args.max_bytes,
                args.warmup,
                args.iters,
                args.agg,
                args.check,
                args.blocking
            );
            println!("# {} {} at {}", nccl.flavor(), nccl.version(), nccl.path().display());
            println!("#\n# Using devices");
            for d in devices {
                println!(
                    "#  Rank {:>2} Pid {:>6} on {:>10} device {:>2} [{}] {}",
                    d.rank, d.pid, d.host, d.device, d.bus, d.name
                );
            }
            println!("#");
            print!("{}", report::table_header(args.cputime == 1));
        }
        let device_list: Vec<String> = devices
            .iter()
            .map(|d| {
                format!(
                    "{{\"rank\": {}, \"pid\": {}, \"host\": {}, \"device\": {}, \"name\": {}, \"pci_bus_id\": {}}}",
                    d.rank,
                    d.pid,
                    json_str(&d.host),
                    d.device,
                    json_str(&d.name),
                    json_str(&d.bus)
                )
            })
            .collect();
        let fields = vec![
            ("tool", json_str("nccl-trampoline perf")),
            ("collective", json_str(plan.collective.name())),
            ("nccl_version", json_str(&nccl.version().to_string())),
            ("nccl_path", json_str(&nccl.path().display().to_string())),
            ("nranks", plan.nranks.to_string()),
            ("procs", procs.to_string()),
            ("iters", args.iters.to_string()),
            ("warmup_iters", args.warmup.to_string()),
            ("agg_iters", args.agg.to_string()),
            ("check", args.check.to_string()),
            ("blocking", args.blocking.to_string()),
            ("devices", format!("[{}]", device_list.join(", "))),
        ];
        let progress = Progress::new(plan.sizes.len() * plan.cases.len(), true);
        Output { args, rows: Vec::new(), progress, fields }
    }

    pub fn row(&mut self, row: Row) {
        self.progress.advance(&format!("{} B", row.size));
        if !self.args.json {
            self.progress.clear();
            println!("{}", report::table_row(&row, self.args.cputime == 1));
        }
        self.rows.push(row);
    }

    pub fn finish(self) -> Result<bool, Error> {
        self.progress.clear();
        let doc = report::json_document(&self.fields, &self.rows);
        if self.args.json {
            print!("{doc}");
        } else {
            print!("{}", report::table_footer(&self.rows));
        }
        if let Some(path) = &self.args.output_file {
            std::fs::write(path, &doc).map_err(|source| Error::WriteOutput { path: path.clone(), source })?;
        }
        Ok(report::total_wrong(&self.rows) == 0)
    }
}

/// nccl-tests' `-a`: rank 0's time, or the average, minimum or maximum over ranks; wrong
/// elements are summed.
pub fn aggregate(per_rank: &[Measured], mode: u8) -> Measured {
    let pick = |f: fn(&Measured) -> f64| -> f64 {
        let v = per_rank.iter().map(f);
        match mode {
            0 => f(&per_rank[0]),
            2 => v.fold(f64::INFINITY, f64::min),
            3 => v.fold(0.0, f64::max),
            _ => v.sum::<f64>() / per_rank.len() as f64,
        }
    };
    let wrong = per_rank.iter().map(|m| m.wrong).try_fold(0u64, |acc, w| w.map(|w| acc + w));
    Measured { time: pick(|m| m.time), cpu: pick(|m| m.cpu), algbw: 0.0, busbw: 0.0, wrong }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_aggregate_like_nccl_tests() {
        let m = |t: f64, w: Option<u64>| Measured { time: t, cpu: t / 2.0, algbw: 0.0, busbw: 0.0, wrong: w };
        let per = [m(1.0, Some(1)), m(3.0, Some(2))];
        assert_eq!(aggregate(&per, 0).time, 1.0);
        assert_eq!(aggregate(&per, 1).time, 2.0);
        assert_eq!(aggregate(&per, 2).time, 1.0);
        assert_eq!(aggregate(&per, 3).time, 3.0);
        assert_eq!(aggregate(&per, 1).wrong, Some(3));
        assert_eq!(aggregate(&[m(1.0, None), m(1.0, Some(0))], 1).wrong, None);
    }
}
