//! Two snapshots compared, with the verdict drawn from the comparison: the running runs of
//! each side, else the metrics of everything their logs held.

use probe_model::{Change, ComparedPeriod, LaunchConfig, Snapshot, SnapshotDiff, Verdict};

use super::measured::benchmark_metrics;
use super::previous::{capacity, layers, prefill_budget};
use super::within::{Server, Side};
use crate::analysis::Analysis;
use crate::baseline::Baseline;
use crate::compare::{CompareOptions, compare_areas};
use crate::periods::{compare_periods, load_bands, period_metrics, running_side};
use crate::verdict::{Evidence, judge};
use probe_launch::evidence_label;
use probe_model::civil::utc_minute as utc;

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
    let verdict = match &options.baseline {
        Some(baseline) => baseline_verdict(sides, baseline, &mut changes),
        None => change_point_verdict(sides, &mut changes),
    };
    let (verdict, periods) = match verdict {
        Some(judged) => judged,
        None => snapshot_verdict(sides, &diff, &mut changes),
    };
    diff.verdict = Some(verdict);
    diff.periods = periods;
    let first = areas.first;
    diff.rollback_plan = crate::rollback::plan((before, after), first, &changes, &diff);
    diff.rollback = crate::rollback::lines(
        &diff.rollback_plan,
        &crate::rollback::differing(first, &changes),
    );
    diff.changes = changes;
    diff
}

/// A snapshot with what it was read as, once.
type Read<'a> = (&'a Snapshot, &'a Analysis);

/// The verdict of two snapshots: the running runs of each compared (idle samples left out),
/// else the metrics of everything their logs held. The launches already reconstructed are
/// reused, not read again.
fn snapshot_verdict(
    ((before, before_analysis), (after, after_analysis)): (Read<'_>, Read<'_>),
    diff: &SnapshotDiff,
    changes: &mut [Change],
) -> (Verdict, Vec<ComparedPeriod>) {
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
        return (judge(changes, &evidence), Vec::new());
    };
    let side = |label: &str, s: &crate::periods::RunningSide, id: &str| ComparedPeriod {
        label: label.to_string(),
        start: s.period.start,
        end: s.period.end,
        run_start: Some(s.period.start),
        launch: s.label.clone(),
        why: format!("the running run of snapshot {id}"),
    };
    let periods = vec![
        side("before", &b, &diff.before.id),
        side("after", &a, &diff.after.id),
    ];
    let with_benchmarks = |side: &crate::periods::RunningSide, (snapshot, analysis): Read<'_>| {
        let mut metrics = side.stats.metrics.clone();
        metrics.extend(benchmark_metrics(snapshot, analysis, side.period.run));
        metrics
    };
    let (mut metrics, _) = compare_periods(
        &with_benchmarks(&b, (before, before_analysis)),
        &with_benchmarks(&a, (after, after_analysis)),
        &b.label,
        &a.label,
    );
    super::running_metrics::judge_by_running_runs(changes, &metrics);
    // The servers' own numbers (their latency now and over their lifetime) as each running
    // run's: the symptoms read them after the benchmarks' and before the log lines'.
    metrics.extend(
        diff.metrics
            .iter()
            .filter(|m| crate::compare::is_server_metric(m))
            .cloned(),
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
        shape: shape((before, before_analysis), (after, after_analysis)),
        field,
        ..Evidence::default()
    };
    (judge(changes, &evidence), periods)
}

/// The running launch of a snapshot as read.
fn running_launch<'a>((_, analysis): Read<'a>) -> Option<&'a LaunchConfig> {
    analysis.launches.iter().find(|l| l.source.running)
}

/// The model's shape and each side's tensor-parallel size: what the collective test shares an
/// added step time out over.
fn shape(before: Read<'_>, after: Read<'_>) -> crate::verdict::Shape {
    let launches = (running_launch(before), running_launch(after));
    super::shape::shape_of((before.0, after.0), launches)
}

/// The verdict of two snapshots against a baseline: the period it names, read from the before
/// snapshot's logs of its running server, against the after snapshot's now (its running run
/// since its last change point, and after the baseline). `None` when either side runs no server
/// with metrics.
fn baseline_verdict(
    sides: (Read<'_>, Read<'_>),
    baseline: &Baseline,
    changes: &mut [Change],
) -> Option<(Verdict, Vec<ComparedPeriod>)> {
    let ((before, before_analysis), (after, after_analysis)) = sides;
    let b = Server::running(before, before_analysis)?;
    let a = Server::running(after, after_analysis)?;
    let why = format!("named by --baseline {}", baseline.text);
    let resolved = baseline.resolve(&b.spans(), after.collected_at);
    let (before_side, end) = match &resolved {
        Some(r) => (
            Side {
                period: crate::periods::RunPeriod {
                    start: r.start,
                    end: Some(r.end),
                    ..r.run
                        .and_then(|index| b.runs.get(index).cloned())
                        .unwrap_or_else(|| b.current.clone())
                },
                why,
            },
            Some(r.end),
        ),
        None => (
            Side {
                period: crate::periods::RunPeriod {
                    start: after.collected_at,
                    end: Some(after.collected_at),
                    ..b.current.clone()
                },
                why,
            },
            None,
        ),
    };
    let after_side = a.now(&a.change_points(), end);
    Some(judge_sides(
        sides,
        (&b, &a),
        (before_side, after_side),
        changes,
    ))
}

/// Without a baseline, two snapshots of one run (the server was not restarted between them)
/// whose later side finds a change point in it (the load or the speed moved for a day or more):
/// the before snapshot's period before the last change point against the after snapshot's since,
/// as `probe host` compares them. `None` for two runs, or a run without a change point (the
/// running runs are compared whole).
fn change_point_verdict(
    sides: (Read<'_>, Read<'_>),
    changes: &mut [Change],
) -> Option<(Verdict, Vec<ComparedPeriod>)> {
    let ((before, before_analysis), (after, after_analysis)) = sides;
    let b = Server::running(before, before_analysis)?;
    let a = Server::running(after, after_analysis)?;
    let same_run =
        b.current.start == a.current.start && evidence_label(b.launch) == evidence_label(a.launch);
    if !same_run {
        return None;
    }
    let (mut before_side, after_side) = super::within::sides(&a, None, after.collected_at)?;
    before_side.why = format!("{} (in snapshot {})", before_side.why, before.id);
    Some(judge_sides(
        sides,
        (&b, &a),
        (before_side, after_side),
        changes,
    ))
}

/// The verdict of two periods: `before_side` read from the before snapshot's server `b`,
/// `after_side` from the after snapshot's `a`; and the periods compared, with why.
fn judge_sides(
    ((before, before_analysis), (after, after_analysis)): (Read<'_>, Read<'_>),
    (b, a): (&Server<'_>, &Server<'_>),
    (before_side, after_side): (Side, Side),
    changes: &mut [Change],
) -> (Verdict, Vec<ComparedPeriod>) {
    let before_stats = period_metrics(&b.points, &before_side.period);
    let after_stats = period_metrics(&a.points, &after_side.period);
    let before_label = b
        .launch_of(before_analysis, &before_side.period)
        .unwrap_or_else(|| evidence_label(b.launch));
    let after_label = evidence_label(a.launch);
    let span = |p: &crate::periods::RunPeriod| {
        format!(
            "{} .. {}",
            utc(p.start),
            p.end.map_or_else(|| String::from("now"), utc)
        )
    };
    let (metrics, _) = compare_periods(
        &before_stats.metrics,
        &after_stats.metrics,
        &before_label,
        &after_label,
    );
    let before_run = before_analysis.runs.get(before_side.period.run);
    let after_run = after_analysis.runs.get(after_side.period.run);
    let evidence = Evidence {
        metrics: &metrics,
        before_period: format!(
            "{before_label} ran {} on {}",
            span(&before_side.period),
            before.host.hostname.as_deref().unwrap_or("before")
        ),
        after_period: format!(
            "{after_label} ran {} on {}",
            span(&after_side.period),
            after.host.hostname.as_deref().unwrap_or("after")
        ),
        capacity: (capacity(before_run), capacity(after_run)),
        layers: layers(before_run, after_run),
        bands: load_bands(
            (&b.points, &before_side.period),
            (&a.points, &after_side.period),
        ),
        field: String::from("verdict"),
        ..Evidence::default()
    };
    let verdict = judge(changes, &evidence);
    let compared =
        |label: &str, side: &Side, launch: String, run: Option<&probe_model::Run>| ComparedPeriod {
            label: label.to_string(),
            start: side.period.start,
            end: side.period.end,
            run_start: run.and_then(|r| r.start.at),
            launch,
            why: side.why.clone(),
        };
    let periods = vec![
        compared("before", &before_side, before_label, before_run),
        compared("after", &after_side, after_label, after_run),
    ];
    (verdict, periods)
}
