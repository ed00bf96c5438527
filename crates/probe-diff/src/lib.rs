//! Pure reconstruction of launch configurations, timelines, runs and ranked differences.
//!
//! **Architecture invariant.** No I/O: everything comes in as text or [`probe_model`] values and
//! goes out as values. Engine knowledge is data in `configs/engines/*.toml`, embedded at build
//! time. A snapshot is read once into an [`Analysis`] (launches, runs, timeline).

pub mod analysis;
pub mod bench;
pub mod catalog;
pub mod common;
pub mod compare;
mod embedded;
mod explain;
pub mod fleet;
pub mod hardware;
pub mod impact;
pub mod launch;
pub mod periods;
mod pins;
mod previous;
mod rotated;
pub mod run;
pub mod server;
pub mod timeline;
pub mod verdict;
pub mod version;

pub use analysis::{Analysis, analyze};
pub use compare::{
    CompareOptions, compare_analyses, compare_launches, compare_snapshots, compare_snapshots_with,
    drift, has_drift, is_meaningful, option_at_default, performance_moves, rank, unified_diff,
};
pub use periods::metrics_by_run;
pub use previous::previous_launch_diff;
pub use timeline::{timeline, timeline_with};
