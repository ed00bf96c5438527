//! A log metric's change as the running runs show it. A snapshot's logs hold every run they
//! kept (the one before a restart: before a rollback, say), so their whole means mix runs.
//! Where the verdict compared the running run of each side, a `metric:NAME` change that those
//! runs do not show counts for nothing (its impact none, its note saying both means): after a
//! rollback has taken, `probe diff` exits 0 though the journal still holds the slower run.

use probe_model::{Change, ChangeKind, Impact, MetricComparison};

use crate::impact::{Area, Subject, change_for};

/// Each `metric:NAME` change among `changes` judged again by the running runs' comparison of
/// NAME (`running`); one no longer meaningful there goes to the end, impact none.
pub(crate) fn judge_by_running_runs(changes: &mut [Change], running: &[MetricComparison]) {
    let mut demoted = false;
    for change in changes.iter_mut() {
        let Some(name) = probe_model::ChangeKey::name_in(&change.key, probe_model::KeyArea::Metric)
        else {
            continue;
        };
        let Some(compared) = running.iter().find(|m| m.name == name) else {
            continue;
        };
        let (Some(before), Some(after)) = (&compared.before, &compared.after) else {
            continue;
        };
        if before.count == 0 || after.count == 0 {
            continue;
        }
        let (b, a) = (rounded(before.mean), rounded(after.mean));
        let subject =
            Subject::new(Area::Metric, name, ChangeKind::Changed).values(Some(&b), Some(&a));
        if change_for(&subject, change.key.clone())
            .is_some_and(|(c, volatile)| !volatile && c.impact != Impact::None)
        {
            continue;
        }
        let said = |v: &Option<serde_json::Value>| {
            v.as_ref()
                .map_or_else(|| String::from("-"), |v| v.to_string())
        };
        let note = format!(
            "the running runs compare at {b} -> {a} ({} samples before, {} after): the whole \
             logs' means ({} -> {}) hold earlier runs too, which neither server is now",
            before.count,
            after.count,
            said(&change.before),
            said(&change.after)
        );
        change.note = Some(match change.note.take() {
            Some(n) => format!("{n}; {note}"),
            None => note,
        });
        change.impact = Impact::None;
        demoted = true;
    }
    if demoted {
        // Stable: the rest keep their ranked order.
        changes.sort_by_key(|c| {
            c.key_area() == probe_model::KeyArea::Metric && c.impact == Impact::None
        });
    }
}

fn rounded(value: f64) -> serde_json::Value {
    let rounded = (value * 100.0).round() / 100.0;
    serde_json::Number::from_f64(rounded)
        .map(serde_json::Value::Number)
        .unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::MetricSummary;

    fn change(key: &str, before: f64, after: f64) -> Change {
        Change {
            key: key.to_string(),
            impact: Impact::Medium,
            before: Some(serde_json::json!(before)),
            after: Some(serde_json::json!(after)),
            ..Change::default()
        }
    }

    fn compared(name: &str, before: f64, after: f64, count: u64) -> MetricComparison {
        let summary = |mean| MetricSummary {
            count,
            mean,
            ..MetricSummary::default()
        };
        MetricComparison {
            name: name.to_string(),
            before: Some(summary(before)),
            after: Some(summary(after)),
            ..MetricComparison::default()
        }
    }

    /// (whole logs' means, running runs' means (samples), whether the change still counts).
    #[test]
    fn a_metric_change_counts_only_where_the_running_runs_show_it() {
        let cases = [
            // After a rollback: the journal still holds the slower run; the running runs match.
            ((2082.37, 1845.5), Some((2082.37, 2118.16, 10)), false),
            // The running runs show the fall too: it stays.
            ((2082.37, 1572.8), Some((2082.37, 1572.8, 10)), true),
            // No running run compared (no samples, or no comparison): as the logs said.
            ((2082.37, 1845.5), Some((2082.37, 2118.16, 0)), true),
            ((2082.37, 1845.5), None, true),
        ];
        for ((b, a), running, counts) in cases {
            let mut changes = vec![
                change("metric:gen_throughput", b, a),
                change("gpu-memory-utilization", 0.9, 0.8),
            ];
            let running: Vec<MetricComparison> = running
                .map(|(rb, ra, n)| compared("gen_throughput", rb, ra, n))
                .into_iter()
                .collect();
            judge_by_running_runs(&mut changes, &running);
            let metric = changes
                .iter()
                .find(|c| c.key == "metric:gen_throughput")
                .unwrap();
            assert_eq!(
                metric.impact != Impact::None,
                counts,
                "{b} -> {a}, running {running:?}: {metric:?}"
            );
            if !counts {
                assert_eq!(
                    changes.last().map(|c| c.key.as_str()),
                    Some(metric.key.as_str())
                );
                assert!(
                    metric
                        .note
                        .as_deref()
                        .is_some_and(|n| n.contains("hold earlier runs too")),
                    "{metric:?}"
                );
            }
            assert_eq!(changes[0].impact, Impact::Medium, "the others untouched");
        }
    }
}
