//! What a host report concludes about one snapshot, from one [`Analysis`] of it and the
//! host's previous snapshot: its running server against the run before, the periods within the
//! running run (or the one `--baseline` names), which of those verdicts leads, the snapshot
//! against the previous one, and the metrics of the latest runs.

use probe_model::{LaunchDiff, Lead, RunMetrics, Snapshot, SnapshotDiff};

use super::previous::previous_launch_diff;
use super::snapshots::compare_analyses;
use super::within::{lead, period_diff};
use crate::analysis::{Analysis, analyze};
use crate::baseline::Baseline;
use crate::compare::CompareOptions;

/// Runs before the running one whose metrics a host report shows.
const EARLIER_RUNS: usize = 3;

/// The conclusions of a host report ([`host_conclusions`]).
#[derive(Debug, Clone, Default)]
pub struct HostConclusions {
    /// The running server's run against the run before it: causes and symptoms.
    pub vs_previous_launch: Option<LaunchDiff>,
    /// Periods inside the running run (a change point of its load or speed), or the one
    /// `--baseline` named, against now.
    pub vs_period: Option<LaunchDiff>,
    /// Which verdict the report opens with.
    pub lead: Option<Lead>,
    /// The snapshot against the host's previous one.
    pub vs_last_snapshot: Option<SnapshotDiff>,
    /// The running run and up to three earlier runs of each running server, measured.
    pub metrics_by_run: Vec<RunMetrics>,
}

/// Everything a host report concludes about `snapshot` (read once into `analysis`), with the
/// host's `previous` snapshot read once here.
pub fn host_conclusions(
    snapshot: &Snapshot,
    analysis: &Analysis,
    previous: Option<&Snapshot>,
    baseline: Option<&Baseline>,
) -> HostConclusions {
    let vs_previous_launch = previous_launch_diff(snapshot, analysis);
    let vs_period = period_diff(snapshot, analysis, baseline);
    let lead = lead(
        vs_previous_launch.as_ref(),
        vs_period.as_ref(),
        baseline.is_some(),
    );
    let vs_last_snapshot = previous.map(|before| {
        compare_analyses(
            before,
            &analyze(before),
            snapshot,
            analysis,
            &CompareOptions::default(),
        )
    });
    HostConclusions {
        vs_previous_launch,
        vs_period,
        lead,
        vs_last_snapshot,
        metrics_by_run: measured_runs(snapshot, analysis),
    }
}

/// The metrics of the latest runs, with what benchmark results measured of each (as
/// [`crate::metrics_by_run`]).
fn measured_runs(snapshot: &Snapshot, analysis: &Analysis) -> Vec<RunMetrics> {
    let mut out = crate::periods::metrics_by_run(snapshot, analysis, EARLIER_RUNS);
    super::measured::join_benchmarks(snapshot, analysis, &mut out);
    out
}
