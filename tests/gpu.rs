//! Real GPUs. One process driving every local GPU (`ncclCommInitAll` + groups), and two
//! processes with one GPU each (`ncclCommInitRank`, the id over the TCP rendezvous): every
//! collective x every data type (int8 ... float64, float16, bfloat16) x, for the reducing ones,
//! every reduction (sum, prod, max, min, avg, PreMulSum), checked element by element against
//! values computed on the host; send/recv both ways round the ring; then split into
//! singletons, registration, ncclMemAlloc, async error, finalize/destroy. And the race of a
//! large pageable upload with a launch on a non-blocking stream, many rounds, element by
//! element. On one GPU the two-process test says it is skipped: the same command runs on
//! every machine.
//!
//! Opt-in: every test is `#[ignore]`d (a plain `cargo test` lists them as ignored, with what
//! they need); on a machine with GPUs run them with
//! `cargo test --release --features half --test gpu -- --ignored --test-threads=1`
//! (the README's "On a GPU machine"). NCCL comes from the discovery order (set
//! NCCL_TRAMPOLINE_LIBRARY to pick a build), the CUDA driver through the library's loader
//! (`nccl_trampoline::cuda`). NVLink SHARP stays off unless NCCL_NVLS_ENABLE says otherwise.
//! `scripts/gpu-test.sh` builds the binary for a GPU machine without Rust; the command that
//! runs it there and its results are in docs/gpu-results.md.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use nccl_trampoline::cuda::{DeviceMemory, DeviceStream, Driver as Cuda};
use nccl_trampoline::nccl::{Communicator, CustomRedOp, DataType, Nccl, RedOp};

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

struct Rank<'d> {
    comm: Communicator,
    dev: i32,
    stream: DeviceStream<'d>,
    send: DeviceMemory<'d>,
    recv: DeviceMemory<'d>,
}

impl<'d> Rank<'d> {
    /// Device `dev`'s buffers and stream, made on its primary context.
    fn new(cuda: &'d Cuda, comm: Communicator, dev: i32) -> Self {
        cuda.activate(dev).expect("activate the GPU");
        let stream = cuda.stream().expect("cuStreamCreate");
        let (send, recv) = (cuda.alloc(BUF).expect("cuMemAlloc"), cuda.alloc(BUF).expect("cuMemAlloc"));
        Rank { comm, dev, stream, send, recv }
    }
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

fn upload(cuda: &Cuda, rank: &Rank, el: El, vals: &[f64]) {
    let mut bytes = Vec::new();
    for v in vals {
        el.encode(*v, &mut bytes);
    }
    cuda.activate(rank.dev).unwrap();
    // On the rank's stream, where its collective runs next (src/cuda/mod.rs, "What is synchronous").
    rank.send.upload_on(&rank.stream, &bytes).expect("cuMemcpyHtoDAsync");
}

fn download(cuda: &Cuda, rank: &Rank, el: El, n: usize) -> Vec<f64> {
    let mut bytes = vec![0u8; n * el.size()];
    cuda.activate(rank.dev).unwrap();
    rank.recv.download_on(&rank.stream, &mut bytes).expect("cuMemcpyDtoHAsync");
    bytes.chunks(el.size()).map(|c| el.decode(c)).collect()
}

/// NVLink SHARP (NVLS, CUDA multicast) off unless `NCCL_NVLS_ENABLE` is set: these tests are
/// about the collectives, not NVLS, and on a shared host a multicast fault can take every GPU
/// out of service. Set the variable yourself to choose. Before NCCL is loaded: NCCL reads it
/// at its first communicator.
fn nvls_off_unless_chosen() {
    match std::env::var("NCCL_NVLS_ENABLE") {
        Ok(v) => eprintln!("NCCL_NVLS_ENABLE={v} (as set)"),
        Err(_) => {
            std::env::set_var("NCCL_NVLS_ENABLE", "0");
            eprintln!("NCCL_NVLS_ENABLE=0 (unset: NVLink SHARP stays off; set it to choose)");
        }
    }
}

#[test]
#[ignore = "needs GPUs: cargo test --release --features half --test gpu -- --ignored --test-threads=1"]
fn gpu_every_collective_type_and_reduction_on_all_local_gpus() {
    nvls_off_unless_chosen();
    let nccl = Nccl::load().unwrap_or_else(|e| panic!("{e}"));
    let cuda = Cuda::load().unwrap_or_else(|e| panic!("these tests need GPUs: {e}"));
    let n = cuda.device_count().unwrap() as usize;
    eprintln!(
        "NCCL {} from {}; CUDA driver {} ({}); {} GPUs",
        nccl.version(),
        nccl.path().display(),
        cuda.version().unwrap(),
        cuda.path().display(),
        n
    );
    assert!(n >= 1);

    let devices: Vec<i32> = (0..n as i32).collect();
    let comms = Communicator::init_all(&nccl, &devices).expect("ncclCommInitAll");
    let ranks: Vec<Rank> = comms.into_iter().zip(&devices).map(|(comm, &dev)| Rank::new(&cuda, comm, dev)).collect();
    let mut report = Report(Vec::new());
    for (i, r) in ranks.iter().enumerate() {
        assert_eq!(
            (r.comm.count().unwrap(), r.comm.rank().unwrap(), r.comm.cu_device().unwrap()),
            (n as i32, i as i32, r.dev)
        );
    }

    let local: Vec<(usize, &Rank)> = ranks.iter().enumerate().collect();
    matrix(&nccl, &cuda, &local, n, &mut report);

    // Split into singletons: each child is a one-rank communicator.
    let parts: Vec<_> = ranks.iter().enumerate().map(|(i, r)| (&r.comm, i as i32, 0)).collect();
    let children: Vec<_> =
        nccl.split_all(&parts, None).expect("ncclCommSplit of every rank").into_iter().map(Option::unwrap).collect();
    for (i, c) in children.iter().enumerate() {
        let ok = c.count().unwrap() == 1 && c.rank().unwrap() == 0;
        report.0.push((format!("split singleton rank {i}"), if ok { Ok(()) } else { Err("count/rank".into()) }));
    }
    drop(children);

    // Registration and NCCL's allocator.
    for (i, r) in ranks.iter().enumerate() {
        cuda.activate(r.dev).unwrap();
        // SAFETY: r.send is a BUF-byte device allocation of this GPU, alive while registered.
        let reg = unsafe { r.comm.register(r.send.ptr(), BUF) };
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
        cuda.activate(r.dev).unwrap();
        r.comm.finalize().unwrap();
    }
    let mut fin = Ok(());
    for r in ranks {
        cuda.activate(r.dev).unwrap();
        let Rank { comm, send, recv, stream, .. } = r;
        drop((send, recv, stream));
        if let Err(e) = comm.destroy() {
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

/// What reducing `vals` (one per rank) with `op` gives, in the element type's arithmetic.
fn combine(el: El, op: &str, vals: &[f64]) -> f64 {
    let n = vals.len() as f64;
    let sum: f64 = vals.iter().sum();
    el.fit(match op {
        "sum" => sum,
        "prod" => vals.iter().product(),
        "max" => vals.iter().cloned().fold(f64::MIN, f64::max),
        "min" => vals.iter().cloned().fold(f64::MAX, f64::min),
        "avg" if el.is_float() => vals.iter().map(|v| el.fit(v / n)).sum(),
        "avg" => (sum / n).floor(),
        _ => 2.0 * sum,
    })
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Coll {
    AllReduce,
    Reduce,
    ReduceScatter,
    Broadcast,
    AllGather,
    AllToAll,
    Gather,
    Scatter,
    SendRecvForward,
    SendRecvBackward,
}

const REDUCING: [Coll; 3] = [Coll::AllReduce, Coll::Reduce, Coll::ReduceScatter];
const MOVING: [Coll; 7] = [
    Coll::Broadcast,
    Coll::AllGather,
    Coll::AllToAll,
    Coll::Gather,
    Coll::Scatter,
    Coll::SendRecvForward,
    Coll::SendRecvBackward,
];
const OPS: [&str; 6] = ["sum", "prod", "max", "min", "avg", "premulsum(2)"];

/// Every collective x every type x (for the reducing ones) every reduction, for the ranks of
/// `local` (global rank, rank) out of `n`; one group per case.
fn matrix(nccl: &Nccl, cuda: &Cuda, local: &[(usize, &Rank)], n: usize, report: &mut Report) {
    let before = report.0.len();
    for el in ALL {
        for coll in REDUCING {
            for op in OPS {
                run_case(nccl, cuda, local, n, coll, el, op, report);
            }
        }
        for coll in MOVING {
            let p2p = matches!(coll, Coll::SendRecvForward | Coll::SendRecvBackward);
            let new = matches!(coll, Coll::AllToAll | Coll::Gather | Coll::Scatter);
            if (p2p && n < 2) || (new && !nccl.has("ncclAlltoAll")) {
                continue;
            }
            run_case(nccl, cuda, local, n, coll, el, "-", report);
        }
    }
    eprintln!("collective matrix: {} cases checked", report.0.len() - before);
}

#[allow(clippy::too_many_arguments)]
fn run_case(
    nccl: &Nccl,
    cuda: &Cuda,
    local: &[(usize, &Rank)],
    n: usize,
    coll: Coll,
    el: El,
    op: &str,
    report: &mut Report,
) {
    let c = COUNT;
    let send_len = if matches!(coll, Coll::ReduceScatter | Coll::AllToAll | Coll::Scatter) { n * c } else { c };
    for (r, rank) in local {
        upload(cuda, rank, el, &(0..send_len).map(|j| value(*r, j)).collect::<Vec<_>>());
    }
    // PreMulSum ops are per communicator; they live until the collective has run.
    let custom: Vec<_> = if op.starts_with("premulsum") {
        local.iter().map(|(_, rank)| Some(pre_mul_sum_two(&rank.comm, el))).collect()
    } else {
        local.iter().map(|_| None).collect()
    };
    let named = match op {
        "sum" => RedOp::SUM,
        "prod" => RedOp::PROD,
        "max" => RedOp::MAX,
        "min" => RedOp::MIN,
        "avg" => RedOp::AVG,
        _ => RedOp::SUM,
    };
    let root = if coll == Coll::Reduce { n - 1 } else { 0 };
    let step = if coll == Coll::SendRecvBackward { n - 1 } else { 1 };
    let dt = el.dtype();
    {
        let group = nccl.group().unwrap();
        for (i, (r, x)) in local.iter().enumerate() {
            let r = *r;
            let redop = custom[i].as_ref().map_or(named, |(_, id)| *id);
            cuda.activate(x.dev).unwrap();
            let comm = &x.comm;
            let (send, recv, stream) = (x.send.ptr(), x.recv.ptr(), x.stream.raw());
            // SAFETY: send/recv are BUF-byte device allocations of this rank's GPU (room for
            // n * COUNT elements of 8 bytes, n <= 8), the stream is this GPU's, and both
            // outlive the synchronisation below.
            let result = unsafe {
                match coll {
                    Coll::AllReduce => comm.all_reduce_raw(send, recv, c, dt, redop, stream),
                    Coll::Reduce => comm.reduce_raw(send, recv, c, dt, redop, root as i32, stream),
                    Coll::ReduceScatter => comm.reduce_scatter_raw(send, recv, c, dt, redop, stream),
                    Coll::Broadcast => comm.broadcast_raw(send, recv, c, dt, 0, stream),
                    Coll::AllGather => comm.all_gather_raw(send, recv, c, dt, stream),
                    Coll::AllToAll => comm.all_to_all_raw(send, recv, c, dt, stream),
                    Coll::Gather => comm.gather_raw(send, recv, c, dt, 0, stream),
                    Coll::Scatter => comm.scatter_raw(send, recv, c, dt, 0, stream),
                    Coll::SendRecvForward | Coll::SendRecvBackward => comm
                        .send_raw(send, c, dt, ((r + step) % n) as i32, stream)
                        .and_then(|_| comm.recv_raw(recv, c, dt, ((r + n - step) % n) as i32, stream)),
                }
            };
            result.unwrap_or_else(|e| panic!("{coll:?} {el:?} {op}: {e}"));
        }
        group.end().unwrap_or_else(|e| panic!("ncclGroupEnd for {coll:?} {el:?} {op}: {e}"));
    }
    for (_, x) in local {
        cuda.activate(x.dev).unwrap();
        x.stream.synchronize().expect("cuStreamSynchronize");
    }
    drop(custom);
    for (r, x) in local {
        let r = *r;
        let column = |j: usize| -> Vec<f64> { (0..n).map(|s| value(s, j)).collect() };
        let want: Option<Vec<f64>> = match coll {
            Coll::AllReduce => Some((0..c).map(|k| combine(el, op, &column(k))).collect()),
            Coll::Reduce => (r == root).then(|| (0..c).map(|k| combine(el, op, &column(k))).collect()),
            Coll::ReduceScatter => Some((0..c).map(|k| combine(el, op, &column(r * c + k))).collect()),
            Coll::Broadcast => Some((0..c).map(|k| value(0, k)).collect()),
            Coll::AllGather => Some((0..n).flat_map(|s| (0..c).map(move |k| value(s, k))).collect()),
            Coll::AllToAll => Some((0..n).flat_map(|s| (0..c).map(move |k| value(s, r * c + k))).collect()),
            Coll::Gather => (r == 0).then(|| (0..n).flat_map(|s| (0..c).map(move |k| value(s, k))).collect()),
            Coll::Scatter => Some((0..c).map(|k| value(0, r * c + k)).collect()),
            Coll::SendRecvForward | Coll::SendRecvBackward => {
                let from = (r + n - step) % n;
                Some((0..c).map(|k| value(from, k)).collect())
            }
        };
        if let Some(want) = want {
            let got = download(cuda, x, el, want.len());
            let name =
                if op == "-" { format!("{coll:?} {el:?} rank {r}") } else { format!("{coll:?} {el:?} {op} rank {r}") };
            report.check(name, got, want);
        }
    }
}

/// Two processes, one GPU each: rank 0 makes the id and serves it over the TCP rendezvous on
/// loopback, rank 1 fetches it; both `ncclCommInitRank`, then every type x every reduction and
/// send/recv both ways. The parent runs this test binary twice as the two ranks.
#[test]
#[ignore = "needs 2 GPUs (says it is skipped on one): cargo test --release --features half --test gpu -- --ignored --test-threads=1"]
fn gpu_two_processes_init_rank_with_tcp_rendezvous() {
    use nccl_trampoline::launch::rendezvous;
    use std::time::Duration;
    nvls_off_unless_chosen();
    let Ok(rank) = std::env::var("NCCL_TRAMPOLINE_GPU_RANK") else {
        // Parent: pick a loopback port, start both ranks, wait for them.
        let cuda = Cuda::load().unwrap_or_else(|e| panic!("these tests need GPUs: {e}"));
        let gpus = cuda.device_count().unwrap();
        if gpus < 2 {
            // The same command on every machine: one GPU cannot hold two ranks (NCCL refuses
            // two ranks of one communicator on one GPU).
            println!(
                "gpu_two_processes_init_rank_with_tcp_rendezvous: skipped: two processes need 2 GPUs, {gpus} visible"
            );
            return;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let secret = rendezvous::RendezvousKey::random_secret().unwrap();
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..2)
            .map(|r| {
                std::process::Command::new(&exe)
                    .args([
                        "--exact",
                        "gpu_two_processes_init_rank_with_tcp_rendezvous",
                        "--ignored",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env("NCCL_TRAMPOLINE_GPU_RANK", r.to_string())
                    .env("NCCL_TRAMPOLINE_GPU_ROOT", format!("127.0.0.1:{port}"))
                    .env("NCCL_TRAMPOLINE_GPU_SECRET", &secret)
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
    let nccl = Nccl::load().unwrap_or_else(|e| panic!("{e}"));
    let cuda = Cuda::load().unwrap_or_else(|e| panic!("these tests need GPUs: {e}"));
    cuda.activate(rank as i32).unwrap();
    let key = rendezvous::RendezvousKey::from_secret(std::env::var("NCCL_TRAMPOLINE_GPU_SECRET").unwrap().as_bytes());
    let id = if rank == 0 {
        let id = nccl.unique_id().unwrap();
        let server = rendezvous::TcpRoot::bind(root, key).unwrap();
        server.serve(&id, 1..n as u32, Duration::from_secs(60)).unwrap();
        id
    } else {
        rendezvous::fetch_tcp(root, &key, rank as u32, Duration::from_secs(60)).unwrap()
    };
    let comm = Communicator::init_rank(&nccl, n as i32, &id, rank as i32).expect("ncclCommInitRank");
    assert_eq!((comm.count().unwrap(), comm.rank().unwrap()), (n as i32, rank as i32));
    let me = Rank::new(&cuda, comm, rank as i32);
    let mut report = Report(Vec::new());
    matrix(&nccl, &cuda, &[(rank, &me)], n, &mut report);
    let Rank { comm, send, recv, stream, .. } = me;
    drop((send, recv, stream));
    comm.destroy().unwrap();
    let failed = report.0.iter().filter(|(_, r)| r.is_err()).count();
    for (case, r) in &report.0 {
        println!("| {case} | {} |", r.as_ref().map_or_else(|e| format!("FAIL: {e}"), |_| "pass".to_string()));
    }
    println!("rank {rank}: {} passed, {} failed", report.0.len() - failed, failed);
    assert_eq!(failed, 0);
}

/// A PreMulSum op with scalar 2 in the element type.
fn pre_mul_sum_two(comm: &Communicator, el: El) -> (CustomRedOp<'_>, RedOp) {
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

// ---- The rest of the host API (part A) on a real GPU ---------------------------------------------------------

/// What the loaded NCCL has of part A, exercised on GPU 0 (one rank), and what it lacks refused
/// with the typed error naming the version it needs. On NCCL 2.28.x: ncclGroupSimulateEnd and
/// ncclCommInitRankScalable run; grow, properties, suspend/resume/memory statistics, the
/// parameters and encryption are `Error::Unsupported`. On a newer NCCL the newer calls run too
/// (grow needs more ranks than one GPU gives: only its id is made).
#[test]
#[ignore = "needs a GPU: cargo test --release --features half --test gpu -- --ignored --test-threads=1"]
fn gpu_host_api_part_a_runs_or_is_refused_by_version() {
    use nccl_trampoline::nccl::Error;
    use nccl_trampoline::nccl::{CommOptions, Encryption, MemStat, SuspendFlags, Version};
    nvls_off_unless_chosen();
    let nccl = Nccl::load().unwrap_or_else(|e| panic!("{e}"));
    let cuda = Cuda::load().unwrap_or_else(|e| panic!("this test needs a GPU: {e}"));
    let v = nccl.version();
    eprintln!("NCCL {v} from {}", nccl.path().display());
    let has = |since: (u32, u32, u32)| v >= Version::new(since.0, since.1, since.2);
    let refused = |r: Result<(), Error>, symbol: &'static str, needs: &str| {
        let n: Vec<u32> = needs.split('.').map(|p| p.parse().unwrap()).collect();
        let needs_version = Version::new(n[0], n[1], n[2]);
        assert_eq!(r.unwrap_err(), Error::Unsupported { symbol, needs: needs_version, loaded: v });
        eprintln!("  {symbol}: refused (needs {needs})");
    };
    cuda.activate(0).expect("activate GPU 0");

    // ncclCommInitRankScalable (2.23.4): a one-rank communicator (one id: at most one per rank).
    let ids = [nccl.unique_id().unwrap()];
    let made = Communicator::init_rank_scalable(&nccl, 1, 0, &ids, &CommOptions::new());
    let comm = if has((2, 23, 4)) {
        let c = made.expect("ncclCommInitRankScalable");
        assert_eq!((c.count().unwrap(), c.rank().unwrap()), (1, 0));
        eprintln!("  ncclCommInitRankScalable: ok");
        c
    } else {
        refused(made.map(drop), "ncclCommInitRankScalable", "2.23.4");
        Communicator::init_rank(&nccl, 1, &nccl.unique_id().unwrap(), 0).expect("ncclCommInitRank")
    };

    // ncclGroupSimulateEnd (2.22.3): all-reduces planned, not launched; NCCL's estimate. Over
    // two GPUs when there are two (one rank copies at enqueue time and leaves nothing to plan).
    let n = cuda.device_count().unwrap().min(2);
    let devices: Vec<i32> = (0..n).collect();
    let sim_comms = Communicator::init_all(&nccl, &devices).expect("ncclCommInitAll");
    let mut streams = Vec::new();
    let mut bufs = Vec::new();
    for &d in &devices {
        cuda.activate(d).expect("activate the GPU");
        streams.push(cuda.stream().expect("cuStreamCreate"));
        bufs.push(cuda.alloc(1 << 20).expect("cuMemAlloc"));
    }
    let group = nccl.group().unwrap();
    for ((c, buf), stream) in sim_comms.iter().zip(&bufs).zip(&streams) {
        // SAFETY: a device buffer of 1 MiB (256 Ki floats) and a stream of the comm's device.
        unsafe { c.all_reduce_raw(buf.ptr(), buf.ptr(), 1 << 18, DataType::FLOAT32, RedOp::SUM, stream.raw()) }
            .expect("ncclAllReduce in the group");
    }
    let sim = group.simulate_end();
    if has((2, 22, 3)) {
        let t = sim.expect("ncclGroupSimulateEnd").estimated_time_us;
        if n >= 2 {
            assert!(t.is_some_and(|t| t > 0.0), "an estimate for a 1 MiB all-reduce on 2 GPUs: {t:?}");
        }
        eprintln!("  ncclGroupSimulateEnd: ok, {t:?} us for a 1 MiB all-reduce over {n} GPU(s)");
    } else {
        refused(sim.map(drop), "ncclGroupSimulateEnd", "2.22.3");
    }
    for s in &streams {
        s.synchronize().unwrap();
    }
    drop(bufs);
    drop(streams);
    for c in sim_comms {
        c.destroy().unwrap();
    }
    cuda.activate(0).expect("activate GPU 0");

    // 2.29.2: the grow id and the properties.
    if has((2, 29, 2)) {
        comm.grow_unique_id().expect("ncclCommGetUniqueId");
        let p = comm.properties().expect("ncclCommQueryProperties");
        assert_eq!((p.rank, p.nranks, p.cuda_device), (0, 1, 0));
        eprintln!("  ncclCommGetUniqueId, ncclCommQueryProperties: ok ({p:?})");
    } else {
        refused(comm.grow_unique_id().map(drop), "ncclCommGetUniqueId", "2.29.2");
        refused(comm.grow(2, None, &CommOptions::new()).map(drop), "ncclCommGrow", "2.29.2");
        refused(comm.properties().map(drop), "ncclCommQueryProperties", "2.29.2");
    }
    // 2.29.7: suspend, resume, memory statistics.
    if has((2, 29, 7)) {
        let total = comm.mem_stat(MemStat::GPU_MEM_TOTAL).expect("ncclCommMemStats");
        comm.suspend(SuspendFlags::MEMORY).expect("ncclCommSuspend");
        assert_eq!(comm.mem_stat(MemStat::GPU_MEM_SUSPENDED).unwrap(), 1);
        comm.resume().expect("ncclCommResume");
        assert_eq!(comm.mem_stat(MemStat::GPU_MEM_SUSPENDED).unwrap(), 0);
        eprintln!("  ncclCommSuspend/Resume/MemStats: ok ({total} bytes tracked)");
    } else {
        refused(comm.suspend(SuspendFlags::MEMORY), "ncclCommSuspend", "2.29.7");
        refused(comm.resume(), "ncclCommResume", "2.29.7");
        refused(comm.mem_stat(MemStat::GPU_MEM_TOTAL).map(drop), "ncclCommMemStats", "2.29.7");
    }
    // 2.30.4: the runtime parameters.
    if has((2, 30, 4)) {
        let keys = nccl.param_keys().expect("ncclParamGetAllParameterKeys");
        assert!(keys.iter().any(|k| k == "NCCL_DEBUG"), "{keys:?}");
        eprintln!("  ncclParam*: ok, NCCL_DEBUG = {}", nccl.param_string("NCCL_DEBUG").unwrap());
    } else {
        refused(nccl.param("NCCL_DEBUG").map(drop), "ncclParamBind", "2.30.4");
        refused(nccl.param_string("NCCL_DEBUG").map(drop), "ncclParamGetParameter", "2.30.4");
        refused(nccl.param_keys().map(drop), "ncclParamGetAllParameterKeys", "2.30.4");
        refused(nccl.dump_params(), "ncclParamDumpAll", "2.30.4");
    }
    // 2.32.3: encryption (plaintext asked: nothing changes for this process's other tests).
    if has((2, 32, 3)) {
        nccl.set_encryption(&Encryption::None).expect("ncclSetEncryption");
        eprintln!("  ncclSetEncryption: ok");
    } else {
        refused(nccl.set_encryption(&Encryption::None), "ncclSetEncryption", "2.32.3");
    }
    comm.destroy().unwrap();
}

/// The device-API host helpers, the one-sided calls and the per-collective configs on every
/// local GPU: what the loaded NCCL has is run and checked (`ncclTeam` returned and passed BY
/// VALUE by the real library, the requirement helpers, an `ncclAllReduceConfig` checked element
/// by element); what it lacks must come back as the typed `Unsupported` naming the version that
/// added it (on NCCL 2.28.x: every 2.29.2 and 2.31.2 call).
#[test]
#[ignore = "needs GPUs: cargo test --release --features half --test gpu -- --ignored --test-threads=1"]
fn gpu_device_api_one_sided_and_per_collective_configs() {
    use nccl_trampoline::nccl::{CftTeamMode, CollConfig, Error, Team, Version, WaitSignalDesc};

    nvls_off_unless_chosen();
    let nccl = Nccl::load().unwrap_or_else(|e| panic!("{e}"));
    let cuda = Cuda::load().unwrap_or_else(|e| panic!("these tests need GPUs: {e}"));
    let v = nccl.version();
    let n = cuda.device_count().unwrap() as usize;
    eprintln!("NCCL {v} from {}; {n} GPUs", nccl.path().display());
    let devices: Vec<i32> = (0..n as i32).collect();
    let comms = Communicator::init_all(&nccl, &devices).expect("ncclCommInitAll");
    let ranks: Vec<Rank> = comms.into_iter().zip(&devices).map(|(comm, &dev)| Rank::new(&cuda, comm, dev)).collect();
    let mut report = Report(Vec::new());
    let mut case = |name: String, r: Result<(), String>| {
        if let Err(e) = &r {
            eprintln!("FAIL {name}: {e}");
        }
        report.0.push((name, r));
    };
    let unsupported = |r: Result<(), Error>, symbol: &str, needs: &str| -> Result<(), String> {
        match r {
            Err(Error::Unsupported { symbol: s, needs: got, loaded }) if s == symbol && got.to_string() == needs => {
                (loaded == v).then_some(()).ok_or(format!("loaded {loaded}"))
            }
            other => Err(format!("expected Unsupported {{ {symbol}, {needs} }}, got {other:?}")),
        }
    };
    let has = |a, b, c| v >= Version::new(a, b, c);

    for (i, r) in ranks.iter().enumerate() {
        cuda.activate(r.dev).unwrap();
        let comm = &r.comm;
        if has(2, 28, 3) {
            let world = comm.team_world();
            case(
                format!("ncclTeamWorld rank {i}"),
                match world {
                    Ok(t) if t == Team { n_ranks: n as i32, rank: i as i32, stride: 1 } => Ok(()),
                    other => Err(format!("{other:?}")),
                },
            );
            let world = Team { n_ranks: n as i32, rank: i as i32, stride: 1 };
            let back: Result<Vec<i32>, _> = (0..n as i32).map(|j| comm.team_rank_to_world(&world, j)).collect();
            case(
                format!("ncclTeamRankToWorld (team by value) rank {i}"),
                match back {
                    Ok(b) if b == (0..n as i32).collect::<Vec<_>>() => Ok(()),
                    other => Err(format!("{other:?}")),
                },
            );
            // ncclTeamLsa/Rail set up the device runtime on first use, locally (no peer is
            // waited for: v2.28.3-1 src/dev_runtime.cc:54-90): one rank at a time is fine.
            let lsa = comm.team_lsa();
            let rail = comm.team_rail();
            case(
                format!("ncclTeamLsa/ncclTeamRail rank {i}"),
                match (&lsa, &rail) {
                    (Ok(l), Ok(rl))
                        if l.n_ranks >= 1
                            && l.rank < l.n_ranks
                            && rl.stride == l.n_ranks
                            && rl.n_ranks * l.n_ranks == n as i32 =>
                    {
                        Ok(())
                    }
                    other => Err(format!("{other:?}")),
                },
            );
            if let Ok(l) = lsa {
                case(
                    format!("ncclTeamRankToLsa rank {i}"),
                    match comm.team_rank_to_lsa(&l, l.rank) {
                        Ok(x) if x == l.rank => Ok(()),
                        other => Err(format!("{other:?}")),
                    },
                );
                case(
                    format!("ncclLsaBarrierCreateRequirement rank {i}"),
                    match nccl.lsa_barrier_requirement(&l, 2) {
                        Ok(q) if q.requirement().buffer_size == (6 + 2 * l.n_ranks as usize) * 4 => Ok(()),
                        other => Err(format!("{other:?}")),
                    },
                );
            }
        } else {
            case(
                format!("ncclTeamWorld gated rank {i}"),
                unsupported(comm.team_world().map(drop), "ncclTeamWorld", "2.28.3"),
            );
        }
        let stream = &r.stream;
        if !has(2, 29, 2) {
            // SAFETY: refused before NCCL is reached.
            let put = unsafe {
                comm.put_signal_raw(r.send.ptr(), 1, DataType::FLOAT32, 0, std::ptr::null_mut(), 0, 0, 0, stream.raw())
            };
            case(format!("ncclPutSignal gated rank {i}"), unsupported(put, "ncclPutSignal", "2.29.2"));
            case(
                format!("ncclSignal gated rank {i}"),
                unsupported(comm.signal(0, 0, 0, stream), "ncclSignal", "2.29.2"),
            );
            let wait = comm.wait_signal(&[WaitSignalDesc::default()], stream);
            case(format!("ncclWaitSignal gated rank {i}"), unsupported(wait, "ncclWaitSignal", "2.29.2"));
            // The window queries are gated the same way (tests/device_api.rs); not shown here:
            // ncclCommWindowRegister is collective, and one process driving every GPU would
            // have to register on all ranks in one group first.
        }
        if !has(2, 31, 2) {
            let cfg = CollConfig::new();
            // SAFETY: refused before NCCL is reached.
            let ar = unsafe {
                comm.all_reduce_config_raw(
                    r.send.ptr(),
                    r.recv.ptr(),
                    1,
                    DataType::FLOAT32,
                    RedOp::SUM,
                    &cfg,
                    stream.raw(),
                )
            };
            case(format!("ncclAllReduceConfig gated rank {i}"), unsupported(ar, "ncclAllReduceConfig", "2.31.2"));
            // SAFETY: as above.
            let sc = unsafe {
                comm.scatter_config_raw(r.send.ptr(), r.recv.ptr(), 1, DataType::FLOAT32, 0, &cfg, stream.raw())
            };
            case(format!("ncclScatterConfig gated rank {i}"), unsupported(sc, "ncclScatterConfig", "2.31.2"));
            let cft = comm.team_cft(CftTeamMode::FLAT).map(drop);
            case(format!("ncclTeamCft gated rank {i}"), unsupported(cft, "ncclTeamCft", "2.31.2"));
        }
    }

    if has(2, 31, 2) {
        // ncclAllReduceConfig on every GPU in one group, float32 sum, checked on the host.
        let el = El::F32;
        for (k, x) in ranks.iter().enumerate() {
            upload(&cuda, x, el, &(0..COUNT).map(|j| value(k, j)).collect::<Vec<_>>());
        }
        let cfg = CollConfig::new().ctas(1, 4);
        {
            let group = nccl.group().unwrap();
            for x in &ranks {
                cuda.activate(x.dev).unwrap();
                // SAFETY: BUF-byte device allocations of this GPU and its stream, alive until the
                // synchronisation below.
                unsafe {
                    x.comm.all_reduce_config_raw(
                        x.send.ptr(),
                        x.recv.ptr(),
                        COUNT,
                        el.dtype(),
                        RedOp::SUM,
                        &cfg,
                        x.stream.raw(),
                    )
                }
                .unwrap_or_else(|e| panic!("ncclAllReduceConfig: {e}"));
            }
            group.end().unwrap();
        }
        for (k, x) in ranks.iter().enumerate() {
            cuda.activate(x.dev).unwrap();
            x.stream.synchronize().expect("cuStreamSynchronize");
            let want =
                (0..COUNT).map(|j| combine(el, "sum", &(0..n).map(|s| value(s, j)).collect::<Vec<_>>())).collect();
            report.check(format!("ncclAllReduceConfig F32 sum rank {k}"), download(&cuda, x, el, COUNT), want);
        }
    }

    drop(ranks);
    let failed = report.0.iter().filter(|(_, r)| r.is_err()).count();
    println!("| case | result |\n| --- | --- |");
    for (name, r) in &report.0 {
        println!("| {name} | {} |", r.as_ref().map_or_else(|e| format!("FAIL: {e}"), |_| "pass".to_string()));
    }
    println!("NCCL {v}: {} passed, {} failed", report.0.len() - failed, failed);
    assert_eq!(failed, 0, "GPU cases failed (table above)");
}

// ---- Device memory written, then a launch at once on a non-blocking stream ------------------------------------

/// One rank's buffers for the race test.
struct RaceRank<'d> {
    comm: Communicator,
    dev: i32,
    stream: DeviceStream<'d>,
    send: DeviceMemory<'d>,
    recv: DeviceMemory<'d>,
}

/// The bare driver calls the crate's `upload` and `fill_u32` made before they waited for the
/// legacy stream: the negative control, from the same `libcuda.so.1` instance.
struct BareCopies {
    htod: unsafe extern "C" fn(u64, *const std::ffi::c_void, usize) -> i32,
    memset: unsafe extern "C" fn(u64, u32, usize) -> i32,
    _lib: libloading::Library,
}

impl BareCopies {
    fn load(cuda: &Cuda) -> BareCopies {
        // SAFETY: the CUDA driver the crate loaded (the loader hands back that instance); these
        // two functions have these prototypes (cuda.h: cuMemcpyHtoD_v2, cuMemsetD32_v2).
        unsafe {
            let lib = libloading::Library::new(cuda.path()).unwrap();
            let htod = *lib.get(b"cuMemcpyHtoD_v2").unwrap();
            let memset = *lib.get(b"cuMemsetD32_v2").unwrap();
            BareCopies { htod, memset, _lib: lib }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Writes {
    /// `DeviceMemory::upload` and `fill_u32`: complete when they return.
    Synchronous,
    /// `upload_on` and `fill_u32_on` on the launch's stream.
    StreamOrdered,
    /// `cuMemcpyHtoD` and `cuMemsetD32` alone (what the crate did): not asserted, reported.
    Bare,
}

/// CUDA's "synchronous" copy from pageable memory returns before its DMA lands, and its memset
/// is asynchronous to the host (CUDA Driver API, "API synchronization behavior"); a launch on
/// a non-blocking stream does not wait for the legacy stream they run on. Issue 19 saw perf
/// count 33,768-113,280 wrong elements per size out of place from 512 KiB to 8 MiB on one H200.
/// Here, on every local GPU (one rank each, `ncclCommInitAll`): 8, 16, 32 and 64 MiB, ROUNDS
/// rounds each, a fresh pattern uploaded from pageable memory into the send buffer and the
/// receive buffer poisoned, then at once an out-of-place all-reduce (sum of uint32) on a
/// non-blocking stream, then every element checked. The crate's two forms must give 0 wrong;
/// the bare calls are counted and printed (the race shows or not, by timing).
#[test]
#[ignore = "needs a GPU: cargo test --release --features half --test gpu -- --ignored --test-threads=1"]
fn gpu_uploads_are_ordered_before_a_launch_on_a_non_blocking_stream() {
    const ROUNDS: u32 = 16;
    const POISON: u32 = 0xdead_beef;
    nvls_off_unless_chosen();
    let nccl = Nccl::load().unwrap_or_else(|e| panic!("{e}"));
    let cuda = Cuda::load().unwrap_or_else(|e| panic!("this test needs a GPU: {e}"));
    let bare = BareCopies::load(&cuda);
    let n = cuda.device_count().unwrap() as usize;
    let devices: Vec<i32> = (0..n as i32).collect();
    let comms = Communicator::init_all(&nccl, &devices).expect("ncclCommInitAll");
    let max_words = (64 << 20) / 4;
    let ranks: Vec<RaceRank> = comms
        .into_iter()
        .zip(&devices)
        .map(|(comm, &dev)| {
            cuda.activate(dev).unwrap();
            let stream = cuda.stream().expect("cuStreamCreate");
            let (send, recv) = (cuda.alloc(max_words * 4).unwrap(), cuda.alloc(max_words * 4).unwrap());
            RaceRank { comm, dev, stream, send, recv }
        })
        .collect();
    let word = |rank: usize, round: u32, i: usize| (i as u32).wrapping_mul(2_654_435_761) ^ (round << 8) ^ rank as u32;
    let mut failed = Vec::new();
    for mib in [8usize, 16, 32, 64] {
        let words = (mib << 20) / 4;
        for writes in [Writes::Synchronous, Writes::StreamOrdered, Writes::Bare] {
            let mut wrong = 0u64;
            for round in 0..ROUNDS {
                // Pageable host memory, fresh every round.
                let hosts: Vec<Vec<u8>> =
                    (0..n).map(|r| (0..words).flat_map(|i| word(r, round, i).to_ne_bytes()).collect()).collect();
                for (r, x) in ranks.iter().enumerate() {
                    cuda.activate(x.dev).unwrap();
                    match writes {
                        Writes::Synchronous => {
                            x.send.upload(&hosts[r]).unwrap();
                            x.recv.fill_u32(POISON).unwrap();
                        }
                        Writes::StreamOrdered => {
                            x.send.upload_on(&x.stream, &hosts[r]).unwrap();
                            x.recv.fill_u32_on(&x.stream, POISON).unwrap();
                        }
                        Writes::Bare => {
                            // SAFETY: device buffers of max_words words; `hosts[r]` holds
                            // words * 4 bytes and outlives the copy (staged before it returns).
                            unsafe {
                                assert_eq!((bare.htod)(x.send.ptr() as u64, hosts[r].as_ptr().cast(), words * 4), 0);
                                assert_eq!((bare.memset)(x.recv.ptr() as u64, POISON, max_words), 0);
                            }
                        }
                    }
                }
                // At once: the all-reduces on the non-blocking streams.
                {
                    let group = nccl.group().unwrap();
                    for x in &ranks {
                        cuda.activate(x.dev).unwrap();
                        // SAFETY: device buffers of at least `words` uint32 on this rank's GPU
                        // and its stream; both live until the download below has waited for it.
                        unsafe {
                            x.comm.all_reduce_raw(
                                x.send.ptr(),
                                x.recv.ptr(),
                                words,
                                DataType::UINT32,
                                RedOp::SUM,
                                x.stream.raw(),
                            )
                        }
                        .expect("ncclAllReduce");
                    }
                    group.end().expect("ncclGroupEnd");
                }
                let mut back = vec![0u8; words * 4];
                for x in &ranks {
                    cuda.activate(x.dev).unwrap();
                    // A late receive-buffer fill would have landed after the launch, over the
                    // result; a late upload, after the launch read the send buffer.
                    x.recv.download_on(&x.stream, &mut back).unwrap();
                    for (i, b) in back.chunks_exact(4).enumerate() {
                        let want = (0..n).fold(0u32, |a, r| a.wrapping_add(word(r, round, i)));
                        if u32::from_ne_bytes(b.try_into().unwrap()) != want {
                            wrong += 1;
                        }
                    }
                }
            }
            println!(
                "{mib:>2} MiB x {ROUNDS} rounds on {n} GPU(s), {writes:?} writes then a launch on a non-blocking stream: {wrong} wrong elements"
            );
            if writes != Writes::Bare && wrong > 0 {
                failed.push(format!("{mib} MiB {writes:?}: {wrong} wrong"));
            }
        }
    }
    for x in ranks {
        cuda.activate(x.dev).unwrap();
        x.stream.synchronize().unwrap();
        let RaceRank { comm, send, recv, stream, .. } = x;
        drop((send, recv, stream));
        comm.destroy().unwrap();
    }
    assert!(failed.is_empty(), "the crate's ordered writes raced the launch: {failed:?}");
}
