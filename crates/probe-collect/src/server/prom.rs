//! The metrics a server exposes in Prometheus' text format, reduced to the few that
//! `configs/endpoints.toml` names.
//!
//! The text is untrusted: only lines of wanted metric names (and at most `max_line` long) are
//! looked at, each wanted name is parsed on its own by `openmetrics-parser` (so one malformed
//! family costs only itself), and histograms and summaries are never parsed.

use std::collections::{BTreeMap, HashMap};

use openmetrics_parser::{MetricNumber, PrometheusValue};
use probe_model::{HistogramBucket, ServerHistogram, ServerMetric};
use serde_json::Value;

use super::endpoints::{HistogramDef, MetricDef};

/// Distinct bucket bounds kept per histogram.
const MAX_BUCKETS: usize = 256;

/// Labels whose non-zero values repeat rank 0's work (SGLang with
/// `--enable-metrics-for-all-schedulers`).
const RANK_LABELS: [&str; 2] = ["tp_rank", "pp_rank"];

/// What the metrics text gave: kept metrics, and configuration from `info` gauges.
#[derive(Debug, Default, PartialEq)]
pub struct Read {
    pub metrics: Vec<ServerMetric>,
    pub args: BTreeMap<String, Value>,
}

fn sample_name(line: &str) -> &str {
    let end = line
        .find(|c: char| c == '{' || c.is_ascii_whitespace())
        .unwrap_or(line.len());
    line.get(..end).unwrap_or("")
}

/// Reads `text` for the metrics of `defs`; `path` names the request in each source.
pub fn read(text: &str, defs: &[MetricDef], max_line: usize, path: &str) -> Read {
    let wanted: HashMap<&str, ()> = defs
        .iter()
        .flat_map(|d| d.names.iter().map(|n| (n.as_str(), ())))
        .collect();
    let mut groups: HashMap<&str, String> = HashMap::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.len() > max_line || line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let name = sample_name(line);
        if wanted.contains_key(name) {
            let g = groups.entry(name).or_default();
            g.push_str(line);
            g.push('\n');
        }
    }
    let mut out = Read::default();
    for def in defs {
        let Some((name, series)) = def.names.iter().find_map(|n| {
            groups
                .get(n.as_str())
                .and_then(|g| parse(g).map(|s| (n, s)))
        }) else {
            continue;
        };
        let source = format!("GET {path} {name}");
        if let Some(prefix) = &def.info {
            if let Some((labels, _)) = series.first() {
                for (k, v) in labels {
                    out.args.insert(
                        format!("{prefix}{k}"),
                        Value::String(crate::sanitize::sanitize_line(v)),
                    );
                }
            }
            continue;
        }
        let value: f64 = series.iter().map(|(_, v)| v).sum();
        if value.is_finite() {
            out.metrics.push(ServerMetric {
                name: def.name.clone(),
                kind: def.kind.into(),
                value,
                source,
            });
        }
    }
    out
}

/// Reads `text` for the latency histograms of `defs`: for each, the first of its names whose
/// `_bucket` lines parse, with bounds from the `le` labels, counts summed over label sets.
pub fn histograms(
    text: &str,
    defs: &[HistogramDef],
    max_line: usize,
    path: &str,
) -> Vec<ServerHistogram> {
    let mut wanted: HashMap<String, ()> = HashMap::new();
    for n in defs.iter().flat_map(|d| d.names.iter()) {
        for suffix in ["_bucket", "_sum", "_count"] {
            wanted.insert(format!("{n}{suffix}"), ());
        }
    }
    let mut groups: HashMap<&str, String> = HashMap::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.len() > max_line || line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let name = sample_name(line);
        if wanted.contains_key(name) {
            let g = groups.entry(name).or_default();
            g.push_str(line);
            g.push('\n');
        }
    }
    let series = |n: &str| groups.get(n).and_then(|g| parse(g));
    let mut out = Vec::new();
    for def in defs {
        let found = def.names.iter().find_map(|n| {
            let buckets = series(&format!("{n}_bucket"))?;
            let total = |s: Option<Series>| s.map(|s| s.iter().map(|(_, v)| v).sum::<f64>());
            let count = total(series(&format!("{n}_count")));
            let sum = total(series(&format!("{n}_sum"))).filter(|x| x.is_finite() && *x >= 0.0);
            let (buckets, inf) = cumulative(&buckets)?;
            let count = inf.or(count).filter(|c| c.is_finite() && *c >= 0.0)?;
            Some(ServerHistogram {
                name: def.name.clone(),
                source: format!("GET {path} {n}"),
                buckets,
                count,
                sum,
            })
        });
        out.extend(found);
    }
    out
}

/// The `le` bound of a bucket series: a number, or infinity for `+Inf`.
fn bound(labels: &BTreeMap<String, String>) -> Option<f64> {
    let le = labels.get("le")?.trim();
    match le {
        "+Inf" | "Inf" | "inf" | "+inf" => Some(f64::INFINITY),
        _ => le.parse::<f64>().ok().filter(|x| x.is_finite()),
    }
}

/// Buckets summed per bound, ascending, made cumulative (a count below the one before it is
/// raised to it: hostile or torn text cannot make a quantile go backwards), and the `+Inf`
/// bucket's count.
fn cumulative(series: &Series) -> Option<(Vec<HistogramBucket>, Option<f64>)> {
    let mut by: Vec<(f64, f64)> = Vec::new();
    for (labels, v) in series {
        let (Some(le), true) = (bound(labels), v.is_finite() && *v >= 0.0) else {
            continue;
        };
        let full = by.len() >= MAX_BUCKETS;
        match by.iter_mut().find(|(b, _)| *b == le) {
            Some((_, c)) => *c += v,
            None if !full => by.push((le, *v)),
            None => {}
        }
    }
    by.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut inf = None;
    let mut out: Vec<HistogramBucket> = Vec::new();
    let mut last = 0.0_f64;
    for (le, c) in by {
        last = last.max(c);
        if le.is_infinite() {
            inf = Some(last);
        } else {
            out.push(HistogramBucket { le, count: last });
        }
    }
    (!out.is_empty() || inf.is_some()).then_some((out, inf))
}

type Series = Vec<(BTreeMap<String, String>, f64)>;

/// One metric name's sample lines: each series' labels and value, ranks other than 0 left out.
fn parse(lines: &str) -> Option<Series> {
    let exposition = openmetrics_parser::prometheus::parse_prometheus(lines).ok()?;
    let mut out = Vec::new();
    for family in exposition.families.values() {
        for sample in family.iter_samples() {
            let value = match &sample.value {
                PrometheusValue::Unknown(n) | PrometheusValue::Gauge(n) => number(n),
                PrometheusValue::Counter(c) => number(&c.value),
                PrometheusValue::Histogram(_) | PrometheusValue::Summary(_) => continue,
            };
            let labels: BTreeMap<String, String> = sample
                .get_labelset()
                .map(|set| set.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default();
            if RANK_LABELS
                .iter()
                .any(|r| labels.get(*r).is_some_and(|v| v != "0"))
            {
                continue;
            }
            out.push((labels, value));
        }
    }
    (!out.is_empty()).then_some(out)
}

fn number(n: &MetricNumber) -> f64 {
    n.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::endpoints::endpoints;

    fn value(r: &Read, name: &str) -> Option<f64> {
        r.metrics.iter().find(|m| m.name == name).map(|m| m.value)
    }

    #[test]
    fn reads_engine_metrics_table() {
        let defs = &endpoints().metrics;
        // (text, metric, expected value)
        let cases: &[(&str, &str, Option<f64>)] = &[
            (
                "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 1200.0\nvllm:generation_tokens_total{engine=\"1\",model_name=\"m\"} 300.0\n",
                "generation_tokens_total",
                Some(1500.0),
            ),
            // Old name before 0.11, new name preferred when both are there.
            (
                "vllm:gpu_cache_usage_perc{engine=\"0\"} 0.5\n",
                "kv_cache_usage",
                Some(0.5),
            ),
            (
                "vllm:gpu_cache_usage_perc{engine=\"0\"} 0.5\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.25\n",
                "kv_cache_usage",
                Some(0.25),
            ),
            // SGLang: both prefixes; only tp_rank 0.
            (
                "sglang:num_running_reqs{tp_rank=\"0\",pp_rank=\"0\"} 7\nsglang:num_running_reqs{tp_rank=\"1\",pp_rank=\"0\"} 7\n",
                "requests_running",
                Some(7.0),
            ),
            (
                "sglang_token_usage{tp_rank=\"0\"} 0.91\n",
                "kv_cache_usage",
                Some(0.91),
            ),
            // llama.cpp names.
            (
                "llamacpp:tokens_predicted_total 3469\n",
                "generation_tokens_total",
                Some(3469.0),
            ),
            // A malformed family costs only itself.
            (
                "vllm:num_requests_running{engine=\"0\" 3\nvllm:num_requests_waiting{engine=\"0\"} 2\n",
                "requests_running",
                None,
            ),
            (
                "vllm:num_requests_running{engine=\"0\" 3\nvllm:num_requests_waiting{engine=\"0\"} 2\n",
                "requests_waiting",
                Some(2.0),
            ),
            // Escaped label values, NaN dropped.
            (
                "vllm:num_preemptions_total{model_name=\"a\\\"b\"} 4\n",
                "preemptions_total",
                Some(4.0),
            ),
            (
                "vllm:num_preemptions_total NaN\n",
                "preemptions_total",
                None,
            ),
            ("", "generation_tokens_total", None),
        ];
        for (text, metric, expected) in cases {
            let r = read(text, defs, 65536, "/metrics");
            assert_eq!(value(&r, metric), *expected, "{metric} in {text:?}");
        }
    }

    #[test]
    fn info_labels_become_args() {
        let text = "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",engine=\"0\",gpu_memory_utilization=\"0.92\",num_gpu_blocks=\"72156\"} 1.0\n";
        let r = read(text, &endpoints().metrics, 65536, "/metrics");
        assert_eq!(
            r.args.get("cache_config.num_gpu_blocks"),
            Some(&Value::String("72156".into()))
        );
        assert_eq!(
            r.args.get("cache_config.gpu_memory_utilization"),
            Some(&Value::String("0.92".into()))
        );
        assert!(r.metrics.iter().all(|m| m.name != "cache_config"));
    }

    #[test]
    fn histograms_from_their_buckets() {
        let defs = &endpoints().histograms;
        let vllm = "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.05\",model_name=\"m\"} 2.0\nvllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 6.0\nvllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 10.0\nvllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.1\",model_name=\"m\"} 4.0\nvllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\",model_name=\"m\"} 4.0\nvllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 10.0\nvllm:time_to_first_token_seconds_sum{engine=\"0\",model_name=\"m\"} 1.5\n";
        let h = histograms(vllm, defs, 65536, "/metrics");
        assert_eq!(h.len(), 1);
        let t = &h[0];
        assert_eq!(t.name, "ttft_seconds");
        assert_eq!(t.source, "GET /metrics vllm:time_to_first_token_seconds");
        // Engine 1 has no 0.05 bucket: its count there is unknown, the sums are per bound.
        assert_eq!(
            t.buckets,
            vec![
                HistogramBucket {
                    le: 0.05,
                    count: 2.0
                },
                HistogramBucket {
                    le: 0.1,
                    count: 10.0
                },
            ]
        );
        assert_eq!(t.count, 14.0);
        assert_eq!(t.sum, Some(1.5));

        // (text, histogram, bucket count, total)
        let cases: &[(&str, &str, usize, Option<f64>)] = &[
            // SGLang, rank 1 left out, custom bounds, no +Inf: the _count stands for it.
            (
                "sglang:e2e_request_latency_seconds_bucket{tp_rank=\"0\",le=\"0.3\"} 1\nsglang:e2e_request_latency_seconds_bucket{tp_rank=\"1\",le=\"0.3\"} 9\nsglang:e2e_request_latency_seconds_count{tp_rank=\"0\"} 3\n",
                "e2e_latency_seconds",
                1,
                Some(3.0),
            ),
            // Non-monotone counts are raised, junk bounds skipped.
            (
                "vllm:request_time_per_output_token_seconds_bucket{le=\"0.01\"} 5\nvllm:request_time_per_output_token_seconds_bucket{le=\"0.02\"} 3\nvllm:request_time_per_output_token_seconds_bucket{le=\"x\"} 3\nvllm:request_time_per_output_token_seconds_bucket{le=\"+Inf\"} 7\n",
                "tpot_seconds",
                2,
                Some(7.0),
            ),
            // The old vLLM name is read when the new one is absent.
            (
                "vllm:time_per_output_token_seconds_bucket{le=\"0.01\"} 5\nvllm:time_per_output_token_seconds_bucket{le=\"+Inf\"} 5\n",
                "itl_seconds",
                1,
                Some(5.0),
            ),
            (
                "vllm:e2e_request_latency_seconds_bucket{le=\"1\" 3\n",
                "e2e_latency_seconds",
                0,
                None,
            ),
            ("", "ttft_seconds", 0, None),
        ];
        for (text, name, n, total) in cases {
            let h = histograms(text, defs, 65536, "/metrics");
            let got = h.iter().find(|x| x.name == *name);
            assert_eq!(got.map(|x| x.buckets.len()).unwrap_or(0), *n, "{text}");
            assert_eq!(got.map(|x| x.count), *total, "{text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn histograms_never_panic_and_stay_cumulative(text in "(vllm:e2e_request_latency_seconds_(bucket|count|sum)(\\{le=\"[-+0-9.eInf]{0,6}\"\\})? [-0-9.eNa+]{0,8}\n){0,20}") {
            for h in histograms(&text, &endpoints().histograms, 65536, "/metrics") {
                proptest::prop_assert!(h.count.is_finite() && h.count >= 0.0);
                for w in h.buckets.windows(2) {
                    proptest::prop_assert!(w[0].le < w[1].le && w[0].count <= w[1].count);
                }
            }
        }
    }

    #[test]
    fn long_lines_are_skipped() {
        let text = format!("vllm:num_requests_running{{x=\"{}\"}} 3\n", "a".repeat(100));
        let r = read(&text, &endpoints().metrics, 50, "/metrics");
        assert!(r.metrics.is_empty());
    }
}
