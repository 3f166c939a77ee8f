//! One process, every local GPU: `ncclCommInitAll`, then an all-reduce issued for every rank
//! inside one group (`Nccl::group_scope`), verified on the host.
//!
//! Run: `cargo run --release --features cudarc --example init_all`

use std::process::ExitCode;

use cudarc::driver::CudaContext;
use nccl_trampoline::cuda::Driver;
use nccl_trampoline::nccl::{Communicator, Nccl, RedOp};

const NAME: &str = "init_all";

const COUNT: usize = 1 << 20;

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
    let streams: Vec<_> = contexts.iter().map(|c| c.default_stream()).collect();
    let devices: Vec<i32> = (0..n as i32).collect();
    let comms = Communicator::init_all(&nccl, &devices)?;

    let mut bufs = streams
        .iter()
        .enumerate()
        .map(|(r, s)| s.clone_htod(&vec![(r + 1) as f32; COUNT]))
        .collect::<Result<Vec<_>, _>>()?;
    // One thread drives every rank: the calls must be grouped. The scope keeps the buffers
    // borrowed until NCCL has launched the work at the group's end.
    nccl.group_scope(|g| {
        for ((comm, buf), stream) in comms.iter().zip(bufs.iter_mut()).zip(&streams) {
            g.all_reduce_in_place(comm, buf, RedOp::SUM, stream)?;
        }
        Ok(())
    })?;
    let want = (n * (n + 1) / 2) as f32;
    for (r, (buf, stream)) in bufs.iter().zip(&streams).enumerate() {
        let out: Vec<f32> = stream.clone_dtoh(buf)?;
        if let Some(i) = out.iter().position(|v| *v != want) {
            return Err(format!("rank {r}: element {i} is {}, expected {want}", out[i]).into());
        }
    }
    println!(
        "init_all over {n} GPUs (NCCL {}): {COUNT} floats all-reduced on each, every element = {want}: verified",
        nccl.version()
    );
    for comm in comms {
        comm.destroy()?;
    }
    Ok(())
}
