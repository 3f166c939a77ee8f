//! The NCCL facade against a C stand-in for libnccl (tests/c/fake_nccl.c) built for the target:
//! every call checked byte for byte, version gating on old variants, errors with NCCL's texts.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::ffi::c_void;

use common::standin::{fake_nccl, id, load, serial, BoundBuf, Expect, FakeStream, HostBuf};
use nccl_trampoline::nccl::{Communicator, Config, DataType, Flavor, Nccl, RedOp, ShrinkMode, UniqueId, Version};
use nccl_trampoline::nccl::{Error, NcclResult};

#[test]
fn loads_and_reports_path_version_and_symbols() {
    let _g = serial();
    let nccl = Nccl::load_from(fake_nccl(23203)).unwrap();
    assert_eq!(nccl.version(), Version::new(2, 32, 3));
    assert_eq!(nccl.path(), fake_nccl(23203));
    assert_eq!(nccl.flavor(), Flavor::Nccl);
    assert!(nccl.missing_symbols().is_empty(), "{:?}", nccl.missing_symbols());
    assert_eq!(nccl.error_string(nccl_trampoline::nccl::NcclResult(4)).unwrap(), "invalid argument (stand-in)");

    let old = Nccl::load_from(fake_nccl(2708)).unwrap();
    assert_eq!(old.version(), Version::new(2, 7, 8), "the pre-2.9 version formula");
    let missing: Vec<&str> = old.missing_symbols().iter().map(|(n, _)| *n).collect();
    assert!(missing.contains(&"ncclCommInitRankConfig") && missing.contains(&"ncclGetLastError"), "{missing:?}");
}

/// Coverage from the stand-in's own ELF symbol table: each build exports exactly the table's
/// functions of its version (its `fake_*` test hooks are not NCCL's), all of them bound.
#[test]
fn coverage_counts_the_files_exported_nccl_functions() {
    let _g = serial();
    for code in common::standin::VERSIONS {
        let nccl = Nccl::load_from(fake_nccl(code)).unwrap();
        let coverage = nccl.coverage().unwrap();
        let missing: Vec<&str> = nccl.missing_symbols().iter().map(|(n, _)| *n).collect();
        let mut expected: Vec<&str> =
            nccl_trampoline::nccl::Sym::ALL.iter().map(|s| s.name()).filter(|n| !missing.contains(n)).collect();
        expected.sort_unstable();
        assert_eq!(coverage.bound, expected, "{code}");
        assert_eq!(coverage.exported, expected, "{code}: no fake_* hook counts");
        assert!(coverage.unbound.is_empty(), "{code}: {:?}", coverage.unbound);
        assert_eq!(
            coverage.to_string(),
            format!("{n} of {n} functions exported by this library are bound", n = expected.len())
        );
    }
    // The 2.7.8 build lacks ncclCommInitRankConfig: neither exported nor bound.
    let old = Nccl::load_from(fake_nccl(2708)).unwrap().coverage().unwrap();
    assert!(!old.exported.iter().any(|n| n == "ncclCommInitRankConfig"), "{old:?}");
}

#[test]
fn init_rank_passes_the_id_by_value_byte_for_byte() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let id = id();
    let before = id.clone();
    log.reset();
    let comm = Communicator::init_rank(&nccl, 4, &id, 3).unwrap();
    assert_eq!(
        log.bytes(),
        Expect::default().name("ncclCommInitRank").i32(4).bytes(id.as_bytes()).i32(3).rank_facts().0
    );
    assert_eq!(id, before, "the stand-in scribbled on its copy; ours is unchanged");
    assert_eq!((comm.count().unwrap(), comm.rank().unwrap(), comm.cu_device().unwrap()), (4, 3, 3));
    log.reset();
    comm.destroy().unwrap();
    assert_eq!(log.bytes(), Expect::default().name("ncclCommDestroy").i32(3).0);
}

#[test]
fn config_is_written_for_the_loaded_version() {
    let _g = serial();
    for (code, size) in [(23203u32, 120usize), (21803, 48)] {
        let (nccl, log) = load(code);
        log.reset();
        let config = Config::new().ctas(2, 8).split_share(true);
        let comm = Communicator::init_rank_config(&nccl, 2, &id(), 1, &config).unwrap();
        let rec = log.bytes();
        let facts = Expect::default().rank_facts().0;
        let rec = &rec[..rec.len() - facts.len()];
        let head = Expect::default().name("ncclCommInitRankConfig").i32(2).bytes(id().as_bytes()).i32(1).usize(size).0;
        assert_eq!(&rec[..head.len()], &head[..], "{code}");
        let cfg = &rec[head.len()..];
        assert_eq!(cfg.len(), size);
        let word = |off: usize| i32::from_ne_bytes(cfg[off..off + 4].try_into().unwrap());
        assert_eq!(word(8) as u32, 0xcafe_beef);
        assert_eq!(word(12), code as i32, "version = the loaded library's code");
        assert_eq!((word(16), word(20), word(24), word(28), word(40)), (i32::MIN, i32::MIN, 2, 8, 1));
        drop(comm);
    }
    let old = Nccl::load_from(fake_nccl(21803)).unwrap();
    let err = Communicator::init_rank_config(&old, 2, &id(), 1, &Config::new().comm_name("x")).unwrap_err();
    assert_eq!(
        err,
        Error::Unsupported {
            symbol: "commName",
            needs: nccl_trampoline::nccl::Version::new(2, 27, 0),
            loaded: nccl_trampoline::nccl::Version::new(2, 18, 3)
        }
    );
}

#[test]
fn missing_symbols_are_unsupported_not_panics() {
    let _g = serial();
    let old = Nccl::load_from(fake_nccl(21803)).unwrap();
    let comm = Communicator::init_rank(&old, 1, &id(), 0).unwrap();
    let (send, mut recv) = (HostBuf::new(vec![0.0; 4]), HostBuf::new(vec![0.0; 4]));
    let err = comm.all_to_all(&send, &mut recv, &FakeStream::new(0)).unwrap_err();
    assert_eq!(
        err,
        Error::Unsupported {
            symbol: "ncclAlltoAll",
            needs: nccl_trampoline::nccl::Version::new(2, 28, 3),
            loaded: nccl_trampoline::nccl::Version::new(2, 18, 3)
        }
    );
    assert!(matches!(old.mem_alloc(64), Err(Error::Unsupported { symbol: "ncclMemAlloc", .. })));
    let oldest = Nccl::load_from(fake_nccl(2708)).unwrap();
    let err = Communicator::init_rank_config(&oldest, 1, &id(), 0, &Config::new()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Unsupported { symbol: "ncclCommInitRankConfig", .. }
                | Error::Unsupported { symbol: "ncclConfig_t", .. }
        ),
        "{err}"
    );
    assert!(matches!(oldest.last_error(), Err(Error::Unsupported { symbol: "ncclGetLastError", .. })));
}

/// A library new enough for a symbol that does not export it is told apart from an older one:
/// `SymbolMissing`, and a message that does not claim the version is too old.
#[test]
fn a_new_enough_library_without_a_symbol_says_so() {
    let _g = serial();
    let dir = common::work_dir("fake-nccl-without-mem-alloc");
    let src = common::repo_file("tests/c/fake_nccl.c");
    let built = common::build_shared_with(&dir, "nccl", &[src], &["-DFAKE_VERSION=23203", "-DFAKE_WITHOUT_MEM_ALLOC"]);
    let lib = dir.join("libnccl.so.2");
    std::fs::rename(&built, &lib).unwrap();
    let nccl = Nccl::load_from(&lib).unwrap();
    assert!(!nccl.has("ncclMemAlloc") && nccl.has("ncclCommRegister"));
    let err = nccl.mem_alloc(64).unwrap_err();
    assert_eq!(
        err,
        Error::SymbolMissing { symbol: "ncclMemAlloc", since: Version::new(2, 19, 1), loaded: Version::new(2, 32, 3) }
    );
    assert_eq!(
        err.to_string(),
        "ncclMemAlloc is not exported by the loaded NCCL 2.32.3 (it has been part of NCCL since 2.19.1)"
    );
    let old = Nccl::load_from(fake_nccl(21803)).unwrap();
    assert_eq!(
        old.mem_alloc(64).unwrap_err().to_string(),
        "ncclMemAlloc needs NCCL 2.19.1; the loaded library is 2.18.3"
    );
}

#[test]
fn failures_carry_function_code_name_and_last_error() {
    let _g = serial();
    let (nccl, log) = load(23203);
    log.fail_next(4, "rank 7 out of range");
    let err = Communicator::init_rank(&nccl, 4, &id(), 3).unwrap_err();
    assert_eq!(
        err,
        Error::Nccl {
            function: "ncclCommInitRank",
            result: NcclResult(4),
            name: "ncclInvalidArgument".into(),
            last_error: "rank 7 out of range".into(),
            version: nccl.version(),
        }
    );
    assert_eq!(err.to_string(), "ncclCommInitRank failed: ncclInvalidArgument (4): rank 7 out of range");
    log.fail_next(42, "from the future");
    let err = nccl.unique_id().unwrap_err();
    assert!(matches!(&err, Error::Nccl { result: NcclResult(42), name, .. } if name == "unknown result code"), "{err}");
    // Bad input never reaches NCCL.
    assert!(matches!(Communicator::init_rank(&nccl, 2, &id(), 2), Err(Error::RankOutOfRange { rank: 2, nranks: 2 })));
    assert!(matches!(UniqueId::from_bytes(&[0; 12]), Err(Error::InvalidUniqueId { len: 12 })));
}

#[test]
fn collectives_pass_every_argument_and_check_lengths_first() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let comm = Communicator::init_rank(&nccl, 2, &id(), 1).unwrap();
    let (send, mut recv) = (HostBuf::new(vec![1.0; 8]), HostBuf::new(vec![0.0; 8]));
    let stream = FakeStream::new(0x5157);
    log.reset();
    comm.all_reduce(&send, &mut recv, RedOp::MAX, &stream).unwrap();
    let exp = Expect::default()
        .name("ncclAllReduce")
        .usize(send.0.as_ptr() as usize)
        .usize(recv.0.as_ptr() as usize)
        .usize(8)
        .i32(DataType::FLOAT32.0)
        .i32(RedOp::MAX.0)
        .i32(1)
        .usize(0x5157);
    assert_eq!(log.bytes(), exp.0);

    log.reset();
    // SAFETY: the stand-in only records pointers.
    unsafe {
        comm.reduce_raw(
            0x10 as *const c_void,
            0x20 as *mut c_void,
            5,
            DataType::INT64,
            RedOp::SUM,
            1,
            0x30 as *mut c_void,
        )
    }
    .unwrap();
    let exp =
        Expect::default().name("ncclReduce").usize(0x10).usize(0x20).usize(5).i32(4).i32(0).i32(1).i32(1).usize(0x30);
    assert_eq!(log.bytes(), exp.0);

    log.reset();
    let mut bound = BoundBuf(HostBuf::new(vec![0.0; 8]), 0x77);
    let err = comm.all_reduce(&send, &mut bound, RedOp::SUM, &stream).unwrap_err();
    assert_eq!(err, Error::StreamMismatch { what: "all_reduce recv" }, "a buffer bound to another stream");
    comm.all_reduce_in_place(&mut bound, RedOp::SUM, &FakeStream::new(0x77)).unwrap();
    assert_eq!(&log.bytes()[..14], b"ncclAllReduce\0", "only the call on the buffer's own stream");

    log.reset();
    let mut short = HostBuf::new(vec![0.0; 15]);
    let err = comm.all_gather(&send, &mut short, &stream).unwrap_err();
    assert_eq!(err, Error::LengthMismatch { what: "all_gather recv", expected: 16, got: 15 });
    assert!(log.bytes().is_empty(), "the rank count was read at creation: nothing reaches NCCL before the check");

    log.reset();
    comm.send(&send, 0, &stream).unwrap();
    comm.recv(&mut recv, 0, &stream).unwrap();
    let exp = Expect::default()
        .name("ncclSend")
        .usize(send.0.as_ptr() as usize)
        .usize(8)
        .i32(7)
        .i32(0)
        .i32(1)
        .usize(0x5157)
        .name("ncclRecv")
        .usize(recv.0.as_ptr() as usize)
        .usize(8)
        .i32(7)
        .i32(0)
        .i32(1)
        .usize(0x5157);
    assert_eq!(log.bytes(), exp.0);
}

#[test]
fn groups_pre_mul_sum_split_and_registration() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let comm = Communicator::init_rank(&nccl, 2, &id(), 0).unwrap();
    log.reset();
    nccl.group().unwrap().end().unwrap();
    drop(nccl.group().unwrap());
    assert_eq!(
        log.bytes(),
        Expect::default().name("ncclGroupStart").name("ncclGroupEnd").name("ncclGroupStart").name("ncclGroupEnd").0
    );
    let g = nccl.group().unwrap();
    log.fail_next(5, "mismatched group");
    assert!(matches!(g.end(), Err(Error::Nccl { function: "ncclGroupEnd", result: NcclResult(5), .. })));

    log.reset();
    {
        let op = comm.create_pre_mul_sum(0.5f64).unwrap();
        assert_eq!(op.op(), RedOp(5));
    }
    let exp = Expect::default()
        .name("ncclRedOpCreatePreMulSum")
        .bytes(&0.5f64.to_ne_bytes())
        .i32(8)
        .i32(1)
        .i32(0)
        .name("ncclRedOpDestroy")
        .i32(5)
        .i32(0);
    assert_eq!(log.bytes(), exp.0);

    assert!(comm.split(-1, 0, None).unwrap().is_none(), "NCCL_SPLIT_NOCOLOR");
    {
        // Inside a group NCCL fills new handles at ncclGroupEnd: every creation is refused.
        let g = nccl.group().unwrap();
        assert_eq!(comm.split(1, 0, None).unwrap_err(), Error::InGroup { operation: "ncclCommSplit" });
        assert_eq!(
            Communicator::init_rank(&nccl, 2, &id(), 0).unwrap_err(),
            Error::InGroup { operation: "ncclCommInitRank" }
        );
        assert_eq!(
            Communicator::init_all(&nccl, &[0, 1]).unwrap_err(),
            Error::InGroup { operation: "ncclCommInitAll" }
        );
        assert_eq!(
            comm.shrink(&[1], None, ShrinkMode::Default).unwrap_err(),
            Error::InGroup { operation: "ncclCommShrink" }
        );
        g.end().unwrap();
    }
    let all = nccl.split_all(&[(&comm, 4, 0)], None).unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].as_ref().expect("a child").count().unwrap(), 1);
    drop(all);
    let child = comm.split(3, 1, Some(&Config::new())).unwrap().expect("a child");
    assert_eq!(child.count().unwrap(), 1);

    log.reset();
    {
        // SAFETY: the stand-in only records the pointer.
        let reg = unsafe { comm.register(0x1000 as *mut c_void, 4096) }.unwrap();
        assert_eq!(reg.as_raw() as usize, 0x4855);
    }
    let exp = Expect::default()
        .name("ncclCommRegister")
        .i32(0)
        .usize(0x1000)
        .usize(4096)
        .name("ncclCommDeregister")
        .i32(0)
        .usize(0x4855);
    assert_eq!(log.bytes(), exp.0);
    let mem = nccl.mem_alloc(256).unwrap();
    assert_eq!(mem.size(), 256);
    assert!(!mem.as_ptr().is_null());
}

#[test]
fn non_blocking_init_is_handed_out_only_when_done_and_refuses_per_thread_stream() {
    let _g = serial();
    let (nccl, _log) = load(23203);
    let comm = Communicator::init_rank_config(&nccl, 1, &id(), 0, &Config::new().blocking(false)).unwrap();
    assert!(comm.is_nonblocking());
    assert_eq!(comm.async_error().unwrap(), nccl_trampoline::nccl::NcclResult::SUCCESS, "NCCL finished the init");
    let mut buf = HostBuf::new(vec![0.0; 4]);
    let err = comm.all_reduce_in_place(&mut buf, RedOp::SUM, &FakeStream::new(2)).unwrap_err();
    assert!(matches!(err, Error::PerThreadStream { operation: "ncclAllReduce" }), "{err}");
}

/// A buffer whose access guard notes how much the stand-in had recorded when it was dropped.
struct Probed {
    data: Vec<f32>,
    log_size: extern "C" fn() -> usize,
    dropped_at: std::cell::Cell<Option<usize>>,
}

struct Probe<'a>(&'a Probed);

impl Drop for Probe<'_> {
    fn drop(&mut self) {
        self.0.dropped_at.set(Some((self.0.log_size)()));
    }
}

// SAFETY: the stand-in only records the pointer.
unsafe impl nccl_trampoline::nccl::DeviceBuffer<f32> for Probed {
    type Guard<'a> = Probe<'a>;
    fn device_ptr<'a>(&'a self, _: &'a dyn nccl_trampoline::nccl::Stream) -> Result<(*const c_void, Probe<'a>), Error> {
        Ok((self.data.as_ptr().cast(), Probe(self)))
    }
    fn len(&self) -> usize {
        self.data.len()
    }
}
// SAFETY: as above.
unsafe impl nccl_trampoline::nccl::DeviceBufferMut<f32> for Probed {
    fn device_ptr_mut<'a>(
        &'a mut self,
        _: &'a dyn nccl_trampoline::nccl::Stream,
    ) -> Result<(*mut c_void, Probe<'a>), Error> {
        Ok((self.data.as_mut_ptr().cast(), Probe(self)))
    }
}

#[test]
fn safe_collectives_in_a_group_hold_their_buffers_until_the_group_launched_them() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let comm = Communicator::init_rank(&nccl, 2, &id(), 0).unwrap();
    let stream = FakeStream::new(0x81);
    let mut buf = HostBuf::new(vec![0.0; 8]);
    {
        // In a plain group NCCL launches at ncclGroupEnd, after the call returned: refused.
        let g = nccl.group().unwrap();
        let err = comm.all_reduce_in_place(&mut buf, RedOp::SUM, &stream).unwrap_err();
        assert_eq!(err, Error::InGroup { operation: "a safe collective (use Nccl::group_scope)" });
        g.end().unwrap();
    }
    let mut probed = Probed {
        data: vec![0.0; 8],
        log_size: log.f::<extern "C" fn() -> usize>("fake_log_size"),
        dropped_at: std::cell::Cell::new(None),
    };
    log.reset();
    nccl.group_scope(|g| {
        g.all_reduce_in_place(&comm, &mut probed, RedOp::SUM, &stream)?;
        g.all_reduce_in_place(&comm, &mut buf, RedOp::SUM, &stream)
    })
    .unwrap();
    let at = probed.dropped_at.get().expect("the guard was dropped");
    let rec = log.bytes();
    assert!(rec[..at].ends_with(b"ncclGroupEnd\0"), "the access ended after ncclGroupEnd launched the work");
    // A failing closure still ends the group.
    log.reset();
    let err = nccl.group_scope(|_| -> Result<(), Error> { Err(Error::InvalidArgument { what: "test" }) }).unwrap_err();
    assert_eq!(err, Error::InvalidArgument { what: "test" });
    assert_eq!(log.bytes(), Expect::default().name("ncclGroupStart").name("ncclGroupEnd").0);
}

/// A buffer that claims `len` elements it does not have: for checks that must refuse a length
/// before anything is handed to NCCL.
struct Claimed(usize);

// SAFETY: the pointer is never handed to NCCL (every use refuses the length first) and the
// stand-in never dereferences one.
unsafe impl nccl_trampoline::nccl::DeviceBuffer<f32> for Claimed {
    type Guard<'a> = ();
    fn device_ptr<'a>(&'a self, _: &'a dyn nccl_trampoline::nccl::Stream) -> Result<(*const c_void, ()), Error> {
        Ok((core::ptr::NonNull::<f32>::dangling().as_ptr().cast(), ()))
    }
    fn len(&self) -> usize {
        self.0
    }
}
// SAFETY: as above.
unsafe impl nccl_trampoline::nccl::DeviceBufferMut<f32> for Claimed {
    fn device_ptr_mut<'a>(&'a mut self, _: &'a dyn nccl_trampoline::nccl::Stream) -> Result<(*mut c_void, ()), Error> {
        Ok((core::ptr::NonNull::<f32>::dangling().as_ptr().cast(), ()))
    }
}

#[test]
fn a_rank_count_below_one_and_lengths_past_usize_are_refused_before_nccl() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let stream = FakeStream::new(0x5157);
    // A library whose communicator reports 0 ranks: the stand-in shrinks by ranks it does not
    // check are in the communicator, so excluding rank 5 of 1 leaves a count of 0.
    let comm = Communicator::init_rank(&nccl, 1, &id(), 0).unwrap();
    let empty = comm.shrink(&[5], None, ShrinkMode::Default).unwrap();
    assert_eq!(empty.count().unwrap(), 0);
    let impossible = Error::ImpossibleOutput { function: "ncclCommCount", what: "a count below 1" };
    let (send, mut recv) = (HostBuf::new(vec![1.0; 8]), HostBuf::new(vec![0.0; 8]));
    log.reset();
    assert_eq!(empty.all_to_all(&send, &mut recv, &stream).unwrap_err(), impossible);
    assert_eq!(empty.all_gather(&send, &mut recv, &stream).unwrap_err(), impossible);
    assert_eq!(empty.reduce_scatter(&send, &mut recv, RedOp::SUM, &stream).unwrap_err(), impossible);
    assert!(log.bytes().is_empty(), "nothing reached NCCL");
    drop(empty);

    // count * nranks past usize: refused, not saturated into a length a huge buffer passes.
    let comm = Communicator::init_rank(&nccl, 2, &id(), 1).unwrap();
    let half = usize::MAX / 2 + 1;
    log.reset();
    assert_eq!(
        comm.all_gather(&Claimed(half), &mut Claimed(usize::MAX), &stream).unwrap_err(),
        Error::LengthOverflow { what: "all_gather recv", count: half, nranks: 2 }
    );
    assert_eq!(
        comm.reduce_scatter(&Claimed(usize::MAX), &mut Claimed(half), RedOp::SUM, &stream).unwrap_err(),
        Error::LengthOverflow { what: "reduce_scatter send", count: half, nranks: 2 }
    );
    let config = nccl_trampoline::nccl::CollConfig::new();
    assert_eq!(
        comm.all_gather_config(&Claimed(half), &mut Claimed(usize::MAX), &config, &stream).unwrap_err(),
        Error::LengthOverflow { what: "all_gather recv", count: half, nranks: 2 }
    );
    assert_eq!(
        comm.reduce_scatter_config(&Claimed(usize::MAX), &mut Claimed(half), RedOp::SUM, &config, &stream).unwrap_err(),
        Error::LengthOverflow { what: "reduce_scatter send", count: half, nranks: 2 }
    );
    // An all-to-all length whose next multiple of nranks is past usize.
    assert!(matches!(
        comm.all_to_all(&Claimed(usize::MAX), &mut Claimed(usize::MAX), &stream).unwrap_err(),
        Error::LengthOverflow { nranks: 2, .. }
    ));
    assert!(log.bytes().is_empty(), "nothing reached NCCL");
}
