//! What the tests of every part start from: a world from a list of variables, its place in
//! one tuple, and one Slurm step's variables.

use std::collections::HashMap;

use crate::launch::error::Error;
use crate::launch::world::{Launcher, World};

/// The world of exactly these variables.
pub(super) fn world(vars: &[(&str, &str)]) -> Result<World, Error> {
    let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    World::from_vars(|k| map.get(k).cloned())
}

/// Rank, size, local rank, local size and launcher.
pub(super) fn place(w: &World) -> (u32, u32, u32, u32, Launcher) {
    (w.rank(), w.size(), w.local_rank(), w.local_size(), w.launcher())
}

/// A step of 7 tasks on `gpu[01-03],cpu9` (2, 2, 2, 1 tasks), this one rank 5, local rank 1
/// on node 2; `extra` replaces variables, an empty value removes one.
pub(super) fn slurm(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![
        ("SLURM_JOB_ID", "4242"),
        ("SLURM_STEP_ID", "0"),
        ("SLURM_PROCID", "5"),
        ("SLURM_STEP_NUM_TASKS", "7"),
        ("SLURM_NTASKS", "99"),
        ("SLURM_LOCALID", "1"),
        ("SLURM_NODEID", "2"),
        ("SLURM_STEP_TASKS_PER_NODE", "2(x3),1"),
        ("SLURM_STEP_NODELIST", "gpu[01-03],cpu9"),
    ];
    for (k, val) in extra {
        v.retain(|(kk, _)| kk != k);
        if !val.is_empty() {
            v.push((k, val));
        }
    }
    v
}
