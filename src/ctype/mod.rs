//! The C type model, the bottom of the call core: C's scalar, `long double`, complex and
//! aggregate types as the core sees them ([`Type`](types::Type), [`Aggregate`](types::Aggregate),
//! [`Signature`](types::Signature)), the values of the types Rust lacks ([`CLongDouble`](wide::CLongDouble),
//! [`Complex`](wide::Complex)), the limits a signature must stay within, and the call core's
//! error, which every layer of the core reports with.
//!
//! Nothing here knows about registers or the assembly: argument placement (`crate::abi`) maps
//! these types to locations, and the engine (`crate::engine`) runs the result.

pub(crate) mod error;
pub mod limits;
pub(crate) mod types;
pub(crate) mod wide;
