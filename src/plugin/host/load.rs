//! Loading a family's plugin as NCCL does: the names of [`names::search`] in order, each
//! through the crate's checked loader (`RTLD_NOW | RTLD_LOCAL`, as plugin_open.cc's
//! `ncclOsDlopen`), then the family's table symbols from the newest version down, the table
//! checked before any of it is used: a data object at least as large as the table, with every
//! entry NCCL calls unchecked present.

use core::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::foreign::elf::Definition;
use crate::foreign::error::LoadError;
use crate::foreign::loader::{self, NOW_LOCAL};
use crate::plugin::error::PluginError;
use crate::plugin::host::names::{self, Attempt, Family};

/// One version of a family's table that the host knows.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct TableVersion {
    /// The symbol (`ncclNetPlugin_v8`).
    pub symbol: &'static str,
    /// The version number.
    pub version: u32,
    /// `sizeof` the table.
    pub size: usize,
    /// The required entries that are NULL in the table at this address.
    missing: unsafe fn(*const c_void) -> Vec<&'static str>,
}

/// The missing entries of a `T` at `at`.
///
/// # Safety
///
/// `at` points to a readable `T`.
unsafe fn missing_of<T: Table>(at: *const c_void) -> Vec<&'static str> {
    // SAFETY: the caller's contract.
    unsafe { &*at.cast::<T>() }.missing()
}

/// What the host needs of a table type.
pub(crate) trait Table {
    fn missing(&self) -> Vec<&'static str>;
}

macro_rules! versions {
    ($($table:ty => $version:literal),* $(,)?) => {
        &[$(
            TableVersion {
                symbol: <$table>::SYMBOL,
                version: $version,
                size: core::mem::size_of::<$table>(),
                missing: missing_of::<$table>,
            },
        )*]
    };
}

macro_rules! tables {
    ($($table:ty),* $(,)?) => {$(
        impl Table for $table {
            fn missing(&self) -> Vec<&'static str> {
                <$table>::missing(self)
            }
        }
    )*};
}

use crate::plugin::env::{EnvV1, EnvV2};
use crate::plugin::gin::{GinV13, GinV14};
use crate::plugin::net::{NetV10, NetV11, NetV12, NetV6, NetV7, NetV8, NetV9};
use crate::plugin::profiler::{ProfilerV1, ProfilerV2, ProfilerV3, ProfilerV4, ProfilerV5, ProfilerV6};
use crate::plugin::tuner::{TunerV2, TunerV3, TunerV4, TunerV5, TunerV6};
tables!(
    NetV6, NetV7, NetV8, NetV9, NetV10, NetV11, NetV12, GinV13, GinV14, TunerV2, TunerV3, TunerV4, TunerV5, TunerV6,
    EnvV1, EnvV2, ProfilerV1, ProfilerV2, ProfilerV3, ProfilerV4, ProfilerV5, ProfilerV6
);

/// The versions of `family`'s table the host knows, newest first (the order NCCL searches).
pub fn versions(family: Family) -> &'static [TableVersion] {
    match family {
        Family::Net => {
            versions![NetV12 => 12, NetV11 => 11, NetV10 => 10, NetV9 => 9, NetV8 => 8, NetV7 => 7, NetV6 => 6]
        }
        Family::Gin => versions![GinV14 => 14, GinV13 => 13],
        Family::Tuner => versions![TunerV6 => 6, TunerV5 => 5, TunerV4 => 4, TunerV3 => 3, TunerV2 => 2],
        Family::Env => versions![EnvV2 => 2, EnvV1 => 1],
        Family::Profiler => {
            versions![ProfilerV6 => 6, ProfilerV5 => 5, ProfilerV4 => 4, ProfilerV3 => 3, ProfilerV2 => 2, ProfilerV1 => 1]
        }
    }
}

/// Every symbol name of `family`'s tables NCCL 2.19–2.32 may look for, to tell "a version this
/// crate does not know" apart from "not a plugin of this family".
fn symbol_stem(family: Family) -> &'static str {
    match family {
        Family::Net => "ncclNetPlugin_v",
        Family::Gin => "ncclGinPlugin_v",
        Family::Tuner => "ncclTunerPlugin_v",
        Family::Profiler => "ncclProfiler_v",
        Family::Env => "ncclEnvPlugin_v",
    }
}

/// One name tried and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tried {
    /// The name handed to the loader (`(the program)` for `STATIC_PLUGIN`).
    pub name: String,
    /// What happened: `not found`, the loader's reason, `loaded`, or why its table was refused.
    pub outcome: String,
}

/// A plugin found and checked: the library (never unloaded), its table and how it was found.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Plugin {
    /// The family.
    pub family: Family,
    /// The file loaded (for `STATIC_PLUGIN`, the program's).
    pub path: PathBuf,
    /// The table's symbol and version.
    pub version: TableVersion,
    /// Every name tried before it, and it.
    pub tried: Vec<Tried>,
    /// Set when the table came from the network plugin's library (the tuner's and profiler's
    /// fallback).
    pub from_net_plugin: bool,
    table: *const c_void,
    _library: Arc<libloading::Library>,
}

// SAFETY: the table is immutable C data of a library that stays loaded (the Arc; and libraries
// are never unloaded by the crate), readable from any thread.
unsafe impl Send for Plugin {}
// SAFETY: as above.
unsafe impl Sync for Plugin {}

impl Plugin {
    /// The table's `name` (every family's table starts with its `const char *name`), read
    /// without trusting the pointer.
    pub fn name(&self) -> String {
        // SAFETY: the table is a data object at least as large as its version's table (find),
        // which starts with a pointer.
        let at = unsafe { *self.table.cast::<usize>() };
        crate::plugin::host::printf::read_string(at).unwrap_or_else(|| "(unreadable name)".into())
    }

    /// The table, as the version's type `T`.
    ///
    /// # Safety
    ///
    /// `T` is the table type of `self.version` (its symbol's type).
    pub unsafe fn table<T>(&self) -> &T {
        // SAFETY: the object was checked to be at least the table's size (find), and holds the
        // table of this version (caller); it lives as long as the library, which `self` keeps.
        unsafe { &*self.table.cast::<T>() }
    }
}

/// What the loader did with one name.
enum Opened {
    Library(loader::Loaded),
    #[cfg_attr(not(unix), allow(dead_code))]
    Program(libloading::Library),
    NotFound,
    Failed(String),
}

fn open(attempt: &Attempt) -> Opened {
    match attempt {
        Attempt::Program => {
            #[cfg(unix)]
            {
                Opened::Program(libloading::os::unix::Library::this().into())
            }
            #[cfg(not(unix))]
            {
                Opened::Failed("a plugin linked into the program is not supported on this system".into())
            }
        }
        // SAFETY: loading runs the plugin's initialisers, as NCCL's own dlopen of it would.
        Attempt::File(name) => match unsafe { loader::load(Path::new(name), NOW_LOCAL | loader::NODELETE) } {
            Ok(l) => Opened::Library(l),
            Err(LoadError::NotFound | LoadError::NoSuchFile) => Opened::NotFound,
            Err(e) => Opened::Failed(e.to_string()),
        },
    }
}

/// The family's plugin as NCCL would find it, with `value` as its variable (`None`: unset).
pub fn find(family: Family, value: Option<&str>) -> Result<Plugin, PluginError> {
    let search = names::search(family, value);
    if search.disabled {
        return Err(PluginError::Disabled { family });
    }
    let mut tried = Vec::new();
    let mut refused = None;
    for entry in &search.entries {
        match find_in_entry(family, &entry.attempts, &mut tried) {
            Ok(Some(plugin)) => return Ok(plugin),
            Ok(None) => {}
            // A library without a usable table: NCCL goes on to the next list entry (net.cc
            // marks it failed); for a single name there is none.
            Err(e) => refused = Some(e),
        }
    }
    if refused.is_none() && family.falls_back_to_net() {
        let net_value = std::env::var(Family::Net.variable()).ok();
        let net = names::search(Family::Net, net_value.as_deref());
        for entry in &net.entries {
            let mut net_tried = Vec::new();
            if let Ok(Some(mut plugin)) = find_in_entry(family, &entry.attempts, &mut net_tried) {
                tried.extend(net_tried);
                plugin.tried = tried;
                plugin.from_net_plugin = true;
                return Ok(plugin);
            }
        }
    }
    Err(refused.unwrap_or(PluginError::NotFound {
        family,
        tried: tried.iter().map(|t| format!("{}: {}", t.name, t.outcome)).collect(),
    }))
}

/// The first name of `attempts` that loads, checked for `family`'s table: `Ok(None)` when no
/// name loads, an error when one loads without a usable table.
fn find_in_entry(family: Family, attempts: &[Attempt], tried: &mut Vec<Tried>) -> Result<Option<Plugin>, PluginError> {
    for attempt in attempts {
        let name = match attempt {
            Attempt::File(n) => n.clone(),
            Attempt::Program => "(the program)".to_string(),
        };
        let (library, path, image) = match open(attempt) {
            Opened::NotFound => {
                tried.push(Tried { name, outcome: "not found".into() });
                continue;
            }
            Opened::Failed(reason) => {
                tried.push(Tried { name, outcome: reason });
                continue;
            }
            Opened::Library(l) => (l.library, l.path, Some(l.image)),
            Opened::Program(l) => (l, std::env::current_exe().unwrap_or_default(), None),
        };
        let library = Arc::new(library);
        for version in versions(family) {
            let symbol = format!("{}\0", version.symbol);
            // SAFETY: only the address is read.
            let Ok(at) = (unsafe { library.get::<*const c_void>(symbol.as_bytes()) }) else { continue };
            let at: *const c_void = *at;
            let refuse = |e: PluginError, tried: &mut Vec<Tried>| {
                tried.push(Tried { name: name.clone(), outcome: e.to_string() });
                Err(e)
            };
            if let Some(image) = &image {
                match image.definition(version.symbol) {
                    Some(Definition::Other("a data object")) | None => {}
                    Some(Definition::Other(kind)) => {
                        return refuse(PluginError::NotATable { family, path, symbol: version.symbol, kind }, tried)
                    }
                    Some(_) => {
                        return refuse(
                            PluginError::NotATable { family, path, symbol: version.symbol, kind: "a function" },
                            tried,
                        )
                    }
                }
                if let Some(size) = image.object_size(version.symbol) {
                    if size < version.size as u64 {
                        return refuse(
                            PluginError::Contract {
                                call: version.symbol.to_string(),
                                what: format!("{size} bytes, a table of this version has {}", version.size),
                            },
                            tried,
                        );
                    }
                }
            }
            // SAFETY: a data object of at least the table's size (checked above from the file's
            // symbol table; for the program itself, its own linked plugin).
            let missing = unsafe { (version.missing)(at) };
            if !missing.is_empty() {
                return refuse(PluginError::NullEntries { family, path, symbol: version.symbol, missing }, tried);
            }
            tried.push(Tried { name: name.clone(), outcome: format!("loaded, {}", version.symbol) });
            return Ok(Some(Plugin {
                family,
                path,
                version: *version,
                tried: std::mem::take(tried),
                from_net_plugin: false,
                table: at,
                _library: library,
            }));
        }
        let unknown: Vec<String> = image.as_ref().map(|i| i.exported_objects(symbol_stem(family))).unwrap_or_default();
        let e = PluginError::NoKnownVersion {
            family,
            path,
            known: versions(family).iter().map(|v| v.symbol).collect(),
            unknown,
        };
        tried.push(Tried { name, outcome: e.to_string() });
        return Err(e);
    }
    Ok(None)
}
