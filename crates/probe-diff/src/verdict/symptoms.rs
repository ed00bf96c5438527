//! The symptoms: every kind of slowdown (`configs/verdict.toml` `[[symptom]]`) both sides have
//! numbers for, and the one the verdict is about.

use probe_model::{MetricComparison, Symptom, SymptomKind};

use super::config::VerdictConfig;
use super::load::both;
use crate::number::number;

/// Every kind both sides have numbers for, in the file's order.
pub(crate) fn compared(
    config: &VerdictConfig,
    metrics: &[MetricComparison],
    periods: (&str, &str),
) -> Vec<Symptom> {
    config
        .symptom
        .iter()
        .filter_map(|s| {
            // The file's order is the order of trust: a benchmark's p90 before its mean.
            let (m, b, a) = s
                .metrics
                .iter()
                .find_map(|name| both(metrics, std::slice::from_ref(name)))?;
            Some(Symptom {
                kind: s.kind,
                metric: m.name.clone(),
                unit: m.unit.clone(),
                before: Some(b.clone()),
                after: Some(a.clone()),
                change: m.change,
                before_period: periods.0.to_string(),
                after_period: periods.1.to_string(),
            })
        })
        .collect()
}

/// The means of a symptom, before and after.
pub(crate) fn means(symptom: &Symptom) -> Option<(f64, f64)> {
    Some((symptom.before.as_ref()?.mean, symptom.after.as_ref()?.mean))
}

/// Whether a symptom got worse by more than `held`: a latency or queue that rose, a
/// throughput that fell.
pub(crate) fn worsened(config: &VerdictConfig, symptom: &Symptom) -> bool {
    let Some((b, a)) = means(symptom) else {
        return false;
    };
    if b <= 0.0 {
        return false;
    }
    if symptom.kind.worse_when_higher() {
        a / b >= 1.0 + config.held
    } else {
        a / b <= 1.0 - config.held
    }
}

/// Whether a symptom held: it moved less than `held` either way.
pub(crate) fn held(config: &VerdictConfig, symptom: &Symptom) -> bool {
    means(symptom).is_some_and(|(b, a)| b > 0.0 && (a / b - 1.0).abs() < config.held)
}

/// The symptom the verdict is about: throughput where it counts as fallen (`throughput_fell`
/// says so, load considered), else the first latency kind that got worse, else throughput as
/// compared, else a queue that grew (a queue is load too: it leads only where nothing else was
/// compared), else the first kind compared.
pub(crate) fn primary(
    config: &VerdictConfig,
    symptoms: &[Symptom],
    throughput_fell: bool,
) -> Option<Symptom> {
    let of = |kind: SymptomKind| symptoms.iter().find(|s| s.kind == kind);
    let latency = [SymptomKind::Ttft, SymptomKind::Itl, SymptomKind::E2e];
    let throughput = of(SymptomKind::Throughput);
    if throughput_fell && throughput.is_some() {
        return throughput.cloned();
    }
    let worse_latency = symptoms
        .iter()
        .find(|s| latency.contains(&s.kind) && worsened(config, s));
    worse_latency
        .or(throughput)
        .or_else(|| of(SymptomKind::Queue).filter(|s| worsened(config, s)))
        .or_else(|| symptoms.first())
        .cloned()
}

/// How a sentence names a symptom's metric: `TTFT p90` for a benchmark's `ttft_p90 (bench)`
/// (`E2E p90` for its end-to-end latency),
/// the metric's own name otherwise.
pub(crate) fn metric_label(symptom: &Symptom) -> String {
    let Some(name) = symptom.metric.strip_suffix(" (bench)") else {
        return symptom.metric.clone();
    };
    let (what, stat) = name.split_once('_').unwrap_or((name, ""));
    let what = what.to_ascii_uppercase();
    format!("{what} {stat}").trim().to_string()
}

/// `TTFT p90 400 -> 1900 ms`.
pub(crate) fn numbers(symptom: &Symptom) -> String {
    match means(symptom) {
        Some((b, a)) => format!(
            "{} {} -> {} {}",
            metric_label(symptom),
            number(b),
            number(a),
            symptom.unit
        ),
        None => metric_label(symptom),
    }
}
