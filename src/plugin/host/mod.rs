//! A host for NCCL's plugins: finds a family's plugin as NCCL does (`names`), loads it
//! through the crate's checked loader, finds its table from the newest version down, hands
//! it a logger that formats and keeps what it logs (`logger`, `printf`).

pub mod load;
pub mod logger;
pub mod names;
pub(crate) mod printf;
