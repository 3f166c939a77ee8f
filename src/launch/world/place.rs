//! The four numbers of a place (rank, size, local rank, local size): the crate's explicit
//! variables over what the launcher said, one process when nothing is set, the missing ones
//! named; then whether they hold together.

use crate::launch::error::Error;
use crate::launch::world::detect::Found;
use crate::launch::world::reader::{Field, Reader};
use crate::launch::world::{vars, Launcher};

/// The launcher whose numbers were used ("explicit" when only the crate's own were set) and
/// the numbers, checked.
pub(super) struct Place {
    pub(super) launcher: Launcher,
    pub(super) rank: u32,
    pub(super) size: u32,
    pub(super) local_rank: u32,
    pub(super) local_size: u32,
}

/// Each `NCCL_TRAMPOLINE_*` number that is set over the one `found` names; an error when a
/// number is missing from both, or when they contradict each other ([`check`]).
pub(super) fn resolve(r: &Reader<'_>, found: &Found) -> Result<Place, Error> {
    let explicit =
        [r.number(vars::RANK)?, r.number(vars::WORLD_SIZE)?, r.number(vars::LOCAL_RANK)?, r.number(vars::LOCAL_SIZE)?];
    let any_explicit = explicit.iter().any(Option::is_some);
    let [e_rank, e_size, e_local_rank, e_local_size] = explicit;
    let launcher =
        if found.launcher == Launcher::Standalone && any_explicit { Launcher::Explicit } else { found.launcher };

    let (rank, size, local_rank, local_size) = if launcher == Launcher::Standalone {
        let f = |value, var| Some(Field::new(value, var));
        (f(0, "(standalone)"), f(1, "(standalone)"), f(0, "(standalone)"), f(1, "(standalone)"))
    } else {
        (
            e_rank.or_else(|| found.rank.clone()),
            e_size.or_else(|| found.size.clone()),
            e_local_rank.or_else(|| found.local_rank.clone()),
            e_local_size.or_else(|| found.local_size.clone()),
        )
    };
    let explicit_names = [vars::RANK, vars::WORLD_SIZE, vars::LOCAL_RANK, vars::LOCAL_SIZE];
    let missing: Vec<String> = [rank.is_none(), size.is_none(), local_rank.is_none(), local_size.is_none()]
        .iter()
        .zip(found.names.iter().zip(explicit_names))
        .filter(|(m, _)| **m)
        .map(|(_, (l, e))| if l.is_empty() || *l == e { e.to_string() } else { format!("{l} or {e}") })
        .collect();
    let (Some(rank), Some(size), Some(local_rank), Some(local_size)) = (rank, size, local_rank, local_size) else {
        let present =
            explicit_names.iter().chain(found.names.iter()).filter(|v| r.has(v)).map(|v| v.to_string()).collect();
        return Err(Error::LauncherIncomplete { launcher: launcher.name(), present, missing });
    };
    check(&rank, &size, &local_rank, &local_size)?;
    Ok(Place {
        launcher,
        rank: rank.value,
        size: size.value,
        local_rank: local_rank.value,
        local_size: local_size.value,
    })
}

/// Whether the numbers hold together: a job of 1 to `i32::MAX` ranks, at least one on this
/// host and no more than in the job, each rank below its size.
fn check(rank: &Field, size: &Field, local_rank: &Field, local_size: &Field) -> Result<(), Error> {
    let bad = |fields: &[&Field], detail: &str| Error::LauncherContradiction {
        variables: fields.iter().map(|f| f.shown()).collect(),
        detail: detail.into(),
    };
    if size.value == 0 {
        return Err(bad(&[size], "a job of zero ranks"));
    }
    if size.value > i32::MAX as u32 {
        return Err(bad(&[size], "more ranks than NCCL counts (an int)"));
    }
    if rank.value >= size.value {
        return Err(bad(&[rank, size], "the rank is not below the size"));
    }
    if local_size.value == 0 {
        return Err(bad(&[local_size], "zero ranks on this host"));
    }
    if local_rank.value >= local_size.value {
        return Err(bad(&[local_rank, local_size], "the local rank is not below the local size"));
    }
    if local_size.value > size.value {
        return Err(bad(&[local_size, size], "more ranks on this host than in the job"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::launch::error::Error;
    use crate::launch::world::fixtures::{place, world};
    use crate::launch::world::{vars, Launcher};

    #[test]
    fn explicit_variables_override_single_fields() {
        let w = world(&[
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "4"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "3"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
            (vars::LOCAL_RANK, "0"),
            (vars::LOCAL_SIZE, "1"),
            (vars::ROOT, "10.0.0.7:31000"),
        ])
        .unwrap();
        assert_eq!(place(&w), (3, 4, 0, 1, Launcher::OpenMpi));
        assert_eq!((w.root_host(), w.port()), (Some("10.0.0.7"), Some(31000)));
        let w = world(&[
            (vars::RANK, "1"),
            (vars::WORLD_SIZE, "2"),
            (vars::LOCAL_RANK, "1"),
            (vars::LOCAL_SIZE, "2"),
            (vars::ROOT, "[fe80::1]:4000"),
            (vars::SECRET, "s3cr3t"),
        ])
        .unwrap();
        assert_eq!(place(&w), (1, 2, 1, 2, Launcher::Explicit));
        assert_eq!((w.root_host(), w.port()), (Some("fe80::1"), Some(4000)));
        assert!(!format!("{w:?}").contains("s3cr3t"), "Debug must not show the secret");
        // Explicit local variables complete a launcher set that lacks them.
        let w = world(&[("RANK", "1"), ("WORLD_SIZE", "2"), (vars::LOCAL_RANK, "1"), (vars::LOCAL_SIZE, "2")]).unwrap();
        assert_eq!(place(&w), (1, 2, 1, 2, Launcher::Torchrun));
    }

    #[test]
    fn contradictions_name_the_variables() {
        let base = [("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "1")];
        for (vars, needle) in [
            (vec![("RANK", "2"), ("WORLD_SIZE", "2")], "RANK=2, WORLD_SIZE=2"),
            (vec![("RANK", "0"), ("WORLD_SIZE", "0")], "WORLD_SIZE=0"),
            (vec![("RANK", "0"), ("WORLD_SIZE", "4294967295")], "WORLD_SIZE=4294967295"),
        ] {
            let mut v = vars.clone();
            v.extend(base);
            let e = world(&v).unwrap_err();
            assert!(matches!(e, Error::LauncherContradiction { .. }) && e.to_string().contains(needle), "{e}");
        }
        let e =
            world(&[("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "2"), ("LOCAL_WORLD_SIZE", "2")]).unwrap_err();
        assert!(e.to_string().contains("LOCAL_RANK=2, LOCAL_WORLD_SIZE=2"), "{e}");
        let e =
            world(&[("RANK", "1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "3")]).unwrap_err();
        assert!(e.to_string().contains("LOCAL_WORLD_SIZE=3, WORLD_SIZE=2"), "{e}");
        let e = world(&[("PMI_RANK", "0"), ("PMI_SIZE", "2"), ("MPI_LOCALRANKID", "1"), ("MPI_LOCALNRANKS", "4")])
            .unwrap_err();
        assert!(e.to_string().contains("MPI_LOCALNRANKS=4, PMI_SIZE=2"), "{e}");
        // An explicit override is named as such.
        let e = world(&[
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "0"),
            ("LOCAL_WORLD_SIZE", "1"),
            (vars::RANK, "7"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("NCCL_TRAMPOLINE_RANK=7, WORLD_SIZE=2"), "{e}");
        // The rendezvous may not take torchrun's store port.
        let e = world(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "1"),
            ("LOCAL_RANK", "0"),
            ("LOCAL_WORLD_SIZE", "1"),
            ("MASTER_PORT", "29500"),
            (vars::PORT, "29500"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("torchrun's own store port"), "{e}");
        assert!(e.to_string().contains("MASTER_PORT=29500"), "{e}");
        // Under Kubeflow the reserved port is the one PET_MASTER_PORT names, and the message
        // names that variable.
        let e = world(&[
            ("PET_NNODES", "1"),
            ("PET_NODE_RANK", "0"),
            ("PET_NPROC_PER_NODE", "1"),
            ("PET_MASTER_ADDR", "trainer-master-0"),
            ("PET_MASTER_PORT", "23456"),
            (vars::PORT, "23456"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("PET_MASTER_PORT=23456") && !e.to_string().contains(" MASTER_PORT"), "{e}");
        let e = world(&[(vars::PORT, "4000"), (vars::ROOT, "h:4001")]).unwrap_err();
        assert!(matches!(e, Error::LauncherContradiction { .. }), "{e}");
    }
}
