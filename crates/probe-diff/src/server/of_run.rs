//! The server's own view as evidence of the run it was asked during: its effective
//! configuration next to the launch, and its lifetime counters, which also join the run's
//! metrics with their source named (`server /metrics, lifetime`).

use probe_model::{
    LifetimeValue, MetricReport, MetricSummary, Run, RunMetrics, RunServer, Snapshot, Timeline,
};

use super::{effective, lifetime_of};

/// How a lifetime value names its source among a run's metrics.
pub const LIFETIME_SOURCE: &str = "server /metrics, lifetime";
/// How a value of the seconds between two scrapes names its source.
pub const NOW_SOURCE: &str = "server /metrics, now";

/// The source a value names: the lifetime, or the window between two scrapes.
pub fn source_of(value: &LifetimeValue) -> &'static str {
    if value.window_s.is_some() {
        NOW_SOURCE
    } else {
        LIFETIME_SOURCE
    }
}

/// Fills `server` of the running runs whose launch a server reading was asked for.
pub fn annotate_runs(snapshot: &Snapshot, timeline: &Timeline, runs: &mut [Run]) {
    for run in runs.iter_mut().filter(|r| r.running) {
        let Some(reading) = snapshot.servers.iter().find(|s| s.launch == run.launch) else {
            continue;
        };
        let launch = timeline.launches.get(run.launch_index);
        let lifetime = lifetime_of(reading);
        run.server = Some(RunServer {
            evidence: reading.evidence.clone(),
            status: reading.status,
            version: reading.version.clone(),
            effective: launch.map(|l| effective(reading, l)).unwrap_or_default(),
            lifetime,
            uptime_s: reading.uptime_s,
            asked_at: reading.asked_at,
        });
    }
}

fn lifetime_metric(run: &RunServer, value: &LifetimeValue) -> MetricReport {
    let started = match (run.asked_at, run.uptime_s, value.window_s) {
        (Some(at), _, Some(window)) => Some(at - window.ceil() as i64),
        (Some(at), Some(up), None) => Some(at - i64::try_from(up).unwrap_or(0)),
        _ => None,
    };
    MetricReport {
        name: value.name.clone(),
        unit: value.unit.clone(),
        source: format!("{} ({}: {})", source_of(value), run.evidence, value.source),
        summary: one_value(value.value, started, run.asked_at),
    }
}

/// A summary of one reading: every statistic is `value`.
pub(crate) fn one_value(
    value: f64,
    first: Option<probe_model::UnixTime>,
    last: Option<probe_model::UnixTime>,
) -> MetricSummary {
    MetricSummary {
        count: 1,
        min: value,
        max: value,
        mean: value,
        p50: value,
        p90: value,
        last: value,
        first_time: first,
        last_time: last,
    }
}

/// Adds the lifetime values of each running run's server to that run's metrics (a run without
/// log metrics gets an entry of its own, first).
pub fn join_lifetime(runs: &[Run], metrics: &mut Vec<RunMetrics>) {
    for run in runs.iter().filter(|r| r.running) {
        let Some(server) = run.server.as_ref().filter(|s| !s.lifetime.is_empty()) else {
            continue;
        };
        let joined = server.lifetime.iter().map(|v| lifetime_metric(server, v));
        match metrics
            .iter_mut()
            .find(|m| m.running && m.launch == run.launch)
        {
            Some(entry) => entry.metrics.extend(joined),
            None => metrics.insert(
                0,
                RunMetrics {
                    launch: run.launch.clone(),
                    running: true,
                    start: run.start.at,
                    end: None,
                    metrics: joined.collect(),
                },
            ),
        }
    }
}
