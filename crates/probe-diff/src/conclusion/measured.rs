//! What benchmark results left on the host measured of a run: their latencies, throughput and
//! workload as metrics of the run's period (`ttft_p90 (bench)`, ...), trusted first for a
//! latency symptom (a known workload), and one line each for the report.

use probe_model::{BenchmarkResult, LatencyStats, MetricReport, RunMetrics, Snapshot, UnixTime};

use crate::analysis::Analysis;
use crate::periods::{PeriodMetrics, summary};

/// Where benchmark metrics say they come from.
const SOURCE: &str = " (bench)";

/// The metrics of the benchmark results attributed to run `run`, each a summary over the
/// results (its count is the number of results).
pub(crate) fn benchmark_metrics(
    snapshot: &Snapshot,
    analysis: &Analysis,
    run: usize,
) -> PeriodMetrics {
    let mut series: std::collections::BTreeMap<String, (String, Vec<(UnixTime, f64)>)> =
        std::collections::BTreeMap::new();
    for a in analysis.benchmarks.iter().filter(|a| a.run == Some(run)) {
        let Some(result) = snapshot.benchmarks.get(a.benchmark) else {
            continue;
        };
        let Some(date) = result.date else {
            continue;
        };
        for (name, unit, value) in values(result) {
            let entry = series
                .entry(format!("{name}{SOURCE}"))
                .or_insert_with(|| (unit.to_string(), Vec::new()));
            entry.1.push((date, value));
        }
    }
    series
        .into_iter()
        .filter_map(|(name, (unit, mut points))| {
            points.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
            Some((name, (unit, summary(&points)?)))
        })
        .collect()
}

/// Adds to each run of `metrics` (the host report's metrics by run) what the benchmark results
/// attributed to it measured, each metric naming the result files it came from.
pub(crate) fn join_benchmarks(
    snapshot: &Snapshot,
    analysis: &Analysis,
    metrics: &mut [RunMetrics],
) {
    for run_metrics in metrics.iter_mut() {
        let Some(index) = analysis
            .runs
            .iter()
            .position(|r| r.start.at == run_metrics.start && r.launch == run_metrics.launch)
        else {
            continue;
        };
        let mut files: Vec<&str> = analysis
            .benchmarks
            .iter()
            .filter(|a| a.run == Some(index))
            .filter_map(|a| snapshot.benchmarks.get(a.benchmark))
            .map(|r| r.file.as_str())
            .collect();
        files.sort_unstable();
        files.dedup();
        let source = files.join(", ");
        for (name, (unit, summary)) in benchmark_metrics(snapshot, analysis, index) {
            run_metrics.metrics.push(MetricReport {
                name,
                unit,
                source: source.clone(),
                summary,
            });
        }
    }
}

/// The numbers of one result, by metric name and unit.
fn values(r: &BenchmarkResult) -> Vec<(String, &'static str, f64)> {
    let mut out: Vec<(String, &'static str, f64)> = Vec::new();
    let mut latency = |what: &str, stats: &LatencyStats| {
        for (stat, value) in [
            ("mean", stats.mean),
            ("p50", stats.p50),
            ("p90", stats.p90),
            ("p99", stats.p99),
        ] {
            if let Some(v) = value.filter(|v| v.is_finite() && *v >= 0.0) {
                out.push((format!("{what}_{stat}"), "ms", v));
            }
        }
    };
    latency("ttft", &r.measured.ttft_ms);
    latency("tpot", &r.measured.tpot_ms);
    latency("itl", &r.measured.itl_ms);
    latency("e2e", &r.measured.e2e_ms);
    let w = &r.workload;
    let rate = match (w.request_rate, w.max_concurrency) {
        (Some(rate), _) => Some(("request_rate", "req/s", rate)),
        (None, Some(c)) => Some(("concurrency", "requests", c)),
        _ => None,
    };
    let scalars = [
        ("output_throughput", "tok/s", r.measured.output_throughput),
        ("input_len", "tokens", w.input_len),
        ("output_len", "tokens", w.output_len),
    ];
    for (name, unit, value) in scalars
        .into_iter()
        .chain(rate.map(|(n, u, v)| (n, u, Some(v))))
    {
        if let Some(v) = value.filter(|v| v.is_finite() && *v >= 0.0) {
            out.push((name.to_string(), unit, v));
        }
    }
    out
}

/// The benchmark results on the host that measured a run: the earlier one compared, the running
/// one, or another (named by its start).
pub(crate) fn measured(
    snapshot: &Snapshot,
    analysis: &Analysis,
    (earlier, now): (usize, usize),
) -> Vec<String> {
    // Oldest first, whatever order the host listed the files in.
    let mut attributed = analysis.benchmarks.clone();
    attributed.sort_by_key(|a| {
        let result = snapshot.benchmarks.get(a.benchmark);
        (result.and_then(|r| r.date), result.map(|r| r.file.clone()))
    });
    attributed
        .into_iter()
        .filter_map(|a| {
            let run = a.run?;
            let which = match run {
                r if r == earlier => String::from("earlier run"),
                r if r == now => String::from("this run"),
                r => {
                    let start = analysis.runs.get(r)?.start.at?;
                    format!(
                        "the run from {} (not the one compared)",
                        probe_model::civil::utc_minute(start)
                    )
                }
            };
            let result = snapshot.benchmarks.get(a.benchmark)?;
            let when = result
                .date
                .map(probe_model::civil::utc_minute)
                .unwrap_or_default();
            Some(format!("{which}: {} {when}", crate::bench::summary(result)))
        })
        .collect()
}
