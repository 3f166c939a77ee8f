//! Surviving a dead peer. N processes, one GPU each, all-reduce in a loop, every element checked.
//! One rank dies mid-loop (it SIGKILLs itself right after enqueueing an all-reduce, its kernel
//! in flight). The survivors' watchdogs find the stalled all-reduce, they agree on who died
//! (heartbeat files), shrink the communicator with `NCCL_SHRINK_ABORT`, and go on.
//!
//! Run (starts one worker per rank itself; rank r uses GPU r, so `--ranks N` needs N GPUs:
//! NCCL refuses two ranks of one communicator on one GPU, "Duplicate GPU detected"; with fewer
//! it says so in one line and starts nothing):
//!
//! ```text
//! cargo run --release --example survive -- --ranks 2 --kill 1 --at 5
//! ```
//!
//! `--scenario` picks what is shown:
//! - `shrink` (default): detect, shrink, continue. `--kill R@I` kills rank R at iteration I
//!   (`--kill 3@4 --kill 2@8`: two ranks lost one after the other, two shrinks).
//! - `before-init`: the victim dies before init; the others' init times out with a typed error
//!   within the creation deadline + 10 %, and they exit cleanly.
//! - `watchdog`: the watchdog aborts the communicator and reports the stalled operation within
//!   its timeout + 10 %; the abort and the drop return; the survivors exit 0.
//! - `split`: no rank dies. The world is split into sub-communicators by color (rank mod 2),
//!   an all-reduce runs in each (every element checked), and parent and child are torn down in
//!   every order (destroy, abort, drop; parent first and child first), each bounded.
//!
//! Other options: `--iters K` (default 12), `--count C` floats per all-reduce (default 2^26:
//! 256 MiB), `--timeout S` seconds for the watchdog and the deadline (default 5),
//! `--nonblocking` (NCCL's non-blocking mode). The launcher's exit status is 0 when every
//! survivor passed and every victim died.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant, SystemTime};

use nccl_trampoline::cuda::Driver;
use nccl_trampoline::launch::rendezvous;
use nccl_trampoline::nccl::{
    Cause, CommOptions, CommState, Communicator, Config, DataType, Nccl, RedOp, ShrinkMode, Timeouts, WatchdogAction,
    WatchdogConfig,
};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scenario {
    Shrink,
    BeforeInit,
    Watchdog,
    Split,
}

#[derive(Clone, Debug)]
struct Args {
    ranks: usize,
    /// Victims: (rank, iteration it dies at).
    kill: Vec<(usize, usize)>,
    at: usize,
    iters: usize,
    count: usize,
    timeout: Duration,
    scenario: Scenario,
    nonblocking: bool,
    rank: Option<usize>,
    dir: Option<PathBuf>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        ranks: 2,
        kill: Vec::new(),
        at: 5,
        iters: 12,
        count: 1 << 26,
        timeout: Duration::from_secs(5),
        scenario: Scenario::Shrink,
        nonblocking: false,
        rank: None,
        dir: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--ranks" => a.ranks = number(value()?)?,
            "--kill" => {
                let v = value()?;
                let (rank, at) = match v.split_once('@') {
                    Some((r, i)) => (number(r.to_string())?, Some(number(i.to_string())?)),
                    None => (number(v)?, None),
                };
                a.kill.push((rank, at.unwrap_or(usize::MAX)));
            }
            "--at" => a.at = number(value()?)?,
            "--iters" => a.iters = number(value()?)?,
            "--count" => a.count = number(value()?)?,
            "--timeout" => {
                a.timeout = Duration::from_secs_f64(value()?.parse().map_err(|e| format!("--timeout: {e}"))?)
            }
            "--nonblocking" => a.nonblocking = true,
            "--scenario" => {
                a.scenario = match value()?.as_str() {
                    "shrink" => Scenario::Shrink,
                    "before-init" => Scenario::BeforeInit,
                    "watchdog" => Scenario::Watchdog,
                    "split" => Scenario::Split,
                    other => return Err(format!("unknown scenario {other}: shrink, before-init, watchdog or split")),
                }
            }
            "--rank" => a.rank = Some(number(value()?)?),
            "--dir" => a.dir = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown option {other} (see the example's documentation)")),
        }
    }
    if a.ranks < 2 || a.kill.iter().any(|(k, _)| *k >= a.ranks) || a.kill.len() >= a.ranks {
        return Err("need --ranks >= 2 and fewer --kill ranks, each below --ranks".into());
    }
    if a.kill.is_empty() && a.scenario != Scenario::Split {
        a.kill.push((a.ranks - 1, a.at));
    }
    for (_, at) in &mut a.kill {
        if *at == usize::MAX {
            *at = a.at;
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("survive: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match args.rank {
        Some(rank) => worker(&args, rank),
        None => launcher(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("survive: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Starts one worker per rank, waits for them (bounded), and judges the outcome.
fn launcher(args: &Args) -> Result<(), String> {
    let driver = Driver::load().map_err(|e| e.to_string())?;
    let gpus = driver.device_count().map_err(|e| e.to_string())?;
    if gpus < 1 {
        return Err("no GPU visible".into());
    }
    if (gpus as usize) < args.ranks {
        return Err(format!(
            "--ranks {} needs {} GPUs, one per rank (NCCL refuses two ranks of one communicator on one GPU); {gpus} visible",
            args.ranks, args.ranks
        ));
    }
    let dir = std::env::temp_dir().join(format!("nccl-survive-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    println!(
        "survive: {} ranks on {gpus} GPUs, scenario {:?}, victims {:?} at iteration {}, timeout {:?}, {} mode",
        args.ranks,
        args.scenario,
        args.kill,
        args.at,
        args.timeout,
        if args.nonblocking { "non-blocking" } else { "blocking" }
    );
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut children: Vec<Child> = Vec::new();
    for r in 0..args.ranks {
        let mut cmd = Command::new(&exe);
        cmd.args(std::env::args().skip(1)).args(["--rank", &r.to_string(), "--dir"]).arg(&dir);
        children.push(cmd.spawn().map_err(|e| format!("start rank {r}: {e}"))?);
    }
    let limit = args.timeout * 6 + Duration::from_secs(180);
    let started = Instant::now();
    let mut failed = Vec::new();
    for (r, mut child) in children.into_iter().enumerate() {
        let status = loop {
            if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
                break Some(s);
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let victim = args.kill.iter().any(|(k, _)| *k == r);
        use std::os::unix::process::ExitStatusExt;
        let ok = match status {
            None => {
                println!("rank {r}: still running after {limit:?}: killed");
                false
            }
            Some(s) if victim => s.signal() == Some(9),
            Some(s) => s.success(),
        };
        if !ok {
            failed.push(r);
        }
        println!(
            "rank {r}: {} ({})",
            if victim { "victim" } else { "survivor" },
            status.map_or("hung".into(), |s| s.to_string())
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    if failed.is_empty() {
        println!("survive: PASS ({:?})", args.scenario);
        Ok(())
    } else {
        Err(format!("FAIL: ranks {failed:?} did not end as expected"))
    }
}

/// Kills this process the way a crash would.
fn die(rank: usize, when: &str) -> ! {
    println!("rank {rank}: dying {when}");
    let _ = Command::new("kill").args(["-KILL", &std::process::id().to_string()]).status();
    std::process::abort();
}

/// Touches `<dir>/alive-<rank>` every 100 ms while the process lives.
fn heartbeat(dir: &Path, rank: usize) {
    let path = dir.join(format!("alive-{rank}"));
    std::thread::spawn(move || loop {
        let _ = std::fs::write(&path, b"alive");
        std::thread::sleep(Duration::from_millis(100));
    });
}

/// The members whose heartbeat stopped: waits long enough for every survivor to agree.
fn dead_members(dir: &Path, members: &[usize]) -> Vec<usize> {
    std::thread::sleep(Duration::from_millis(1500));
    members
        .iter()
        .copied()
        .filter(|m| {
            let modified = std::fs::metadata(dir.join(format!("alive-{m}"))).and_then(|md| md.modified());
            modified.map_or(true, |t| SystemTime::now().duration_since(t).unwrap_or_default() > Duration::from_secs(1))
        })
        .collect()
}

fn worker(args: &Args, rank: usize) -> Result<(), String> {
    let dir = args.dir.clone().ok_or("--rank needs --dir")?;
    let driver = Driver::load().map_err(e)?;
    let gpu = rank as i32 % driver.device_count().map_err(e)?;
    driver.activate(gpu).map_err(e)?;
    let nccl = Nccl::load().map_err(e)?;
    heartbeat(&dir, rank);
    let id_file = dir.join("unique-id");
    // The run's directory names the job: every rank has it, no other run does.
    let key = rendezvous::RendezvousKey::from_secret(dir.to_string_lossy().as_bytes());
    let id = if rank == 0 {
        let id = nccl.unique_id().map_err(e)?;
        rendezvous::publish_file(&id_file, &id, &key).map_err(e)?;
        id
    } else {
        // A file published before this worker started (minus the slack for ranks starting
        // apart) is another run's.
        let not_before = SystemTime::now() - Duration::from_secs(300);
        rendezvous::wait_file(&id_file, &key, not_before, Duration::from_secs(60)).map_err(e)?
    };
    let dies_at = args.kill.iter().find(|(k, _)| *k == rank).map(|(_, at)| *at);
    if args.scenario == Scenario::BeforeInit && dies_at.is_some() {
        die(rank, "before init");
    }

    let create = if args.scenario == Scenario::BeforeInit { args.timeout } else { Duration::from_secs(120) };
    let timeouts = Timeouts {
        create: Some(create),
        operation: Some(Duration::from_secs(60)),
        teardown: Some(Duration::from_secs(20)),
    };
    let mut options = CommOptions::new().timeouts(timeouts);
    if args.nonblocking {
        options = options.config(Config::new().blocking(false));
    }
    let started = Instant::now();
    let made = Communicator::init_rank_with(&nccl, args.ranks as i32, &id, rank as i32, &options);
    if args.scenario == Scenario::BeforeInit {
        let took = started.elapsed();
        return match made {
            Err(err @ nccl_trampoline::nccl::Error::Timeout { .. }) if took <= create + create / 10 => {
                println!("rank {rank}: init failed as expected after {took:.2?} (deadline {create:?}): {err}");
                Ok(())
            }
            Err(err) => Err(format!(
                "rank {rank}: init ended after {took:.2?} with {err}, not a timeout within {create:?} + 10%"
            )),
            Ok(_) => Err(format!("rank {rank}: init succeeded without its peer")),
        };
    }
    let mut comm = made.map_err(e)?;
    println!("rank {rank}: GPU {gpu}, NCCL {}, communicator ready in {:.2?}", nccl.version(), started.elapsed());
    if args.scenario == Scenario::Split {
        return split_orders(&driver, &comm, rank, args);
    }
    let action = if args.scenario == Scenario::Watchdog { WatchdogAction::Abort } else { WatchdogAction::MarkFailed };
    comm.start_watchdog(WatchdogConfig::new(args.timeout).action(action)).map_err(e)?;

    let buf = driver.alloc(args.count * 4).map_err(e)?;
    let stream = driver.stream().map_err(e)?;
    let mut host = vec![0f32; args.count];
    let mut members: Vec<usize> = (0..args.ranks).collect();
    let mut i = 0;
    while i < args.iters {
        let scale = (i % 7 + 1) as f32;
        // Queued on the all-reduce's stream, so the all-reduce reads it (a fill on the legacy
        // stream would not be ordered before work on this non-blocking one).
        buf.fill_u32_on(&stream, ((rank + 1) as f32 * scale).to_bits()).map_err(e)?;
        let enqueued = Instant::now();
        // SAFETY: `buf` holds `count` floats of this GPU and outlives the wait below; `stream`
        // is a stream of this GPU.
        unsafe { comm.all_reduce_raw(buf.ptr(), buf.ptr(), args.count, DataType::FLOAT32, RedOp::SUM, stream.raw()) }
            .map_err(e)?;
        if dies_at == Some(i) {
            die(rank, &format!("at iteration {i}, its all-reduce in flight"));
        }
        match comm.wait(&stream) {
            Ok(()) => {
                let want = members.iter().map(|m| (m + 1) as f32).sum::<f32>() * scale;
                // SAFETY: plain data, viewed as bytes for the copy.
                let bytes = unsafe { std::slice::from_raw_parts_mut(host.as_mut_ptr().cast::<u8>(), host.len() * 4) };
                buf.download_on(&stream, bytes).map_err(e)?;
                let wrong = host.iter().filter(|v| **v != want).count();
                if wrong > 0 {
                    return Err(format!(
                        "rank {rank}: iteration {i}: {wrong} of {} elements wrong (want {want})",
                        args.count
                    ));
                }
                println!("rank {rank}: iteration {i} on {} ranks: every element = {want}", members.len());
                i += 1;
            }
            Err(err) => {
                let detected = enqueued.elapsed();
                println!(
                    "rank {rank}: iteration {i}: detected after {detected:.2?} (watchdog {:?}): {err}",
                    args.timeout
                );
                if detected > args.timeout + args.timeout / 10 + Duration::from_millis(500) {
                    return Err(format!(
                        "rank {rank}: detection took {detected:.2?}, over the watchdog's {:?} + 10%",
                        args.timeout
                    ));
                }
                if args.scenario == Scenario::Watchdog {
                    return watchdog_end(rank, comm, args.timeout);
                }
                let dead = dead_members(&dir, &members);
                if dead.is_empty() {
                    return Err(format!("rank {rank}: the iteration failed but every member is alive: {err}"));
                }
                let exclude: Vec<i32> =
                    members.iter().enumerate().filter(|(_, m)| dead.contains(m)).map(|(k, _)| k as i32).collect();
                let t = Instant::now();
                let survivor = comm.shrink(&exclude, None, ShrinkMode::Abort).map_err(e)?;
                members.retain(|m| !dead.contains(m));
                println!(
                    "rank {rank}: shrunk to {} ranks in {:.2?} without ranks {dead:?} (recovered {:.2?} after the enqueue); repeating iteration {i}",
                    members.len(),
                    t.elapsed(),
                    enqueued.elapsed()
                );
                comm = survivor;
                comm.start_watchdog(WatchdogConfig::new(args.timeout).action(action)).map_err(e)?;
            }
        }
    }
    let t = Instant::now();
    comm.destroy().map_err(e)?;
    println!("rank {rank}: done: {} iterations, every element checked; destroy took {:.2?}", args.iters, t.elapsed());
    Ok(())
}

/// How a parent and its child are torn down, in order.
const ORDERS: [&str; 7] = [
    "destroy parent, then child",
    "destroy child, then parent",
    "abort parent, then destroy child",
    "abort child, then destroy parent",
    "abort both",
    "drop parent, then child",
    "drop child, then parent",
];

/// The split scenario: for each teardown order, a copy of the world split by color, a checked
/// all-reduce in the child and in the parent, then the teardown, bounded.
fn split_orders(driver: &Driver, world: &Communicator, rank: usize, args: &Args) -> Result<(), String> {
    let color = (rank % 2) as i32;
    let count = args.count.min(1 << 22);
    let buf = driver.alloc(count * 4).map_err(e)?;
    let stream = driver.stream().map_err(e)?;
    let mut host = vec![0f32; count];
    let check = |comm: &Communicator, members: &[usize], host: &mut Vec<f32>| -> Result<(), String> {
        buf.fill_u32_on(&stream, ((rank + 1) as f32).to_bits()).map_err(e)?;
        // SAFETY: `buf` holds `count` floats of this GPU; `stream` is a stream of this GPU.
        unsafe { comm.all_reduce_raw(buf.ptr(), buf.ptr(), count, DataType::FLOAT32, RedOp::SUM, stream.raw()) }
            .map_err(e)?;
        comm.wait(&stream).map_err(e)?;
        // SAFETY: plain data, viewed as bytes for the copy.
        let bytes = unsafe { std::slice::from_raw_parts_mut(host.as_mut_ptr().cast::<u8>(), host.len() * 4) };
        buf.download_on(&stream, bytes).map_err(e)?;
        let want = members.iter().map(|m| (m + 1) as f32).sum::<f32>();
        match host.iter().filter(|v| **v != want).count() {
            0 => Ok(()),
            wrong => Err(format!("rank {rank}: {wrong} of {count} elements wrong (want {want})")),
        }
    };
    let everyone: Vec<usize> = (0..args.ranks).collect();
    let same_color: Vec<usize> = everyone.iter().copied().filter(|r| r % 2 == rank % 2).collect();
    for order in ORDERS {
        let parent = world.split(0, rank as i32, None).map_err(e)?.ok_or("no parent")?;
        let child = parent.split(color, rank as i32, None).map_err(e)?.ok_or("no child")?;
        if child.count().map_err(e)? as usize != same_color.len() {
            return Err(format!(
                "rank {rank}: a child of {} ranks, expected {}",
                child.count().map_err(e)?,
                same_color.len()
            ));
        }
        check(&child, &same_color, &mut host)?;
        check(&parent, &everyone, &mut host)?;
        let t = Instant::now();
        let torn = match order {
            "destroy parent, then child" => parent.destroy().and_then(|()| child.destroy()),
            "destroy child, then parent" => child.destroy().and_then(|()| parent.destroy()),
            "abort parent, then destroy child" => parent.abort().and_then(|()| child.destroy()),
            "abort child, then destroy parent" => child.abort().and_then(|()| parent.destroy()),
            "abort both" => parent.abort().and_then(|()| child.abort()),
            "drop parent, then child" => {
                drop(parent);
                drop(child);
                Ok(())
            }
            _ => {
                drop(child);
                drop(parent);
                Ok(())
            }
        };
        torn.map_err(e)?;
        println!(
            "rank {rank}: split into a child of {} ranks (color {color}); all-reduces checked; {order}: {:.2?}",
            same_color.len(),
            t.elapsed()
        );
    }
    Ok(())
}

/// The watchdog scenario's end: the report names the stalled all-reduce within the timeout +
/// 10 %, and dropping the aborted communicator returns at once.
fn watchdog_end(rank: usize, comm: Communicator, timeout: Duration) -> Result<(), String> {
    let report = comm.watchdog_report().ok_or("no watchdog report")?;
    println!("rank {rank}: watchdog: {report}");
    if !matches!(comm.state(), CommState::Aborted(Cause::Watchdog(_))) {
        return Err(format!("rank {rank}: expected an abort by the watchdog, state {:?}", comm.state()));
    }
    if report.operation != Some("ncclAllReduce") || report.waited > timeout + timeout / 10 {
        return Err(format!("rank {rank}: report {report:?}"));
    }
    let t = Instant::now();
    drop(comm);
    println!("rank {rank}: the aborted communicator dropped in {:.2?}", t.elapsed());
    Ok(())
}

/// An error of any layer as the text this example reports.
fn e(err: impl std::fmt::Display) -> String {
    err.to_string()
}
