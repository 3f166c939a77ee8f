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
//! go in 64-bit or in 32-bit argument slots. Each function is declared once below with `H` for
//! a handle; the call plans are made for the ABI of the library that was loaded, which is
//! detected from what it exports, never guessed from its file name
//! (docs/adr/0010-launchers-and-rendezvous.md).

use core::ffi::{c_char, c_void};
use std::time::{Duration, Instant};

use crate::launch::error::Error;
use crate::launch::world::{vars, Launcher};
use crate::{arg, CallPlan, Signature, Type};

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

/// A handle value, in the form the loaded ABI passes it.
#[derive(Clone, Copy, Debug)]
enum Handle {
    Pointer(*const c_void),
    Int(i32),
}

/// Argument kinds of the table below.
#[derive(Clone, Copy)]
enum A {
    /// An MPI handle (`MPI_Comm`, `MPI_Datatype`): pointer or `int` by ABI.
    H,
    /// A pointer.
    P,
    /// `int`.
    I,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
enum F {
    Initialized,
    Finalized,
    Init,
    Finalize,
    CommRank,
    CommSize,
    TypeSize,
    Ibcast,
    Test,
    GetLibraryVersion,
    ErrorString,
    AbiGetVersion,
}

use A::{H, I, P};

/// Every function used: its name, arguments, and whether a library may lack it. All return
/// `int`.
const FUNCTIONS: &[(F, &str, &[A], bool)] = &[
    (F::Initialized, "MPI_Initialized", &[P], false),
    (F::Finalized, "MPI_Finalized", &[P], false),
    (F::Init, "MPI_Init", &[P, P], false),
    (F::Finalize, "MPI_Finalize", &[], false),
    (F::CommRank, "MPI_Comm_rank", &[H, P], false),
    (F::CommSize, "MPI_Comm_size", &[H, P], false),
    (F::TypeSize, "MPI_Type_size", &[H, P], false),
    (F::Ibcast, "MPI_Ibcast", &[P, I, H, I, H, P], false),
    (F::Test, "MPI_Test", &[P, P, P], false),
    (F::GetLibraryVersion, "MPI_Get_library_version", &[P, P], false),
    (F::ErrorString, "MPI_Error_string", &[I, P, P], false),
    // MPI 5.0: only the standard-ABI library has it.
    (F::AbiGetVersion, "MPI_Abi_get_version", &[P, P], true),
];

struct Entry {
    func: *const c_void,
    plan: CallPlan,
}

/// An MPI library, loaded, its ABI detected and its call plans made.
pub struct Mpi {
    path: String,
    abi: MpiAbi,
    version: String,
    fns: Vec<Option<Entry>>,
    comm_world: Handle,
    byte: Handle,
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
    // SAFETY: loading an MPI library runs its initialisers, which is what linking it would
    // do; nothing else happens until MPI_Init.
    unsafe { Library::open(Some(path), flags) }.map(Into::into).map_err(|e| e.to_string())
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
        // The ABI, from what the library exports. MPI_Abi_get_version exists only in the
        // standard ABI; Open MPI exports its predefined objects; MPICH's family says so in its
        // version string (both callable before MPI_Init).
        let version_fn = address("MPI_Get_library_version")
            .ok_or_else(|| fail("no MPI_Get_library_version (MPI-3): not an MPI library this crate can use".into()))?;
        let version = library_version(version_fn).map_err(fail)?;
        let standard = match address("MPI_Abi_get_version") {
            Some(f) => abi_version(f).map_err(fail)?.0 >= 1,
            None => false,
        };
        let (abi, comm_world, byte) = if standard {
            (
                MpiAbi::Standard,
                Handle::Pointer(STANDARD_COMM_WORLD as *const c_void),
                Handle::Pointer(STANDARD_BYTE as *const c_void),
            )
        } else if let (Some(comm), Some(byte)) = (address("ompi_mpi_comm_world"), address("ompi_mpi_byte")) {
            (MpiAbi::OpenMpi, Handle::Pointer(comm), Handle::Pointer(byte))
        } else if ["MPICH", "MVAPICH", "Intel(R) MPI"].iter().any(|m| version.contains(m)) {
            (MpiAbi::Mpich, Handle::Int(MPICH_COMM_WORLD), Handle::Int(MPICH_BYTE))
        } else {
            return Err(fail(format!(
                "unknown MPI ABI: not the standard ABI, not Open MPI, not MPICH's family (\"{}\")",
                version.lines().next().unwrap_or("")
            )));
        };
        let handle = match abi {
            MpiAbi::Mpich => Type::I32,
            MpiAbi::OpenMpi | MpiAbi::Standard => Type::Pointer,
        };
        let mut fns = Vec::with_capacity(FUNCTIONS.len());
        for (i, (f, name, args, optional)) in FUNCTIONS.iter().enumerate() {
            debug_assert_eq!(*f as usize, i, "FUNCTIONS is in F order");
            let Some(func) = address(name) else {
                if *optional {
                    fns.push(None);
                    continue;
                }
                return Err(fail(format!("{name} is missing")));
            };
            let types = args
                .iter()
                .map(|a| match a {
                    H => handle.clone(),
                    P => Type::Pointer,
                    I => Type::I32,
                })
                .collect();
            let plan = CallPlan::new(&Signature::new(types, Some(Type::I32))?)?;
            fns.push(Some(Entry { func, plan }));
        }
        Ok(Mpi { path: path.to_string(), abi, version, fns, comm_world, byte, _lib: lib })
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

    /// Calls `f`; `Err` with MPI's error text when it returns non-zero.
    fn call(&self, f: F, args: &[*const c_void]) -> Result<(), Error> {
        let name = FUNCTIONS[f as usize].1;
        let e = self.fns[f as usize]
            .as_ref()
            .ok_or_else(|| Error::MpiLibrary { library: self.path.clone(), detail: format!("{name} is missing") })?;
        let mut r = 0i32;
        // SAFETY: the plan is the function's prototype for this library's ABI (FUNCTIONS with
        // handles resolved); every caller passes pointers to values of those types and output
        // pointers to live storage of the sizes MPI writes.
        unsafe { e.plan.call(e.func, args, (&mut r as *mut i32).cast()) }?;
        if r == 0 {
            return Ok(());
        }
        Err(Error::Mpi { function: name, code: r, text: self.error_string(r) })
    }

    fn error_string(&self, code: i32) -> String {
        let Some(e) = self.fns[F::ErrorString as usize].as_ref() else { return String::new() };
        // MPI_MAX_ERROR_STRING: 256 in Open MPI, 1024 in MPICH, 512 in the standard ABI.
        let mut buf = vec![0u8; 4096];
        let mut len = 0i32;
        let (p, l) = (buf.as_mut_ptr(), &mut len as *mut i32);
        let mut r = 0i32;
        // SAFETY: `int MPI_Error_string(int, char *, int *)`; the buffer exceeds every
        // implementation's MPI_MAX_ERROR_STRING.
        let ok = unsafe { e.plan.call(e.func, &[arg(&code), arg(&p), arg(&l)], (&mut r as *mut i32).cast()) };
        if ok.is_err() || r != 0 {
            return String::new();
        }
        let n = usize::try_from(len).unwrap_or(0).min(buf.len());
        String::from_utf8_lossy(&buf[..n]).trim_end_matches('\0').to_string()
    }

    fn flag(&self, f: F) -> Result<bool, Error> {
        let mut v = 0i32;
        let p = &mut v as *mut i32;
        self.call(f, &[arg(&p)])?;
        Ok(v != 0)
    }

    /// Handle arguments point at a value of the ABI's handle type.
    fn handle_arg(h: &Handle) -> *const c_void {
        match h {
            Handle::Pointer(p) => arg(p),
            Handle::Int(i) => arg(i),
        }
    }

    /// Starts using MPI: `MPI_Init` unless the program already did, remembering which, so
    /// that [`MpiSession::finalize`] ends only what it started. Call it from the thread that
    /// initialised MPI, if the program did.
    pub fn session(&self) -> Result<MpiSession<'_>, Error> {
        if self.flag(F::Finalized)? {
            return Err(Error::MpiLibrary {
                library: self.path.clone(),
                detail: "MPI was finalized in this process and cannot be initialised again".into(),
            });
        }
        let initialized_here = if self.flag(F::Initialized)? {
            false
        } else {
            let null: *const c_void = core::ptr::null();
            self.call(F::Init, &[arg(&null), arg(&null)])?;
            true
        };
        let session = MpiSession { mpi: self, initialized_here, poisoned: false };
        // The handles are right for this library: MPI_BYTE has size 1.
        let mut size = 0i32;
        let p = &mut size as *mut i32;
        self.call(F::TypeSize, &[Self::handle_arg(&self.byte), arg(&p)])?;
        if size != 1 {
            return Err(Error::MpiLibrary {
                library: self.path.clone(),
                detail: format!("MPI_Type_size(MPI_BYTE) is {size}: the {} handles do not fit it", self.abi.name()),
            });
        }
        Ok(session)
    }
}

/// Calls `int MPI_Get_library_version(char *, int *)` at `f`.
fn library_version(f: *const c_void) -> Result<String, String> {
    let plan =
        CallPlan::new(&Signature::new(vec![Type::Pointer, Type::Pointer], Some(Type::I32)).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; VERSION_BYTES + 1];
    let mut len = 0i32;
    let (p, l): (*mut c_char, *mut i32) = (buf.as_mut_ptr().cast(), &mut len);
    let mut r = 0i32;
    // SAFETY: the prototype above; the buffer holds MPI_MAX_LIBRARY_VERSION_STRING bytes of
    // every implementation.
    unsafe { plan.call(f, &[arg(&p), arg(&l)], (&mut r as *mut i32).cast()) }.map_err(|e| e.to_string())?;
    if r != 0 {
        return Err(format!("MPI_Get_library_version returned {r}"));
    }
    let n = buf.iter().position(|&b| b == 0).unwrap_or(VERSION_BYTES);
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// Calls `int MPI_Abi_get_version(int *, int *)` at `f`.
fn abi_version(f: *const c_void) -> Result<(i32, i32), String> {
    let plan =
        CallPlan::new(&Signature::new(vec![Type::Pointer, Type::Pointer], Some(Type::I32)).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let (mut major, mut minor, mut r) = (-1i32, -1i32, 0i32);
    let (a, b): (*mut i32, *mut i32) = (&mut major, &mut minor);
    // SAFETY: the prototype above, two live ints.
    unsafe { plan.call(f, &[arg(&a), arg(&b)], (&mut r as *mut i32).cast()) }.map_err(|e| e.to_string())?;
    if r != 0 {
        return Err(format!("MPI_Abi_get_version returned {r}"));
    }
    Ok((major, minor))
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

    fn comm_int(&self, f: F) -> Result<i32, Error> {
        let mut v = -1i32;
        let p = &mut v as *mut i32;
        self.mpi.call(f, &[Mpi::handle_arg(&self.mpi.comm_world), arg(&p)])?;
        Ok(v)
    }

    /// `MPI_Comm_rank(MPI_COMM_WORLD)`.
    pub fn rank(&self) -> Result<i32, Error> {
        self.comm_int(F::CommRank)
    }

    /// `MPI_Comm_size(MPI_COMM_WORLD)`.
    pub fn size(&self) -> Result<i32, Error> {
        self.comm_int(F::CommSize)
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
        let deadline = Instant::now().checked_add(timeout);
        let mut pending = Box::new(Pending { data: buf.to_vec(), request: [0; 16], status: [0; STATUS_BYTES] });
        let (data, request): (*mut u8, *mut u8) = (pending.data.as_mut_ptr(), pending.request.as_mut_ptr());
        let byte = Mpi::handle_arg(&self.mpi.byte);
        let comm = Mpi::handle_arg(&self.mpi.comm_world);
        self.mpi.call(F::Ibcast, &[arg(&data), arg(&count), byte, arg(&root), comm, arg(&request)])?;
        let mut pause = Duration::from_micros(50);
        loop {
            let mut flag = 0i32;
            let (f, st): (*mut i32, *mut u8) = (&mut flag, pending.status.as_mut_ptr());
            self.mpi.call(F::Test, &[arg(&request), arg(&f), arg(&st)])?;
            if flag != 0 {
                buf.copy_from_slice(&pending.data);
                return Ok(());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                self.poisoned = true;
                Box::leak(pending);
                return Err(Error::RendezvousTimeout {
                    waited: timeout,
                    waiting_for: "MPI_Ibcast of the unique id (MPI is left initialised: end the process)",
                });
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// Ends MPI if this session started it (`MPI_Finalize`); otherwise does nothing.
    pub fn finalize(mut self) -> Result<(), Error> {
        self.finish()
    }

    fn finish(&mut self) -> Result<(), Error> {
        if core::mem::take(&mut self.initialized_here) && !self.poisoned && !self.mpi.flag(F::Finalized)? {
            self.mpi.call(F::Finalize, &[])?;
        }
        Ok(())
    }
}

impl Drop for MpiSession<'_> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
