//! Slurm's `srun`, only inside a step (`SLURM_STEP_ID` set): `SLURM_PROCID`,
//! `SLURM_STEP_NUM_TASKS`, `SLURM_LOCALID`, and this node's tasks in
//! `SLURM_STEP_TASKS_PER_NODE` at `SLURM_NODEID`; the root is the first host of
//! `SLURM_STEP_NODELIST`. Older Slurm has only the job-level names (`SLURM_NTASKS`,
//! `SLURM_TASKS_PER_NODE`, `SLURM_JOB_NODELIST`). The step's variables must agree with each
//! other ([`consistency`]).
//!
//! A batch script also has `SLURM_PROCID=0` and the job's `SLURM_NTASKS`, but no step: a
//! program run there directly is one process.

use crate::launch::error::Error;
use crate::launch::hostlist;
use crate::launch::world::detect::{require_all, Found};
use crate::launch::world::reader::{shown, Field, Reader};
use crate::launch::world::Launcher;

/// Slurm's variables, when `SLURM_STEP_ID` is set.
pub(super) fn detect(r: &Reader<'_>) -> Result<Option<Found>, Error> {
    if !r.has("SLURM_STEP_ID") {
        return Ok(None);
    }
    let l = Launcher::Slurm;
    let ntasks = if r.has("SLURM_STEP_NUM_TASKS") { "SLURM_STEP_NUM_TASKS" } else { "SLURM_NTASKS" };
    let per_node =
        if r.has("SLURM_STEP_TASKS_PER_NODE") { "SLURM_STEP_TASKS_PER_NODE" } else { "SLURM_TASKS_PER_NODE" };
    let nodes = if r.has("SLURM_STEP_NODELIST") { "SLURM_STEP_NODELIST" } else { "SLURM_JOB_NODELIST" };
    require_all(l, r, &["SLURM_PROCID", ntasks, "SLURM_LOCALID", "SLURM_NODEID", per_node, nodes])?;
    let list_error = |variable: &str, value: String| {
        let variable = variable.to_string();
        move |reason| Error::LauncherList { variable, value, reason }
    };
    let local_size = match (r.number("SLURM_NODEID")?, r.raw(per_node)) {
        (Some(node), Some(list)) => {
            let n = hostlist::tasks_on_node(&list, u64::from(node.value))
                .map_err(list_error(per_node, list.clone()))?
                .ok_or_else(|| Error::LauncherContradiction {
                    variables: vec![node.shown(), shown(per_node, &list)],
                    detail: "the node id is past the nodes of the task count list".into(),
                })?;
            let value = u32::try_from(n).map_err(|_| Error::LauncherVariable {
                variable: per_node.into(),
                value: list.clone(),
                expected: "task counts that fit 32 bits",
            })?;
            let derived = Some(format!("{} ({n} on node {})", shown(per_node, &list), node.value));
            Some(Field { value, var: per_node, derived })
        }
        _ => None,
    };
    let root_host = match r.raw(nodes) {
        Some(list) => Some(hostlist::first(&list).map_err(list_error(nodes, list.clone()))?),
        None => None,
    };
    consistency(r, ntasks, per_node, nodes)?;
    let job = r.raw("SLURM_JOB_ID").map(|j| format!("slurm:{j}.{}", r.raw("SLURM_STEP_ID").unwrap_or_default()));
    Ok(Some(Found {
        launcher: l,
        rank: r.number("SLURM_PROCID")?,
        size: r.number(ntasks)?,
        local_rank: r.number("SLURM_LOCALID")?,
        local_size,
        root_host,
        reserved_port: None,
        job,
        names: ["SLURM_PROCID", ntasks, "SLURM_LOCALID", per_node],
    }))
}

/// Slurm's variables against each other, beyond what `place::check` sees in rank and size: what
/// one `srun` step sets describes one step (`env_array_for_step`, Slurm's src/common/env.c),
/// so its node list, node count, task count list and task count agree, and this task's rank
/// and node lie inside them. Compared only where both sides are the step's own (the job-level
/// fallbacks of older Slurm may describe the allocation, not the step). `SLURM_NTASKS` and
/// `SLURM_NNODES` are the step's too, unless `srun --preserve-env` kept the job's: a rank is
/// below the first, the step's nodes are at most the second.
fn consistency(r: &Reader<'_>, ntasks: &'static str, per_node: &'static str, nodes: &'static str) -> Result<(), Error> {
    let shown = |var: &str| shown(var, &r.raw(var).unwrap_or_default());
    let contradiction = |vars: &[&str], detail: String| Error::LauncherContradiction {
        variables: vars.iter().map(|v| shown(v)).collect(),
        detail,
    };
    let step = ntasks == "SLURM_STEP_NUM_TASKS";
    let (procid, node) = (r.number("SLURM_PROCID")?, r.number("SLURM_NODEID")?);
    if let (true, Some(rank), Some(all)) = (step, &procid, r.number("SLURM_NTASKS")?) {
        if rank.value >= all.value {
            return Err(contradiction(&["SLURM_PROCID", "SLURM_NTASKS"], "the rank is not below the size".into()));
        }
    }
    let Some(list) = r.raw(nodes) else { return Ok(()) };
    let hosts = hostlist::len(&list).map_err(|reason| Error::LauncherList {
        variable: nodes.into(),
        value: list.clone(),
        reason,
    })?;
    if let Some(node) = &node {
        if u64::from(node.value) >= hosts {
            return Err(contradiction(
                &["SLURM_NODEID", nodes],
                format!("the node id is not below the {hosts} nodes of the node list"),
            ));
        }
    }
    if nodes != "SLURM_STEP_NODELIST" {
        return Ok(());
    }
    if let Some(count) = r.number("SLURM_STEP_NUM_NODES")? {
        if u64::from(count.value) != hosts {
            return Err(contradiction(&["SLURM_STEP_NUM_NODES", nodes], format!("the node list has {hosts} nodes")));
        }
    }
    if let Some(job_nodes) = r.number("SLURM_NNODES")? {
        if u64::from(job_nodes.value) < hosts {
            return Err(contradiction(
                &["SLURM_NNODES", nodes],
                format!("the step's node list has {hosts} nodes, more than the job"),
            ));
        }
    }
    if per_node != "SLURM_STEP_TASKS_PER_NODE" {
        return Ok(());
    }
    let Some(counts) = r.raw(per_node) else { return Ok(()) };
    let (covered, tasks) = hostlist::task_totals(&counts).map_err(|reason| Error::LauncherList {
        variable: per_node.into(),
        value: counts.clone(),
        reason,
    })?;
    if covered != hosts {
        return Err(contradiction(
            &[per_node, nodes],
            format!("the task counts cover {covered} nodes, the node list has {hosts}"),
        ));
    }
    if let (true, Some(size)) = (step, r.number(ntasks)?) {
        if u64::from(size.value) != tasks {
            return Err(contradiction(&[ntasks, per_node], format!("the task counts add up to {tasks}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::launch::error::Error;
    use crate::launch::world::fixtures::{place, slurm, world};
    use crate::launch::world::Launcher;

    #[test]
    fn slurm_step_with_a_compressed_node_list() {
        let w = world(&slurm(&[])).unwrap();
        assert_eq!(place(&w), (5, 7, 1, 2, Launcher::Slurm));
        assert_eq!((w.root_host(), w.job()), (Some("gpu01"), Some("slurm:4242.0")));
        // The fourth node has one task.
        let w = world(&slurm(&[("SLURM_PROCID", "6"), ("SLURM_LOCALID", "0"), ("SLURM_NODEID", "3")])).unwrap();
        assert_eq!(place(&w), (6, 7, 0, 1, Launcher::Slurm));
        // Older Slurm: the job-level names.
        let w = world(&slurm(&[
            ("SLURM_STEP_NUM_TASKS", ""),
            ("SLURM_NTASKS", "7"),
            ("SLURM_STEP_TASKS_PER_NODE", ""),
            ("SLURM_TASKS_PER_NODE", "2(x3),1"),
            ("SLURM_STEP_NODELIST", ""),
            ("SLURM_JOB_NODELIST", "n[7-9]"),
        ]))
        .unwrap();
        assert_eq!((w.size(), w.root_host()), (7, Some("n7")));
    }

    #[test]
    fn slurm_errors_name_the_variable() {
        // The reason is the reason, not what was expected ("expected `[` without `]`" before).
        let e = world(&slurm(&[("SLURM_STEP_NODELIST", "gpu[01-")])).unwrap_err();
        assert!(matches!(&e, Error::LauncherList { variable, .. } if variable == "SLURM_STEP_NODELIST"), "{e}");
        assert_eq!(e.to_string(), r#"launcher variable SLURM_STEP_NODELIST="gpu[01-": `[` without `]`"#);
        let e = world(&slurm(&[("SLURM_STEP_TASKS_PER_NODE", "2(3),1")])).unwrap_err();
        assert_eq!(e.to_string(), r#"launcher variable SLURM_STEP_TASKS_PER_NODE="2(3),1": a repeat is not `(xN)`"#);
        let e = world(&slurm(&[("SLURM_NODEID", "9")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "launcher variables contradict each other: the node id is past the nodes of the task count list \
             (SLURM_NODEID=9, SLURM_STEP_TASKS_PER_NODE=2(x3),1)"
        );
        let e = world(&slurm(&[("SLURM_LOCALID", "")])).unwrap_err();
        match e {
            Error::LauncherIncomplete { launcher, missing, .. } => {
                assert_eq!((launcher, missing), ("Slurm", vec!["SLURM_LOCALID".to_string()]))
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn contradictory_slurm_variables_are_named_with_their_values() {
        for (extra, want) in [
            (
                &[("SLURM_NTASKS", "5")][..],
                "the rank is not below the size (SLURM_PROCID=5, SLURM_NTASKS=5)",
            ),
            (
                &[("SLURM_LOCALID", "2")],
                "the local rank is not below the local size (SLURM_LOCALID=2, SLURM_STEP_TASKS_PER_NODE=2(x3),1 (2 on node 2))",
            ),
            (
                &[("SLURM_STEP_TASKS_PER_NODE", "2(x5),1"), ("SLURM_STEP_NUM_TASKS", "11")],
                "the task counts cover 6 nodes, the node list has 4 (SLURM_STEP_TASKS_PER_NODE=2(x5),1, SLURM_STEP_NODELIST=gpu[01-03],cpu9)",
            ),
            (
                &[("SLURM_STEP_NODELIST", "gpu[01-02]")],
                "the node id is not below the 2 nodes of the node list (SLURM_NODEID=2, SLURM_STEP_NODELIST=gpu[01-02])",
            ),
            (
                &[("SLURM_STEP_NUM_NODES", "3")],
                "the node list has 4 nodes (SLURM_STEP_NUM_NODES=3, SLURM_STEP_NODELIST=gpu[01-03],cpu9)",
            ),
            (
                &[("SLURM_NNODES", "2")],
                "the step's node list has 4 nodes, more than the job (SLURM_NNODES=2, SLURM_STEP_NODELIST=gpu[01-03],cpu9)",
            ),
            (
                &[("SLURM_STEP_NUM_TASKS", "8"), ("SLURM_NTASKS", "8")],
                "the task counts add up to 7 (SLURM_STEP_NUM_TASKS=8, SLURM_STEP_TASKS_PER_NODE=2(x3),1)",
            ),
        ] {
            let e = world(&slurm(extra)).unwrap_err();
            assert!(matches!(e, Error::LauncherContradiction { .. }), "{extra:?}: {e}");
            assert!(e.to_string().contains(want), "{extra:?}: {e}");
        }
        // Consistent values, the step's counts given too, pass.
        let w = world(&slurm(&[("SLURM_STEP_NUM_NODES", "4"), ("SLURM_NNODES", "4"), ("SLURM_NTASKS", "7")])).unwrap();
        assert_eq!(place(&w), (5, 7, 1, 2, Launcher::Slurm));
        // A value with control characters is shown escaped, on one line.
        let e = world(&slurm(&[("SLURM_STEP_NODELIST", "a\r\n\u{4}b")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            r"launcher variables contradict each other: the node id is not below the 1 nodes of the node list (SLURM_NODEID=2, SLURM_STEP_NODELIST=a\r\n\u{4}b)"
        );
        // A node list of 2^64 hosts is counted, not expanded.
        let e = world(&slurm(&[("SLURM_STEP_NODELIST", "n[0-18446744073709551615]")])).unwrap_err();
        assert!(e.to_string().contains("the task counts cover 4 nodes, the node list has 18446744073709551615"), "{e}");
    }
}
