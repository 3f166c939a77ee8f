//! Finding, loading and describing an NCCL (or RCCL) library, and its version-adaptive symbol
//! table: every known symbol resolved to an optional entry with its call plan prepared once.
//!
//! Every candidate goes through `foreign::loader` (docs/adr/0024): opened once without
//! blocking, its ELF structure checked, and that very file loaded; each bound symbol must be a
//! function of the file, the version code one an NCCL 2 reports, and RCCL is told from the
//! file's soname or exports.

use core::ffi::c_void;
use core::fmt;
use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::cuda::Driver;

use crate::abi::Abi;
use crate::engine::typed::CArgs;
use crate::foreign::elf::Image;
use crate::foreign::loader::{self, Loaded};
use crate::foreign::symbols::Entry;
use crate::nccl::library::discovery;
use crate::nccl::library::discovery::{Candidate, PythonWheel, Source, LIBRARY_ENV};
use crate::nccl::library::functions::{
    info, since, unsupported, Function, Functions, LibraryVersion, Sym, SYMBOLS, SYMBOL_COUNT,
};
use crate::nccl::types::enums::NcclResult;
use crate::nccl::types::error::Error;
use crate::nccl::types::version::{Flavor, Version};
use crate::trace::trace_event;

/// What [`Nccl::discover`] found.
#[derive(Debug)]
#[non_exhaustive]
pub struct Discovery {
    /// The library loaded, or why none could be.
    pub result: Result<Nccl, Error>,
    /// The candidate that loaded.
    pub chosen: Option<Candidate>,
    /// Candidates after the chosen one, hidden by it.
    pub shadowed: Vec<Candidate>,
}

/// A loaded NCCL or RCCL: its path, version and symbol table.
///
/// A cheap handle: clones share one loaded library, which stays loaded while any clone, or any
/// [`Communicator`](crate::nccl::Communicator) made from it, lives. `Send` and `Sync`: after
/// loading it holds only immutable function addresses and plans, and NCCL's API may be entered
/// from any thread. Per-communicator rules (one thread at a time, groups per thread) are
/// enforced by [`Communicator`](crate::nccl::Communicator) and [`Group`](crate::nccl::Group).
#[derive(Clone)]
pub struct Nccl {
    lib: Arc<Library>,
}

struct Library {
    /// Every symbol of the table, in `Sym` order: address and plan (`None`: not exported).
    entries: Vec<Option<Entry>>,
    /// The same functions bound to their Rust types (the hot calls use these).
    functions: Functions,
    path: PathBuf,
    version: Version,
    flavor: Flavor,
    /// The functions the file exports (read by the check before loading), for coverage.
    exported: Vec<String>,
    /// How the library spells `ncclAlltoAll` (RCCL: `ncclAllToAll`).
    alltoall: &'static str,
    /// The CUDA driver, loaded on first use (stream waits, the watchdog, device checks).
    cuda: OnceLock<Result<Arc<Driver>, crate::cuda::Error>>,
    // Last field: dropped after the entries that point into it.
    _lib: libloading::Library,
}

// SAFETY: see `Nccl`'s documentation; the raw pointers are code addresses that never change.
unsafe impl Send for Library {}
// SAFETY: as above; nothing mutates the table after loading (the driver cell is a OnceLock).
unsafe impl Sync for Library {}

impl fmt::Debug for Nccl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nccl")
            .field("path", &self.lib.path)
            .field("version", &self.lib.version)
            .field("flavor", &self.lib.flavor)
            .finish()
    }
}

impl LibraryVersion for Nccl {
    fn library_version(&self) -> Version {
        self.version()
    }
}

impl Nccl {
    /// Loads NCCL from the discovery order (docs/adr/0011-discovery-for-what-users-have.md):
    ///
    /// 1. `NCCL_TRAMPOLINE_LIBRARY`, when set: that file or nothing. If it cannot be loaded
    ///    the error says why ([`Error::LibraryLoad`]); no other candidate is tried.
    /// 2. an NCCL or RCCL already loaded in the process;
    /// 3. the active Python environment (`VIRTUAL_ENV`, `CONDA_PREFIX`, or the environment
    ///    whose `python3` is first on `PATH`): the `nvidia-nccl-cu12`/`-cu13` wheel's
    ///    `nvidia/nccl/lib/libnccl.so.2`, PyTorch's own `torch/lib`, conda's `lib/libnccl.so.2`;
    /// 4. the system loader with `libnccl.so.2`, `libnccl.so`, then `librccl.so.1`;
    /// 5. the user's site-packages (`~/.local/lib/python3.*/site-packages`);
    /// 6. the system interpreter's site-packages and dist-packages under `/usr/local`, `/usr`.
    ///
    /// The first that loads is used. When none does, [`Error::LibraryNotFound`] lists every
    /// candidate and why it failed.
    pub fn load() -> Result<Nccl, Error> {
        Self::discover().result
    }

    /// Loads exactly the library at `path` (a file, or a bare soname such as `libnccl.so.2`,
    /// found as the system loader finds it). Nothing else is tried: if it cannot be loaded, or
    /// is not NCCL, the error is [`Error::LibraryLoad`] with the reason in one line ("no such
    /// file", "not a regular file but a FIFO", "built for aarch64, this program runs on
    /// x86_64: ...", "truncated: a load segment ends at byte 90112, the file has 4096 bytes",
    /// "ncclGetVersion is a data object in this library, not a function", a missing
    /// dependency, ...). The file is checked before the system loader maps it and the file
    /// checked is the file loaded, so a truncated or corrupted library is refused instead of
    /// crashing the process (what the check cannot see: docs/adr/0024).
    pub fn load_from(path: impl AsRef<Path>) -> Result<Nccl, Error> {
        Self::native_target()?;
        let path = path.as_ref();
        Self::open(&Candidate { source: Source::Explicit, path: path.to_path_buf() }).map_err(|r| {
            let e = r.into_error(path, None);
            trace_event!(nccl, DEBUG, "library.refused", path = %path.display(), source = %Source::Explicit,
                reason = %e, "NCCL library refused");
            e
        })
    }

    /// The candidates of the discovery order, in order (without an explicit path). The first
    /// that loads is chosen; the ones after it are shadowed. Only files that exist are listed,
    /// and the system loader's names.
    pub fn candidates() -> Vec<Candidate> {
        discovery::candidates()
    }

    /// Runs the discovery order and reports what it found: the library loaded (or the error),
    /// the candidate chosen, and the candidates after it that it shadows.
    pub fn discover() -> Discovery {
        let failed = |e| Discovery { result: Err(e), chosen: None, shadowed: Vec::new() };
        if let Err(e) = Self::native_target() {
            return failed(e);
        }
        let candidates = Self::candidates();
        let mut tried: Vec<(String, String)> = Vec::new();
        for (i, c) in candidates.iter().enumerate() {
            match Self::open(c) {
                Ok(nccl) => {
                    let shadowed = candidates[i + 1..].iter().filter(|s| s.path != c.path).cloned().collect();
                    return Discovery { result: Ok(nccl), chosen: Some(c.clone()), shadowed };
                }
                // An explicit request is never passed over for the next candidate.
                Err(r) if c.source == Source::Environment => {
                    let e = r.into_error(&c.path, Some(LIBRARY_ENV));
                    trace_event!(nccl, DEBUG, "library.refused", path = %c.path.display(), source = %c.source,
                        reason = %e, "NCCL library refused");
                    return failed(e);
                }
                Err(Rejection::Unusable(reason)) => {
                    trace_event!(nccl, DEBUG, "library.refused", path = %c.path.display(), source = %c.source,
                        reason = %reason, "NCCL library candidate refused");
                    let label = format!("({}): {reason}", c.source);
                    match tried.last_mut() {
                        // Candidates of one source that failed alike share an entry.
                        Some((paths, last)) if *last == label => *paths = format!("{paths}, {}", c.path.display()),
                        _ => tried.push((c.path.display().to_string(), label)),
                    }
                }
                Err(Rejection::Failed(e)) => return failed(e),
            }
        }
        let tried = tried.into_iter().map(|(paths, label)| format!("{paths} {label}")).collect();
        failed(Error::LibraryNotFound { tried })
    }

    pub(super) fn native_target() -> Result<(), Error> {
        match Abi::native() {
            Some(_) => Ok(()),
            None => Err(Error::Core(crate::Error::UnsupportedTarget { target: crate::engine::TARGET })),
        }
    }

    fn open(c: &Candidate) -> Result<Nccl, Rejection> {
        Self::open_with(c, 0)
    }

    /// Loads candidate `c` with `extra` `dlopen` flags besides `RTLD_NOW | RTLD_LOCAL |
    /// RTLD_NODELETE` (`RTLD_NOLOAD`: only a library already loaded).
    pub(super) fn open_with(c: &Candidate, extra: core::ffi::c_int) -> Result<Nccl, Rejection> {
        let unusable = |e: crate::foreign::error::LoadError| Rejection::Unusable(e.to_string());
        let flags = loader::NOW_LOCAL | loader::NODELETE | extra;
        // SAFETY: loading runs the library's initialisers; NCCL's and RCCL's are safe to run
        // in any process. The caller chose (or let us choose) the library to trust; its file
        // is checked before the loader maps it. RTLD_NODELETE: NCCL starts threads (the
        // bootstrap listener of `ncclGetUniqueId`, proxies) and keeps process-wide state, so
        // unmapping it while they run would crash the process.
        let loaded = unsafe { loader::load(&c.path, flags) }.map_err(unusable)?;
        let flavor = flavor(&loaded.image, &loaded.path);
        let alltoall = alltoall_spelling(&loaded.image);
        let mut entries = Vec::with_capacity(SYMBOL_COUNT);
        for info in SYMBOLS {
            let name = if info.sym == Sym::AlltoAll { alltoall } else { info.name };
            // The plan is built from the symbol's declared prototype (nccl::functions).
            let entry = Entry::resolve_signature(&loaded.library, name, &(info.signature)()?)?;
            if let Some(e) = &entry {
                // A data object exported under a function's name would be called as code.
                loaded.check_function(name, e.address()).map_err(unusable)?;
            }
            entries.push(entry);
        }
        // SAFETY: each plan is its symbol's prototype; `Library` keeps the library loaded
        // (and it is opened with RTLD_NODELETE) for as long as the bindings live.
        let functions = unsafe { Functions::bind(&entries) }?;
        let Loaded { library: lib, image, path: file, .. } = loaded;
        let path = if loader::is_bare_name(&c.path) { resolved_path(&entries).unwrap_or(file) } else { c.path.clone() };
        let mut library = Library {
            entries,
            functions,
            path,
            version: Version::new(0, 0, 0),
            flavor,
            exported: image.exported_functions(),
            alltoall,
            cuda: OnceLock::new(),
            _lib: lib,
        };
        let mut code = 0i32;
        // SAFETY: `ncclGetVersion(int *)` with a valid `int *`.
        let Some(r) = (unsafe { library.functions.get_version.call_if_bound((&mut code,)) }) else {
            return Err(Rejection::Unusable(without_get_version(&library.functions)));
        };
        if !r.is_success() {
            let nccl = Nccl { lib: Arc::new(library) };
            return Err(Rejection::Unusable(nccl.failure(Sym::GetVersion, r, core::ptr::null_mut()).to_string()));
        }
        library.version = Version::from_code(code).ok_or_else(|| {
            Rejection::Unusable(format!(
                "ncclGetVersion returned {code}, which is no NCCL 2 version (2.0.0 to 2.8.99 are 2000 to 2899, 2.9.0 to 2.99.99 are 20900 to 29999)"
            ))
        })?;
        trace_event!(nccl, INFO, "library.loaded", path = %library.path.display(), version = %library.version,
            flavor = %library.flavor, source = %c.source, requested = %c.path.display(), "NCCL library loaded");
        Ok(Nccl { lib: Arc::new(library) })
    }

    /// The file the library was loaded from: the path given, or for a bare soname the file the
    /// loader mapped (never the `/proc/self/fd/N` it was handed).
    pub fn path(&self) -> &Path {
        &self.lib.path
    }

    /// The version `ncclGetVersion` reported.
    pub fn version(&self) -> Version {
        self.lib.version
    }

    /// NCCL or RCCL.
    pub fn flavor(&self) -> Flavor {
        self.lib.flavor
    }

    /// The functions the library's file exports, as read when it was checked before loading.
    pub(crate) fn exported_functions(&self) -> &[String] {
        &self.lib.exported
    }

    /// The library's own name for `ncclAlltoAll` (RCCL spells it `ncclAllToAll`).
    pub(crate) fn alltoall_name(&self) -> &'static str {
        self.lib.alltoall
    }

    /// The pip wheel this library was installed by (`nvidia-nccl-cu12 2.28.9`, built for CUDA
    /// 12), read from the `*.dist-info` next to it; `None` for a library no wheel installed.
    pub fn python_wheel(&self) -> Option<PythonWheel> {
        PythonWheel::owning(self.path())
    }

    /// The CUDA driver, loaded on first use ([`Driver::load`]: `NCCL_TRAMPOLINE_CUDA_DRIVER`,
    /// else `libcuda.so.1`) and shared by every communicator of this library. The facade uses
    /// it for stream waits, the watchdog and device checks; without one those features return
    /// this error, and everything else works.
    pub fn cuda(&self) -> Result<&Arc<Driver>, crate::cuda::Error> {
        self.lib.cuda.get_or_init(|| Driver::load().map(Arc::new)).as_ref().map_err(Clone::clone)
    }

    /// Uses `driver` as this library's CUDA driver (instead of loading one on first use).
    /// Fails with [`Error::DriverAlreadyChosen`] once a driver was loaded or set.
    pub fn set_cuda(&self, driver: Driver) -> Result<(), Error> {
        self.lib.cuda.set(Ok(Arc::new(driver))).map_err(|_| Error::DriverAlreadyChosen)
    }

    /// The CUDA driver if one is loaded or loadable, without reporting why not.
    pub(crate) fn cuda_if_any(&self) -> Option<&Arc<Driver>> {
        self.cuda().ok()
    }

    /// True when `self` and `other` share one loaded library.
    pub(crate) fn same(&self, other: &Nccl) -> bool {
        Arc::ptr_eq(&self.lib, &other.lib)
    }

    /// True if the loaded library exports `name` (a C symbol name such as `"ncclCommSplit"`).
    pub fn has(&self, name: &str) -> bool {
        SYMBOLS.iter().any(|i| i.name == name && self.lib.entries[i.sym as usize].is_some())
    }

    /// Known symbols the loaded library lacks, with the version that introduced each.
    pub fn missing_symbols(&self) -> Vec<(&'static str, Version)> {
        SYMBOLS.iter().filter(|i| self.lib.entries[i.sym as usize].is_none()).map(|i| (i.name, since(i))).collect()
    }

    /// `ncclGetErrorString`: NCCL's text for a result code.
    pub fn error_string(&self, code: NcclResult) -> Result<String, Error> {
        // SAFETY: `ncclGetErrorString` takes any code.
        let p = unsafe { self.functions().get_error_string.call(self, (code,)) }?;
        Ok(c_string(p).unwrap_or_default())
    }

    /// `ncclGetLastError(NULL)`: the last error text NCCL recorded on this thread, if any.
    pub fn last_error(&self) -> Result<Option<String>, Error> {
        self.last_error_for(core::ptr::null_mut())
    }

    pub(crate) fn last_error_for(&self, comm: *mut c_void) -> Result<Option<String>, Error> {
        // SAFETY: `comm` is null or a communicator of this library (callers).
        let p = unsafe { self.functions().get_last_error.call(self, (comm,)) }?;
        Ok(c_string(p).filter(|s| !s.is_empty()))
    }

    /// `ncclGetUniqueId`: a fresh id for one new communicator (call it on one rank, send the
    /// bytes to the others).
    pub fn unique_id(&self) -> Result<crate::nccl::UniqueId, Error> {
        let mut id = crate::nccl::UniqueId::zeroed();
        let p: *mut crate::nccl::UniqueId = &mut id;
        // SAFETY: `p` points to 128 writable bytes.
        unsafe { self.check(&self.functions().get_unique_id, (p,), core::ptr::null_mut()) }?;
        Ok(id)
    }

    /// True if the loaded library exports `sym`.
    pub(crate) fn has_sym(&self, sym: Sym) -> bool {
        self.lib.entries[sym as usize].is_some()
    }

    /// Every function of the table, bound to its Rust types (`None` inside where the library
    /// lacks it).
    pub(crate) fn functions(&self) -> &Functions {
        &self.lib.functions
    }

    /// The error for calling `sym`, which the loaded library lacks: [`Error::Unsupported`] if the
    /// library is older than `sym`, [`Error::SymbolMissing`] if it is new enough.
    pub(crate) fn unsupported(&self, sym: Sym) -> Error {
        unsupported(sym, self.version())
    }

    /// Calls `function` and turns anything but success into [`Error::Nccl`] with NCCL's own
    /// texts (`ncclInProgress` too: callers that expect it call the function themselves).
    ///
    /// # Safety
    ///
    /// NCCL's contract for `function` holds for `args`.
    pub(crate) unsafe fn check<A: CArgs>(
        &self,
        function: &Function<A, NcclResult>,
        args: A,
        comm: *mut c_void,
    ) -> Result<(), Error> {
        // SAFETY: the caller's contract.
        let r = unsafe { function.call(self, args) }?;
        if r.is_success() {
            Ok(())
        } else {
            Err(self.failure(function.sym(), r, comm))
        }
    }

    pub(crate) fn failure(&self, sym: Sym, r: NcclResult, comm: *mut c_void) -> Error {
        let name = match r.name() {
            Some(n) => n.to_string(),
            None => self.error_string(r).unwrap_or_else(|_| "unknown result".to_string()),
        };
        let last_error = self.last_error_for(comm).ok().flatten().unwrap_or_default();
        Error::Nccl { function: info(sym).name, result: r, name, last_error, version: self.version() }
    }

    /// The C name of `sym`.
    pub(crate) fn name(sym: Sym) -> &'static str {
        info(sym).name
    }
}

/// Why a library without `ncclGetVersion` is refused: an NCCL older than the function (it has
/// NCCL's first functions), or no NCCL at all.
fn without_get_version(functions: &Functions) -> String {
    let since = since(info(Sym::GetVersion));
    if functions.get_unique_id.is_bound() && functions.comm_init_rank.is_bound() {
        format!("it exports no ncclGetVersion (NCCL {since} and later do): an NCCL older than {since}, which is not supported")
    } else {
        "it exports no ncclGetVersion: not an NCCL library".to_string()
    }
}

/// Why a candidate was not used.
pub(super) enum Rejection {
    /// The library cannot be loaded or is not NCCL: the reason, in a few words.
    Unusable(String),
    /// Something else failed (no plan for a prototype).
    Failed(Error),
}

impl From<Error> for Rejection {
    fn from(e: Error) -> Self {
        Rejection::Failed(e)
    }
}

impl From<crate::Error> for Rejection {
    fn from(e: crate::Error) -> Self {
        Rejection::Failed(Error::Core(e))
    }
}

impl Rejection {
    /// The error for a library the caller named (`variable`: the environment variable that
    /// named it).
    pub(super) fn into_error(self, path: &Path, variable: Option<&'static str>) -> Error {
        match self {
            Rejection::Unusable(reason) => Error::LibraryLoad { path: path.display().to_string(), variable, reason },
            Rejection::Failed(e) => e,
        }
    }
}

/// RCCL or NCCL, from what the file is: RCCL's soname (`librccl.so.1`; the file's name when
/// it has none) or an exported function of RCCL's own (`rccl*`), never the folders it lies in.
fn flavor(image: &Image, file: &Path) -> Flavor {
    let name =
        image.soname().map(str::to_string).or_else(|| file.file_name().map(|n| n.to_string_lossy().into_owned()));
    let named_rccl = name.is_some_and(|n| n.starts_with("librccl"));
    if named_rccl || image.exported_functions().iter().any(|f| f.starts_with("rccl")) {
        Flavor::Rccl
    } else {
        Flavor::Nccl
    }
}

/// The name under which the library exports the table's `ncclAlltoAll`: NCCL's (2.28+), else
/// RCCL's `ncclAllToAll` (the same prototype) where the file defines only that.
fn alltoall_spelling(image: &Image) -> &'static str {
    const NCCL: &str = "ncclAlltoAll";
    const RCCL: &str = "ncclAllToAll";
    if image.definition(NCCL).is_none() && image.definition(RCCL).is_some() {
        RCCL
    } else {
        NCCL
    }
}

fn c_string(p: *const core::ffi::c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: NCCL returns NUL-terminated static (or thread-local) strings.
    Some(unsafe { CStr::from_ptr(p.cast()) }.to_string_lossy().into_owned())
}

/// For a bare soname, the file the loader actually mapped (so `path()` names a real file, not
/// the `/proc/self/fd/N` it was loaded through).
fn resolved_path(entries: &[Option<Entry>]) -> Option<PathBuf> {
    let func = entries[Sym::GetVersion as usize].as_ref()?.address() as usize;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|line| {
        let mut parts = line.split_whitespace();
        let (lo, hi) = parts.next()?.split_once('-')?;
        let (lo, hi) = (usize::from_str_radix(lo, 16).ok()?, usize::from_str_radix(hi, 16).ok()?);
        (lo <= func && func < hi).then(|| parts.nth(4).map(PathBuf::from)).flatten()
    })
}
