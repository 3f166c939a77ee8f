//! torchrun / torch elastic: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `LOCAL_WORLD_SIZE`,
//! `MASTER_ADDR`; `MASTER_PORT` is torchrun's own store, reserved. The job is the elastic run
//! and its restart (torch/distributed/elastic/agent/server/local_elastic_agent.py sets these
//! for every worker).

use crate::launch::error::Error;
use crate::launch::world::detect::{require_all, Found};
use crate::launch::world::reader::Reader;
use crate::launch::world::Launcher;

/// torchrun's variables, when `RANK`, `WORLD_SIZE` or `TORCHELASTIC_RUN_ID` is set.
pub(super) fn detect(r: &Reader<'_>) -> Result<Option<Found>, Error> {
    if !(r.has("RANK") || r.has("WORLD_SIZE") || r.has("TORCHELASTIC_RUN_ID")) {
        return Ok(None);
    }
    let l = Launcher::Torchrun;
    let core = ["RANK", "WORLD_SIZE"];
    require_all(l, r, &core)?;
    if !r.has("RANK") {
        return Err(Error::LauncherIncomplete {
            launcher: l.name(),
            present: vec!["TORCHELASTIC_RUN_ID".into()],
            missing: core.iter().map(|s| s.to_string()).collect(),
        });
    }
    let run = r.raw("TORCHELASTIC_RUN_ID").filter(|id| id != "none");
    let master = match (r.raw("MASTER_ADDR"), r.raw("MASTER_PORT")) {
        (Some(a), Some(p)) => Some(format!("{a}:{p}")),
        (Some(a), None) => Some(a),
        _ => None,
    };
    let restart = r.raw("TORCHELASTIC_RESTART_COUNT").unwrap_or_else(|| "0".into());
    // A restart gives the workers new ranks: it is a new job for the rendezvous.
    let job = match (run, master) {
        (Some(run), m) => Some(format!("torchrun:{run}:{restart}:{}", m.unwrap_or_default())),
        (None, Some(m)) => Some(format!("torchrun:{m}:{restart}")),
        (None, None) => None,
    };
    Ok(Some(Found {
        launcher: l,
        rank: r.number("RANK")?,
        size: r.number("WORLD_SIZE")?,
        local_rank: r.number("LOCAL_RANK")?,
        local_size: r.number("LOCAL_WORLD_SIZE")?,
        root_host: r.host("MASTER_ADDR")?,
        reserved_port: r.port("MASTER_PORT")?.map(|p| ("MASTER_PORT", p)),
        job,
        names: ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"],
    }))
}

#[cfg(test)]
mod tests {
    use crate::launch::world::fixtures::{place, world};
    use crate::launch::world::Launcher;

    #[test]
    fn torchrun() {
        let w = world(&[
            ("RANK", "5"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "1"),
            ("LOCAL_WORLD_SIZE", "4"),
            ("GROUP_RANK", "1"),
            ("MASTER_ADDR", "node01"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_RUN_ID", "job7"),
            ("TORCHELASTIC_RESTART_COUNT", "2"),
        ])
        .unwrap();
        assert_eq!(place(&w), (5, 8, 1, 4, Launcher::Torchrun));
        assert_eq!((w.root_host(), w.reserved_port(), w.port()), (Some("node01"), Some(29500), None));
        assert_eq!(w.job(), Some("torchrun:job7:2:node01:29500"));
        assert!(!w.is_single_host());
        // --standalone: run id "none" is no identity; the store's address is.
        let w = world(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "0"),
            ("LOCAL_WORLD_SIZE", "2"),
            ("MASTER_ADDR", "[::1]"),
            ("MASTER_PORT", "41000"),
            ("TORCHELASTIC_RUN_ID", "none"),
        ])
        .unwrap();
        assert_eq!(w.job(), Some("torchrun:[::1]:41000:0"));
        assert_eq!(w.root_host(), Some("::1"));
        assert!(w.is_single_host());
    }
}
