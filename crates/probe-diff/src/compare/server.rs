//! Two snapshots' server readings compared: each server (paired by its loopback address, else
//! the launch it was asked for) on its effective configuration (every key it reported, as it
//! names it) and its lifetime values (throughput, accept length, prefix-cache hit rate,
//! preemptions), which also join the snapshot diff's metrics with their source named. Rules:
//! area `server` of `configs/impact.toml`.

use std::collections::BTreeSet;

use probe_model::{
    Change, ChangeKind, LifetimeValue, MetricComparison, MetricSummary, ServerReading,
    ServerStatus, Snapshot,
};
use serde_json::Value;

use crate::impact::{Area, Subject, change_for};
use crate::server::{LIFETIME_SOURCE, NOW_SOURCE, source_of};

/// Config keys compared per server, at most (a hostile server may report thousands).
const MAX_KEYS: usize = 512;
/// A lifetime value is an average over the process's uptime: a younger process's average still
/// moves with the first requests it served, so a change of it is not reported as a change.
const MIN_LIFETIME_UPTIME_S: u64 = 3600;

fn answered(reading: &ServerReading) -> bool {
    matches!(
        reading.status,
        ServerStatus::Answered | ServerStatus::Partial
    )
}

fn pair<'a>(before: &'a Snapshot, a: &ServerReading) -> Option<&'a ServerReading> {
    let answered_before = || before.servers.iter().filter(|b| answered(b));
    answered_before()
        .find(|b| b.address == a.address && b.engine == a.engine)
        .or_else(|| answered_before().find(|b| b.launch == a.launch))
}

/// The server changes from `before` to `after` (each with whether it is volatile); the lifetime
/// values of paired servers are added to `metrics`.
pub(super) fn compare(
    before: &Snapshot,
    after: &Snapshot,
    metrics: &mut Vec<MetricComparison>,
) -> Vec<(Change, bool)> {
    let mut out = Vec::new();
    for a in after.servers.iter().filter(|a| answered(a)) {
        let Some(b) = pair(before, a) else {
            continue;
        };
        let label = ServerReading::label(&a.address);
        config(b, a, &label, &mut out);
        lifetimes(b, a, &label, &mut out, metrics);
    }
    out
}

fn config(b: &ServerReading, a: &ServerReading, label: &str, out: &mut Vec<(Change, bool)>) {
    let keys: BTreeSet<&String> = b.args.keys().chain(a.args.keys()).take(MAX_KEYS).collect();
    for key in keys {
        let (bv, av) = (b.args.get(key), a.args.get(key));
        if bv == av {
            continue;
        }
        let kind = match (bv, av) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            _ => ChangeKind::Changed,
        };
        let subject = Subject::new(Area::Server, key, kind).values(bv, av);
        out.extend(change_for(&subject, format!("{label}.{key}")));
    }
}

/// How a server's value is named among the compared metrics: `ttft_p90_now (server /metrics,
/// now, server:127.0.0.1:8000)`.
fn server_metric_name(value: &LifetimeValue, label: &str) -> String {
    format!("{} ({}, {label})", value.name, source_of(value))
}

/// Whether a compared metric is a server's own value ([`server_metric_name`]).
pub(crate) fn is_server_metric(m: &MetricComparison) -> bool {
    [LIFETIME_SOURCE, NOW_SOURCE]
        .iter()
        .any(|source| m.name.contains(&format!(" ({source}, ")))
}

fn values(reading: &ServerReading) -> Vec<LifetimeValue> {
    crate::server::lifetime_of(reading)
}

fn summary(value: f64, at: Option<i64>) -> MetricSummary {
    crate::server::of_run::one_value(value, at, at)
}

fn lifetimes(
    b: &ServerReading,
    a: &ServerReading,
    label: &str,
    out: &mut Vec<(Change, bool)>,
    metrics: &mut Vec<MetricComparison>,
) {
    let before = values(b);
    for av in values(a) {
        let Some(bv) = before.iter().find(|v| v.name == av.name) else {
            continue;
        };
        metrics.push(MetricComparison {
            name: server_metric_name(&av, label),
            unit: av.unit.clone(),
            before: Some(summary(bv.value, b.asked_at)),
            after: Some(summary(av.value, a.asked_at)),
            change: (bv.value != 0.0).then(|| av.value / bv.value - 1.0),
        });
        // A few seconds' latency is evidence for the verdict, not a change of the host.
        if !settled(b) || !settled(a) || av.window_s.is_some() {
            continue;
        }
        let name = format!("lifetime:{}", av.name);
        let (bj, aj) = (number(bv.value), number(av.value));
        let subject =
            Subject::new(Area::Server, &name, ChangeKind::Changed).values(Some(&bj), Some(&aj));
        if let Some((mut change, volatile)) = change_for(&subject, format!("{label}.{name}")) {
            change.note = Some(format!("before: {}; after: {}", bv.source, av.source));
            out.push((change, volatile));
        }
    }
}

/// Whether a server has run long enough for its lifetime averages to mean something.
fn settled(reading: &ServerReading) -> bool {
    reading
        .uptime_s
        .is_some_and(|uptime| uptime >= MIN_LIFETIME_UPTIME_S)
}

fn number(v: f64) -> Value {
    serde_json::Number::from_f64((v * 1000.0).round() / 1000.0)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use probe_model::{Engine, Impact, ServerMetric, ServerMetricKind};
    use serde_json::json;

    use super::*;

    fn reading(tokens: f64, mem: f64, seed: i64) -> ServerReading {
        let counter = |name: &str, value: f64| ServerMetric {
            name: name.into(),
            kind: ServerMetricKind::Counter,
            value,
            source: format!("GET /metrics sglang:{name}"),
        };
        ServerReading {
            engine: Engine::Sglang,
            launch: "pid:1".into(),
            address: "127.0.0.1:30000".into(),
            status: ServerStatus::Answered,
            args: [
                ("mem_fraction_static".to_string(), json!(mem)),
                ("random_seed".to_string(), json!(seed)),
                ("attention_backend".to_string(), json!("fa3")),
            ]
            .into(),
            metrics: vec![
                counter("generation_tokens_total", tokens),
                counter("spec_drafts_total", 1000.0),
                counter("spec_accepted_tokens_total", 2000.0),
            ],
            uptime_s: Some(7200),
            ..ServerReading::default()
        }
    }

    fn snapshot(r: ServerReading) -> Snapshot {
        Snapshot {
            servers: vec![r],
            ..Snapshot::default()
        }
    }

    #[test]
    fn server_readings_compared() {
        let before = snapshot(reading(1_500_000.0, 0.85, 1));
        let after = snapshot(reading(900_000.0, 0.8, 2));
        let mut metrics = Vec::new();
        let changes = compare(&before, &after, &mut metrics);
        let get = |key: &str| {
            changes
                .iter()
                .find(|(c, _)| c.key == key)
                .map(|(c, v)| (c.impact, *v))
        };
        // (key, impact and volatile)
        let cases = [
            (
                "server:127.0.0.1:30000.mem_fraction_static",
                Some((Impact::High, false)),
            ),
            (
                "server:127.0.0.1:30000.random_seed",
                Some((Impact::None, true)),
            ),
            (
                "server:127.0.0.1:30000.lifetime:generation_throughput",
                Some((Impact::High, false)),
            ),
            ("server:127.0.0.1:30000.lifetime:accept_length", None),
            ("server:127.0.0.1:30000.attention_backend", None),
        ];
        for (key, want) in cases {
            assert_eq!(get(key), want, "{key}: {changes:#?}");
        }
        let gen_metric = metrics
            .iter()
            .find(|m| {
                m.name
                    .starts_with("generation_throughput (server /metrics, lifetime")
            })
            .unwrap_or_else(|| panic!("{metrics:#?}"));
        assert_eq!(
            gen_metric.before.as_ref().map(|s| s.mean),
            Some(1_500_000.0 / 7200.0)
        );
        assert_eq!(
            gen_metric.after.as_ref().map(|s| s.mean),
            Some(900_000.0 / 7200.0)
        );
        // A young process's lifetime average is shown, never reported as a change.
        let young = |tokens| {
            let mut r = reading(tokens, 0.85, 1);
            r.uptime_s = Some(600);
            snapshot(r)
        };
        let mut shown = Vec::new();
        let young_changes = compare(&young(1_500_000.0), &young(900_000.0), &mut shown);
        assert!(
            !young_changes
                .iter()
                .any(|(c, _)| c.key.contains("lifetime:")),
            "{young_changes:#?}"
        );
        assert!(
            shown
                .iter()
                .any(|m| m.name.starts_with("generation_throughput"))
        );
        // A server that did not answer is not compared.
        let mut closed = reading(1.0, 0.5, 3);
        closed.status = ServerStatus::PortClosed;
        assert!(compare(&before, &snapshot(closed), &mut Vec::new()).is_empty());
    }
}
