//! NCCL's C enums as Rust types: open newtypes for the enums that grow between releases, how
//! they are passed to C, and the mapping from Rust scalars to NCCL data types.

use core::fmt;

use crate::ctype::types::Type;
use crate::engine::typed::{CArg, CRet};

/// `ncclResult_t`: an open newtype, so a code from a newer NCCL is kept, never mistaken for
/// success.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct NcclResult(pub i32);

impl NcclResult {
    /// `ncclSuccess`.
    pub const SUCCESS: Self = Self(0);
    /// `ncclUnhandledCudaError`.
    pub const UNHANDLED_CUDA_ERROR: Self = Self(1);
    /// `ncclSystemError`.
    pub const SYSTEM_ERROR: Self = Self(2);
    /// `ncclInternalError`.
    pub const INTERNAL_ERROR: Self = Self(3);
    /// `ncclInvalidArgument`.
    pub const INVALID_ARGUMENT: Self = Self(4);
    /// `ncclInvalidUsage`.
    pub const INVALID_USAGE: Self = Self(5);
    /// `ncclRemoteError` (2.13).
    pub const REMOTE_ERROR: Self = Self(6);
    /// `ncclInProgress` (2.14): a non-blocking operation is still running; a state, not a failure.
    pub const IN_PROGRESS: Self = Self(7);
    /// `ncclTimeout` (2.30.3).
    pub const TIMEOUT: Self = Self(8);

    /// The C name of a known code.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "ncclSuccess",
            1 => "ncclUnhandledCudaError",
            2 => "ncclSystemError",
            3 => "ncclInternalError",
            4 => "ncclInvalidArgument",
            5 => "ncclInvalidUsage",
            6 => "ncclRemoteError",
            7 => "ncclInProgress",
            8 => "ncclTimeout",
            _ => return None,
        })
    }

    /// True for `ncclSuccess` only.
    pub fn is_success(self) -> bool {
        self == Self::SUCCESS
    }
}

impl fmt::Debug for NcclResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}"),
            None => write!(f, "NcclResult({})", self.0),
        }
    }
}

/// `ncclCommMemStat_t` (2.29.7): which memory statistic `ncclCommMemStats` reports. An open
/// newtype: later releases may add statistics.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemStat(pub i32);

impl MemStat {
    /// `ncclStatGpuMemSuspend`: allocated GPU memory that can be suspended (bytes).
    pub const GPU_MEM_SUSPEND: Self = Self(0);
    /// `ncclStatGpuMemSuspended`: 1 while the memory is suspended, else 0.
    pub const GPU_MEM_SUSPENDED: Self = Self(1);
    /// `ncclStatGpuMemPersist`: allocated GPU memory that cannot be suspended (bytes).
    pub const GPU_MEM_PERSIST: Self = Self(2);
    /// `ncclStatGpuMemTotal`: all GPU memory NCCL tracks (bytes).
    pub const GPU_MEM_TOTAL: Self = Self(3);
}

/// `ncclDataType_t`: an open newtype.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataType(pub i32);

impl DataType {
    /// `ncclInt8`.
    pub const INT8: Self = Self(0);
    /// `ncclUint8`.
    pub const UINT8: Self = Self(1);
    /// `ncclInt32`.
    pub const INT32: Self = Self(2);
    /// `ncclUint32`.
    pub const UINT32: Self = Self(3);
    /// `ncclInt64`.
    pub const INT64: Self = Self(4);
    /// `ncclUint64`.
    pub const UINT64: Self = Self(5);
    /// `ncclFloat16`.
    pub const FLOAT16: Self = Self(6);
    /// `ncclFloat32`.
    pub const FLOAT32: Self = Self(7);
    /// `ncclFloat64`.
    pub const FLOAT64: Self = Self(8);
    /// `ncclBfloat16` (2.10).
    pub const BFLOAT16: Self = Self(9);
    /// `ncclFloat8e4m3` (2.24).
    pub const FLOAT8_E4M3: Self = Self(10);
    /// `ncclFloat8e5m2` (2.24).
    pub const FLOAT8_E5M2: Self = Self(11);

    /// Bytes per element of a known type.
    pub fn size(self) -> Option<usize> {
        Some(match self.0 {
            0 | 1 | 10 | 11 => 1,
            6 | 9 => 2,
            2 | 3 | 7 => 4,
            4 | 5 | 8 => 8,
            _ => return None,
        })
    }
}

/// `ncclRedOp_t`: an open newtype; ids from 5 up are handed out at run time by
/// [`Communicator::create_pre_mul_sum`](crate::nccl::Communicator::create_pre_mul_sum).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RedOp(pub i32);

impl RedOp {
    /// `ncclSum`.
    pub const SUM: Self = Self(0);
    /// `ncclProd`.
    pub const PROD: Self = Self(1);
    /// `ncclMax`.
    pub const MAX: Self = Self(2);
    /// `ncclMin`.
    pub const MIN: Self = Self(3);
    /// `ncclAvg` (2.10).
    pub const AVG: Self = Self(4);
}

/// `ncclScalarResidence_t`: where a PreMulSum scalar lives.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ScalarResidence(pub i32);

impl ScalarResidence {
    /// `ncclScalarDevice`: the scalar is in device memory and read when the collective runs.
    pub const DEVICE: Self = Self(0);
    /// `ncclScalarHostImmediate`: the scalar is read from host memory when the op is created.
    pub const HOST_IMMEDIATE: Self = Self(1);
}

/// A Rust element type NCCL can reduce. Implemented for the integer and float scalars, and with
/// the `half` feature for `half::f16` / `half::bf16`; FP8 goes through the raw entry points with
/// [`DataType`] directly.
///
/// # Safety
///
/// `DATA_TYPE` must describe `Self` exactly (size and representation).
pub unsafe trait NcclScalar: Copy + 'static {
    /// The matching NCCL type.
    const DATA_TYPE: DataType;
}

macro_rules! scalar {
    ($($t:ty => $d:ident),* $(,)?) => {$(
        // SAFETY: the NCCL type has this Rust type's size and representation.
        unsafe impl NcclScalar for $t { const DATA_TYPE: DataType = DataType::$d; }
    )*};
}
scalar!(i8 => INT8, u8 => UINT8, i32 => INT32, u32 => UINT32, i64 => INT64, u64 => UINT64, f32 => FLOAT32, f64 => FLOAT64);

#[cfg(feature = "half")]
scalar!(half::f16 => FLOAT16, half::bf16 => BFLOAT16);

// How the facade's types are passed to C (the typed bindings of `nccl::functions`).

// SAFETY: `ncclResult_t` is a C enum, an `int`; NcclResult is a transparent i32, returned as one.
unsafe impl CRet for NcclResult {
    fn c_type() -> Option<Type> {
        Some(Type::I32)
    }
}

/// The C enums, open `#[repr(transparent)]` newtypes over `i32`, passed as `int`.
macro_rules! c_enums {
    ($($t:ty),*) => {$(
        // SAFETY: a transparent i32, passed as C's `int` (the enum's type): its word is the i32's.
        unsafe impl CArg for $t {
            fn c_type() -> Type {
                Type::I32
            }
            #[inline(always)]
            fn word(&self) -> u64 {
                self.0.word()
            }
        }
    )*};
}
c_enums!(DataType, RedOp, ScalarResidence, NcclResult, MemStat);

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "half")]
    #[test]
    fn half_types_map_to_nccl_16_bit_types() {
        assert_eq!(<half::f16 as NcclScalar>::DATA_TYPE, DataType::FLOAT16);
        assert_eq!(<half::bf16 as NcclScalar>::DATA_TYPE, DataType::BFLOAT16);
    }

    #[test]
    fn unknown_codes_stay_unknown() {
        assert_eq!(NcclResult(8).name(), Some("ncclTimeout"));
        assert_eq!(NcclResult(42).name(), None);
        assert!(!NcclResult(42).is_success());
        assert_eq!(format!("{:?}", NcclResult(42)), "NcclResult(42)");
        assert_eq!(DataType::BFLOAT16.size(), Some(2));
        assert_eq!(DataType(99).size(), None);
    }
}
