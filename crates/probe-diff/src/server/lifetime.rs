//! Lifetime values from a server's counters: counter / process uptime for throughput, and the
//! ratios of counters (accept length, prefix-cache hit rate).

use probe_model::{LifetimeValue, ServerMetric, ServerMetricKind, ServerReading};

fn counter<'a>(reading: &'a ServerReading, name: &str) -> Option<&'a ServerMetric> {
    reading
        .metrics
        .iter()
        .find(|m| m.name == name && m.kind == ServerMetricKind::Counter)
}

fn push(out: &mut Vec<LifetimeValue>, name: &str, value: f64, unit: &str, source: String) {
    if value.is_finite() {
        out.push(LifetimeValue {
            name: name.into(),
            value,
            unit: unit.into(),
            source,
            window_s: None,
        });
    }
}

/// Per-second rates over the uptime.
fn rates(reading: &ServerReading, out: &mut Vec<LifetimeValue>) {
    let Some(uptime) = reading.uptime_s.filter(|u| *u > 0) else {
        return;
    };
    let up = uptime as f64;
    for (metric, name, unit, scale) in [
        (
            "generation_tokens_total",
            "generation_throughput",
            "tokens/s",
            1.0,
        ),
        ("prompt_tokens_total", "prompt_throughput", "tokens/s", 1.0),
        ("preemptions_total", "preemptions_per_hour", "1/h", 3600.0),
    ] {
        if let Some(c) = counter(reading, metric) {
            push(
                out,
                name,
                c.value / up * scale,
                unit,
                format!("{metric} {} ({}) / uptime {uptime} s", c.value, c.source),
            );
        }
    }
}

/// Ratios of two counters.
fn ratios(reading: &ServerReading, out: &mut Vec<LifetimeValue>) {
    if let (Some(acc), Some(drafts)) = (
        counter(reading, "spec_accepted_tokens_total"),
        counter(reading, "spec_drafts_total"),
    ) && drafts.value > 0.0
    {
        push(
            out,
            "accept_length",
            1.0 + acc.value / drafts.value,
            "tokens",
            format!(
                "1 + spec_accepted_tokens_total {} / spec_drafts_total {}",
                acc.value, drafts.value
            ),
        );
    }
    if let (Some(acc), Some(tokens)) = (
        counter(reading, "spec_accepted_tokens_total"),
        counter(reading, "spec_draft_tokens_total"),
    ) && tokens.value > 0.0
    {
        push(
            out,
            "draft_acceptance_rate",
            acc.value / tokens.value,
            "ratio",
            format!(
                "spec_accepted_tokens_total {} / spec_draft_tokens_total {}",
                acc.value, tokens.value
            ),
        );
    }
    let hit = [
        ("prefix_cache_hits_total", "prefix_cache_queries_total"),
        ("cached_tokens_total", "prompt_tokens_total"),
    ]
    .into_iter()
    .find_map(|(h, q)| Some((h, counter(reading, h)?, q, counter(reading, q)?)));
    if let Some((h, hits, q, queries)) = hit
        && queries.value > 0.0
    {
        push(
            out,
            "prefix_cache_hit_rate",
            hits.value / queries.value,
            "ratio",
            format!("{h} {} / {q} {}", hits.value, queries.value),
        );
    }
}

/// The lifetime values of a reading (empty without counters).
pub fn lifetime(reading: &ServerReading) -> Vec<LifetimeValue> {
    let mut out = Vec::new();
    rates(reading, &mut out);
    ratios(reading, &mut out);
    super::histogram::lifetime_latencies(&reading.histograms, &mut out);
    super::histogram::window_latencies(reading.earlier.as_ref(), &reading.histograms, &mut out);
    out
}

/// A reading's lifetime values: derived here from its counters (the collector stores only the
/// counters); a snapshot written by an older release that stored them keeps its own.
pub fn lifetime_of(reading: &ServerReading) -> Vec<LifetimeValue> {
    if reading.lifetime.is_empty() {
        lifetime(reading)
    } else {
        reading.lifetime.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, value: f64) -> ServerMetric {
        ServerMetric {
            name: name.into(),
            kind: ServerMetricKind::Counter,
            value,
            source: format!("GET /metrics vllm:{name}"),
        }
    }

    #[test]
    fn lifetime_table() {
        let reading = ServerReading {
            uptime_s: Some(1000),
            metrics: vec![
                c("generation_tokens_total", 1_500_000.0),
                c("prompt_tokens_total", 600_000.0),
                c("preemptions_total", 50.0),
                c("spec_drafts_total", 800_000.0),
                c("spec_draft_tokens_total", 800_000.0),
                c("spec_accepted_tokens_total", 640_000.0),
                c("prefix_cache_hits_total", 300.0),
                c("prefix_cache_queries_total", 1000.0),
            ],
            ..ServerReading::default()
        };
        let got = lifetime(&reading);
        let value = |n: &str| got.iter().find(|v| v.name == n).map(|v| v.value);
        // (name, expected)
        let cases = [
            ("generation_throughput", Some(1500.0)),
            ("prompt_throughput", Some(600.0)),
            ("preemptions_per_hour", Some(180.0)),
            ("accept_length", Some(1.8)),
            ("draft_acceptance_rate", Some(0.8)),
            ("prefix_cache_hit_rate", Some(0.3)),
        ];
        for (name, expected) in cases {
            assert_eq!(value(name), expected, "{name}");
        }
        let gen_source = &got
            .iter()
            .find(|v| v.name == "generation_throughput")
            .unwrap()
            .source;
        assert!(gen_source.contains("uptime 1000 s"), "{gen_source}");
        // No uptime: no rates, ratios still; zero drafts: no accept length.
        let none = ServerReading {
            uptime_s: None,
            metrics: vec![
                c("generation_tokens_total", 5.0),
                c("spec_drafts_total", 0.0),
                c("spec_accepted_tokens_total", 0.0),
            ],
            ..ServerReading::default()
        };
        assert!(lifetime(&none).is_empty());
    }
}
