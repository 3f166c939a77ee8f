//! cudarc's cross-stream tracking after in-place collectives: on every local GPU, a 256 MiB
//! slice on stream A is all-reduced in place 10 times (one group over the GPUs per round), then
//! read back on stream B through cudarc alone. cudarc makes B wait for the slice's last write
//! event; that event must mark the point after the collectives, so no element may be stale.
//!
//! Run: `cargo run --release --features cudarc --example cudarc_streams`

use std::process::ExitCode;

use cudarc::driver::CudaContext;
use nccl_trampoline::cuda::Driver;
use nccl_trampoline::nccl::{Communicator, Nccl, RedOp};

const NAME: &str = "cudarc_streams";

const COUNT: usize = 1 << 26;
const ROUNDS: u32 = 10;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{NAME}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The visible GPUs, through the crate's own CUDA loader: cudarc panics when it cannot load
/// the driver, so it is asked only once this says there is one.
fn visible_gpus() -> Result<usize, Box<dyn std::error::Error>> {
    let driver = Driver::load().map_err(|e| format!("this example needs NVIDIA GPUs and their driver: {e}"))?;
    match driver.device_count()? {
        0 => Err("this example needs NVIDIA GPUs: the CUDA driver sees none (CUDA_VISIBLE_DEVICES?)".into()),
        n => Ok(n as usize),
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let n = visible_gpus()?;
    let nccl = Nccl::load()?;
    let contexts = (0..n).map(CudaContext::new).collect::<Result<Vec<_>, _>>()?;
    let a: Vec<_> = contexts.iter().map(|c| c.new_stream()).collect::<Result<_, _>>()?;
    let b: Vec<_> = contexts.iter().map(|c| c.new_stream()).collect::<Result<_, _>>()?;
    let comms = Communicator::init_all(&nccl, &(0..n as i32).collect::<Vec<_>>())?;
    let mut bufs = a.iter().map(|s| s.clone_htod(&vec![1.0f32; COUNT])).collect::<Result<Vec<_>, _>>()?;
    for _ in 0..ROUNDS {
        nccl.group_scope(|g| {
            for ((comm, buf), stream) in comms.iter().zip(bufs.iter_mut()).zip(&a) {
                g.all_reduce_in_place(comm, buf, RedOp::SUM, stream)?;
            }
            Ok(())
        })?;
    }
    let want = (n as f32).powi(ROUNDS as i32);
    let mut stale_total = 0;
    for (r, (buf, stream_b)) in bufs.iter().zip(&b).enumerate() {
        // Stream B, ordered after the collectives on A only through the slice's events.
        let out: Vec<f32> = stream_b.clone_dtoh(buf)?;
        let stale = out.iter().filter(|v| **v != want).count();
        println!("rank {r}: {stale} of {COUNT} elements stale after {ROUNDS} in-place all-reduces on stream A, read on stream B");
        stale_total += stale;
    }
    for comm in comms {
        comm.destroy()?;
    }
    if stale_total > 0 {
        return Err(format!("{stale_total} stale elements: the access event was recorded before the collective").into());
    }
    println!("cudarc_streams: 0 stale elements on {n} GPUs (every element = {want})");
    Ok(())
}
