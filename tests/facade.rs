//! The NCCL facade against a C stand-in for libnccl (tests/c/fake_nccl.c) built for the target:
//! every call checked byte for byte, version gating on old variants, errors with NCCL's texts.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::OnceLock;

use nccl_trampoline::nccl::{
    Communicator, Config, DataType, DeviceBuffer, DeviceBufferMut, Flavor, Nccl, RedOp, Source, Stream, UniqueId,
    Version,
};
use nccl_trampoline::Error;

/// The stand-in built as NCCL `code` (2.32.3, 2.18.3, 2.7.8), once per test binary.
fn fake(code: u32) -> PathBuf {
    static LIBS: OnceLock<Vec<(u32, PathBuf)>> = OnceLock::new();
    let libs = LIBS.get_or_init(|| {
        [23203u32, 21803, 2708]
            .iter()
            .map(|&c| {
                let dir = common::work_dir(&format!("fake-nccl-{c}"));
                let src = common::repo_file("tests/c/fake_nccl.c");
                let built = common::build_shared_with(&dir, "nccl", &[src], &[&format!("-DFAKE_VERSION={c}")]);
                let lib = dir.join("libnccl.so.2");
                std::fs::rename(&built, &lib).expect("name the stand-in libnccl.so.2");
                (c, lib)
            })
            .collect()
    });
    libs.iter().find(|(c, _)| *c == code).expect("a built variant").1.clone()
}

/// The stand-in's recording hooks.
struct Log(libloading::Library);

impl Log {
    fn open(code: u32) -> Log {
        // SAFETY: the stand-in built by this test; trivial initialisers.
        Log(unsafe { libloading::Library::new(fake(code)) }.unwrap())
    }
    fn f<T: Copy>(&self, name: &str) -> T {
        // SAFETY: callers name the stand-in's own helpers with their prototypes.
        unsafe { *self.0.get::<T>(name.as_bytes()).unwrap() }
    }
    fn reset(&self) {
        self.f::<extern "C" fn()>("fake_log_reset")()
    }
    fn bytes(&self) -> Vec<u8> {
        let data = self.f::<extern "C" fn() -> *const u8>("fake_log_data")();
        let size = self.f::<extern "C" fn() -> usize>("fake_log_size")();
        // SAFETY: the stand-in's buffer holds `size` bytes.
        unsafe { std::slice::from_raw_parts(data, size) }.to_vec()
    }
    fn fail_next(&self, code: i32, text: &str) {
        let c = std::ffi::CString::new(text).unwrap();
        self.f::<extern "C" fn(i32, *const std::ffi::c_char)>("fake_fail_next")(code, c.as_ptr());
    }
}

/// Builds an expected recording: a function name, then argument bytes.
#[derive(Default)]
struct Expect(Vec<u8>);

impl Expect {
    fn name(mut self, n: &str) -> Self {
        self.0.extend_from_slice(n.as_bytes());
        self.0.push(0);
        self
    }
    fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    fn i32(self, v: i32) -> Self {
        self.bytes(&v.to_ne_bytes())
    }
    fn usize(self, v: usize) -> Self {
        self.bytes(&v.to_ne_bytes())
    }
}

// The stand-in's call log is global and every load calls ncclGetVersion, so every test holds
// this lock for its whole run (a failed test must not poison the others).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn id() -> UniqueId {
    UniqueId::from_bytes(&std::array::from_fn::<u8, 128, _>(|i| (i as u8).wrapping_mul(13) ^ 0x3c)).unwrap()
}

/// Host memory posing as device memory: the stand-in only records addresses.
struct HostBuf(Vec<f32>);
// SAFETY: the stand-in never dereferences buffer pointers.
unsafe impl DeviceBuffer<f32> for HostBuf {
    fn device_ptr(&self) -> *const c_void {
        self.0.as_ptr().cast()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}
// SAFETY: as above.
unsafe impl DeviceBufferMut<f32> for HostBuf {
    fn device_ptr_mut(&mut self) -> *mut c_void {
        self.0.as_mut_ptr().cast()
    }
}
/// A buffer bound to a stream, as cudarc slices are.
struct BoundBuf(HostBuf, usize);
// SAFETY: as for HostBuf.
unsafe impl DeviceBuffer<f32> for BoundBuf {
    fn device_ptr(&self) -> *const c_void {
        self.0.device_ptr()
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn stream(&self) -> Option<*mut c_void> {
        Some(self.1 as *mut c_void)
    }
}
// SAFETY: as for HostBuf.
unsafe impl DeviceBufferMut<f32> for BoundBuf {
    fn device_ptr_mut(&mut self) -> *mut c_void {
        self.0.device_ptr_mut()
    }
}

struct FakeStream(usize);
// SAFETY: the stand-in only records the handle.
unsafe impl Stream for FakeStream {
    fn as_raw(&self) -> *mut c_void {
        self.0 as *mut c_void
    }
}

#[test]
fn loads_and_reports_path_version_and_symbols() {
    let _g = serial();
    let nccl = Nccl::load_from(fake(23203)).unwrap();
    assert_eq!(nccl.version(), Version::new(2, 32, 3));
    assert_eq!(nccl.path(), fake(23203));
    assert_eq!(nccl.flavor(), Flavor::Nccl);
    assert!(nccl.missing_symbols().is_empty(), "{:?}", nccl.missing_symbols());
    assert_eq!(nccl.error_string(nccl_trampoline::nccl::NcclResult(4)).unwrap(), "invalid argument (stand-in)");

    let old = Nccl::load_from(fake(2708)).unwrap();
    assert_eq!(old.version(), Version::new(2, 7, 8), "the pre-2.9 version formula");
    let missing: Vec<&str> = old.missing_symbols().iter().map(|(n, _)| *n).collect();
    assert!(missing.contains(&"ncclCommInitRankConfig") && missing.contains(&"ncclGetLastError"), "{missing:?}");
}

#[test]
fn init_rank_passes_the_id_by_value_byte_for_byte() {
    let _g = serial();
    let nccl = Nccl::load_from(fake(23203)).unwrap();
    let log = Log::open(23203);
    let id = id();
    let before = id.clone();
    log.reset();
    let comm = Communicator::init_rank(&nccl, 4, &id, 3).unwrap();
    assert_eq!(log.bytes(), Expect::default().name("ncclCommInitRank").i32(4).bytes(id.as_bytes()).i32(3).0);
    assert_eq!(id, before, "the stand-in scribbled on its copy; ours is unchanged");
    assert_eq!((comm.count().unwrap(), comm.rank().unwrap(), comm.cu_device().unwrap()), (4, 3, 3));
    log.reset();
    comm.destroy().unwrap();
    assert_eq!(log.bytes(), Expect::default().name("ncclCommDestroy").i32(3).0);
}

#[test]
fn config_is_written_for_the_loaded_version() {
    let _g = serial();
    for (code, size) in [(23203u32, 120usize), (21803, 48)] {
        let nccl = Nccl::load_from(fake(code)).unwrap();
        let log = Log::open(code);
        log.reset();
        let config = Config::new().ctas(2, 8).split_share(true);
        let comm = Communicator::init_rank_config(&nccl, 2, &id(), 1, &config).unwrap();
        let rec = log.bytes();
        let head = Expect::default().name("ncclCommInitRankConfig").i32(2).bytes(id().as_bytes()).i32(1).usize(size).0;
        assert_eq!(&rec[..head.len()], &head[..], "{code}");
        let cfg = &rec[head.len()..];
        assert_eq!(cfg.len(), size);
        let word = |off: usize| i32::from_ne_bytes(cfg[off..off + 4].try_into().unwrap());
        assert_eq!(word(8) as u32, 0xcafe_beef);
        assert_eq!(word(12), code as i32, "version = the loaded library's code");
        assert_eq!((word(16), word(20), word(24), word(28), word(40)), (i32::MIN, i32::MIN, 2, 8, 1));
        drop(comm);
    }
    let old = Nccl::load_from(fake(21803)).unwrap();
    let err = Communicator::init_rank_config(&old, 2, &id(), 1, &Config::new().comm_name("x")).unwrap_err();
    assert_eq!(err, Error::Unsupported { symbol: "commName", needs: "2.27.0".into(), loaded: "2.18.3".into() });
}

#[test]
fn missing_symbols_are_unsupported_not_panics() {
    let _g = serial();
    let old = Nccl::load_from(fake(21803)).unwrap();
    let comm = Communicator::init_rank(&old, 1, &id(), 0).unwrap();
    let (send, mut recv) = (HostBuf(vec![0.0; 4]), HostBuf(vec![0.0; 4]));
    let err = comm.all_to_all(&send, &mut recv, &FakeStream(0)).unwrap_err();
    assert_eq!(err, Error::Unsupported { symbol: "ncclAlltoAll", needs: "2.28.3".into(), loaded: "2.18.3".into() });
    assert!(matches!(old.mem_alloc(64), Err(Error::Unsupported { symbol: "ncclMemAlloc", .. })));
    let oldest = Nccl::load_from(fake(2708)).unwrap();
    let err = Communicator::init_rank_config(&oldest, 1, &id(), 0, &Config::new()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unsupported { symbol: "ncclCommInitRankConfig", .. }
                | Error::Unsupported { symbol: "ncclConfig_t", .. }
        ),
        "{err}"
    );
    assert!(matches!(oldest.last_error(), Err(Error::Unsupported { symbol: "ncclGetLastError", .. })));
}

#[test]
fn failures_carry_function_code_name_and_last_error() {
    let _g = serial();
    let nccl = Nccl::load_from(fake(23203)).unwrap();
    let log = Log::open(23203);
    log.fail_next(4, "rank 7 out of range");
    let err = Communicator::init_rank(&nccl, 4, &id(), 3).unwrap_err();
    assert_eq!(
        err,
        Error::Nccl {
            function: "ncclCommInitRank",
            code: 4,
            name: "ncclInvalidArgument".into(),
            last_error: "rank 7 out of range".into()
        }
    );
    assert_eq!(err.to_string(), "ncclCommInitRank failed: ncclInvalidArgument (4): rank 7 out of range");
    log.fail_next(42, "from the future");
    let err = nccl.unique_id().unwrap_err();
    assert!(matches!(&err, Error::Nccl { code: 42, name, .. } if name == "unknown result code"), "{err}");
    // Bad input never reaches NCCL.
    assert!(matches!(Communicator::init_rank(&nccl, 2, &id(), 2), Err(Error::InvalidArgument { .. })));
    assert!(matches!(UniqueId::from_bytes(&[0; 12]), Err(Error::InvalidUniqueId { len: 12 })));
}

#[test]
fn collectives_pass_every_argument_and_check_lengths_first() {
    let _g = serial();
    let nccl = Nccl::load_from(fake(23203)).unwrap();
    let log = Log::open(23203);
    let comm = Communicator::init_rank(&nccl, 2, &id(), 1).unwrap();
    let (send, mut recv) = (HostBuf(vec![1.0; 8]), HostBuf(vec![0.0; 8]));
    let stream = FakeStream(0x5157);
    log.reset();
    comm.all_reduce(&send, &mut recv, RedOp::MAX, &stream).unwrap();
    let exp = Expect::default()
        .name("ncclAllReduce")
        .usize(send.device_ptr() as usize)
        .usize(recv.0.as_ptr() as usize)
        .usize(8)
        .i32(DataType::FLOAT32.0)
        .i32(RedOp::MAX.0)
        .i32(1)
        .usize(0x5157);
    assert_eq!(log.bytes(), exp.0);

    log.reset();
    // SAFETY: the stand-in only records pointers.
    unsafe {
        comm.reduce_raw(
            0x10 as *const c_void,
            0x20 as *mut c_void,
            5,
            DataType::INT64,
            RedOp::SUM,
            1,
            0x30 as *mut c_void,
        )
    }
    .unwrap();
    let exp =
        Expect::default().name("ncclReduce").usize(0x10).usize(0x20).usize(5).i32(4).i32(0).i32(1).i32(1).usize(0x30);
    assert_eq!(log.bytes(), exp.0);

    log.reset();
    let mut bound = BoundBuf(HostBuf(vec![0.0; 8]), 0x77);
    let err = comm.all_reduce(&send, &mut bound, RedOp::SUM, &stream).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "a buffer bound to another stream: {err}");
    comm.all_reduce_in_place(&mut bound, RedOp::SUM, &FakeStream(0x77)).unwrap();
    assert_eq!(&log.bytes()[..14], b"ncclAllReduce\0", "only the call on the buffer's own stream");

    log.reset();
    let mut short = HostBuf(vec![0.0; 15]);
    let err = comm.all_gather(&send, &mut short, &stream).unwrap_err();
    assert_eq!(err, Error::LengthMismatch { what: "all_gather recv", expected: 16, got: 15 });
    assert_eq!(log.bytes(), Expect::default().name("ncclCommCount").0, "nothing but the rank count before the check");

    log.reset();
    comm.send(&send, 0, &stream).unwrap();
    comm.recv(&mut recv, 0, &stream).unwrap();
    let exp = Expect::default()
        .name("ncclSend")
        .usize(send.device_ptr() as usize)
        .usize(8)
        .i32(7)
        .i32(0)
        .i32(1)
        .usize(0x5157)
        .name("ncclRecv")
        .usize(recv.0.as_ptr() as usize)
        .usize(8)
        .i32(7)
        .i32(0)
        .i32(1)
        .usize(0x5157);
    assert_eq!(log.bytes(), exp.0);
}

#[test]
fn groups_pre_mul_sum_split_and_registration() {
    let _g = serial();
    let nccl = Nccl::load_from(fake(23203)).unwrap();
    let log = Log::open(23203);
    let comm = Communicator::init_rank(&nccl, 2, &id(), 0).unwrap();
    log.reset();
    nccl.group().unwrap().end().unwrap();
    drop(nccl.group().unwrap());
    assert_eq!(
        log.bytes(),
        Expect::default().name("ncclGroupStart").name("ncclGroupEnd").name("ncclGroupStart").name("ncclGroupEnd").0
    );
    let g = nccl.group().unwrap();
    log.fail_next(5, "mismatched group");
    assert!(matches!(g.end(), Err(Error::Nccl { function: "ncclGroupEnd", code: 5, .. })));

    log.reset();
    {
        let op = comm.create_pre_mul_sum(0.5f64).unwrap();
        assert_eq!(op.op(), RedOp(5));
    }
    let exp = Expect::default()
        .name("ncclRedOpCreatePreMulSum")
        .bytes(&0.5f64.to_ne_bytes())
        .i32(8)
        .i32(1)
        .i32(0)
        .name("ncclRedOpDestroy")
        .i32(5)
        .i32(0);
    assert_eq!(log.bytes(), exp.0);

    assert!(comm.split(-1, 0, None).unwrap().is_none(), "NCCL_SPLIT_NOCOLOR");
    {
        // Inside a group NCCL fills the child at ncclGroupEnd: the single-rank form is refused.
        let g = nccl.group().unwrap();
        assert!(matches!(comm.split(1, 0, None), Err(Error::InvalidArgument { .. })));
        assert!(matches!(Communicator::init_rank(&nccl, 2, &id(), 0), Err(Error::InvalidArgument { .. })));
        g.end().unwrap();
    }
    let all = nccl.split_all(&[(&comm, 4, 0)], None).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].as_ref().expect("a child").count().unwrap(), 1);
    drop(all);
    let child = comm.split(3, 1, Some(&Config::new())).unwrap().expect("a child");
    assert_eq!(child.count().unwrap(), 1);

    log.reset();
    {
        // SAFETY: the stand-in only records the pointer.
        let reg = unsafe { comm.register(0x1000 as *mut c_void, 4096) }.unwrap();
        assert_eq!(reg.as_raw() as usize, 0x4855);
    }
    let exp = Expect::default()
        .name("ncclCommRegister")
        .i32(0)
        .usize(0x1000)
        .usize(4096)
        .name("ncclCommDeregister")
        .i32(0)
        .usize(0x4855);
    assert_eq!(log.bytes(), exp.0);
    let mem = nccl.mem_alloc(256).unwrap();
    assert_eq!(mem.size(), 256);
    assert!(!mem.as_ptr().is_null());
}

#[test]
fn non_blocking_config_reports_in_progress_and_refuses_per_thread_stream() {
    let _g = serial();
    let nccl = Nccl::load_from(fake(23203)).unwrap();
    let comm = Communicator::init_rank_config(&nccl, 1, &id(), 0, &Config::new().blocking(false)).unwrap();
    assert_eq!(comm.async_error().unwrap(), nccl_trampoline::nccl::NcclResult::IN_PROGRESS);
    let mut buf = HostBuf(vec![0.0; 4]);
    let err = comm.all_reduce_in_place(&mut buf, RedOp::SUM, &FakeStream(2)).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
}

#[test]
fn discovery_order_and_failures_list_every_candidate() {
    let _g = serial();
    // Only this test touches these variables.
    let venv = common::work_dir("fake-venv");
    let site = venv.join("lib/python3.11/site-packages/nvidia/nccl/lib");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::copy(fake(21803), site.join("libnccl.so.2")).unwrap();
    std::env::set_var("VIRTUAL_ENV", &venv);
    std::env::set_var(nccl_trampoline::nccl::LIBRARY_ENV, fake(23203));
    let c = Nccl::candidates();
    let found = Nccl::discover();
    std::env::remove_var(nccl_trampoline::nccl::LIBRARY_ENV);
    assert_eq!(found.result.as_ref().map(|n| n.version()).ok(), Some(Version::new(2, 32, 3)));
    assert_eq!(found.chosen.as_ref().map(|c| c.source), Some(Source::Environment));
    let venv_lib = site.join("libnccl.so.2");
    assert!(
        found.shadowed.iter().any(|s| s.source == Source::PythonEnvironment && s.path == venv_lib),
        "{:?}",
        found.shadowed
    );
    assert_eq!((c[0].source, c[0].path.clone()), (Source::Environment, fake(23203)));
    let py = c.iter().position(|c| c.source == Source::PythonEnvironment).expect("the venv's NCCL");
    let sys = c.iter().position(|c| c.source == Source::System).unwrap();
    assert!(py < sys);
    assert_eq!(c[sys].path, PathBuf::from("libnccl.so.2"));
    assert!(c.iter().any(|c| c.path.as_os_str() == "librccl.so.1"));
    std::env::remove_var("VIRTUAL_ENV");

    let err = Nccl::load_from("/nonexistent/libnccl.so.2").unwrap_err();
    match err {
        Error::LibraryNotFound { tried } => {
            assert!(tried[0].starts_with("/nonexistent/libnccl.so.2 (Explicit): "), "{tried:?}")
        }
        other => panic!("{other}"),
    }
}
