//! `perf` as one rank per process, the way nccl-tests runs under MPI: `mpirun -np N`,
//! `srun -n N` or `torchrun --nproc_per_node N` start the processes, each finds its rank in
//! the launcher's variables, joins the communicator (the unique id along the route the launcher
//! allows) and drives one GPU. Rank 0 prints the one table; what each rank measured and the
//! elements it found wrong reach it through NCCL itself (an all-gather), so no launcher has to
//! provide a channel, and every rank exits non-zero if any rank saw a wrong element.
//! `--procs N` is the same on one host, with this process as the launcher.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nccl_trampoline::launch::rendezvous::RendezvousKey;
use nccl_trampoline::launch::{vars, Setup, World};
use nccl_trampoline::nccl::CommOptions;

use super::options::Args;
use super::output::{self, aggregate, DeviceLine, Output};
use super::plan::Plan;
use super::ranks::{MemoryUse, Ranks};
use super::report::Measured;
use super::{comm_config, limited, load, prepare, sweep};
use crate::cuda::Driver;
use crate::error::{Error, LibraryError, Usage};

/// How long a rank may take to join: GPU, unique id and init together.
const JOIN_TIMEOUT: Duration = Duration::from_secs(300);

/// This host's name.
pub fn hostname() -> String {
    #[cfg(unix)]
    {
        let mut buf = [0u8; 256];
        // SAFETY: gethostname writes at most `len` bytes into the buffer.
        if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return String::from_utf8_lossy(&buf[..end]).into_owned();
        }
    }
    "?".into()
}

/// Bytes of one rank's "Using devices" record.
const RECORD: usize = 4 + 4 + 64 + 64 + 256;

fn put_text(out: &mut Vec<u8>, s: &str, width: usize) {
    let b = s.as_bytes();
    let n = b.len().min(width - 1);
    out.extend_from_slice(&b[..n]);
    out.resize(out.len() + width - n, 0);
}

fn get_text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

fn encode_line(d: &DeviceLine) -> Vec<u8> {
    let mut v = Vec::with_capacity(RECORD);
    v.extend_from_slice(&d.pid.to_le_bytes());
    v.extend_from_slice(&d.device.to_le_bytes());
    put_text(&mut v, &d.host, 64);
    put_text(&mut v, &d.bus, 64);
    put_text(&mut v, &d.name, 256);
    v
}

fn decode_lines(all: &[u8]) -> Vec<DeviceLine> {
    all.chunks_exact(RECORD)
        .enumerate()
        .map(|(rank, r)| DeviceLine {
            rank,
            pid: u32::from_le_bytes(r[0..4].try_into().expect("4 bytes")),
            device: i32::from_le_bytes(r[4..8].try_into().expect("4 bytes")),
            host: get_text(&r[8..72]),
            bus: get_text(&r[72..136]),
            name: get_text(&r[136..RECORD]),
        })
        .collect()
}

/// One rank's measurement of a placement: time, cpu, wrong (-1: not reported), whether its
/// own check failed, then each iteration's time (`-I 1`).
fn encode_measured(m: &Measured, out: &mut Vec<u8>) {
    out.extend_from_slice(&m.time.to_le_bytes());
    out.extend_from_slice(&m.cpu.to_le_bytes());
    out.extend_from_slice(&m.wrong.map_or(-1i64, |w| w as i64).to_le_bytes());
    out.extend_from_slice(&m.failed.to_le_bytes());
    for t in &m.iterations {
        out.extend_from_slice(&t.to_le_bytes());
    }
}

/// Every rank's pair, from records of `iters` iteration times each.
fn decode_pairs(all: &[u8], iters: usize) -> Vec<(Measured, Measured)> {
    let f = |b: &[u8]| f64::from_le_bytes(b.try_into().expect("8 bytes"));
    let one = |b: &[u8]| {
        let w = i64::from_le_bytes(b[16..24].try_into().expect("8 bytes"));
        let mut m = Measured::new(f(&b[0..8]), f(&b[8..16]), u64::try_from(w).ok());
        m.failed = u64::from_le_bytes(b[24..32].try_into().expect("8 bytes"));
        m.iterations = b[32..].chunks_exact(8).map(f).collect();
        m
    };
    let half = 32 + 8 * iters;
    all.chunks_exact(2 * half).map(|r| (one(&r[..half]), one(&r[half..]))).collect()
}

/// One rank of a launched job (or of --procs).
pub fn rank(args: &Args, world: &World) -> Result<bool, Error> {
    if args.ngpus != 1 {
        return Err(Usage::GpusPerLaunchedRank { ngpus: args.ngpus, launcher: world.launcher().to_string() }.into());
    }
    if args.procs > 1 && !args.procs_rank {
        return Err(Usage::ProcsUnderLauncher { launcher: world.launcher().to_string(), size: world.size() }.into());
    }
    let n = world.size() as usize;
    let plan = Plan::new(args, n)?;
    let nccl = load(args)?;
    let driver = Driver::load().map_err(|source| Error::NoCudaDriver { source: source.into() })?;
    let me = world.rank() as usize;
    let join = |source: LibraryError| Error::Join { rank: me, source };
    // The free memory before the communicator, on the GPU it will take (one per local rank).
    let local = world.local_rank() as i32;
    let before_init = match args.memory {
        1 => super::device::free_memory(&driver, local).map_err(|e| join(e.into()))?,
        _ => 0,
    };
    let mut setup = Setup::within(JOIN_TIMEOUT);
    if let Some(config) = comm_config(args, nccl.version())? {
        setup = setup.options(CommOptions::new().config(config));
    }
    let comm = world.communicator_with(&nccl, &setup).map_err(|e| join(e.into()))?;
    let device = comm.cu_device().map_err(|e| join(e.into()))?;
    let after_init = match args.memory {
        1 => super::device::free_memory(&driver, device).map_err(|e| join(e.into()))?,
        _ => 0,
    };
    let comms = [(comm, device, me)];
    let info = driver.device_info(device).ok();
    let total = info.as_ref().map_or(0, |d| d.memory);
    let (name, bus) = info.map_or(("?".into(), "?".into()), |d| (d.name, d.pci_bus_id));
    let host = output::short_hostname(&hostname());
    let line = DeviceLine { rank: me, pid: std::process::id(), host, device, name, bus };
    let stream = driver.stream().map_err(|e| join(e.into()))?;
    let gather = |mine: &[u8]| super::device::gather_on(&driver, &comms[0].0, device, &stream, n, args.timeout, mine);
    let lines = decode_lines(&gather(&encode_line(&line))?);
    // The smallest GPU of the job bounds every rank's buffers, and the oldest its types
    // (nccl-tests: MPI_MIN of each).
    let mut mine = total.to_le_bytes().to_vec();
    mine.extend_from_slice(&(super::arch(&driver, device) as u64).to_le_bytes());
    let all = gather(&mine)?;
    let min = |k: usize| {
        all.chunks_exact(16).map(|r| u64::from_le_bytes(r[8 * k..8 * k + 8].try_into().expect("8 bytes"))).min()
    };
    let (min_total, min_arch) = (min(0).unwrap_or(0), min(1).unwrap_or(0) as i32);
    let limit = output::memory_limit(min_total, args.max_bytes, args.check > 0);
    let plan = match limit {
        Some(l) => Plan::new(&limited(args, l), n)?,
        None => plan,
    };
    let plan = plan.for_library(args, nccl.version().code(), min_arch)?;
    let ranks = Ranks::new(&nccl, &driver, &comms, &plan, args, n)?;
    let after_buffers = if args.memory == 1 { ranks.free_memory()?[0] } else { 0 };
    let mut out = (me == 0).then(|| Output::new(args, &plan, &nccl, &lines, limit));
    let iters = if args.per_iter == 1 { args.iters as usize } else { 0 };
    let mut wrong = 0u64;
    sweep(args, &plan, &ranks, |elem, op, size, o, i| {
        let mut mine = Vec::new();
        encode_measured(&o, &mut mine);
        encode_measured(&i, &mut mine);
        let per_rank = decode_pairs(&ranks.gather(&mine)?, iters);
        let outs: Vec<Measured> = per_rank.iter().map(|p| p.0.clone()).collect();
        let ins: Vec<Measured> = per_rank.iter().map(|p| p.1.clone()).collect();
        let (o, i) = (aggregate(&outs, args.average), aggregate(&ins, args.average));
        wrong += o.wrong.unwrap_or(0) + i.wrong.unwrap_or(0);
        if let Some(out) = &mut out {
            out.row(plan.row(elem, op, size, o, i));
        }
        Ok(())
    })?;
    // -M: the maximum over ranks of each amount.
    let memory = if args.memory == 1 {
        let collective = after_buffers - ranks.free_memory()?[0];
        let mut mine = Vec::new();
        for v in [before_init - after_init, after_init - after_buffers, collective] {
            mine.extend_from_slice(&v.to_le_bytes());
        }
        let all = ranks.gather(&mine)?;
        let max = |k: usize| {
            all.chunks_exact(24).map(|r| i64::from_le_bytes(r[8 * k..8 * k + 8].try_into().expect("8 bytes"))).max()
        };
        Some(MemoryUse { init: max(0).unwrap_or(0), buffers: max(1).unwrap_or(0), collective: max(2).unwrap_or(0) })
    } else {
        None
    };
    drop(ranks);
    match out {
        Some(out) => out.finish(&nccl, memory),
        None => Ok(wrong == 0),
    }
}

/// A free port on loopback, for the ranks' rendezvous.
fn free_port() -> Result<u16, Error> {
    let port = std::net::TcpListener::bind(("127.0.0.1", 0)).and_then(|l| l.local_addr()).map(|a| a.port());
    port.map_err(|source| Error::NoFreePort { source })
}

/// `--procs N`: starts N ranks on this host, as a launcher would (the crate's own variables,
/// a fresh secret, a free port), shows rank 0's output, and stops every rank if one fails.
pub fn start_procs(args: &Args) -> Result<bool, Error> {
    let n = args.procs;
    prepare(args, n as usize, 0, "--procs")?;
    let secret = RendezvousKey::random_secret().map_err(|source| Error::Secret { source: source.into() })?;
    let port = free_port()?.to_string();
    let exe = std::env::current_exe().map_err(|source| Error::CurrentExe { source })?;
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut children: Vec<Child> = Vec::new();
    for r in 0..n {
        let rank = r.to_string();
        let child = Command::new(&exe)
            .args(&argv)
            .arg("--procs-rank")
            .env(vars::RANK, &rank)
            .env(vars::WORLD_SIZE, n.to_string())
            .env(vars::LOCAL_RANK, &rank)
            .env(vars::LOCAL_SIZE, n.to_string())
            .env(vars::SECRET, &secret)
            .env(vars::PORT, &port)
            .env(vars::ID_ROUTE, "tcp")
            .stdout(if r == 0 { Stdio::inherit() } else { Stdio::null() })
            .spawn();
        match child {
            Ok(c) => children.push(c),
            Err(source) => {
                stop(&mut children);
                return Err(Error::Spawn { rank: r, source });
            }
        }
    }
    // Wait for all; the first that fails takes the others down (they would wait for it in
    // their next collective).
    let mut status = vec![None; children.len()];
    loop {
        for (r, c) in children.iter_mut().enumerate() {
            if status[r].is_none() {
                status[r] = c.try_wait().map_err(|source| Error::Wait { rank: r, source })?;
            }
        }
        if let Some(r) = status.iter().position(|s| s.is_some_and(|s| !s.success())) {
            if status.iter().any(Option::is_none) {
                stop(&mut children);
                return Err(Error::RankFailed { rank: r, status: status[r].expect("exited") });
            }
            // Every rank ran to the end and one (at least) found wrong elements, or failed.
            return Ok(false);
        }
        if status.iter().all(Option::is_some) {
            return Ok(true);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stop(children: &mut [Child]) {
    for c in children.iter_mut() {
        let _ = c.kill();
    }
    for c in children.iter_mut() {
        let _ = c.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_cross_ranks_intact() {
        let d = DeviceLine {
            rank: 0,
            pid: 4242,
            host: "gpu01".into(),
            device: 1,
            name: "NVIDIA H200".into(),
            bus: "0000:18:00.0".into(),
        };
        let mut all = encode_line(&d);
        let mut e = d.clone();
        e.host = "x".repeat(300); // truncated, not overflowing
        all.extend(encode_line(&e));
        let back = decode_lines(&all);
        assert_eq!(back[0], d);
        assert_eq!((back[1].rank, back[1].host.len()), (1, 63));
        let m = |t: f64, w: Option<u64>, it: Vec<f64>| Measured { iterations: it, ..Measured::new(t, t / 2.0, w) };
        let mut all = Vec::new();
        for (o, i) in [
            (m(1.0, Some(3), vec![1.0, 2.0]), m(2.0, None, vec![3.0, 4.0])),
            (m(3.0, Some(0), vec![5.0, 6.0]), m(4.0, None, vec![7.0, 8.0])),
        ] {
            encode_measured(&o, &mut all);
            encode_measured(&i, &mut all);
        }
        let pairs = decode_pairs(&all, 2);
        assert_eq!(pairs[1], (m(3.0, Some(0), vec![5.0, 6.0]), m(4.0, None, vec![7.0, 8.0])));
        assert_eq!(pairs[0].0, m(1.0, Some(3), vec![1.0, 2.0]));
    }
}
