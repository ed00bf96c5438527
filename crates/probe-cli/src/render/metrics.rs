//! Metric lines: a host report's metrics per log and per run, and one compared metric as a line.

use probe_model::{HostReport, MetricComparison, MetricReport};

use super::doc::{Doc, Tone};
use super::format_time;

/// Log metrics, by run where runs are known, else by log.
pub(super) fn metrics_section(doc: &mut Doc, report: &HostReport) {
    if !report.metrics_by_run.is_empty() {
        metrics_by_run(doc, &report.metrics_by_run);
        // Logs with metrics in none of those runs (another server's, or undated).
        let shown: Vec<&str> = report
            .metrics_by_run
            .iter()
            .flat_map(|run| run.metrics.iter())
            .flat_map(|metric| metric.source.split(", "))
            .collect();
        let others: Vec<&MetricReport> = report
            .metrics
            .iter()
            .filter(|metric| !shown.contains(&metric.source.as_str()))
            .collect();
        if !others.is_empty() {
            doc.line(Tone::Plain, "  other logs:");
            metrics_by_log(doc, &others);
        }
    } else if !report.metrics.is_empty() {
        doc.heading(2, "Log metrics");
        let all: Vec<&MetricReport> = report.metrics.iter().collect();
        metrics_by_log(doc, &all);
    }
}

/// Log metrics one row per metric of each log (when no run of a running server holds them).
fn metrics_by_log(doc: &mut Doc, metrics: &[&MetricReport]) {
    let rows = metrics
        .iter()
        .map(|metric| {
            let s = &metric.summary;
            let range = match (s.first_time, s.last_time) {
                (Some(first), Some(last)) => {
                    format!("{} .. {}", format_time(first), format_time(last))
                }
                _ => "no timestamps".into(),
            };
            (
                Tone::Plain,
                vec![
                    metric.name.clone(),
                    format!("{} {}", number(s.mean), metric.unit),
                    format!("{} .. {}", number(s.min), number(s.max)),
                    number(s.last),
                    s.count.to_string(),
                    range,
                    metric.source.clone(),
                ],
            )
        })
        .collect();
    doc.table(
        [
            "metric",
            "mean",
            "min .. max",
            "last",
            "samples",
            "time range",
            "log",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    );
}

/// "Log metrics" by run: the running run, then earlier runs newest first, each with its launch
/// and time range, one row per metric.
fn metrics_by_run(doc: &mut Doc, runs: &[probe_model::RunMetrics]) {
    doc.heading(2, "Log metrics by run");
    for run in runs {
        let since = run.start.map(format_time);
        let when = match (since, run.end.map(format_time)) {
            (Some(start), _) if run.running => format!("running now, since {start}"),
            (Some(start), Some(end)) => format!("{start} .. {end}"),
            (Some(start), None) => format!("since {start}"),
            (None, _) => "time unknown".into(),
        };
        let title = if run.running {
            "running run"
        } else {
            "earlier run"
        };
        doc.line(Tone::Plain, format!("  {title}: {} ({when})", run.launch));
        if run.metrics.is_empty() {
            doc.line(Tone::Dim, "    no metrics logged in this run");
            continue;
        }
        if let Some(coverage) = coverage(run) {
            doc.line(Tone::Dim, coverage);
        }
        let rows = run
            .metrics
            .iter()
            .map(|metric| {
                let s = &metric.summary;
                (
                    Tone::Plain,
                    vec![
                        metric.name.clone(),
                        format!("{} {}", number(s.mean), metric.unit),
                        format!("{} .. {}", number(s.min), number(s.max)),
                        number(s.last),
                        s.count.to_string(),
                        metric.source.clone(),
                    ],
                )
            })
            .collect();
        doc.table(
            ["metric", "mean", "min .. max", "last", "samples", "log"]
                .map(String::from)
                .to_vec(),
            rows,
        );
    }
}

/// From when to when the run's first metric has samples, and how many: what the comparison of
/// this run stands on (a log read over its whole retention keeps them spread over the run).
fn coverage(run: &probe_model::RunMetrics) -> Option<String> {
    let metric = run.metrics.first()?;
    let s = &metric.summary;
    let (first, last) = (s.first_time?, s.last_time?);
    Some(format!(
        "    {} samples of {} from {} to {}",
        s.count,
        metric.name,
        format_time(first),
        format_time(last)
    ))
}

pub(super) fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e12 {
        format!("{value:.0}")
    } else if value.abs() >= 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    }
}

/// A relative change as a signed percentage at `decimals` places. One that rounds to zero is
/// `+0%` whatever its sign: two means a few ulps apart (the same values, a different count of
/// them) are no fall, and `-0.0%` said one.
pub(super) fn signed_percent(change: f64, decimals: usize) -> String {
    let percent = change * 100.0;
    let shown = format!("{percent:.decimals$}");
    let zero = shown
        .trim_start_matches('-')
        .chars()
        .all(|c| c == '0' || c == '.');
    let percent = if zero { 0.0 } else { percent };
    format!("{percent:+.decimals$}%")
}

/// `gen_throughput 1025 -> 438 tok/s (-57%)`.
pub(super) fn metric_line(metric: &MetricComparison) -> Option<(Tone, String)> {
    let (before, after) = (metric.before.as_ref()?, metric.after.as_ref()?);
    let change = metric
        .change
        .map(|c| format!(" ({})", signed_percent(c, 0)))
        .unwrap_or_default();
    let worse = metric.change.is_some_and(|c| {
        c <= -0.2 && (metric.name.contains("throughput") || metric.name.starts_with("accept"))
    });
    Some((
        if worse { Tone::Bad } else { Tone::Plain },
        format!(
            "  {} {} -> {} {}{change}",
            metric.name,
            number(before.mean),
            number(after.mean),
            metric.unit
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_percent_table() {
        let cases: &[(f64, usize, &str)] = &[
            (-0.25, 1, "-25.0%"),
            (0.5, 0, "+50%"),
            (-1e-17, 1, "+0.0%"),
            (-0.0004, 1, "+0.0%"),
            (-0.0006, 1, "-0.1%"),
            (-0.004, 0, "+0%"),
            (-0.006, 0, "-1%"),
            (0.0, 1, "+0.0%"),
        ];
        for (change, decimals, expected) in cases {
            assert_eq!(signed_percent(*change, *decimals), *expected, "{change}");
        }
    }
}
