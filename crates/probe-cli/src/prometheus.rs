//! node_exporter textfile metrics of an audit, written atomically (temporary file + rename) so
//! the collector never reads half a file.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use probe_model::{AuditRecord, AuditStatus, AuditSummary};

const STATUSES: [AuditStatus; 8] = [
    AuditStatus::Ok,
    AuditStatus::Changed,
    AuditStatus::Partial,
    AuditStatus::Unreachable,
    AuditStatus::AuthFailed,
    AuditStatus::HostKeyRefused,
    AuditStatus::TimedOut,
    AuditStatus::Error,
];

/// Escapes a label value as the exposition format requires.
fn label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

fn header(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
}

/// The metrics text.
pub fn render(records: &[AuditRecord], summary: &AuditSummary) -> String {
    render_with(records, summary, None)
}

/// The metrics text of one shard of an audit: the audit-level series carry `shard="I/N"`, so
/// several shards' files side by side in one textfile directory never repeat a series.
pub fn render_with(records: &[AuditRecord], summary: &AuditSummary, shard: Option<&str>) -> String {
    let mut out = String::new();
    let mut inventory = label(&summary.inventory);
    if let Some(shard) = shard {
        inventory.push_str(&format!("\",shard=\"{}", label(shard)));
    }
    audit_metrics(&mut out, records, summary, &inventory);
    host_outcome_metrics(&mut out, records);
    host_content_metrics(&mut out, records);
    out
}

/// The audit's own metrics: when it finished, how long it took, its hosts by status.
fn audit_metrics(
    out: &mut String,
    records: &[AuditRecord],
    summary: &AuditSummary,
    inventory: &str,
) {
    header(
        out,
        "probe_audit_last_run_timestamp_seconds",
        "Unix time the last probe audit finished.",
    );
    let _ = writeln!(
        out,
        "probe_audit_last_run_timestamp_seconds{{inventory=\"{inventory}\"}} {}",
        summary.finished_at
    );
    header(
        out,
        "probe_audit_duration_seconds",
        "Wall time of the last probe audit.",
    );
    let _ = writeln!(
        out,
        "probe_audit_duration_seconds{{inventory=\"{inventory}\"}} {:.3}",
        summary.duration_ms as f64 / 1000.0
    );
    header(
        out,
        "probe_audit_hosts",
        "Hosts of the last probe audit by status.",
    );
    for status in STATUSES {
        let count = records.iter().filter(|r| r.status == status).count();
        let _ = writeln!(
            out,
            "probe_audit_hosts{{inventory=\"{inventory}\",status=\"{}\"}} {count}",
            status.as_str()
        );
    }
}

/// Per host: whether it was collected, and its status.
fn host_outcome_metrics(out: &mut String, records: &[AuditRecord]) {
    header(
        out,
        "probe_host_up",
        "1 when the host was collected in the last probe audit.",
    );
    for record in records {
        let _ = writeln!(
            out,
            "probe_host_up{{host=\"{}\"}} {}",
            label(&record.host),
            u8::from(record.status.collected())
        );
    }
    header(
        out,
        "probe_host_status",
        "Outcome of the host in the last probe audit (1 for its status, 0 for the others).",
    );
    for record in records {
        for status in STATUSES {
            let _ = writeln!(
                out,
                "probe_host_status{{host=\"{}\",status=\"{}\"}} {}",
                label(&record.host),
                status.as_str(),
                u8::from(record.status == status)
            );
        }
    }
}

/// Per collected host: drift changes and GPUs; per host: its running engines.
fn host_content_metrics(out: &mut String, records: &[AuditRecord]) {
    header(
        out,
        "probe_host_drift_changes",
        "Meaningful changes against the host's previous snapshot.",
    );
    for record in records.iter().filter(|r| r.status.collected()) {
        let _ = writeln!(
            out,
            "probe_host_drift_changes{{host=\"{}\"}} {}",
            label(&record.host),
            record.changes
        );
    }
    header(
        out,
        "probe_host_gpus",
        "GPUs the host reported in the last probe audit.",
    );
    for record in records.iter().filter(|r| r.status.collected()) {
        let _ = writeln!(
            out,
            "probe_host_gpus{{host=\"{}\"}} {}",
            label(&record.host),
            record.gpu_count
        );
    }
    header(
        out,
        "probe_host_engine_info",
        "Model server engines running on the host, with their versions (always 1).",
    );
    for record in records {
        for engine in &record.engines {
            let _ = writeln!(
                out,
                "probe_host_engine_info{{host=\"{}\",engine=\"{}\",version=\"{}\"}} 1",
                label(&record.host),
                label(engine.engine.as_str()),
                label(engine.version.as_deref().unwrap_or(""))
            );
        }
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, synced, renamed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let directory = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("probe-output");
    let temporary = directory.join(format!(".{file_name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::EngineVersion;

    fn records() -> (Vec<AuditRecord>, AuditSummary) {
        let ok = AuditRecord {
            host: "gpu7".into(),
            status: AuditStatus::Changed,
            changes: 3,
            gpu_count: 8,
            engines: vec![EngineVersion {
                engine: probe_model::Engine::Sglang,
                version: Some("0.5.4".into()),
            }],
            ..AuditRecord::default()
        };
        let failed = AuditRecord {
            host: "we\"ird\nhost".into(),
            status: AuditStatus::Unreachable,
            ..AuditRecord::default()
        };
        let summary = AuditSummary {
            inventory: "fleet.toml".into(),
            finished_at: 1_795_000_000,
            duration_ms: 1500,
            ..AuditSummary::default()
        };
        (vec![ok, failed], summary)
    }

    #[test]
    fn exposition_format() {
        let (records, summary) = records();
        let text = render(&records, &summary);
        assert!(text.contains(
            "probe_audit_last_run_timestamp_seconds{inventory=\"fleet.toml\"} 1795000000\n"
        ));
        assert!(text.contains("probe_audit_duration_seconds{inventory=\"fleet.toml\"} 1.500\n"));
        assert!(text.contains("probe_host_status{host=\"gpu7\",status=\"changed\"} 1\n"));
        assert!(text.contains("probe_host_status{host=\"gpu7\",status=\"ok\"} 0\n"));
        assert!(text.contains("probe_host_up{host=\"we\\\"ird\\nhost\"} 0\n"));
        assert!(text.contains("probe_host_drift_changes{host=\"gpu7\"} 3\n"));
        assert!(text.contains(
            "probe_host_engine_info{host=\"gpu7\",engine=\"sglang\",version=\"0.5.4\"} 1\n"
        ));
        assert!(
            text.contains("probe_audit_hosts{inventory=\"fleet.toml\",status=\"unreachable\"} 1\n")
        );
        // Every sample line: name{labels} value; every metric has HELP and TYPE.
        for line in text.lines() {
            if line.starts_with('#') {
                assert!(
                    line.starts_with("# HELP ") || line.ends_with(" gauge"),
                    "{line}"
                );
                continue;
            }
            let (series, value) = line.rsplit_once(' ').unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
            assert!(
                series.starts_with("probe_") && series.ends_with('}'),
                "{line}"
            );
        }
        let helps = text.lines().filter(|l| l.starts_with("# HELP")).count();
        let types = text.lines().filter(|l| l.starts_with("# TYPE")).count();
        assert_eq!(helps, types);
        assert_eq!(helps, 8);
    }

    #[test]
    fn shard_label_on_audit_level_series() {
        let (records, summary) = records();
        let text = render_with(&records, &summary, Some("1/4"));
        assert!(text.contains(
            "probe_audit_last_run_timestamp_seconds{inventory=\"fleet.toml\",shard=\"1/4\"} 1795000000\n"
        ));
        assert!(text.contains(
            "probe_audit_hosts{inventory=\"fleet.toml\",shard=\"1/4\",status=\"unreachable\"} 1\n"
        ));
        assert!(text.contains("probe_host_status{host=\"gpu7\",status=\"changed\"} 1\n"));
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe.prom");
        write_atomic(&path, b"old\n").unwrap();
        write_atomic(&path, b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
        let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(entries.len(), 1);
        assert!(write_atomic(&dir.path().join("missing/x.prom"), b"x").is_err());
    }
}
