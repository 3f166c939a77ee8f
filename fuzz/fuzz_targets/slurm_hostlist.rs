//! Slurm's host lists and task count lists (`launch::hostlist`), as `SLURM_STEP_NODELIST`
//! and `SLURM_STEP_TASKS_PER_NODE` hand them over: any text is a list or a typed error; an
//! expansion is at most MAX_HOSTS names of at most MAX_NAME_BYTES, agrees with `len` and
//! `first`, and lists the same hosts again when written out plainly; the task functions
//! agree with each other.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nccl_trampoline::launch::hostlist::{
    expand, first, len, task_totals, tasks_on_node, ParseError, MAX_HOSTS, MAX_NAME_BYTES,
};

const TOO_MANY: ParseError = ParseError("the host list names too many hosts");

fuzz_target!(|data: &[u8]| {
    // Variables reach the parser as text (a value that is not UTF-8 is read lossily).
    let list = String::from_utf8_lossy(data);
    let n = len(&list);
    match expand(&list) {
        Ok(hosts) => {
            assert!(!hosts.is_empty() && hosts.len() <= MAX_HOSTS, "{} hosts", hosts.len());
            assert_eq!(n, Ok(hosts.len() as u64), "len disagrees with expand");
            assert_eq!(first(&list).as_ref(), Ok(&hosts[0]), "first disagrees with expand");
            for h in &hosts {
                assert!(!h.is_empty() && h.len() <= MAX_NAME_BYTES, "host {h:?}");
            }
            // (Lists of a few thousand names say as much, at a fraction of the memory.)
            if hosts.len() <= 4096 {
                assert_eq!(expand(&hosts.join(",")).as_ref(), Ok(&hosts), "the plain list differs");
            }
        }
        Err(e) if e == TOO_MANY => {
            assert!(matches!(n, Ok(k) if k > MAX_HOSTS as u64), "too many hosts, but len says {n:?}");
        }
        Err(e) => assert_eq!(n, Err(e), "len and expand refuse differently"),
    }
    match task_totals(&list) {
        Ok((nodes, _)) => {
            for node in [0, 1, nodes.saturating_sub(1), nodes, u64::MAX] {
                let t = tasks_on_node(&list, node).expect("a list whose totals parse");
                assert_eq!(t.is_some(), node < nodes, "node {node} of {nodes}");
            }
        }
        Err(e) => assert_eq!(tasks_on_node(&list, u64::MAX), Err(e)),
    }
});
