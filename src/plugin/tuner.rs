//! The tuner plugin family (`libnccl-tuner*.so`, symbol `ncclTunerPlugin_vN`): every version
//! NCCL 2.21–2.32 loads, v2 to v6, transcribed from NCCL v2.30.7-1
//! `src/include/plugin/tuner/tuner_v<N>.h` and src/include/plugin/nccl_tuner.h, with the
//! algorithm and protocol indices a tuner reads its cost table by.
//!
//! Which releases search which symbol (the `dlsym` names in `src/plugin/tuner/tuner_v<N>.cc`, or
//! src/misc/tuner.cc before 2.26, per tag; 2.32.3's `libnccl.so.2` strings): v2 from 2.21,
//! v3 from 2.22, v4 from 2.24, v5 from 2.28, v6 from 2.30.3, all still in 2.32.3; NCCL tries
//! the newest first (v2.30.7-1 src/plugin/tuner.cc:73-85). Every version reaches NCCL through
//! one internal table of the newest shape (`tuner_v<N>.cc` wrap the older ones), which NCCL calls
//! at three places: `init` when a communicator is created (v2.30.7-1 src/init.cc:1640-1643),
//! `getCollInfo` for every collective (or aggregate of them) it schedules on a communicator of
//! more than one rank (src/enqueue.cc:2140-2148), `finalize` (or an older `destroy`) when the
//! communicator is freed (src/init.cc:2774-2776).

use core::ffi::{c_int, c_void};

use crate::ctype::types::Type;
use crate::engine::typed::CArg;
use crate::plugin::common::{DebugLogger, NcclResult};
use crate::plugin::declare::{plugin_struct, plugin_table};

/// `NCCL_NUM_ALGORITHMS` (nccl_tuner.h:35, `NCCL_NUM_ALGORITHMS_V5` at tuner_v5.h:19): the rows
/// of the cost table since NCCL 2.23. 2.21 and 2.22 had 6 (no PAT; src/include/devcomm.h of
/// those tags): a v3 or v4 tuner reads the count from `getCollInfo`'s `numAlgo`.
pub const NUM_ALGORITHMS: usize = 7;
/// `NCCL_NUM_PROTOCOLS` (nccl_tuner.h:41, `NCCL_NUM_PROTOCOLS_V5` at tuner_v5.h:20): the columns
/// of the cost table.
pub const NUM_PROTOCOLS: usize = 3;
/// `NCCL_NUM_HW_LINKS_V5` (tuner_v5.h:21).
pub const NUM_HW_LINKS: usize = 3;
/// `NCCL_NUM_COMPCAPS_V5` (tuner_v5.h:22).
pub const NUM_COMPCAPS: usize = 4;
/// `NCCL_NUM_TUNING_SCALES_V5` (tuner_v5.h:23).
pub const NUM_TUNING_SCALES: usize = 3;

/// `NCCL_ALGO_UNDEF` (nccl_tuner.h:27).
pub const ALGO_UNDEF: c_int = -1;
/// `NCCL_ALGO_TREE` (nccl_tuner.h:28).
pub const ALGO_TREE: c_int = 0;
/// `NCCL_ALGO_RING` (nccl_tuner.h:29).
pub const ALGO_RING: c_int = 1;
/// `NCCL_ALGO_COLLNET_DIRECT` (nccl_tuner.h:30).
pub const ALGO_COLLNET_DIRECT: c_int = 2;
/// `NCCL_ALGO_COLLNET_CHAIN` (nccl_tuner.h:31).
pub const ALGO_COLLNET_CHAIN: c_int = 3;
/// `NCCL_ALGO_NVLS` (nccl_tuner.h:32).
pub const ALGO_NVLS: c_int = 4;
/// `NCCL_ALGO_NVLS_TREE` (nccl_tuner.h:33).
pub const ALGO_NVLS_TREE: c_int = 5;
/// `NCCL_ALGO_PAT` (nccl_tuner.h:34; NCCL 2.23 and later).
pub const ALGO_PAT: c_int = 6;

/// `NCCL_PROTO_UNDEF` (nccl_tuner.h:37).
pub const PROTO_UNDEF: c_int = -1;
/// `NCCL_PROTO_LL` (nccl_tuner.h:38).
pub const PROTO_LL: c_int = 0;
/// `NCCL_PROTO_LL128` (nccl_tuner.h:39).
pub const PROTO_LL128: c_int = 1;
/// `NCCL_PROTO_SIMPLE` (nccl_tuner.h:40).
pub const PROTO_SIMPLE: c_int = 2;

/// `NCCL_ALGO_PROTO_IGNORE` (nccl_tuner.h:43, the double `-1.0`, exact as a float): the cost of
/// an algorithm/protocol NCCL will not use for this collective. NCCL fills the whole table with
/// it, then writes the time of each candidate (v2.30.7-1 src/enqueue.cc:2137-2139), and picks
/// the lowest non-negative cost after the tuner has run (topoGetAlgoInfo).
pub const ALGO_PROTO_IGNORE: f32 = -1.0;

/// `NCCL_HW_NVLINK`, `NCCL_HW_PCI`, `NCCL_HW_NET` (nccl_tuner.h:45-47): the first index of
/// [`TunerConstantsV5::hwLatencies`].
pub const HW_NVLINK: usize = 0;
/// See [`HW_NVLINK`].
pub const HW_PCI: usize = 1;
/// See [`HW_NVLINK`].
pub const HW_NET: usize = 2;

/// `NCCL_VOLTA_COMPCAP_IDX` .. `NCCL_BLACKWELL_COMPCAP_IDX` (nccl_tuner.h:50-53): the first index
/// of the bandwidth tables of [`TunerConstantsV5`].
pub const VOLTA_COMPCAP_IDX: usize = 0;
/// See [`VOLTA_COMPCAP_IDX`].
pub const AMPERE_COMPCAP_IDX: usize = 1;
/// See [`VOLTA_COMPCAP_IDX`].
pub const HOPPER_COMPCAP_IDX: usize = 2;
/// See [`VOLTA_COMPCAP_IDX`].
pub const BLACKWELL_COMPCAP_IDX: usize = 3;

/// `NCCL_TUNING_SCALE_1NODE` .. `NCCL_TUNING_SCALE_4NODES` (nccl_tuner.h:56-58): the second index
/// of the bandwidth tables of [`TunerConstantsV5`].
pub const TUNING_SCALE_1NODE: usize = 0;
/// See [`TUNING_SCALE_1NODE`].
pub const TUNING_SCALE_2NODES: usize = 1;
/// See [`TUNING_SCALE_1NODE`].
pub const TUNING_SCALE_4NODES: usize = 2;

/// NCCL's names of the algorithms, by index (`ncclAlgoStr`, v2.30.7-1 src/init.cc:53-54): what
/// its logs print.
pub const ALGORITHM_NAMES: [&str; NUM_ALGORITHMS] =
    ["Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"];
/// NCCL's names of the protocols, by index (`ncclProtoStr`, src/init.cc:55).
pub const PROTOCOL_NAMES: [&str; NUM_PROTOCOLS] = ["LL", "LL128", "Simple"];

/// The index of an algorithm named as NCCL names it ([`ALGORITHM_NAMES`]), any case.
pub fn algorithm_by_name(name: &str) -> Option<c_int> {
    ALGORITHM_NAMES.iter().position(|n| n.eq_ignore_ascii_case(name.trim())).map(|i| i as c_int)
}

/// The index of a protocol named as NCCL names it ([`PROTOCOL_NAMES`]), any case.
pub fn protocol_by_name(name: &str) -> Option<c_int> {
    PROTOCOL_NAMES.iter().position(|n| n.eq_ignore_ascii_case(name.trim())).map(|i| i as c_int)
}

/// `ncclFunc_t` (v2.30.7-1 src/include/nccl_common.h:72-90), the collective a tuner is asked
/// about: an open newtype over the C enum's `int`. A tuner sees the five collectives
/// (`NCCL_NUM_FUNCTIONS`, nccl_common.h:72); the values 0 to 10 are the same since NCCL 2.28
/// (v2.28.3-1 nccl_common.h:58-72), 11 to 14 are 2.30's.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Func(pub c_int);

impl Func {
    /// `ncclFuncBroadcast`.
    pub const BROADCAST: Self = Self(0);
    /// `ncclFuncReduce`.
    pub const REDUCE: Self = Self(1);
    /// `ncclFuncAllGather`.
    pub const ALL_GATHER: Self = Self(2);
    /// `ncclFuncReduceScatter`.
    pub const REDUCE_SCATTER: Self = Self(3);
    /// `ncclFuncAllReduce`.
    pub const ALL_REDUCE: Self = Self(4);
    /// `ncclFuncSendRecv`.
    pub const SEND_RECV: Self = Self(5);
    /// `ncclFuncSend`.
    pub const SEND: Self = Self(6);
    /// `ncclFuncRecv`.
    pub const RECV: Self = Self(7);
    /// `ncclFuncAlltoAll`.
    pub const ALL_TO_ALL: Self = Self(8);
    /// `ncclFuncScatter`.
    pub const SCATTER: Self = Self(9);
    /// `ncclFuncGather`.
    pub const GATHER: Self = Self(10);

    /// The name NCCL's logs give it (`ncclFuncToString`, v2.30.7-1 src/collectives.cc:14):
    /// `AllReduce`, ...; `None` for a value not listed here.
    pub fn name(self) -> Option<&'static str> {
        [
            "Broadcast",
            "Reduce",
            "AllGather",
            "ReduceScatter",
            "AllReduce",
            "SendRecv",
            "Send",
            "Recv",
            "AlltoAll",
            "Scatter",
            "Gather",
        ]
        .get(usize::try_from(self.0).ok()?)
        .copied()
    }
}

// SAFETY: a transparent `int` (the C enum's type), passed as one: its word is the i32's.
unsafe impl CArg for Func {
    fn c_type() -> Type {
        Type::I32
    }
    #[inline(always)]
    fn word(&self) -> u64 {
        self.0.word()
    }
}

plugin_struct! {
    /// `ncclNvlDomainInfo_v5_t` (tuner_v5.h:12-17), also v6's (`ncclNvlDomainInfo_v6_t`,
    /// tuner_v6.h:16): the NVLink domains of the communicator, which `init` reads.
    pub struct NvlDomainInfoV5 = "ncclNvlDomainInfo_v5_t" {
        /// The number of NVLink domains.
        pub nNvlDomains: c_int,
        /// The fewest ranks in one domain.
        pub minRanksPerNvlDomain: c_int,
        /// The most ranks in one domain.
        pub maxRanksPerNvlDomain: c_int,
    }

    /// `ncclTunerConstants_v5_t` (tuner_v5.h:25-35), also v6's (`ncclTunerConstants_v6_t`,
    /// tuner_v6.h:15): NCCL's model constants, which `init` may rewrite before NCCL computes its
    /// cost model from them (v2.30.7-1 src/init.cc:1638-1644).
    pub struct TunerConstantsV5 = "ncclTunerConstants_v5_t" {
        /// Base latency (µs) per `[algorithm][protocol]`.
        pub baseLatencies: [[f64; NUM_PROTOCOLS]; NUM_ALGORITHMS],
        /// Hardware latency (µs) per `[link][algorithm][protocol]` ([`HW_NVLINK`], ...).
        pub hwLatencies: [[[f64; NUM_PROTOCOLS]; NUM_ALGORITHMS]; NUM_HW_LINKS],
        /// LL's bandwidth ceiling per `[compute capability][scale]`.
        pub llMaxBws: [[f64; NUM_TUNING_SCALES]; NUM_COMPCAPS],
        /// Ring LL128's bandwidth per channel, per `[compute capability][scale]`.
        pub perChMaxRingLL128Bws: [[f64; NUM_TUNING_SCALES]; NUM_COMPCAPS],
        /// Tree LL128's bandwidth per channel, per `[compute capability][scale]`.
        pub perChMaxTreeLL128Bws: [[f64; NUM_TUNING_SCALES]; NUM_COMPCAPS],
        /// Tree's bandwidth per channel, per `[compute capability][scale]`.
        pub perChMaxTreeBws: [[f64; NUM_TUNING_SCALES]; NUM_COMPCAPS],
        /// NVLS tree's bandwidth per channel, per `[compute capability][scale]`.
        pub perChMaxNVLSTreeBws: [[f64; NUM_TUNING_SCALES]; NUM_COMPCAPS],
    }
}

/// `ncclNvlDomainInfo_v6_t`, a typedef of v5's (tuner_v6.h:16).
pub type NvlDomainInfoV6 = NvlDomainInfoV5;
/// `ncclTunerConstants_v6_t`, a typedef of v5's (tuner_v6.h:15).
pub type TunerConstantsV6 = TunerConstantsV5;

plugin_table! {
    /// `ncclTuner_v2_t` (tuner_v2.h:13-51); NCCL 2.21 to 2.32 load it. The tuner answers with an
    /// algorithm and protocol, which NCCL's adapter turns into a cost of 0 in its table when
    /// that entry is not [`ALGO_PROTO_IGNORE`] (v2.30.7-1 src/plugin/tuner/tuner_v2.cc:39-55).
    /// Every entry is called without a NULL check (tuner_v2.cc:47, 58, 63).
    pub struct TunerV2 = "ncclTuner_v2_t", symbol "ncclTunerPlugin_v2", calls TunerV2Calls {
        /// Creates the tuner's state for one communicator of `nRanks` ranks on `nNodes` nodes.
        init: required fn(nRanks: usize, nNodes: usize, logFunction: DebugLogger, context: *mut *mut c_void) -> NcclResult,
        /// Picks `algorithm`, `protocol` (both, or neither) and `nChannels` for a collective
        /// of `nBytes`; unset outputs keep NCCL's choice. A failure fails the collective,
        /// whatever tuner_v2.h:40-41 says (tuner_v2.cc:47 checks it with NCCLCHECK).
        getCollInfo: required fn(context: *mut c_void, collType: Func, nBytes: usize, collNetSupport: c_int, nvlsSupport: c_int, numPipeOps: c_int, algorithm: *mut c_int, protocol: *mut c_int, nChannels: *mut c_int) -> NcclResult,
        /// Frees the state.
        destroy: required fn(context: *mut c_void) -> NcclResult,
    }

    /// `ncclTuner_v3_t` (tuner_v3.h:13-53); NCCL 2.22 to 2.32 load it. `getCollInfo` edits NCCL's
    /// cost table. Every entry is called without a NULL check (v2.30.7-1
    /// src/plugin/tuner/tuner_v3.cc:20, 26, 32).
    pub struct TunerV3 = "ncclTuner_v3_t", symbol "ncclTunerPlugin_v3", calls TunerV3Calls {
        /// Creates the tuner's state for one communicator of `nRanks` ranks on `nNodes` nodes.
        init: required fn(nRanks: usize, nNodes: usize, logFunction: DebugLogger, context: *mut *mut c_void) -> NcclResult,
        /// Edits the cost table of a collective of `nBytes` (see [`TunerV5`]'s).
        getCollInfo: required fn(context: *mut c_void, collType: Func, nBytes: usize, numPipeOps: c_int, collCostTable: *mut *mut f32, numAlgo: c_int, numProto: c_int, nChannels: *mut c_int) -> NcclResult,
        /// Frees the state.
        destroy: required fn(context: *mut c_void) -> NcclResult,
    }

    /// `ncclTuner_v4_t` (tuner_v4.h:13-54); NCCL 2.24 to 2.32 load it: v3 and `regBuff`. Every
    /// entry is called without a NULL check (v2.30.7-1 src/plugin/tuner/tuner_v4.cc:18, 24-25,
    /// and src/enqueue.cc:2147).
    pub struct TunerV4 = "ncclTuner_v4_t", symbol "ncclTunerPlugin_v4", calls TunerV4Calls {
        /// Creates the tuner's state for one communicator of `nRanks` ranks on `nNodes` nodes.
        init: required fn(nRanks: usize, nNodes: usize, logFunction: DebugLogger, context: *mut *mut c_void) -> NcclResult,
        /// Edits the cost table of a collective of `nBytes` (see [`TunerV5`]'s).
        getCollInfo: required fn(context: *mut c_void, collType: Func, nBytes: usize, numPipeOps: c_int, collCostTable: *mut *mut f32, numAlgo: c_int, numProto: c_int, regBuff: c_int, nChannels: *mut c_int) -> NcclResult,
        /// Frees the state.
        destroy: required fn(context: *mut c_void) -> NcclResult,
    }

    /// `ncclTuner_v5_t` (tuner_v5.h:38-84); NCCL 2.28 to 2.32 load it. Every entry is called
    /// without a NULL check (v2.30.7-1 src/plugin/tuner/tuner_v5.cc:20, 26, 32).
    pub struct TunerV5 = "ncclTuner_v5_t", symbol "ncclTunerPlugin_v5", calls TunerV5Calls {
        /// Creates the tuner's state in `*ctx` for the communicator `commId` of `nRanks` ranks
        /// on `nNodes` nodes; may rewrite `constants` (NCCL's model, applied after `init`).
        init: required fn(ctx: *mut *mut c_void, commId: u64, nRanks: usize, nNodes: usize, logFunction: DebugLogger, nvlDomainInfo: *mut NvlDomainInfoV5, constants: *mut TunerConstantsV5) -> NcclResult,
        /// Edits the cost table of a collective (`collType`, `nBytes`, aggregated over
        /// `numPipeOps` operations): `collCostTable` is really `float[numAlgo][numProto]`
        /// (row-major, indexed `[algorithm][protocol]`), each entry a time in µs or
        /// [`ALGO_PROTO_IGNORE`]; NCCL then takes the cheapest entry that is not negative. A
        /// non-zero `*nChannels` caps the channels (NCCL passes 0). `regBuff`: the user buffers
        /// are registered. A failure fails the collective, whatever tuner_v5.h:73-74 says of a
        /// fallback (NCCLCHECK at v2.30.7-1 src/enqueue.cc:2147).
        getCollInfo: required fn(context: *mut c_void, collType: Func, nBytes: usize, numPipeOps: c_int, collCostTable: *mut *mut f32, numAlgo: c_int, numProto: c_int, regBuff: c_int, nChannels: *mut c_int) -> NcclResult,
        /// Frees the state.
        finalize: required fn(context: *mut c_void) -> NcclResult,
    }

    /// `ncclTuner_v6_t` (tuner_v6.h:19-81); NCCL 2.30.3 to 2.32 load it, and use it as their
    /// own table (v2.30.7-1 src/plugin/tuner/tuner_v6.cc:14-21). v5 and `getChunkSize`.
    pub struct TunerV6 = "ncclTuner_v6_t", symbol "ncclTunerPlugin_v6", calls TunerV6Calls {
        /// As v5's (src/init.cc:1641).
        init: required fn(ctx: *mut *mut c_void, commId: u64, nRanks: usize, nNodes: usize, logFunction: DebugLogger, nvlDomainInfo: *mut NvlDomainInfoV5, constants: *mut TunerConstantsV5) -> NcclResult,
        /// As v5's (src/enqueue.cc:2147).
        getCollInfo: required fn(context: *mut c_void, collType: Func, nBytes: usize, numPipeOps: c_int, collCostTable: *mut *mut f32, numAlgo: c_int, numProto: c_int, regBuff: c_int, nChannels: *mut c_int) -> NcclResult,
        /// As v5's (src/init.cc:2775).
        finalize: required fn(context: *mut c_void) -> NcclResult,
        /// Rewrites `*chunkSize`, NCCL's chunk size for the chosen `algo`, `proto` and
        /// `nChannels` (NCCL clamps it to its buffers). NULL: NCCL's own (checked at
        /// src/enqueue.cc:2308).
        getChunkSize: optional fn(context: *mut c_void, collType: Func, nBytes: usize, algo: c_int, proto: c_int, nChannels: c_int, chunkSize: *mut usize) -> NcclResult,
    }
}

/// The layout of `ncclTunerConstants_v6_t` (the v5 type under v6's name).
const TUNER_CONSTANTS_V6: crate::plugin::CLayout =
    crate::plugin::CLayout { c_name: "ncclTunerConstants_v6_t", ..TunerConstantsV5::LAYOUT };
/// The layout of `ncclNvlDomainInfo_v6_t` (the v5 type under v6's name).
const NVL_DOMAIN_INFO_V6: crate::plugin::CLayout =
    crate::plugin::CLayout { c_name: "ncclNvlDomainInfo_v6_t", ..NvlDomainInfoV5::LAYOUT };

/// Every layout of the family, for the layout test.
pub const LAYOUTS: &[crate::plugin::CLayout] = &[
    NvlDomainInfoV5::LAYOUT,
    NVL_DOMAIN_INFO_V6,
    TunerConstantsV5::LAYOUT,
    TUNER_CONSTANTS_V6,
    TunerV2::LAYOUT,
    TunerV3::LAYOUT,
    TunerV4::LAYOUT,
    TunerV5::LAYOUT,
    TunerV6::LAYOUT,
];
