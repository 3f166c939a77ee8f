//! All-reduce through the crate on PyTorch's own NCCL communicator: a shared library that
//! Python loads with `ctypes` (scripts/gpu-torch-from-raw.py), adopting the `ncclComm_t` of
//! torch's process group as [`Ownership::Borrowed`] with the NCCL torch loaded
//! ([`Nccl::loaded`]), so that torch still owns and destroys it.
//!
//! ```text
//! cargo build --release --example torch_allreduce   # target/release/examples/libtorch_allreduce.so
//! torchrun --nproc_per_node 2 scripts/gpu-torch-from-raw.py target/release/examples/libtorch_allreduce.so
//! ```
//!
//! Exports (C):
//!
//! ```c
//! // 0: enqueued on `stream`; otherwise the error text is in err (NUL-terminated, cut to err_len).
//! int nt_torch_all_reduce(void *comm, const void *send, void *recv, size_t count, int dtype,
//!                         void *stream, char *err, size_t err_len);
//! // 0: "NCCL <version> at <path>: rank r of n on device d, <state>, <mode>" in out.
//! int nt_torch_describe(void *comm, char *out, size_t out_len);
//! ```
//!
//! `comm` is `dist.group.WORLD._get_backend(torch.device("cuda"))._comm_ptr()`, `send` and
//! `recv` tensors' `data_ptr()` (equal for in place), `dtype` NCCL's `ncclDataType_t`, `stream`
//! `torch.cuda.current_stream().cuda_stream`. The sum is enqueued on that stream: synchronize
//! it before reading `recv` on the host.
//!
//! The raw form ([`Communicator::all_reduce_raw`]) is the natural one here: the pointers and
//! the stream come from torch, which vouches for them; the safe forms take buffer types that
//! know their length and device (cudarc's, or the caller's own), which a bare `data_ptr()` is
//! not. A long-lived adopter keeps its [`Communicator`] (adoption costs four NCCL queries);
//! this one adopts per call to stay stateless. Dropping a borrowed communicator makes no NCCL
//! call: torch's `destroy_process_group` ends it.
//!
//! Nothing unwinds into Python: a panic is caught and reported as an error (status 2).

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use nccl_trampoline::nccl::{Communicator, DataType, Error, Nccl, Ownership, RedOp};

/// The NCCL already loaded in this process (torch's), found on first use and kept.
fn nccl() -> Result<&'static Nccl, Error> {
    static NCCL: OnceLock<Nccl> = OnceLock::new();
    if let Some(n) = NCCL.get() {
        return Ok(n);
    }
    // Not kept on error: torch may not have loaded NCCL yet.
    let found = Nccl::loaded()?;
    Ok(NCCL.get_or_init(|| found))
}

/// Adopts `comm` as borrowed, with torch's NCCL.
///
/// # Safety
///
/// `comm` is null or a live `ncclComm_t` of the NCCL loaded in this process, kept alive by its
/// owner during the call and not used by it meanwhile.
unsafe fn adopt(comm: *mut c_void) -> Result<Communicator, Error> {
    let nccl = nccl()?;
    // SAFETY: the caller's contract; null is refused by from_raw.
    unsafe { Communicator::from_raw(nccl, comm, Ownership::Borrowed) }
}

/// Copies `text` into `out` (at most `len - 1` bytes, then NUL); nothing when `out` is null.
///
/// # Safety
///
/// `out` is null or points to `len` writable bytes.
unsafe fn write_text(text: &str, out: *mut c_char, len: usize) {
    if out.is_null() || len == 0 {
        return;
    }
    let n = text.len().min(len - 1);
    // SAFETY: the caller's contract: `len` bytes at `out`, of which `n + 1` are written.
    unsafe {
        core::ptr::copy_nonoverlapping(text.as_ptr(), out.cast::<u8>(), n);
        *out.add(n) = 0;
    }
}

/// Runs `body`, reporting its error (status 1) or a panic (status 2) into `err`.
///
/// # Safety
///
/// As [`write_text`] for `err` and `err_len`.
unsafe fn report(err: *mut c_char, err_len: usize, body: impl FnOnce() -> Result<(), String>) -> c_int {
    let (status, text) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => (0, String::new()),
        Ok(Err(e)) => (1, e),
        Err(_) => (2, "panic in nt_torch_all_reduce".to_string()),
    };
    // SAFETY: the caller's contract.
    unsafe { write_text(&text, err, err_len) };
    status
}

/// `ncclAllReduce` (sum) of `count` elements of `dtype` from `send` into `recv` (equal: in
/// place) on `stream`, through the crate, on the communicator `comm` of the NCCL loaded in this
/// process, which stays its owner's. Returns 0 once enqueued; 1 with the error's text in `err`,
/// 2 after a panic.
///
/// # Safety
///
/// `comm` is null or a live `ncclComm_t` of the NCCL loaded in this process, not used by its
/// owner during the call; `send` and `recv` point to `count` elements of `dtype` in device
/// memory of the communicator's GPU, valid until `stream` (a stream of that GPU, or null) runs
/// the all-reduce; `err` is null or points to `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nt_torch_all_reduce(
    comm: *mut c_void,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    stream: *mut c_void,
    err: *mut c_char,
    err_len: usize,
) -> c_int {
    let body = || {
        // SAFETY: the caller's contract for `comm`.
        let comm = unsafe { adopt(comm) }.map_err(|e| e.to_string())?;
        // SAFETY: the caller's contract for the buffers and the stream.
        unsafe { comm.all_reduce_raw(send, recv, count, DataType(dtype), RedOp::SUM, stream) }
            .map_err(|e| e.to_string())
        // `comm` is dropped here: borrowed, no NCCL call.
    };
    // SAFETY: the caller's contract for `err`.
    unsafe { report(err, err_len, body) }
}

/// Writes what the crate sees of `comm` into `out`: the library, the rank facts read at
/// adoption, the state. Returns 0, or 1 with the error's text in `out`, 2 after a panic.
///
/// # Safety
///
/// As [`nt_torch_all_reduce`] for `comm`; `out` is null or points to `out_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nt_torch_describe(comm: *mut c_void, out: *mut c_char, out_len: usize) -> c_int {
    let mut text = String::new();
    let body = || {
        // SAFETY: the caller's contract for `comm`.
        let comm = unsafe { adopt(comm) }.map_err(|e| e.to_string())?;
        let facts = (|| Ok::<_, Error>((comm.rank()?, comm.count()?, comm.cu_device()?)))();
        let (rank, nranks, device) = facts.map_err(|e| e.to_string())?;
        let nccl = comm.nccl();
        text = format!(
            "NCCL {} at {}: rank {rank} of {nranks} on device {device}, {}, {}",
            nccl.version(),
            nccl.path().display(),
            comm.state(),
            // Its config is not readable: blocking until NCCL answers a call with ncclInProgress.
            if comm.is_nonblocking() { "non-blocking" } else { "no ncclInProgress seen" },
        );
        Ok(())
    };
    // SAFETY: the caller's contract for `out` (written here only with an error; the
    // description below).
    let status = unsafe { report(out, out_len, body) };
    if status == 0 {
        // SAFETY: the caller's contract for `out`.
        unsafe { write_text(&text, out, out_len) };
    }
    status
}
