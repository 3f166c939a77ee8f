//! Init: `ncclCommInitRank`, `ncclCommInitRankConfig` and `ncclCommInitAll`.

use std::sync::Arc;

use crate::engine::typed::ValueAt;
use crate::nccl::comm::communicator::Communicator;
use crate::nccl::comm::create::pending::Pending;
use crate::nccl::comm::create::{check_rank, new_child, predicted_nonblocking, CallArgs, CommOptions, Origin, Slots};
use crate::nccl::comm::grouped::refuse_in_group;
use crate::nccl::comm::shared::Shared;
use crate::nccl::library::functions::Sym;
use crate::nccl::library::load::Nccl;
use crate::nccl::types::config::Config;
use crate::nccl::types::error::Error;
use crate::nccl::types::state::Timeouts;
use crate::nccl::types::unique_id::UniqueId;

impl Communicator {
    /// `ncclCommInitRank`: joins communicator `id` as `rank` of `nranks` on the current CUDA
    /// device, within the default creation timeout. The id is passed by value through the call
    /// core (a private copy per call).
    pub fn init_rank(nccl: &Nccl, nranks: i32, id: &UniqueId, rank: i32) -> Result<Self, Error> {
        Self::init_rank_with(nccl, nranks, id, rank, &CommOptions::new())
    }

    /// `ncclCommInitRankConfig` (2.14) with a config written for the loaded library.
    pub fn init_rank_config(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        config: &Config,
    ) -> Result<Self, Error> {
        Self::init_rank_with(nccl, nranks, id, rank, &CommOptions::new().config(config.clone()))
    }

    /// Init with options: `ncclCommInitRankConfig` when there is a config, else
    /// `ncclCommInitRank`. Fails with `Error::Timeout` at the creation deadline, having aborted
    /// (non-blocking) or abandoned (blocking) what NCCL made.
    pub fn init_rank_with(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        options: &CommOptions,
    ) -> Result<Self, Error> {
        let made = Self::begin_init_rank(nccl, nranks, id, rank, options)?.wait()?;
        made.ok_or(Error::ImpossibleOutput {
            function: if options.config.is_some() { "ncclCommInitRankConfig" } else { "ncclCommInitRank" },
            what: "no communicator",
        })
    }

    /// Starts an init and returns at once (the call runs on its own thread); finish it with
    /// [`Pending::wait`] or [`Pending::poll`].
    pub fn begin_init_rank(
        nccl: &Nccl,
        nranks: i32,
        id: &UniqueId,
        rank: i32,
        options: &CommOptions,
    ) -> Result<Pending<'static>, Error> {
        check_rank(nranks, rank)?;
        refuse_in_group(if options.config.is_some() { "ncclCommInitRankConfig" } else { "ncclCommInitRank" })?;
        let timeouts = options.timeouts.unwrap_or_default();
        let config_blocking = options.config.as_ref().and_then(Config::blocking_setting);
        let nonblocking = predicted_nonblocking(nccl.version(), config_blocking);
        let mut args = CallArgs { config: options.config.as_ref().map(|c| c.encode(nccl.version())).transpose()? };
        let (op, id) = (if args.config.is_some() { Sym::CommInitRankConfig } else { Sym::CommInitRank }, id.clone());
        if !nccl.has_sym(op) {
            // The Unsupported error, before any thread starts.
            return Err(nccl.unsupported(op));
        }
        Pending::start(
            nccl,
            Origin::new(op, "init", nranks, Some(rank)),
            Slots::new(1),
            vec![new_child(nccl, nonblocking, timeouts)],
            Vec::new(),
            timeouts,
            move |nccl, slots| {
                let out = slots.out(0);
                let cfg = args.config_ptr();
                let functions = nccl.functions();
                // SAFETY: `out` is the slot that stays owned until the handle is final (Slots);
                // the id is passed by value from where it is (the core copies it); `cfg` is
                // null or a config buffer written for the loaded library, kept alive with
                // `args` for the whole call.
                unsafe {
                    if op == Sym::CommInitRankConfig {
                        functions.comm_init_rank_config.call(nccl, (out, nranks, ValueAt::new(&id), rank, cfg))
                    } else {
                        functions.comm_init_rank.call(nccl, (out, nranks, ValueAt::new(&id), rank))
                    }
                }
            },
        )
    }

    /// `ncclCommInitAll`: one communicator per device of `devices`, in this process, within
    /// the default creation timeout. Refused inside an open group.
    pub fn init_all(nccl: &Nccl, devices: &[i32]) -> Result<Vec<Self>, Error> {
        Self::init_all_with(nccl, devices, Timeouts::default())
    }

    /// `ncclCommInitAll` with timeouts.
    pub fn init_all_with(nccl: &Nccl, devices: &[i32], timeouts: Timeouts) -> Result<Vec<Self>, Error> {
        let n = i32::try_from(devices.len()).map_err(|_| Error::TooMany { what: "devices", count: devices.len() })?;
        if n == 0 {
            return Err(Error::Empty { operation: "ncclCommInitAll", what: "device" });
        }
        refuse_in_group("ncclCommInitAll")?;
        let nonblocking = predicted_nonblocking(nccl.version(), None);
        let children = devices
            .iter()
            .map(|&d| {
                let child = new_child(nccl, nonblocking, timeouts);
                let context = nccl.cuda_if_any().and_then(|driver| driver.primary_context(d).ok());
                Arc::new(Shared::new(nccl.clone(), nonblocking, context.or(child.context), timeouts))
            })
            .collect();
        let devices = devices.to_vec();
        let mut pending = Pending::start(
            nccl,
            Origin::new(Sym::CommInitAll, "init_all", n, None),
            Slots::new(devices.len()),
            children,
            Vec::new(),
            timeouts,
            move |nccl, slots| {
                let (out, list) = (slots.out(0), devices.as_ptr());
                // SAFETY: `out` is `devices.len()` owned slots (Slots), `list` that many ints.
                unsafe { nccl.functions().comm_init_all.call(nccl, (out, n, list)) }
            },
        )?;
        let made = pending.wait_all()?;
        Ok(made.into_iter().flatten().collect())
    }
}
