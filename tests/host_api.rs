//! The rest of NCCL's host API (group simulation, scalable init, grow, suspend/resume and memory
//! statistics, properties, encryption, runtime parameters) against the C stand-in
//! (tests/c/fake_nccl.c) built for the target: every call checked byte for byte, natively and
//! under qemu-user; each one gated on stand-ins built as older versions; a symbol missing from a
//! new-enough library reported as missing.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use common::standin::{id, load, serial, Expect};
use nccl_trampoline::nccl::Error;
use nccl_trampoline::nccl::{
    CommOptions, Communicator, Config, DataType, Encryption, GinType, MemStat, Nccl, NcclResult, PreSharedKey, RedOp,
    SuspendFlags, Timeouts, Version,
};

/// A stand-in built with `flags` (a variant `standin::VERSIONS` does not hold), as libnccl.so.2.
fn custom_standin(tag: &str, flags: &[&str]) -> PathBuf {
    let dir = common::work_dir(&format!("fake-nccl-{tag}"));
    let src = common::repo_file("tests/c/fake_nccl.c");
    let built = common::build_shared_with(&dir, "nccl", &[src], flags);
    let lib = dir.join("libnccl.so.2");
    std::fs::rename(&built, &lib).expect("name the stand-in libnccl.so.2");
    lib
}

/// The stand-in as NCCL 2.28.9 (the GPU host's wheel): before grow, suspend and parameters.
fn standin_2_28_9() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| custom_standin("22809", &["-DFAKE_VERSION=22809"])).clone()
}

/// The stand-in as 2.32.3 without the ncclParam* symbols: new enough, yet lacking them.
fn standin_without_params() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| custom_standin("23203-noparams", &["-DFAKE_VERSION=23203", "-DFAKE_WITHOUT_PARAMS"])).clone()
}

fn short(limit: Duration) -> CommOptions {
    CommOptions::new().timeouts(Timeouts { create: Some(limit), operation: Some(limit), teardown: Some(limit) })
}

fn f32_bytes(v: f32) -> [u8; 4] {
    v.to_ne_bytes()
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
}

// ---- ncclGroupSimulateEnd ----------------------------------------------------------------------------------

#[test]
fn group_simulate_end_passes_the_versioned_struct_and_launches_nothing() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let comm = Communicator::init_rank(&nccl, 2, &id(), 0).unwrap();
    let g = nccl.group().unwrap();
    for _ in 0..3 {
        // SAFETY: the stand-in only records pointers.
        unsafe { comm.all_reduce_raw(16 as _, 16 as _, 4, DataType::FLOAT32, RedOp::SUM, 0x51 as *mut c_void) }
            .unwrap();
    }
    log.reset();
    let info = g.simulate_end().unwrap();
    assert_eq!(info.estimated_time_us, Some(30.0), "the stand-in's 10 us per queued operation");
    // size, then the struct as NCCL reads it: size, magic, version = the loaded library's, the
    // initializer's NCCL_UNDEF_FLOAT, zeroed padding.
    let exp = Expect::default()
        .name("ncclGroupSimulateEnd")
        .usize(24)
        .usize(24)
        .i32(0x7468_5283)
        .i32(23203)
        .bytes(&f32_bytes(-1.0))
        .i32(0);
    assert_eq!(log.bytes(), exp.0);
    // The group is closed on both sides: a new one opens and ends.
    log.reset();
    nccl.group().unwrap().end().unwrap();
    assert_eq!(log.bytes(), Expect::default().name("ncclGroupStart").name("ncclGroupEnd").0);
    // An empty group: NCCL leaves the estimate undefined.
    assert_eq!(nccl.group().unwrap().simulate_end().unwrap().estimated_time_us, None);
}

// ---- ncclCommInitRankScalable ------------------------------------------------------------------------------

#[test]
fn init_rank_scalable_passes_every_id_and_the_config() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let ids = [id(), nccl.unique_id().unwrap()];
    log.reset();
    let comm = Communicator::init_rank_scalable(&nccl, 4, 2, &ids, &CommOptions::new()).unwrap();
    let exp = Expect::default()
        .name("ncclCommInitRankScalable")
        .i32(4)
        .i32(2)
        .i32(2)
        .bytes(ids[0].as_bytes())
        .bytes(ids[1].as_bytes())
        .usize(0)
        .rank_facts();
    assert_eq!(log.bytes(), exp.0, "no config: NULL, NCCL's defaults");
    assert_eq!((comm.count().unwrap(), comm.rank().unwrap()), (4, 2));
    drop(comm);

    // A non-blocking config, written for the loaded library (120 bytes for 2.32.3); NCCL's
    // thread finishes the communicator and the facade polls it.
    log.reset();
    let options = CommOptions::new().config(Config::new().blocking(false));
    let comm = Communicator::init_rank_scalable(&nccl, 2, 1, &ids[..1], &options).unwrap();
    let rec = log.bytes();
    let head =
        Expect::default().name("ncclCommInitRankScalable").i32(2).i32(1).i32(1).bytes(ids[0].as_bytes()).usize(120).0;
    assert_eq!(&rec[..head.len()], &head[..]);
    let cfg = &rec[head.len()..head.len() + 120];
    assert_eq!(
        (u32_at(cfg, 8), u32_at(cfg, 12), u32_at(cfg, 16)),
        (0xcafe_beef, 23203, 0),
        "magic, version, blocking 0"
    );
    assert_eq!(comm.rank().unwrap(), 1);
    drop(comm);

    // Refused before NCCL: no id, more ids than ranks.
    for ids in [&[][..], &[id(), id(), id()][..]] {
        let err = Communicator::init_rank_scalable(&nccl, 2, 0, ids, &CommOptions::new()).unwrap_err();
        assert_eq!(err, Error::UniqueIdCount { count: ids.len(), nranks: 2 });
    }
}

#[test]
fn init_rank_scalable_that_never_completes_times_out_and_is_aborted() {
    let _g = serial();
    let (nccl, log) = load(23203);
    log.set("hang_init", 1);
    let options = short(Duration::from_millis(300)).config(Config::new().blocking(false));
    log.reset();
    let err = Communicator::init_rank_scalable(&nccl, 2, 0, &[id()], &options).unwrap_err();
    assert!(matches!(err, Error::Timeout { operation: "ncclCommInitRankScalable", .. }), "{err}");
    assert_eq!(log.calls(), ["ncclCommAbort"], "the new communicator NCCL stored is aborted");
    log.set("hang_init", 0);
}

// ---- ncclCommGetUniqueId + ncclCommGrow --------------------------------------------------------------------

#[test]
fn grow_existing_and_new_ranks_byte_for_byte() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let parent = Communicator::init_rank(&nccl, 2, &id(), 0).unwrap();
    log.reset();
    let grow_id = parent.grow_unique_id().unwrap();
    let mut want = [0u8; 128];
    want[..16].fill(0x47);
    assert_eq!(grow_id.as_bytes(), &want[..], "the stand-in's grow handle for rank 0");
    assert_eq!(log.bytes(), Expect::default().name("ncclCommGetUniqueId").i32(0).0);

    // The grow's root: its id, rank -1, no config (the parent's is copied).
    log.reset();
    let grown = parent.grow(4, Some(&grow_id), &CommOptions::new()).unwrap();
    let exp = Expect::default()
        .name("ncclCommGrow")
        .i32(0)
        .i32(4)
        .i32(1)
        .bytes(grow_id.as_bytes())
        .i32(-1)
        .usize(0)
        .rank_facts();
    assert_eq!(log.bytes(), exp.0);
    assert_eq!((grown.count().unwrap(), grown.rank().unwrap()), (4, 0), "an existing rank keeps its number");
    // The parent is still usable.
    assert_eq!(parent.count().unwrap(), 2);

    // Another existing rank passes no id.
    log.reset();
    let other = parent.grow(3, None, &CommOptions::new()).unwrap();
    let exp = Expect::default().name("ncclCommGrow").i32(0).i32(3).i32(0).i32(-1).usize(0).rank_facts();
    assert_eq!(log.bytes(), exp.0);
    drop(other);

    // A new rank: no communicator, the id, its rank; a non-blocking config this time.
    log.reset();
    let options = CommOptions::new().config(Config::new().blocking(false));
    let joined = Communicator::join_grow(&nccl, 4, &grow_id, 3, &options).unwrap();
    let rec = log.bytes();
    let head =
        Expect::default().name("ncclCommGrow").i32(-1).i32(4).i32(1).bytes(grow_id.as_bytes()).i32(3).usize(120).0;
    assert_eq!(&rec[..head.len()], &head[..]);
    assert_eq!((joined.count().unwrap(), joined.rank().unwrap()), (4, 3));

    // Refused before NCCL: not more ranks than now.
    log.reset();
    let err = parent.grow(2, None, &CommOptions::new()).unwrap_err();
    assert_eq!(err, Error::GrowNotLarger { nranks: 2, current: 2 });
    assert!(log.bytes().is_empty());
}

#[test]
fn grow_that_never_completes_times_out_and_the_new_communicator_is_aborted() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let parent = Communicator::init_rank_with(&nccl, 2, &id(), 0, &short(Duration::from_millis(300))).unwrap();
    log.set("hang_init", 1);
    log.reset();
    let options = short(Duration::from_millis(300)).config(Config::new().blocking(false));
    let err = parent.grow(4, None, &options).unwrap_err();
    assert!(matches!(err, Error::Timeout { operation: "ncclCommGrow", .. }), "{err}");
    assert_eq!(log.calls(), ["ncclCommAbort"], "the grown communicator, not the parent");
    log.set("hang_init", 0);
    assert_eq!(parent.count().unwrap(), 2, "the parent lives on");
    // A dropped Pending cancels the same way.
    log.set("hang_init", 1);
    let mut parent = parent;
    let pending = parent.begin_grow(4, None, &options).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    log.reset();
    drop(pending);
    assert_eq!(log.calls(), ["ncclCommAbort"]);
    log.set("hang_init", 0);
}

// ---- suspend, resume, memory statistics, properties -------------------------------------------------------

#[test]
fn suspend_resume_and_memory_statistics() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let comm = Communicator::init_rank(&nccl, 2, &id(), 1).unwrap();
    log.reset();
    assert_eq!(comm.mem_stat(MemStat::GPU_MEM_TOTAL).unwrap(), 5120);
    comm.suspend(SuspendFlags::MEMORY).unwrap();
    assert_eq!(comm.mem_stat(MemStat::GPU_MEM_SUSPENDED).unwrap(), 1);
    assert_eq!(comm.mem_stat(MemStat::GPU_MEM_SUSPEND).unwrap(), 0);
    comm.resume().unwrap();
    assert_eq!(comm.mem_stat(MemStat::GPU_MEM_PERSIST).unwrap(), 1024);
    let exp = Expect::default()
        .name("ncclCommMemStats")
        .i32(1)
        .i32(3)
        .name("ncclCommSuspend")
        .i32(1)
        .i32(1)
        .name("ncclCommMemStats")
        .i32(1)
        .i32(1)
        .name("ncclCommMemStats")
        .i32(1)
        .i32(0)
        .name("ncclCommResume")
        .i32(1)
        .name("ncclCommMemStats")
        .i32(1)
        .i32(2);
    assert_eq!(log.bytes(), exp.0);
    // An unknown statistic: NCCL's ncclInvalidArgument, as the open newtype lets it through.
    let err = comm.mem_stat(MemStat(9)).unwrap_err();
    assert!(matches!(err, Error::Nccl { function: "ncclCommMemStats", result: NcclResult(4), .. }), "{err}");
}

#[test]
fn properties_ask_for_the_newest_known_layout() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let comm = Communicator::init_rank(&nccl, 4, &id(), 2).unwrap();
    log.reset();
    let p = comm.properties().unwrap();
    // size 56 (the 2.30.7 layout), NCCL_API_MAGIC, version 2.30.7 (not newer than the layout).
    let exp = Expect::default().name("ncclCommQueryProperties").i32(2).usize(56).i32(0xcafe_beef_u32 as i32).i32(23007);
    assert_eq!(log.bytes(), exp.0);
    assert_eq!((p.rank, p.nranks, p.cuda_device, p.nvml_device), (2, 4, 2, 102));
    assert!(p.device_api && !p.multimem);
    assert_eq!(
        (p.gin_type, p.lsa_teams, p.host_rma, p.railed_gin_type),
        (GinType::PROXY, Some(1), Some(true), Some(GinType::GDAKI))
    );
}

// ---- ncclSetEncryption -----------------------------------------------------------------------------------

#[test]
fn set_encryption_passes_the_versioned_struct_and_never_shows_the_key() {
    let _g = serial();
    let (nccl, log) = load(23203);
    log.reset();
    nccl.set_encryption(&Encryption::None).unwrap();
    let header = |mode: i32| {
        Expect::default().name("ncclSetEncryption").usize(32).i32(0xcafe_beef_u32 as i32).i32(23203).i32(mode).i32(0)
    };
    assert_eq!(log.bytes(), header(0).usize(0).0, "plaintext: no key (NULL)");

    let secret = "k".repeat(40);
    let key = PreSharedKey::new(secret.clone()).unwrap();
    assert!(!format!("{key:?}").contains("kkkk"), "Debug must not print the key");
    log.reset();
    nccl.set_encryption(&Encryption::PreSharedKey(key)).unwrap();
    assert_eq!(log.bytes(), header(1).usize(40).0, "mode PSK and a 40-byte key");
    assert_eq!(log.f::<extern "C" fn() -> usize>("fake_psk_length")(), 40, "NCCL read the whole key");

    // NCCL's refusal, with its text.
    let err = nccl.set_encryption(&Encryption::PreSharedKey(PreSharedKey::new("short").unwrap())).unwrap_err();
    match &err {
        Error::Nccl { function: "ncclSetEncryption", result: NcclResult(4), last_error, .. } => {
            assert!(last_error.contains("at least 32 bytes"), "{last_error}")
        }
        e => panic!("{e}"),
    }
    assert!(!err.to_string().contains("short"), "the error does not carry the key");
    assert!(PreSharedKey::new("a\0b").is_err());
}

// ---- ncclParam* -----------------------------------------------------------------------------------------

#[test]
fn parameters_read_typed_copied_and_with_typed_errors() {
    let _g = serial();
    let (nccl, log) = load(23203);
    log.reset();
    let p = nccl.param("FAKE_PARAM_I32").unwrap();
    assert_eq!(p.key(), "FAKE_PARAM_I32");
    assert_eq!(p.get::<i32>().unwrap(), -323_232);
    let exp =
        Expect::default().name("ncclParamBind").i32(1).name("FAKE_PARAM_I32").name("ncclParamGetI32").i32(2).i32(1);
    assert_eq!(log.bytes(), exp.0, "the key, then the handle NCCL gave (entry 2) and an out-pointer");

    assert_eq!(nccl.param("FAKE_PARAM_I8").unwrap().get::<i8>().unwrap(), -8);
    assert_eq!(nccl.param("FAKE_PARAM_I16").unwrap().get::<i16>().unwrap(), -1616);
    assert_eq!(nccl.param("FAKE_PARAM_I64").unwrap().get::<i64>().unwrap(), -6_464_646_464_646_464);
    assert_eq!(nccl.param("FAKE_PARAM_U8").unwrap().get::<u8>().unwrap(), 200);
    assert_eq!(nccl.param("FAKE_PARAM_U16").unwrap().get::<u16>().unwrap(), 60000);
    assert_eq!(nccl.param("FAKE_PARAM_U32").unwrap().get::<u32>().unwrap(), 4_000_000_000);
    assert_eq!(nccl.param("FAKE_PARAM_U64").unwrap().get::<u64>().unwrap(), 0x7766_5544_3322_1100);

    // Another type than the parameter's, an unknown key, a key with NUL.
    let err = p.get::<u32>().unwrap_err();
    assert_eq!(err, Error::ParamType { key: "FAKE_PARAM_I32".into(), requested: "uint32_t" });
    assert_eq!(p.get_str().unwrap_err(), Error::ParamType { key: "FAKE_PARAM_I32".into(), requested: "const char *" });
    assert_eq!(nccl.param("NCCL_NO_SUCH").unwrap_err(), Error::ParamNotFound { key: "NCCL_NO_SUCH".into() });
    assert!(matches!(nccl.param("A\0B"), Err(Error::ContainsNul { what: "a parameter key" })));

    // Strings: copied out of NCCL's thread-local buffer before the next call reuses it.
    let s = nccl.param("FAKE_PARAM_STR").unwrap();
    let first = s.get_str().unwrap();
    let second = s.get_str().unwrap();
    assert_eq!((first.as_str(), second.as_str()), ("stand-in default", "stand-in default"));

    // Raw bytes: a scalar's native bytes; a string grows the buffer NCCL refused (16 < 17).
    assert_eq!(nccl.param("FAKE_PARAM_I64").unwrap().raw().unwrap(), (-6_464_646_464_646_464i64).to_ne_bytes());
    log.reset();
    assert_eq!(s.raw().unwrap(), b"stand-in default\0");
    let exp = Expect::default()
        .name("ncclParamGet")
        .i32(8)
        .i32(1)
        .i32(16)
        .i32(1)
        .name("ncclParamGet")
        .i32(8)
        .i32(1)
        .i32(256)
        .i32(1);
    assert_eq!(log.bytes(), exp.0);

    // Key-based access and the key table, copied.
    log.reset();
    assert_eq!(nccl.param_string("FAKE_PARAM_U16").unwrap(), "60000");
    assert_eq!(nccl.param_string("FAKE_PARAM_I8").unwrap(), "-8");
    assert_eq!(
        log.bytes()[..],
        Expect::default()
            .name("ncclParamGetParameter")
            .name("FAKE_PARAM_U16")
            .i32(1)
            .i32(1)
            .name("ncclParamGetParameter")
            .name("FAKE_PARAM_I8")
            .i32(1)
            .i32(1)
            .0[..]
    );
    assert_eq!(nccl.param_string("NOPE").unwrap_err(), Error::ParamNotFound { key: "NOPE".into() });
    let keys = nccl.param_keys().unwrap();
    assert_eq!(keys.len(), 9);
    assert_eq!((keys[0].as_str(), keys[8].as_str()), ("FAKE_PARAM_I8", "FAKE_PARAM_STR"));
    log.reset();
    nccl.dump_params().unwrap();
    assert_eq!(log.bytes(), Expect::default().name("ncclParamDumpAll").0);
}

// ---- version gating and truthful refusals --------------------------------------------------------------------

/// Every part-A call on `nccl` (a communicator of it given), as (symbol, result).
fn every_call(nccl: &Nccl, comm: &Communicator) -> Vec<(&'static str, Result<(), Error>)> {
    let drop_ok = |r: Result<Communicator, Error>| r.map(drop);
    vec![
        ("ncclGroupSimulateEnd", nccl.group().unwrap().simulate_end().map(drop)),
        (
            "ncclCommInitRankScalable",
            drop_ok(Communicator::init_rank_scalable(nccl, 1, 0, &[id()], &CommOptions::new())),
        ),
        ("ncclCommGetUniqueId", comm.grow_unique_id().map(drop)),
        ("ncclCommGrow", drop_ok(comm.grow(4, None, &CommOptions::new()))),
        ("ncclCommGrow", drop_ok(Communicator::join_grow(nccl, 4, &id(), 3, &CommOptions::new()))),
        ("ncclCommQueryProperties", comm.properties().map(drop)),
        ("ncclCommSuspend", comm.suspend(SuspendFlags::MEMORY)),
        ("ncclCommResume", comm.resume()),
        ("ncclCommMemStats", comm.mem_stat(MemStat::GPU_MEM_TOTAL).map(drop)),
        ("ncclSetEncryption", nccl.set_encryption(&Encryption::None)),
        ("ncclParamBind", nccl.param("FAKE_PARAM_I32").map(drop)),
        ("ncclParamGetParameter", nccl.param_string("FAKE_PARAM_I32").map(drop)),
        ("ncclParamGetAllParameterKeys", nccl.param_keys().map(drop)),
        ("ncclParamDumpAll", nccl.dump_params()),
    ]
}

#[test]
fn older_libraries_refuse_each_new_call_with_the_version_it_needs() {
    let _g = serial();
    let since = |s: &str| match s {
        "ncclGroupSimulateEnd" => "2.22.3",
        "ncclCommInitRankScalable" => "2.23.4",
        "ncclCommGetUniqueId" | "ncclCommGrow" | "ncclCommQueryProperties" => "2.29.2",
        "ncclCommSuspend" | "ncclCommResume" | "ncclCommMemStats" => "2.29.7",
        "ncclSetEncryption" => "2.32.3",
        _ => "2.30.4",
    };
    // 2.18.3: none of them. 2.28.9: simulation and scalable init work, the rest are refused.
    for (path, loaded, works) in [
        (common::standin::fake_nccl(21803), "2.18.3", &[][..]),
        (standin_2_28_9(), "2.28.9", &["ncclGroupSimulateEnd", "ncclCommInitRankScalable"][..]),
    ] {
        let nccl = Nccl::load_from(&path).unwrap();
        let comm = Communicator::init_rank(&nccl, 2, &id(), 0).unwrap();
        for (symbol, r) in every_call(&nccl, &comm) {
            if works.contains(&symbol) {
                r.unwrap_or_else(|e| panic!("{loaded}: {symbol}: {e}"));
            } else {
                assert_eq!(
                    r.unwrap_err(),
                    Error::Unsupported { symbol, needs: version(since(symbol)), loaded: version(loaded) },
                    "{loaded}"
                );
            }
        }
        // A group whose simulation was refused is still ended (by its drop): the next opens.
        nccl.group().unwrap().end().unwrap();
    }
}

#[test]
fn a_new_enough_library_without_a_symbol_says_it_is_missing() {
    let _g = serial();
    let nccl = Nccl::load_from(standin_without_params()).unwrap();
    let missing: Vec<&str> = nccl.missing_symbols().iter().map(|(n, _)| *n).collect();
    assert!(missing.contains(&"ncclParamBind") && missing.contains(&"ncclParamDumpAll"), "{missing:?}");
    let err = nccl.param("FAKE_PARAM_I32").unwrap_err();
    let (since, loaded) = (version("2.30.4"), nccl.version());
    assert_eq!(err, Error::SymbolMissing { symbol: "ncclParamBind", since, loaded });
    assert_eq!(
        err.to_string(),
        format!("ncclParamBind is not exported by the loaded NCCL {loaded} (it has been part of NCCL since 2.30.4)")
    );
    assert_eq!(nccl.dump_params().unwrap_err(), Error::SymbolMissing { symbol: "ncclParamDumpAll", since, loaded });
    // The symbols it has still work.
    nccl.set_encryption(&Encryption::None).unwrap();
}

/// `"2.30.4"` as a [`Version`].
fn version(text: &str) -> Version {
    let n: Vec<u32> = text.split('.').map(|p| p.parse().unwrap()).collect();
    Version::new(n[0], n[1], n[2])
}
