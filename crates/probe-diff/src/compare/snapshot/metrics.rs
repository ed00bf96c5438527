//! The metrics of the snapshots' logs, each merged over its series and compared by mean.

use std::collections::{BTreeMap, BTreeSet};

use probe_model::{ChangeKind, MetricComparison, MetricSummary, Snapshot};
use serde_json::Value;

use super::collector::Collector;
use crate::impact::{Area, Subject};

/// All series of one metric in a snapshot's logs, merged into one summary.
fn merged_metrics(snapshot: &Snapshot) -> BTreeMap<String, (String, MetricSummary)> {
    let mut merged: BTreeMap<String, (String, MetricSummary)> = BTreeMap::new();
    for log in &snapshot.logs {
        for series in &log.metrics {
            let summary = &series.summary;
            if summary.count == 0 || !summary.mean.is_finite() {
                continue;
            }
            match merged.get_mut(&series.name) {
                None => {
                    merged.insert(series.name.clone(), (series.unit.clone(), summary.clone()));
                }
                Some((_, total)) => {
                    let count = total.count + summary.count;
                    let mean = (total.mean * total.count as f64
                        + summary.mean * summary.count as f64)
                        / count as f64;
                    let newer = summary.last_time > total.last_time;
                    let larger = summary.count > total.count;
                    total.min = total.min.min(summary.min);
                    total.max = total.max.max(summary.max);
                    if larger {
                        total.p50 = summary.p50;
                        total.p90 = summary.p90;
                    }
                    if newer {
                        total.last = summary.last;
                        total.last_time = summary.last_time;
                    }
                    total.first_time = match (total.first_time, summary.first_time) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    total.count = count;
                    total.mean = mean;
                }
            }
        }
    }
    merged
}

pub(super) fn compare_metrics(
    before: &Snapshot,
    after: &Snapshot,
    collector: &mut Collector,
) -> Vec<MetricComparison> {
    let before_metrics = merged_metrics(before);
    let after_metrics = merged_metrics(after);
    let names: BTreeSet<&String> = before_metrics.keys().chain(after_metrics.keys()).collect();
    let mut comparisons = Vec::new();
    for name in names {
        let before_entry = before_metrics.get(name);
        let after_entry = after_metrics.get(name);
        let unit = after_entry
            .or(before_entry)
            .map(|(unit, _)| unit.clone())
            .unwrap_or_default();
        let before_summary = before_entry.map(|(_, summary)| summary.clone());
        let after_summary = after_entry.map(|(_, summary)| summary.clone());
        let change = match (&before_summary, &after_summary) {
            (Some(a), Some(b)) if a.mean != 0.0 => Some(b.mean / a.mean - 1.0),
            _ => None,
        };
        if let (Some(a), Some(b), Some(_)) = (&before_summary, &after_summary, change) {
            let before_value = rounded(a.mean);
            let after_value = rounded(b.mean);
            let subject = Subject::new(Area::Metric, name, ChangeKind::Changed)
                .values(Some(&before_value), Some(&after_value));
            let note = format!("{} samples before, {} after ({unit})", a.count, b.count);
            collector.push(&subject, format!("metric:{name}"), Some(note));
        }
        comparisons.push(MetricComparison {
            name: name.clone(),
            unit,
            before: before_summary,
            after: after_summary,
            change,
        });
    }
    comparisons
}

fn rounded(value: f64) -> Value {
    let rounded = (value * 100.0).round() / 100.0;
    serde_json::Number::from_f64(rounded)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}
