//! The document of `probe audit`: each run of probe against the store, and the summary.

use probe_model::{AuditRecord, AuditStatus, AuditSummary};

use super::doc::{Doc, Tone};

fn status_label(status: AuditStatus) -> &'static str {
    match status {
        AuditStatus::Ok => "ok",
        AuditStatus::Changed => "changed",
        AuditStatus::Partial => "partial",
        AuditStatus::Unreachable => "unreachable",
        AuditStatus::AuthFailed => "auth failed",
        AuditStatus::HostKeyRefused => "host key refused",
        AuditStatus::TimedOut => "timed out",
        AuditStatus::Error => "error",
    }
}

/// The audit summary table.
pub fn audit_doc(records: &[AuditRecord], summary: &AuditSummary) -> Doc {
    let mut doc = Doc::default();
    doc.heading(1, format!("probe audit: {}", summary.inventory));
    let rows = records
        .iter()
        .map(|record| {
            let tone = match record.status {
                AuditStatus::Ok => Tone::Good,
                AuditStatus::Changed | AuditStatus::Partial => Tone::Warn,
                _ => Tone::Bad,
            };
            let engines = record
                .engines
                .iter()
                .map(|e| match &e.version {
                    Some(v) => format!("{} {v}", e.engine),
                    None => e.engine.to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ");
            let detail = match (&record.error, record.status) {
                (Some(error), _) => error.clone(),
                (None, AuditStatus::Partial) => lost_sections_line(record),
                (None, AuditStatus::Changed) => format!(
                    "{} change{}: {}",
                    record.changes,
                    if record.changes == 1 { "" } else { "s" },
                    record.top_changes.join("; ")
                ),
                (None, _) if record.previous_snapshot_id.is_none() => {
                    "first snapshot (baseline)".into()
                }
                (None, _) => "no drift".into(),
            };
            (
                tone,
                vec![
                    record.host.clone(),
                    status_label(record.status).to_string(),
                    engines,
                    format!("{:.1}s", record.duration_ms as f64 / 1000.0),
                    detail,
                ],
            )
        })
        .collect();
    doc.table(
        ["host", "status", "engines", "time", "details"]
            .map(String::from)
            .to_vec(),
        rows,
    );
    doc.line(
        if summary.failed > 0 {
            Tone::Bad
        } else if summary.changed > 0 || summary.partial > 0 {
            Tone::Warn
        } else {
            Tone::Good
        },
        format!(
            "{} hosts: {} ok, {} changed, {}{} failed in {:.1}s",
            summary.hosts,
            summary.ok,
            summary.changed,
            if summary.partial > 0 {
                format!("{} partial, ", summary.partial)
            } else {
                String::new()
            },
            summary.failed,
            summary.duration_ms as f64 / 1000.0
        ),
    );
    doc
}

/// A partial host's detail: the sections lost, then its drift when it has any.
fn lost_sections_line(record: &AuditRecord) -> String {
    let lost = &record.lost_sections;
    let mut line = format!(
        "{} section{} lost to the connection ({})",
        lost.len(),
        if lost.len() == 1 { "" } else { "s" },
        lost.join(", ")
    );
    if record.changes > 0 {
        line.push_str(&format!(
            "; {} change{} (perhaps the loss): {}",
            record.changes,
            if record.changes == 1 { "" } else { "s" },
            record.top_changes.join("; ")
        ));
    }
    line
}
