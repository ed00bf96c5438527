//! Like for like, or not: the two runs' load compared before their speed (running and queued
//! requests, KV usage and the tokens it stands for, the prefill share, throughput per request),
//! and where the load differs, the throughput of samples at the same running-request count.

use probe_model::{LoadComparison, LoadMeasure, MetricComparison, MetricSummary, SymptomKind};

use super::config::{VerdictConfig, named};
use crate::number::number;

/// The samples of one running-request count: throughput values of each run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Band {
    /// The running-request count of the samples.
    pub running: u32,
    pub before: Vec<f64>,
    pub after: Vec<f64>,
}

/// The first metric of `names` that both runs have.
pub(crate) fn both<'a>(
    metrics: &'a [MetricComparison],
    names: &[String],
) -> Option<(&'a MetricComparison, &'a MetricSummary, &'a MetricSummary)> {
    metrics.iter().find_map(|m| match (&m.before, &m.after) {
        (Some(b), Some(a)) if named(names, &m.name) => Some((m, b, a)),
        _ => None,
    })
}

/// Whether a load measure moved: by more than `load-moved` relatively and its floor absolutely.
pub(crate) fn moved(config: &VerdictConfig, metric: &str, before: f64, after: f64) -> bool {
    let floor = config.floor(metric);
    if (after - before).abs() <= floor {
        return false;
    }
    let base = before.abs().max(after.abs());
    base > 0.0 && (after - before).abs() / base > config.load_moved
}

fn measure(name: &str, before: f64, after: f64, unit: &str) -> LoadMeasure {
    LoadMeasure {
        name: name.to_string(),
        before: Some(before),
        after: Some(after),
        unit: unit.to_string(),
    }
}

/// The KV capacity in tokens of each run, where the start-up limits give it.
pub type Capacities = (Option<f64>, Option<f64>);

/// The layers each run's engine put on the GPU (before, after) and the model's layer count, where
/// the start-up limits give them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Layers {
    pub gpu: (Option<f64>, Option<f64>),
    pub model: Option<f64>,
    /// The KV cache each run's engine sized, in tokens (Ollama's `KvSize`), where logged.
    pub kv: (Option<f64>, Option<f64>),
}

/// Compares the load of the two runs.
pub(crate) fn compare(
    config: &VerdictConfig,
    metrics: &[MetricComparison],
    capacity: Capacities,
    bands: &[Band],
) -> LoadComparison {
    let names = &config.metrics;
    let mut out = LoadComparison::default();
    let mut differs: Vec<String> = Vec::new();
    let mut checked = 0;
    for (patterns, label) in [
        (names.running.as_slice(), "running requests"),
        (
            config.symptom_metrics(SymptomKind::Queue),
            "queued requests",
        ),
        (names.usage.as_slice(), "KV usage"),
    ] {
        let Some((m, b, a)) = both(metrics, patterns) else {
            continue;
        };
        checked += 1;
        out.measures.push(measure(label, b.mean, a.mean, &m.unit));
        if moved(config, &m.name, b.mean, a.mean) {
            differs.push(format!("{label} {} -> {}", number(b.mean), number(a.mean)));
        }
    }
    tokens_in_use(config, metrics, capacity, &mut out);
    derived(config, metrics, &mut out);
    if checked == 0 {
        out.summary = String::from("no load measure logged (running requests, queue, KV usage)");
        return out;
    }
    out.like_for_like = Some(differs.is_empty());
    let shown: Vec<String> = out
        .measures
        .iter()
        .map(|m| {
            format!(
                "{} {} -> {}",
                m.name,
                m.before.map(number).unwrap_or_default(),
                m.after.map(number).unwrap_or_default()
            )
        })
        .collect();
    out.summary = if differs.is_empty() {
        format!("like for like: {}", shown.join(", "))
    } else {
        format!(
            "the load differs ({}): {}",
            differs.join(", "),
            shown.join(", ")
        )
    };
    if !differs.is_empty() {
        band(config, bands, &mut out);
    }
    out
}

/// Tokens in use: KV usage times the capacity each run had.
fn tokens_in_use(
    config: &VerdictConfig,
    metrics: &[MetricComparison],
    capacity: Capacities,
    out: &mut LoadComparison,
) {
    let (Some((_, b, a)), (Some(cb), Some(ca))) = (both(metrics, &config.metrics.usage), capacity)
    else {
        return;
    };
    out.measures
        .push(measure("tokens in use", b.mean * cb, a.mean * ca, "tokens"));
}

/// Prefill share of the tokens processed, and throughput per running request.
fn derived(config: &VerdictConfig, metrics: &[MetricComparison], out: &mut LoadComparison) {
    let names = &config.metrics;
    let throughput = both(metrics, config.symptom_metrics(SymptomKind::Throughput));
    if let (Some((_, pb, pa)), Some((_, gb, ga))) = (both(metrics, &names.prompt), throughput) {
        let share = |p: f64, g: f64| if p + g > 0.0 { p / (p + g) } else { 0.0 };
        out.measures.push(measure(
            "prefill share",
            share(pb.mean, gb.mean),
            share(pa.mean, ga.mean),
            "ratio",
        ));
    }
    if let (Some((_, rb, ra)), Some((_, gb, ga))) = (both(metrics, &names.running), throughput)
        && rb.mean > 0.0
        && ra.mean > 0.0
    {
        out.measures.push(measure(
            "throughput per request",
            gb.mean / rb.mean,
            ga.mean / ra.mean,
            "tok/s",
        ));
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// The running-request count both runs have the most samples at (at least `band-min-samples`
/// each), and the throughput of each run there.
fn band(config: &VerdictConfig, bands: &[Band], out: &mut LoadComparison) {
    let best = bands
        .iter()
        .filter(|b| b.before.len().min(b.after.len()) >= config.band_min_samples)
        .max_by_key(|b| {
            (
                b.before.len().min(b.after.len()),
                std::cmp::Reverse(b.running),
            )
        });
    let Some(best) = best else {
        return;
    };
    let (before, after) = (mean(&best.before), mean(&best.after));
    out.band = Some(format!(
        "samples with {} running request{}: {} before, {} after; throughput {} -> {} tok/s there",
        best.running,
        if best.running == 1 { "" } else { "s" },
        best.before.len(),
        best.after.len(),
        number(before),
        number(after)
    ));
    out.band_throughput = Some((before, after));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::config::config;

    fn metric(name: &str, before: f64, after: f64) -> MetricComparison {
        let summary = |mean: f64| MetricSummary {
            count: 10,
            mean,
            min: mean,
            max: mean,
            ..MetricSummary::default()
        };
        MetricComparison {
            name: name.to_string(),
            unit: String::new(),
            before: Some(summary(before)),
            after: Some(summary(after)),
            change: Some(after / before - 1.0),
        }
    }

    #[test]
    fn load_compared() {
        // (metrics, like for like, summary contains)
        let cases: Vec<(Vec<MetricComparison>, Option<bool>, &str)> = vec![
            (
                vec![
                    metric("running_reqs", 1.0, 1.0),
                    metric("token_usage", 0.01, 0.02),
                ],
                Some(true),
                "like for like: running requests 1 -> 1, KV usage 0.01 -> 0.02",
            ),
            (
                vec![
                    metric("running_reqs", 1.0, 4.0),
                    metric("gen_throughput", 70.0, 120.0),
                ],
                Some(false),
                "the load differs (running requests 1 -> 4)",
            ),
            (
                vec![metric("running_reqs", 30.0, 33.0)],
                Some(true),
                "like for like",
            ),
            (
                vec![metric("gen_throughput", 70.0, 37.0)],
                None,
                "no load measure logged",
            ),
        ];
        for (metrics, want, text) in cases {
            let load = compare(config(), &metrics, (None, None), &[]);
            assert_eq!(load.like_for_like, want, "{load:?}");
            assert!(load.summary.contains(text), "{}", load.summary);
        }
    }

    #[test]
    fn per_request_speed_and_tokens_in_use() {
        let metrics = [
            metric("running_reqs", 1.0, 4.0),
            metric("gen_throughput", 70.0, 120.0),
            metric("token_usage", 0.01, 0.04),
        ];
        let bands = [
            Band {
                running: 1,
                before: vec![70.0; 5],
                after: vec![69.0; 3],
            },
            Band {
                running: 4,
                before: vec![],
                after: vec![30.0; 20],
            },
        ];
        let load = compare(config(), &metrics, (Some(61_440.0), Some(61_440.0)), &bands);
        let get = |name: &str| load.measures.iter().find(|m| m.name == name).cloned();
        let per = get("throughput per request").unwrap();
        assert_eq!((per.before, per.after), (Some(70.0), Some(30.0)));
        let tokens = get("tokens in use").unwrap();
        assert_eq!(tokens.after.map(|v| v.round()), Some(2458.0));
        assert_eq!(load.band_throughput, Some((70.0, 69.0)));
        assert!(
            load.band
                .unwrap()
                .starts_with("samples with 1 running request: 5 before, 3 after")
        );
    }
}

/// The model's shape and the parallelism of each side, where known: what the arithmetic needs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shape {
    /// Transformer layers (`num_hidden_layers`).
    pub layers: Option<f64>,
    /// Hidden size (`hidden_size`).
    pub hidden: Option<f64>,
    /// Tensor-parallel size before and after.
    pub tp: (Option<f64>, Option<f64>),
}
