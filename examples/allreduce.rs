//! One process per GPU: an all-reduce of `rank + 1` over every visible GPU, with the unique id
//! handed from rank 0 to the others by the TCP rendezvous on loopback, then verified on the
//! host.
//!
//! Run: `cargo run --release --features cudarc --example allreduce`
//! (it starts one worker per GPU itself: `allreduce --rank R --nranks N --root 127.0.0.1:PORT`).

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use cudarc::driver::CudaContext;
use nccl_trampoline::nccl::rendezvous::{self, RendezvousKey};
use nccl_trampoline::nccl::{Communicator, Nccl, RedOp};

const COUNT: usize = 1 << 20;
const TIMEOUT: Duration = Duration::from_secs(60);

fn flag<'a>(args: &'a [String], name: &str) -> Result<&'a str, String> {
    let i = args.iter().position(|a| a == name).ok_or(format!("missing {name}"))?;
    args.get(i + 1).map(String::as_str).ok_or(format!("{name} needs a value"))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--rank") {
        let rank: usize = flag(&args, "--rank")?.parse()?;
        let nranks: usize = flag(&args, "--nranks")?.parse()?;
        let root: SocketAddr = flag(&args, "--root")?.parse()?;
        return worker(rank, nranks, root);
    }

    // Launcher: one worker process per visible GPU.
    let nranks = CudaContext::device_count()? as usize;
    if nranks == 0 {
        return Err("no GPU visible".into());
    }
    let root = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    // The rendezvous serves only ranks that prove this job's secret.
    let secret = RendezvousKey::random_secret()?;
    let exe = std::env::current_exe()?;
    let workers: Vec<_> = (0..nranks)
        .map(|r| {
            std::process::Command::new(&exe)
                .args(["--rank", &r.to_string(), "--nranks", &nranks.to_string(), "--root", &root.to_string()])
                .env("NCCL_TRAMPOLINE_SECRET", &secret)
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut failed = 0;
    for (r, mut w) in workers.into_iter().enumerate() {
        let status = w.wait()?;
        if !status.success() {
            eprintln!("rank {r} failed: {status}");
            failed += 1;
        }
    }
    if failed > 0 {
        return Err(format!("{failed} of {nranks} ranks failed").into());
    }
    println!("all-reduce over {nranks} processes: every rank verified");
    Ok(())
}

fn worker(rank: usize, nranks: usize, root: SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
    let nccl = Nccl::load()?;
    // The context of GPU `rank`, current on this thread: NCCL initialises on it.
    let ctx = CudaContext::new(rank)?;
    ctx.bind_to_thread()?;
    let stream = ctx.default_stream();

    let key = RendezvousKey::from_secret(std::env::var("NCCL_TRAMPOLINE_SECRET")?.as_bytes());
    let id = if rank == 0 {
        let id = nccl.unique_id()?;
        rendezvous::TcpRoot::bind(root, key)?.serve(&id, 1..nranks as u32, TIMEOUT)?;
        id
    } else {
        rendezvous::fetch_tcp(root, &key, rank as u32, TIMEOUT)?
    };
    let comm = Communicator::init_rank(&nccl, nranks as i32, &id, rank as i32)?;

    let mut buf = stream.clone_htod(&vec![(rank + 1) as f32; COUNT])?;
    comm.all_reduce_in_place(&mut buf, RedOp::SUM, &stream)?;
    let out: Vec<f32> = stream.clone_dtoh(&buf)?;
    let want = (nranks * (nranks + 1) / 2) as f32;
    if let Some(i) = out.iter().position(|v| *v != want) {
        return Err(format!("rank {rank}: element {i} is {}, expected {want}", out[i]).into());
    }
    println!(
        "rank {rank}/{nranks} (GPU {}, NCCL {}): {COUNT} floats all-reduced, every element = {want}: verified",
        comm.cu_device()?,
        nccl.version()
    );
    comm.destroy()?;
    Ok(())
}
