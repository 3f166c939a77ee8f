//! A TCP rendezvous rank's exchange with the root (the code `fetch_tcp` runs per connection)
//! against a root played from a script: hostile bytes, challenges, refusals, and id messages
//! with right or wrong proofs (computed from the nonces exchanged), split anywhere.
//! `RankOutcome::check` asserts the rank's promises: it takes an id only with the root's proof
//! and acknowledges nothing else, and every other outcome is a typed protocol error.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use nccl_trampoline::fuzzing::{drive_rank, RootStep};

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let rank = if u.arbitrary()? { u.int_in_range(0..=9u32)? } else { u.int_in_range(0..=i32::MAX as u32 - 1)? };
    let mut steps = Vec::new();
    while !u.is_empty() && steps.len() < 12 {
        steps.push(match u.int_in_range(0..=5u8)? {
            0 => {
                let n = usize::from(u.int_in_range(0..=200u8)?);
                RootStep::Bytes(u.bytes(n)?.to_vec())
            }
            1 => RootStep::Challenge,
            2 => RootStep::WrongRank,
            3 => RootStep::Deny,
            4 => RootStep::Id { valid: u.arbitrary()? },
            _ => RootStep::Bytes(vec![u.arbitrary()?]),
        });
    }
    let outcome = drive_rank(&steps, rank);
    if let Err(broken) = outcome.check(rank) {
        panic!("{broken}\nrank {rank}, steps {steps:?}\n{outcome:?}");
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
