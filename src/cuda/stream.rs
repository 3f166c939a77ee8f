//! Streams and events of the CUDA driver.

use core::ffi::c_void;
use std::time::Duration;


use super::driver::{Driver, NOT_READY};
use super::error::Error;

/// A stream, destroyed on drop.
pub struct DeviceStream<'d> {
    pub(super) driver: &'d Driver,
    pub(super) raw: *mut c_void,
}

impl DeviceStream<'_> {
    /// The `CUstream` / `cudaStream_t`.
    pub fn raw(&self) -> *mut c_void {
        self.raw
    }

    /// Waits for all work on the stream (in the driver: no deadline; see
    /// [`wait`](Self::wait)).
    pub fn synchronize(&self) -> Result<(), Error> {
        // SAFETY: a live stream.
        self.driver.check("cuStreamSynchronize", unsafe { self.driver.fns.stream_synchronize(self.raw) })
    }

    /// Waits for the work queued so far, at most `timeout`.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<(), Error> {
        // SAFETY: a live stream made on the context current when it was created; its context
        // is made current for the wait by the driver's own handle lookup.
        unsafe { self.driver.wait_stream(self.raw, timeout) }
    }

    /// True when the stream has no unfinished work.
    pub fn is_idle(&self) -> Result<bool, Error> {
        // SAFETY: a live stream.
        match unsafe { self.driver.fns.stream_query(self.raw) }? {
            0 => Ok(true),
            NOT_READY => Ok(false),
            code => Err(Error::Driver { function: "cuStreamQuery", code, text: self.driver.error_text(code) }),
        }
    }
}

impl Drop for DeviceStream<'_> {
    fn drop(&mut self) {
        // SAFETY: created by cuStreamCreate and destroyed once.
        let _ = unsafe { self.driver.fns.stream_destroy(self.raw) };
    }
}

/// An event, destroyed on drop.
pub struct Event<'d> {
    pub(super) driver: &'d Driver,
    pub(super) raw: *mut c_void,
}

impl Event<'_> {
    /// Records the event on `stream`.
    ///
    /// # Safety
    ///
    /// `stream` must be a live stream of the event's context.
    pub unsafe fn record(&self, stream: *mut c_void) -> Result<(), Error> {
        // SAFETY: the caller's contract; the event is live.
        unsafe { self.driver.event_record_raw(self.raw, stream) }
    }

    /// True when the work it marks has completed (or it was never recorded).
    pub fn is_complete(&self) -> Result<bool, Error> {
        // SAFETY: a live event.
        unsafe { self.driver.event_query_raw(self.raw) }
    }
}

impl Drop for Event<'_> {
    fn drop(&mut self) {
        // SAFETY: created by event_create_raw and destroyed once.
        unsafe { self.driver.event_destroy_raw(self.raw) };
    }
}
