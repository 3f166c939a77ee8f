//! Drive NVIDIA NCCL from Rust through a hand-written, descriptor-driven assembly call core.
//!
//! The crate has three layers, from the bottom:
//!
//! - **The call core** ([`engine`]): one small assembly entry per architecture
//!   (`asm/x86_64.S`, `asm/aarch64.S`) that loads register and stack images from a
//!   [`engine::CallFrame`], calls, and stores the result registers back.
//! - **Argument placement** ([`abi`]): pure Rust, one module per ABI (System V x86-64,
//!   AAPCS64), turning a [`Signature`] into a [`CallPlan`]: where every byte goes. It is public
//!   so other crates can call their own ABI-sensitive C functions through the core.
//! - **The NCCL facade**, built on the two above.
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
#![deny(missing_docs)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod abi;
pub mod cuda;
pub mod engine;
mod error;
pub mod launch;
pub mod limits;
pub mod nccl;
mod plan;
pub mod symbols;
mod types;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub use abi::Abi;
pub use error::Error;
pub use plan::{arg, CallPlan};
pub use types::{Aggregate, AggregateBuilder, Field, Signature, Type};
