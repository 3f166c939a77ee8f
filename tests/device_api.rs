//! The device-API host helpers (ncclTeam by value, in and out), the one-sided calls and the
//! per-collective `nccl*Config` calls against the C stand-in (tests/c/fake_nccl.c) built for the
//! target: every argument checked byte for byte as the C callee received it, each call gated on
//! older builds of the stand-in, and `ncclCollConfig_t`'s layouts checked against the C compiler.
//! Natively and under qemu-aarch64 / qemu-riscv64 (scripts/test.sh runs every test binary in
//! each of those steps).
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]

mod common;

use std::ffi::c_void;

use common::standin::{id, load, serial, Expect, FakeStream, HostBuf, Log};
use nccl_trampoline::nccl::{
    coll_config_fields, coll_config_size, CftTeamMode, CollConfig, Communicator, DataType, MultimemHandle, Nccl, RedOp,
    Team, Version, WaitSignalDesc,
};
use nccl_trampoline::nccl::{Error, NcclResult};

fn stream_of(raw: usize) -> FakeStream {
    FakeStream::new(raw)
}

fn team_bytes(t: &Team) -> Vec<u8> {
    [t.n_ranks, t.rank, t.stride].iter().flat_map(|v| v.to_ne_bytes()).collect()
}

fn set_device_world(log: &Log, nranks: i32, rank: i32, lsa_size: i32) {
    log.f::<extern "C" fn(i32, i32, i32)>("fake_set_device_world")(nranks, rank, lsa_size);
}

#[test]
fn teams_come_back_and_go_in_by_value_byte_for_byte() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let comm = Communicator::init_rank(&nccl, 8, &id(), 5).unwrap();
    set_device_world(&log, 8, 5, 4); // load/store domains of 4 ranks

    log.reset();
    assert_eq!(comm.team_world().unwrap(), Team { n_ranks: 8, rank: 5, stride: 1 });
    assert_eq!(comm.team_lsa().unwrap(), Team { n_ranks: 4, rank: 1, stride: 1 });
    assert_eq!(comm.team_rail().unwrap(), Team { n_ranks: 2, rank: 1, stride: 4 });
    assert_eq!(comm.team_cft(CftTeamMode::HIER_LSA).unwrap(), Team { n_ranks: 4, rank: 1, stride: 1 });
    assert_eq!(comm.team_cft_multimem().unwrap(), Team { n_ranks: 4, rank: 1, stride: 1 });
    assert_eq!(
        log.bytes(),
        Expect::default()
            .name("ncclTeamWorld")
            .i32(5)
            .name("ncclTeamLsa")
            .i32(5)
            .name("ncclTeamRail")
            .i32(5)
            .name("ncclTeamCft")
            .i32(5)
            .i32(2)
            .name("ncclTeamCftMultimem")
            .i32(5)
            .0
    );

    // Distinct values in every field, so a swapped or shifted word shows.
    let rail = Team { n_ranks: 2, rank: 1, stride: 4 };
    let odd = Team { n_ranks: 0x0a0b_0c0d, rank: -7, stride: 0x1234_5678 };
    log.reset();
    assert_eq!(comm.team_rank_to_world(&rail, 0).unwrap(), 1, "5 + (0 - 1) * 4");
    assert_eq!(comm.team_rank_to_lsa(&rail, 1).unwrap(), 1);
    assert_eq!(comm.team_rank_to_world(&odd, -5).unwrap(), 5 + 2 * 0x1234_5678);
    assert_eq!(
        odd,
        Team { n_ranks: 0x0a0b_0c0d, rank: -7, stride: 0x1234_5678 },
        "the callee scribbled on its own copy"
    );
    assert_eq!(
        log.bytes(),
        Expect::default()
            .name("ncclTeamRankToWorld")
            .i32(5)
            .bytes(&team_bytes(&rail))
            .i32(0)
            .name("ncclTeamRankToLsa")
            .i32(5)
            .bytes(&team_bytes(&rail))
            .i32(1)
            .name("ncclTeamRankToWorld")
            .i32(5)
            .bytes(&team_bytes(&odd))
            .i32(-5)
            .0
    );
    comm.destroy().unwrap();
}

#[test]
fn resource_requirements_take_the_team_by_value() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let team = Team { n_ranks: 8, rank: 3, stride: 2 };
    log.reset();
    let mut lsa = nccl.lsa_barrier_requirement(&team, 3).unwrap();
    assert_eq!(
        log.bytes(),
        Expect::default().name("ncclLsaBarrierCreateRequirement").bytes(&team_bytes(&team)).i32(3).0
    );
    assert_eq!((lsa.requirement().buffer_size, lsa.requirement().buffer_align), ((9 + 3 * 8) * 4, 4));
    assert_eq!(lsa.handle().n_barriers, 3);
    let handle_at: *const u32 = &lsa.handle().buf_handle;
    assert_eq!(lsa.requirement().out_buffer_handle.cast_const(), handle_at, "points into the handle it came with");
    assert!(!lsa.as_raw().is_null());

    log.reset();
    assert_eq!(nccl.lla2a_calc_slots(10, 12).unwrap(), 20);
    let a2a = nccl.lla2a_requirement(4, 5).unwrap();
    assert_eq!(
        log.bytes(),
        Expect::default().name("ncclLLA2ACalcSlots").i32(10).i32(12).name("ncclLLA2ACreateRequirement").i32(4).i32(5).0
    );
    assert_eq!((a2a.requirement().buffer_size, a2a.requirement().buffer_align, a2a.handle().n_slots), (704, 16, 5));

    let comm = Communicator::init_rank(&nccl, 2, &id(), 1).unwrap();
    log.reset();
    let gin = comm.gin_barrier_requirement(&team, 2).unwrap();
    assert_eq!(
        log.bytes(),
        Expect::default().name("ncclGinBarrierCreateRequirement").i32(1).bytes(&team_bytes(&team)).i32(2).0
    );
    assert_eq!(gin.requirement().gin_signal_count, 16);
    assert_eq!(gin.requirement().out_gin_signal_start.cast_const(), &gin.handle().signal0 as *const u32);

    log.reset();
    // SAFETY: the stand-in only records the pointers.
    let err = unsafe { comm.dev_comm_create_raw(8 as *const c_void, 16 as *mut c_void) }.unwrap_err();
    assert!(matches!(err, Error::Nccl { function: "ncclDevCommCreate", result: NcclResult(5), .. }), "{err}");
    // SAFETY: as above.
    unsafe { comm.dev_comm_destroy_raw(24 as *const c_void) }.unwrap();
    assert_eq!(
        log.bytes(),
        Expect::default()
            .name("ncclDevCommCreate")
            .i32(1)
            .usize(8)
            .usize(16)
            .name("ncclDevCommDestroy")
            .i32(1)
            .usize(24)
            .0
    );
}

#[test]
fn one_sided_calls_and_window_queries_pass_every_argument() {
    let _g = serial();
    let (nccl, log) = load(23203);
    let comm = Communicator::init_rank(&nccl, 4, &id(), 1).unwrap();
    set_device_world(&log, 4, 1, 2);
    let mut buf = vec![0u8; 64];
    // SAFETY: the stand-in records the buffer address only.
    let win = unsafe { comm.window_register(buf.as_mut_ptr().cast(), 64, 0) }.unwrap();
    let w = win.as_raw() as usize;

    log.reset();
    assert_eq!(win.user_ptr().unwrap(), None, "no symmetric support: NULL");
    log.f::<extern "C" fn(*mut c_void)>("fake_set_win_user_ptr")(buf.as_mut_ptr().cast());
    assert_eq!(win.user_ptr().unwrap(), Some(buf.as_mut_ptr().cast()));
    log.f::<extern "C" fn(*mut c_void)>("fake_set_win_user_ptr")(std::ptr::null_mut());
    assert_eq!(
        log.bytes(),
        Expect::default().name("ncclWinGetUserPtr").i32(1).usize(w).name("ncclWinGetUserPtr").i32(1).usize(w).0
    );

    let stream = FakeStream::new(0x5151);
    log.reset();
    // SAFETY: the stand-in records the pointers only.
    unsafe {
        comm.put_signal_raw(
            0x1000 as *const c_void,
            33,
            DataType::FLOAT32,
            3,
            win.as_raw(),
            0x40,
            6,
            2,
            0x5151 as *mut c_void,
        )
    }
    .unwrap();
    comm.signal(2, 9, 1, &stream).unwrap();
    let descs = [
        WaitSignalDesc { op_count: 1, peer: 0, sig_idx: 6, ctx: 2 },
        WaitSignalDesc { op_count: 3, peer: 2, sig_idx: 9, ctx: 1 },
    ];
    comm.wait_signal(&descs, &stream).unwrap();
    let desc_bytes: Vec<u8> =
        descs.iter().flat_map(|d| [d.op_count, d.peer, d.sig_idx, d.ctx]).flat_map(i32::to_ne_bytes).collect();
    assert_eq!(
        log.bytes(),
        Expect::default()
            .name("ncclPutSignal")
            .usize(0x1000)
            .usize(33)
            .i32(DataType::FLOAT32.0)
            .i32(3)
            .usize(w)
            .usize(0x40)
            .i32(6)
            .i32(2)
            .i32(0)
            .i32(1)
            .usize(0x5151)
            .name("ncclSignal")
            .i32(2)
            .i32(9)
            .i32(1)
            .i32(0)
            .i32(1)
            .usize(0x5151)
            .name("ncclWaitSignal")
            .i32(2)
            .bytes(&desc_bytes)
            .i32(1)
            .usize(0x5151)
            .0
    );

    log.reset();
    assert_eq!(win.lsa_device_pointer(16, 1).unwrap() as usize, 0x2000_0010);
    let err = win.lsa_device_pointer(16, 2).unwrap_err();
    assert!(matches!(err, Error::Nccl { function: "ncclGetLsaDevicePointer", result: NcclResult(4), .. }), "{err}");
    assert_eq!(win.peer_device_pointer(8, 0).unwrap() as usize, 0x1000_0008);
    assert!(win.peer_device_pointer(8, 3).unwrap().is_null(), "outside this rank's load/store domain");
    let mc = MultimemHandle { mc_base_ptr: 0x7000_0000 as *mut c_void };
    assert_eq!(win.multimem_device_pointer(5, &mc).unwrap() as usize, 0x7000_0005);
    assert_eq!(win.lsa_multimem_device_pointer(4).unwrap() as usize, 0x4d43_0004);
    let team = Team { n_ranks: 4, rank: 1, stride: 1 };
    let le = win.cft_le_info(12, 3, &team).unwrap();
    assert_eq!((le.le_id, le.le_offset), (3, 12));
    assert_eq!(win.peer_le_info(7, 2).unwrap().le_id, 2);
    assert_eq!(win.multimem_le_info(9).unwrap().le_offset, 9);
    assert_eq!(
        log.bytes(),
        Expect::default()
            .name("ncclGetLsaDevicePointer")
            .usize(w)
            .usize(16)
            .i32(1)
            .name("ncclGetLsaDevicePointer")
            .usize(w)
            .usize(16)
            .i32(2)
            .name("ncclGetPeerDevicePointer")
            .usize(w)
            .usize(8)
            .i32(0)
            .name("ncclGetPeerDevicePointer")
            .usize(w)
            .usize(8)
            .i32(3)
            .name("ncclGetMultimemDevicePointer")
            .usize(w)
            .usize(5)
            .usize(0x7000_0000)
            .name("ncclGetLsaMultimemDevicePointer")
            .usize(w)
            .usize(4)
            .name("ncclGetCftDeviceLeInfo")
            .usize(w)
            .usize(12)
            .i32(3)
            .bytes(&team_bytes(&team))
            .name("ncclGetPeerDeviceLeInfo")
            .usize(w)
            .usize(7)
            .i32(2)
            .name("ncclGetMultimemDeviceLeInfo")
            .usize(w)
            .usize(9)
            .0
    );

    // SAFETY: as above.
    let reg = unsafe { comm.register(buf.as_mut_ptr().cast(), 64) }.unwrap();
    assert!(matches!(reg.user_ptr(), Err(Error::NotAWindow { operation: "ncclWinGetUserPtr" })), "not a window");
    assert!(matches!(reg.lsa_device_pointer(0, 0), Err(Error::NotAWindow { .. })));
    drop((reg, win));
    comm.destroy().unwrap();
}

#[test]
fn per_collective_configs_are_written_for_the_loaded_version() {
    let _g = serial();
    for code in [23203u32, 23102] {
        let (nccl, log) = load(code);
        let version = nccl.version();
        let size = coll_config_size(version).unwrap();
        assert_eq!(size, if code == 23203 { 72 } else { 64 });
        let comm = Communicator::init_rank(&nccl, 2, &id(), 1).unwrap();
        // No selection string: its address differs per encoding (its bytes are checked in
        // collective_config.rs's unit tests).
        let config =
            CollConfig::new().ctas(1, 4).nvls_ctas(2).cta_policy(1).force_alg_selection(false).user_profiler_tag(77);
        let encoded = config.encode(version).unwrap();
        let (s, d, st) = (0x100usize, 0x200usize, 0x5151usize);
        let (sp, dp, stp) = (s as *const c_void, d as *mut c_void, st as *mut c_void);
        let (f32t, sum) = (DataType::FLOAT32, RedOp::SUM);
        log.reset();
        // SAFETY: the stand-in records the pointers only.
        unsafe {
            comm.all_reduce_config_raw(sp, dp, 10, f32t, sum, &config, stp).unwrap();
            comm.broadcast_config_raw(sp, dp, 11, f32t, 1, &config, stp).unwrap();
            comm.reduce_config_raw(sp, dp, 12, f32t, sum, 0, &config, stp).unwrap();
            comm.all_gather_config_raw(sp, dp, 13, f32t, &config, stp).unwrap();
            comm.reduce_scatter_config_raw(sp, dp, 14, f32t, sum, &config, stp).unwrap();
            comm.all_to_all_config_raw(sp, dp, 15, f32t, &config, stp).unwrap();
            comm.gather_config_raw(sp, dp, 16, f32t, 1, &config, stp).unwrap();
            comm.scatter_config_raw(sp, dp, 17, f32t, 0, &config, stp).unwrap();
        }
        let cfg = |e: Expect| e.i32(1).usize(st).usize(size).bytes(encoded.as_bytes());
        let head = |n: &str, count: usize| Expect::default().name(n).usize(s).usize(d).usize(count).i32(f32t.0);
        let want: Vec<u8> = [
            cfg(head("ncclAllReduceConfig", 10).i32(sum.0)),
            cfg(head("ncclBroadcastConfig", 11).i32(1)),
            cfg(head("ncclReduceConfig", 12).i32(sum.0).i32(0)),
            cfg(head("ncclAllGatherConfig", 13)),
            cfg(head("ncclReduceScatterConfig", 14).i32(sum.0)),
            cfg(head("ncclAlltoAllConfig", 15)),
            cfg(head("ncclGatherConfig", 16).i32(1)),
            cfg(head("ncclScatterConfig", 17).i32(0)),
        ]
        .into_iter()
        .flat_map(|e| e.0)
        .collect();
        assert_eq!(log.bytes(), want, "{code}");
        let b = encoded.as_bytes();
        assert_eq!(u32::from_ne_bytes(b[12..16].try_into().unwrap()), code, "version = the loaded library's code");

        // The safe forms: the same records, with the buffers' lengths and checks.
        let (src, mut dst) = (HostBuf::new(vec![0.0; 6]), HostBuf::new(vec![0.0; 12]));
        let (sa, da) = (src.0.as_ptr() as usize, dst.0.as_ptr() as usize);
        let mut half = HostBuf::new(vec![0.0; 6]);
        let ha = half.0.as_ptr() as usize;
        log.reset();
        comm.all_gather_config(&src, &mut dst, &config, &stream_of(st)).unwrap();
        comm.reduce_scatter_config(&dst, &mut half, sum, &config, &stream_of(st)).unwrap();
        assert_eq!(
            log.bytes(),
            [
                cfg(Expect::default().name("ncclAllGatherConfig").usize(sa).usize(da).usize(6).i32(f32t.0)).0,
                cfg(Expect::default()
                    .name("ncclReduceScatterConfig")
                    .usize(da)
                    .usize(ha)
                    .usize(6)
                    .i32(f32t.0)
                    .i32(sum.0))
                .0,
            ]
            .concat()
        );
        log.reset();
        comm.broadcast_config(&mut dst, 1, &config, &stream_of(st)).unwrap();
        assert_eq!(
            log.bytes(),
            cfg(Expect::default().name("ncclBroadcastConfig").usize(da).usize(da).usize(12).i32(f32t.0).i32(1)).0
        );
        log.reset();
        comm.all_reduce_config(&src, &mut dst, RedOp::MAX, &config, &stream_of(st)).unwrap();
        assert_eq!(
            log.bytes(),
            cfg(Expect::default()
                .name("ncclAllReduceConfig")
                .usize(sa)
                .usize(da)
                .usize(6)
                .i32(f32t.0)
                .i32(RedOp::MAX.0))
            .0
        );
        log.reset();
        comm.reduce_config(&src, &mut dst, sum, 0, &config, &stream_of(st)).unwrap();
        let mut blocks = HostBuf::new(vec![0.0; 12]);
        let ba = blocks.0.as_ptr() as usize;
        comm.all_to_all_config(&dst, &mut blocks, &config, &stream_of(st)).unwrap();
        assert_eq!(
            log.bytes(),
            [
                cfg(Expect::default()
                    .name("ncclReduceConfig")
                    .usize(sa)
                    .usize(da)
                    .usize(6)
                    .i32(f32t.0)
                    .i32(sum.0)
                    .i32(0))
                .0,
                // Two ranks: 12 elements are two blocks of 6.
                cfg(Expect::default().name("ncclAlltoAllConfig").usize(da).usize(ba).usize(6).i32(f32t.0)).0,
            ]
            .concat()
        );
        let err = comm.all_to_all_config(&src, &mut blocks, &config, &stream_of(st)).unwrap_err();
        assert!(matches!(err, Error::LengthMismatch { .. }), "{err}");
        let err = comm.all_gather_config(&dst, &mut HostBuf::new(vec![0.0; 12]), &config, &stream_of(st)).unwrap_err();
        assert!(matches!(err, Error::LengthMismatch { .. }), "{err}");
        let with_event = CollConfig::new().launch_completion_event(8 as *mut c_void);
        let err = comm.all_reduce_config(&src, &mut dst, sum, &with_event, &stream_of(st)).unwrap_err();
        assert_eq!(err, Error::RawEventInSafeCall);

        // A field the loaded library does not know is refused before anything is called.
        log.reset();
        let event = CollConfig::new().launch_completion_event(0x4556 as *mut c_void);
        // SAFETY: as above.
        let r = unsafe { comm.all_reduce_config_raw(sp, dp, 1, f32t, sum, &event, stp) };
        if code == 23203 {
            r.unwrap();
        } else {
            assert_eq!(
                r.unwrap_err(),
                Error::Unsupported {
                    symbol: "launchCompletionEvent",
                    needs: parse_version("2.32.3"),
                    loaded: parse_version("2.31.2")
                }
            );
            assert!(log.bytes().is_empty());
        }
        comm.destroy().unwrap();
    }
}

#[test]
fn older_libraries_answer_unsupported_for_each_new_call() {
    let _g = serial();
    for (code, loaded) in [(22803u32, "2.28.3"), (21803, "2.18.3")] {
        let (nccl, log) = load(code);
        let comm = Communicator::init_rank(&nccl, 2, &id(), 0).unwrap();
        let unsupported = |r: Result<(), Error>, symbol: &'static str, needs: &str| {
            assert_eq!(
                r.unwrap_err(),
                Error::Unsupported { symbol, needs: parse_version(needs), loaded: parse_version(loaded) },
                "{code}"
            );
        };
        let team = Team { n_ranks: 2, rank: 0, stride: 1 };
        let stream = FakeStream::new(1);
        let (sp, dp, st) = (8 as *const c_void, 16 as *mut c_void, 24 as *mut c_void);
        let cfg = CollConfig::new();
        let (t, op) = (DataType::FLOAT32, RedOp::SUM);
        // SAFETY (every raw call below): refused before NCCL is reached.
        unsafe {
            unsupported(comm.put_signal_raw(sp, 1, t, 1, dp, 0, 0, 0, st), "ncclPutSignal", "2.29.2");
            unsupported(comm.all_reduce_config_raw(sp, dp, 1, t, op, &cfg, st), "ncclAllReduceConfig", "2.31.2");
            unsupported(comm.broadcast_config_raw(sp, dp, 1, t, 0, &cfg, st), "ncclBroadcastConfig", "2.31.2");
            unsupported(comm.reduce_config_raw(sp, dp, 1, t, op, 0, &cfg, st), "ncclReduceConfig", "2.31.2");
            unsupported(comm.all_gather_config_raw(sp, dp, 1, t, &cfg, st), "ncclAllGatherConfig", "2.31.2");
            unsupported(
                comm.reduce_scatter_config_raw(sp, dp, 1, t, op, &cfg, st),
                "ncclReduceScatterConfig",
                "2.31.2",
            );
            unsupported(comm.all_to_all_config_raw(sp, dp, 1, t, &cfg, st), "ncclAlltoAllConfig", "2.31.2");
            unsupported(comm.gather_config_raw(sp, dp, 1, t, 0, &cfg, st), "ncclGatherConfig", "2.31.2");
            unsupported(comm.scatter_config_raw(sp, dp, 1, t, 0, &cfg, st), "ncclScatterConfig", "2.31.2");
        }
        let (src, mut dst) = (HostBuf::new(vec![0.0; 2]), HostBuf::new(vec![0.0; 4]));
        unsupported(comm.all_reduce_config(&src, &mut dst, op, &cfg, &stream), "ncclAllReduceConfig", "2.31.2");
        unsupported(comm.broadcast_config(&mut dst, 0, &cfg, &stream), "ncclBroadcastConfig", "2.31.2");
        unsupported(comm.all_gather_config(&src, &mut dst, &cfg, &stream), "ncclAllGatherConfig", "2.31.2");
        unsupported(
            comm.reduce_scatter_config(&dst, &mut dst_half(), op, &cfg, &stream),
            "ncclReduceScatterConfig",
            "2.31.2",
        );
        unsupported(comm.reduce_config(&src, &mut dst, op, 0, &cfg, &stream), "ncclReduceConfig", "2.31.2");
        let mut blocks = HostBuf::new(vec![0.0; 4]);
        unsupported(comm.all_to_all_config(&dst, &mut blocks, &cfg, &stream), "ncclAlltoAllConfig", "2.31.2");
        unsupported(comm.signal(1, 0, 0, &stream), "ncclSignal", "2.29.2");
        unsupported(comm.wait_signal(&[WaitSignalDesc::default()], &stream), "ncclWaitSignal", "2.29.2");
        unsupported(comm.team_cft(CftTeamMode::FLAT).map(drop), "ncclTeamCft", "2.31.2");
        unsupported(comm.team_cft_multimem().map(drop), "ncclTeamCftMultimem", "2.31.2");
        if code == 22803 {
            // The 2.28.3 helpers exist there, and work.
            assert_eq!(comm.team_world().unwrap(), Team { n_ranks: 2, rank: 0, stride: 1 });
            assert_eq!(comm.team_rank_to_world(&team, 1).unwrap(), 1);
            assert_eq!(nccl.lla2a_calc_slots(2, 16).unwrap(), 4);
            assert_eq!(nccl.lsa_barrier_requirement(&team, 1).unwrap().requirement().buffer_size, 20);
            unsupported(comm.gin_barrier_requirement(&team, 1).map(drop), "ncclGinBarrierCreateRequirement", "2.28.7");
        } else {
            unsupported(comm.team_world().map(drop), "ncclTeamWorld", "2.28.3");
            unsupported(comm.team_lsa().map(drop), "ncclTeamLsa", "2.28.3");
            unsupported(comm.team_rail().map(drop), "ncclTeamRail", "2.28.3");
            unsupported(comm.team_rank_to_world(&team, 0).map(drop), "ncclTeamRankToWorld", "2.28.3");
            unsupported(comm.team_rank_to_lsa(&team, 0).map(drop), "ncclTeamRankToLsa", "2.28.3");
            unsupported(nccl.lla2a_calc_slots(1, 1).map(drop), "ncclLLA2ACalcSlots", "2.28.3");
            unsupported(nccl.lla2a_requirement(1, 1).map(drop), "ncclLLA2ACreateRequirement", "2.28.3");
            unsupported(nccl.lsa_barrier_requirement(&team, 1).map(drop), "ncclLsaBarrierCreateRequirement", "2.28.3");
            unsupported(comm.gin_barrier_requirement(&team, 1).map(drop), "ncclGinBarrierCreateRequirement", "2.28.7");
            // SAFETY: refused before NCCL is reached.
            unsupported(unsafe { comm.dev_comm_create_raw(sp, dp) }, "ncclDevCommCreate", "2.28.3");
            // SAFETY: as above.
            unsupported(unsafe { comm.dev_comm_destroy_raw(sp) }, "ncclDevCommDestroy", "2.28.3");
        }
        // Windows exist since 2.27.3 (not in the 2.18.3 build): their 2.29.2/2.31.2 queries.
        if code == 22803 {
            let mut buf = [0u8; 8];
            // SAFETY: the stand-in records the address only.
            let win = unsafe { comm.window_register(buf.as_mut_ptr().cast(), 8, 0) }.unwrap();
            unsupported(win.user_ptr().map(drop), "ncclWinGetUserPtr", "2.29.2");
            unsupported(win.lsa_device_pointer(0, 0).map(drop), "ncclGetLsaDevicePointer", "2.29.2");
            unsupported(win.peer_device_pointer(0, 0).map(drop), "ncclGetPeerDevicePointer", "2.29.2");
            unsupported(win.lsa_multimem_device_pointer(0).map(drop), "ncclGetLsaMultimemDevicePointer", "2.29.2");
            let mc = MultimemHandle { mc_base_ptr: 8 as *mut c_void };
            unsupported(win.multimem_device_pointer(0, &mc).map(drop), "ncclGetMultimemDevicePointer", "2.29.2");
            unsupported(win.multimem_le_info(0).map(drop), "ncclGetMultimemDeviceLeInfo", "2.31.2");
            unsupported(win.cft_le_info(0, 0, &team).map(drop), "ncclGetCftDeviceLeInfo", "2.31.2");
            unsupported(win.peer_le_info(0, 0).map(drop), "ncclGetPeerDeviceLeInfo", "2.31.2");
        }
        let _ = log;
        comm.destroy().unwrap();
    }
}

fn dst_half() -> HostBuf {
    HostBuf::new(vec![0.0; 2])
}

/// The offsets the crate writes `ncclCollConfig_t` with, for 2.31.2 and 2.32.3, against the C
/// compiler's layout of the two headers' definitions (tests/c/coll_config_layout.c), and
/// `ncclWaitSignalDesc_t`'s size.
#[test]
fn coll_config_offsets_match_the_c_compiler() {
    for (code, version) in [(23102, Version::new(2, 31, 2)), (23203, Version::new(2, 32, 3))] {
        let dir = common::work_dir(&format!("coll-config-layout-{code}"));
        let lib = common::build_shared_with(
            &dir,
            "layout",
            &[common::repo_file("tests/c/coll_config_layout.c")],
            &[&format!("-DCOLL_CONFIG_VERSION={code}")],
        );
        let (offsets, desc) = c_layout(&lib);
        let mut want: Vec<usize> = coll_config_fields(version).into_iter().map(|(_, off)| off).collect();
        want.push(coll_config_size(version).unwrap());
        assert_eq!(offsets, want, "{version}");
        assert_eq!(desc, std::mem::size_of::<WaitSignalDesc>());
    }
}

/// The layout a built `coll_config_layout.c` reports: the offsets then sizeof, and
/// `sizeof(ncclWaitSignalDesc_t)`.
fn c_layout(lib: &std::path::Path) -> (Vec<usize>, usize) {
    // SAFETY: the layout library built above; its functions only compute.
    let lib = unsafe { libloading::Library::new(lib) }.unwrap();
    // SAFETY: the prototypes of tests/c/coll_config_layout.c.
    unsafe {
        let layout = lib.get::<extern "C" fn(*mut usize, usize) -> usize>(b"coll_config_layout").unwrap();
        let desc = lib.get::<extern "C" fn() -> usize>(b"wait_signal_desc_size").unwrap();
        let mut out = [0usize; 32];
        let n = layout(out.as_mut_ptr(), out.len());
        (out[..n].to_vec(), desc())
    }
}

#[test]
fn coverage_of_the_stand_in_is_complete() {
    let _g = serial();
    let nccl = Nccl::load_from(common::standin::fake_nccl(23203)).unwrap();
    for name in ["ncclTeamWorld", "ncclPutSignal", "ncclAllReduceConfig", "ncclGetCftDeviceLeInfo"] {
        assert!(nccl.has(name), "{name}");
    }
}

/// `"2.31.2"` as a [`Version`].
fn parse_version(text: &str) -> Version {
    let n: Vec<u32> = text.split('.').map(|p| p.parse().unwrap()).collect();
    Version::new(n[0], n[1], n[2])
}
