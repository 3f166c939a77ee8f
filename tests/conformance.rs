//! ABI conformance of the call core, with the C compiler as oracle: pinned shapes (the NCCL
//! prototypes and every rule with a trap in it) and a seeded generator of random signatures.
//! Runs natively on x86-64 and under `qemu-aarch64 -cpu max` for AArch64.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]

mod common;

use std::ffi::c_void;
use std::path::PathBuf;

use std::collections::BTreeSet;

use common::{
    build_shared, check_call, check_plan_call, compiler_version, known_compiler_bug, nccl_shapes, pinned_shapes,
    repo_file, work_dir, CGen, Oracle, Pattern, Rng,
};
use nccl_trampoline::__private::layout::{
    LINE_REG_ARGS, MAX_LINE_ARGS, MAX_WORD_ARGS, REGS_INT, REGS_VEC, TABLE_NAMES, T_WORDS,
};
use nccl_trampoline::__private::{CodePath, PlanCode, VectorCopy};
use nccl_trampoline::{arg, Aggregate, CArg, CLongDouble, CallPlan, Complex, Signature, Type, TypedFn, ValueAt};

fn build_oracle(name: &str, generated: &[String]) -> Oracle {
    let dir = work_dir(name);
    let mut sources: Vec<PathBuf> = vec![
        repo_file("oracle/runtime.c"),
        repo_file("tests/c/nccl_shapes.c"),
        repo_file("tests/c/callee_saved.S"),
        repo_file("tests/c/unwind_probe.c"),
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
    let compiler = compiler_version();
    let mut pattern = Pattern::new(7);
    let mut failures = Vec::new();
    let mut known = Vec::new();
    for (name, sig) in shapes.iter().chain(nccl_shapes().iter()) {
        // A shape the oracle compiler is known to get wrong must still disagree: when the
        // compiler is fixed, this says so, and the exclusion goes.
        if let Some(bug) = known_compiler_bug(&compiler, sig) {
            let reproduced = check_call(&oracle, name, sig, &mut pattern).is_err();
            assert!(reproduced, "{name}: {compiler:?} now agrees with the ABI; drop the exclusion: {bug}");
            known.push(format!("{name} ({bug})"));
            continue;
        }
        // Each shape twice, with different bytes.
        for _ in 0..2 {
            if let Err(e) = check_call(&oracle, name, sig, &mut pattern) {
                failures.push(e);
            }
        }
    }
    eprintln!(
        "pinned shapes ({} {}): {} compared, {} mismatches; the compiler's known bugs, reproduced and not compared: {known:?}",
        compiler.0,
        compiler.1,
        shapes.len() + nccl_shapes().len() - known.len(),
        failures.len()
    );
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

/// The words of a typed call (`CArg::word`) for argument pointers of `sig`.
fn words_of(sig: &Signature, args: &[*const c_void]) -> Vec<u64> {
    sig.args()
        .iter()
        .zip(args)
        // SAFETY: each pointer points to a value of its type's size.
        .map(|(t, p)| common::word_of(t, unsafe { std::slice::from_raw_parts(p.cast::<u8>(), t.size()) }))
        .collect()
}

/// `struct { int64_t v; }`: passed as its member (one INTEGER eightbyte, SysV; a composite of
/// one 8-byte word in a register, AAPCS64 and LP64D), but an aggregate to the plan.
fn i64_struct() -> Type {
    Type::Aggregate(Aggregate::builder().field(Type::I64).build().unwrap())
}

#[test]
fn every_entry_preserves_every_callee_saved_register() {
    let oracle = build_oracle("callee-saved", &[]);
    // SAFETY: `uint64_t nt_check_callee_saved(entry, a0, a1, a2, a3)` in callee_saved.S.
    let check = unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(usize, usize, usize, usize, usize) -> u64>(
            oracle.sym("nt_check_callee_saved"),
        )
    };
    let p = Type::Pointer;
    let id = [0x5au8; 128];
    let (comm, nranks, rank) = (0usize, 2i32, 1i32);
    let ints: Vec<i64> = (1..=9).collect();
    let (low, wide) = (7u8, 2.5f64);
    let mut scratch = [0u8; 16];
    let (buf, len) = (scratch.as_mut_ptr(), scratch.len());
    let (send, recv, count, dtype, op, root, stream) = (1usize, 2usize, 3usize, 4i32, 5i32, 6i32, 7usize);
    let cases: Vec<(&str, Signature, Vec<*const c_void>)> = vec![
        ("ncclCommInitRank", nccl_shapes()[0].1.clone(), vec![arg(&comm), arg(&nranks), arg(&id), arg(&rank)]),
        (
            "ncclReduce",
            nccl_shapes()[2].1.clone(),
            vec![arg(&send), arg(&recv), arg(&count), arg(&dtype), arg(&op), arg(&root), arg(&comm), arg(&stream)],
        ),
        (
            "nt_stack_alignment",
            Signature::new(vec![Type::I64; 9], Some(Type::I64)).unwrap(),
            ints.iter().map(arg).collect(),
        ),
        (
            "nt_low_byte",
            Signature::new(vec![Type::U8, Type::F64], Some(Type::U32)).unwrap(),
            vec![arg(&low), arg(&wide)],
        ),
        ("nt_scribble", Signature::new(vec![p, Type::U64], None).unwrap(), vec![arg(&buf), arg(&len)]),
        (
            "nt_unwind_probe2",
            Signature::new(vec![Type::I64; 2], Some(Type::I64)).unwrap(),
            ints[..2].iter().map(arg).collect(),
        ),
        // A one-member struct passes as its member: the same callee through the typed walk
        // without a frame (an aggregate keeps it off the word and register bodies).
        (
            "nt_unwind_probe2",
            Signature::new(vec![i64_struct(), Type::I64], Some(Type::I64)).unwrap(),
            ints[..2].iter().map(arg).collect(),
        ),
    ];
    let mut entries = std::collections::BTreeSet::new();
    for (name, sig, args) in &cases {
        let plan = CallPlan::new(sig).unwrap();
        let func = oracle.sym(name) as usize;
        let mut ret = [0u64; 2];
        let (entry, program) = plan.checked_parts();
        let argv = args.as_ptr() as usize;
        let mask = check(entry, argv, ret.as_mut_ptr() as usize, func, program.as_ptr() as usize);
        assert_eq!(mask, 0, "{name}: {:?} changed callee-saved registers (bit mask)", plan.code_path());
        entries.insert(plan.code_path()[0]);
        let words = words_of(sig, args);
        let (entry, program) = plan.typed_parts().expect("scalar results have a typed program");
        let mask = check(entry, words.as_ptr() as usize, func, program.as_ptr() as usize, 0);
        assert_eq!(mask, 0, "{name}: {:?} changed callee-saved registers (bit mask)", plan.typed_code_path());
        entries.insert(plan.typed_code_path()[0]);
    }
    eprintln!("callee-saved registers preserved by: {entries:?}");
    let kinds: &[&str] = if REGS_VEC > 0 {
        &["walk_checked", "walk_framed", "walk_tail", "words_", "line_", "regs_"]
    } else {
        &["walk_checked", "walk_framed", "walk_tail", "words_", "line_"]
    };
    for kind in kinds {
        assert!(entries.iter().any(|e| e.starts_with(kind)), "no case runs {kind}: {entries:?}");
    }
    // The checker itself must see a register that changes (negative control).
    assert_ne!(
        check(oracle.sym("nt_clobbering_entry") as usize, 0, 0, 0, 0),
        0,
        "the checker missed a clobbered register"
    );
}

#[test]
fn unwinders_walk_from_the_callee_through_every_entry_kind() {
    let oracle = build_oracle("unwind", &[]);
    // SAFETY: `int64_t nt_unwind_outer(void *entry, void *, void *, void *, void *)` in
    // unwind_probe.c: calls entry with the four pointers.
    let outer = unsafe {
        std::mem::transmute::<*const c_void, extern "C" fn(usize, usize, usize, usize, usize) -> i64>(
            oracle.sym("nt_unwind_outer"),
        )
    };
    let ints: Vec<i64> = (1..=9).collect();
    let x = 1.5f64;
    let cases: Vec<(&str, Signature, Vec<*const c_void>)> = vec![
        (
            "nt_unwind_probe9",
            Signature::new(vec![Type::I64; 9], Some(Type::I64)).unwrap(),
            ints.iter().map(arg).collect(),
        ),
        (
            "nt_unwind_probe2",
            Signature::new(vec![Type::I64; 2], Some(Type::I64)).unwrap(),
            ints[..2].iter().map(arg).collect(),
        ),
        ("nt_unwind_probe_f", Signature::new(vec![Type::F64], Some(Type::I64)).unwrap(), vec![arg(&x)]),
        // As in the callee-saved test: the typed walk without a frame.
        (
            "nt_unwind_probe2",
            Signature::new(vec![i64_struct(), Type::I64], Some(Type::I64)).unwrap(),
            ints[..2].iter().map(arg).collect(),
        ),
        (
            "nt_unwind_probe_fs",
            Signature::new([vec![Type::F64], vec![Type::I64; 9]].concat(), Some(Type::I64)).unwrap(),
            [vec![arg(&x)], ints.iter().map(arg).collect()].concat(),
        ),
    ];
    let mut walked = std::collections::BTreeSet::new();
    for (name, sig, args) in &cases {
        let plan = CallPlan::new(sig).unwrap();
        let func = oracle.sym(name) as usize;
        let argv = args.as_ptr() as usize;
        // Checked entry: the probe's answer lands in `ret`.
        let mut ret = 0i64;
        let (entry, program) = plan.checked_parts();
        let status = outer(entry, argv, &mut ret as *mut i64 as usize, func, program.as_ptr() as usize);
        assert_eq!(status & 0xffff_ffff, 0, "{name}: status");
        assert!(ret > 1000, "{name}: {:?}: the unwinder did not reach the caller ({ret})", plan.code_path());
        walked.insert(plan.code_path()[0]);
        // Typed entry: the probe's answer comes back in the result register.
        let words = words_of(sig, args);
        let (entry, program) = plan.typed_parts().unwrap();
        let r = outer(entry, words.as_ptr() as usize, func, program.as_ptr() as usize, 0);
        assert!(r > 1000, "{name}: {:?}: the unwinder did not reach the caller ({r})", plan.typed_code_path());
        walked.insert(plan.typed_code_path()[0]);
    }
    // Negative control: a frame without call frame information stops the unwinder.
    let r = outer(oracle.sym("nt_no_cfi_entry") as usize, 0, oracle.sym("nt_unwind_probe2") as usize, 0, 0);
    assert!(r < 1000, "the probe reached the caller through a frame without CFI ({r}): it cannot fail");
    eprintln!("unwound through: {walked:?}; without CFI the walk stops ({r})");
    let kinds: &[&str] = if REGS_VEC > 0 {
        &["walk_checked", "walk_framed", "walk_tail", "words_", "line_", "regs_"]
    } else {
        &["walk_checked", "walk_framed", "walk_tail", "words_", "line_"]
    };
    for kind in kinds {
        assert!(walked.iter().any(|e| e.starts_with(kind)), "no case unwinds through {kind}: {walked:?}");
    }
}

/// A random aggregate of narrow members (bytes, shorts, ints, floats): every size from 1 to 24.
fn narrow_aggregate(rng: &mut Rng) -> Type {
    let narrow = [Type::I8, Type::U8, Type::I16, Type::U16, Type::I32, Type::F32];
    let mut b = Aggregate::builder();
    if rng.chance(60) {
        let t = if rng.chance(50) { Type::I8 } else { Type::U8 };
        b = b.array(t, rng.range(1, 16));
    } else {
        for _ in 0..rng.range(1, 3) {
            let t = narrow[rng.below(narrow.len() as u64) as usize];
            let n = rng.range(1, 8 / t.size().min(4) + 1);
            b = b.array(t, n);
        }
    }
    Type::Aggregate(b.build().unwrap())
}

/// A random signature of narrow aggregates and scalars, mostly returning a narrow aggregate.
fn narrow_signature(rng: &mut Rng) -> Signature {
    let args = (0..rng.range(1, 9))
        .map(|_| if rng.chance(50) { narrow_aggregate(rng) } else { common::random_scalar(rng) })
        .collect();
    let ret = if rng.chance(80) { Some(narrow_aggregate(rng)) } else { Some(common::random_scalar(rng)) };
    Signature::new(args, ret).unwrap()
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
    let mut sigs: Vec<Signature> = (0..count).map(|_| common::random_signature(&mut rng)).collect();
    // The shared generator rarely makes aggregates of odd sizes, whose pieces (3, 5, 6, 7
    // bytes; a second eightbyte of 1 to 7) have handlers of their own: a byte-array-heavy
    // supplement, from the same seed, so that every handler runs.
    let extra = (count / 25).max(usize::from(count > 0) * 40);
    sigs.extend((0..extra).map(|_| narrow_signature(&mut rng)));
    let count = sigs.len();
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
    let mut covered = BTreeSet::new();
    let widths: Vec<VectorCopy> = VectorCopy::ALL.into_iter().filter(|c| c.is_available()).collect();
    let compiler = compiler_version();
    let mut known = std::collections::BTreeMap::new();
    for (i, sig) in sigs.iter().enumerate() {
        if let Some(bug) = known_compiler_bug(&compiler, sig) {
            *known.entry(bug).or_insert(0usize) += 1;
            continue;
        }
        stats[0] += sig.args().iter().filter(|t| matches!(t, Type::Aggregate(_))).count();
        stats[1] += usize::from(sig.fixed_args().is_some());
        stats[2] += usize::from(matches!(sig.ret(), Some(Type::Aggregate(_))));
        stats[3] += sig.args().len();
        let name = format!("f{i}");
        // The checked program (CallPlan::call), as every caller of the dynamic API runs it.
        if let Err(e) = check_call(&oracle, &name, sig, &mut pattern) {
            failures.push(e);
        }
        let plan = CallPlan::new(sig).unwrap();
        covered.extend(plan.code_path());
        // The typed program (typed bindings, call_unchecked), where the result is a scalar.
        if plan.typed_parts().is_some() {
            covered.extend(plan.typed_code_path());
            if let Err(e) = check_plan_call(&oracle, &name, sig, &plan, true, &mut pattern) {
                failures.push(e);
            }
        }
        // Every copy width this CPU has, for signatures that copy an aggregate.
        if plan.code_path().iter().any(|h| h.starts_with("copy_")) {
            for &copy in &widths {
                let plan = CallPlan::with_vector_copy(sig, copy).unwrap();
                covered.extend(plan.code_path());
                if let Err(e) = check_plan_call(&oracle, &name, sig, &plan, false, &mut pattern) {
                    failures.push(e);
                }
            }
        }
    }
    // Every handler, and every walk, must have run: the corpus reaches all of them.
    let unavailable: Vec<String> =
        VectorCopy::ALL.into_iter().filter(|c| !c.is_available()).map(|c| format!("copy_{}", c.name())).collect();
    let expected: Vec<&str> = TABLE_NAMES[..T_WORDS as usize].to_vec();
    let missing: Vec<&&str> =
        expected.iter().filter(|h| !covered.contains(**h) && !unavailable.iter().any(|u| u == *h)).collect();
    eprintln!(
        "random signatures: {} of {} handlers and walks reached; not runnable on this CPU: {unavailable:?}",
        expected.iter().filter(|h| covered.contains(**h)).count(),
        expected.len()
    );
    assert!(missing.is_empty(), "seed {seed:#x}: the corpus never ran {missing:?}");
    eprintln!("random signatures ({} {}): not compared, the compiler's known bugs: {known:?}", compiler.0, compiler.1);
    eprintln!(
        "random signatures: {} calls, {} arguments ({} aggregates), {} variadic, {} aggregate returns, {} mismatches",
        count - known.values().sum::<usize>(),
        stats[3],
        stats[0],
        stats[1],
        stats[2],
        failures.len()
    );
    failures.truncate(10);
    assert!(failures.is_empty(), "seed {seed:#x}: mismatches (first 10):\n{}", failures.join("\n\n"));
}

/// Every straight-line body, exhaustively, against gcc: each checked body (every width mask of
/// up to MAX_LINE_ARGS `int32_t` / 64-bit arguments, those past LINE_REG_ARGS 64-bit, each
/// result kind) through `CallPlan::call`, each typed word body (every argument count up to
/// MAX_WORD_ARGS, integers and pointers of every width, seeded) and each typed register body
/// (x86-64: every count of integer and vector registers, the classes interleaved at random,
/// floats and doubles, integers of every width) through `CallPlan::call_words`.
#[test]
fn every_straight_line_body_matches_the_c_compiler() {
    let wide = [Type::I64, Type::U64, Type::Pointer];
    let mut lines = Vec::new();
    for n in 0..=MAX_LINE_ARGS as usize {
        let stack = n.saturating_sub(LINE_REG_ARGS as usize);
        for mask in (0..1usize << n).filter(|m| m & ((1 << stack) - 1) == (1 << stack) - 1) {
            let args: Vec<Type> =
                (0..n).map(|k| if mask >> (n - 1 - k) & 1 == 1 { wide[(k + mask) % 3] } else { Type::I32 }).collect();
            for ret in [Type::I32, Type::U32, wide[mask % 3]] {
                lines.push(Signature::new(args.clone(), Some(ret)).unwrap());
            }
        }
    }
    let ints = [Type::I8, Type::U8, Type::I16, Type::U16, Type::I32, Type::U32, Type::I64, Type::U64, Type::Pointer];
    let rets =
        [None, Some(Type::I8), Some(Type::U16), Some(Type::I32), Some(Type::U64), Some(Type::Pointer), Some(Type::F64)];
    let mut rng = Rng(0x30bd_5eed);
    let mut words = Vec::new();
    for n in 0..=MAX_WORD_ARGS as usize {
        for ret in &rets {
            let args = (0..n).map(|_| ints[rng.below(ints.len() as u64) as usize]).collect();
            words.push(Signature::new(args, *ret).unwrap());
        }
    }
    let mut regs = Vec::new();
    for ni in 0..=REGS_INT as usize {
        for nv in 1..=REGS_VEC as usize {
            // ni integers and nv floats in a random order, each a random width.
            let mut classes: Vec<bool> = (0..ni).map(|_| false).chain((0..nv).map(|_| true)).collect();
            for k in (1..classes.len()).rev() {
                classes.swap(k, rng.below(k as u64 + 1) as usize);
            }
            let args = classes
                .iter()
                .map(|&v| {
                    if v {
                        [Type::F32, Type::F64][rng.below(2) as usize]
                    } else {
                        ints[rng.below(ints.len() as u64) as usize]
                    }
                })
                .collect();
            regs.push(Signature::new(args, rets[(ni + nv) % rets.len()]).unwrap());
        }
    }
    // The register bodies of framed typed calls (enterb, x86-64): ni integers and a 24-byte
    // aggregate (MEMORY class: copied to the stack) at a random place, no vector register.
    let big = Type::Aggregate(Aggregate::builder().array(Type::I64, 3).build().unwrap());
    for ni in (0..=REGS_INT as usize).filter(|_| REGS_VEC > 0) {
        let mut args: Vec<Type> = (0..ni).map(|_| ints[rng.below(ints.len() as u64) as usize]).collect();
        args.insert(rng.below(ni as u64 + 1) as usize, big);
        regs.push(Signature::new(args, rets[ni % rets.len()]).unwrap());
    }
    let shapes: Vec<Signature> = lines.iter().chain(&words).chain(&regs).cloned().collect();
    let chunks = 8;
    let per = shapes.len().div_ceil(chunks);
    let sources: Vec<String> = shapes
        .chunks(per)
        .enumerate()
        .map(|(c, part)| {
            let mut gen = CGen::default();
            for (i, sig) in part.iter().enumerate() {
                gen.function(&format!("l{}", c * per + i), sig);
            }
            gen.source()
        })
        .collect();
    let oracle = build_oracle("lines", &sources);
    let mut pattern = Pattern::new(0x11e5);
    let mut failures = Vec::new();
    let mut covered = BTreeSet::new();
    for (i, sig) in shapes.iter().enumerate() {
        let name = format!("l{i}");
        let plan = CallPlan::new(sig).unwrap();
        let (checked, typed) = (plan.code_path(), plan.typed_code_path());
        if i < lines.len() {
            assert!(checked.len() == 1 && checked[0].starts_with("line_"), "{sig:?}: not a checked line: {checked:?}");
        }
        if i < lines.len() + words.len() {
            assert!(typed.len() == 1 && typed[0].starts_with("words_"), "{sig:?}: not a word body: {typed:?}");
        } else if sig.args().iter().any(|t| !t.is_word()) {
            assert!(typed.contains(&"enterb"), "{sig:?}: not through enterb: {typed:?}");
        } else {
            assert!(typed.len() == 1 && typed[0].starts_with("regs_"), "{sig:?}: not a register body: {typed:?}");
        }
        covered.extend(checked);
        covered.extend(typed);
        if let Err(e) = check_call(&oracle, &name, sig, &mut pattern) {
            failures.push(e);
        }
        if let Err(e) = check_plan_call(&oracle, &name, sig, &plan, true, &mut pattern) {
            failures.push(e);
        }
    }
    let bodies: Vec<&&str> = TABLE_NAMES
        .iter()
        .filter(|n| n.starts_with("line_") || n.starts_with("words_") || n.starts_with("regs_"))
        .collect();
    let missing: Vec<&&&str> = bodies.iter().filter(|n| !covered.contains(**n)).collect();
    eprintln!(
        "straight lines: {} signatures, {} of {} bodies reached",
        shapes.len(),
        bodies.len() - missing.len(),
        bodies.len()
    );
    assert!(missing.is_empty(), "never ran: {missing:?}");
    failures.truncate(10);
    assert!(failures.is_empty(), "mismatches (first 10):\n{}", failures.join("\n\n"));
}

/// Frames larger than a page: two 3000-byte aggregates by value (stack arguments on x86-64,
/// private copies on AArch64) make the walks probe the stack page by page.
#[test]
fn frames_larger_than_a_page_are_probed() {
    let big = Type::Aggregate(Aggregate::builder().array(Type::U8, 3000).build().unwrap());
    let sigs = [
        Signature::new(vec![big, Type::I32, big], Some(Type::I64)).unwrap(),
        Signature::new(vec![Type::F64, big, big], None).unwrap(),
    ];
    let mut gen = CGen::default();
    for (i, sig) in sigs.iter().enumerate() {
        gen.function(&format!("big{i}"), sig);
    }
    let oracle = build_oracle("big-frames", &[gen.source()]);
    let mut pattern = Pattern::new(0xb16);
    for (i, sig) in sigs.iter().enumerate() {
        let plan = CallPlan::new(sig).unwrap();
        let name = format!("big{i}");
        check_call(&oracle, &name, sig, &mut pattern).unwrap();
        check_plan_call(&oracle, &name, sig, &plan, true, &mut pattern).unwrap();
        assert!(plan.placement().stack_len + plan.placement().copy_len > 4096, "{sig:?} does not need a large frame");
    }
}

/// `ncclUniqueId` as a Rust type passed by value through a typed binding.
#[repr(C)]
#[derive(Clone, Copy)]
struct UniqueId([i8; 128]);

// SAFETY: `struct { char internal[128]; }`, exactly this layout.
unsafe impl CArg for UniqueId {
    const AGGREGATE: bool = true;
    fn c_type() -> Type {
        Type::Aggregate(Aggregate::builder().array(Type::I8, 128).build().unwrap())
    }
}

type P = *mut c_void;
/// `ncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream)`.
type ReduceArgs = (*const c_void, P, usize, i32, i32, i32, P, P);

/// Typed bindings of the NCCL prototypes deliver the same bytes as the C compiler's calls.
#[test]
fn typed_bindings_match_the_c_compiler() {
    let oracle = build_oracle("typed", &[]);
    let shapes = nccl_shapes();
    let ret_bytes = 0x1234_5678i32.to_ne_bytes();
    let reference = |name: &str, args: &[*const c_void]| -> Vec<u8> {
        oracle.rec_reset_public();
        let mut r = 0i32;
        // SAFETY: `void ref_<name>(void *const *args, void *ret)` of tests/c/nccl_shapes.c.
        unsafe {
            std::mem::transmute::<*const c_void, extern "C" fn(*const *const c_void, *mut c_void)>(
                oracle.sym(&format!("ref_{name}")),
            )(args.as_ptr(), (&mut r as *mut i32).cast())
        };
        assert_eq!(r, 0x1234_5678);
        oracle.recording_public()
    };
    common::OracleRuntime::set_return_bytes(&oracle, &ret_bytes);

    let id = UniqueId(std::array::from_fn(|i| (i as i8).wrapping_mul(3) ^ 0x55));
    let (comm, nranks, rank, config) = (0x1122_3344_5566_7788usize as *mut P, 8i32, 5i32, 0xc0f1_6000usize as P);
    let init: TypedFn<(*mut P, i32, UniqueId, i32), i32> =
        // SAFETY: the stand-in has this prototype.
        unsafe { CallPlan::new(&shapes[0].1).unwrap().bind(oracle.sym("ncclCommInitRank")).unwrap() };
    oracle.rec_reset_public();
    // SAFETY: the stand-in only records its arguments and scribbles on its own copy.
    assert_eq!(unsafe { init.call((comm, nranks, id, rank)) }, 0x1234_5678);
    let got = oracle.recording_public();
    assert_eq!(
        got,
        reference("ncclCommInitRank", &[arg(&comm), arg(&nranks), arg(&id), arg(&rank)]),
        "{:?}",
        init.code_path()
    );
    assert_eq!(id.0, UniqueId(std::array::from_fn(|i| (i as i8).wrapping_mul(3) ^ 0x55)).0, "the caller's id changed");

    // The same through ValueAt: the id passed by value from where it is.
    let init_at: TypedFn<(*mut P, i32, ValueAt<UniqueId>, i32), i32> =
        // SAFETY: as above.
        unsafe { CallPlan::new(&shapes[0].1).unwrap().bind(oracle.sym("ncclCommInitRank")).unwrap() };
    oracle.rec_reset_public();
    // SAFETY: as above; `id` outlives the call.
    assert_eq!(unsafe { init_at.call((comm, nranks, ValueAt::new(&id), rank)) }, 0x1234_5678);
    assert_eq!(oracle.recording_public(), got, "ValueAt");
    assert_eq!(id.0, UniqueId(std::array::from_fn(|i| (i as i8).wrapping_mul(3) ^ 0x55)).0, "the caller's id changed");

    let init_config: TypedFn<(*mut P, i32, UniqueId, i32, P), i32> =
        // SAFETY: as above.
        unsafe { CallPlan::new(&shapes[1].1).unwrap().bind(oracle.sym("ncclCommInitRankConfig")).unwrap() };
    oracle.rec_reset_public();
    // SAFETY: as above.
    unsafe { init_config.call((comm, nranks, id, rank, config)) };
    let got = oracle.recording_public();
    let want = reference("ncclCommInitRankConfig", &[arg(&comm), arg(&nranks), arg(&id), arg(&rank), arg(&config)]);
    assert_eq!(got, want, "{:?}", init_config.code_path());

    let reduce: TypedFn<ReduceArgs, i32> =
        // SAFETY: as above.
        unsafe { CallPlan::new(&shapes[2].1).unwrap().bind(oracle.sym("ncclReduce")).unwrap() };
    let (send, recv, count) = (0x7f00_1000_0000usize as *const c_void, 0x7f00_2000_0000usize as P, 1usize << 20);
    let (dtype, op, root, rcomm, stream) = (7i32, 2i32, 3i32, 0x5555_0000_1230usize as P, 0x5555_0000_4560usize as P);
    oracle.rec_reset_public();
    // SAFETY: as above.
    unsafe { reduce.call((send, recv, count, dtype, op, root, rcomm, stream)) };
    let got = oracle.recording_public();
    let want = reference(
        "ncclReduce",
        &[arg(&send), arg(&recv), arg(&count), arg(&dtype), arg(&op), arg(&root), arg(&rcomm), arg(&stream)],
    );
    assert_eq!(got, want, "{:?}", reduce.code_path());
    eprintln!(
        "typed bindings: ncclCommInitRank {:?}, ncclCommInitRankConfig {:?}, ncclReduce {:?}",
        init.code_path(),
        init_config.code_path(),
        reduce.code_path()
    );
}

/// riscv64: the register bits the byte-recording oracle cannot see, read raw by assembly
/// probes (tests/c/callee_saved.S): a `uint32_t` arrives sign-extended from bit 31 and a
/// `float` in an f register NaN-boxed (upper 32 bits all ones), through the checked program,
/// the typed program and a typed binding. Negative control: the probes see the difference.
#[cfg(target_arch = "riscv64")]
#[test]
fn lp64d_extends_uint32_and_nan_boxes_floats() {
    let oracle = build_oracle("raw-registers", &[]);
    let u = 0x8000_0001u32;
    let u32_sig = Signature::new(vec![Type::U32], Some(Type::U64)).unwrap();
    // A float after an int64_t: off the word bodies, so the walk's flw is what runs.
    let f32_sig = Signature::new(vec![Type::F32, Type::F32], Some(Type::U64)).unwrap();
    let (x, y) = (1.5f32, -2.25f32);
    let cases: [(&str, &Signature, Vec<*const c_void>, u64); 3] = [
        ("nt_raw_a0", &u32_sig, vec![arg(&u)], 0xffff_ffff_8000_0001),
        ("nt_raw_fa0", &f32_sig, vec![arg(&x), arg(&y)], 0xffff_ffff_0000_0000 | u64::from(x.to_bits())),
        ("nt_raw_fa1", &f32_sig, vec![arg(&x), arg(&y)], 0xffff_ffff_0000_0000 | u64::from(y.to_bits())),
    ];
    for (name, sig, args, expected) in cases {
        let plan = CallPlan::new(sig).unwrap();
        let func = oracle.sym(name);
        let mut raw = 0u64;
        // SAFETY: the probe takes the planned arguments and returns a 64-bit value.
        unsafe { plan.call(func, &args, (&mut raw as *mut u64).cast()) }.unwrap();
        assert_eq!(raw, expected, "{name} (checked {:?}): {raw:#x}", plan.code_path());
        let words = words_of(sig, &args);
        let mut raw = 0u64;
        // SAFETY: as above; the words encode the same arguments.
        unsafe { plan.call_words(func, &words, (&mut raw as *mut u64).cast()) }.unwrap();
        assert_eq!(raw, expected, "{name} (typed {:?}): {raw:#x}", plan.typed_code_path());
    }
    // SAFETY: nt_raw_a0 takes a uint32_t and returns its register as uint64_t.
    let bound = unsafe { CallPlan::new(&u32_sig).unwrap().bind::<(u32,), u64>(oracle.sym("nt_raw_a0")) }.unwrap();
    // SAFETY: bound to nt_raw_a0 with its prototype.
    assert_eq!(unsafe { bound.call((u,)) }, 0xffff_ffff_8000_0001, "typed binding (CArg::word)");
    // Negative control: a zero-extended uint32_t (an int64_t plan) reads differently.
    let wide = CallPlan::new(&Signature::new(vec![Type::U64], Some(Type::U64)).unwrap()).unwrap();
    let z = u64::from(u);
    let mut raw = 0u64;
    // SAFETY: as above, with a uint64_t argument.
    unsafe { wide.call(oracle.sym("nt_raw_a0"), &[arg(&z)], (&mut raw as *mut u64).cast()) }.unwrap();
    assert_eq!(raw, 0x8000_0001, "the probe does not see the upper bits");
    // And a float's bits loaded as a double (fld, no NaN-box) read differently too.
    let unboxed = CallPlan::new(&Signature::new(vec![Type::F64], Some(Type::U64)).unwrap()).unwrap();
    let d = f64::from_bits(u64::from(x.to_bits()));
    let mut raw = 0u64;
    // SAFETY: as above, with a double argument.
    unsafe { unboxed.call(oracle.sym("nt_raw_fa0"), &[arg(&d)], (&mut raw as *mut u64).cast()) }.unwrap();
    assert_eq!(raw, u64::from(x.to_bits()), "the probe does not see the NaN-box");
    eprintln!("raw registers: uint32_t sign-extended, floats NaN-boxed (checked, typed, bound)");
}

/// Typed bindings of the wide types: `i128` / `u128`, [`CLongDouble`] and [`Complex`] arguments
/// and the results that have a Rust type deliver the C compiler's bytes; `CLongDouble::from_f64`
/// is the C compiler's conversion.
#[test]
fn typed_bindings_of_wide_types_match_the_c_compiler() {
    type WideArgs = (i128, CLongDouble, Complex<f32>, Complex<f64>, Complex<CLongDouble>, u128, i32);
    let wide = Signature::new(
        vec![
            Type::I128,
            Type::LongDouble,
            Type::ComplexF32,
            Type::ComplexF64,
            Type::ComplexLongDouble,
            Type::U128,
            Type::I32,
        ],
        Some(Type::I128),
    )
    .unwrap();
    let cf = Signature::new(vec![Type::ComplexF32, Type::LongDouble], Some(Type::ComplexF32)).unwrap();
    let cd = Signature::new(vec![Type::I32, Type::ComplexF64], Some(Type::ComplexF64)).unwrap();
    let u = Signature::new(vec![Type::I64; 7].into_iter().chain([Type::U128]).collect(), Some(Type::U128)).unwrap();
    let mut gen = CGen::default();
    for (name, sig) in [("w_wide", &wide), ("w_cf", &cf), ("w_cd", &cd), ("w_u", &u)] {
        gen.function(name, sig);
    }
    let convert = "double w_ld_half(long double x) { return (double)(x * 0.5L); }\n";
    let oracle = build_oracle("typed-wide", &[gen.source() + convert]);
    let reference = |name: &str, args: &[*const c_void], ret: &mut [u8]| -> Vec<u8> {
        oracle.rec_reset_public();
        // SAFETY: `void ref_<name>(void *const *args, void *ret)`, generated with the callee.
        unsafe {
            std::mem::transmute::<*const c_void, extern "C" fn(*const *const c_void, *mut c_void)>(
                oracle.sym(&format!("ref_{name}")),
            )(args.as_ptr(), ret.as_mut_ptr().cast())
        };
        oracle.recording_public()
    };
    let ld = |v: f64| CLongDouble::from_f64(v);
    let ret_bytes: [u8; 16] = std::array::from_fn(|i| 0x31 + i as u8 * 7);
    common::OracleRuntime::set_return_bytes(&oracle, &ret_bytes);

    let args: WideArgs = (
        -0x1234_5678_9abc_def0_0fed_cba9_8765_4321,
        ld(-1.25e-300),
        Complex { re: 1.5f32, im: -2.25 },
        Complex { re: 3.0e200, im: -4.5 },
        Complex { re: ld(5.5), im: ld(f64::MIN_POSITIVE / 8.0) },
        0xfedc_ba98_7654_3210_0123_4567_89ab_cdefu128,
        -7,
    );
    // SAFETY: w_wide has the planned prototype; it records its arguments and returns bytes.
    let f: TypedFn<WideArgs, i128> = unsafe { CallPlan::new(&wide).unwrap().bind(oracle.sym("w_wide")).unwrap() };
    oracle.rec_reset_public();
    // SAFETY: as above.
    let r = unsafe { f.call(args) };
    let got = oracle.recording_public();
    let a = &args;
    let mut want_ret = [0u8; 16];
    let want = reference(
        "w_wide",
        &[arg(&a.0), arg(&a.1), arg(&a.2), arg(&a.3), arg(&a.4), arg(&a.5), arg(&a.6)],
        &mut want_ret,
    );
    assert_eq!(got, want, "{:?}", f.code_path());
    assert_eq!(r.to_ne_bytes(), want_ret);
    assert_eq!(r.to_ne_bytes(), ret_bytes);

    // SAFETY: as above.
    let f: TypedFn<(Complex<f32>, CLongDouble), Complex<f32>> =
        unsafe { CallPlan::new(&cf).unwrap().bind(oracle.sym("w_cf")).unwrap() };
    let (z, x) = (Complex { re: -0.5f32, im: 8.0 }, ld(1.0 / 3.0));
    oracle.rec_reset_public();
    // SAFETY: as above.
    let r = unsafe { f.call((z, x)) };
    let got = oracle.recording_public();
    let mut want_ret = [0u8; 16];
    assert_eq!(got, reference("w_cf", &[arg(&z), arg(&x)], &mut want_ret));
    assert_eq!(
        (r.re.to_ne_bytes(), r.im.to_ne_bytes()),
        (ret_bytes[..4].try_into().unwrap(), ret_bytes[4..8].try_into().unwrap())
    );

    // SAFETY: as above.
    let f: TypedFn<(i32, Complex<f64>), Complex<f64>> =
        unsafe { CallPlan::new(&cd).unwrap().bind(oracle.sym("w_cd")).unwrap() };
    // SAFETY: as above.
    let r = unsafe { f.call((3, Complex { re: 1.0, im: -1.0 })) };
    assert_eq!(
        (r.re.to_ne_bytes(), r.im.to_ne_bytes()),
        (ret_bytes[..8].try_into().unwrap(), ret_bytes[8..].try_into().unwrap())
    );

    // Seven integers, then an __int128 on the stack (x86-64) or in a register pair (AArch64).
    let compiler = compiler_version();
    if let Some(bug) = known_compiler_bug(&compiler, &u) {
        eprintln!("typed wide: w_u not compared with {compiler:?}: {bug}");
    } else {
        type Seven128 = (i64, i64, i64, i64, i64, i64, i64, u128);
        // SAFETY: as above.
        let f: TypedFn<Seven128, u128> = unsafe { CallPlan::new(&u).unwrap().bind(oracle.sym("w_u")).unwrap() };
        let big = u128::MAX / 3;
        oracle.rec_reset_public();
        // SAFETY: as above.
        let r = unsafe { f.call((1, 2, 3, 4, 5, 6, 7, big)) };
        let got = oracle.recording_public();
        let ints: Vec<i64> = (1..=7).collect();
        let mut ptrs: Vec<*const c_void> = ints.iter().map(arg).collect();
        ptrs.push(arg(&big));
        assert_eq!(got, reference("w_u", &ptrs, &mut [0u8; 16]), "{:?}", f.code_path());
        assert_eq!(r, u128::from_ne_bytes(ret_bytes));
    }

    // A long double result has no Rust type: the plan has no typed program, and says so.
    let ld_ret = CallPlan::new(&Signature::new(vec![Type::LongDouble], Some(Type::LongDouble)).unwrap()).unwrap();
    assert!(ld_ret.typed_parts().is_none());
    let x = ld(1.0);
    let mut out = CLongDouble::default();
    // SAFETY: refused before anything is called.
    let refused =
        unsafe { ld_ret.call_words(oracle.sym("w_ld_half"), &[arg(&x) as u64], (&mut out as *mut CLongDouble).cast()) };
    assert!(matches!(refused, Err(nccl_trampoline::Error::ResultType { .. })), "{refused:?}");

    // CLongDouble::from_f64 against the C compiler's arithmetic on the value.
    let half = Signature::new(vec![Type::LongDouble], Some(Type::F64)).unwrap();
    // SAFETY: `double w_ld_half(long double)`.
    let f: TypedFn<(CLongDouble,), f64> =
        unsafe { CallPlan::new(&half).unwrap().bind(oracle.sym("w_ld_half")).unwrap() };
    for v in [3.0, -1.0e-310, 1.0e308, f64::MIN_POSITIVE, 0.1, -0.0, f64::INFINITY] {
        // SAFETY: as above.
        let h = unsafe { f.call((ld(v),)) };
        assert_eq!(h.to_bits(), (v * 0.5).to_bits(), "{v:e}: {:?}", ld(v));
    }
}

/// `CLongDouble::to_f64` is the C compiler's `(double)` cast of the target's `long double`
/// (the x87 on x86-64, libgcc's `__trunctfdf2` on AArch64 and riscv64), bit for bit: doubles,
/// values between them (rounded to nearest, ties to even), past `f64::MAX`, in and below the
/// subnormal range, infinities, NaNs with payloads, the x87's denormals and the encodings it
/// refuses; then seeded random images, their exponents biased towards a double's range.
#[test]
fn long_double_to_f64_is_the_c_compilers_conversion() {
    let convert = "double w_ld_to_double(long double x) { return (double)x; }\n".to_string();
    let oracle = build_oracle("long-double-to-double", &[convert]);
    let sig = Signature::new(vec![Type::LongDouble], Some(Type::F64)).unwrap();
    // SAFETY: `double w_ld_to_double(long double)`.
    let f: TypedFn<(CLongDouble,), f64> =
        unsafe { CallPlan::new(&sig).unwrap().bind(oracle.sym("w_ld_to_double")).unwrap() };
    let x87 = cfg!(target_arch = "x86_64");
    // One image from a sign, a biased 15-bit exponent and the significand's bits below the
    // exponent (x87: the 64-bit mantissa, integer bit included; binary128: the 112-bit fraction).
    let image = |negative: bool, exp: u16, bits: u128| -> CLongDouble {
        let sign_exp = u128::from(u16::from(negative) << 15 | exp & 0x7fff);
        let word = if x87 {
            sign_exp << 64 | (bits & u128::from(u64::MAX))
        } else {
            sign_exp << 112 | bits & ((1 << 112) - 1)
        };
        CLongDouble(word.to_le_bytes())
    };
    let (one, lead) = (16383u16, if x87 { 1u128 << 63 } else { 0 });
    let width = if x87 { 63 } else { 112 };
    let mut images: Vec<CLongDouble> = Vec::new();
    for exp in [0, 1, one - 1075, one - 1074, one - 1023, one - 1022, one, one + 1023, one + 1024, 0x7ffe, 0x7fff] {
        for low in [
            0u128,
            1,
            1 << (width - 53),
            (1 << (width - 52)) - 1,
            3 << (width - 53),
            (1 << width) - 1,
            1 << (width - 1),
        ] {
            for negative in [false, true] {
                images.push(image(negative, exp, lead | low));
                if x87 {
                    images.push(image(negative, exp, low));
                }
            }
        }
    }
    images.extend(
        [0.0, -0.0, 1.0, 0.1, -1.0e-310, f64::MAX, f64::MIN_POSITIVE, f64::INFINITY].map(CLongDouble::from_f64),
    );
    let mut rng = Rng(0x10d6_1e5e_ed20_2611);
    for _ in 0..20_000 {
        let exp = match rng.below(3) {
            0 => rng.below(0x8000) as u16,
            1 => one - 1100 + rng.below(2200) as u16,
            _ => [one - 1075, one - 1022, one + 1023, 0x7fff][rng.below(4) as usize],
        };
        let bits = u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64());
        images.push(image(rng.chance(50), exp, if x87 && rng.chance(95) { lead | bits } else { bits }));
    }
    for x in images {
        // SAFETY: as above; any bit pattern is a long double operand (the x87 answers the ones
        // it refuses with its default NaN).
        let want = unsafe { f.call((x,)) };
        assert_eq!(x.to_f64().to_bits(), want.to_bits(), "{:02x?}: C says {want:e}", &x.0);
    }
}

/// Typed bindings whose RESULT is a struct (`CRet` for a `#[repr(C)]` aggregate, as NCCL's
/// `ncclTeamWorld` returns its 12-byte `ncclTeam`): every way an ABI returns one, with structs
/// by value among the arguments, against C callees (tests/c/aggregate_results.c) and against
/// the checked `CallPlan::call` of the same plan.
#[test]
fn typed_aggregate_results_match_the_c_compiler() {
    macro_rules! aggregate {
        ($name:ident { $($f:ident: $t:ty => $c:expr),* }) => {
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Default, PartialEq)]
            struct $name { $($f: $t),* }
            // SAFETY: #[repr(C)] with exactly these members, in order, of these C types.
            unsafe impl CArg for $name {
                const AGGREGATE: bool = true;
                fn c_type() -> Type {
                    let b = Aggregate::builder();
                    $(let b = b.field($c);)*
                    Type::Aggregate(b.build().unwrap())
                }
            }
            // SAFETY: as above; every bit pattern is valid for these members.
            unsafe impl nccl_trampoline::CRet for $name {
                fn c_type() -> Option<Type> {
                    Some(<$name as CArg>::c_type())
                }
            }
        };
    }
    aggregate!(T3 { a: i32 => Type::I32, b: i32 => Type::I32, c: i32 => Type::I32 });
    aggregate!(F3 { a: f32 => Type::F32, b: f32 => Type::F32, c: f32 => Type::F32 });
    aggregate!(Di { d: f64 => Type::F64, i: i32 => Type::I32 });
    aggregate!(L3 { a: i64 => Type::I64, b: i64 => Type::I64, c: i64 => Type::I64 });
    aggregate!(C3 { a: i8 => Type::I8, b: i8 => Type::I8, c: i8 => Type::I8 });
    aggregate!(P1 { p: usize => Type::Pointer });

    let dir = work_dir("aggregate-results");
    let lib = build_shared(&dir, "aggregate_results", &[repo_file("tests/c/aggregate_results.c")]);
    // SAFETY: the library built above; trivial initialisers.
    let lib = unsafe { libloading::Library::new(lib) }.unwrap();
    let sym = |name: &str| -> *const c_void {
        // SAFETY: looked up only, called through plans of its C prototype below.
        unsafe { *lib.get::<*const c_void>(name.as_bytes()).unwrap() }
    };
    fn bind<A: nccl_trampoline::CArgs, R: nccl_trampoline::CRet>(f: *const c_void) -> (TypedFn<A, R>, CallPlan) {
        let plan = CallPlan::new(&Signature::new(A::types(), R::c_type()).unwrap()).unwrap();
        // SAFETY: `f` has this C prototype (tests/c/aggregate_results.c) and stays loaded.
        (unsafe { plan.bind::<A, R>(f) }.unwrap(), plan)
    }
    /// The checked program's answer for the same call.
    fn checked<R: Default>(plan: &CallPlan, f: *const c_void, args: &[*const c_void]) -> R {
        let mut out = R::default();
        // SAFETY: the arguments point to values of the plan's types; `out` is the result's.
        unsafe { plan.call(f, args, (&mut out as *mut R).cast()) }.unwrap();
        out
    }

    let mut seen = Vec::new();
    let (make_t3, p) = bind::<(*mut c_void, i32), T3>(sym("agg_make_t3"));
    let comm = 0x1234_5678usize as *mut c_void;
    // SAFETY: the callee computes only.
    let got = unsafe { make_t3.call((comm, 41)) };
    assert_eq!(got, T3 { a: 41, b: 42, c: 0x1234_5678 });
    assert_eq!(got, checked::<T3>(&p, make_t3.func(), &[arg(&comm), arg(&41i32)]));
    seen.push(make_t3.code_path());

    let (twist, p) = bind::<(ValueAt<T3>, i32, F3), T3>(sym("agg_twist_t3"));
    let (x, y) = (T3 { a: 7, b: -9, c: 1 << 20 }, F3 { a: 0.25, b: 5.0, c: -1.0 });
    // SAFETY: as above.
    let got = unsafe { twist.call((ValueAt::new(&x), 3, y)) };
    assert_eq!(got, T3 { a: (1 << 20) + 3, b: 21, c: -14 });
    assert_eq!(x, T3 { a: 7, b: -9, c: 1 << 20 }, "the caller's struct is untouched");
    assert_eq!(got, checked::<T3>(&p, twist.func(), &[arg(&x), arg(&3i32), arg(&y)]));

    let (make_f3, p) = bind::<(f32, f64, T3), F3>(sym("agg_make_f3"));
    let t = T3 { a: 2, b: 3, c: 4 };
    // SAFETY: as above.
    let got = unsafe { make_f3.call((1.5, 2.25, t)) };
    assert_eq!(got, F3 { a: 3.5, b: 4.5, c: 7.5 });
    assert_eq!(got, checked::<F3>(&p, make_f3.func(), &[arg(&1.5f32), arg(&2.25f64), arg(&t)]));

    let (make_di, p) = bind::<(Di, i64), Di>(sym("agg_make_di"));
    let d = Di { d: 1.25, i: 0x0f0f };
    // SAFETY: as above.
    let got = unsafe { make_di.call((d, 0xff)) };
    assert_eq!(got, Di { d: 2.5 + 255.0, i: 0x0f0f ^ 0xff });
    assert_eq!(got, checked::<Di>(&p, make_di.func(), &[arg(&d), arg(&0xffi64)]));

    let (make_l3, p) = bind::<(i32, L3, C3), L3>(sym("agg_make_l3"));
    let (l, c) = (L3 { a: 1 << 40, b: -5, c: 77 }, C3 { a: 3, b: 0, c: -2 });
    // SAFETY: as above.
    let got = unsafe { make_l3.call((10, l, c)) };
    assert_eq!(got, L3 { a: 87, b: 3 << 40, c: -3 });
    assert_eq!(got, checked::<L3>(&p, make_l3.func(), &[arg(&10i32), arg(&l), arg(&c)]));
    seen.push(make_l3.code_path());

    let (make_c3, p) = bind::<(C3, i8), C3>(sym("agg_make_c3"));
    let c = C3 { a: 1, b: 0x55, c: 100 };
    // SAFETY: as above.
    let got = unsafe { make_c3.call((c, 7)) };
    assert_eq!(got, C3 { a: 107, b: 1, c: 0x55 ^ 7 });
    assert_eq!(got, checked::<C3>(&p, make_c3.func(), &[arg(&c), arg(&7i8)]));

    let (make_p1, p) = bind::<(P1, u64), P1>(sym("agg_make_p1"));
    let h = P1 { p: 0x7000_0000 };
    // SAFETY: as above.
    let got = unsafe { make_p1.call((h, 5)) };
    assert_eq!(got, P1 { p: 0x7000_0005 });
    assert_eq!(got, checked::<P1>(&p, make_p1.func(), &[arg(&h), arg(&5u64)]));

    for path in seen {
        assert_eq!(path.first(), Some(&"aggregate_result"), "{path:?}");
        assert!(path.len() >= 2 && !path[1..].contains(&"?"), "{path:?}");
    }
}
