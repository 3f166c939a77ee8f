//! The TCP rendezvous root's side of one connection (the code `TcpRoot::serve` runs per
//! connection) against a rank played from a script: hostile bytes, well-formed hellos for any
//! rank, right or wrong proofs and acknowledgements (computed from the nonces exchanged),
//! pauses, reads and writes split anywhere. `RootOutcome::check` asserts the root's promises:
//! the connection ends and is counted once, the root writes only the protocol's messages, the
//! id only after a right proof from a rank it serves, and counts a rank served only after a
//! right acknowledgement.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use nccl_trampoline::fuzzing::{drive_root, RankStep};

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let start = u.int_in_range(0..=4u32)?;
    let ranks = start..start + u.int_in_range(0..=4u32)?;
    let write_chunk = usize::from(u.int_in_range(0..=48u8)?);
    let mut steps = Vec::new();
    while !u.is_empty() && steps.len() < 12 {
        steps.push(match u.int_in_range(0..=5u8)? {
            0 => {
                let n = usize::from(u.int_in_range(0..=80u8)?);
                RankStep::Bytes(u.bytes(n)?.to_vec())
            }
            1 => RankStep::Hello(if u.arbitrary()? { u.int_in_range(0..=9u32)? } else { u.arbitrary()? }),
            2 => RankStep::Proof { valid: u.arbitrary()? },
            3 => RankStep::Ack { valid: u.arbitrary()? },
            4 => RankStep::Pause,
            _ => RankStep::Bytes(vec![u.arbitrary()?]),
        });
    }
    let outcome = drive_root(&steps, ranks.clone(), write_chunk);
    if let Err(broken) = outcome.check(&ranks) {
        panic!("{broken}\nranks {ranks:?}, write chunk {write_chunk}, steps {steps:?}\n{outcome:?}");
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
