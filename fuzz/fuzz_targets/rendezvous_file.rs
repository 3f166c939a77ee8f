//! The rendezvous file record: any bytes parse to an id only if they are a record made with
//! the job's key (and then they are exactly that record again); a record round-trips any id
//! and time; one flipped bit refuses it; and a rank reading a file of those bytes (owner-only,
//! so the file itself is accepted) takes its id exactly when the record is the key's and no
//! older than the job, else reports a typed protocol error.
#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use nccl_trampoline::fuzzing::{file_record, parse_file_record, read_file_record};
use nccl_trampoline::launch::rendezvous::Error;
use nccl_trampoline::nccl::UniqueId;

fn nanos(at: std::time::SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).expect("after the epoch").as_nanos() as u64
}

fn run(data: &[u8]) -> Result<()> {
    // The bytes as they are.
    if let Some((id, at)) = parse_file_record(data) {
        assert_eq!(file_record(&id, nanos(at))[..], data[..], "parsed, but not the record of what it parsed to");
    }
    let mut u = Unstructured::new(data);
    let id = UniqueId::from_bytes(u.bytes(128)?).expect("128 bytes");
    let at = u.arbitrary::<u64>()?;
    let record = file_record(&id, at);
    assert_eq!(parse_file_record(&record), Some((id.clone(), UNIX_EPOCH + Duration::from_nanos(at))));
    let bit = u.int_in_range(0..=record.len() * 8 - 1)?;
    let mut flipped = record;
    flipped[bit / 8] ^= 1 << (bit % 8);
    assert_eq!(parse_file_record(&flipped), None, "bit {bit} flipped and still taken");

    // Through the file, as a waiting rank reads it.
    let path = std::env::temp_dir().join(format!("nccl-trampoline-fuzz-file-{}", std::process::id()));
    let bytes = if u.arbitrary()? {
        record.to_vec()
    } else {
        let n = u.int_in_range(0..=200usize)?;
        u.bytes(n)?.to_vec()
    };
    let not_before = if u.arbitrary()? { at } else { u.arbitrary()? };
    let want = parse_file_record(&bytes).filter(|(_, t)| nanos(*t) >= not_before).map(|(id, _)| id);
    match (read_file_record(&path, &bytes, not_before), want) {
        (Ok(got), Some(want)) => assert_eq!(got, want),
        (Err(Error::Protocol { .. }), None) => {}
        (got, want) => panic!("read {got:?}, wanted {want:?}"),
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
