//! The document of `probe host`: header, verdict, what runs, earlier launches, changes, metrics,
//! problems, and the sections the other rooms draw.

use std::collections::BTreeMap;

use probe_model::{GpuStatus, HostReport, LaunchConfig, LaunchDiff, SectionStatus};

use super::changes::changes_table;
use super::diff::{launch_diff_body, periods_fields};
use super::doc::{Doc, Tone};
use super::launch::launch_items;
use super::metrics::metrics_section;
use super::{containers, format_time, hardware, runs, server, verdict};

fn gpu_line(report: &HostReport) -> String {
    let gpu = &report.gpu;
    match gpu.status {
        GpuStatus::NoNvidiaSmi => return "no NVIDIA GPU stack (nvidia-smi not installed)".into(),
        GpuStatus::NoDevices => return "nvidia-smi reports no GPUs".into(),
        GpuStatus::DriverError => {
            return format!(
                "driver error: {}",
                gpu.message.as_deref().unwrap_or("nvidia-smi failed")
            );
        }
        GpuStatus::Present => {}
    }
    let mut models: BTreeMap<String, usize> = BTreeMap::new();
    for device in &gpu.gpus {
        *models
            .entry(device.name.clone().unwrap_or_else(|| "unknown GPU".into()))
            .or_default() += 1;
    }
    let mut parts: Vec<String> = models
        .iter()
        .map(|(name, count)| format!("{count} x {name}"))
        .collect();
    if parts.is_empty() {
        parts.push("0 GPUs".into());
    }
    if let Some(driver) = gpu
        .driver_version
        .as_ref()
        .or_else(|| gpu.gpus.first().and_then(|g| g.driver_version.as_ref()))
    {
        parts.push(format!("driver {driver}"));
    }
    if let Some(cuda) = &gpu.cuda_version {
        parts.push(format!("CUDA {cuda}"));
    }
    let mut limits: Vec<String> = gpu
        .gpus
        .iter()
        .filter_map(|g| g.power_limit_w)
        .map(|w| format!("{w:.0} W"))
        .collect();
    limits.dedup();
    if !limits.is_empty() {
        parts.push(format!("power limit {}", limits.join("/")));
    }
    parts.join(", ")
}

fn host_line(report: &HostReport) -> String {
    let host = &report.host;
    let mut parts = Vec::new();
    if let Some(os) = &host.os_pretty {
        parts.push(os.clone());
    }
    if let Some(kernel) = &host.kernel {
        parts.push(format!("kernel {kernel}"));
    }
    match (&host.cpu_count, &host.cpu_model) {
        (Some(count), Some(model)) => parts.push(format!("{count} x {model}")),
        (Some(count), None) => parts.push(format!("{count} CPUs")),
        _ => {}
    }
    if let Some(kib) = host.mem_total_kib {
        parts.push(format!("{} GiB RAM", kib / (1024 * 1024)));
    }
    if let Some(uptime) = host.uptime_s {
        parts.push(format!(
            "up {}d {}h",
            uptime / 86_400,
            uptime % 86_400 / 3_600
        ));
    }
    parts.join(", ")
}

/// The report on one host.
pub fn host_report_doc(report: &HostReport) -> Doc {
    let mut doc = Doc::default();
    header_section(&mut doc, report);
    if let Some(v) = leading(report).and_then(|d| d.verdict.as_ref()) {
        verdict::section(&mut doc, v);
    }
    running_section(&mut doc, report);
    containers::section(&mut doc, &report.containers);
    containers::found_section(&mut doc, &report.found_logs);
    runs::runs_section(&mut doc, report);
    earlier_section(&mut doc, report);
    periods_section(&mut doc, report);
    changes_sections(&mut doc, report);
    metrics_section(&mut doc, report);
    server::server_section(&mut doc, &report.servers);
    runs::evidence_section(&mut doc, report);
    hardware::section(&mut doc, &report.hardware);
    problems_section(&mut doc, report);
    doc
}

/// The comparison whose verdict the report opens with (`lead`; the previous launch's where the
/// report does not say).
fn leading(report: &HostReport) -> Option<&LaunchDiff> {
    match report.lead {
        Some(probe_model::Lead::Period) => report.vs_period.as_ref(),
        _ => report.vs_previous_launch.as_ref(),
    }
}

/// The verdict of a comparison the report does not open with, in one line.
fn other_verdict(doc: &mut Doc, diff: &LaunchDiff) {
    if let Some(v) = &diff.verdict {
        doc.line(
            Tone::Plain,
            format!("  its verdict ({}): {}", v.field, v.headline),
        );
    }
}

/// The running run's periods compared: which, why, and what moved between them.
fn periods_section(doc: &mut Doc, report: &HostReport) {
    let Some(diff) = &report.vs_period else {
        return;
    };
    doc.heading(
        2,
        format!("Periods compared ({} -> {})", diff.before, diff.after),
    );
    doc.fields(periods_fields(&diff.periods));
    if report.lead != Some(probe_model::Lead::Period) {
        other_verdict(doc, diff);
    }
    launch_diff_body(doc, diff);
}

/// The title, the host/GPU/snapshot fields and the notices.
fn header_section(doc: &mut Doc, report: &HostReport) {
    let name = report.host.hostname.as_deref().unwrap_or(&report.target);
    let title = if name == report.target {
        format!("probe report: {name}")
    } else {
        format!("probe report: {} ({name})", report.target)
    };
    doc.heading(1, title);
    let mut fields = vec![("host".to_string(), host_line(report))];
    fields.push(("GPUs".into(), gpu_line(report)));
    fields.push((
        "snapshot".into(),
        format!(
            "{}, {}{}",
            report.snapshot_id,
            format_time(report.collected_at),
            if report.stored { "" } else { " (not stored)" }
        ),
    ));
    if let Some(address) = &report.address {
        fields.push(("address".into(), address.clone()));
    }
    if let Some(machine_id) = &report.host.machine_id {
        fields.push(("machine-id".into(), machine_id.clone()));
    }
    doc.fields(fields);
    for notice in &report.notices {
        doc.line(Tone::Warn, format!("note: {notice}"));
    }
}

/// "Running now": the model servers running at collection time.
fn running_section(doc: &mut Doc, report: &HostReport) {
    doc.heading(2, "Running now");
    if report.running.is_empty() {
        doc.line(Tone::Dim, "  no model server is running");
    } else {
        let mut items = Vec::new();
        for launch in &report.running {
            launch_items(launch, &mut items);
            items.extend(
                loaded_models(report, launch)
                    .into_iter()
                    .map(|line| (1, Tone::Plain, line)),
            );
        }
        doc.items(items);
    }
}

/// The models a running server said it holds loaded (`loaded.<name>.<field>` args of its
/// reading, Ollama's `/api/ps`), each with the share of it in GPU memory: what a server whose
/// command line names no model serves.
fn loaded_models(report: &HostReport, launch: &LaunchConfig) -> Vec<String> {
    let Some(reading) = report
        .servers
        .iter()
        .map(|s| &s.reading)
        .find(|r| r.launch == launch.source.location)
    else {
        return Vec::new();
    };
    let mut models: Vec<(String, BTreeMap<String, f64>)> = Vec::new();
    for (key, value) in &reading.args {
        let Some((name, field)) = key
            .strip_prefix("loaded.")
            .and_then(|rest| rest.rsplit_once('.'))
        else {
            continue;
        };
        let Some(v) = value.as_f64() else { continue };
        match models.iter_mut().find(|(n, _)| n == name) {
            Some((_, fields)) => {
                fields.insert(field.to_string(), v);
            }
            None => models.push((name.to_string(), BTreeMap::from([(field.to_string(), v)]))),
        }
    }
    let gb = |b: f64| format!("{:.1} GB", b / 1e9);
    models
        .into_iter()
        .map(|(name, f)| {
            let placed = match (f.get("size_vram"), f.get("size"), f.get("gpu_share")) {
                (Some(vram), Some(size), Some(share)) => format!(
                    ": {:.0}% in GPU memory ({} of {})",
                    share * 100.0,
                    gb(*vram),
                    gb(*size)
                ),
                _ => String::new(),
            };
            format!(
                "loaded now {}{placed} (the server, {})",
                name, reading.address
            )
        })
        .collect()
}

/// Earlier launches shown in a host report (`probe timeline` shows all).
const MAX_EARLIER_SHOWN: usize = 6;

/// "Earlier launches", newest first, capped at `MAX_EARLIER_SHOWN`.
fn earlier_section(doc: &mut Doc, report: &HostReport) {
    if report.earlier.is_empty() {
        return;
    }
    doc.heading(2, "Earlier launches (newest first)");
    let mut items = Vec::new();
    for launch in report.earlier.iter().take(MAX_EARLIER_SHOWN) {
        launch_items(launch, &mut items);
    }
    doc.items(items);
    let more = report.earlier.len().saturating_sub(MAX_EARLIER_SHOWN) + report.earlier_omitted;
    if more > 0 {
        doc.line(
            Tone::Dim,
            format!("  ... {more} more: probe timeline {}", report.target),
        );
    }
}

/// What changed vs the previous launch, and since the last snapshot.
fn changes_sections(doc: &mut Doc, report: &HostReport) {
    if let Some(diff) = &report.vs_previous_launch {
        doc.heading(
            2,
            format!(
                "What changed vs the previous launch ({} -> {})",
                diff.before, diff.after
            ),
        );
        if !diff.periods.is_empty() {
            doc.fields(periods_fields(&diff.periods));
        }
        if report.lead == Some(probe_model::Lead::Period) {
            other_verdict(doc, diff);
        }
        launch_diff_body(doc, diff);
    }
    match &report.vs_last_snapshot {
        Some(diff) => {
            doc.heading(
                2,
                format!(
                    "What changed since the last snapshot ({}, {})",
                    diff.before.id,
                    format_time(diff.before.collected_at)
                ),
            );
            changes_table(doc, &diff.changes, 15);
        }
        None => {
            doc.heading(2, "What changed since the last snapshot");
            doc.line(Tone::Dim, "  no earlier snapshot of this host is stored");
        }
    }
}

/// "Collection problems": sections that did not collect cleanly.
fn problems_section(doc: &mut Doc, report: &HostReport) {
    if report.problems.is_empty() {
        return;
    }
    doc.heading(2, "Collection problems");
    doc.items(
        report
            .problems
            .iter()
            .map(|section| {
                let status = section_status(section.status);
                let message = section
                    .message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                (
                    0,
                    Tone::Warn,
                    format!("{}: {status}{message}", section.name),
                )
            })
            .collect(),
    );
}

fn section_status(status: SectionStatus) -> &'static str {
    match status {
        SectionStatus::Ok => "ok",
        SectionStatus::Truncated => "truncated",
        SectionStatus::TimedOut => "timed out",
        SectionStatus::PermissionDenied => "permission denied",
        SectionStatus::NotPresent => "not present",
        SectionStatus::Failed => "failed",
    }
}
