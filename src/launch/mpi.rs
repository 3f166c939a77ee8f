//! MPI, loaded at run time and called through the crate's own call core, to broadcast the
//! unique id the way MPI jobs already talk.
//!
//! MPI's C ABI is not one ABI. The functions are the standard's, but a handle such as
//! `MPI_COMM_WORLD` is, depending on the library:
//!
//! - **Open MPI**: a pointer, the address of an exported object (`&ompi_mpi_comm_world`,
//!   `&ompi_mpi_byte`);
//! - **MPICH and its derivatives** (Intel MPI, MVAPICH2, Cray MPICH, the "MPICH ABI
//!   compatibility initiative"): a 32-bit `int` constant (`0x44000000`, `0x4c00010d`);
//! - **the MPI-5 standard ABI** (`libmpi_abi.so`, from the MPI Forum's `mpi.h` reference,
//!   `mpiwg-abi/header_and_stub_library`): a pointer-sized integer constant (`0x101`,
//!   `0x247`).
//!
//! So `MPI_Bcast(void *, int, MPI_Datatype, int, MPI_Comm)` has two C prototypes: the handles
//! go in 64-bit or in 32-bit argument slots. Each function is declared once below
//! ([`foreign_functions!`](crate::foreign_functions)): those without handles in one table,
//! those with handles in a table whose handle type `H` is chosen for the ABI of the library
//! that was loaded (a pointer for Open MPI and the standard ABI, an `int` for MPICH), which is
//! detected from what it exports, never guessed from its file name
//! (docs/adr/0010-launchers-and-rendezvous.md, docs/adr/0017-one-table-mechanism.md).

use core::ffi::{c_char, c_void};
use std::time::Duration;

use crate::launch::error::Error;
use crate::launch::world::{vars, Launcher};
use crate::time::{Backoff, Deadline};

/// How a library spells its handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MpiAbi {
    /// Open MPI: handles are addresses of exported objects.
    OpenMpi,
    /// MPICH and its ABI-compatible derivatives: handles are `int` constants.
    Mpich,
    /// The MPI-5 standard ABI: handles are pointer-sized integer constants.
    Standard,
}

impl MpiAbi {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            MpiAbi::OpenMpi => "Open MPI",
            MpiAbi::Mpich => "MPICH",
            MpiAbi::Standard => "MPI-5 standard ABI",
        }
    }
}

crate::foreign_functions! {
    /// The MPI functions without handle arguments: one prototype in every ABI. All return
    /// `int` (`MPI_SUCCESS` is 0).
    struct MpiFns, enum MpiSym {
        /// `int MPI_Initialized(int *flag)`
        initialized: Initialized = "MPI_Initialized" (flag: *mut i32) -> i32;
        /// `int MPI_Finalized(int *flag)`
        finalized: Finalized = "MPI_Finalized" (flag: *mut i32) -> i32;
        /// `int MPI_Init(int *argc, char ***argv)`
        init: Init = "MPI_Init" (argc: *mut i32, argv: *mut *mut *mut c_char) -> i32;
        /// `int MPI_Finalize(void)`
        finalize: Finalize = "MPI_Finalize" () -> i32;
        /// `int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)`
        test: Test = "MPI_Test" (request: *mut u8, flag: *mut i32, status: *mut u8) -> i32;
        /// `int MPI_Get_library_version(char *version, int *resultlen)` (MPI-3)
        get_library_version: GetLibraryVersion = "MPI_Get_library_version" (version: *mut c_char, len: *mut i32) -> i32;
        /// `int MPI_Error_string(int errorcode, char *string, int *resultlen)`
        error_string: ErrorString = "MPI_Error_string" (code: i32, text: *mut u8, len: *mut i32) -> i32;
        /// `int MPI_Abi_get_version(int *abi_major, int *abi_minor)`: MPI 5.0, only the
        /// standard-ABI library has it.
        abi_get_version: AbiGetVersion = "MPI_Abi_get_version" (major: *mut i32, minor: *mut i32) -> i32;
    }
}

crate::foreign_functions! {
    /// The MPI functions that take handles (`MPI_Comm`, `MPI_Datatype`), with `H` the loaded
    /// ABI's handle type. All return `int`.
    struct MpiHandleFns<H>, enum MpiHandleSym {
        /// `int MPI_Comm_rank(MPI_Comm comm, int *rank)`
        comm_rank: CommRank = "MPI_Comm_rank" (comm: H, rank: *mut i32) -> i32;
        /// `int MPI_Comm_size(MPI_Comm comm, int *size)`
        comm_size: CommSize = "MPI_Comm_size" (comm: H, size: *mut i32) -> i32;
        /// `int MPI_Type_size(MPI_Datatype datatype, int *size)`
        type_size: TypeSize = "MPI_Type_size" (datatype: H, size: *mut i32) -> i32;
        /// `int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root,
        /// MPI_Comm comm, MPI_Request *request)`
        ibcast: Ibcast = "MPI_Ibcast"
            (buffer: *mut u8, count: i32, datatype: H, root: i32, comm: H, request: *mut u8) -> i32;
    }
}

/// MPICH's `mpi.h`: `#define MPI_COMM_WORLD ((MPI_Comm)0x44000000)`.
const MPICH_COMM_WORLD: i32 = 0x4400_0000;
/// MPICH's `mpi.h`: `#define MPI_BYTE ((MPI_Datatype)0x4c00010d)`.
const MPICH_BYTE: i32 = 0x4c00_010d;
/// The standard ABI's `mpi.h`: `#define MPI_COMM_WORLD ((MPI_Comm)0x00000101)`.
const STANDARD_COMM_WORLD: usize = 0x101;
/// The standard ABI's `mpi.h`: `#define MPI_BYTE ((MPI_Datatype)0x00000247)`.
const STANDARD_BYTE: usize = 0x247;
/// `MPI_MAX_LIBRARY_VERSION_STRING` is 256 in Open MPI and 8192 in MPICH and the standard ABI.
const VERSION_BYTES: usize = 8192;
/// Bigger than every `MPI_Status` (Open MPI 24 bytes, MPICH 20, the standard ABI 32).
const STATUS_BYTES: usize = 256;

/// The functions with handles, bound for one ABI, with that ABI's `MPI_COMM_WORLD` and
/// `MPI_BYTE`.
struct Handles<H> {
    fns: MpiHandleFns<H>,
    comm_world: H,
    byte: H,
}

/// The calls that take handles, whatever the handle type: each returns MPI's result code
/// (`Err` only for a function the library lacks, which loading has ruled out).
trait HandleCalls {
    fn comm_rank(&self, rank: *mut i32) -> Result<i32, Error>;
    fn comm_size(&self, size: *mut i32) -> Result<i32, Error>;
    fn byte_size(&self, size: *mut i32) -> Result<i32, Error>;
    fn ibcast_bytes(&self, data: *mut u8, count: i32, root: i32, request: *mut u8) -> Result<i32, Error>;
    fn missing(&self) -> Vec<&'static str>;
}

impl<H: crate::CArg + Copy + 'static> HandleCalls for Handles<H> {
    fn comm_rank(&self, rank: *mut i32) -> Result<i32, Error> {
        // SAFETY: the ABI's MPI_COMM_WORLD and a live `int` (callers).
        Ok(unsafe { self.fns.comm_rank(self.comm_world, rank) }?)
    }
    fn comm_size(&self, size: *mut i32) -> Result<i32, Error> {
        // SAFETY: as above.
        Ok(unsafe { self.fns.comm_size(self.comm_world, size) }?)
    }
    fn byte_size(&self, size: *mut i32) -> Result<i32, Error> {
        // SAFETY: the ABI's MPI_BYTE and a live `int` (callers).
        Ok(unsafe { self.fns.type_size(self.byte, size) }?)
    }
    fn ibcast_bytes(&self, data: *mut u8, count: i32, root: i32, request: *mut u8) -> Result<i32, Error> {
        // SAFETY: `data` holds `count` bytes and `request` an MPI_Request, both kept alive until
        // the request completes or leaked (the caller, `MpiSession::broadcast`).
        Ok(unsafe { self.fns.ibcast(data, count, self.byte, root, self.comm_world, request) }?)
    }
    fn missing(&self) -> Vec<&'static str> {
        self.fns.missing()
    }
}

/// An MPI library, loaded, its ABI detected and its call plans made.
pub struct Mpi {
    path: String,
    abi: MpiAbi,
    version: String,
    fns: MpiFns,
    handles: Box<dyn HandleCalls>,
    // Last field: dropped after the bindings that point into it.
    _lib: libloading::Library,
}

impl core::fmt::Debug for Mpi {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Mpi").field("path", &self.path).field("abi", &self.abi).field("version", &self.version).finish()
    }
}

/// The libraries to try for a job started by `launcher`, in order: the one the user names,
/// then the launcher's own MPI, then the standard ABI, then the rest.
pub fn candidates(launcher: Launcher) -> Vec<String> {
    let mut v: Vec<String> = std::env::var(vars::MPI_LIBRARY).ok().filter(|s| !s.is_empty()).into_iter().collect();
    let open_mpi = ["libmpi.so.40"];
    let mpich = ["libmpi.so.12", "libmpich.so.12"];
    let standard = ["libmpi_abi.so.1", "libmpi_abi.so.0", "libmpi_abi.so"];
    let native: Vec<&str> = match launcher {
        Launcher::OpenMpi => open_mpi.to_vec(),
        Launcher::Mpich | Launcher::Mvapich2 => mpich.to_vec(),
        _ => open_mpi.iter().chain(mpich.iter()).copied().collect(),
    };
    for name in native.into_iter().chain(standard).chain(["libmpi.so"]) {
        if !v.iter().any(|c| c == name) {
            v.push(name.to_string());
        }
    }
    v
}

#[cfg(unix)]
fn open(path: &str, only_if_loaded: bool) -> Result<libloading::Library, String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    // RTLD_GLOBAL: MPI libraries load their own plug-ins, which expect MPI's symbols to be
    // global, as they are when a program links MPI.
    // RTLD_NODELETE: MPI registers exit handlers and threads; it must never be unmapped.
    let mut flags = RTLD_NOW | RTLD_GLOBAL | libc::RTLD_NODELETE;
    if only_if_loaded {
        flags |= libc::RTLD_NOLOAD;
    }
    if only_if_loaded {
        // SAFETY: RTLD_NOLOAD maps nothing: an MPI already in the process, or an error.
        return unsafe { Library::open(Some(path), flags) }.map(Into::into).map_err(|e| e.to_string());
    }
    // SAFETY: loading an MPI library runs its initialisers, which is what linking it would
    // do; nothing else happens until MPI_Init. Its file is checked before the loader maps it
    // (docs/adr/0024).
    unsafe { crate::foreign::loader::load(std::path::Path::new(path), flags) }
        .map(|loaded| loaded.library)
        .map_err(|e| e.to_string())
}

#[cfg(not(unix))]
fn open(_path: &str, _only_if_loaded: bool) -> Result<libloading::Library, String> {
    Err("MPI is loaded only on Unix systems".into())
}

impl Mpi {
    /// Loads the MPI of a job started by `launcher`: an MPI already in the process if there is
    /// one, else the first of [`candidates`] that loads and has an ABI this crate knows.
    pub fn load(launcher: Launcher) -> Result<Mpi, Error> {
        let names = candidates(launcher);
        for name in &names {
            if let Ok(lib) = open(name, true) {
                return Self::from_library(lib, name);
            }
        }
        let mut tried = Vec::new();
        for name in &names {
            match open(name, false) {
                Ok(lib) => match Self::from_library(lib, name) {
                    Ok(m) => return Ok(m),
                    Err(e) => tried.push(format!("{name}: {e}")),
                },
                Err(e) => tried.push(format!("{name}: {e}")),
            }
        }
        Err(Error::MpiNotFound { tried })
    }

    /// Loads the MPI library at `path`.
    pub fn load_from(path: &str) -> Result<Mpi, Error> {
        let lib = open(path, false).map_err(|e| Error::MpiNotFound { tried: vec![format!("{path}: {e}")] })?;
        Self::from_library(lib, path)
    }

    fn from_library(lib: libloading::Library, path: &str) -> Result<Mpi, Error> {
        let fail = |detail: String| Error::MpiLibrary { library: path.to_string(), detail };
        let address = |name: &str| -> Option<*const c_void> {
            let mut c = name.as_bytes().to_vec();
            c.push(0);
            // SAFETY: only the address is read.
            unsafe { lib.get::<*const c_void>(&c) }.ok().map(|s| *s).filter(|p| !p.is_null())
        };
        let fns = MpiFns::resolve(&lib)?;
        // The ABI, from what the library exports. MPI_Abi_get_version exists only in the
        // standard ABI; Open MPI exports its predefined objects; MPICH's family says so in its
        // version string (both callable before MPI_Init).
        let version = library_version(&fns).map_err(fail)?;
        let standard = fns.abi_get_version.is_bound() && abi_version(&fns).map_err(fail)?.0 >= 1;
        let (abi, handles): (MpiAbi, Box<dyn HandleCalls>) = if standard {
            let comm_world = STANDARD_COMM_WORLD as *const c_void;
            let byte = STANDARD_BYTE as *const c_void;
            (MpiAbi::Standard, Box::new(Handles { fns: MpiHandleFns::resolve(&lib)?, comm_world, byte }))
        } else if let (Some(comm_world), Some(byte)) = (address("ompi_mpi_comm_world"), address("ompi_mpi_byte")) {
            (MpiAbi::OpenMpi, Box::new(Handles { fns: MpiHandleFns::resolve(&lib)?, comm_world, byte }))
        } else if ["MPICH", "MVAPICH", "Intel(R) MPI"].iter().any(|m| version.contains(m)) {
            let (comm_world, byte) = (MPICH_COMM_WORLD, MPICH_BYTE);
            (MpiAbi::Mpich, Box::new(Handles { fns: MpiHandleFns::<i32>::resolve(&lib)?, comm_world, byte }))
        } else {
            return Err(fail(format!(
                "unknown MPI ABI: not the standard ABI, not Open MPI, not MPICH's family (\"{}\")",
                version.lines().next().unwrap_or("")
            )));
        };
        // Every function is needed but MPI_Abi_get_version (MPI 5.0).
        let missing = fns.missing().into_iter().filter(|n| *n != MpiSym::AbiGetVersion.name());
        if let Some(name) = missing.chain(handles.missing()).next() {
            return Err(fail(format!("{name} is missing")));
        }
        Ok(Mpi { path: path.to_string(), abi, version, fns, handles, _lib: lib })
    }

    /// The library's path or name.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The ABI detected.
    pub fn abi(&self) -> MpiAbi {
        self.abi
    }

    /// `MPI_Get_library_version`'s text.
    pub fn library_version(&self) -> &str {
        &self.version
    }

    /// `Ok` for `MPI_SUCCESS` (0), else [`Error::Mpi`] with MPI's error text.
    fn check(&self, function: &'static str, code: Result<i32, impl Into<Error>>) -> Result<(), Error> {
        match code.map_err(Into::into)? {
            0 => Ok(()),
            code => Err(Error::Mpi { function, code, text: self.error_string(code) }),
        }
    }

    fn error_string(&self, code: i32) -> String {
        // MPI_MAX_ERROR_STRING: 256 in Open MPI, 1024 in MPICH, 512 in the standard ABI.
        let mut buf = vec![0u8; 4096];
        let mut len = 0i32;
        // SAFETY: `int MPI_Error_string(int, char *, int *)`; the buffer exceeds every
        // implementation's MPI_MAX_ERROR_STRING.
        let r = unsafe { self.fns.error_string(code, buf.as_mut_ptr(), &mut len) };
        if r != Ok(0) {
            return String::new();
        }
        let n = usize::try_from(len).unwrap_or(0).min(buf.len());
        String::from_utf8_lossy(&buf[..n]).trim_end_matches('\0').to_string()
    }

    /// `MPI_Initialized` or `MPI_Finalized`.
    fn flag(&self, sym: MpiSym) -> Result<bool, Error> {
        let mut v = 0i32;
        let f = if sym == MpiSym::Finalized { &self.fns.finalized } else { &self.fns.initialized };
        // SAFETY: `int MPI_Initialized(int *)` / `int MPI_Finalized(int *)` with a live `int`.
        self.check(sym.name(), unsafe { f.call_or_missing((&mut v,)) })?;
        Ok(v != 0)
    }

    /// Starts using MPI: `MPI_Init` unless the program already did, remembering which, so
    /// that [`MpiSession::finalize`] ends only what it started. Call it from the thread that
    /// initialised MPI, if the program did.
    pub fn session(&self) -> Result<MpiSession<'_>, Error> {
        if self.flag(MpiSym::Finalized)? {
            return Err(Error::MpiLibrary {
                library: self.path.clone(),
                detail: "MPI was finalized in this process and cannot be initialised again".into(),
            });
        }
        let initialized_here = if self.flag(MpiSym::Initialized)? {
            false
        } else {
            // SAFETY: `MPI_Init(NULL, NULL)` is allowed (MPI 2.0 and later).
            self.check("MPI_Init", unsafe { self.fns.init(core::ptr::null_mut(), core::ptr::null_mut()) })?;
            true
        };
        let session = MpiSession { mpi: self, initialized_here, poisoned: false };
        // The handles are right for this library: MPI_BYTE has size 1.
        let mut size = 0i32;
        self.check("MPI_Type_size", self.handles.byte_size(&mut size))?;
        if size != 1 {
            return Err(Error::MpiLibrary {
                library: self.path.clone(),
                detail: format!("MPI_Type_size(MPI_BYTE) is {size}: the {} handles do not fit it", self.abi.name()),
            });
        }
        Ok(session)
    }
}

/// `MPI_Get_library_version`'s text.
fn library_version(fns: &MpiFns) -> Result<String, String> {
    let mut buf = vec![0u8; VERSION_BYTES + 1];
    let mut len = 0i32;
    // SAFETY: the buffer holds MPI_MAX_LIBRARY_VERSION_STRING bytes of every implementation.
    match unsafe { fns.get_library_version(buf.as_mut_ptr().cast(), &mut len) } {
        Ok(0) => {}
        Ok(r) => return Err(format!("MPI_Get_library_version returned {r}")),
        Err(_) => return Err("no MPI_Get_library_version (MPI-3): not an MPI library this crate can use".into()),
    }
    let n = buf.iter().position(|&b| b == 0).unwrap_or(VERSION_BYTES);
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// `MPI_Abi_get_version`'s major and minor (the standard ABI only).
fn abi_version(fns: &MpiFns) -> Result<(i32, i32), String> {
    let (mut major, mut minor) = (-1i32, -1i32);
    // SAFETY: two live ints.
    match unsafe { fns.abi_get_version(&mut major, &mut minor) } {
        Ok(0) => Ok((major, minor)),
        Ok(r) => Err(format!("MPI_Abi_get_version returned {r}")),
        Err(e) => Err(e.to_string()),
    }
}

/// MPI in use: finalized on [`finalize`](Self::finalize) or drop if this session initialised
/// it, left alone if the program did.
#[derive(Debug)]
pub struct MpiSession<'m> {
    mpi: &'m Mpi,
    initialized_here: bool,
    /// A broadcast timed out with its request still pending: MPI must not be finalized (it
    /// would wait for it), and its buffers were leaked so MPI can still write them.
    poisoned: bool,
}

/// What a pending broadcast owns; leaked if it times out, since MPI may still write it.
struct Pending {
    data: Vec<u8>,
    request: [u8; 16],
    status: [u8; STATUS_BYTES],
}

impl MpiSession<'_> {
    /// Whether this session called `MPI_Init` (and will call `MPI_Finalize`).
    pub fn initialized_here(&self) -> bool {
        self.initialized_here
    }

    /// An `int` of `MPI_COMM_WORLD` that `call` writes (`function` names it in errors).
    fn world_int(
        &self,
        function: &'static str,
        call: fn(&dyn HandleCalls, *mut i32) -> Result<i32, Error>,
    ) -> Result<i32, Error> {
        let mut v = -1i32;
        self.mpi.check(function, call(&*self.mpi.handles, &mut v))?;
        Ok(v)
    }

    /// `MPI_Comm_rank(MPI_COMM_WORLD)`.
    pub fn rank(&self) -> Result<i32, Error> {
        self.world_int("MPI_Comm_rank", |h, v| h.comm_rank(v))
    }

    /// `MPI_Comm_size(MPI_COMM_WORLD)`.
    pub fn size(&self) -> Result<i32, Error> {
        self.world_int("MPI_Comm_size", |h, v| h.comm_size(v))
    }

    /// Broadcasts `buf` from `root` over `MPI_COMM_WORLD` (`MPI_Ibcast` of bytes, then
    /// `MPI_Test` until done), within `timeout` (`Duration::MAX`: none). MPI cannot cancel a
    /// collective: on a timeout the request stays pending, its buffers are leaked for MPI to
    /// finish with, MPI is not finalized, and the process should end (the launcher then ends
    /// the job).
    pub fn broadcast(&mut self, buf: &mut [u8], root: u32, timeout: Duration) -> Result<(), Error> {
        let count =
            i32::try_from(buf.len()).map_err(|_| Error::MpiTooLarge { function: "MPI_Bcast", what: "count" })?;
        let root = i32::try_from(root).map_err(|_| Error::MpiTooLarge { function: "MPI_Bcast", what: "root rank" })?;
        let deadline = Deadline::within(timeout);
        let mut pending = Box::new(Pending { data: buf.to_vec(), request: [0; 16], status: [0; STATUS_BYTES] });
        let (data, request): (*mut u8, *mut u8) = (pending.data.as_mut_ptr(), pending.request.as_mut_ptr());
        self.mpi.check("MPI_Ibcast", self.mpi.handles.ibcast_bytes(data, count, root, request))?;
        let mut backoff = Backoff::new();
        loop {
            let mut flag = 0i32;
            // SAFETY: the request MPI_Ibcast filled, a live `int`, and a buffer larger than
            // every MPI_Status.
            let r = unsafe { self.mpi.fns.test(request, &mut flag, pending.status.as_mut_ptr()) };
            self.mpi.check("MPI_Test", r)?;
            if flag != 0 {
                buf.copy_from_slice(&pending.data);
                return Ok(());
            }
            if deadline.passed() {
                self.poisoned = true;
                Box::leak(pending);
                return Err(Error::RendezvousTimeout {
                    waited: timeout,
                    waiting_for: "MPI_Ibcast of the unique id (MPI is left initialised: end the process)",
                });
            }
            backoff.pause(deadline.left());
        }
    }

    /// Ends MPI if this session started it (`MPI_Finalize`); otherwise does nothing.
    pub fn finalize(mut self) -> Result<(), Error> {
        self.finish()
    }

    fn finish(&mut self) -> Result<(), Error> {
        if core::mem::take(&mut self.initialized_here) && !self.poisoned && !self.mpi.flag(MpiSym::Finalized)? {
            // SAFETY: `int MPI_Finalize(void)`, once, by the session that initialised MPI.
            self.mpi.check("MPI_Finalize", unsafe { self.mpi.fns.finalize() })?;
        }
        Ok(())
    }
}

impl Drop for MpiSession<'_> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
