//! The running run against the run before it: causes (what changed in the launch and in what was
//! in effect) and symptoms (the metrics of the period each ran), apart.

use probe_model::{Conclusion, LaunchConfig, LaunchDiff, Run, Snapshot};

use super::measured::{benchmark_metrics, measured};
use crate::analysis::Analysis;
use crate::compare::compare_runs;
use crate::explain;
use crate::label::launch_label;
use crate::periods::{
    PeriodStats, RunPeriod, ServerPoints, compare_launches_read, compare_periods, describe,
    load_bands, load_note, period_metrics, run_periods, server_points,
};
use crate::ranking::rank;
use crate::verdict::{self, Evidence};
use probe_launch::evidence_label;

/// The running run against the run before it: the previous launch of the same server with a
/// different configuration (the timeline's `previous` event), else the newest earlier run of the
/// same server that differs in anything in effect (engine version, packages, driver, model,
/// start-up limits). The metrics of the period each ran are compared as symptoms, apart from the
/// causes: when the previous launch logged no metrics, the most recent earlier run that did
/// stands in for it, and [`LaunchDiff::metrics_note`] says which.
pub fn previous_launch_diff(snapshot: &Snapshot, analysis: &Analysis) -> Option<LaunchDiff> {
    let timeline = &analysis.timeline;
    let running = timeline
        .events
        .iter()
        .find(|event| event.running && event.launch.is_some())?
        .launch?;
    let after = timeline.launches.get(running)?;
    let periods = run_periods(snapshot, analysis, running);
    let current = periods.iter().rev().find(|p| p.launch == running).cloned();
    let after_run = current.as_ref().and_then(|p| analysis.runs.get(p.run));
    let (previous, before_run) = previous_run(analysis, &periods, current.as_ref(), after_run)?;
    let before = timeline.launches.get(previous)?;
    let mut diff = causes(before, after, before_run, after_run);
    let points = server_points(snapshot, timeline, after);
    let runs = (before_run, after_run);
    if let Some(current) = current.as_ref().filter(|_| !points.is_empty()) {
        let sides = Sides {
            before,
            after,
            previous,
            current,
            runs,
        };
        symptoms(snapshot, analysis, &periods, &points, &sides, &mut diff);
    }
    if diff.verdict.is_none() {
        let evidence = Evidence {
            field: String::from(VERDICT_FIELD),
            ..Evidence::default()
        };
        diff.verdict = Some(verdict::judge(&mut diff.changes, &evidence));
    }
    Some(diff)
}

/// Where a host report keeps the verdict.
const VERDICT_FIELD: &str = "vs_previous_launch.verdict";

/// The KV capacity in tokens a run had, from its start-up limits.
pub(crate) fn capacity(run: Option<&Run>) -> Option<f64> {
    limit(run, &verdict::config().metrics.capacity)
}

/// The prefill token budget a run's engine resolved, from its start-up limits.
pub(crate) fn prefill_budget(run: Option<&Run>) -> Option<f64> {
    // SGLang's `chunked_prefill_size=-1` is chunking turned off, not a budget.
    limit(run, &verdict::config().metrics.prefill_budget).filter(|v| *v > 0.0)
}

/// The first of `names` among a run's start-up limits.
fn limit(run: Option<&Run>, names: &[String]) -> Option<f64> {
    let run = run?;
    names.iter().find_map(|name| run.limits.get(name).copied())
}

/// The layers each run's engine put on the GPU, and the model's layer count.
pub(crate) fn layers(before: Option<&Run>, after: Option<&Run>) -> verdict::Layers {
    let names = &verdict::config().metrics;
    verdict::Layers {
        gpu: (
            limit(before, &names.gpu_layers),
            limit(after, &names.gpu_layers),
        ),
        model: limit(after, &names.model_layers).or_else(|| limit(before, &names.model_layers)),
        kv: (limit(before, &names.kv_size), limit(after, &names.kv_size)),
    }
}

/// The launch to compare with and its run: the timeline's `previous` event, else (same flags)
/// the newest earlier run that differs in what was in effect.
fn previous_run<'a>(
    analysis: &'a Analysis,
    periods: &[RunPeriod],
    current: Option<&RunPeriod>,
    after_run: Option<&Run>,
) -> Option<(usize, Option<&'a Run>)> {
    let marked = analysis
        .timeline
        .events
        .iter()
        .find(|event| event.previous)
        .and_then(|event| event.launch);
    if let Some(previous) = marked {
        let run = periods
            .iter()
            .rev()
            .find(|p| p.launch == previous)
            .and_then(|p| analysis.runs.get(p.run));
        return Some((previous, run));
    }
    let (current, after_run) = (current?, after_run?);
    let earlier = || periods.iter().rev().filter(|p| p.start < current.start);
    // A previous run with the same configuration is still a previous run: with nothing
    // changed, the newest earlier run is compared (the load may have changed).
    let found = earlier()
        .find(|p| {
            analysis
                .runs
                .get(p.run)
                .is_some_and(|run| !compare_runs(run, after_run).is_empty())
        })
        .or_else(|| earlier().next())?;
    Some((found.launch, analysis.runs.get(found.run)))
}

/// The candidate causes: the launches compared, with what the runs had in effect over them.
pub(super) fn causes(
    before: &LaunchConfig,
    after: &LaunchConfig,
    before_run: Option<&Run>,
    after_run: Option<&Run>,
) -> LaunchDiff {
    let mut diff = compare_launches_read(before, after);
    if let (Some(before_run), Some(after_run)) = (before_run, after_run) {
        for change in compare_runs(before_run, after_run) {
            diff.changes.retain(|c| c.key != change.key);
            diff.changes.push(change);
        }
    }
    // A flag and the start-up limit it set are one change.
    crate::compare::fold_limits(&mut diff.changes, before, after);
    rank(&mut diff.changes);
    diff
}

/// The two launches compared and the period of the running one.
struct Sides<'a> {
    before: &'a LaunchConfig,
    after: &'a LaunchConfig,
    previous: usize,
    current: &'a RunPeriod,
    /// The runs of the two launches compared, where known.
    runs: (Option<&'a Run>, Option<&'a Run>),
}

/// The symptoms: metric means of the running period against the previous launch's (or the newest
/// earlier period with metrics), with the notes that say what was compared.
fn symptoms(
    snapshot: &Snapshot,
    analysis: &Analysis,
    periods: &[RunPeriod],
    points: &ServerPoints,
    sides: &Sides<'_>,
    diff: &mut LaunchDiff,
) {
    let Sides {
        before,
        after,
        current,
        ..
    } = *sides;
    let mut after_stats = period_metrics(points, current);
    after_stats
        .metrics
        .extend(benchmark_metrics(snapshot, analysis, current.run));
    if after_stats.metrics.is_empty() {
        diff.metrics_note = Some(format!(
            "no metrics logged since {} started",
            evidence_label(after)
        ));
        return;
    }
    let Some((period, mut before_stats)) =
        earlier_period_with_metrics(analysis, periods, points, sides)
    else {
        diff.metrics_note = Some(format!(
            "no metrics logged while {} or an earlier launch ran",
            evidence_label(before)
        ));
        return;
    };
    let Some(stand_in) = analysis.timeline.launches.get(period.launch) else {
        return;
    };
    before_stats
        .metrics
        .extend(benchmark_metrics(snapshot, analysis, period.run));
    let (comparisons, symptoms) = compare_periods(
        &before_stats.metrics,
        &after_stats.metrics,
        &evidence_label(stand_in),
        &evidence_label(after),
    );
    note_periods(sides, (period, stand_in), diff);
    diff.load_note = load_note(&comparisons, before_stats.idle, after_stats.idle);
    diff.metrics = comparisons;
    diff.symptoms = symptoms;
    rank(&mut diff.symptoms);
    explain::link_mechanisms(diff, after);
    judge(
        snapshot,
        analysis,
        (periods, points),
        sides,
        (period, stand_in),
        diff,
    );
}

/// Which periods the metrics compare, and why those: the note and the two compared runs.
fn note_periods(
    sides: &Sides<'_>,
    (period, stand_in): (&RunPeriod, &LaunchConfig),
    diff: &mut LaunchDiff,
) {
    let Sides {
        before,
        after,
        previous,
        current,
        runs,
    } = *sides;
    let mut note = format!(
        "means while {} vs while {}",
        describe(stand_in, period),
        describe(after, current)
    );
    if period.launch != previous {
        note = format!(
            "the previous launch ({}) logged no metrics; compared with the most recent earlier \
             launch that did: {note}",
            launch_label(before)
        );
    }
    diff.metrics_note = Some(note);
    let why_before = if period.launch == previous {
        "the previous launch's run"
    } else {
        "the most recent earlier run that logged metrics (the previous launch logged none)"
    };
    diff.periods = vec![
        compared("before", period, stand_in, runs.0, why_before),
        compared("after", current, after, runs.1, "the running run"),
    ];
}

/// The changes of `diff` held against its symptoms: which do not explain them (the same change
/// between earlier runs whose metrics held), then the verdict, with what would restore the
/// earlier launch where a cause explains or nothing does.
fn judge(
    snapshot: &Snapshot,
    analysis: &Analysis,
    (periods, points): (&[RunPeriod], &ServerPoints),
    sides: &Sides<'_>,
    (period, stand_in): (&RunPeriod, &LaunchConfig),
    diff: &mut LaunchDiff,
) {
    let Sides {
        before,
        after,
        current,
        runs,
        ..
    } = *sides;
    let (lines, held_across) = explain::not_explaining(
        snapshot,
        analysis,
        periods,
        points,
        (period.run, current.run),
        &mut diff.changes,
    );
    diff.not_explaining = lines;
    let evidence = Evidence {
        metrics: &diff.metrics,
        before_period: describe(stand_in, period),
        after_period: describe(after, current),
        capacity: (capacity(runs.0), capacity(runs.1)),
        prefill_budget: (prefill_budget(runs.0), prefill_budget(runs.1)),
        layers: layers(runs.0, runs.1),
        bands: load_bands((points, period), (points, current)),
        held_across,
        shape: super::shape::shape_of((snapshot, snapshot), (Some(before), Some(after))),
        field: String::from(VERDICT_FIELD),
    };
    let mut verdict = verdict::judge(&mut diff.changes, &evidence);
    verdict.load.benchmarks = measured(snapshot, analysis, (period.run, current.run));
    if matches!(
        verdict.conclusion,
        Conclusion::Cause | Conclusion::Unexplained
    ) {
        verdict.restore = Some(verdict::restore(snapshot, before, after, &diff.changes));
    }
    diff.verdict = Some(verdict);
}

/// A run compared, and why it was chosen.
fn compared(
    label: &str,
    period: &RunPeriod,
    launch: &LaunchConfig,
    run: Option<&Run>,
    why: &str,
) -> probe_model::ComparedPeriod {
    probe_model::ComparedPeriod {
        label: label.to_string(),
        start: period.start,
        end: period.end,
        run_start: run.and_then(|r| r.start.at).or(Some(period.start)),
        launch: evidence_label(launch),
        why: why.to_string(),
    }
}

/// The previous launch's own period, else the newest earlier period with metrics (of a launch
/// with another configuration when the previous launch never ran here).
fn earlier_period_with_metrics<'p>(
    analysis: &Analysis,
    periods: &'p [RunPeriod],
    points: &ServerPoints,
    sides: &Sides<'_>,
) -> Option<(&'p RunPeriod, PeriodStats)> {
    let previous_start = periods
        .iter()
        .rev()
        .find(|p| p.launch == sides.previous && p.start < sides.current.start)
        .map(|p| p.start);
    periods
        .iter()
        .rev()
        .filter(|p| {
            p.start < sides.current.start
                && match previous_start {
                    Some(start) => p.start <= start,
                    None => analysis
                        .timeline
                        .launches
                        .get(p.launch)
                        .is_some_and(|l| !probe_launch::same_configuration(l, sides.after)),
                }
        })
        .find_map(|period| {
            let stats = period_metrics(points, period);
            (!stats.metrics.is_empty()).then_some((period, stats))
        })
}
