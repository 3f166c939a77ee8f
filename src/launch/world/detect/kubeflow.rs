//! The Kubeflow training operator: `PET_NNODES`, `PET_NODE_RANK`, `PET_MASTER_ADDR`,
//! `PET_MASTER_PORT` (reserved). `PET_*` are torchrun's arguments; without torchrun each pod
//! is one process, so `PET_NPROC_PER_NODE` must be 1 (under torchrun, torchrun's own
//! variables are found first).

use crate::launch::error::Error;
use crate::launch::world::detect::{require_all, Found};
use crate::launch::world::reader::{Field, Reader};
use crate::launch::world::Launcher;

/// Kubeflow's variables, when `PET_NNODES` or `PET_NODE_RANK` is set.
pub(super) fn detect(r: &Reader<'_>) -> Result<Option<Found>, Error> {
    if !(r.has("PET_NNODES") || r.has("PET_NODE_RANK")) {
        return Ok(None);
    }
    let l = Launcher::Kubeflow;
    require_all(l, r, &["PET_NNODES", "PET_NODE_RANK"])?;
    if let Some(n) = r.raw("PET_NPROC_PER_NODE") {
        if n.trim() != "1" {
            return Err(Error::LauncherVariable {
                variable: "PET_NPROC_PER_NODE".into(),
                value: n,
                expected: "1: several processes per node have no rank of their own here; start them with torchrun, which reads PET_*",
            });
        }
    }
    let master = match (r.raw("PET_MASTER_ADDR"), r.raw("PET_MASTER_PORT")) {
        (Some(a), Some(p)) => Some(format!("kubeflow:{a}:{p}")),
        _ => None,
    };
    Ok(Some(Found {
        launcher: l,
        rank: r.number("PET_NODE_RANK")?,
        size: r.number("PET_NNODES")?,
        local_rank: Some(Field::new(0, "PET_NPROC_PER_NODE")),
        local_size: Some(Field::new(1, "PET_NPROC_PER_NODE")),
        root_host: r.host("PET_MASTER_ADDR")?,
        reserved_port: r.port("PET_MASTER_PORT")?.map(|p| ("PET_MASTER_PORT", p)),
        job: master,
        names: ["PET_NODE_RANK", "PET_NNODES", "", ""],
    }))
}

#[cfg(test)]
mod tests {
    use crate::launch::world::fixtures::{place, world};
    use crate::launch::world::Launcher;

    #[test]
    fn kubeflow_one_process_per_node() {
        let w = world(&[
            ("PET_NNODES", "4"),
            ("PET_NODE_RANK", "2"),
            ("PET_NPROC_PER_NODE", "1"),
            ("PET_MASTER_ADDR", "trainer-master-0"),
            ("PET_MASTER_PORT", "23456"),
        ])
        .unwrap();
        assert_eq!(place(&w), (2, 4, 0, 1, Launcher::Kubeflow));
        assert_eq!((w.root_host(), w.reserved_port()), (Some("trainer-master-0"), Some(23456)));
        let e = world(&[("PET_NNODES", "4"), ("PET_NODE_RANK", "2"), ("PET_NPROC_PER_NODE", "8")]).unwrap_err();
        assert!(e.to_string().contains("start them with torchrun"), "{e}");
        // Under torchrun the workers have RANK etc.: torchrun wins.
        let w = world(&[
            ("PET_NNODES", "2"),
            ("PET_NODE_RANK", "1"),
            ("PET_NPROC_PER_NODE", "8"),
            ("RANK", "9"),
            ("WORLD_SIZE", "16"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "8"),
        ])
        .unwrap();
        assert_eq!(place(&w), (9, 16, 1, 8, Launcher::Torchrun));
    }
}
