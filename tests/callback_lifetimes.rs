//! The lifetimes around a callback: its drop racing with calls on other threads (the call path's
//! asymmetric barrier, docs/adr/0025-callbacks.md), and the C library holding it being unloaded
//! and loaded again.
//!
//! - `drops_wait_for_exactly_their_calls_under_stress`: rounds of callbacks (typed and dynamic)
//!   dropped while calls on four threads are leaving them, with other callbacks running on
//!   other threads all along (one of them blocked in its handler for the whole test) and some
//!   drops made from inside another callback's handler; a handler's captured state must never
//!   be freed while a call runs in it. In this process (membarrier) and in a child with
//!   `NCCL_TRAMPOLINE_NO_MEMBARRIER` (the fenced fallback).
//! - `a_library_unloaded_and_loaded_again_calls_its_callbacks`: tests/c/callback_holder.c keeps
//!   and calls a callback, is dlclose'd (checked: no longer mapped), loaded again and given the
//!   callback again, plus one made while it was unloaded.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]

mod common;

use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use common::{build_shared, repo_file, work_dir};
use nccl_trampoline::{Callback, Signature, Type, TypedCallback};

/// Counts the calls inside a handler; when the handler (its callback's state) is freed, records
/// whether a call was still inside it.
struct Canary {
    inside: Arc<AtomicUsize>,
    freed_during_a_call: Arc<AtomicUsize>,
}

impl Drop for Canary {
    fn drop(&mut self) {
        if self.inside.load(Ordering::SeqCst) != 0 {
            self.freed_during_a_call.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Canary {
    /// A call's body: inside, a short spin of `spin` iterations, outside.
    fn call(&self, entered: &AtomicUsize, spin: u32) {
        self.inside.fetch_add(1, Ordering::SeqCst);
        entered.fetch_add(1, Ordering::SeqCst);
        for _ in 0..spin {
            std::hint::spin_loop();
        }
        self.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

const CALLERS: usize = 4;
const ROUNDS: usize = 400;

fn stress() {
    let freed_during_a_call = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));

    // Other callbacks running all along: one blocked in its handler until the end (a drop must
    // not wait for another entry's call), two called in a loop.
    let hold = Arc::new(Barrier::new(2));
    let held = hold.clone();
    let blocked = TypedCallback::new(move |_: i32| -> i32 {
        held.wait();
        held.wait();
        0
    })
    .unwrap();
    let busy = TypedCallback::new(|a: i32| -> i32 { a + 1 }).unwrap();
    let (blocked_fn, busy_fn) = (blocked.as_fn(), busy.as_fn());

    std::thread::scope(|s| {
        // SAFETY: `blocked` lives until the scope ends, after this thread returns.
        s.spawn(move || unsafe { blocked_fn(0) });
        hold.wait();
        for _ in 0..2 {
            let done = &done;
            s.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    // SAFETY: `busy` lives until the scope ends.
                    assert_eq!(unsafe { busy_fn(1) }, 2);
                }
            });
        }

        let start = Arc::new(Barrier::new(CALLERS + 1));
        let current = Arc::new(AtomicUsize::new(0));
        for _ in 0..CALLERS {
            let (start, current) = (start.clone(), current.clone());
            s.spawn(move || {
                for _ in 0..ROUNDS {
                    start.wait();
                    let f = current.load(Ordering::SeqCst);
                    // SAFETY: the round's callback, `int32_t (int32_t)`, alive until every
                    // caller has entered it (the dropper waits for that).
                    let r = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(i32) -> i32>(f)(5) };
                    assert_eq!(r, 6);
                }
            });
        }

        // A callback whose handler drops the round's callback: drops from inside another
        // callback's call (this thread's marks hold that entry's bit meanwhile).
        type Slot = std::sync::Mutex<Option<Box<dyn Send>>>;
        let to_drop: Arc<Slot> = Arc::default();
        let dropping = to_drop.clone();
        let dropper = TypedCallback::new(move || drop(dropping.lock().unwrap().take())).unwrap();

        let sig = Signature::new(vec![Type::I32], Some(Type::I32)).unwrap();
        for round in 0..ROUNDS {
            let entered = Arc::new(AtomicUsize::new(0));
            let canary = Canary { inside: Arc::default(), freed_during_a_call: freed_during_a_call.clone() };
            let spin = (round % 7) as u32 * 50;
            let (ptr, cb): (usize, Box<dyn Send>) = if round % 2 == 0 {
                let e = entered.clone();
                let cb = TypedCallback::new(move |a: i32| -> i32 {
                    canary.call(&e, spin);
                    a + 1
                })
                .unwrap();
                (cb.as_ptr() as usize, Box::new(cb))
            } else {
                let e = entered.clone();
                let cb = Callback::new(&sig, move |args, result| {
                    canary.call(&e, spin);
                    result.set(args.get::<i32>(0).unwrap() + 1).unwrap();
                })
                .unwrap();
                (cb.as_ptr() as usize, Box::new(cb))
            };
            current.store(ptr, Ordering::SeqCst);
            start.wait();
            // Every caller is past the slot's state (inside the handler) before the drop; the
            // drop then races with their returns.
            while entered.load(Ordering::SeqCst) < CALLERS {
                std::hint::spin_loop();
            }
            if round % 5 == 0 {
                *to_drop.lock().unwrap() = Some(cb);
                // SAFETY: `dropper` lives; its handler drops the round's callback.
                unsafe { dropper.as_fn()() };
            } else {
                drop(cb);
            }
            assert_eq!(freed_during_a_call.load(Ordering::SeqCst), 0, "round {round}: freed during a call");
        }
        done.store(true, Ordering::Relaxed);
        hold.wait();
    });
    assert_eq!(freed_during_a_call.load(Ordering::SeqCst), 0);
}

#[test]
fn drops_wait_for_exactly_their_calls_under_stress() {
    if std::env::var_os("NT_LIFETIMES_CHILD").is_some() {
        stress();
        assert!(!nccl_trampoline::engine::callback::uses_membarrier(), "the fallback was not taken");
        return;
    }
    stress();
    // This kernel's barrier (KVM guests and containers have it since Linux 4.14), unless the
    // environment turned it off.
    if std::env::var_os("NCCL_TRAMPOLINE_NO_MEMBARRIER").is_none() {
        assert!(nccl_trampoline::engine::callback::uses_membarrier(), "membarrier was not registered");
    }
    let out = common::rerun_self(
        "drops_wait_for_exactly_their_calls_under_stress",
        &[("NT_LIFETIMES_CHILD", "1"), ("NCCL_TRAMPOLINE_NO_MEMBARRIER", "1")],
    );
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the fenced fallback: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// True while the library at `path` is mapped in this process.
fn mapped(path: &std::path::Path) -> bool {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: RTLD_NOLOAD only looks the library up; a handle it returns is closed at once.
    unsafe {
        let h = libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        if h.is_null() {
            false
        } else {
            libc::dlclose(h);
            true
        }
    }
}

type Keep = unsafe extern "C" fn(unsafe extern "C" fn(i32, i32) -> i32) -> i32;
type CallHeld = unsafe extern "C" fn(i32, i32) -> i32;

/// Loads the holder, gives it `f`, has it call `f(a, b)` twice; returns what `keep` returned
/// (callbacks this copy was given before) and the two results.
fn with_holder(path: &std::path::Path, f: unsafe extern "C" fn(i32, i32) -> i32, a: i32) -> (i32, i32, i32) {
    // SAFETY: the test's own library; its initialisers are trivial.
    let lib = unsafe { libloading::Library::new(path) }.unwrap();
    // SAFETY: the prototypes of tests/c/callback_holder.c.
    let (keep, call) =
        unsafe { (*lib.get::<Keep>(b"nt_holder_keep").unwrap(), *lib.get::<CallHeld>(b"nt_holder_call").unwrap()) };
    // SAFETY: `f` is a live callback of that signature; the library calls it only below.
    unsafe { (keep(f), call(a, 1), call(a, 2)) }
}

#[test]
fn a_library_unloaded_and_loaded_again_calls_its_callbacks() {
    let dir = work_dir(&format!("callback-holder-{}", std::process::id()));
    let path = build_shared(&dir, "callback_holder", &[repo_file("tests/c/callback_holder.c")]);
    let typed = TypedCallback::new(|a: i32, b: i32| -> i32 { 10 * a + b }).unwrap();
    let sig = Signature::new(vec![Type::I32, Type::I32], Some(Type::I32)).unwrap();
    let dynamic =
        Callback::new(&sig, |args, r| r.set(100 * args.get::<i32>(0).unwrap() + args.get::<i32>(1).unwrap()).unwrap())
            .unwrap();
    // SAFETY: the dynamic callback's signature is `int32_t (int32_t, int32_t)`.
    let dynamic_fn = unsafe { std::mem::transmute::<*const c_void, CallHeld>(dynamic.as_ptr()) };

    assert!(!mapped(&path));
    assert_eq!(with_holder(&path, typed.as_fn(), 3), (0, 31, 1032));
    assert!(!mapped(&path), "dlclose did not unload the holder");
    // While it is unloaded: the callbacks still run, and a new one is made.
    // SAFETY: both live.
    assert_eq!(unsafe { (typed.as_fn()(1, 2), dynamic_fn(1, 2)) }, (12, 102));
    let made_meanwhile = TypedCallback::new(|a: i32, b: i32| -> i32 { a - b }).unwrap();
    // Loaded again: a fresh copy (its counters start at 0), given the same callbacks again.
    assert_eq!(with_holder(&path, typed.as_fn(), 4), (0, 41, 1042));
    assert_eq!(with_holder(&path, dynamic_fn, 5), (0, 501, 1502));
    assert_eq!(with_holder(&path, made_meanwhile.as_fn(), 9), (0, 8, 1007));
    assert!(!mapped(&path));
    // SAFETY: live.
    assert_eq!(unsafe { made_meanwhile.as_fn()(9, 9) }, 0);
}
