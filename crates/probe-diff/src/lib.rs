//! Pure reconstruction of launch configurations, timelines and ranked differences.
//!
//! **Architecture invariant.** No I/O: everything comes in as text or [`probe_model`] values and
//! goes out as values. Engine knowledge is data in `configs/engines/*.toml`, embedded at build
//! time.

pub mod catalog;
pub mod common;
pub mod compare;
pub mod hardware;
pub mod impact;
pub mod launch;
pub mod periods;
pub mod timeline;

pub use compare::{
    CompareOptions, compare_launches, compare_snapshots, compare_snapshots_with, is_meaningful,
    option_at_default, rank, unified_diff,
};
pub use periods::{metrics_by_run, previous_launch_diff};
pub use timeline::{timeline, timeline_with};
