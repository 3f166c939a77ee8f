//! The host time of enqueueing one NCCL all-reduce on a GPU, through the facade against a
//! direct call, and what a watchdog adds per operation (docs/perf.md). One GPU: two
//! communicators of one rank each on GPU 0, `plain` and `watched` (a watchdog started on it),
//! each with its own stream; 8 `float`s per operation.
//!
//! Variants, each timed in chunks of 256 enqueues interleaved with as many of its baseline, in
//! the order ABBA (the streams are synchronised before each chunk, untimed, so that no queue
//! backs up):
//!
//! - `control`: `direct` against itself: what the method reads where nothing differs;
//! - `raw`: `Communicator::all_reduce_raw` on `plain`, against `direct`: `ncclAllReduce` of
//!   the same library through a `black_box`ed fn pointer, on `plain`'s handle;
//! - `safe`: `Communicator::all_reduce` on typed buffers, against `direct`;
//! - `record`: `direct`, then one `cuEventRecord` on the stream, against `direct`: the floor of
//!   a watchdog that tracks every operation;
//! - `watchdog`: `all_reduce_raw` on `watched`, against `all_reduce_raw` on `plain`.
//!
//! `<bench binary> [ROUNDS]` (default 15) prints, per variant, the medians over the rounds of
//! both sides' ns per enqueue and of their difference. `NCCL_TRAMPOLINE_NCCL` picks the
//! library (a path), else discovery (`Nccl::load`). Without a GPU it says so and exits 0.

use core::ffi::c_void;
use std::hint::black_box;
use std::time::{Duration, Instant};

use nccl_trampoline::cuda::{DeviceStream, Driver, Event};
use nccl_trampoline::nccl::{
    Communicator, DataType, DeviceBuffer, DeviceBufferMut, Error, Nccl, RedOp, Stream, WatchdogConfig,
};

type AllReduceFn = extern "C" fn(*const c_void, *mut c_void, usize, i32, i32, *mut c_void, *mut c_void) -> i32;

const COUNT: usize = 8;
const CHUNK: usize = 256;
const CHUNKS: usize = 8;

/// Device memory of `COUNT` floats, tracking nothing.
struct Floats(*mut c_void);

// SAFETY: `COUNT` floats of GPU 0's memory, alive for the whole benchmark.
unsafe impl DeviceBuffer<f32> for Floats {
    type Guard<'a> = ();

    fn device_ptr<'a>(&'a self, _: &'a dyn Stream) -> Result<(*const c_void, ()), Error> {
        Ok((self.0, ()))
    }

    fn len(&self) -> usize {
        COUNT
    }
}

// SAFETY: as above.
unsafe impl DeviceBufferMut<f32> for Floats {
    fn device_ptr_mut<'a>(&'a mut self, _: &'a dyn Stream) -> Result<(*mut c_void, ()), Error> {
        Ok((self.0, ()))
    }
}

struct Side<'d> {
    comm: Communicator,
    stream: DeviceStream<'d>,
}

struct Bench<'d> {
    plain: Side<'d>,
    watched: Side<'d>,
    direct: AllReduceFn,
    handle: *mut c_void,
    event: Event<'d>,
    send: Floats,
    recv: Floats,
}

impl Bench<'_> {
    fn direct(&self) {
        let f = black_box(self.direct);
        let r = f(
            black_box(self.send.0),
            black_box(self.recv.0),
            black_box(COUNT),
            black_box(DataType::FLOAT32.0),
            black_box(RedOp::SUM.0),
            black_box(self.handle),
            black_box(self.plain.stream.raw()),
        );
        assert_eq!(r, 0, "ncclAllReduce");
    }

    fn raw(&self, side: &Side<'_>) {
        // SAFETY: `COUNT` floats each, on the communicator's GPU; the stream is that GPU's.
        unsafe {
            black_box(&side.comm).all_reduce_raw(
                black_box(self.send.0),
                black_box(self.recv.0),
                black_box(COUNT),
                black_box(DataType::FLOAT32),
                black_box(RedOp::SUM),
                black_box(side.stream.raw()),
            )
        }
        .expect("all_reduce_raw");
    }

    fn safe(&mut self) {
        let (plain, send, recv) = (&self.plain, &self.send, &mut self.recv);
        black_box(&plain.comm)
            .all_reduce(black_box(send), black_box(recv), black_box(RedOp::SUM), black_box(&plain.stream))
            .expect("all_reduce");
    }

    fn run(&mut self, variant: &str, baseline: bool) {
        match (variant, baseline) {
            ("control" | "raw" | "safe" | "record", true) | ("control", false) => self.direct(),
            ("record", false) => {
                self.direct();
                // SAFETY: a live event and stream of GPU 0.
                unsafe { self.event.record(self.plain.stream.raw()) }.expect("cuEventRecord");
            }
            ("raw", false) | ("watchdog", true) => self.raw(&self.plain),
            ("safe", false) => self.safe(),
            ("watchdog", false) => self.raw(&self.watched),
            _ => unreachable!("variant {variant}"),
        }
    }

    fn synchronize(&self) {
        self.plain.stream.synchronize().expect("cuStreamSynchronize");
        self.watched.stream.synchronize().expect("cuStreamSynchronize");
    }

    /// One chunk of `variant` (or its baseline): ns for `CHUNK` enqueues.
    fn chunk(&mut self, variant: &str, baseline: bool) -> f64 {
        self.synchronize();
        let t = Instant::now();
        for _ in 0..CHUNK {
            self.run(variant, baseline);
        }
        t.elapsed().as_nanos() as f64
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args().skip(1).find(|a| a != "--bench").map_or(15, |r| r.parse().expect("ROUNDS"));
    let driver = match Driver::load().and_then(|d| d.device_count().map(|n| (d, n))) {
        Ok((d, n)) if n > 0 => d,
        _ => {
            println!("gpu_enqueue: skip (no CUDA driver or no GPU)");
            return;
        }
    };
    driver.activate(0).expect("GPU 0");
    let nccl = match std::env::var_os("NCCL_TRAMPOLINE_NCCL") {
        Some(path) => Nccl::load_from(path),
        None => Nccl::load(),
    }
    .expect("load NCCL");
    let side = |driver: &'static Driver| {
        let id = nccl.unique_id().expect("ncclGetUniqueId");
        let comm = Communicator::init_rank(&nccl, 1, &id, 0).expect("ncclCommInitRank");
        Side { comm, stream: driver.stream().expect("a stream") }
    };
    let driver: &'static Driver = Box::leak(Box::new(driver));
    let (plain, watched) = (side(driver), side(driver));
    watched.comm.start_watchdog(WatchdogConfig::new(Duration::from_secs(60))).expect("start_watchdog");
    let memory = nccl.mem_alloc(2 * COUNT * 4).expect("ncclMemAlloc");
    let base = memory.as_ptr();
    // SAFETY: the library the communicators use; ncclAllReduce has this prototype.
    let lib = unsafe { libloading::Library::new(nccl.path()) }.expect("open NCCL");
    // SAFETY: as above.
    let direct = unsafe { *lib.get::<AllReduceFn>(b"ncclAllReduce\0").expect("ncclAllReduce") };
    let handle = plain.comm.as_raw();
    let mut bench = Bench {
        plain,
        watched,
        direct,
        handle,
        event: driver.event().expect("an event"),
        send: Floats(base),
        // SAFETY: inside the allocation of 2 * COUNT floats.
        recv: Floats(unsafe { base.cast::<u8>().add(COUNT * 4) }.cast()),
    };
    println!(
        "gpu_enqueue: NCCL {} ({}), {COUNT} floats, median over {rounds} rounds of {CHUNKS} chunks of {CHUNK} \
         enqueues each, interleaved with as many of the baseline",
        nccl.version(),
        nccl.path().display()
    );
    println!("  {:<9} {:<16} {:>12} {:>9} {:>9}", "variant", "baseline", "baseline ns", "ns", "added ns");
    let variants = [
        ("control", "direct"),
        ("raw", "direct"),
        ("safe", "direct"),
        ("record", "direct"),
        ("watchdog", "raw, no watchdog"),
    ];
    for (variant, baseline) in variants {
        let mut pairs = Vec::new();
        for round in 0..=rounds {
            let (mut b, mut x) = (0.0, 0.0);
            for chunk in 0..CHUNKS {
                if chunk % 2 == 0 {
                    b += bench.chunk(variant, true);
                    x += bench.chunk(variant, false);
                } else {
                    x += bench.chunk(variant, false);
                    b += bench.chunk(variant, true);
                }
            }
            if round > 0 {
                let n = (CHUNK * CHUNKS) as f64;
                pairs.push((b / n, x / n));
            }
        }
        println!(
            "  {variant:<9} {baseline:<16} {:>12.1} {:>9.1} {:>9.1}",
            median(pairs.iter().map(|p| p.0).collect()),
            median(pairs.iter().map(|p| p.1).collect()),
            median(pairs.iter().map(|p| p.1 - p.0).collect()),
        );
    }
    bench.synchronize();
    drop(lib);
}
