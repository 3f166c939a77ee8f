//! ABI conformance of the call core, with the C compiler as oracle: pinned shapes (the NCCL
//! prototypes and every rule with a trap in it) and a seeded generator of random signatures.
//! Runs natively on x86-64 and under `qemu-aarch64 -cpu max` for AArch64.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]

mod common;

use std::ffi::c_void;
use std::path::PathBuf;

use common::{build_shared, check_call, nccl_shapes, pinned_shapes, repo_file, work_dir, CGen, Oracle, Pattern, Rng};
use nccl_trampoline::engine::{self, CallFrame};
use nccl_trampoline::{arg, CallPlan, Signature, Type};

fn build_oracle(name: &str, generated: &[String]) -> Oracle {
    let dir = work_dir(name);
    let mut sources: Vec<PathBuf> = vec![
        repo_file("tests/c/oracle_runtime.c"),
        repo_file("tests/c/nccl_shapes.c"),
        repo_file("tests/c/callee_saved.S"),
    ];
    for (i, src) in generated.iter().enumerate() {
        let path = dir.join(format!("generated{i}.c"));
        std::fs::write(&path, src).expect("write generated C");
        sources.push(path);
    }
    Oracle::load(&build_shared(&dir, name, &sources))
}

#[test]
fn pinned_shapes_match_the_c_compiler() {
    let shapes = pinned_shapes();
    let mut gen = CGen::default();
    for (name, sig) in &shapes {
        gen.function(name, sig);
    }
    let oracle = build_oracle("pinned", &[gen.source()]);
    let mut pattern = Pattern::new(7);
    let mut failures = Vec::new();
    for (name, sig) in shapes.iter().chain(nccl_shapes().iter()) {
        // Each shape twice, with different bytes.
        for _ in 0..2 {
            if let Err(e) = check_call(&oracle, name, sig, &mut pattern) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn comm_init_rank_callee_gets_a_private_copy_of_the_id() {
    let oracle = build_oracle("unique-id", &[]);
    let sig = &nccl_shapes()[0].1;
    let plan = CallPlan::new(sig).unwrap();
    let id: [u8; 128] = std::array::from_fn(|i| i as u8 ^ 0x5c);
    let (comm, nranks, rank) = (0x1122_3344_5566_7788usize, 4i32, 3i32);
    let mut result = -1i32;
    oracle.rec_reset_public();
    // SAFETY: ncclCommInitRank stand-in with exactly this prototype.
    unsafe {
        plan.call(
            oracle.sym("ncclCommInitRank"),
            &[arg(&comm), arg(&nranks), arg(&id), arg(&rank)],
            (&mut result as *mut i32).cast(),
        )
    }
    .unwrap();
    let rec = oracle.recording_public();
    assert_eq!(&rec[0..8], &comm.to_ne_bytes());
    assert_eq!(&rec[8..12], &nranks.to_ne_bytes());
    assert_eq!(&rec[12..140], &id[..], "the 128 id bytes");
    assert_eq!(&rec[140..144], &rank.to_ne_bytes(), "the rank after the id");
    // The stand-in overwrote its copy with 0xA5; ours must be untouched.
    assert_eq!(id, std::array::from_fn(|i| i as u8 ^ 0x5c));
}

#[test]
fn stack_is_16_aligned_at_the_call() {
    let oracle = build_oracle("stack-alignment", &[]);
    for extra in 0..3 {
        // 9 integers: three on the stack on x86-64, one on AArch64; vary the outgoing size.
        let mut args = vec![Type::I64; 9];
        args.extend(std::iter::repeat(Type::I64).take(0));
        let sig = Signature::new(args, Some(Type::I64)).unwrap();
        let plan = CallPlan::new(&sig).unwrap();
        let vals: Vec<i64> = (1..=9).map(|v| v * (extra + 1)).collect();
        let ptrs: Vec<*const c_void> = vals.iter().map(arg).collect();
        let mut r = 0i64;
        // SAFETY: nt_stack_alignment takes nine int64_t and returns int64_t.
        unsafe { plan.call(oracle.sym("nt_stack_alignment"), &ptrs, (&mut r as *mut i64).cast()) }.unwrap();
        assert_eq!(r / 1_000_000, 0, "stack pointer misaligned by {} at the call", r / 1_000_000);
        assert_eq!(r % 1_000_000, vals.iter().sum::<i64>());
    }
}

#[test]
fn entry_preserves_every_callee_saved_register() {
    let oracle = build_oracle("callee-saved", &[]);
    let entry = engine::entry().expect("this target has a trampoline");
    // SAFETY: an all-zero CallFrame is a valid value (null pointers, zero lengths).
    let mut frame: CallFrame = unsafe { std::mem::zeroed() };
    frame.func = oracle.sym("nt_rec_reset");
    // SAFETY: `unsigned nt_check_callee_saved(void (*)(void *), void *)` in callee_saved.S.
    let check = unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(*const c_void, *mut CallFrame) -> u64>(
            oracle.sym("nt_check_callee_saved"),
        )
    };
    assert_eq!(check(entry as *const c_void, &mut frame), 0, "bit mask of callee-saved registers the entry changed");
    // The checker itself must see a register that changes (negative control).
    assert_ne!(check(oracle.sym("nt_clobbering_entry"), &mut frame), 0, "the checker missed a clobbered register");
}

#[test]
fn random_signatures_match_the_c_compiler() {
    let seed = std::env::var("NCCL_TRAMPOLINE_FUZZ_SEED")
        .ok()
        .map(|s| {
            let s = s.trim();
            s.strip_prefix("0x")
                .map_or_else(|| s.parse(), |h| u64::from_str_radix(h, 16))
                .expect("NCCL_TRAMPOLINE_FUZZ_SEED: a u64")
        })
        .unwrap_or(0x5eed_2026);
    let count: usize = std::env::var("NCCL_TRAMPOLINE_FUZZ_COUNT")
        .ok()
        .map_or(10_000, |c| c.parse().expect("NCCL_TRAMPOLINE_FUZZ_COUNT"));
    eprintln!(
        "random signatures: seed {seed:#x} (NCCL_TRAMPOLINE_FUZZ_SEED), count {count} (NCCL_TRAMPOLINE_FUZZ_COUNT)"
    );

    let mut rng = Rng(seed);
    let sigs: Vec<Signature> = (0..count).map(|_| common::random_signature(&mut rng)).collect();
    let chunks = 8;
    let per = count.div_ceil(chunks).max(1);
    let sources: Vec<String> = sigs
        .chunks(per)
        .enumerate()
        .map(|(c, part)| {
            let mut gen = CGen::default();
            for (i, sig) in part.iter().enumerate() {
                gen.function(&format!("f{}", c * per + i), sig);
            }
            gen.source()
        })
        .collect();
    let oracle = build_oracle("random", &sources);

    let mut pattern = Pattern::new(seed);
    let mut failures = Vec::new();
    let mut stats = [0usize; 4];
    for (i, sig) in sigs.iter().enumerate() {
        stats[0] += sig.args().iter().filter(|t| matches!(t, Type::Aggregate(_))).count();
        stats[1] += usize::from(sig.fixed_args().is_some());
        stats[2] += usize::from(matches!(sig.ret(), Some(Type::Aggregate(_))));
        stats[3] += sig.args().len();
        if let Err(e) = check_call(&oracle, &format!("f{i}"), sig, &mut pattern) {
            failures.push(e);
        }
    }
    eprintln!(
        "random signatures: {count} calls, {} arguments ({} aggregates), {} variadic, {} aggregate returns, {} mismatches",
        stats[3],
        stats[0],
        stats[1],
        stats[2],
        failures.len()
    );
    failures.truncate(10);
    assert!(failures.is_empty(), "seed {seed:#x}: mismatches (first 10):\n{}", failures.join("\n\n"));
}
