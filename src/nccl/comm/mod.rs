//! The communicator and its life: what it shares with its abort handles and watchdog (`shared`),
//! NCCL calls with deadlines on threads of their own (`bounded`), creation (`create`), the
//! communicator as callers hold it (`communicator`), this thread's open groups (`grouped`), the
//! watchdog, and adopting a communicator made elsewhere (`adopt`). The fault model is
//! docs/adr/0009-fault-model.md.

pub(crate) mod adopt;
pub(crate) mod bounded;
pub(crate) mod communicator;
pub(crate) mod create;
pub(crate) mod grouped;
pub(crate) mod shared;
pub(crate) mod watchdog;
