//! Log metrics by launch period: "70 tok/s last week, now 40".
//!
//! Each run of a server lasts from its start to its stop ([`crate::run`]: the journal,
//! `systemctl show`, else the next start of the same server). A metric point belongs to the run
//! that was up when it was logged, idle samples left out, so the running launch and the previous
//! one can be compared on what they did (symptoms), next to how they were configured and what
//! was in effect (causes).

use std::collections::{BTreeMap, BTreeSet};

use probe_model::{
    Change, ChangeKind, LaunchConfig, LaunchDiff, MetricComparison, MetricReport, MetricSummary,
    RunMetrics, Snapshot, Timeline, UnixTime,
};
use probe_model::{ChangeKey, KeyArea};
use serde_json::Value;

use crate::analysis::Analysis;
use crate::compare::compare_launches;
use crate::impact::{Area, Subject, change_for};
use crate::number::number;
use probe_launch::evidence_label;
use probe_launch::same_server;
use probe_model::civil::utc_minute as utc;

/// Metrics compared first, in this order; others present in both periods follow by name.
const PREFERRED: &[&str] = &[
    "gen_throughput",
    "generation_throughput",
    "accept_len",
    "accept_rate",
    "token_usage",
    "kv_cache_usage",
    "running_reqs",
    "queue_reqs",
    "waiting_reqs",
    "prompt_throughput",
    "input_throughput",
];

/// One run of a server: the window its metric points are taken from.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPeriod {
    /// Index into [`Timeline::launches`].
    pub launch: usize,
    /// Index into [`Analysis::runs`].
    pub run: usize,
    pub start: UnixTime,
    /// When it stopped (the journal, `systemctl show`), else the next start of the same server;
    /// `None` while it runs.
    pub end: Option<UnixTime>,
}

/// The runs of the server `launch` belongs to, oldest first.
pub fn run_periods(snapshot: &Snapshot, analysis: &Analysis, launch: usize) -> Vec<RunPeriod> {
    let timeline = &analysis.timeline;
    let Some(server) = timeline.launches.get(launch) else {
        return Vec::new();
    };
    analysis
        .runs
        .iter()
        .enumerate()
        .filter(|(_, run)| {
            run.launch_index == launch
                || timeline
                    .launches
                    .get(run.launch_index)
                    .is_some_and(|l| same_server(snapshot, l, server))
        })
        .filter_map(|(index, run)| {
            Some(RunPeriod {
                launch: run.launch_index,
                run: index,
                start: run.start.at?,
                end: run.end.as_ref().and_then(|end| end.at),
            })
        })
        .collect()
}

/// Every metric point of the server's logs, by metric name: (time, value), deduplicated (the
/// journal and a file may hold the same lines).
pub(crate) fn server_points(
    snapshot: &Snapshot,
    timeline: &Timeline,
    server: &LaunchConfig,
) -> ServerPoints {
    let mut points: BTreeMap<String, (String, BTreeSet<(UnixTime, u64)>)> = BTreeMap::new();
    let launches = probe_launch::ServerLaunches::of(snapshot, timeline, server);
    for log in &snapshot.logs {
        if !crate::rotated::names_log(snapshot, &launches, log.location.trim()) {
            continue;
        }
        for series in &log.metrics {
            let entry = points
                .entry(series.name.clone())
                .or_insert_with(|| (series.unit.clone(), BTreeSet::new()));
            for (time, value) in &series.points {
                if let Some(time) = time
                    && value.is_finite()
                {
                    entry.1.insert((*time, value.to_bits()));
                }
            }
        }
    }
    points
        .into_iter()
        .map(|(name, (unit, set))| {
            let values = set
                .into_iter()
                .map(|(time, bits)| (time, f64::from_bits(bits)))
                .collect();
            (name, (unit, values))
        })
        .collect()
}

pub(crate) fn summary(points: &[(UnixTime, f64)]) -> Option<MetricSummary> {
    let first = points.first()?;
    let last = points.last()?;
    let mut values: Vec<f64> = points.iter().map(|(_, v)| *v).collect();
    values.sort_by(f64::total_cmp);
    let count = values.len();
    let at = |q: f64| {
        let index = ((count as f64 - 1.0) * q).round() as usize;
        values.get(index).copied().unwrap_or_default()
    };
    Some(MetricSummary {
        count: count as u64,
        min: values.first().copied().unwrap_or_default(),
        max: values.last().copied().unwrap_or_default(),
        mean: values.iter().sum::<f64>() / count as f64,
        p50: at(0.5),
        p90: at(0.9),
        last: last.1,
        first_time: Some(first.0),
        last_time: Some(last.0),
    })
}

/// Metric name -> (unit, points in time order).
pub(crate) type ServerPoints = BTreeMap<String, (String, Vec<(UnixTime, f64)>)>;

pub(crate) type PeriodMetrics = BTreeMap<String, (String, MetricSummary)>;

/// Times at which the server was idle: `running_reqs` 0, or throughput 0 where the line gives no
/// running count (vLLM logs `Avg generation throughput: 0.0 tokens/s, Running: 0 reqs` after
/// every busy stretch).
pub(crate) fn idle_times(points: &ServerPoints, period: &RunPeriod) -> BTreeSet<UnixTime> {
    let inside = |t: &UnixTime| *t >= period.start && period.end.is_none_or(|end| *t < end);
    let series = |name: &str| {
        points
            .get(name)
            .map(|(_, values)| values.as_slice())
            .unwrap_or_default()
    };
    let running: BTreeMap<UnixTime, f64> = series("running_reqs")
        .iter()
        .filter(|(t, _)| inside(t))
        .copied()
        .collect();
    let mut idle: BTreeSet<UnixTime> = running
        .iter()
        .filter(|(_, v)| **v == 0.0)
        .map(|(t, _)| *t)
        .collect();
    for name in ["gen_throughput", "generation_throughput"] {
        for (t, v) in series(name) {
            if inside(t) && *v == 0.0 && !running.contains_key(t) {
                idle.insert(*t);
            }
        }
    }
    idle
}

/// The metrics of one run, idle samples left out, and how many samples were idle.
pub(crate) struct PeriodStats {
    pub(crate) metrics: PeriodMetrics,
    pub(crate) idle: usize,
}

pub(crate) fn period_metrics(points: &ServerPoints, period: &RunPeriod) -> PeriodStats {
    let idle = idle_times(points, period);
    let metrics = points
        .iter()
        .filter_map(|(name, (unit, values))| {
            let inside: Vec<(UnixTime, f64)> = values
                .iter()
                .copied()
                .filter(|(t, _)| *t >= period.start && period.end.is_none_or(|end| *t < end))
                .filter(|(t, _)| !idle.contains(t))
                .collect();
            summary(&inside).map(|s| (name.clone(), (unit.clone(), s)))
        })
        .collect();
    PeriodStats {
        metrics,
        idle: idle.len(),
    }
}

fn rounded(value: f64) -> Value {
    let rounded = (value * 100.0).round() / 100.0;
    serde_json::Number::from_f64(rounded)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

pub(crate) fn describe(launch: &LaunchConfig, period: &RunPeriod) -> String {
    let mut text = evidence_label(launch);
    text.push_str(&format!(" (up from {}", utc(period.start)));
    match period.end {
        Some(end) => text.push_str(&format!(" to {})", utc(end))),
        None => text.push_str(", running now)"),
    }
    text
}

/// Compares the metrics of two periods: comparisons for every metric both have, and one ranked
/// change per metric the impact rules (`configs/impact.toml`, area `metric`) care about.
pub fn compare_periods(
    before: &PeriodMetrics,
    after: &PeriodMetrics,
    before_label: &str,
    after_label: &str,
) -> (Vec<MetricComparison>, Vec<Change>) {
    let mut names: Vec<&String> = before.keys().filter(|n| after.contains_key(*n)).collect();
    names.sort_by_key(|name| preferred_order(name));
    let mut comparisons = Vec::new();
    let mut changes = Vec::new();
    for name in names {
        let (Some((unit, b)), Some((_, a))) = (before.get(name), after.get(name)) else {
            continue;
        };
        let change = (b.mean != 0.0).then(|| a.mean / b.mean - 1.0);
        if change.is_some() {
            let before_value = rounded(b.mean);
            let after_value = rounded(a.mean);
            let subject = Subject::new(Area::Metric, name, ChangeKind::Changed)
                .values(Some(&before_value), Some(&after_value));
            if let Some((mut change, volatile)) =
                change_for(&subject, ChangeKey::new(KeyArea::Metric, name).to_string())
                && !volatile
            {
                change.note = Some(format!(
                    "{} samples while {before_label} ran, {} while {after_label} ran ({unit})",
                    b.count, a.count
                ));
                changes.push(change);
            }
        }
        comparisons.push(MetricComparison {
            name: name.clone(),
            unit: unit.clone(),
            before: Some(b.clone()),
            after: Some(a.clone()),
            change,
        });
    }
    comparisons.extend(one_sided(before, after));
    (comparisons, changes)
}

/// The metrics only one of two periods logged (an accept length where speculative decoding
/// ran on one side only), after the compared ones: no change is computed for them, but a test
/// may read the side that has them.
fn one_sided(before: &PeriodMetrics, after: &PeriodMetrics) -> Vec<MetricComparison> {
    let names = before
        .keys()
        .filter(|n| !after.contains_key(*n))
        .chain(after.keys().filter(|n| !before.contains_key(*n)));
    let mut out: Vec<MetricComparison> = names
        .filter_map(|name| {
            let (unit, _) = before.get(name).or_else(|| after.get(name))?;
            Some(MetricComparison {
                name: name.clone(),
                unit: unit.clone(),
                before: before.get(name).map(|(_, s)| s.clone()),
                after: after.get(name).map(|(_, s)| s.clone()),
                change: None,
            })
        })
        .collect();
    out.sort_by_key(|m| preferred_order(&m.name));
    out
}

/// Two launches compared, without the changes a start-up log line would invent: a log that
/// lists every value the engine resolved (`probe_launch::lists_resolved_values`) names options
/// that are unknown on the other side.
pub(crate) fn compare_launches_read(before: &LaunchConfig, after: &LaunchConfig) -> LaunchDiff {
    let mut diff = compare_launches(before, after);
    let before_is_log = probe_launch::lists_resolved_values(before);
    let after_is_log = probe_launch::lists_resolved_values(after);
    diff.changes.retain(|change| {
        let invented = (before_is_log && !after_is_log && change.kind == ChangeKind::Removed)
            || (after_is_log && !before_is_log && change.kind == ChangeKind::Added);
        !invented
            || change.parsed_key().is_speculative()
            || set_in_logged_environment(before, after, change)
    });
    diff
}

/// An option only an environment-listing start-up line shows (Ollama's `server config`),
/// logged away from its default: it was set there, and is unset on the other side (whose
/// environment was read whole), so it changed.
fn set_in_logged_environment(
    before: &LaunchConfig,
    after: &LaunchConfig,
    change: &probe_model::Change,
) -> bool {
    let (log, value) = match change.kind {
        ChangeKind::Removed => (before, change.before.as_ref()),
        ChangeKind::Added => (after, change.after.as_ref()),
        _ => return false,
    };
    let cat = probe_launch::catalog::catalog(log.engine, log.engine_version.as_deref());
    if cat.startup_args != probe_launch::catalog::StartupArgs::Environment {
        return false;
    }
    let Some(value) = value else { return false };
    let spec = cat.get(&change.key);
    match probe_launch::default_of(spec) {
        Some(default) => {
            !probe_launch::catalog::values_equal(value, &default, spec.map(|s| &s.kind))
        }
        None => false,
    }
}

/// Whether the two runs carried the same load: running requests and KV usage, and how many
/// idle samples were left out of the means.
pub(crate) fn load_note(
    comparisons: &[MetricComparison],
    idle_before: usize,
    idle_after: usize,
) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut unlike = false;
    for name in ["running_reqs", "token_usage", "kv_cache_usage"] {
        let Some(m) = comparisons.iter().find(|m| m.name == name) else {
            continue;
        };
        let (Some(b), Some(a)) = (&m.before, &m.after) else {
            continue;
        };
        let label = match name {
            "running_reqs" => "running requests",
            "token_usage" => "KV token usage",
            _ => "KV cache usage",
        };
        parts.push(format!("{label} {} -> {}", number(b.mean), number(a.mean)));
        if m.change.is_some_and(|c| c.abs() >= 0.25) {
            unlike = true;
        }
    }
    if idle_before + idle_after > 0 {
        parts.push(format!(
            "idle samples left out of the means: {idle_before} before, {idle_after} after"
        ));
    }
    if parts.is_empty() {
        return None;
    }
    let verdict = if unlike {
        "the load differs: throughput is not like for like"
    } else {
        "similar load: like for like"
    };
    Some(format!("load: {}; {verdict}", parts.join(", ")))
}

/// Throughput samples by running-request count, for each of two periods: the samples where the
/// engine logged both at the same time, idle ones left out.
pub(crate) fn load_bands(
    before: (&ServerPoints, &RunPeriod),
    after: (&ServerPoints, &RunPeriod),
) -> Vec<crate::verdict::Band> {
    let mut bands: BTreeMap<u32, crate::verdict::Band> = BTreeMap::new();
    for ((points, period), is_after) in [(before, false), (after, true)] {
        for (running, throughput) in paired_samples(points, period) {
            let band = bands
                .entry(running)
                .or_insert_with(|| crate::verdict::Band {
                    running,
                    ..crate::verdict::Band::default()
                });
            if is_after {
                band.after.push(throughput);
            } else {
                band.before.push(throughput);
            }
        }
    }
    bands.into_values().collect()
}

/// The run of the first server running in a snapshot, with its metrics (idle samples left
/// out): one side of `probe diff`'s verdict, so that two snapshots are compared run against run
/// and not on every line their logs ever held.
pub(crate) struct RunningSide {
    pub(crate) stats: PeriodStats,
    pub(crate) label: String,
    pub(crate) run: Option<probe_model::Run>,
    pub(crate) points: ServerPoints,
    pub(crate) period: RunPeriod,
}

pub(crate) fn running_side(snapshot: &Snapshot, analysis: &Analysis) -> Option<RunningSide> {
    let timeline = &analysis.timeline;
    let running = timeline
        .events
        .iter()
        .find(|e| e.running && e.launch.is_some())?
        .launch?;
    let server = timeline.launches.get(running)?;
    let periods = run_periods(snapshot, analysis, running);
    let period = periods.iter().rev().find(|p| p.launch == running)?.clone();
    let points = server_points(snapshot, timeline, server);
    let stats = period_metrics(&points, &period);
    if stats.metrics.is_empty() {
        return None;
    }
    Some(RunningSide {
        label: describe(server, &period),
        run: analysis.runs.get(period.run).cloned(),
        stats,
        points,
        period,
    })
}

/// The series of `points` whose names match `patterns`.
fn series<'a>(
    points: &'a ServerPoints,
    patterns: &'a [String],
) -> impl Iterator<Item = &'a Vec<(UnixTime, f64)>> + 'a {
    points
        .iter()
        .filter(|(name, _)| crate::verdict::named(patterns, name))
        .map(|(_, (_, values))| values)
}

/// (running requests, throughput) logged at the same time inside a period, idle ones left out.
fn paired_samples(points: &ServerPoints, period: &RunPeriod) -> Vec<(u32, f64)> {
    let inside = |t: &UnixTime| *t >= period.start && period.end.is_none_or(|end| *t < end);
    // The metric names are the verdict's (configs/verdict.toml), as its load comparison reads them.
    let config = crate::verdict::config();
    let names = &config.metrics;
    let Some(running) = series(points, &names.running).next() else {
        return Vec::new();
    };
    // A second in which the engine logged two running counts is ambiguous: left out.
    let mut by_time: BTreeMap<UnixTime, Option<f64>> = BTreeMap::new();
    for (t, v) in running.iter().filter(|(t, v)| inside(t) && *v > 0.0) {
        by_time
            .entry(*t)
            .and_modify(|seen| {
                if *seen != Some(*v) {
                    *seen = None;
                }
            })
            .or_insert(Some(*v));
    }
    let running: BTreeMap<UnixTime, f64> = by_time
        .into_iter()
        .filter_map(|(t, v)| Some((t, v?)))
        .collect();
    series(
        points,
        config.symptom_metrics(probe_model::SymptomKind::Throughput),
    )
    .flat_map(|values| values.iter())
    .filter(|(_, v)| *v > 0.0)
    .filter_map(|(t, v)| Some((running.get(t)?.round() as u32, *v)))
    .collect()
}

/// The logs of `server` with points of metric `name` inside `period`, comma-separated.
fn period_sources(
    snapshot: &Snapshot,
    timeline: &Timeline,
    server: &LaunchConfig,
    name: &str,
    period: &RunPeriod,
) -> String {
    let mut sources: Vec<&str> = Vec::new();
    let launches = probe_launch::ServerLaunches::of(snapshot, timeline, server);
    for log in &snapshot.logs {
        let location = log.location.trim();
        if sources.contains(&location) || !crate::rotated::names_log(snapshot, &launches, location)
        {
            continue;
        }
        let inside = log
            .metrics
            .iter()
            .filter(|series| series.name == name)
            .flat_map(|series| series.points.iter())
            .any(|(time, _)| {
                time.is_some_and(|t| t >= period.start && period.end.is_none_or(|end| t < end))
            });
        if inside {
            sources.push(location);
        }
    }
    sources.join(", ")
}

/// Log metrics by run of each running server: the running run, then up to `earlier` earlier
/// runs of the same server that logged metrics, newest first. Metrics in [`PREFERRED`] order;
/// idle samples are left out of the summaries.
pub fn metrics_by_run(snapshot: &Snapshot, analysis: &Analysis, earlier: usize) -> Vec<RunMetrics> {
    let timeline = &analysis.timeline;
    let mut out = Vec::new();
    let mut seen: Vec<usize> = Vec::new();
    for event in timeline.events.iter().filter(|e| e.running) {
        let Some(running) = event.launch else {
            continue;
        };
        if seen.contains(&running) {
            continue;
        }
        seen.push(running);
        let Some(server) = timeline.launches.get(running) else {
            continue;
        };
        let points = server_points(snapshot, timeline, server);
        if points.is_empty() {
            continue;
        }
        let periods = run_periods(snapshot, analysis, running);
        let Some(current) = periods.iter().rev().find(|p| p.launch == running) else {
            continue;
        };
        let before = periods
            .iter()
            .rev()
            .filter(|p| p.start < current.start)
            .map(|p| (p, period_metrics(&points, p).metrics))
            .filter(|(_, metrics)| !metrics.is_empty())
            .take(earlier);
        let runs =
            std::iter::once((current, period_metrics(&points, current).metrics)).chain(before);
        for (period, metrics) in runs {
            let Some(launch) = timeline.launches.get(period.launch) else {
                continue;
            };
            let mut names: Vec<&String> = metrics.keys().collect();
            names.sort_by_key(|name| preferred_order(name));
            let metrics = names
                .into_iter()
                .filter_map(|name| {
                    let (unit, summary) = metrics.get(name)?;
                    Some(MetricReport {
                        name: name.clone(),
                        unit: unit.clone(),
                        source: period_sources(snapshot, timeline, server, name, period),
                        summary: summary.clone(),
                    })
                })
                .collect();
            out.push(RunMetrics {
                launch: evidence_label(launch),
                running: period.launch == running && period.end.is_none(),
                start: Some(period.start),
                end: period.end,
                metrics,
            });
        }
    }
    crate::server::join_lifetime(&analysis.runs, &mut out);
    out
}

/// Sort key of a metric name: the preferred metrics first, in their order, then by name.
fn preferred_order(name: &str) -> (usize, String) {
    let position = PREFERRED.iter().position(|p| *p == name);
    (position.unwrap_or(PREFERRED.len()), name.to_string())
}
