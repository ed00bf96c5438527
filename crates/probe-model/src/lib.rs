//! The serde types that cross crate boundaries and leave the program: snapshots of a host,
//! reconstructed launch configurations, differences and timelines.
//!
//! **API boundary.** The JSON form of these types is what `probe --format json`, `probe snapshots
//! export` and the store write. Every document that is written carries [`SCHEMA_VERSION`]; a reader
//! refuses a document from a newer schema instead of misreading it.
//!
//! **Architecture invariant.** This crate depends on no other crate of ours and does no I/O.
//! [`civil`] is the one place calendar dates become Unix times and back (through `jiff`).

pub mod bench;
pub mod change_key;
pub mod civil;
pub mod container;
pub mod diff;
pub mod exit_codes;
pub mod fleet;
pub mod hardware;
pub mod host_ids;
pub mod identity;
pub mod launch;
pub mod report;
pub mod rollback;
pub mod run;
pub mod self_installed;
pub mod server;
pub mod snapshot;
pub mod text;
pub mod verdict;
pub mod view;

pub use bench::*;
pub use change_key::{ChangeKey, KeyArea};
pub use container::*;
pub use diff::*;
pub use fleet::*;
pub use hardware::*;
pub use host_ids::{HostIdMut, HostIds, for_each_host_id};
pub use launch::*;
pub use report::*;
pub use rollback::{Launcher, Placeholder, RollbackAction, RollbackPlan, RollbackStep, VerifyAt};
pub use run::*;
pub use self_installed::{BlobName, Checkout, InstalledBinary, SelfInstalled};
pub use server::*;
pub use snapshot::*;
pub use verdict::*;
pub use view::{FieldReading, FleetView};

/// Version of the snapshot/report schema. Bump on any incompatible change of the JSON form and
/// add a migration in `probe-store`.
pub const SCHEMA_VERSION: u32 = 1;

/// Seconds since the Unix epoch, UTC. All times in the model use this unit; renderers format them.
pub type UnixTime = i64;
