//! Metrics per run as small SVG charts over time: for each metric, each run's samples as a band
//! (min to max, over the time they were logged) with the mean drawn across it. The gaps between
//! runs, and the idle ends of a run with no samples, stay empty; the periods a comparison
//! compares are shaded.

use std::fmt::Write;

use probe_model::MetricReport;

use super::escape;
use super::timeline::{LEFT, Scale, WIDTH};

/// The metrics charted, in this order, when a run logged them: throughput, accept length, KV
/// or token usage, running requests.
pub const CHARTED: &[&str] = &[
    "gen_throughput",
    "accept_len",
    "kv_cache_usage",
    "token_usage",
    "running_reqs",
];
const HEIGHT: f64 = 130.0;
const TOP: f64 = 10.0;
const PLOT: f64 = 90.0;

/// One run's period and its metrics.
#[derive(Debug, Clone)]
pub struct Period<'a> {
    pub label: String,
    pub start: i64,
    pub end: i64,
    pub running: bool,
    /// Shaded: a period a comparison on this page compares.
    pub compared: bool,
    pub metrics: &'a [MetricReport],
}

/// One figure per charted metric that any period logged.
pub fn charts(periods: &[Period<'_>]) -> String {
    let Some(scale) = Scale::of(periods.iter().flat_map(|p| [p.start, p.end])) else {
        return String::new();
    };
    let mut out = String::new();
    for name in CHARTED {
        let series: Vec<(&Period<'_>, &MetricReport)> = periods
            .iter()
            .filter_map(|period| {
                period
                    .metrics
                    .iter()
                    .find(|metric| metric.name == *name && metric.summary.count > 0)
                    .map(|metric| (period, metric))
            })
            .collect();
        if let Some((_, first)) = series.first() {
            out.push_str(&chart(name, &first.unit, &scale, periods, &series));
        }
    }
    out
}

fn chart(
    name: &str,
    unit: &str,
    scale: &Scale,
    periods: &[Period<'_>],
    series: &[(&Period<'_>, &MetricReport)],
) -> String {
    let top = series
        .iter()
        .map(|(_, metric)| metric.summary.max)
        .filter(|value| value.is_finite())
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let y = |value: f64| TOP + PLOT - (value.clamp(0.0, top) / top) * PLOT;
    let mut out = String::new();
    let _ = write!(
        out,
        "<figure class=\"metric\" data-metric=\"{}\"><svg viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         role=\"img\" aria-label=\"{}\" xmlns=\"http://www.w3.org/2000/svg\">",
        escape::text(name),
        escape::text(name)
    );
    for period in periods.iter().filter(|period| period.compared) {
        let x1 = scale.x(period.start);
        let x2 = scale.x(period.end).max(x1 + 1.0);
        let _ = write!(
            out,
            "<rect class=\"compared\" x=\"{x1:.1}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{PLOT}\">\
             <title>compared period: {}</title></rect>",
            x2 - x1,
            escape::text(&period.label)
        );
    }
    for (period, metric) in series {
        let summary = &metric.summary;
        let from = summary.first_time.unwrap_or(period.start);
        let to = summary.last_time.unwrap_or(period.end);
        let x1 = scale.x(from);
        let x2 = scale.x(to).max(x1 + 2.0);
        let (low, high) = (y(summary.max), y(summary.min));
        let mean = y(summary.mean);
        let _ = write!(
            out,
            "<g class=\"series\"><title>{}{}: mean {} {}, p50 {}, min {}, max {} ({} samples)</title>\
             <rect class=\"band\" x=\"{x1:.1}\" y=\"{low:.1}\" width=\"{:.1}\" height=\"{:.1}\"/>\
             <line class=\"mean\" x1=\"{x1:.1}\" y1=\"{mean:.1}\" x2=\"{x2:.1}\" y2=\"{mean:.1}\"/>\
             <text x=\"{x1:.1}\" y=\"{:.1}\">{}</text></g>",
            escape::text(&period.label),
            if period.running { " (running)" } else { "" },
            number(summary.mean),
            escape::text(unit),
            number(summary.p50),
            number(summary.min),
            number(summary.max),
            summary.count,
            x2 - x1,
            (high - low).max(1.0),
            (mean - 3.0).max(TOP + 9.0),
            number(summary.mean)
        );
    }
    let _ = write!(
        out,
        "<text x=\"4\" y=\"{:.1}\">{}</text><text class=\"tick\" x=\"4\" y=\"{:.1}\">{} {}</text>\
         <text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">0</text>",
        TOP + 14.0,
        escape::text(name),
        TOP + 30.0,
        number(top),
        escape::text(unit),
        LEFT - 4.0,
        TOP + PLOT
    );
    scale.axis(&mut out, TOP + PLOT + 4.0);
    out.push_str("</svg></figure>\n");
    out
}

/// A value as the charts label it: at most two decimals.
fn number(value: f64) -> String {
    if !value.is_finite() {
        return "?".into();
    }
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::MetricSummary;

    fn metric(name: &str, mean: f64, from: i64, to: i64) -> MetricReport {
        MetricReport {
            name: name.into(),
            unit: "tok/s".into(),
            source: "log".into(),
            summary: MetricSummary {
                count: 10,
                min: mean / 2.0,
                max: mean * 1.5,
                mean,
                p50: mean,
                p90: mean,
                last: mean,
                first_time: Some(from),
                last_time: Some(to),
            },
        }
    }

    #[test]
    fn one_chart_per_metric_with_a_band_per_run_and_the_compared_periods_shaded() {
        let before = [metric("gen_throughput", 80.0, 1_100, 1_800)];
        let after = [
            metric("gen_throughput", 40.0, 3_100, 3_500),
            metric("unknown_metric", 1.0, 3_100, 3_500),
        ];
        let periods = [
            Period {
                label: "pid:1".into(),
                start: 1_000,
                end: 2_000,
                running: false,
                compared: true,
                metrics: &before,
            },
            Period {
                label: "pid:2".into(),
                start: 3_000,
                end: 4_000,
                running: true,
                compared: true,
                metrics: &after,
            },
        ];
        let out = charts(&periods);
        assert_eq!(out.matches("<figure").count(), 1, "{out}");
        assert_eq!(out.matches("class=\"band\"").count(), 2, "{out}");
        assert_eq!(out.matches("class=\"compared\"").count(), 2, "{out}");
        assert!(out.contains("mean 80 tok/s"), "{out}");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(number(f64::NAN), "?");
    }
}
