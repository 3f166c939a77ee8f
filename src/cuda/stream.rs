//! Streams and events of the CUDA driver, and the stream wait with a deadline.

use core::ffi::c_void;
use core::ptr;
use std::time::Duration;

use crate::time::{Backoff, Deadline};

use super::driver::{Driver, NOT_READY, STREAM_NON_BLOCKING};
use super::error::Error;

impl Driver {
    /// A non-blocking stream (`CU_STREAM_NON_BLOCKING`) on the current device: its work does not
    /// wait for the legacy default stream's, nor the legacy stream's for its (CUDA Driver API,
    /// "Stream synchronization behavior"). Order device memory writes before a launch on it with
    /// [`DeviceMemory::upload_on`](super::DeviceMemory::upload_on) / [`fill_u32_on`](super::DeviceMemory::fill_u32_on) on this stream, or
    /// with the fully synchronous [`DeviceMemory::upload`](super::DeviceMemory::upload) / [`fill_u32`](super::DeviceMemory::fill_u32).
    pub fn stream(&self) -> Result<DeviceStream<'_>, Error> {
        let mut s: *mut c_void = ptr::null_mut();
        // SAFETY: the out-pointer is live.
        self.check("cuStreamCreate", unsafe { self.fns.stream_create(&mut s, STREAM_NON_BLOCKING) })?;
        Ok(DeviceStream { driver: self, raw: s })
    }

    /// An event without timing, on the current context.
    pub fn event(&self) -> Result<Event<'_>, Error> {
        // SAFETY: the event is destroyed by `Event`'s drop, through this driver.
        Ok(Event { driver: self, raw: unsafe { self.event_create_raw()? } })
    }

    /// An event that records the time it completes, for [`Event::elapsed_since`], on the
    /// current context.
    pub fn timed_event(&self) -> Result<Event<'_>, Error> {
        // SAFETY: the event is destroyed by `Event`'s drop, through this driver.
        Ok(Event { driver: self, raw: unsafe { self.event_create_flags(0)? } })
    }

    /// Waits until the work queued on `stream` so far has completed, at most `timeout` (`None`:
    /// no limit), polling an event rather than blocking in the driver, so the wait always ends.
    ///
    /// # Safety
    ///
    /// `stream` must be a live stream of the current context (or null: its legacy default
    /// stream).
    pub unsafe fn wait_stream(&self, stream: *mut c_void, timeout: Option<Duration>) -> Result<(), Error> {
        // SAFETY: the caller's contract: a context is current and `stream` is live.
        let event = unsafe { self.event_create_raw()? };
        let event = Event { driver: self, raw: event };
        // SAFETY: as above.
        unsafe { self.event_record_raw(event.raw, stream)? };
        let deadline = Deadline::after(timeout);
        let mut backoff = Backoff::new();
        loop {
            if event.is_complete()? {
                return Ok(());
            }
            if deadline.passed() {
                return Err(Error::Timeout { operation: "stream wait", waited: deadline.waited() });
            }
            backoff.pause(deadline.left());
        }
    }
}

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

    /// The time between `start` and this event, both made by
    /// [`Driver::timed_event`] and completed (`cuEventElapsedTime`: about half a microsecond of
    /// resolution).
    pub fn elapsed_since(&self, start: &Event<'_>) -> Result<Duration, Error> {
        let mut ms = 0f32;
        // SAFETY: two live events and a live out-pointer.
        let code = unsafe { self.driver.fns.event_elapsed_time(&mut ms, start.raw, self.raw) };
        self.driver.check("cuEventElapsedTime", code)?;
        Ok(Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3))
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
