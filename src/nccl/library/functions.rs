//! NCCL's C functions, declared once each: the symbol, the NCCL version that introduced it, and
//! its prototype in Rust types. From each line come the [`Sym`] that names it, its entry in the
//! version table, the call plan (built from the Rust types' C types) and a typed binding
//! ([`Function`]) checked against that plan once, when the library is loaded. Every facade call
//! goes through its binding, with no per-call checks; a call site whose Rust values differ from
//! the declaration does not compile.

use core::ffi::{c_char, c_void};

use crate::engine::typed::{CArgs, CRet, ValueAt};
use crate::nccl::types::device_api::MultimemHandle;
use crate::nccl::types::device_api::WaitSignalDesc;
use crate::nccl::types::device_api::{CftTeamMode, Team};
use crate::nccl::types::enums::{DataType, MemStat, NcclResult, RedOp, ScalarResidence};
use crate::nccl::types::error::Error;
use crate::nccl::types::unique_id::UniqueId;
use crate::nccl::types::version::Version;

/// A communicator handle, `ncclComm_t`.
type Comm = *mut c_void;
/// A CUDA (or HIP) stream, `cudaStream_t`.
type CudaStream = *mut c_void;
/// A runtime parameter's handle, `ncclParamHandle_t` (owned by NCCL's parameter system).
type ParamHandle = *mut c_void;

/// What the table knows of one symbol (name, since, prototype).
pub(crate) type SymInfo = crate::foreign::symbols::Symbol<Sym>;

/// A function of the table bound to its Rust types, or unbound where the loaded library lacks
/// it (calling it then is [`Error::Unsupported`] for a library older than the symbol, or
/// [`Error::SymbolMissing`] for one new enough that still lacks it).
pub(crate) type Function<A, R> = crate::foreign::symbols::Function<Sym, A, R>;

/// What a call of the table needs of the library it was bound in: the library's version, to
/// say why a function it lacks cannot be called. [`Nccl`](crate::nccl::Nccl) is one.
pub(crate) trait LibraryVersion {
    /// The version of the loaded library.
    fn library_version(&self) -> Version;
}

impl<A: CArgs, R: CRet> crate::foreign::symbols::Function<Sym, A, R> {
    /// Calls the function with `args`; [`Error::Unsupported`] (or [`Error::SymbolMissing`]) if
    /// `nccl` lacks it.
    ///
    /// # Safety
    ///
    /// `nccl` is the library the function was bound in, and NCCL's contract for these argument
    /// values holds (valid pointers, handles of this library, the threads it allows).
    #[inline(always)]
    pub(crate) unsafe fn call(&self, nccl: &impl LibraryVersion, args: A) -> Result<R, Error> {
        // SAFETY: the caller's contract.
        match unsafe { self.call_if_bound(args) } {
            Some(r) => Ok(r),
            None => Err(unsupported(self.sym(), nccl.library_version())),
        }
    }
}

/// Why `sym` cannot be called in a library of version `loaded` that does not export it.
#[cold]
pub(crate) fn unsupported(sym: Sym, loaded: Version) -> Error {
    let i = info(sym);
    let needs = since(i);
    if loaded >= needs {
        // New enough, yet without the symbol (a trimmed build, RCCL, a stripped library):
        // saying that a newer version is needed would be false.
        return Error::SymbolMissing { symbol: i.name, since: needs, loaded };
    }
    Error::Unsupported { symbol: i.name, needs, loaded }
}

/// What the table knows of `sym`.
pub(crate) fn info(sym: Sym) -> &'static SymInfo {
    let i = &SYMBOLS[sym as usize];
    debug_assert_eq!(i.sym, sym, "SYMBOLS is in Sym order");
    i
}

/// The first NCCL version that has `info`'s symbol.
pub(crate) fn since(info: &SymInfo) -> Version {
    let (major, minor, patch) = info.since.unwrap_or((2, 0, 0));
    Version::new(major, minor, patch)
}

/// NCCL's table: each line as [`foreign_functions!`](crate::foreign_functions) takes it, with
/// the `since` every NCCL line must have.
macro_rules! nccl_functions {
    ($(
        $(#[$doc:meta])*
        $field:ident: $sym:ident = $name:literal since ($ma:literal, $mi:literal, $pa:literal)
            ( $( $arg:ident : $ty:ty ),* ) -> $ret:ty;
    )*) => {
        crate::foreign_functions! {
            /// Every function of NCCL's table, bound to its Rust types.
            pub(crate) struct Functions, pub enum Sym {
                $(
                    $(#[$doc])*
                    $field: $sym = $name since ($ma, $mi, $pa) ( $( $arg: $ty ),* ) -> $ret;
                )*
            }
        }
    };
}

nccl_functions! {
    /// `ncclResult_t ncclGetVersion(int *version)`
    get_version: GetVersion = "ncclGetVersion" since (2, 3, 4) (version: *mut i32) -> NcclResult;
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
    broadcast: Broadcast = "ncclBroadcast" since (2, 2, 12)
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
    // ---- The rest of the 2.32.3 host API (part A): group simulation, scalable init, grow,
    // suspend/resume, properties, encryption, runtime parameters. Left out on purpose:
    // `ncclBcast` (the in-place form `ncclBroadcast` supersedes, with the same ABI) and
    // `ncclResetDebugInit`/`ncclResetDebugInitInternal` (deprecated debug resets, marked "not
    // supported as part of the NCCL API" in nccl.h).
    /// `ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)`
    group_simulate_end: GroupSimulateEnd = "ncclGroupSimulateEnd" since (2, 22, 3) (info: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
    /// ncclUniqueId *commIds, ncclConfig_t *config)`
    comm_init_rank_scalable: CommInitRankScalable = "ncclCommInitRankScalable" since (2, 23, 4)
        (comm: *mut Comm, nranks: i32, rank: i32, n_ids: i32, ids: *mut UniqueId, config: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId *uniqueId)`
    comm_get_unique_id: CommGetUniqueId = "ncclCommGetUniqueId" since (2, 29, 2)
        (comm: Comm, id: *mut UniqueId) -> NcclResult;
    /// `ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId *uniqueId, int rank,
    /// ncclComm_t *newcomm, ncclConfig_t *config)`
    comm_grow: CommGrow = "ncclCommGrow" since (2, 29, 2)
        (comm: Comm, nranks: i32, id: *const UniqueId, rank: i32, new_comm: *mut Comm, config: *mut c_void)
        -> NcclResult;
    /// `ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags)`
    comm_suspend: CommSuspend = "ncclCommSuspend" since (2, 29, 7) (comm: Comm, flags: i32) -> NcclResult;
    /// `ncclResult_t ncclCommResume(ncclComm_t comm)`
    comm_resume: CommResume = "ncclCommResume" since (2, 29, 7) (comm: Comm) -> NcclResult;
    /// `ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)`
    comm_mem_stats: CommMemStats = "ncclCommMemStats" since (2, 29, 7)
        (comm: Comm, stat: MemStat, value: *mut u64) -> NcclResult;
    /// `ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t *props)`
    /// (declared in nccl_device/core.h)
    comm_query_properties: CommQueryProperties = "ncclCommQueryProperties" since (2, 29, 2)
        (comm: Comm, props: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclSetEncryption(const ncclEncryptionConfig_t *config)`
    set_encryption: SetEncryption = "ncclSetEncryption" since (2, 32, 3) (config: *const c_void) -> NcclResult;
    /// `ncclResult_t ncclParamBind(ncclParamHandle_t *out, const char *key)`
    param_bind: ParamBind = "ncclParamBind" since (2, 30, 4) (out: *mut ParamHandle, key: *const c_char) -> NcclResult;
    /// `ncclResult_t ncclParamGetI8(ncclParamHandle_t h, int8_t *out)`
    param_get_i8: ParamGetI8 = "ncclParamGetI8" since (2, 30, 4) (h: ParamHandle, out: *mut i8) -> NcclResult;
    /// `ncclResult_t ncclParamGetI16(ncclParamHandle_t h, int16_t *out)`
    param_get_i16: ParamGetI16 = "ncclParamGetI16" since (2, 30, 4) (h: ParamHandle, out: *mut i16) -> NcclResult;
    /// `ncclResult_t ncclParamGetI32(ncclParamHandle_t h, int32_t *out)`
    param_get_i32: ParamGetI32 = "ncclParamGetI32" since (2, 30, 4) (h: ParamHandle, out: *mut i32) -> NcclResult;
    /// `ncclResult_t ncclParamGetI64(ncclParamHandle_t h, int64_t *out)`
    param_get_i64: ParamGetI64 = "ncclParamGetI64" since (2, 30, 4) (h: ParamHandle, out: *mut i64) -> NcclResult;
    /// `ncclResult_t ncclParamGetU8(ncclParamHandle_t h, uint8_t *out)`
    param_get_u8: ParamGetU8 = "ncclParamGetU8" since (2, 30, 4) (h: ParamHandle, out: *mut u8) -> NcclResult;
    /// `ncclResult_t ncclParamGetU16(ncclParamHandle_t h, uint16_t *out)`
    param_get_u16: ParamGetU16 = "ncclParamGetU16" since (2, 30, 4) (h: ParamHandle, out: *mut u16) -> NcclResult;
    /// `ncclResult_t ncclParamGetU32(ncclParamHandle_t h, uint32_t *out)`
    param_get_u32: ParamGetU32 = "ncclParamGetU32" since (2, 30, 4) (h: ParamHandle, out: *mut u32) -> NcclResult;
    /// `ncclResult_t ncclParamGetU64(ncclParamHandle_t h, uint64_t *out)`
    param_get_u64: ParamGetU64 = "ncclParamGetU64" since (2, 30, 4) (h: ParamHandle, out: *mut u64) -> NcclResult;
    /// `ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char **out)`
    param_get_str: ParamGetStr = "ncclParamGetStr" since (2, 30, 4)
        (h: ParamHandle, out: *mut *const c_char) -> NcclResult;
    /// `ncclResult_t ncclParamGet(ncclParamHandle_t h, void *out, int maxLen, int *len)`
    param_get: ParamGet = "ncclParamGet" since (2, 30, 4)
        (h: ParamHandle, out: *mut c_void, max_len: i32, len: *mut i32) -> NcclResult;
    /// `ncclResult_t ncclParamGetParameter(const char *key, const char **value, int *valueLen)`
    param_get_parameter: ParamGetParameter = "ncclParamGetParameter" since (2, 30, 4)
        (key: *const c_char, value: *mut *const c_char, len: *mut i32) -> NcclResult;
    /// `ncclResult_t ncclParamGetAllParameterKeys(const char ***table, int *tableLen)`
    param_get_all_parameter_keys: ParamGetAllParameterKeys = "ncclParamGetAllParameterKeys" since (2, 30, 4)
        (table: *mut *mut *const c_char, len: *mut i32) -> NcclResult;
    /// `void ncclParamDumpAll(void)`
    param_dump_all: ParamDumpAll = "ncclParamDumpAll" since (2, 30, 4) () -> ();
    // ---- end of part A.

    // ---- The device-API host helpers (2.28.3+), one-sided calls (2.29.2) and per-collective
    // configs (2.31.2). Since-versions from each release's headers (the NVIDIA/nccl tags and
    // the nvidia-nccl-cu12 wheels' include/). Left out, though exported by 2.32.3:
    // `ncclGinOutboxCreateRequirement` and `ncclGinInboxA2ACreateRequirement` (2.30.3's and
    // 2.32.3's nccl_device/host.h declare them only under `NCCL_OS_WINDOWS`: no Linux
    // prototype to bind), and the `nccl_device/core.h` team algebra (`ncclTeamRankIsMember`,
    // `ncclTeamInnerFactor`, ...: header inline functions, not exported). Declared but not
    // exported by 2.32.3, so not bound: `ncclCftBarrierCreateRequirement`.
    /// `ncclResult_t ncclDevCommCreate(ncclComm_t comm, ncclDevCommRequirements_t const* reqs,
    /// ncclDevComm_t* outDevComm)`
    dev_comm_create: DevCommCreate = "ncclDevCommCreate" since (2, 28, 3)
        (comm: Comm, reqs: *const c_void, out: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclDevCommDestroy(ncclComm_t comm, ncclDevComm_t const* devComm)`
    dev_comm_destroy: DevCommDestroy = "ncclDevCommDestroy" since (2, 28, 3)
        (comm: Comm, dev_comm: *const c_void) -> NcclResult;
    /// `ncclTeam_t ncclTeamWorld(ncclComm_t comm)`: a 12-byte struct returned by value.
    team_world: TeamWorld = "ncclTeamWorld" since (2, 28, 3) (comm: Comm) -> Team;
    /// `ncclTeam_t ncclTeamLsa(ncclComm_t comm)`
    team_lsa: TeamLsa = "ncclTeamLsa" since (2, 28, 3) (comm: Comm) -> Team;
    /// `ncclTeam_t ncclTeamRail(ncclComm_t comm)`
    team_rail: TeamRail = "ncclTeamRail" since (2, 28, 3) (comm: Comm) -> Team;
    /// `int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank)`: the team by value.
    team_rank_to_world: TeamRankToWorld = "ncclTeamRankToWorld" since (2, 28, 3)
        (comm: Comm, team: ValueAt<Team>, rank: i32) -> i32;
    /// `int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank)`
    team_rank_to_lsa: TeamRankToLsa = "ncclTeamRankToLsa" since (2, 28, 3)
        (comm: Comm, team: ValueAt<Team>, rank: i32) -> i32;
    /// `ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
    /// ncclLsaBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq)`
    lsa_barrier_create_requirement: LsaBarrierCreateRequirement = "ncclLsaBarrierCreateRequirement" since (2, 28, 3)
        (team: ValueAt<Team>, n_barriers: i32, out_handle: *mut c_void, out_req: *mut c_void) -> NcclResult;
    /// `int ncclLLA2ACalcSlots(int maxElts, int maxEltSize)`
    lla2a_calc_slots: LLA2ACalcSlots = "ncclLLA2ACalcSlots" since (2, 28, 3) (max_elts: i32, max_elt_size: i32) -> i32;
    /// `ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
    /// ncclDevResourceRequirements_t* outReq)`
    lla2a_create_requirement: LLA2ACreateRequirement = "ncclLLA2ACreateRequirement" since (2, 28, 3)
        (n_blocks: i32, n_slots: i32, out_handle: *mut c_void, out_req: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
    /// ncclGinBarrierHandle_t* outHandle, ncclDevResourceRequirements_t* outReq)`
    gin_barrier_create_requirement: GinBarrierCreateRequirement = "ncclGinBarrierCreateRequirement" since (2, 28, 7)
        (comm: Comm, team: ValueAt<Team>, n_barriers: i32, out_handle: *mut c_void, out_req: *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr)`
    win_get_user_ptr: WinGetUserPtr = "ncclWinGetUserPtr" since (2, 29, 2)
        (comm: Comm, window: *mut c_void, out: *mut *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype,
    /// int peer, ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags,
    /// ncclComm_t comm, cudaStream_t stream)`
    put_signal: PutSignal = "ncclPutSignal" since (2, 29, 2)
        (local: *const c_void, count: usize, dtype: DataType, peer: i32, peer_window: *mut c_void,
         peer_window_offset: usize, sig_idx: i32, ctx: i32, flags: u32, comm: Comm, stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
    /// cudaStream_t stream)`
    signal: Signal = "ncclSignal" since (2, 29, 2)
        (peer: i32, sig_idx: i32, ctx: i32, flags: u32, comm: Comm, stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
    /// cudaStream_t stream)`
    wait_signal: WaitSignal = "ncclWaitSignal" since (2, 29, 2)
        (n_desc: i32, descs: *mut WaitSignalDesc, comm: Comm, stream: CudaStream) -> NcclResult;
    /// `ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr)`
    get_lsa_multimem_device_pointer: GetLsaMultimemDevicePointer = "ncclGetLsaMultimemDevicePointer" since (2, 29, 2)
        (window: *mut c_void, offset: usize, out: *mut *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
    /// ncclMultimemHandle_t multimem, void** outPtr)`: the handle (one pointer) by value.
    get_multimem_device_pointer: GetMultimemDevicePointer = "ncclGetMultimemDevicePointer" since (2, 29, 2)
        (window: *mut c_void, offset: usize, multimem: ValueAt<MultimemHandle>, out: *mut *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank, void** outPtr)`
    get_lsa_device_pointer: GetLsaDevicePointer = "ncclGetLsaDevicePointer" since (2, 29, 2)
        (window: *mut c_void, offset: usize, lsa_rank: i32, out: *mut *mut c_void) -> NcclResult;
    /// `ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr)`
    get_peer_device_pointer: GetPeerDevicePointer = "ncclGetPeerDevicePointer" since (2, 29, 2)
        (window: *mut c_void, offset: usize, peer: i32, out: *mut *mut c_void) -> NcclResult;
    /// `ncclTeam_t ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode)`
    team_cft: TeamCft = "ncclTeamCft" since (2, 31, 2) (comm: Comm, mode: CftTeamMode) -> Team;
    /// `ncclTeam_t ncclTeamCftMultimem(ncclComm_t comm)`
    team_cft_multimem: TeamCftMultimem = "ncclTeamCftMultimem" since (2, 31, 2) (comm: Comm) -> Team;
    /// `ncclResult_t ncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, ncclCftLeId* leId,
    /// size_t* leOffset)`
    get_multimem_device_le_info: GetMultimemDeviceLeInfo = "ncclGetMultimemDeviceLeInfo" since (2, 31, 2)
        (window: *mut c_void, offset: usize, le_id: *mut u32, le_offset: *mut usize) -> NcclResult;
    /// `ncclResult_t ncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft,
    /// ncclTeam_t cftTeam, ncclCftLeId* leId, size_t* leOffset)`
    get_cft_device_le_info: GetCftDeviceLeInfo = "ncclGetCftDeviceLeInfo" since (2, 31, 2)
        (window: *mut c_void, offset: usize, peer_cft: i32, cft_team: ValueAt<Team>, le_id: *mut u32,
         le_offset: *mut usize) -> NcclResult;
    /// `ncclResult_t ncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld,
    /// ncclCftLeId* leId, size_t* leOffset)`
    get_peer_device_le_info: GetPeerDeviceLeInfo = "ncclGetPeerDeviceLeInfo" since (2, 31, 2)
        (window: *mut c_void, offset: usize, peer_world: i32, le_id: *mut u32, le_offset: *mut usize) -> NcclResult;
    /// `ncclResult_t ncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
    /// ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
    /// const ncclCollConfig_t* config)`
    all_reduce_config: AllReduceConfig = "ncclAllReduceConfig" since (2, 31, 2)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, op: RedOp, comm: Comm,
         stream: CudaStream, config: *const c_void) -> NcclResult;
    /// `ncclResult_t ncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count,
    /// ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config)`
    broadcast_config: BroadcastConfig = "ncclBroadcastConfig" since (2, 31, 2)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32, comm: Comm,
         stream: CudaStream, config: *const c_void) -> NcclResult;
    /// `ncclResult_t ncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
    /// ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream,
    /// const ncclCollConfig_t* config)`
    reduce_config: ReduceConfig = "ncclReduceConfig" since (2, 31, 2)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, op: RedOp, root: i32,
         comm: Comm, stream: CudaStream, config: *const c_void) -> NcclResult;
    /// `ncclResult_t ncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount,
    /// ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config)`
    all_gather_config: AllGatherConfig = "ncclAllGatherConfig" since (2, 31, 2)
        (send: *const c_void, recv: *mut c_void, send_count: usize, dtype: DataType, comm: Comm,
         stream: CudaStream, config: *const c_void) -> NcclResult;
    /// `ncclResult_t ncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount,
    /// ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream,
    /// const ncclCollConfig_t* config)`
    reduce_scatter_config: ReduceScatterConfig = "ncclReduceScatterConfig" since (2, 31, 2)
        (send: *const c_void, recv: *mut c_void, recv_count: usize, dtype: DataType, op: RedOp, comm: Comm,
         stream: CudaStream, config: *const c_void) -> NcclResult;
    /// `ncclResult_t ncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count,
    /// ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config)`
    all_to_all_config: AlltoAllConfig = "ncclAlltoAllConfig" since (2, 31, 2)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, comm: Comm,
         stream: CudaStream, config: *const c_void) -> NcclResult;
    /// `ncclResult_t ncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count,
    /// ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config)`
    gather_config: GatherConfig = "ncclGatherConfig" since (2, 31, 2)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32, comm: Comm,
         stream: CudaStream, config: *const c_void) -> NcclResult;
    /// `ncclResult_t ncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count,
    /// ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream, const ncclCollConfig_t* config)`
    scatter_config: ScatterConfig = "ncclScatterConfig" since (2, 31, 2)
        (send: *const c_void, recv: *mut c_void, count: usize, dtype: DataType, root: i32, comm: Comm,
         stream: CudaStream, config: *const c_void) -> NcclResult;
    // ---- end of the device-API, one-sided and per-collective-config block.
}

/// Every known symbol: name, first NCCL version that has it, prototype. In `Sym` order.
pub(crate) const SYMBOLS: &[SymInfo] = Functions::SYMBOLS;

/// Number of symbols in the table.
pub(crate) const SYMBOL_COUNT: usize = SYMBOLS.len();

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctype::types::Type;

    /// The prototypes as NCCL 2.32.3's `nccl.h` writes them, reduced to their C classes: `P` a
    /// pointer (handles, buffers, streams, out-pointers), `I` an `int` or C enum, `Z` a
    /// `size_t`, `Id` an `ncclUniqueId` by value. An oracle independent of the declarations.
    #[derive(Clone, Copy)]
    enum A {
        P,
        I,
        Z,
        Id,
        T,
        M,
        U,
    }
    use A::{Id, I, M, P, T, U, Z};

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
        // Part A of the rest of the host API.
        ("ncclGroupSimulateEnd", &[P]),
        ("ncclCommInitRankScalable", &[P, I, I, I, P, P]),
        ("ncclCommGetUniqueId", &[P, P]),
        ("ncclCommGrow", &[P, I, P, I, P, P]),
        ("ncclCommSuspend", &[P, I]),
        ("ncclCommResume", &[P]),
        ("ncclCommMemStats", &[P, I, P]),
        ("ncclCommQueryProperties", &[P, P]),
        ("ncclSetEncryption", &[P]),
        ("ncclParamBind", &[P, P]),
        ("ncclParamGetI8", &[P, P]),
        ("ncclParamGetI16", &[P, P]),
        ("ncclParamGetI32", &[P, P]),
        ("ncclParamGetI64", &[P, P]),
        ("ncclParamGetU8", &[P, P]),
        ("ncclParamGetU16", &[P, P]),
        ("ncclParamGetU32", &[P, P]),
        ("ncclParamGetU64", &[P, P]),
        ("ncclParamGetStr", &[P, P]),
        ("ncclParamGet", &[P, P, I, P]),
        ("ncclParamGetParameter", &[P, P, P]),
        ("ncclParamGetAllParameterKeys", &[P, P]),
        ("ncclParamDumpAll", &[]),
        // The device-API, one-sided and per-collective-config block (2.32.3's nccl.h and
        // nccl_device/host.h). `T`: ncclTeam by value, `M`: ncclMultimemHandle by value,
        // `U`: unsigned int.
        ("ncclDevCommCreate", &[P, P, P]),
        ("ncclDevCommDestroy", &[P, P]),
        ("ncclTeamWorld", &[P]),
        ("ncclTeamLsa", &[P]),
        ("ncclTeamRail", &[P]),
        ("ncclTeamRankToWorld", &[P, T, I]),
        ("ncclTeamRankToLsa", &[P, T, I]),
        ("ncclLsaBarrierCreateRequirement", &[T, I, P, P]),
        ("ncclLLA2ACalcSlots", &[I, I]),
        ("ncclLLA2ACreateRequirement", &[I, I, P, P]),
        ("ncclGinBarrierCreateRequirement", &[P, T, I, P, P]),
        ("ncclWinGetUserPtr", &[P, P, P]),
        ("ncclPutSignal", &[P, Z, I, I, P, Z, I, I, U, P, P]),
        ("ncclSignal", &[I, I, I, U, P, P]),
        ("ncclWaitSignal", &[I, P, P, P]),
        ("ncclGetLsaMultimemDevicePointer", &[P, Z, P]),
        ("ncclGetMultimemDevicePointer", &[P, Z, M, P]),
        ("ncclGetLsaDevicePointer", &[P, Z, I, P]),
        ("ncclGetPeerDevicePointer", &[P, Z, I, P]),
        ("ncclTeamCft", &[P, I]),
        ("ncclTeamCftMultimem", &[P]),
        ("ncclGetMultimemDeviceLeInfo", &[P, Z, P, P]),
        ("ncclGetCftDeviceLeInfo", &[P, Z, I, T, P, P]),
        ("ncclGetPeerDeviceLeInfo", &[P, Z, I, P, P]),
        ("ncclAllReduceConfig", &[P, P, Z, I, I, P, P, P]),
        ("ncclBroadcastConfig", &[P, P, Z, I, I, P, P, P]),
        ("ncclReduceConfig", &[P, P, Z, I, I, I, P, P, P]),
        ("ncclAllGatherConfig", &[P, P, Z, I, P, P, P]),
        ("ncclReduceScatterConfig", &[P, P, Z, I, I, P, P, P]),
        ("ncclAlltoAllConfig", &[P, P, Z, I, P, P, P]),
        ("ncclGatherConfig", &[P, P, Z, I, I, P, P, P]),
        ("ncclScatterConfig", &[P, P, Z, I, I, P, P, P]),
    ];

    /// The result types that are not `ncclResult_t`, as the headers write them.
    fn header_result(name: &str) -> Option<Type> {
        Some(match name {
            "ncclGetErrorString" | "ncclGetLastError" => Type::Pointer,
            "ncclTeamWorld" | "ncclTeamLsa" | "ncclTeamRail" | "ncclTeamCft" | "ncclTeamCftMultimem" => {
                crate::nccl::types::device_api::team_type()
            }
            "ncclParamDumpAll" => return None,
            _ => Type::I32, // ncclResult_t, and the int of ncclTeamRankTo*/ncclLLA2ACalcSlots
        })
    }

    #[test]
    fn every_declaration_matches_the_header() {
        assert_eq!(SYMBOLS.len(), HEADER.len());
        assert_eq!(Sym::ALL.len(), HEADER.len());
        let id = crate::nccl::types::unique_id::unique_id_type();
        for (i, (row, (header_name, shapes))) in SYMBOLS.iter().zip(HEADER).enumerate() {
            let (sym, name) = (row.sym, row.name);
            assert_eq!(sym as usize, i, "{name} out of order");
            assert_eq!(Sym::ALL[i], sym);
            assert_eq!(sym.name(), name);
            assert_eq!(name, *header_name);
            assert!(row.since.is_some(), "{name}: every NCCL line says its first version");
            let signature = (row.signature)().unwrap_or_else(|e| panic!("{name}: {e}"));
            let want: Vec<Type> = shapes
                .iter()
                .map(|a| match a {
                    P => Type::Pointer,
                    I => Type::I32,
                    Z => Type::U64,
                    Id => id,
                    T => crate::nccl::types::device_api::team_type(),
                    M => Type::Aggregate(crate::Aggregate::builder().field(Type::Pointer).build().unwrap()),
                    U => Type::U32,
                })
                .collect();
            assert_eq!(signature.args(), &want[..], "{name}: arguments");
            assert_eq!(signature.ret(), header_result(name).as_ref(), "{name}: result");
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
        let entries: Vec<Option<crate::foreign::symbols::Entry>> = SYMBOLS
            .iter()
            .map(|info| {
                let plan = crate::CallPlan::new(&(info.signature)().unwrap()).unwrap();
                Some(crate::foreign::symbols::Entry::from_parts(never_called as *const c_void, plan))
            })
            .collect();
        // SAFETY: nothing is called; the plans are the prototypes of the table.
        let functions = unsafe { Functions::bind(&entries) }.unwrap();
        assert!(functions.all_reduce.is_bound() && functions.comm_init_rank.is_bound());
        assert_eq!(functions.comm_init_rank_config.sym(), Sym::CommInitRankConfig);
        assert_eq!((functions.bound(), functions.missing()), (SYMBOLS.len(), Vec::<&str>::new()));
        // A table with one entry missing: that function is unbound and listed, the rest bound.
        let mut entries = entries;
        entries[Sym::CommRevoke as usize] = None;
        // SAFETY: as above.
        let functions = unsafe { Functions::bind(&entries) }.unwrap();
        assert!(!functions.comm_revoke.is_bound());
        assert_eq!((functions.bound(), functions.missing()), (SYMBOLS.len() - 1, vec!["ncclCommRevoke"]));
        // SAFETY: an unbound function calls nothing.
        let missing = unsafe { functions.comm_revoke(core::ptr::null_mut(), 0) };
        assert!(matches!(missing, Err(crate::Error::SymbolMissing { symbol: "ncclCommRevoke" })), "{missing:?}");
    }
}
