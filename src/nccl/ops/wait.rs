//! Waiting for a stream's work with a deadline, polling outside NCCL so that an abort, an
//! asynchronous error or a timeout ends the wait.

use crate::nccl::comm::communicator::Communicator;
use crate::nccl::library::functions::Sym;
use crate::nccl::ops::buffers::Stream;
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::{Cause, CommState};
use crate::time::Backoff;
use crate::time::Deadline;

impl Communicator {
    /// Waits until the work queued on `stream` so far has run, within the operation timeout.
    /// See [`wait_within`](Self::wait_within).
    pub fn wait<S: Stream>(&self, stream: &S) -> Result<(), Error> {
        self.wait_within(stream, self.timeouts().operation)
    }

    /// Waits until the work queued on `stream` so far has run (`timeout` `None`: no limit),
    /// polling a CUDA event outside NCCL, so an abort from another thread gets in. Returns `Ok`
    /// only if the work finished *and* the communicator is still usable: an abort makes
    /// spinning kernels exit, and a plain stream synchronize then reports success for work that
    /// never completed. NCCL's asynchronous errors end the wait too. A timeout marks the
    /// communicator failed (its work is stuck); drop or abort it.
    pub fn wait_within<S: Stream>(&self, stream: &S, timeout: Option<std::time::Duration>) -> Result<(), Error> {
        let shared = &self.shared;
        let driver = shared.nccl.cuda()?;
        let deadline = Deadline::after(timeout);
        // The event must be made on the stream's context: the communicator's.
        let restore = driver.current_context()?;
        let switch = shared.context.is_some() && restore != shared.context;
        if switch {
            driver.set_current(shared.context)?;
        }
        let event = driver.event()?;
        let watched = shared.watchdog.get().map(|w| (w, w.recorded_so_far()));
        // SAFETY: the `Stream` contract: a live stream of this device (current context).
        let recorded = unsafe { event.record(stream.as_raw()) };
        let result = recorded.map_err(Error::from).and_then(|()| {
            let mut backoff = Backoff::new();
            let mut polls = 0u32;
            loop {
                let state = shared.state();
                if !matches!(state, CommState::Ready) {
                    return Err(Error::Unusable { operation: "stream wait", state });
                }
                if event.is_complete()? {
                    // Finished, unless an abort (which ends the kernels early) came meanwhile.
                    let state = shared.state();
                    return if matches!(state, CommState::Ready) {
                        if let Some((w, through)) = watched {
                            w.finished(stream.as_raw(), through);
                        }
                        Ok(())
                    } else {
                        Err(Error::Unusable { operation: "stream wait", state })
                    };
                }
                polls += 1;
                if polls % 64 == 0 {
                    if let Some(r) = shared.try_async_error() {
                        if !r.is_success() && r != NcclResult::IN_PROGRESS {
                            shared.fail(Cause::Nccl { function: "ncclCommGetAsyncError", code: r });
                            return Err(shared.nccl.failure(Sym::CommGetAsyncError, r, shared.handle()));
                        }
                    }
                }
                if deadline.passed() {
                    let waited = deadline.waited();
                    shared.fail(Cause::Timeout { operation: "stream wait", waited });
                    return Err(Error::Timeout { operation: "stream wait", waited });
                }
                backoff.pause(deadline.left());
            }
        });
        drop(event);
        if switch {
            let _ = driver.set_current(restore);
        }
        result
    }
}
