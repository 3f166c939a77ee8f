//! The all-reduce sweep of `nccl-trampoline perf all_reduce`, written with cudarc's own NCCL
//! module: the comparison point of docs/perf.md. Same loop as the CLI and as
//! benches/c/allreduce_perf.c: one process, every GPU (`-g`), one group per iteration,
//! `-w` warm-up iterations, `-n` timed iterations on the host clock from the first enqueue to
//! the end of every stream; out-of-place then in-place; float32 sum. Prints a JSON document of
//! its own (`time_us`, `cpu_us` per placement), which scripts/perf-report.py reads beside
//! perf's `-J` document.
//!
//! ```text
//! cargo build --release --features cudarc-nccl --example cudarc_allreduce_perf
//! cudarc_allreduce_perf -b 8 -e 1G -f 2 -g 2 -n 20 -w 5 [-c 0]
//! ```
//! cudarc opens `libnccl.so` (or a versioned name it knows) through the loader.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use cudarc::nccl::{group_end, group_start, Comm, ReduceOp};

struct Opts {
    min: usize,
    max: usize,
    factor: usize,
    gpus: usize,
    iters: u32,
    warmup: u32,
    check: bool,
}

fn parse_size(s: &str) -> usize {
    let (n, shift) = match s.chars().last() {
        Some('K') => (&s[..s.len() - 1], 10),
        Some('M') => (&s[..s.len() - 1], 20),
        Some('G') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    n.parse::<usize>().expect("a size") << shift
}

fn opts() -> Opts {
    let mut o = Opts { min: 8, max: 1 << 30, factor: 2, gpus: 2, iters: 20, warmup: 5, check: true };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let v = pair.get(1).expect("every option takes a value");
        match pair[0].as_str() {
            "-b" => o.min = parse_size(v),
            "-e" => o.max = parse_size(v),
            "-f" => o.factor = v.parse().expect("-f"),
            "-g" => o.gpus = v.parse().expect("-g"),
            "-n" => o.iters = v.parse().expect("-n"),
            "-w" => o.warmup = v.parse().expect("-w"),
            "-c" => o.check = v != "0",
            other => panic!("unknown option {other}"),
        }
    }
    o
}

struct Rank {
    comm: Comm,
    stream: Arc<CudaStream>,
    send: CudaSlice<f32>,
    recv: CudaSlice<f32>,
}

fn launch(ranks: &mut [Rank], count: usize, in_place: bool) {
    group_start().expect("ncclGroupStart");
    for r in ranks.iter_mut() {
        let send = r.send.slice(..count);
        let mut recv = r.recv.slice_mut(..count);
        if in_place {
            r.comm.all_reduce_in_place(&mut recv, &ReduceOp::Sum).expect("ncclAllReduce");
        } else {
            r.comm.all_reduce(&send, &mut recv, &ReduceOp::Sum).expect("ncclAllReduce");
        }
    }
    group_end().expect("ncclGroupEnd");
}

fn sync(ranks: &[Rank]) {
    for r in ranks {
        r.stream.synchronize().expect("cuStreamSynchronize");
    }
}

/// Times one placement, then checks one run on defined data: (time s, cpu s, wrong; -1
/// when not checked).
fn measure(ranks: &mut [Rank], o: &Opts, count: usize, in_place: bool) -> (f64, f64, i64) {
    for _ in 0..o.warmup {
        launch(ranks, count, in_place);
    }
    sync(ranks);
    let start = Instant::now();
    for _ in 0..o.iters {
        launch(ranks, count, in_place);
    }
    let cpu = start.elapsed().as_secs_f64();
    sync(ranks);
    let time = start.elapsed().as_secs_f64();
    let per_iter = (time / f64::from(o.iters), cpu / f64::from(o.iters));
    if !o.check {
        return (per_iter.0, per_iter.1, -1);
    }
    let n = ranks.len();
    let value = |r: usize, i: usize| ((r * 7 + i * 3 + 1) % 5) as f32;
    // Each copy on its rank's stream, where the collective runs next; the host data kept until
    // the streams are synchronised (a copy from host memory may still read it until then).
    let hosts: Vec<Vec<f32>> = (0..n).map(|k| (0..count).map(|i| value(k, i)).collect()).collect();
    for (r, host) in ranks.iter_mut().zip(&hosts) {
        let dst = if in_place { &mut r.recv } else { &mut r.send };
        let mut view = dst.slice_mut(..count);
        r.stream.memcpy_htod(host, &mut view).expect("copy to device");
    }
    sync(ranks);
    drop(hosts);
    launch(ranks, count, in_place);
    sync(ranks);
    let mut wrong = 0;
    for r in ranks.iter() {
        let got = r.stream.clone_dtoh(&r.recv.slice(..count)).expect("copy to host");
        wrong +=
            got.iter().enumerate().filter(|(i, v)| **v != (0..n).map(|k| value(k, *i)).sum::<f32>()).count() as i64;
    }
    (per_iter.0, per_iter.1, wrong)
}

fn main() {
    // cudarc panics when it cannot load the CUDA driver: say it in one line instead.
    if let Err(e) = nccl_trampoline::cuda::Driver::load() {
        eprintln!("cudarc_allreduce_perf: needs NVIDIA GPUs and their driver: {e}");
        std::process::exit(1);
    }
    let o = opts();
    let streams: Vec<Arc<CudaStream>> = (0..o.gpus)
        .map(|i| CudaContext::new(i).and_then(|c| c.new_stream()).expect("a CUDA device and stream"))
        .collect();
    let comms = Comm::from_devices(streams.clone()).expect("ncclCommInitAll");
    let elems = o.max / 4;
    let mut ranks: Vec<Rank> = comms
        .into_iter()
        .zip(streams)
        .map(|(comm, stream)| {
            let send = stream.alloc_zeros::<f32>(elems).expect("cuMemAlloc");
            let recv = stream.alloc_zeros::<f32>(elems).expect("cuMemAlloc");
            Rank { comm, stream, send, recv }
        })
        .collect();
    let n = o.gpus as f64;
    let mut rows = Vec::new();
    let mut size = o.min;
    while size <= o.max {
        let count = size / 4;
        let mut cols = Vec::new();
        for in_place in [false, true] {
            let (t, cpu, wrong) = measure(&mut ranks, &o, count, in_place);
            let algbw = (count * 4) as f64 / 1e9 / t;
            cols.push(format!(
                "{{\"time_us\": {}, \"cpu_us\": {}, \"algbw\": {algbw}, \"busbw\": {}, \"wrong\": {wrong}}}",
                t * 1e6,
                cpu * 1e6,
                algbw * 2.0 * (n - 1.0) / n
            ));
        }
        rows.push(format!(
            "    {{\"size\": {}, \"count\": {count}, \"type\": \"float\", \"redop\": \"sum\", \"root\": -1, \"out_of_place\": {}, \"in_place\": {}}}",
            count * 4,
            cols[0],
            cols[1]
        ));
        size *= o.factor.max(2);
    }
    println!(
        "{{\n  \"tool\": \"cudarc 0.19\",\n  \"collective\": \"all_reduce\",\n  \"nranks\": {},\n  \"iters\": {},\n  \"warmup_iters\": {},\n  \"results\": [\n{}\n  ]\n}}",
        o.gpus,
        o.iters,
        o.warmup,
        rows.join(",\n")
    );
}
