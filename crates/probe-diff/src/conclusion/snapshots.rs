//! Two snapshots compared, with the verdict drawn from the comparison: the running runs of
//! each side, else the metrics of everything their logs held.

use probe_model::{Change, LaunchConfig, Snapshot, SnapshotDiff};

use super::measured::benchmark_metrics;
use super::previous::{capacity, layers, prefill_budget};
use crate::analysis::Analysis;
use crate::compare::{CompareOptions, compare_areas};
use crate::periods::{compare_periods, load_bands, running_side};
use crate::verdict::{Evidence, judge, rollback};

/// Compares two snapshots, reading each once ([`crate::analyze`]).
pub fn compare_snapshots(
    before: &Snapshot,
    after: &Snapshot,
    options: &CompareOptions,
) -> SnapshotDiff {
    let before_analysis = crate::analysis::analyze(before);
    let after_analysis = crate::analysis::analyze(after);
    compare_analyses(before, &before_analysis, after, &after_analysis, options)
}

/// Compares two snapshots whose launches were already reconstructed (or made by hand).
pub fn compare_snapshots_with(
    before: &Snapshot,
    before_launches: &[LaunchConfig],
    after: &Snapshot,
    after_launches: &[LaunchConfig],
    options: &CompareOptions,
) -> SnapshotDiff {
    let before_analysis = crate::analysis::analyze_with(before, before_launches.to_vec());
    let after_analysis = crate::analysis::analyze_with(after, after_launches.to_vec());
    compare_analyses(before, &before_analysis, after, &after_analysis, options)
}

/// Compares two snapshots already read: their launches, timelines and runs are used as they
/// are, never rebuilt (the report, the audit and fleet outliers hold them). The changes are
/// tested against the symptoms, and the rollback is drawn from the first server both run.
pub fn compare_analyses(
    before: &Snapshot,
    before_analysis: &Analysis,
    after: &Snapshot,
    after_analysis: &Analysis,
    options: &CompareOptions,
) -> SnapshotDiff {
    let areas = compare_areas(before, before_analysis, after, after_analysis, options);
    let (mut diff, mut changes) = (areas.diff, areas.changes);
    let sides = ((before, before_analysis), (after, after_analysis));
    diff.verdict = Some(snapshot_verdict(sides, &diff, &mut changes));
    let first = areas.first;
    let unit = first.and_then(|m| crate::run::unit_of(after, m.1));
    diff.rollback = rollback(first.map(|m| m.0), first.map(|m| m.1), &changes, unit);
    diff.changes = changes;
    diff
}

/// A snapshot with what it was read as, once.
type Side<'a> = (&'a Snapshot, &'a Analysis);

/// The verdict of two snapshots: the running runs of each compared (idle samples left out),
/// else the metrics of everything their logs held. The launches already reconstructed are
/// reused, not read again.
fn snapshot_verdict(
    ((before, before_analysis), (after, after_analysis)): (Side<'_>, Side<'_>),
    diff: &SnapshotDiff,
    changes: &mut [Change],
) -> probe_model::Verdict {
    let field = String::from("verdict");
    let (Some(b), Some(a)) = (
        running_side(before, before_analysis),
        running_side(after, after_analysis),
    ) else {
        let evidence = Evidence {
            metrics: &diff.metrics,
            before_period: format!("snapshot {}", diff.before.id),
            after_period: format!("snapshot {}", diff.after.id),
            field,
            ..Evidence::default()
        };
        return judge(changes, &evidence);
    };
    let with_benchmarks = |side: &crate::periods::RunningSide, (snapshot, analysis): Side<'_>| {
        let mut metrics = side.stats.metrics.clone();
        metrics.extend(benchmark_metrics(snapshot, analysis, side.period.run));
        metrics
    };
    let (metrics, _) = compare_periods(
        &with_benchmarks(&b, (before, before_analysis)),
        &with_benchmarks(&a, (after, after_analysis)),
        &b.label,
        &a.label,
    );
    let evidence = Evidence {
        metrics: &metrics,
        before_period: format!("{} on {}", b.label, diff.before.host),
        after_period: format!("{} on {}", a.label, diff.after.host),
        capacity: (capacity(b.run.as_ref()), capacity(a.run.as_ref())),
        layers: layers(b.run.as_ref(), a.run.as_ref()),
        prefill_budget: (
            prefill_budget(b.run.as_ref()),
            prefill_budget(a.run.as_ref()),
        ),
        bands: load_bands((&b.points, &b.period), (&a.points, &a.period)),
        field,
        ..Evidence::default()
    };
    judge(changes, &evidence)
}
