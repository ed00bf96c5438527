//! The conclusion: what the comparisons and the periods add up to. It sits above them: the
//! areas of two snapshots compared ([`crate::compare`]), the runs and periods of a server
//! ([`crate::periods`]) and the tests of each cause ([`crate::verdict`]) are drawn together here
//! into the verdict of `probe diff` and of a host report's "against the previous launch", with
//! the rollback and restore text.

mod host;
mod measured;
mod previous;
mod running_metrics;
mod shape;
mod snapshots;
mod within;

pub use host::{HostConclusions, host_conclusions};
pub use previous::previous_launch_diff;

use probe_model::{RunMetrics, Snapshot};

use crate::analysis::Analysis;

/// Metrics by run of each running server ([`crate::periods::metrics_by_run`]: the running run
/// and up to `earlier` earlier runs, from their logs), with what the benchmark results left on
/// the host measured of each (`ttft_p90 (bench)`, ...), attributed by their dates.
pub fn metrics_by_run(snapshot: &Snapshot, analysis: &Analysis, earlier: usize) -> Vec<RunMetrics> {
    let mut out = crate::periods::metrics_by_run(snapshot, analysis, earlier);
    measured::join_benchmarks(snapshot, analysis, &mut out);
    out
}
pub use snapshots::{compare_analyses, compare_snapshots, compare_snapshots_with};
pub use within::{lead, period_diff};
