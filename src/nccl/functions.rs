//! NCCL's C functions, declared once each: the symbol, the NCCL version that introduced it, and
//! its prototype in Rust types. From each line come the [`Sym`] that names it, its entry in the
//! version table, the call plan (built from the Rust types' C types) and a typed binding
//! ([`Function`]) checked against that plan once, when the library is loaded. Every facade call
//! goes through its binding, with no per-call checks; a call site whose Rust values differ from
//! the declaration does not compile.

use core::ffi::{c_char, c_void};

use crate::nccl::error::Error;
use crate::nccl::library::Nccl;
use crate::nccl::types::{DataType, NcclResult, RedOp, ScalarResidence, UniqueId};
use crate::nccl::version::Version;
use crate::symbols::Entry;
use crate::{CArgs, CRet, Signature, TypedFn, ValueAt};

/// A communicator handle, `ncclComm_t`.
type Comm = *mut c_void;
/// A CUDA (or HIP) stream, `cudaStream_t`.
type CudaStream = *mut c_void;

/// What the table knows of one symbol.
pub(crate) struct SymInfo {
    pub(crate) sym: Sym,
    pub(crate) name: &'static str,
    pub(crate) since: Version,
    /// The prototype, from the declared Rust types.
    pub(crate) signature: fn() -> Result<Signature, crate::Error>,
}

/// A function of the table bound to its Rust types, or `None` where the loaded library lacks
/// it (calling it then is [`Error::Unsupported`] or [`Error::SymbolMissing`]).
pub(crate) struct Function<A, R> {
    sym: Sym,
    typed: Option<TypedFn<A, R>>,
}

impl<A: CArgs, R: CRet> Function<A, R> {
    /// Binds `sym`'s entry (if resolved) to `A -> R`.
    ///
    /// # Safety
    ///
    /// The entry's plan is `sym`'s prototype, and the library stays loaded while the binding is
    /// used.
    unsafe fn bind(sym: Sym, entries: &[Option<Entry>]) -> Result<Self, Error> {
        let typed = match &entries[sym as usize] {
            // SAFETY: the caller's contract; `bind` checks `A -> R` against the plan.
            Some(entry) => Some(unsafe { entry.bind::<A, R>() }?),
            None => None,
        };
        Ok(Function { sym, typed })
    }

    /// The symbol.
    pub(crate) fn sym(&self) -> Sym {
        self.sym
    }

    /// Calls the function with `args`; [`Error::Unsupported`] if `nccl` is older than the
    /// function, [`Error::SymbolMissing`] if it is new enough but lacks it.
    ///
    /// # Safety
    ///
    /// `nccl` is the library the function was bound in, and NCCL's contract for these argument
    /// values holds (valid pointers, handles of this library, the threads it allows).
    #[inline(always)]
    pub(crate) unsafe fn call(&self, nccl: &Nccl, args: A) -> Result<R, Error> {
        // SAFETY: the caller's contract.
        match unsafe { self.call_if_bound(args) } {
            Some(r) => Ok(r),
            None => Err(nccl.unsupported(self.sym)),
        }
    }

    /// Calls the function with `args`, or returns `None` if the library lacks it.
    ///
    /// # Safety
    ///
    /// As [`call`](Self::call).
    #[inline(always)]
    pub(crate) unsafe fn call_if_bound(&self, args: A) -> Option<R> {
        // SAFETY: bound to this prototype when the library was loaded; the caller's contract
        // covers the values.
        self.typed.as_ref().map(|f| unsafe { f.call(args) })
    }
}

macro_rules! nccl_functions {
    ($(
        $(#[$doc:meta])*
        $field:ident: $sym:ident = $name:literal since ($ma:literal, $mi:literal, $pa:literal)
            ( $( $arg:ident : $ty:ty ),* ) -> $ret:ty;
    )*) => {
        /// Symbols the facade knows, in the order of the table.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        #[allow(missing_docs)]
        pub enum Sym {
            $( $sym, )*
        }

        /// Every known symbol: name, first NCCL version that has it, prototype. In `Sym` order.
        pub(crate) const SYMBOLS: &[SymInfo] = &[$(
            SymInfo {
                sym: Sym::$sym,
                name: $name,
                since: Version::new($ma, $mi, $pa),
                signature: crate::symbols::signature::<($($ty,)*), $ret>,
            },
        )*];

        /// Every function of the table, bound to its Rust types.
        pub(crate) struct Functions {
            $(
                $(#[$doc])*
                pub(crate) $field: Function<($($ty,)*), $ret>,
            )*
        }

        impl Functions {
            /// Binds every resolved entry (`entries` in `Sym` order).
            ///
            /// # Safety
            ///
            /// Each entry's plan is its symbol's prototype (from `SYMBOLS`), and the library
            /// stays loaded while the bindings are used.
            pub(crate) unsafe fn bind(entries: &[Option<Entry>]) -> Result<Self, Error> {
                // SAFETY: the caller's contract.
                Ok(Functions { $( $field: unsafe { Function::bind(Sym::$sym, entries) }?, )* })
            }
        }

        #[cfg(test)]
        /// Each field's Rust types, as its C types, with the symbol's name (for the tests).
        fn declared() -> Vec<(Sym, &'static str, Result<Signature, crate::Error>)> {
            vec![$( (Sym::$sym, $name, crate::symbols::signature::<($($ty,)*), $ret>()), )*]
        }
    };
}

nccl_functions! {
    /// `ncclResult_t ncclGetVersion(int *version)`
    get_version: GetVersion = "ncclGetVersion" since (2, 0, 0) (version: *mut i32) -> NcclResult;
    /// `ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId)`
    get_unique_id: GetUniqueId = "ncclGetUniqueId" since (2, 0, 0) (id: *mut UniqueId) -> NcclResult;
    /// `ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)`:
    /// the id by value (the core copies it from where it is).
    comm_init_rank: CommInitRank = "ncclCommInitRank" since (2, 0, 0)
        (comm: *mut Comm, nranks: i32, id: ValueAt<UniqueId>, rank: i32) -> NcclResult;
    /// `ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)`
    comm_init_all: CommInitAll = "ncclCommInitAll" since (2, 0, 0)
        (comms: *mut Comm, ndev: i32, devices: *const i32) -> NcclResult;
    /// `ncclResult_t ncclCommDestroy(ncclComm_t comm)`
    comm_destroy: CommDestroy = "ncclCommDestroy" since (2, 0, 0) (comm: Comm) -> NcclResult;
    /// `ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)`
    comm_count: CommCount = "ncclCommCount" since (2, 0, 0) (comm: Comm, count: *mut i32) -> NcclResult;
    /// `ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)`
    comm_cu_device: CommCuDevice = "ncclCommCuDevice" since (2, 0, 0) (comm: Comm, device: *mut i32) -> NcclResult;
    /// `ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)`
    comm_user_rank: CommUserRank = "ncclCommUserRank" since (2, 0, 0) (comm: Comm, rank: *mut i32) -> NcclResult;
    /// `const char *ncclGetErrorString(ncclResult_t result)`
    get_error_string: GetErrorString = "ncclGetErrorString" since (2, 0, 0) (result: NcclResult) -> *const c_char;
    /// `ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
    /// ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)`
    reduce: Reduce = "ncclReduce" since (2, 0, 0)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, op: RedOp, root: i32,
         comm: Comm, stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
    /// ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)`
    broadcast: Broadcast = "ncclBroadcast" since (2, 0, 0)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32, comm: Comm,
         stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
    /// ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)`
    all_reduce: AllReduce = "ncclAllReduce" since (2, 0, 0)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, op: RedOp, comm: Comm,
         stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
    /// ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)`
    reduce_scatter: ReduceScatter = "ncclReduceScatter" since (2, 0, 0)
        (send: *const c_void, recv: *mut c_void, recv_count: usize, dtype: DataType, op: RedOp, comm: Comm,
         stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
    /// ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)`
    all_gather: AllGather = "ncclAllGather" since (2, 0, 0)
        (send: *const c_void, recv: *mut c_void, send_count: usize, dtype: DataType, comm: Comm,
         stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclGroupStart(void)`
    group_start: GroupStart = "ncclGroupStart" since (2, 0, 0) () -> NcclResult;
    /// `ncclResult_t ncclGroupEnd(void)`
    group_end: GroupEnd = "ncclGroupEnd" since (2, 0, 0) () -> NcclResult;
    /// `ncclResult_t ncclCommAbort(ncclComm_t comm)`
    comm_abort: CommAbort = "ncclCommAbort" since (2, 4, 2) (comm: Comm) -> NcclResult;
    /// `ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)`
    comm_get_async_error: CommGetAsyncError = "ncclCommGetAsyncError" since (2, 4, 2)
        (comm: Comm, state: *mut i32) -> NcclResult;
    /// `ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
    /// ncclComm_t comm, cudaStream_t stream)`
    send: Send = "ncclSend" since (2, 7, 3)
        (send: *const c_void, count: usize, dtype: DataType, peer: i32, comm: Comm, stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
    /// ncclComm_t comm, cudaStream_t stream)`
    recv: Recv = "ncclRecv" since (2, 7, 3)
        (recv: *mut c_void, count: usize, dtype: DataType, peer: i32, comm: Comm, stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
    /// ncclScalarResidence_t residence, ncclComm_t comm)`
    red_op_create_pre_mul_sum: RedOpCreatePreMulSum = "ncclRedOpCreatePreMulSum" since (2, 11, 4)
        (op: *mut RedOp, scalar: *mut c_void, dtype: DataType, residence: ScalarResidence, comm: Comm) -> NcclResult;
    /// `ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)`
    red_op_destroy: RedOpDestroy = "ncclRedOpDestroy" since (2, 11, 4) (op: RedOp, comm: Comm) -> NcclResult;
    /// `const char *ncclGetLastError(ncclComm_t comm)`
    get_last_error: GetLastError = "ncclGetLastError" since (2, 13, 4) (comm: Comm) -> *const c_char;
    /// `ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId,
    /// int rank, ncclConfig_t *config)`: the id by value, as for `ncclCommInitRank`.
    comm_init_rank_config: CommInitRankConfig = "ncclCommInitRankConfig" since (2, 14, 3)
        (comm: *mut Comm, nranks: i32, id: ValueAt<UniqueId>, rank: i32, config: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclCommFinalize(ncclComm_t comm)`
    comm_finalize: CommFinalize = "ncclCommFinalize" since (2, 14, 3) (comm: Comm) -> NcclResult;
    /// `ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
    /// ncclConfig_t *config)`
    comm_split: CommSplit = "ncclCommSplit" since (2, 18, 1)
        (comm: Comm, color: i32, key: i32, new_comm: *mut Comm, config: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclMemAlloc(void **ptr, size_t size)`
    mem_alloc: MemAlloc = "ncclMemAlloc" since (2, 19, 1) (ptr: *mut *mut c_void, size: usize) -> NcclResult;
    /// `ncclResult_t ncclMemFree(void *ptr)`
    mem_free: MemFree = "ncclMemFree" since (2, 19, 1) (ptr: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)`
    comm_register: CommRegister = "ncclCommRegister" since (2, 19, 1)
        (comm: Comm, buf: *mut c_void, size: usize, handle: *mut *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)`
    comm_deregister: CommDeregister = "ncclCommDeregister" since (2, 19, 1)
        (comm: Comm, handle: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
    /// ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)`
    comm_shrink: CommShrink = "ncclCommShrink" since (2, 27, 3)
        (comm: Comm, exclude: *mut i32, count: i32, new_comm: *mut Comm, config: *mut c_void, flags: i32)
        -> NcclResult;
    /// `ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
    /// ncclWindow_t *win, int winFlags)`
    comm_window_register: CommWindowRegister = "ncclCommWindowRegister" since (2, 27, 3)
        (comm: Comm, buf: *mut c_void, size: usize, window: *mut *mut c_void, flags: i32) -> NcclResult;
    /// `ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)`
    comm_window_deregister: CommWindowDeregister = "ncclCommWindowDeregister" since (2, 27, 3)
        (comm: Comm, window: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
    /// ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)` (RCCL: `ncclAllToAll`)
    all_to_all: AlltoAll = "ncclAlltoAll" since (2, 28, 3)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, comm: Comm,
         stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
    /// ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)`
    gather: Gather = "ncclGather" since (2, 28, 3)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32, comm: Comm,
         stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
    /// ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)`
    scatter: Scatter = "ncclScatter" since (2, 28, 3)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32, comm: Comm,
         stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags)`
    comm_revoke: CommRevoke = "ncclCommRevoke" since (2, 28, 7) (comm: Comm, flags: i32) -> NcclResult;
}

/// Number of symbols in the table.
pub(crate) const SYMBOL_COUNT: usize = SYMBOLS.len();

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Type;

    /// The prototypes as NCCL 2.32.3's `nccl.h` writes them, reduced to their C classes: `P` a
    /// pointer (handles, buffers, streams, out-pointers), `I` an `int` or C enum, `Z` a
    /// `size_t`, `Id` an `ncclUniqueId` by value. An oracle independent of the declarations.
    #[derive(Clone, Copy)]
    enum A {
        P,
        I,
        Z,
        Id,
    }
    use A::{Id, I, P, Z};

    const HEADER: &[(&str, &[A])] = &[
        ("ncclGetVersion", &[P]),
        ("ncclGetUniqueId", &[P]),
        ("ncclCommInitRank", &[P, I, Id, I]),
        ("ncclCommInitAll", &[P, I, P]),
        ("ncclCommDestroy", &[P]),
        ("ncclCommCount", &[P, P]),
        ("ncclCommCuDevice", &[P, P]),
        ("ncclCommUserRank", &[P, P]),
        ("ncclGetErrorString", &[I]),
        ("ncclReduce", &[P, P, Z, I, I, I, P, P]),
        ("ncclBroadcast", &[P, P, Z, I, I, P, P]),
        ("ncclAllReduce", &[P, P, Z, I, I, P, P]),
        ("ncclReduceScatter", &[P, P, Z, I, I, P, P]),
        ("ncclAllGather", &[P, P, Z, I, P, P]),
        ("ncclGroupStart", &[]),
        ("ncclGroupEnd", &[]),
        ("ncclCommAbort", &[P]),
        ("ncclCommGetAsyncError", &[P, P]),
        ("ncclSend", &[P, Z, I, I, P, P]),
        ("ncclRecv", &[P, Z, I, I, P, P]),
        ("ncclRedOpCreatePreMulSum", &[P, P, I, I, P]),
        ("ncclRedOpDestroy", &[I, P]),
        ("ncclGetLastError", &[P]),
        ("ncclCommInitRankConfig", &[P, I, Id, I, P]),
        ("ncclCommFinalize", &[P]),
        ("ncclCommSplit", &[P, I, I, P, P]),
        ("ncclMemAlloc", &[P, Z]),
        ("ncclMemFree", &[P]),
        ("ncclCommRegister", &[P, P, Z, P]),
        ("ncclCommDeregister", &[P, P]),
        ("ncclCommShrink", &[P, P, I, P, P, I]),
        ("ncclCommWindowRegister", &[P, P, Z, P, I]),
        ("ncclCommWindowDeregister", &[P, P]),
        ("ncclAlltoAll", &[P, P, Z, I, P, P]),
        ("ncclGather", &[P, P, Z, I, I, P, P]),
        ("ncclScatter", &[P, P, Z, I, I, P, P]),
        ("ncclCommRevoke", &[P, I]),
    ];

    #[test]
    fn every_declaration_matches_the_header() {
        let declared = declared();
        assert_eq!(declared.len(), HEADER.len());
        let id = crate::nccl::types::unique_id_type();
        for (i, ((sym, name, signature), (header_name, shapes))) in declared.into_iter().zip(HEADER).enumerate() {
            assert_eq!(sym as usize, i, "{name} out of order");
            assert_eq!(SYMBOLS[i].sym, sym);
            assert_eq!(SYMBOLS[i].name, name);
            assert_eq!(name, *header_name);
            let signature = signature.unwrap_or_else(|e| panic!("{name}: {e}"));
            let want: Vec<Type> = shapes
                .iter()
                .map(|a| match a {
                    P => Type::Pointer,
                    I => Type::I32,
                    Z => Type::U64,
                    Id => id.clone(),
                })
                .collect();
            assert_eq!(signature.args(), &want[..], "{name}: arguments");
            let ret = if matches!(sym, Sym::GetErrorString | Sym::GetLastError) { Type::Pointer } else { Type::I32 };
            assert_eq!(signature.ret(), Some(&ret), "{name}: result");
            assert_eq!((SYMBOLS[i].signature)().unwrap(), signature, "{name}: the table's prototype");
        }
    }

    /// Every declaration binds to the plan of its own prototype: `CallPlan::bind` checks the
    /// Rust types against the plan one by one (and the plan compiles to a typed program).
    #[test]
    fn every_declaration_binds_to_its_plan() {
        if crate::Abi::native().is_none() {
            return;
        }
        extern "C" fn never_called() {}
        let entries: Vec<Option<Entry>> = SYMBOLS
            .iter()
            .map(|info| {
                let plan = crate::CallPlan::new(&(info.signature)().unwrap()).unwrap();
                Some(Entry::from_parts(never_called as *const c_void, plan))
            })
            .collect();
        // SAFETY: nothing is called; the plans are the prototypes of the table.
        let functions = unsafe { Functions::bind(&entries) }.unwrap();
        assert!(functions.all_reduce.typed.is_some() && functions.comm_init_rank.typed.is_some());
        assert_eq!(functions.comm_init_rank_config.sym(), Sym::CommInitRankConfig);
    }
}
