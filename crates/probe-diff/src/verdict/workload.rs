//! The workload of the benchmark results on both sides: a latency is compared like for like
//! only at the same request rate (or client concurrency) and prompt length.

use probe_model::{LoadMeasure, MetricComparison, Verdict};

use super::config::VerdictConfig;
use super::load::both;
use crate::number::number;

const RATE: &str = "benchmark request rate";
const PROMPT: &str = "benchmark prompt length";

/// The benchmark workload measures both sides have.
pub(crate) fn measures(config: &VerdictConfig, metrics: &[MetricComparison]) -> Vec<LoadMeasure> {
    [
        (&config.metrics.request_rate, RATE),
        (&config.metrics.prompt_length, PROMPT),
    ]
    .into_iter()
    .filter_map(|(names, label)| {
        let (m, b, a) = both(metrics, names)?;
        Some(LoadMeasure {
            name: label.to_string(),
            before: Some(b.mean),
            after: Some(a.mean),
            unit: m.unit.clone(),
        })
    })
    .collect()
}

fn pair(verdict: &Verdict, name: &str) -> Option<(f64, f64)> {
    let m = verdict.load.measures.iter().find(|m| m.name == name)?;
    Some((m.before?, m.after?))
}

fn alike(config: &VerdictConfig, (b, a): (f64, f64)) -> bool {
    let base = b.abs().max(a.abs());
    base == 0.0 || (a - b).abs() / base < config.held
}

/// Whether the benchmarks on both sides ran the same workload: `None` where neither the
/// request rate nor the prompt length is known on both sides.
pub(crate) fn same(config: &VerdictConfig, verdict: &Verdict) -> Option<bool> {
    let known: Vec<bool> = [RATE, PROMPT]
        .into_iter()
        .filter_map(|name| pair(verdict, name))
        .map(|p| alike(config, p))
        .collect();
    (!known.is_empty()).then(|| known.iter().all(|same| *same))
}

/// `at the same request rate and prompt length (8 req/s, 1024 tokens)`, or what differed.
pub(crate) fn text(config: &VerdictConfig, verdict: &Verdict) -> String {
    let rate = pair(verdict, RATE);
    let prompt = pair(verdict, PROMPT);
    let unit = |name: &str| {
        verdict
            .load
            .measures
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.unit.clone())
            .unwrap_or_default()
    };
    match same(config, verdict) {
        None => String::new(),
        Some(true) => {
            let mut parts = Vec::new();
            let mut what = Vec::new();
            if let Some((_, a)) = rate {
                what.push("request rate");
                parts.push(format!("{} {}", number(a), unit(RATE)));
            }
            if let Some((_, a)) = prompt {
                what.push("prompt length");
                parts.push(format!("{} {}", number(a), unit(PROMPT)));
            }
            format!(" at the same {} ({})", what.join(" and "), parts.join(", "))
        }
        Some(false) => {
            let mut parts = Vec::new();
            for (name, p) in [(RATE, rate), (PROMPT, prompt)] {
                if let Some((b, a)) = p.filter(|p| !alike(config, *p)) {
                    let label = name.trim_start_matches("benchmark ");
                    parts.push(format!(
                        "{label} {} -> {} {}",
                        number(b),
                        number(a),
                        unit(name)
                    ));
                }
            }
            format!(" at another workload ({})", parts.join(", "))
        }
    }
}
