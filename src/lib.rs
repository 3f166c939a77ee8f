//! Drive NVIDIA NCCL from Rust, with no C toolchain and no CUDA headers at build time. NCCL (or
//! RCCL) is found and loaded at run time — whichever the machine has: a PyPI wheel, conda's,
//! PyTorch's, the system's — and every call into it goes through the crate's own call core, a
//! small hand-written assembly trampoline per architecture.
//!
//! # Using NCCL
//!
//! One process per GPU, started by whatever starts the job:
//!
//! ```no_run
//! use std::time::Duration;
//! use nccl_trampoline::launch::World;
//! use nccl_trampoline::nccl::Nccl;
//!
//! // torchrun, srun, mpirun, Kubeflow, or one process alone: each rank learns its place.
//! let world = World::from_env()?;
//! let nccl = Nccl::load()?;
//! // The unique id travels to every rank (authenticated TCP, MPI, NCCL_COMM_ID or a file), then
//! // ncclCommInitRank, all within the deadline.
//! let comm = world.communicator(&nccl, Duration::from_secs(120))?;
//! println!("rank {} of {}, NCCL {}", comm.rank()?, comm.count()?, nccl.version());
//! // comm.all_reduce(&send, &mut recv, RedOp::SUM, &stream)? with device buffers and a stream
//! // of your own (nccl::DeviceBuffer, nccl::Stream) or cudarc's (feature `cudarc`).
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - [`nccl`] — the facade. [`nccl::Nccl`] is a loaded library whose every function is
//!   optional: one it lacks is an error naming the version that has it. [`nccl::Communicator`]
//!   is made by init, split, shrink or grow, or adopted from code that made it (PyTorch, C++:
//!   [`nccl::Communicator::from_raw`]); it offers every collective raw on device pointers or
//!   safe on typed buffers, in groups, with per-collective configs. Everything NCCL can block
//!   in has a deadline, a communicator can be aborted from any thread
//!   ([`nccl::AbortHandle`]), and an opt-in watchdog ends work that does not finish. Errors
//!   carry NCCL's own texts ([`nccl::Error`]).
//! - [`launch`] — the job's world read from the launcher's variables, and the unique id carried
//!   to every rank.
//! - [`cuda`] — the CUDA driver, loaded the same way: devices, contexts, memory, streams,
//!   events.
//! - [`plugin`] — NCCL's plugin tables (network, GIN, tuner, profiler, environment), declared
//!   once: to write an NCCL plugin in Rust, or to host one as NCCL does.
//!
//! What happens when a peer dies, and what each method then promises, is
//! docs/adr/0009-fault-model.md and 0023.
//!
//! # The call core
//!
//! Every call into NCCL, the CUDA driver, MPI or a plugin is made by the core, which other
//! crates embed to call their own ABI-sensitive C functions and to be called back from C. It
//! runs on x86-64 (System V, `asm/x86_64.S`), AArch64 (AAPCS64, `asm/aarch64.S`) and riscv64
//! (LP64D, `asm/riscv64.S`), in four layers, each importing only from those below it
//! (docs/adr/0027-layers-kept-by-a-test.md):
//!
//! - **the C type model**: [`Type`], [`Aggregate`], [`Signature`]; the values Rust lacks
//!   ([`CLongDouble`], [`Complex`]); the [`limits`]; the core's [`Error`];
//! - **argument placement** ([`abi`]): pure Rust, one module per ABI, turning a [`Signature`]
//!   into where every byte of every argument and of the result goes;
//! - **the engine** ([`engine`]): each placement compiled once into a program the assembly
//!   walks (threaded handlers; straight-line bodies for integer signatures), run through a
//!   [`CallPlan`] checked per call ([`CallPlan::call`]) or a binding checked once
//!   ([`CallPlan::bind`], [`TypedFn`], [`CArg`], [`c_struct!`] for a `#[repr(C)]` struct passed
//!   by value); and the other direction, callbacks: a [`Callback`] is a C function pointer of a
//!   [`Signature`] known at run time, variadic ones included ([`CallbackArgs::va_list`],
//!   [`VaList`]), a [`TypedCallback`] one made from a closure of C types. The pointers are a
//!   fixed pool of entries assembled into `.text` ([`Callback::POOL_SIZE`]): no page is ever
//!   writable and executable;
//! - **run-time-loaded libraries** ([`symbols`]): a library's C functions declared once each,
//!   bound once when it loads.
//!
//! The hard case is `ncclCommInitRank`, whose 128-byte `ncclUniqueId` is passed by value: on
//! x86-64 it is copied into the outgoing stack arguments and takes no register; on AArch64 a
//! private copy is made for every call and its address goes in `x2`; on riscv64 its address
//! goes in an integer register too. Every placement is checked against the C compiler (gcc
//! and clang), natively and under qemu.
//!
//! Calling a C function through the core:
//!
//! ```
//! use core::ffi::{c_long, c_void};
//! use nccl_trampoline::{arg, Aggregate, CallPlan, Signature, Type};
//!
//! #[repr(C)]
//! #[derive(Debug, Default, PartialEq)]
//! struct LDiv { quot: c_long, rem: c_long }
//!
//! extern "C" fn my_ldiv(n: c_long, d: c_long) -> LDiv {
//!     LDiv { quot: n / d, rem: n % d }
//! }
//!
//! let ldiv_t = Aggregate::builder().field(Type::I64).field(Type::I64).build()?;
//! let sig = Signature::new(vec![Type::I64, Type::I64], Some(Type::Aggregate(ldiv_t)))?;
//! # if nccl_trampoline::Abi::native().is_none() { return Ok(()); }
//! let plan = CallPlan::new(&sig)?;
//! let (n, d): (c_long, c_long) = (47, 5);
//! let mut out = LDiv::default();
//! // SAFETY: my_ldiv has the planned signature; `out` is an LDiv, the result type.
//! unsafe { plan.call(my_ldiv as *const c_void, &[arg(&n), arg(&d)], (&mut out as *mut LDiv).cast())? };
//! assert_eq!(out, LDiv { quot: 9, rem: 2 });
//! # Ok::<(), nccl_trampoline::Error>(())
//! ```
//!
//! # Features
//!
//! None is on by default; the README's table gives each one's dependencies and Rust version.
//!
//! - `half`: `half::f16` and `half::bf16` as NCCL element types.
//! - `cudarc`: cudarc's slices and streams as the safe collectives' buffers and streams.
//! - `cli`: the `nccl-trampoline` command (`doctor`, `selftest`, `perf`).
//! - `cudarc-nccl`: cudarc's own NCCL module, for a comparison program.
//! - `bench`: the call-overhead benchmark's points of comparison.
//! - `tracing`: [`tracing`](https://docs.rs/tracing) events for operators, with a target per
//!   layer (`nccl_trampoline::nccl`, `::launch`, `::plugin`): library loads (and candidates
//!   refused), creations (begun, done, failed, given up at a deadline or dropped, and what became
//!   of the handle: aborted by the creation's thread, or its slots leaked), aborts (who asked,
//!   pending, done, timed out), revokes, finalize and destroy past their deadlines, the watchdog's
//!   start and report, each rendezvous step and the launcher's world, and a hosted plugin's log
//!   lines. No hot path emits one (a collective's enqueue, a typed call, the watchdog's event
//!   record), and no event carries the unique id or anything made from it (its fingerprint
//!   included), the rendezvous key or secret, the job id or an encryption key. Without the
//!   feature nothing is compiled in. The README's "Logging" lists every event and its fields.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod abi;
mod ctype;
pub mod cuda;
pub mod engine;
mod foreign;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
pub mod launch;
pub mod nccl;
#[doc(hidden)]
pub mod oracle;
pub mod plugin;
mod time;
mod trace;

/// Not public API: the assembly's private contract with the rest of the call core, reachable
/// here for this crate's own tests, benchmarks and tools (tests/conformance.rs,
/// tests/hardening.rs, benches/), and what the expansion of [`c_struct!`] calls in the user's
/// crate. Nothing in it is covered by semver: any item may change or go in any release, patch
/// releases included; name it only through `c_struct!`.
#[doc(hidden)]
pub mod __private {
    pub use crate::engine::c_struct::{c_struct_type, AnyBitPattern, CField, CStructField};
    pub use crate::engine::code::{code_name, layout, table, CheckedEntry, CodePath, TypedEntry, VectorCopy};
    pub use crate::engine::plan::PlanCode;
}

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use abi::Abi;
pub use ctype::error::{Error, Position, TypeDescription};
pub use ctype::limits;
pub use ctype::types::{Aggregate, AggregateBuilder, Field, Signature, Type};
pub use ctype::wide::{CLongDouble, Complex};
pub use engine::callback::{
    CVaList, CValue, Callback, CallbackArgTypes, CallbackArgs, CallbackFn, CallbackResult, CallbackReturn,
    CallbackValue, TypedCallback, VaList,
};
pub use engine::plan::{arg, CallPlan};
pub use engine::typed::{CArg, CArgs, CRet, TypedFn, ValueAt};
pub use foreign::symbols;
