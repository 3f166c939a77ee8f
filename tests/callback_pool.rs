//! The callback pool: its size is what `Callback::POOL_SIZE` states, exhaustion is a typed
//! error, every entry is distinct code that reaches its own callback, and a released entry is
//! reused. Alone in its test binary: no other test may hold entries meanwhile.
#![cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]

use std::ffi::c_void;

use nccl_trampoline::{Callback, Error, Signature, Type, TypedCallback};

fn call(cb: &Callback) -> i64 {
    // SAFETY: every callback here is `int64_t (void)`.
    unsafe { std::mem::transmute::<*const c_void, extern "C" fn() -> i64>(cb.as_ptr())() }
}

#[test]
fn the_pool_holds_its_stated_size_refuses_one_more_and_reuses_a_released_entry() {
    assert_eq!(Callback::POOL_SIZE, 256, "the size ADR 25 states");
    let sig = Signature::new(vec![], Some(Type::I64)).unwrap();
    let mut held = Vec::new();
    let refused = loop {
        let n = held.len() as i64;
        match Callback::new(&sig, move |_, r| r.set(1000 + n).unwrap()) {
            Ok(cb) => held.push(cb),
            Err(e) => break e,
        }
        assert!(held.len() <= Callback::POOL_SIZE, "more callbacks than the pool has entries");
    };
    assert_eq!(refused, Error::CallbackPoolExhausted { size: Callback::POOL_SIZE });
    assert_eq!(refused.to_string(), "all 256 callback entries are in use");
    assert_eq!(held.len(), Callback::POOL_SIZE);

    let mut codes: Vec<usize> = held.iter().map(|c| c.as_ptr() as usize).collect();
    let mut indices: Vec<usize> = held.iter().map(Callback::pool_index).collect();
    codes.sort_unstable();
    codes.dedup();
    indices.sort_unstable();
    assert_eq!(codes.len(), Callback::POOL_SIZE, "two callbacks share an entry");
    assert_eq!(indices, (0..Callback::POOL_SIZE).collect::<Vec<_>>());
    for (n, cb) in held.iter().enumerate() {
        assert_eq!(call(cb), 1000 + n as i64, "entry {} reached another callback", cb.pool_index());
    }

    // Release one: the next callback takes that entry (the only free one) and runs its own
    // handler there; the pool is full again.
    let released = held.remove(17);
    let index = released.pool_index();
    drop(released);
    let again = Callback::new(&sig, |_, r| r.set(-1i64).unwrap()).unwrap();
    assert_eq!(again.pool_index(), index);
    assert_eq!(call(&again), -1);
    assert_eq!(Callback::new(&sig, |_, _| {}).unwrap_err(), Error::CallbackPoolExhausted { size: 256 });
    // The typed form takes its entries from the same pool.
    assert_eq!(TypedCallback::new(|| -> i64 { 0 }).unwrap_err(), Error::CallbackPoolExhausted { size: 256 });

    // All released: every entry is free again, and released entries are reused oldest first.
    let first = held[0].pool_index();
    drop(held);
    drop(again);
    let next = Callback::new(&sig, |_, r| r.set(5i64).unwrap()).unwrap();
    assert_eq!(next.pool_index(), first, "the oldest release is reused first");
    assert_eq!(call(&next), 5);
}
