//! NCCL's newer host API (2.28 and later): the device API's host side (`device_api`), teams
//! (`team`), one-sided communication on windows (`one_sided`), a communicator's properties
//! (`properties`), and suspending its memory (`suspend`).

pub(crate) mod device_api;
pub(crate) mod one_sided;
pub(crate) mod properties;
pub(crate) mod suspend;
pub(crate) mod team;
