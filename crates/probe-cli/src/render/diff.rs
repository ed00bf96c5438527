//! The documents of `probe diff`: a snapshot diff with its periods and sides, and the rollback
//! plan.

use probe_model::{LaunchDiff, MetricComparison, SnapshotDiff};

use super::doc::{Doc, Tone};
use super::metrics::{number, signed_percent};
use super::verdict::{self, changes_or_causes};
use super::{format_time, runs};

/// The periods a comparison is drawn from, one line each with why it was chosen.
pub(crate) fn periods_fields(periods: &[probe_model::ComparedPeriod]) -> Vec<(String, String)> {
    periods
        .iter()
        .map(|p| {
            let end = p.end.map_or_else(|| String::from("now"), format_time);
            (
                p.label.clone(),
                format!(
                    "{} .. {end} ({}): {}",
                    format_time(p.start),
                    p.launch,
                    p.why
                ),
            )
        })
        .collect()
}

pub(super) fn launch_diff_body(doc: &mut Doc, diff: &LaunchDiff) {
    runs::diff_body(doc, diff);
}

/// One side of a comparison as what identifies it (never a change): `snapshot-id; host a,
/// machine-id ..., root@10.0.0.1:22, 2 x L40S (GPU-..., GPU-...), booted ...`.
fn identity_line(side: &probe_model::SnapshotRef) -> String {
    let mut parts = vec![format!("host {}", side.host)];
    if let Some(id) = &side.machine_id {
        parts.push(format!("machine-id {id}"));
    }
    if let Some(address) = &side.address {
        parts.push(address.clone());
    }
    if !side.gpus.is_empty() {
        let uuids = if side.gpu_uuids.is_empty() {
            String::new()
        } else {
            format!(" ({})", side.gpu_uuids.join(", "))
        };
        parts.push(format!("{}{uuids}", side.gpus));
    }
    if let Some(boot) = side.boot_time {
        parts.push(format!("booted {}", format_time(boot)));
    }
    format!("{}; {}", side.id, parts.join(", "))
}

/// Two snapshots compared.
pub fn snapshot_diff_doc(diff: &SnapshotDiff) -> Doc {
    let mut doc = Doc::default();
    doc.heading(
        1,
        format!(
            "probe diff: {} ({}) -> {} ({})",
            diff.before.host,
            format_time(diff.before.collected_at),
            diff.after.host,
            format_time(diff.after.collected_at)
        ),
    );
    doc.fields(vec![
        ("before".into(), identity_line(&diff.before)),
        ("after".into(), identity_line(&diff.after)),
    ]);
    if let Some(v) = &diff.verdict {
        verdict::section(&mut doc, v);
    }
    if !diff.periods.is_empty() {
        doc.heading(2, "Periods compared by the verdict");
        doc.fields(periods_fields(&diff.periods));
    }
    doc.heading(2, "Changes, most likely cause of a slowdown first");
    changes_or_causes(&mut doc, &diff.changes, usize::MAX);
    for launch in &diff.launches {
        if launch.changes.is_empty() && launch.engine_switch.is_none() {
            continue;
        }
        doc.heading(3, format!("Launch {} -> {}", launch.before, launch.after));
        launch_diff_body(&mut doc, launch);
    }
    metrics_table(&mut doc, &diff.metrics);
    for text in &diff.texts {
        if text.unified.is_empty() {
            continue;
        }
        doc.heading(3, text.label.clone());
        doc.code(text.unified.clone());
    }
    if !diff.volatile.is_empty() {
        doc.line(
            Tone::Dim,
            format!(
                "{} volatile differences (PIDs, uptime, utilisation) not counted; --include-volatile shows them",
                diff.volatile.len()
            ),
        );
    }
    doc
}

/// The log metrics either side has, their means before and after and the change; nothing
/// where neither side has any.
fn metrics_table(doc: &mut Doc, metrics: &[MetricComparison]) {
    let metrics: Vec<_> = metrics
        .iter()
        .filter(|m| m.before.is_some() || m.after.is_some())
        .collect();
    if metrics.is_empty() {
        return;
    }
    doc.heading(2, "Log metrics (mean, before -> after)");
    let rows = metrics
        .iter()
        .map(|metric| {
            let mean = |s: &Option<probe_model::MetricSummary>| {
                s.as_ref().map_or("-".into(), |s| number(s.mean))
            };
            (
                Tone::Plain,
                vec![
                    metric.name.clone(),
                    format!("{} {}", mean(&metric.before), metric.unit),
                    format!("{} {}", mean(&metric.after), metric.unit),
                    metric.change.map_or("-".into(), |c| signed_percent(c, 1)),
                ],
            )
        })
        .collect();
    doc.table(
        ["metric", "before", "after", "change"]
            .map(String::from)
            .to_vec(),
        rows,
    );
}

/// `probe diff A B --rollback`: the ordered checklist of what rolling B back to A changes.
pub fn rollback_doc(diff: &SnapshotDiff) -> Doc {
    let mut doc = Doc::default();
    doc.heading(
        1,
        format!(
            "Rolling {} ({}) back to {} ({})",
            diff.after.host, diff.after.id, diff.before.host, diff.before.id
        ),
    );
    if diff.rollback.is_empty() {
        doc.line(
            Tone::Good,
            "  nothing to roll back: no flag, package, driver, model or power limit differs",
        );
        return doc;
    }
    let items = diff
        .rollback
        .iter()
        .enumerate()
        .map(|(i, step)| (0, Tone::Plain, format!("[ ] {}. {step}", i + 1)))
        .collect();
    doc.items(items);
    doc.line(
        Tone::Dim,
        "  probe only prints this checklist; it changes nothing on either host",
    );
    doc
}
