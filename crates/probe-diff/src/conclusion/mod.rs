//! The conclusion: what the comparisons and the periods add up to. It sits above them: the
//! areas of two snapshots compared ([`crate::compare`]), the runs and periods of a server
//! ([`crate::periods`]) and the tests of each cause ([`crate::verdict`]) are drawn together here
//! into the verdict of `probe diff` and of a host report's "against the previous launch", with
//! the rollback and restore text.

mod previous;
mod snapshots;
mod within;

pub use previous::previous_launch_diff;
pub use snapshots::{compare_analyses, compare_snapshots, compare_snapshots_with};
pub use within::{lead, period_diff};
