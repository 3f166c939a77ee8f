//! Real GPUs, one process driving every local GPU (`ncclCommInitAll` + groups): every
//! collective, every data type NCCL has there x every reduction (sum, prod, max, min, avg,
//! PreMulSum), checked element by element against values computed on the host; send/recv both
//! ways round a ring; split into singletons; registration; ncclMemAlloc; finalize/destroy.
//!
//! Opt-in: runs only with NCCL_TRAMPOLINE_GPU_TESTS=1 (it says so when skipped). NCCL comes
//! from the discovery order (set NCCL_TRAMPOLINE_LIBRARY to pick a build), the CUDA runtime
//! from NCCL_TRAMPOLINE_CUDART or the loader. `scripts/gpu-test.sh` builds the binary; the
//! command that runs it on the GPU machine and its results are in docs/gpu-results.md.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::ffi::c_void;

use common::cuda::{Cuda, D2H, H2D};
use nccl_trampoline::nccl::{Communicator, DataType, Nccl, RedOp};

#[derive(Clone, Copy, Debug, PartialEq)]
enum El {
    I8,
    U8,
    I32,
    U32,
    I64,
    U64,
    F16,
    F32,
    F64,
    Bf16,
}

const ALL: [El; 10] = [El::I8, El::U8, El::I32, El::U32, El::I64, El::U64, El::F16, El::F32, El::F64, El::Bf16];

impl El {
    fn dtype(self) -> DataType {
        match self {
            El::I8 => DataType::INT8,
            El::U8 => DataType::UINT8,
            El::I32 => DataType::INT32,
            El::U32 => DataType::UINT32,
            El::I64 => DataType::INT64,
            El::U64 => DataType::UINT64,
            El::F16 => DataType::FLOAT16,
            El::F32 => DataType::FLOAT32,
            El::F64 => DataType::FLOAT64,
            El::Bf16 => DataType::BFLOAT16,
        }
    }
    fn size(self) -> usize {
        self.dtype().size().unwrap()
    }
    fn is_float(self) -> bool {
        matches!(self, El::F16 | El::F32 | El::F64 | El::Bf16)
    }
    /// The type's own rounding or wrapping of an exact value.
    fn fit(self, v: f64) -> f64 {
        match self {
            El::I8 => (v as i64) as i8 as f64,
            El::U8 => (v as i64) as u8 as f64,
            El::I32 => (v as i64) as i32 as f64,
            El::U32 => (v as i64) as u32 as f64,
            El::I64 | El::U64 => v.trunc(),
            El::F16 => half::f16::from_f64(v).to_f64(),
            El::Bf16 => half::bf16::from_f64(v).to_f64(),
            El::F32 => v as f32 as f64,
            El::F64 => v,
        }
    }
    fn encode(self, v: f64, out: &mut Vec<u8>) {
        match self {
            El::I8 => out.extend((v as i8).to_ne_bytes()),
            El::U8 => out.extend((v as u8).to_ne_bytes()),
            El::I32 => out.extend((v as i32).to_ne_bytes()),
            El::U32 => out.extend((v as u32).to_ne_bytes()),
            El::I64 => out.extend((v as i64).to_ne_bytes()),
            El::U64 => out.extend((v as u64).to_ne_bytes()),
            El::F16 => out.extend(half::f16::from_f64(v).to_bits().to_ne_bytes()),
            El::Bf16 => out.extend(half::bf16::from_f64(v).to_bits().to_ne_bytes()),
            El::F32 => out.extend((v as f32).to_ne_bytes()),
            El::F64 => out.extend(v.to_ne_bytes()),
        }
    }
    fn decode(self, b: &[u8]) -> f64 {
        match self {
            El::I8 => i8::from_ne_bytes([b[0]]) as f64,
            El::U8 => b[0] as f64,
            El::I32 => i32::from_ne_bytes(b[..4].try_into().unwrap()) as f64,
            El::U32 => u32::from_ne_bytes(b[..4].try_into().unwrap()) as f64,
            El::I64 => i64::from_ne_bytes(b[..8].try_into().unwrap()) as f64,
            El::U64 => u64::from_ne_bytes(b[..8].try_into().unwrap()) as f64,
            El::F16 => half::f16::from_bits(u16::from_ne_bytes(b[..2].try_into().unwrap())).to_f64(),
            El::Bf16 => half::bf16::from_bits(u16::from_ne_bytes(b[..2].try_into().unwrap())).to_f64(),
            El::F32 => f32::from_ne_bytes(b[..4].try_into().unwrap()) as f64,
            El::F64 => f64::from_ne_bytes(b[..8].try_into().unwrap()),
        }
    }
}

/// Value of element `k` on rank `r`: small positive integers, exact in every type.
fn value(r: usize, k: usize) -> f64 {
    (1 + (k + 3 * r) % 3) as f64
}

struct Rank<'n> {
    comm: Communicator<'n>,
    dev: i32,
    stream: *mut c_void,
    send: *mut c_void,
    recv: *mut c_void,
}

const COUNT: usize = 1023; // odd, not a multiple of anything convenient
const BUF: usize = COUNT * 8 * 8; // room for count * 8 ranks * 8 bytes

struct Report(Vec<(String, Result<(), String>)>);

impl Report {
    fn check(&mut self, case: String, got: Vec<f64>, want: Vec<f64>) {
        let r = match got.iter().zip(&want).position(|(g, w)| g != w) {
            None if got.len() == want.len() => Ok(()),
            None => Err(format!("{} elements, expected {}", got.len(), want.len())),
            Some(i) => Err(format!("element {i}: got {}, expected {}", got[i], want[i])),
        };
        if let Err(e) = &r {
            eprintln!("FAIL {case}: {e}");
        }
        self.0.push((case, r));
    }
}

fn upload(cuda: &Cuda, rank: &Rank, dst: *mut c_void, el: El, vals: &[f64]) {
    let mut bytes = Vec::new();
    for v in vals {
        el.encode(*v, &mut bytes);
    }
    cuda.set_device(rank.dev);
    cuda.memcpy(dst, bytes.as_ptr().cast(), bytes.len(), H2D);
}

fn download(cuda: &Cuda, rank: &Rank, src: *mut c_void, el: El, n: usize) -> Vec<f64> {
    let mut bytes = vec![0u8; n * el.size()];
    cuda.set_device(rank.dev);
    cuda.memcpy(bytes.as_mut_ptr().cast(), src, bytes.len(), D2H);
    bytes.chunks(el.size()).map(|c| el.decode(c)).collect()
}

fn sync_all(cuda: &Cuda, ranks: &[Rank]) {
    for r in ranks {
        cuda.set_device(r.dev);
        cuda.sync(r.stream);
    }
}

#[test]
fn gpu_every_collective_type_and_reduction_on_all_local_gpus() {
    if std::env::var("NCCL_TRAMPOLINE_GPU_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: GPU test; set NCCL_TRAMPOLINE_GPU_TESTS=1 on a machine with GPUs");
        return;
    }
    assert_eq!(std::env::var("NCCL_NVLS_ENABLE").as_deref(), Ok("0"), "keep NVLink multicast off: NCCL_NVLS_ENABLE=0");
    let nccl = Nccl::load().expect("load NCCL");
    let cuda = Cuda::load();
    let (drv, rt) = cuda.versions();
    let n = cuda.device_count() as usize;
    eprintln!("NCCL {} from {}; CUDA runtime {} ({}), driver API {}; {} GPUs", nccl.version(), nccl.path().display(), rt, cuda.path, drv, n);
    assert!(n >= 1);

    let devices: Vec<i32> = (0..n as i32).collect();
    let comms = Communicator::init_all(&nccl, &devices).expect("ncclCommInitAll");
    let ranks: Vec<Rank> = comms
        .into_iter()
        .zip(&devices)
        .map(|(comm, &dev)| {
            cuda.set_device(dev);
            Rank { comm, dev, stream: cuda.stream(), send: cuda.malloc(BUF), recv: cuda.malloc(BUF) }
        })
        .collect();
    let mut report = Report(Vec::new());
    for (i, r) in ranks.iter().enumerate() {
        assert_eq!((r.comm.count().unwrap(), r.comm.rank().unwrap(), r.comm.cu_device().unwrap()), (n as i32, i as i32, r.dev));
    }

    // All-reduce: every type x every reduction.
    let ops: [(&str, RedOp); 5] =
        [("sum", RedOp::SUM), ("prod", RedOp::PROD), ("max", RedOp::MAX), ("min", RedOp::MIN), ("avg", RedOp::AVG)];
    for el in ALL {
        for (name, op) in ops.iter().map(|(n, o)| (n.to_string(), Some(*o))).chain([("premulsum(2)".to_string(), None)]) {
            for (r, rank) in ranks.iter().enumerate() {
                upload(&cuda, rank, rank.send, el, &(0..COUNT).map(|k| value(r, k)).collect::<Vec<_>>());
            }
            // PreMulSum ops are per communicator; they live until the collective has run.
            let custom: Vec<_> = match op {
                Some(_) => Vec::new(),
                None => ranks.iter().map(|rank| pre_mul_sum_two(&rank.comm, el)).collect(),
            };
            let group = nccl.group().unwrap();
            for (i, rank) in ranks.iter().enumerate() {
                cuda.set_device(rank.dev);
                let op = op.unwrap_or_else(|| custom[i].1);
                // SAFETY: send/recv are BUF-byte device allocations of this rank's GPU, the
                // stream belongs to it, and both outlive the synchronisation below.
                unsafe { rank.comm.all_reduce_raw(rank.send, rank.recv, COUNT, el.dtype(), op, rank.stream) }.unwrap();
            }
            group.end().unwrap();
            sync_all(&cuda, &ranks);
            drop(custom);
            let want: Vec<f64> = (0..COUNT).map(|k| expected(el, &name, n, k)).collect();
            for (i, rank) in ranks.iter().enumerate() {
                report.check(format!("all_reduce {el:?} {name} rank {i}"), download(&cuda, rank, rank.recv, el, COUNT), want.clone());
            }
        }
    }

    eprintln!("all_reduce: {} cases checked", report.0.len());
    other_collectives(&nccl, &cuda, &ranks, &mut report);
    eprintln!("other collectives: {} cases checked", report.0.len());

    // Split into singletons: each child is a one-rank communicator.
    let parts: Vec<_> = ranks.iter().enumerate().map(|(i, r)| (&r.comm, i as i32, 0)).collect();
    let children: Vec<_> = nccl.split_all(&parts, None).expect("ncclCommSplit of every rank").into_iter().map(Option::unwrap).collect();
    for (i, c) in children.iter().enumerate() {
        let ok = c.count().unwrap() == 1 && c.rank().unwrap() == 0;
        report.0.push((format!("split singleton rank {i}"), if ok { Ok(()) } else { Err("count/rank".into()) }));
    }
    drop(children);

    // Registration and NCCL's allocator.
    for (i, r) in ranks.iter().enumerate() {
        cuda.set_device(r.dev);
        // SAFETY: r.send is a BUF-byte device allocation of this GPU, alive while registered.
        let reg = unsafe { r.comm.register(r.send, BUF) };
        report.0.push((format!("register/deregister rank {i}"), reg.map(drop).map_err(|e| e.to_string())));
        let mem = nccl.mem_alloc(1 << 20);
        report.0.push((format!("ncclMemAlloc/ncclMemFree on GPU {i}"), mem.map(drop).map_err(|e| e.to_string())));
        report.0.push((
            format!("async error query rank {i}"),
            match r.comm.async_error() {
                Ok(s) if s.is_success() => Ok(()),
                other => Err(format!("{other:?}")),
            },
        ));
    }

    for r in &ranks {
        cuda.set_device(r.dev);
        r.comm.finalize().unwrap();
    }
    let mut fin = Ok(());
    for r in ranks {
        cuda.set_device(r.dev);
        cuda.free(r.send);
        cuda.free(r.recv);
        if let Err(e) = r.comm.destroy() {
            fin = Err(e.to_string());
        }
    }
    report.0.push(("finalize + destroy every rank".into(), fin));

    let failed = report.0.iter().filter(|(_, r)| r.is_err()).count();
    println!("| case | result |\n| --- | --- |");
    for (case, r) in &report.0 {
        println!("| {case} | {} |", r.as_ref().map_or_else(|e| format!("FAIL: {e}"), |_| "pass".to_string()));
    }
    println!("{} passed, {} failed", report.0.len() - failed, failed);
    assert_eq!(failed, 0, "GPU cases failed (table above)");
}

/// What an all-reduce of `value(r, k)` over `n` ranks gives for element `k`.
fn expected(el: El, op: &str, n: usize, k: usize) -> f64 {
    let vals: Vec<f64> = (0..n).map(|r| value(r, k)).collect();
    let sum: f64 = vals.iter().sum();
    el.fit(match op {
        "sum" => sum,
        "prod" => vals.iter().product(),
        "max" => vals.iter().cloned().fold(f64::MIN, f64::max),
        "min" => vals.iter().cloned().fold(f64::MAX, f64::min),
        "avg" if el.is_float() => vals.iter().map(|v| el.fit(v / n as f64)).sum(),
        "avg" => (sum / n as f64).floor(),
        _ => 2.0 * sum,
    })
}

/// Two processes, one GPU each: rank 0 makes the id and serves it over the TCP rendezvous on
/// loopback, rank 1 fetches it; both `ncclCommInitRank`, then every type x every reduction and
/// send/recv both ways. The parent runs this test binary twice as the two ranks.
#[test]
fn gpu_two_processes_init_rank_with_tcp_rendezvous() {
    use nccl_trampoline::nccl::rendezvous;
    use std::time::Duration;
    if std::env::var("NCCL_TRAMPOLINE_GPU_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: GPU test; set NCCL_TRAMPOLINE_GPU_TESTS=1 on a machine with GPUs");
        return;
    }
    let Ok(rank) = std::env::var("NCCL_TRAMPOLINE_GPU_RANK") else {
        // Parent: pick a loopback port, start both ranks, wait for them.
        let cuda = Cuda::load();
        if cuda.device_count() < 2 {
            eprintln!("skipped: two-process test needs 2 GPUs");
            return;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..2)
            .map(|r| {
                std::process::Command::new(&exe)
                    .args(["--exact", "gpu_two_processes_init_rank_with_tcp_rendezvous", "--nocapture", "--test-threads=1"])
                    .env("NCCL_TRAMPOLINE_GPU_RANK", r.to_string())
                    .env("NCCL_TRAMPOLINE_GPU_ROOT", format!("127.0.0.1:{port}"))
                    .spawn()
                    .unwrap()
            })
            .collect();
        let deadline = std::time::Instant::now() + Duration::from_secs(180);
        for (r, mut c) in children.into_iter().enumerate() {
            let status = loop {
                if let Some(s) = c.try_wait().unwrap() {
                    break s;
                }
                if std::time::Instant::now() > deadline {
                    let _ = c.kill();
                    panic!("rank {r} did not finish in 180 s");
                }
                std::thread::sleep(Duration::from_millis(100));
            };
            assert!(status.success(), "rank {r} failed: {status}");
        }
        println!("two processes: both ranks passed");
        return;
    };
    let rank: usize = rank.parse().unwrap();
    let root: std::net::SocketAddr = std::env::var("NCCL_TRAMPOLINE_GPU_ROOT").unwrap().parse().unwrap();
    let n = 2;
    let nccl = Nccl::load().expect("load NCCL");
    let cuda = Cuda::load();
    cuda.set_device(rank as i32);
    let id = if rank == 0 {
        let id = nccl.unique_id().unwrap();
        let server = rendezvous::TcpRoot::bind(root).unwrap();
        server.serve(&id, n - 1, Duration::from_secs(60)).unwrap();
        id
    } else {
        rendezvous::fetch_tcp(root, Duration::from_secs(60)).unwrap()
    };
    let comm = Communicator::init_rank(&nccl, n as i32, &id, rank as i32).expect("ncclCommInitRank");
    assert_eq!((comm.count().unwrap(), comm.rank().unwrap()), (n as i32, rank as i32));
    let me = Rank { comm, dev: rank as i32, stream: cuda.stream(), send: cuda.malloc(BUF), recv: cuda.malloc(BUF) };
    let mut report = Report(Vec::new());
    let ops: [(&str, Option<RedOp>); 6] = [
        ("sum", Some(RedOp::SUM)),
        ("prod", Some(RedOp::PROD)),
        ("max", Some(RedOp::MAX)),
        ("min", Some(RedOp::MIN)),
        ("avg", Some(RedOp::AVG)),
        ("premulsum(2)", None),
    ];
    for el in ALL {
        for (name, op) in ops {
            upload(&cuda, &me, me.send, el, &(0..COUNT).map(|k| value(rank, k)).collect::<Vec<_>>());
            let custom = op.is_none().then(|| pre_mul_sum_two(&me.comm, el));
            let op = op.unwrap_or_else(|| custom.as_ref().unwrap().1);
            // SAFETY: BUF-byte device allocations of this GPU and its stream, alive past the sync.
            unsafe { me.comm.all_reduce_raw(me.send, me.recv, COUNT, el.dtype(), op, me.stream) }.unwrap();
            cuda.sync(me.stream);
            drop(custom);
            let want: Vec<f64> = (0..COUNT).map(|k| expected(el, name, n, k)).collect();
            report.check(format!("2-process all_reduce {el:?} {name} rank {rank}"), download(&cuda, &me, me.recv, el, COUNT), want);
        }
    }
    // Send/recv both directions: rank 0 -> 1, then 1 -> 0.
    for (from, to) in [(0usize, 1usize), (1, 0)] {
        let el = El::F32;
        if rank == from {
            upload(&cuda, &me, me.send, el, &(0..COUNT).map(|k| (from * 1000 + k) as f64).collect::<Vec<_>>());
            // SAFETY: as above.
            unsafe { me.comm.send_raw(me.send, COUNT, el.dtype(), to as i32, me.stream) }.unwrap();
            cuda.sync(me.stream);
        } else {
            // SAFETY: as above.
            unsafe { me.comm.recv_raw(me.recv, COUNT, el.dtype(), from as i32, me.stream) }.unwrap();
            cuda.sync(me.stream);
            let want: Vec<f64> = (0..COUNT).map(|k| (from * 1000 + k) as f64).collect();
            report.check(format!("2-process send/recv {from} -> {to}"), download(&cuda, &me, me.recv, el, COUNT), want);
        }
    }
    cuda.free(me.send);
    cuda.free(me.recv);
    me.comm.destroy().unwrap();
    let failed = report.0.iter().filter(|(_, r)| r.is_err()).count();
    for (case, r) in &report.0 {
        println!("| {case} | {} |", r.as_ref().map_or_else(|e| format!("FAIL: {e}"), |_| "pass".to_string()));
    }
    println!("rank {rank}: {} passed, {} failed", report.0.len() - failed, failed);
    assert_eq!(failed, 0);
}

/// A PreMulSum op with scalar 2 in the element type.
fn pre_mul_sum_two<'c, 'n>(comm: &'c Communicator<'n>, el: El) -> (nccl_trampoline::nccl::CustomRedOp<'c, 'n>, RedOp) {
    let op = match el {
        El::I8 => comm.create_pre_mul_sum(2i8),
        El::U8 => comm.create_pre_mul_sum(2u8),
        El::I32 => comm.create_pre_mul_sum(2i32),
        El::U32 => comm.create_pre_mul_sum(2u32),
        El::I64 => comm.create_pre_mul_sum(2i64),
        El::U64 => comm.create_pre_mul_sum(2u64),
        El::F32 => comm.create_pre_mul_sum(2f32),
        El::F64 => comm.create_pre_mul_sum(2f64),
        #[cfg(feature = "half")]
        El::F16 => comm.create_pre_mul_sum(half::f16::from_f32(2.0)),
        #[cfg(feature = "half")]
        El::Bf16 => comm.create_pre_mul_sum(half::bf16::from_f32(2.0)),
        #[cfg(not(feature = "half"))]
        El::F16 | El::Bf16 => panic!("PreMulSum on 16-bit floats needs --features half"),
    }
    .expect("ncclRedOpCreatePreMulSum");
    let id = op.op();
    (op, id)
}

fn other_collectives(nccl: &Nccl, cuda: &Cuda, ranks: &[Rank], report: &mut Report) {
    let n = ranks.len();
    let el = El::F32;
    let c = COUNT;
    let seg = |r: usize, len: usize| -> Vec<f64> { (0..len).map(|k| (r * 10_000 + k) as f64).collect() };
    let run = |f: &dyn Fn(usize, &Rank)| {
        let group = nccl.group().unwrap();
        for (i, r) in ranks.iter().enumerate() {
            cuda.set_device(r.dev);
            f(i, r);
        }
        group.end().unwrap();
        sync_all(cuda, ranks);
    };

    // Broadcast from root 0 into recv.
    for (i, r) in ranks.iter().enumerate() {
        upload(cuda, r, r.send, el, &seg(i, c));
    }
    // SAFETY (every closure below): buffers are BUF-byte device allocations of the rank's GPU
    // and counts stay within them; streams belong to the GPU; everything outlives the sync.
    run(&|_, r| unsafe { r.comm.broadcast_raw(r.send, r.recv, c, el.dtype(), 0, r.stream) }.unwrap());
    for (i, r) in ranks.iter().enumerate() {
        report.check(format!("broadcast f32 root 0 rank {i}"), download(cuda, r, r.recv, el, c), seg(0, c));
    }

    // Reduce (sum) to the last rank.
    let root = n - 1;
    run(&|_, r| unsafe { r.comm.reduce_raw(r.send, r.recv, c, el.dtype(), RedOp::SUM, root as i32, r.stream) }.unwrap());
    let want: Vec<f64> = (0..c).map(|k| (0..n).map(|r| seg(r, c)[k]).sum()).collect();
    report.check(format!("reduce f32 sum root {root}"), download(cuda, &ranks[root], ranks[root].recv, el, c), want);

    // All-gather: rank order concatenation.
    run(&|_, r| unsafe { r.comm.all_gather_raw(r.send, r.recv, c, el.dtype(), r.stream) }.unwrap());
    let want: Vec<f64> = (0..n).flat_map(|r| seg(r, c)).collect();
    for (i, r) in ranks.iter().enumerate() {
        report.check(format!("all_gather f32 rank {i}"), download(cuda, r, r.recv, el, n * c), want.clone());
    }

    // Reduce-scatter: send n*c, rank i gets the sum of segment i.
    for (i, r) in ranks.iter().enumerate() {
        upload(cuda, r, r.send, el, &seg(i, n * c));
    }
    run(&|_, r| unsafe { r.comm.reduce_scatter_raw(r.send, r.recv, c, el.dtype(), RedOp::SUM, r.stream) }.unwrap());
    for (i, r) in ranks.iter().enumerate() {
        let want: Vec<f64> = (0..c).map(|k| (0..n).map(|s| seg(s, n * c)[i * c + k]).sum()).collect();
        report.check(format!("reduce_scatter f32 sum rank {i}"), download(cuda, r, r.recv, el, c), want);
    }

    // All-to-all: rank i's segment j goes to rank j's segment i.
    if nccl.has("ncclAlltoAll") {
        run(&|_, r| unsafe { r.comm.all_to_all_raw(r.send, r.recv, c, el.dtype(), r.stream) }.unwrap());
        for (i, r) in ranks.iter().enumerate() {
            let want: Vec<f64> = (0..n).flat_map(|s| seg(s, n * c)[i * c..(i + 1) * c].to_vec()).collect();
            report.check(format!("all_to_all f32 rank {i}"), download(cuda, r, r.recv, el, n * c), want);
        }
        // Gather to root 0 and scatter from root 0.
        run(&|_, r| unsafe { r.comm.gather_raw(r.send, r.recv, c, el.dtype(), 0, r.stream) }.unwrap());
        let want: Vec<f64> = (0..n).flat_map(|s| seg(s, n * c)[..c].to_vec()).collect();
        report.check("gather f32 root 0".into(), download(cuda, &ranks[0], ranks[0].recv, el, n * c), want);
        run(&|_, r| unsafe { r.comm.scatter_raw(r.send, r.recv, c, el.dtype(), 0, r.stream) }.unwrap());
        for (i, r) in ranks.iter().enumerate() {
            report.check(format!("scatter f32 root 0 rank {i}"), download(cuda, r, r.recv, el, c), seg(0, n * c)[i * c..(i + 1) * c].to_vec());
        }
    } else {
        report.0.push(("all_to_all/gather/scatter".into(), Err(format!("NCCL {} lacks them (2.28.3)", nccl.version()))));
    }

    // Send/recv round the ring, both directions.
    if n > 1 {
        for (dir, step) in [("forward", 1usize), ("backward", n - 1)] {
            for (i, r) in ranks.iter().enumerate() {
                upload(cuda, r, r.send, el, &seg(i, c));
            }
            run(&|i, r| {
                let (to, from) = ((i + step) % n, (i + n - step) % n);
                unsafe {
                    r.comm.send_raw(r.send, c, el.dtype(), to as i32, r.stream).unwrap();
                    r.comm.recv_raw(r.recv, c, el.dtype(), from as i32, r.stream).unwrap();
                }
            });
            for (i, r) in ranks.iter().enumerate() {
                let from = (i + n - step) % n;
                report.check(format!("send/recv {dir} rank {i} <- {from}"), download(cuda, r, r.recv, el, c), seg(from, c));
            }
        }
    }
}
