//! The GPU pieces a rank of `perf` uses, as nccl-tests makes them: buffers from
//! `ncclMemAlloc`, their registration (`-R`), the stream wait with `-T` and NCCL's
//! asynchronous errors (`testStreamSynchronize`), and the exchange of bytes between processes
//! through NCCL. Line numbers cite nccl-tests v2.19.6.

use std::mem::ManuallyDrop;
use std::time::Instant;

use nccl_trampoline::nccl::{Communicator, DataType, DeviceAllocation, Nccl, NcclResult, Registration};

use super::options::Args;
use crate::cuda::{DeviceMemory, DeviceStream, Driver};
use crate::error::{Error, GpuStep, LibraryError};

/// `ncclCommWindowRegister`'s `NCCL_WIN_COLL_SYMMETRIC` (nccl.h, 2.27).
const WIN_COLL_SYMMETRIC: i32 = 1;

/// A buffer from `ncclMemAlloc` (NCCL 2.19), as nccl-tests allocates them
/// (src/common.cu:1119-1131): memory NCCL's zero-copy paths and symmetric windows (`-R 2`)
/// take; from `cuMemAlloc` before 2.19.
pub struct Buffer<'d, 'n> {
    /// The memory seen through the driver's copies (never freed through it).
    view: ManuallyDrop<DeviceMemory<'d>>,
    /// What frees it, after the view.
    _owner: Owner<'d, 'n>,
}

/// Held for its drop alone.
#[allow(dead_code)]
enum Owner<'d, 'n> {
    Driver(DeviceMemory<'d>),
    Nccl(DeviceAllocation<'n>),
}

impl<'d, 'n> Buffer<'d, 'n> {
    pub fn new(nccl: &'n Nccl, driver: &'d Driver, bytes: usize) -> Result<Self, LibraryError> {
        if nccl.has("ncclMemAlloc") {
            let a = nccl.mem_alloc(bytes.max(1))?;
            // SAFETY: `bytes` of device memory of the current device, freed by `_owner` after
            // the view is last used.
            let view = unsafe { driver.memory_at(a.as_ptr(), bytes) };
            return Ok(Buffer { view, _owner: Owner::Nccl(a) });
        }
        let m = driver.alloc(bytes)?;
        // SAFETY: as above, the allocation `m`.
        let view = unsafe { driver.memory_at(m.ptr(), bytes) };
        Ok(Buffer { view, _owner: Owner::Driver(m) })
    }
}

impl<'d> std::ops::Deref for Buffer<'d, '_> {
    type Target = DeviceMemory<'d>;
    fn deref(&self) -> &DeviceMemory<'d> {
        &self.view
    }
}

/// nccl-tests' `testStreamSynchronize` (src/common.cu:488-542): polls each stream until its
/// work is done, asking NCCL for an asynchronous error meanwhile; either, or `timeout`
/// seconds passing (`-T`; 0: none), runs `abort` (every communicator) and fails.
pub fn poll(
    items: &[(&DeviceStream<'_>, &Communicator, usize, i32)],
    timeout: u32,
    abort: &dyn Fn(),
) -> Result<(), Error> {
    let start = Instant::now();
    let mut done = vec![false; items.len()];
    loop {
        let mut idle = true;
        for (i, &(stream, comm, rank, device)) in items.iter().enumerate() {
            if done[i] {
                continue;
            }
            let gpu = |source: nccl_trampoline::cuda::Error| Error::Gpu {
                rank,
                device,
                step: GpuStep::Synchronize,
                source: source.into(),
            };
            if stream.is_idle().map_err(gpu)? {
                done[i] = true;
                idle = false;
                continue;
            }
            let status = comm.async_error().map_err(collective)?;
            if !status.is_success() && status != NcclResult::IN_PROGRESS {
                abort();
                return Err(Error::NcclAsync { rank, code: format!("{status:?}") });
            }
            if timeout > 0 && start.elapsed().as_secs_f64() > f64::from(timeout) {
                abort();
                let host = super::launched::hostname();
                return Err(Error::TestTimeout { host, seconds: timeout, rank });
            }
        }
        if done.iter().all(|&d| d) {
            return Ok(());
        }
        if idle {
            std::thread::yield_now();
        }
    }
}

/// `-R` for the loaded library, as nccl-tests parses it (src/common.cu:1303-1313): symmetric
/// windows before NCCL 2.27 fall back to local registration, and registration before 2.19 is
/// ignored, each with nccl-tests' line.
pub fn register_mode(args: &Args, nccl: &Nccl) -> u8 {
    let v = nccl.version();
    let say = |line: &str| if args.json { eprintln!("{line}") } else { println!("{line}") };
    match args.register {
        r if r > 0 && v < nccl_trampoline::nccl::Version::new(2, 19, 0) => {
            say("Option -R (register) is not supported before NCCL 2.19. Ignoring");
            0
        }
        2 if v < nccl_trampoline::nccl::Version::new(2, 27, 0) => {
            say("Option -R 2 (symmetric) is not supported before NCCL 2.27. Defaulting to local registration");
            1
        }
        r => r,
    }
}

/// `-R`: the buffers registered with the communicator, locally (1) or as symmetric windows
/// (2), as nccl-tests does at set-up (src/common.cu:1604-1616).
pub fn register<'c>(
    comm: &'c Communicator,
    send: &DeviceMemory<'_>,
    recv: &DeviceMemory<'_>,
    bytes: usize,
    how: u8,
) -> Result<Vec<Registration<'c>>, LibraryError> {
    let mut out = Vec::new();
    for buf in [send, recv] {
        // SAFETY: device memory of the communicator's GPU, `bytes` long, freed only after the
        // registration ends (the registrations drop first).
        let r = unsafe {
            match how {
                0 => continue,
                1 => comm.register(buf.ptr(), bytes),
                _ => comm.window_register(buf.ptr(), bytes, WIN_COLL_SYMMETRIC),
            }
        };
        out.push(r.map_err(LibraryError::from)?);
    }
    Ok(out)
}

/// Every rank's `mine` (all of the same length), in rank order, through NCCL itself (an
/// all-gather of bytes on `stream`, waited for): how ranks in separate processes share what
/// they measured, under any launcher.
pub fn gather_on(
    driver: &Driver,
    comm: &Communicator,
    device: i32,
    stream: &DeviceStream<'_>,
    nranks: usize,
    timeout: u32,
    mine: &[u8],
) -> Result<Vec<u8>, Error> {
    let rank = comm.rank().map_or(0, |r| r as usize);
    let gpu =
        |step| move |source: nccl_trampoline::cuda::Error| Error::Gpu { rank, device, step, source: source.into() };
    driver.activate(device).map_err(gpu(GpuStep::Activate))?;
    let send = driver.alloc(mine.len()).map_err(gpu(GpuStep::Alloc))?;
    let recv = driver.alloc(mine.len() * nranks).map_err(gpu(GpuStep::Alloc))?;
    // In the stream's order: the all-gather below reads the bytes, not what was there.
    send.upload_on(stream, mine).map_err(gpu(GpuStep::Upload))?;
    // SAFETY: both buffers were just allocated on the rank's device with the sizes an
    // all-gather of `mine.len()` bytes per rank needs; `download_on` waits for the stream
    // before they are read or freed.
    unsafe { comm.all_gather_raw(send.ptr(), recv.ptr(), mine.len(), DataType::INT8, stream.raw()) }
        .map_err(collective)?;
    // A peer that died or hangs: the wait ends at -T, or at NCCL's asynchronous error.
    poll(&[(stream, comm, rank, device)], timeout, &|| {
        let _ = comm.abort_handle().abort();
    })?;
    let mut all = vec![0u8; mine.len() * nranks];
    recv.download_on(stream, &mut all).map_err(gpu(GpuStep::Download))?;
    Ok(all)
}

/// The free memory of `device` (made current).
pub fn free_memory(driver: &Driver, device: i32) -> Result<i64, nccl_trampoline::cuda::Error> {
    driver.activate(device)?;
    Ok(driver.memory_info()?.0 as i64)
}

/// The error of a collective or a group.
fn collective(source: impl Into<LibraryError>) -> Error {
    Error::Collective { source: source.into() }
}
