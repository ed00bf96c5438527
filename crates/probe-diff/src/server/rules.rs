//! Findings on a server's own readings: the `[[server-rule]]` block of `configs/impact.toml`.

use probe_model::{LaunchConfig, ServerFinding, ServerMetricKind, ServerReading};

pub use crate::server_rule::{Check, ServerRule};

/// Whether the launch or the server itself sets speculative decoding.
fn speculative(reading: &ServerReading, launch: Option<&LaunchConfig>) -> bool {
    let launched = launch
        .and_then(|l| l.speculative.as_ref())
        .is_some_and(|s| {
            s.algorithm.is_some() || s.draft_model.is_some() || s.num_speculative_tokens.is_some()
        });
    let reported = reading
        .args
        .get("speculative_algorithm")
        .is_some_and(|v| v.as_str().is_some_and(|s| !s.is_empty() && s != "None"));
    launched || reported
}

/// A lifetime value or a metric by name.
fn value_of(reading: &ServerReading, name: &str) -> Option<f64> {
    reading
        .lifetime
        .iter()
        .find(|v| v.name == name)
        .map(|v| v.value)
        .or_else(|| {
            reading
                .metrics
                .iter()
                .find(|m| m.name == name)
                .map(|m| m.value)
        })
}

fn counter(reading: &ServerReading, name: &str) -> Option<f64> {
    reading
        .metrics
        .iter()
        .find(|m| m.name == name && m.kind == ServerMetricKind::Counter)
        .map(|m| m.value)
}

fn fill(template: &str, metric: &str, value: f64, bound: Option<f64>) -> String {
    let num = |v: f64| {
        if v.abs() >= 100.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.2}")
        }
    };
    template
        .replace("{value}", &num(value))
        .replace("{bound}", &bound.map(num).unwrap_or_default())
        .replace("{metric}", metric)
}

/// The value the rule fires on, if it fires.
fn fires(
    rule: &ServerRule,
    reading: &ServerReading,
    launch: Option<&LaunchConfig>,
) -> Option<(String, f64, Option<f64>)> {
    let spec = speculative(reading, launch);
    match rule.check {
        Check::SpeculativeWithoutDrafts => {
            let generated = counter(reading, "generation_tokens_total")?;
            let drafts = counter(reading, "spec_drafts_total")?;
            (spec && generated >= rule.min_tokens.unwrap_or(0.0) && drafts == 0.0)
                .then(|| ("spec_drafts_total".to_string(), drafts, None))
        }
        Check::Value => {
            let metric = rule.metric.as_deref()?;
            if rule.speculative && !spec {
                return None;
            }
            let v = value_of(reading, metric)?;
            let over = rule.above.is_some_and(|a| v > a);
            let under = rule.below.is_some_and(|b| v < b);
            (over || under).then(|| (metric.to_string(), v, rule.above.or(rule.below)))
        }
    }
}

/// The findings of the embedded rules on one reading.
pub fn findings(reading: &ServerReading, launch: Option<&LaunchConfig>) -> Vec<ServerFinding> {
    findings_with(&crate::impact::rules().server_rule, reading, launch)
}

pub fn findings_with(
    rules: &[ServerRule],
    reading: &ServerReading,
    launch: Option<&LaunchConfig>,
) -> Vec<ServerFinding> {
    rules
        .iter()
        .filter_map(|rule| {
            let (metric, value, bound) = fires(rule, reading, launch)?;
            Some(ServerFinding {
                rule: rule.id.clone(),
                severity: rule.severity.as_str().into(),
                message: fill(&rule.message, &metric, value, bound),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::{LifetimeValue, ServerMetric, Speculative};

    fn metric(name: &str, kind: ServerMetricKind, value: f64) -> ServerMetric {
        ServerMetric {
            name: name.into(),
            kind,
            value,
            source: String::new(),
        }
    }

    fn spec_launch() -> LaunchConfig {
        LaunchConfig {
            speculative: Some(Speculative {
                algorithm: Some("ngram".into()),
                ..Speculative::default()
            }),
            ..LaunchConfig::default()
        }
    }

    #[test]
    fn embedded_rules_are_there() {
        let ids: Vec<&str> = crate::impact::rules()
            .server_rule
            .iter()
            .map(|r| r.id.as_str())
            .collect();
        for id in [
            "spec-zero-drafts",
            "spec-accept-length-stuck",
            "preemptions-climbing",
            "kv-cache-pinned",
        ] {
            assert!(ids.contains(&id), "{id} in {ids:?}");
        }
        // The option rules are still read (the new block did not break the file).
        assert!(crate::impact::rules().rule.len() > 10);
    }

    #[test]
    fn findings_table() {
        use ServerMetricKind::{Counter, Gauge};
        let lifetime = |name: &str, value: f64| LifetimeValue {
            name: name.into(),
            value,
            unit: String::new(),
            source: String::new(),
            window_s: None,
        };
        let zero_drafts = ServerReading {
            metrics: vec![
                metric("generation_tokens_total", Counter, 50_000.0),
                metric("spec_drafts_total", Counter, 0.0),
            ],
            ..ServerReading::default()
        };
        let stuck = ServerReading {
            lifetime: vec![lifetime("accept_length", 1.02)],
            ..ServerReading::default()
        };
        let busy = ServerReading {
            lifetime: vec![lifetime("preemptions_per_hour", 240.0)],
            metrics: vec![metric("kv_cache_usage", Gauge, 0.99)],
            ..ServerReading::default()
        };
        let healthy = ServerReading {
            lifetime: vec![
                lifetime("accept_length", 2.9),
                lifetime("preemptions_per_hour", 0.0),
            ],
            metrics: vec![
                metric("kv_cache_usage", Gauge, 0.3),
                metric("spec_drafts_total", Counter, 10.0),
            ],
            ..ServerReading::default()
        };
        // (reading, speculative launch, expected rules)
        let cases: Vec<(&ServerReading, bool, Vec<&str>)> = vec![
            (&zero_drafts, true, vec!["spec-zero-drafts"]),
            (&zero_drafts, false, vec![]),
            (&stuck, true, vec!["spec-accept-length-stuck"]),
            (&stuck, false, vec![]),
            (
                &busy,
                false,
                vec!["preemptions-climbing", "kv-cache-pinned"],
            ),
            (&healthy, true, vec![]),
        ];
        for (reading, spec, expected) in cases {
            let launch = if spec {
                spec_launch()
            } else {
                LaunchConfig::default()
            };
            let got: Vec<String> = findings(reading, Some(&launch))
                .into_iter()
                .map(|f| f.rule)
                .collect();
            assert_eq!(got, expected, "{reading:?}");
        }
        let msg = &findings(&busy, None)[1].message;
        assert!(msg.contains("0.99") && msg.contains("0.95"), "{msg}");
    }
}
