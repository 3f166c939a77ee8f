//! The GPU of a local rank: the library's CUDA driver ([`Nccl::cuda`], `libcuda.so.1` called
//! through the call core) makes that device's primary context current on the calling thread.
//! NCCL's `ncclCommInitRank` takes the current device (`cudaGetDevice`), which the runtime
//! reads from the current context, so this is `cudaSetDevice` without the runtime; the
//! facade's creation carries the calling thread's context to the thread that runs the init.

use crate::launch::error::Error;
use crate::nccl::Nccl;

/// Which GPU a rank of a [`World`](crate::launch::World) initialises NCCL on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceChoice {
    /// One GPU per local rank (the default): GPU `local_rank` when the launcher shows every GPU
    /// of the host, or GPU 0 when it gave each rank a single one (`CUDA_VISIBLE_DEVICES` with
    /// one entry, as Slurm's `--gpus-per-task=1` does). Without a CUDA driver or any GPU the
    /// device is left alone and NCCL's own error says why init failed.
    #[default]
    PerLocalRank,
    /// This device ordinal.
    Ordinal(i32),
    /// Whatever device is current on the calling thread (the caller chose it).
    Current,
}

/// Makes the GPU `choice` names for `local_rank` current on this thread; returns the
/// ordinal, or `None` when the device was left alone.
pub(crate) fn select(nccl: &Nccl, choice: DeviceChoice, local_rank: u32) -> Result<Option<i32>, Error> {
    let fail = |source: crate::cuda::Error| Error::Device { local_rank, source };
    let not_visible = |ordinal: i32, count: i32| Error::DeviceNotVisible {
        local_rank,
        ordinal,
        count,
        visible: std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_else(|_| "unset".into()),
    };
    if choice == DeviceChoice::Current {
        return Ok(None);
    }
    // No driver, or cuInit failing (no GPU): NCCL will say so in its own words.
    let driver = match (nccl.cuda(), choice) {
        (Ok(d), _) => d,
        (Err(_), DeviceChoice::PerLocalRank) => return Ok(None),
        (Err(e), _) => return Err(fail(e.clone())),
    };
    let count = match (driver.device_count(), choice) {
        (Ok(n), _) if n > 0 => n,
        (_, DeviceChoice::PerLocalRank) => return Ok(None),
        (Ok(n), _) => {
            let ordinal = match choice {
                DeviceChoice::Ordinal(o) => o,
                _ => 0,
            };
            return Err(not_visible(ordinal, n));
        }
        (Err(e), _) => return Err(fail(e)),
    };
    let ordinal = match choice {
        DeviceChoice::Ordinal(o) => o,
        _ if count == 1 => 0,
        _ => i32::try_from(local_rank).unwrap_or(i32::MAX),
    };
    if ordinal < 0 || ordinal >= count {
        return Err(not_visible(ordinal, count));
    }
    driver.activate(ordinal).map_err(fail)?;
    Ok(Some(ordinal))
}
