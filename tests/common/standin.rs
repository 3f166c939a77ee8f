//! The C stand-ins for libnccl (tests/c/fake_nccl.c) and the CUDA driver (tests/c/fake_cuda.c),
//! built for the target once per test binary, with the hooks the tests use: the call log, failure
//! injection, fault modes, and device buffers and streams made of host memory.

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use nccl_trampoline::cuda::Driver;
use nccl_trampoline::nccl::Error;
use nccl_trampoline::nccl::{DeviceBuffer, DeviceBufferMut, Nccl, Stream, UniqueId};

/// Every stand-in NCCL build: 2.32.3, 2.31.2, 2.28.3, 2.26.5 (group job in thread storage,
/// joined from any thread), 2.18.3 (joined only from its thread), 2.17.1 (late init write),
/// 2.7.8.
pub const VERSIONS: [u32; 7] = [23203, 23102, 22803, 22605, 21803, 21701, 2708];

/// The stand-in NCCL built as `code`, named `libnccl.so.2`.
pub fn fake_nccl(code: u32) -> PathBuf {
    static LIBS: OnceLock<Vec<(u32, PathBuf)>> = OnceLock::new();
    let libs = LIBS.get_or_init(|| {
        VERSIONS
            .iter()
            .map(|&c| {
                let dir = super::work_dir(&format!("fake-nccl-{c}"));
                let src = super::repo_file("tests/c/fake_nccl.c");
                let built = super::build_shared_with(&dir, "nccl", &[src], &[&format!("-DFAKE_VERSION={c}")]);
                let lib = dir.join("libnccl.so.2");
                std::fs::rename(&built, &lib).expect("name the stand-in libnccl.so.2");
                (c, lib)
            })
            .collect()
    });
    libs.iter().find(|(c, _)| *c == code).expect("a built variant").1.clone()
}

/// The stand-in CUDA driver.
pub fn fake_cuda() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let dir = super::work_dir("fake-cuda");
        let built = super::build_shared(&dir, "fakecuda", &[super::repo_file("tests/c/fake_cuda.c")]);
        let lib = dir.join("libcuda.so.1");
        std::fs::rename(&built, &lib).expect("name the stand-in libcuda.so.1");
        lib
    })
    .clone()
}

/// The stand-in NCCL `code`, loaded, with the stand-in CUDA driver as its driver and that
/// driver's streams carrying the stand-in's kernels. Fault modes reset.
pub fn load(code: u32) -> (Nccl, Log) {
    let nccl = Nccl::load_from(fake_nccl(code)).expect("load the stand-in");
    nccl.set_cuda(Driver::load_from(fake_cuda()).expect("load the stand-in CUDA driver")).expect("a fresh library");
    let log = Log::open(code);
    // SAFETY: the stand-in CUDA driver built by this test; trivial initialisers.
    let cuda = unsafe { libloading::Library::new(fake_cuda()) }.unwrap();
    type Launch = extern "C" fn(*mut c_void, i32) -> i64;
    type Release = extern "C" fn(*mut c_void);
    // SAFETY: the stand-in's own hooks, with these prototypes.
    let (launch, release) = unsafe {
        (*cuda.get::<Launch>(b"fake_cuda_launch").unwrap(), *cuda.get::<Release>(b"fake_cuda_release").unwrap())
    };
    log.f::<extern "C" fn(Launch, Release)>("fake_set_cuda_hooks")(launch, release);
    std::mem::forget(cuda); // stays loaded: the stand-in keeps the hook addresses
    log.f::<extern "C" fn()>("fake_reset_modes")();
    (nccl, log)
}

/// How many `cuEventCreate`, `cuEventRecord` and `cuEventQuery` calls the stand-in CUDA driver
/// has answered so far, in this process.
pub fn event_calls() -> [i64; 3] {
    // SAFETY: the stand-in CUDA driver built by this test; already loaded by `load`.
    let cuda = unsafe { libloading::Library::new(fake_cuda()) }.unwrap();
    // SAFETY: the stand-in's own counter, with this prototype.
    let calls = unsafe { *cuda.get::<extern "C" fn(i32) -> i64>(b"fake_cuda_event_calls").unwrap() };
    [calls(0), calls(1), calls(2)]
}

/// The stand-in's hooks: recording, failure injection and fault modes.
pub struct Log(libloading::Library);

impl Log {
    pub fn open(code: u32) -> Log {
        // SAFETY: the stand-in built by this test; trivial initialisers.
        Log(unsafe { libloading::Library::new(fake_nccl(code)) }.unwrap())
    }
    /// The hooks of the stand-in at `path` (built already, e.g. by the parent of a child process).
    pub fn open_path(path: &std::path::Path) -> Log {
        // SAFETY: a stand-in built by this test; trivial initialisers.
        Log(unsafe { libloading::Library::new(path) }.unwrap())
    }
    pub fn f<T: Copy>(&self, name: &str) -> T {
        // SAFETY: callers name the stand-in's own helpers with their prototypes.
        unsafe { *self.0.get::<T>(name.as_bytes()).unwrap() }
    }
    pub fn reset(&self) {
        self.f::<extern "C" fn()>("fake_log_reset")()
    }
    pub fn bytes(&self) -> Vec<u8> {
        let data = self.f::<extern "C" fn() -> *const u8>("fake_log_data")();
        let size = self.f::<extern "C" fn() -> usize>("fake_log_size")();
        // SAFETY: the stand-in's buffer holds `size` bytes.
        unsafe { std::slice::from_raw_parts(data, size) }.to_vec()
    }
    /// The names of the recorded calls, in order.
    pub fn calls(&self) -> Vec<String> {
        let bytes = self.bytes();
        let known = [
            "ncclCommInitRankConfig",
            "ncclCommInitRank",
            "ncclCommInitAll",
            "ncclCommDestroy",
            "ncclCommAbort",
            "ncclCommFinalize",
            "ncclCommSplit",
            "ncclCommShrink",
            "ncclCommRevoke",
            "ncclAllReduce",
            "ncclGroupStart",
            "ncclGroupEnd",
            "ncclCommCount",
            "ncclCommUserRank",
            "ncclCommCuDevice",
        ];
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match known.iter().find(|k| bytes[i..].starts_with(k.as_bytes()) && bytes.get(i + k.len()) == Some(&0)) {
                Some(k) => {
                    out.push(k.to_string());
                    i += k.len() + 1;
                }
                None => i += 1,
            }
        }
        out
    }
    pub fn fail_next(&self, code: i32, text: &str) {
        let c = std::ffi::CString::new(text).unwrap();
        self.f::<extern "C" fn(i32, *const std::ffi::c_char)>("fake_fail_next")(code, c.as_ptr());
    }
    /// A fault mode of the stand-in (see tests/c/fake_nccl.c).
    pub fn set(&self, key: &str, value: i32) {
        let c = std::ffi::CString::new(key).unwrap();
        assert_eq!(
            self.f::<extern "C" fn(*const std::ffi::c_char, i32) -> i32>("fake_set")(c.as_ptr(), value),
            0,
            "{key}"
        );
    }
    /// Makes the entry point `function` block inside the call until [`release_hang`](Self::release_hang).
    pub fn hang_in(&self, function: &str) {
        let c = std::ffi::CString::new(function).unwrap();
        self.f::<extern "C" fn(*const std::ffi::c_char)>("fake_hang_in")(c.as_ptr())
    }
    pub fn release_hang(&self) {
        self.f::<extern "C" fn(*const std::ffi::c_char)>("fake_hang_in")(std::ptr::null())
    }
    /// Communicators the stand-in made and has not freed.
    pub fn live_comms(&self) -> i32 {
        self.f::<extern "C" fn() -> i32>("fake_live_comms")()
    }
    /// NCCL threads (group jobs) still running.
    pub fn live_jobs(&self) -> i32 {
        self.f::<extern "C" fn() -> i32>("fake_live_jobs")()
    }
    /// Uses of freed or foreign memory NCCL would make (tests/c/fake_nccl.c's header): a
    /// thread that exited while its group job ran, an abort from a thread that did not start
    /// the job it must join.
    pub fn violations(&self) -> i32 {
        self.f::<extern "C" fn() -> i32>("fake_violations")()
    }
    /// Waits (at most `limit`) until `done()`; true if it came.
    pub fn eventually(&self, limit: std::time::Duration, done: impl Fn(&Log) -> bool) -> bool {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if done(self) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        done(self)
    }
    /// Sets a communicator's async error, as NCCL's proxy thread does when a network peer dies.
    pub fn set_async(&self, comm: *mut c_void, code: i32) {
        self.f::<extern "C" fn(*mut c_void, i32)>("fake_set_async")(comm, code)
    }
}

/// Builds an expected recording: a function name, then argument bytes.
#[derive(Default)]
pub struct Expect(pub Vec<u8>);

impl Expect {
    pub fn name(mut self, n: &str) -> Self {
        self.0.extend_from_slice(n.as_bytes());
        self.0.push(0);
        self
    }
    pub fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    pub fn i32(self, v: i32) -> Self {
        self.bytes(&v.to_ne_bytes())
    }
    pub fn usize(self, v: usize) -> Self {
        self.bytes(&v.to_ne_bytes())
    }
    /// What every completed creation records after the creating call: the rank facts, read once.
    pub fn rank_facts(self) -> Self {
        self.name("ncclCommCount").name("ncclCommUserRank").name("ncclCommCuDevice")
    }
}

// The stand-in's call log and modes are global, so every test holds this lock for its whole
// run (a failed test must not poison the others).
static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

pub fn id() -> UniqueId {
    UniqueId::from_bytes(&std::array::from_fn::<u8, 128, _>(|i| (i as u8).wrapping_mul(13) ^ 0x3c)).unwrap()
}

/// Host memory posing as device memory on `device`: the stand-in only records addresses.
pub struct HostBuf(pub Vec<f32>, pub Option<i32>);

impl HostBuf {
    pub fn new(v: Vec<f32>) -> Self {
        HostBuf(v, None)
    }
}

// SAFETY: the stand-in never dereferences buffer pointers.
unsafe impl DeviceBuffer<f32> for HostBuf {
    type Guard<'a> = ();
    fn device_ptr<'a>(&'a self, _: &'a dyn Stream) -> Result<(*const c_void, ()), Error> {
        Ok((self.0.as_ptr().cast(), ()))
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn device(&self) -> Option<i32> {
        self.1
    }
}
// SAFETY: as above.
unsafe impl DeviceBufferMut<f32> for HostBuf {
    fn device_ptr_mut<'a>(&'a mut self, _: &'a dyn Stream) -> Result<(*mut c_void, ()), Error> {
        Ok((self.0.as_mut_ptr().cast(), ()))
    }
}

/// A buffer bound to a stream, as cudarc slices are.
pub struct BoundBuf(pub HostBuf, pub usize);
// SAFETY: as for HostBuf.
unsafe impl DeviceBuffer<f32> for BoundBuf {
    type Guard<'a> = ();
    fn device_ptr<'a>(&'a self, s: &'a dyn Stream) -> Result<(*const c_void, ()), Error> {
        self.0.device_ptr(s)
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
    fn device_ptr_mut<'a>(&'a mut self, s: &'a dyn Stream) -> Result<(*mut c_void, ()), Error> {
        self.0.device_ptr_mut(s)
    }
}

/// A made-up stream handle (the stand-in CUDA driver gives each value a queue).
pub struct FakeStream(pub usize, pub Option<i32>);

impl FakeStream {
    pub fn new(handle: usize) -> Self {
        FakeStream(handle, None)
    }
}

// SAFETY: the stand-ins only use the handle as a key.
unsafe impl Stream for FakeStream {
    fn as_raw(&self) -> *mut c_void {
        self.0 as *mut c_void
    }
    fn device(&self) -> Option<i32> {
        self.1
    }
}
