//! Log metrics by launch period: "70 tok/s last week, now 40".
//!
//! Each run of a server lasts from its start to the next start of the same server (the timeline's
//! run boundaries). A metric point belongs to the run that was up when it was logged, so the
//! running launch and the previous one can be compared on what they did, next to how they were
//! configured.

use std::collections::{BTreeMap, BTreeSet};

use probe_model::{
    Change, ChangeKind, LaunchConfig, LaunchDiff, MetricComparison, MetricReport, MetricSummary,
    RunMetrics, Snapshot, SourceKind, Timeline, UnixTime,
};
use serde_json::Value;

use crate::compare::{compare_launches, launch_label, same_server};
use crate::impact::{Area, Subject, change_for, rank};
use crate::launch::evidence_label;

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

/// One run of a server on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPeriod {
    /// Index into [`Timeline::launches`].
    pub launch: usize,
    pub start: UnixTime,
    /// The next start of the same server; `None` for the last run.
    pub end: Option<UnixTime>,
}

/// The runs of the server `launch` belongs to, oldest first, each up to the next one's start.
pub fn run_periods(snapshot: &Snapshot, timeline: &Timeline, launch: usize) -> Vec<RunPeriod> {
    let Some(server) = timeline.launches.get(launch) else {
        return Vec::new();
    };
    let mut starts: Vec<(UnixTime, usize)> = timeline
        .events
        .iter()
        .filter_map(|event| {
            let index = event.launch?;
            let candidate = timeline.launches.get(index)?;
            let at = event.time.at?;
            (index == launch || same_server(snapshot, candidate, server)).then_some((at, index))
        })
        .collect();
    starts.sort();
    starts.dedup_by_key(|(at, _)| *at);
    let ends: Vec<Option<UnixTime>> = starts
        .iter()
        .skip(1)
        .map(|(at, _)| Some(*at))
        .chain(std::iter::once(None))
        .collect();
    starts
        .into_iter()
        .zip(ends)
        .map(|((start, launch), end)| RunPeriod { launch, start, end })
        .collect()
}

/// Whether a log belongs to the server of `server`: named by one of its launches (the start-up
/// lines it holds, the file the launch writes to, the unit's journal), or the only server there.
fn log_of_server(
    snapshot: &Snapshot,
    timeline: &Timeline,
    server: &LaunchConfig,
    location: &str,
) -> bool {
    let launches: Vec<&LaunchConfig> = timeline
        .launches
        .iter()
        .filter(|l| std::ptr::eq(*l, server) || same_server(snapshot, l, server))
        .collect();
    if launches.len() == timeline.launches.len() {
        return true;
    }
    let as_evidence = format!("log:{location}");
    let as_unit = format!("unit:{location}");
    launches.iter().any(|l| {
        (l.source.kind == SourceKind::Log && l.source.location.trim() == location)
            || l.source.location.trim() == as_unit
            || l.source
                .also_seen_in
                .iter()
                .any(|e| *e == as_evidence || *e == as_unit)
            || l.log_files.iter().any(|f| f == location)
    })
}

/// Every metric point of the server's logs, by metric name: (time, value), deduplicated (the
/// journal and a file may hold the same lines).
fn server_points(snapshot: &Snapshot, timeline: &Timeline, server: &LaunchConfig) -> ServerPoints {
    let mut points: BTreeMap<String, (String, BTreeSet<(UnixTime, u64)>)> = BTreeMap::new();
    for log in &snapshot.logs {
        if !log_of_server(snapshot, timeline, server, log.location.trim()) {
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

fn summary(points: &[(UnixTime, f64)]) -> Option<MetricSummary> {
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
type ServerPoints = BTreeMap<String, (String, Vec<(UnixTime, f64)>)>;

type PeriodMetrics = BTreeMap<String, (String, MetricSummary)>;

fn period_metrics(points: &ServerPoints, period: &RunPeriod) -> PeriodMetrics {
    points
        .iter()
        .filter_map(|(name, (unit, values))| {
            let inside: Vec<(UnixTime, f64)> = values
                .iter()
                .copied()
                .filter(|(t, _)| *t >= period.start && period.end.is_none_or(|end| *t < end))
                .collect();
            summary(&inside).map(|s| (name.clone(), (unit.clone(), s)))
        })
        .collect()
}

fn rounded(value: f64) -> Value {
    let rounded = (value * 100.0).round() / 100.0;
    serde_json::Number::from_f64(rounded)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// `2026-11-19 07:45 UTC` (civil date from days since the epoch; no I/O, no time zone data).
fn utc(time: UnixTime) -> String {
    let days = time.div_euclid(86_400);
    let seconds = time.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        seconds / 3_600,
        seconds % 3_600 / 60
    )
}

fn describe(launch: &LaunchConfig, period: &RunPeriod) -> String {
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
            if let Some((mut change, volatile)) = change_for(&subject, format!("metric:{name}"))
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
    (comparisons, changes)
}

/// The running launch against the previous launch of the same server (the timeline's `running`
/// and `previous` events), with the metrics of the period each ran: when the previous launch
/// logged no metrics, the most recent earlier run that did stands in for it, and
/// [`LaunchDiff::metrics_note`] says which.
pub fn previous_launch_diff(snapshot: &Snapshot, timeline: &Timeline) -> Option<LaunchDiff> {
    let running = timeline
        .events
        .iter()
        .find(|event| event.running && event.launch.is_some())?
        .launch?;
    let previous = timeline
        .events
        .iter()
        .find(|event| event.previous)
        .and_then(|event| event.launch)?;
    let after = timeline.launches.get(running)?;
    let before = timeline.launches.get(previous)?;
    let mut diff = compare_launches(before, after);

    let periods = run_periods(snapshot, timeline, running);
    let points = server_points(snapshot, timeline, after);
    if points.is_empty() {
        return Some(diff);
    }
    let Some(current) = periods.iter().rev().find(|p| p.launch == running) else {
        return Some(diff);
    };
    let after_metrics = period_metrics(&points, current);
    if after_metrics.is_empty() {
        diff.metrics_note = Some(format!(
            "no metrics logged since {} started",
            evidence_label(after)
        ));
        return Some(diff);
    }
    // The previous launch's own run, else the newest earlier run with metrics.
    let previous_start = periods
        .iter()
        .find(|p| p.launch == previous)
        .map(|p| p.start);
    let candidates = periods.iter().rev().filter(|p| {
        p.start < current.start
            && match previous_start {
                Some(start) => p.start <= start,
                None => timeline
                    .launches
                    .get(p.launch)
                    .is_some_and(|l| !crate::compare::same_configuration(l, after)),
            }
    });
    let mut found = None;
    for period in candidates {
        let metrics = period_metrics(&points, period);
        if !metrics.is_empty() {
            found = Some((period, metrics));
            break;
        }
    }
    let Some((period, before_metrics)) = found else {
        diff.metrics_note = Some(format!(
            "no metrics logged while {} or an earlier launch ran",
            evidence_label(before)
        ));
        return Some(diff);
    };
    let stand_in = timeline.launches.get(period.launch)?;
    let before_label = evidence_label(stand_in);
    let after_label = evidence_label(after);
    let (comparisons, changes) =
        compare_periods(&before_metrics, &after_metrics, &before_label, &after_label);
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
    diff.metrics = comparisons;
    diff.changes.extend(changes);
    rank(&mut diff.changes);
    Some(diff)
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
    for log in &snapshot.logs {
        let location = log.location.trim();
        if sources.contains(&location) || !log_of_server(snapshot, timeline, server, location) {
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
/// runs of the same server that logged metrics, newest first. Metrics in [`PREFERRED`] order.
pub fn metrics_by_run(snapshot: &Snapshot, timeline: &Timeline, earlier: usize) -> Vec<RunMetrics> {
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
        let periods = run_periods(snapshot, timeline, running);
        let Some(current) = periods.iter().rev().find(|p| p.launch == running) else {
            continue;
        };
        let before = periods
            .iter()
            .rev()
            .filter(|p| p.start < current.start)
            .map(|p| (p, period_metrics(&points, p)))
            .filter(|(_, metrics)| !metrics.is_empty())
            .take(earlier);
        let runs = std::iter::once((current, period_metrics(&points, current))).chain(before);
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
    out
}

/// Sort key of a metric name: the preferred metrics first, in their order, then by name.
fn preferred_order(name: &str) -> (usize, String) {
    let position = PREFERRED.iter().position(|p| *p == name);
    (position.unwrap_or(PREFERRED.len()), name.to_string())
}
