//! What `nccl_trampoline::cuda` promises about ordering (src/cuda/mod.rs, "What is synchronous"),
//! against the stand-in CUDA driver (tests/c/fake_cuda.c), which lands a write to device memory
//! only once something ordered after it runs, as CUDA allows: a bare `cuMemcpyHtoD` or
//! `cuMemsetD32` followed by a kernel on a non-blocking stream leaves that kernel reading stale
//! bytes every time. The kernel here is the stand-in's hook `fake_cuda_kernel(stream)`, the
//! point where the stand-in NCCL's collectives read and write; its "device memory" is host
//! memory, read directly.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::ffi::c_void;

use nccl_trampoline::cuda::{DeviceMemory, DeviceStream, Driver};

const WORDS: usize = 1 << 16;

/// The stand-in, loaded twice over one instance: through the crate, and for its raw symbols.
/// Its streams are the process's: each test holds the stand-in's lock for its whole run (one
/// test's legacy-stream wait would land another's pending writes).
struct StandIn {
    driver: Driver,
    lib: libloading::Library,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl StandIn {
    fn load() -> StandIn {
        let serial = common::standin::serial();
        let path = common::standin::fake_cuda();
        let driver = Driver::load_from(&path).expect("the stand-in CUDA driver");
        // SAFETY: the stand-in built by this test; trivial initialisers. The same file as the
        // driver's: the loader hands back the one instance.
        let lib = unsafe { libloading::Library::new(&path) }.unwrap();
        driver.activate(0).unwrap();
        StandIn { driver, lib, _serial: serial }
    }

    /// A kernel starts on `stream` (of device 0): what it is ordered after lands, nothing else.
    fn kernel(&self, stream: &DeviceStream<'_>) {
        // SAFETY: the stand-in's hook, `void fake_cuda_kernel(void *stream, int device)`.
        let hook = unsafe { self.lib.get::<extern "C" fn(*mut c_void, i32)>(b"fake_cuda_kernel") }.unwrap();
        hook(stream.raw(), 0);
    }

    /// `cuMemcpyHtoD_v2` alone: what `DeviceMemory::upload` did before it waited for the DMA.
    fn bare_htod(&self, mem: &DeviceMemory<'_>, src: &[u32]) {
        type HtoD = extern "C" fn(u64, *const c_void, usize) -> i32;
        // SAFETY: the stand-in's cuMemcpyHtoD_v2 with this prototype.
        let f = unsafe { self.lib.get::<HtoD>(b"cuMemcpyHtoD_v2") }.unwrap();
        assert_eq!(f(mem.ptr() as u64, src.as_ptr().cast(), src.len() * 4), 0);
    }
}

/// What a kernel sees in `mem` now: the stand-in's device memory is host memory.
fn seen(mem: &DeviceMemory<'_>) -> Vec<u32> {
    // SAFETY: `mem` holds WORDS words of the stand-in's host memory; nothing writes them now.
    unsafe { std::slice::from_raw_parts(mem.ptr().cast::<u32>(), WORDS) }.to_vec()
}

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

fn pattern(round: u32) -> Vec<u32> {
    (0..WORDS as u32).map(|i| i.wrapping_mul(2_654_435_761) ^ round).collect()
}

#[test]
fn a_bare_pageable_copy_is_not_seen_by_a_kernel_on_a_non_blocking_stream() {
    let s = StandIn::load();
    let mem = s.driver.alloc(WORDS * 4).unwrap();
    let stream = s.driver.stream().unwrap();
    mem.upload(&bytes(&[7; WORDS])).unwrap();
    // The negative control: the race the crate had, reproduced by the stand-in every time.
    s.bare_htod(&mem, &pattern(1));
    s.kernel(&stream);
    assert_eq!(seen(&mem), vec![7; WORDS], "the kernel read the copy before its DMA landed");
    // The late DMA lands at the next point ordered after it (here a legacy-stream copy back),
    // over whatever the kernel wrote.
    let mut back = vec![0u8; WORDS * 4];
    mem.download(&mut back).unwrap();
    assert_eq!(back, bytes(&pattern(1)));
}

#[test]
fn upload_and_fill_are_complete_when_they_return() {
    let s = StandIn::load();
    let mem = s.driver.alloc(WORDS * 4).unwrap();
    let stream = s.driver.stream().unwrap();
    for round in 0..16 {
        let want = pattern(round);
        mem.upload(&bytes(&want)).unwrap();
        s.kernel(&stream);
        assert_eq!(seen(&mem), want, "round {round}: upload");
        mem.fill_u32(round).unwrap();
        s.kernel(&stream);
        assert_eq!(seen(&mem), vec![round; WORDS], "round {round}: fill_u32");
    }
}

#[test]
fn the_stream_ordered_forms_order_their_stream_and_only_it() {
    let s = StandIn::load();
    let mem = s.driver.alloc(WORDS * 4).unwrap();
    let (stream, other) = (s.driver.stream().unwrap(), s.driver.stream().unwrap());
    for round in 0..16 {
        let want = pattern(round);
        // upload_on: complete on return (it waits for its stream), seen from any stream.
        mem.upload_on(&stream, &bytes(&want)).unwrap();
        s.kernel(&other);
        assert_eq!(seen(&mem), want, "round {round}: upload_on");
        // fill_u32_on: queued; a kernel on its stream sees it, one on another stream does not.
        mem.fill_u32_on(&stream, round + 1).unwrap();
        s.kernel(&other);
        assert_eq!(seen(&mem), want, "round {round}: fill_u32_on is not ordered for another stream");
        // download (legacy stream) is not ordered after a non-blocking stream's work either...
        let mut back = vec![0u8; WORDS * 4];
        mem.download(&mut back).unwrap();
        assert_eq!(back, bytes(&want), "round {round}: download before the stream was waited for");
        // ...download_on is.
        mem.download_on(&stream, &mut back).unwrap();
        assert_eq!(back, bytes(&vec![round + 1; WORDS]), "round {round}: download_on");
        mem.fill_u32_on(&stream, round + 2).unwrap();
        s.kernel(&stream);
        assert_eq!(seen(&mem), vec![round + 2; WORDS], "round {round}: fill_u32_on then a kernel on its stream");
    }
}

#[test]
fn lengths_beyond_the_allocation_are_refused() {
    let s = StandIn::load();
    let mem = s.driver.alloc(16).unwrap();
    let stream = s.driver.stream().unwrap();
    let long = [0u8; 17];
    let mut long_out = [0u8; 17];
    for e in [
        mem.upload(&long).unwrap_err(),
        mem.upload_on(&stream, &long).unwrap_err(),
        mem.download(&mut long_out).unwrap_err(),
        mem.download_on(&stream, &mut long_out).unwrap_err(),
    ] {
        assert!(matches!(e, nccl_trampoline::cuda::Error::LengthMismatch { expected: 16, got: 17, .. }), "{e}");
    }
}
