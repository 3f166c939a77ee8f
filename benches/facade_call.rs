//! What the NCCL facade costs per call without a GPU: `Communicator::all_reduce_raw` and a
//! group of `send_raw` + `recv_raw` into `benches/c/noop_nccl.c`, a library with NCCL's
//! prototypes whose functions return at once, against a direct call of the same no-op
//! `ncclAllReduce` through a `black_box`ed fn pointer. What is left is the facade: its checks,
//! the communicator's call lock and state, the group bookkeeping and the call core.
//!
//! - `<bench binary> [ROUNDS]` (or `cargo bench --bench facade_call`): ROUNDS (7) rounds; in
//!   each, every variant runs 200000 calls in 8 chunks, each chunk followed by as many `direct`
//!   calls; prints, as medians over the rounds, the ns per call of both, the difference (what
//!   the facade adds) and the ratio, each paired within its round;
//! - `<bench binary> count VARIANT ITERATIONS` (VARIANT: `direct`, `direct_locked` (the direct
//!   call inside a lock of two compare-and-swaps: the floor of a lock per call), `all_reduce`,
//!   `all_reduce_safe`, `group_p2p`):
//!   exactly ITERATIONS calls, for callgrind: `(Ir(2N) - Ir(N)) / N` is one call (docs/perf.md).
//!
//! The no-op library is compiled with `cc` (or `$CC`) from `benches/c/noop_nccl.c` (under the
//! current folder, else the crate's) into Cargo's target temporary folder, or the system's
//! temporary folder where that is missing (a binary copied to another machine).

use core::ffi::c_void;
use std::hint::black_box;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use nccl_trampoline::nccl::{Communicator, DataType, DeviceBuffer, DeviceBufferMut, Nccl, RedOp, Stream};

type AllReduceFn = extern "C" fn(*const c_void, *mut c_void, usize, i32, i32, *mut c_void, *mut c_void) -> i32;

const ROUNDS: usize = 7;
const CALLS: usize = 200_000;
const CHUNKS: usize = 8;

/// Builds benches/c/noop_nccl.c as `libnccl.so.2` and returns its path.
fn build_noop() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let tmp = if tmp.is_dir() { tmp } else { std::env::temp_dir() };
    let dir = tmp.join(format!("noop-nccl-{}-{}", std::env::consts::ARCH, std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the no-op library's folder");
    let here = PathBuf::from("benches/c/noop_nccl.c");
    let src =
        if here.is_file() { here } else { PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/c/noop_nccl.c") };
    let lib = dir.join("libnccl.so.2");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{cc}`: {e} (set CC)"));
    assert!(out.status.success(), "{cc} failed on {}:\n{}", src.display(), String::from_utf8_lossy(&out.stderr));
    lib
}

/// A buffer the no-op library never reads: an address and a length, tracking nothing (the
/// cheapest buffer a caller can hand the safe forms).
struct Fake(usize);

// SAFETY: the no-op library reads no pointer.
unsafe impl DeviceBuffer<f32> for Fake {
    type Guard<'a> = ();

    fn device_ptr<'a>(&'a self, _: &'a dyn Stream) -> Result<(*const c_void, ()), nccl_trampoline::nccl::Error> {
        Ok((self.0 as *const c_void, ()))
    }

    fn len(&self) -> usize {
        1024
    }
}

// SAFETY: as above.
unsafe impl DeviceBufferMut<f32> for Fake {
    fn device_ptr_mut<'a>(&'a mut self, _: &'a dyn Stream) -> Result<(*mut c_void, ()), nccl_trampoline::nccl::Error> {
        Ok((self.0 as *mut c_void, ()))
    }
}

/// The legacy default stream (null), which the no-op library never uses.
struct NullStream;

// SAFETY: null is the legacy default stream.
unsafe impl Stream for NullStream {
    fn as_raw(&self) -> *mut c_void {
        core::ptr::null_mut()
    }
}

struct Bench {
    nccl: Nccl,
    comm: Communicator,
    /// The communicator's handle, read once (`as_raw` takes the call lock).
    handle: *mut c_void,
    direct: AllReduceFn,
    _lib: libloading::Library,
}

impl Bench {
    fn new() -> Bench {
        let path = build_noop();
        let nccl = Nccl::load_from(&path).expect("load the no-op library");
        let id = nccl.unique_id().expect("ncclGetUniqueId");
        let comm = Communicator::init_rank(&nccl, 1, &id, 0).expect("ncclCommInitRank");
        // SAFETY: the no-op library built above; its initialisers do nothing.
        let lib = unsafe { libloading::Library::new(&path) }.expect("open the no-op library");
        // SAFETY: ncclAllReduce has this prototype (benches/c/noop_nccl.c).
        let direct = unsafe { *lib.get::<AllReduceFn>(b"ncclAllReduce\0").expect("ncclAllReduce") };
        let handle = comm.as_raw();
        Bench { nccl, comm, handle, direct, _lib: lib }
    }

    #[inline(never)]
    fn direct(&self) {
        let f = black_box(self.direct);
        let r = f(
            black_box(0x1000 as *const c_void),
            black_box(0x2000 as *mut c_void),
            black_box(1024),
            black_box(DataType::FLOAT32.0),
            black_box(RedOp::SUM.0),
            black_box(self.handle),
            black_box(core::ptr::null_mut()),
        );
        assert_eq!(r, 0);
    }

    #[inline(never)]
    fn all_reduce(&self) {
        // SAFETY: the no-op library reads no pointer.
        unsafe {
            black_box(&self.comm).all_reduce_raw(
                black_box(0x1000 as *const c_void),
                black_box(0x2000 as *mut c_void),
                black_box(1024),
                black_box(DataType::FLOAT32),
                black_box(RedOp::SUM),
                black_box(core::ptr::null_mut()),
            )
        }
        .expect("ncclAllReduce");
    }

    /// `direct` inside the cheapest call lock there is (one compare-and-swap to take it, one to
    /// free it): the floor of any facade that takes a lock per call.
    #[inline(never)]
    fn direct_locked(&self) {
        use std::sync::atomic::{AtomicU32, Ordering};
        static LOCK: AtomicU32 = AtomicU32::new(0);
        while LOCK.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {}
        self.direct();
        let _ = LOCK.compare_exchange(1, 0, Ordering::Release, Ordering::Relaxed);
    }

    /// The safe form on typed buffers: the length, device and stream checks, then the same
    /// enqueue.
    #[inline(never)]
    fn all_reduce_safe(&self) {
        let (send, mut recv) = (Fake(0x1000), Fake(0x2000));
        black_box(&self.comm)
            .all_reduce(black_box(&send), black_box(&mut recv), black_box(RedOp::SUM), black_box(&NullStream))
            .expect("ncclAllReduce");
    }

    /// `ncclGroupStart`, a send and a receive, `ncclGroupEnd`: four NCCL calls.
    #[inline(never)]
    fn group_p2p(&self) {
        let group = black_box(&self.nccl).group().expect("ncclGroupStart");
        // SAFETY: the no-op library reads no pointer.
        unsafe {
            self.comm.send_raw(black_box(0x1000 as *const c_void), 1024, DataType::FLOAT32, 0, core::ptr::null_mut())
        }
        .expect("ncclSend");
        // SAFETY: as above.
        unsafe {
            self.comm.recv_raw(black_box(0x2000 as *mut c_void), 1024, DataType::FLOAT32, 0, core::ptr::null_mut())
        }
        .expect("ncclRecv");
        group.end().expect("ncclGroupEnd");
    }

    fn run(&self, variant: &str) -> fn(&Bench) {
        match variant {
            "direct" => Bench::direct,
            "direct_locked" => Bench::direct_locked,
            "all_reduce" => Bench::all_reduce,
            "all_reduce_safe" => Bench::all_reduce_safe,
            "group_p2p" => Bench::group_p2p,
            other => panic!("unknown variant {other} (direct, direct_locked, all_reduce, all_reduce_safe, group_p2p)"),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let bench = Bench::new();
    if let Some("count") = args.first().map(String::as_str) {
        let [_, variant, n] = &args[..] else { panic!("usage: count VARIANT ITERATIONS") };
        let f = bench.run(variant);
        for _ in 0..n.parse::<usize>().expect("ITERATIONS") {
            f(&bench);
        }
        return;
    }
    let rounds = args.first().map_or(ROUNDS, |r| r.parse().expect("ROUNDS"));
    let variants = ["direct_locked", "all_reduce", "all_reduce_safe", "group_p2p"];
    // Per round and variant: its time and that of the `direct` chunks interleaved with it.
    let mut rounds_of: Vec<Vec<(f64, f64)>> = vec![Vec::new(); variants.len()];
    let time = |f: fn(&Bench), calls: usize| {
        let t = Instant::now();
        for _ in 0..calls {
            f(&bench);
        }
        t.elapsed().as_nanos() as f64
    };
    for round in 0..=rounds {
        for (i, v) in variants.iter().enumerate() {
            let (mut d, mut x) = (0.0, 0.0);
            for _ in 0..CHUNKS {
                d += time(Bench::direct, CALLS / CHUNKS);
                x += time(bench.run(v), CALLS / CHUNKS);
            }
            if round > 0 {
                rounds_of[i].push((d / CALLS as f64, x / CALLS as f64));
            }
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "facade_call: median over {rounds} rounds of {CALLS} calls, each in {CHUNKS} chunks interleaved with as \
         many direct calls"
    );
    println!("  {:<16} {:>9} {:>9} {:>9} {:>7}", "variant", "direct ns", "ns", "added ns", "ratio");
    for (v, r) in variants.iter().zip(&rounds_of) {
        let direct = median(r.iter().map(|p| p.0).collect());
        let ns = median(r.iter().map(|p| p.1).collect());
        let added = median(r.iter().map(|p| p.1 - p.0).collect());
        let ratio = median(r.iter().map(|p| p.1 / p.0).collect());
        println!("  {v:<16} {direct:>9.2} {ns:>9.2} {added:>9.2} {ratio:>6.2}x");
    }
}
