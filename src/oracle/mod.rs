//! The C compiler as oracle for the call core: a model of what a C caller passes, C source
//! generation for recording callees and reference callers, the pinned shapes, and a seeded
//! generator of random signatures.
//!
//! Not part of the crate's API (hidden, no semver promise): it is here so that the two users
//! share one copy without reaching into each other's folders (ADR 16). The conformance tests
//! (`tests/common`) compile the generated C at test time; `nccl-trampoline selftest` links the
//! C generated from the same shapes into `generated/selftest_oracle.c`, with the recording
//! runtime `oracle/runtime.c`.
//!
//! By concern: the pinned shapes (`shapes`), the model of the value bytes a C caller passes
//! (`values`), the comparison of a call through the trampoline with the C caller's (`check`),
//! the C source generation (`cgen`), the seeded random signatures (`random`) and the built-in
//! oracle of `nccl-trampoline selftest` (`selftest`).

mod cgen;
mod check;
mod random;
mod selftest;
mod shapes;
mod values;

pub use cgen::{CGen, C_PRELUDE};
pub use check::{check_call, OracleRuntime};
pub use random::{random_aggregate, random_scalar, random_signature, Rng};
pub use selftest::{fingerprint, selftest_c_source, selftest_functions, SELFTEST_RANDOM, SELFTEST_SEED};
pub use shapes::{agg, nccl_shapes, pinned_shapes, unique_id};
pub use values::{aligned, ld_ranges, scalars_of, value_ranges, Pattern, LONG_DOUBLE_VALUE_BYTES};
