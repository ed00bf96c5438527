//! Rendering: every command builds a [`doc::Doc`] (or a serde value for JSON) from model values;
//! [`human`], [`markdown`] and [`json`] turn it into text. Nothing here does I/O.

mod containers;
pub mod doc;
pub mod hardware;
pub mod html;
pub mod human;
pub mod json;
pub mod markdown;
mod runs;
pub mod server;
pub mod sh;
mod verdict;

use std::collections::BTreeMap;

use probe_model::{
    AuditRecord, AuditStatus, AuditSummary, Change, ChangeKind, DefiningFileRole, GpuStatus,
    HostReport, Impact, LaunchConfig, LaunchDiff, MetricComparison, MetricReport, SectionStatus,
    SnapshotDiff, SourceKind, Timeline, UnixTime,
};
use probe_store::SnapshotMeta;

use crate::args::Format;
use crate::output::Printer;
use doc::{Doc, Tone};

/// Renders a document in the printer's format (JSON callers use [`json`] instead).
pub fn text(doc: &Doc, printer: &Printer) -> String {
    match printer.format {
        Format::Markdown => markdown::render(doc),
        Format::Human | Format::Json | Format::Html | Format::Sh => {
            human::render(doc, printer.styles())
        }
    }
}

/// `2026-11-20 10:00:00 UTC`; `?` for an impossible time.
pub fn format_time(time: UnixTime) -> String {
    jiff::Timestamp::from_second(time)
        .map(|ts| ts.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A JSON value as an operator would write it.
pub fn format_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "(unset)".into(),
        other => other.to_string(),
    }
}

fn impact_label(impact: Impact) -> &'static str {
    match impact {
        Impact::High => "HIGH",
        Impact::Medium => "MED",
        Impact::Low => "LOW",
        Impact::None => "-",
    }
}

fn impact_tone(impact: Impact) -> Tone {
    match impact {
        Impact::High => Tone::Bad,
        Impact::Medium => Tone::Warn,
        Impact::Low | Impact::None => Tone::Plain,
    }
}

fn category_label(change: &Change) -> String {
    serde_json::to_value(change.category)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
        .unwrap_or_default()
}

/// `key: before -> after` for a change.
pub fn change_summary(change: &Change) -> String {
    // Typed values read best (`3 -> 5`); the written form is the fallback.
    let before = change
        .before
        .as_ref()
        .map(format_value)
        .or_else(|| change.before_written.clone());
    let after = change
        .after
        .as_ref()
        .map(format_value)
        .or_else(|| change.after_written.clone());
    match change.kind {
        // An option set on one side only, with the default the other side had.
        ChangeKind::Added if let Some(default) = change.default_before() => format!(
            "{} added: {default} -> {}",
            change.key,
            after.unwrap_or_default()
        ),
        ChangeKind::Removed if let Some(default) = change.default_after() => format!(
            "{} removed: {} -> {default}",
            change.key,
            before.unwrap_or_default()
        ),
        ChangeKind::Added => format!("{} added: {}", change.key, after.unwrap_or_default()),
        ChangeKind::Removed => format!(
            "{} removed (was {})",
            change.key,
            before.unwrap_or_default()
        ),
        ChangeKind::Changed => format!(
            "{}: {} -> {}",
            change.key,
            before.unwrap_or_else(|| "(unset)".into()),
            after.unwrap_or_else(|| "(unset)".into())
        ),
    }
}

/// A ranked list of changes as a table: impact, category, what, why.
/// The causes grouped by their verdicts where they have them, else the changes ranked by rule;
/// the symptoms a snapshot diff also lists (metrics) follow the causes.
pub(super) fn changes_or_causes(doc: &mut Doc, changes: &[Change], limit: usize) {
    if !changes.iter().any(|c| c.verdict.is_some()) {
        changes_table(doc, changes, limit);
        return;
    }
    verdict::cause_groups(doc, changes);
    let symptoms: Vec<Change> = changes
        .iter()
        .filter(|c| c.verdict.is_none() && c.impact != Impact::None && c.consequence_of.is_empty())
        .cloned()
        .collect();
    if !symptoms.is_empty() {
        doc.line(Tone::Plain, "  Metrics that moved (symptoms, not causes):");
        changes_table(doc, &symptoms, limit);
    }
}

/// Why a consequence moved: what the engine resolved, and the changes it follows from (its
/// note, `configs/impact.toml` `[[consequence]]`).
pub(super) fn consequence_why(change: &Change) -> String {
    match &change.note {
        Some(note) => format!("{}: {note}", change.explanation),
        None => change.explanation.clone(),
    }
}

pub(super) fn changes_table(doc: &mut Doc, changes: &[Change], limit: usize) {
    if changes.is_empty() {
        doc.line(Tone::Good, "  no meaningful changes");
        return;
    }
    let rows = changes
        .iter()
        .take(limit)
        .map(|change| {
            let mut why = change.explanation.clone();
            if let Some(note) = &change.note {
                why = if why.is_empty() {
                    note.clone()
                } else {
                    format!("{why} ({note})")
                };
            }
            // A value the engine resolved from the change above it.
            let (summary, why) = if change.consequence_of.is_empty() {
                (change_summary(change), why)
            } else {
                (
                    format!("-> {}", change_summary(change)),
                    consequence_why(change),
                )
            };
            (
                impact_tone(change.impact),
                vec![
                    impact_label(change.impact).to_string(),
                    category_label(change),
                    summary,
                    why,
                ],
            )
        })
        .collect();
    doc.table(
        vec![
            "impact".into(),
            "area".into(),
            "change".into(),
            "likely effect".into(),
        ],
        rows,
    );
    if changes.len() > limit {
        doc.line(
            Tone::Dim,
            format!(
                "  ... {} (--format json for all)",
                probe_model::text::and_more(changes.len() - limit)
            ),
        );
    }
}

fn source_label(launch: &LaunchConfig) -> String {
    let kind = launch.source.kind.as_str();
    let when = launch
        .source
        .time
        .at
        .map(|t| format!(", {}", format_time(t)))
        .or_else(|| {
            launch
                .source
                .time
                .not_after
                .map(|t| format!(", before {}", format_time(t)))
        })
        .unwrap_or_default();
    let location = &launch.source.location;
    if location.is_empty() {
        format!("{kind}{when}")
    } else if location.starts_with(&format!("{kind}:")) || location.starts_with("pid:") {
        format!("{location}{when}")
    } else {
        format!("{kind} {location}{when}")
    }
}

/// The options that matter, as written, in a stable order.
fn launch_options(launch: &LaunchConfig) -> Vec<String> {
    // A start-up log lists every value the engine resolved: the defaults say nothing.
    let from_log = launch.source.kind == SourceKind::Log;
    let mut at_default = 0usize;
    let mut options: Vec<String> = launch
        .options
        .iter()
        .filter(|(name, _)| {
            let hide = from_log && probe_diff::option_at_default(launch, name);
            at_default += usize::from(hide);
            !hide
        })
        .map(|(name, option)| {
            if option.written.is_empty() {
                format!("--{name} {}", format_value(&option.value))
            } else {
                option.written.clone()
            }
        })
        .collect();
    options.extend(launch.unknown.iter().cloned());
    if at_default > 0 {
        options.push(format!("(+{at_default} at their defaults)"));
    }
    options
}

/// Options shown per launch in a report (JSON has all of them).
const MAX_OPTIONS_SHOWN: usize = 24;
/// Environment variables shown per launch in a report.
const MAX_ENV_SHOWN: usize = 12;
/// Other evidence of the same run named per launch.
const MAX_EVIDENCE_SHOWN: usize = 4;
/// Earlier launches shown in a host report (`probe timeline` shows all).
const MAX_EARLIER_SHOWN: usize = 6;

use probe_model::text::join_capped as capped;

use probe_diff::is_session_variable;

/// Files that define a launch named per launch.
const MAX_FILES_SHOWN: usize = 8;

/// The files that define a launch, in order: `unit file PATH`, `drop-in 1 PATH (ExecStart=)`,
/// `EnvironmentFile= PATH (optional)`, `compose file PATH`.
fn defining_files(launch: &LaunchConfig) -> Vec<String> {
    let mut drop_ins = 0;
    launch
        .files
        .iter()
        .map(|f| {
            let mut text = f.role.label().to_string();
            if f.role == DefiningFileRole::DropIn {
                drop_ins += 1;
                text.push_str(&format!(" {drop_ins}"));
            }
            text.push(' ');
            text.push_str(&f.path);
            let mut notes: Vec<&str> = Vec::new();
            // What a drop-in changes (a unit file sets everything).
            if f.role == DefiningFileRole::DropIn {
                notes.extend(f.sets.iter().map(String::as_str));
            }
            if f.optional {
                notes.push("optional");
            }
            if !notes.is_empty() {
                text.push_str(&format!(" ({})", notes.join(" ")));
            }
            text
        })
        .collect()
}

/// The lines describing one launch.
fn launch_items(launch: &LaunchConfig, items: &mut Vec<(u8, Tone, String)>) {
    let version = launch
        .engine_version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    let model = launch.model.as_deref().unwrap_or("(model not set)");
    items.push((
        0,
        if launch.source.running {
            Tone::Good
        } else {
            Tone::Plain
        },
        format!("{}{version}  model {model}", launch.engine),
    ));
    let mut from = format!("from {}", source_label(launch));
    if !launch.source.also_seen_in.is_empty() {
        from.push_str(&format!(
            "; also seen in {}",
            capped(&launch.source.also_seen_in, MAX_EVIDENCE_SHOWN, ", ")
        ));
    }
    items.push((1, Tone::Dim, from));
    let options = launch_options(launch);
    if !options.is_empty() {
        items.push((1, Tone::Plain, capped(&options, MAX_OPTIONS_SHOWN, " ")));
    }
    if let Some(spec) = &launch.speculative {
        let mut parts = Vec::new();
        if let Some(algorithm) = spec
            .effective_algorithm
            .as_ref()
            .or(spec.algorithm.as_ref())
        {
            parts.push(algorithm.clone());
        }
        for (label, value) in [
            ("steps", &spec.num_steps),
            ("topk", &spec.eagle_topk),
            ("draft tokens", &spec.num_draft_tokens),
            ("speculative tokens", &spec.num_speculative_tokens),
        ] {
            if let Some(value) = value {
                parts.push(format!("{label} {}", format_value(value)));
            }
        }
        if let Some(draft) = &spec.draft_model {
            parts.push(format!("draft model {draft}"));
        }
        if !parts.is_empty() {
            items.push((1, Tone::Plain, format!("speculative: {}", parts.join(", "))));
        }
    }
    if !launch.wrappers.is_empty() {
        items.push((1, Tone::Dim, format!("via {}", launch.wrappers.join(" > "))));
    }
    if let Some(directory) = &launch.working_directory {
        items.push((1, Tone::Dim, format!("in {directory}")));
    }
    if !launch.files.is_empty() {
        items.push((
            1,
            Tone::Dim,
            format!(
                "files {}",
                capped(&defining_files(launch), MAX_FILES_SHOWN, "; ")
            ),
        ));
    }
    let env: Vec<String> = launch
        .env
        .iter()
        .filter(|(key, _)| !is_session_variable(key))
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    if !env.is_empty() {
        items.push((
            1,
            Tone::Dim,
            format!("env {}", capped(&env, MAX_ENV_SHOWN, " ")),
        ));
    }
    for warning in &launch.warnings {
        items.push((1, Tone::Warn, format!("warning: {warning}")));
    }
}

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

/// Log metrics, by run where runs are known, else by log.
fn metrics_section(doc: &mut Doc, report: &HostReport) {
    if !report.metrics_by_run.is_empty() {
        metrics_by_run(doc, &report.metrics_by_run);
        // Logs with metrics in none of those runs (another server's, or undated).
        let shown: Vec<&str> = report
            .metrics_by_run
            .iter()
            .flat_map(|run| run.metrics.iter())
            .flat_map(|metric| metric.source.split(", "))
            .collect();
        let others: Vec<&MetricReport> = report
            .metrics
            .iter()
            .filter(|metric| !shown.contains(&metric.source.as_str()))
            .collect();
        if !others.is_empty() {
            doc.line(Tone::Plain, "  other logs:");
            metrics_by_log(doc, &others);
        }
    } else if !report.metrics.is_empty() {
        doc.heading(2, "Log metrics");
        let all: Vec<&MetricReport> = report.metrics.iter().collect();
        metrics_by_log(doc, &all);
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

/// Log metrics one row per metric of each log (when no run of a running server holds them).
fn metrics_by_log(doc: &mut Doc, metrics: &[&MetricReport]) {
    let rows = metrics
        .iter()
        .map(|metric| {
            let s = &metric.summary;
            let range = match (s.first_time, s.last_time) {
                (Some(first), Some(last)) => {
                    format!("{} .. {}", format_time(first), format_time(last))
                }
                _ => "no timestamps".into(),
            };
            (
                Tone::Plain,
                vec![
                    metric.name.clone(),
                    format!("{} {}", number(s.mean), metric.unit),
                    format!("{} .. {}", number(s.min), number(s.max)),
                    number(s.last),
                    s.count.to_string(),
                    range,
                    metric.source.clone(),
                ],
            )
        })
        .collect();
    doc.table(
        [
            "metric",
            "mean",
            "min .. max",
            "last",
            "samples",
            "time range",
            "log",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    );
}

/// "Log metrics" by run: the running run, then earlier runs newest first, each with its launch
/// and time range, one row per metric.
fn metrics_by_run(doc: &mut Doc, runs: &[probe_model::RunMetrics]) {
    doc.heading(2, "Log metrics by run");
    for run in runs {
        let since = run.start.map(format_time);
        let when = match (since, run.end.map(format_time)) {
            (Some(start), _) if run.running => format!("running now, since {start}"),
            (Some(start), Some(end)) => format!("{start} .. {end}"),
            (Some(start), None) => format!("since {start}"),
            (None, _) => "time unknown".into(),
        };
        let title = if run.running {
            "running run"
        } else {
            "earlier run"
        };
        doc.line(Tone::Plain, format!("  {title}: {} ({when})", run.launch));
        if run.metrics.is_empty() {
            doc.line(Tone::Dim, "    no metrics logged in this run");
            continue;
        }
        if let Some(coverage) = coverage(run) {
            doc.line(Tone::Dim, coverage);
        }
        let rows = run
            .metrics
            .iter()
            .map(|metric| {
                let s = &metric.summary;
                (
                    Tone::Plain,
                    vec![
                        metric.name.clone(),
                        format!("{} {}", number(s.mean), metric.unit),
                        format!("{} .. {}", number(s.min), number(s.max)),
                        number(s.last),
                        s.count.to_string(),
                        metric.source.clone(),
                    ],
                )
            })
            .collect();
        doc.table(
            ["metric", "mean", "min .. max", "last", "samples", "log"]
                .map(String::from)
                .to_vec(),
            rows,
        );
    }
}

/// From when to when the run's first metric has samples, and how many: what the comparison of
/// this run stands on (a log read over its whole retention keeps them spread over the run).
fn coverage(run: &probe_model::RunMetrics) -> Option<String> {
    let metric = run.metrics.first()?;
    let s = &metric.summary;
    let (first, last) = (s.first_time?, s.last_time?);
    Some(format!(
        "    {} samples of {} from {} to {}",
        s.count,
        metric.name,
        format_time(first),
        format_time(last)
    ))
}

pub(super) fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e12 {
        format!("{value:.0}")
    } else if value.abs() >= 100.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    }
}

/// `gen_throughput 1025 -> 438 tok/s (-57%)`.
pub(super) fn metric_line(metric: &MetricComparison) -> Option<(Tone, String)> {
    let (before, after) = (metric.before.as_ref()?, metric.after.as_ref()?);
    let change = metric
        .change
        .map(|c| format!(" ({:+.0}%)", c * 100.0))
        .unwrap_or_default();
    let worse = metric.change.is_some_and(|c| {
        c <= -0.2 && (metric.name.contains("throughput") || metric.name.starts_with("accept"))
    });
    Some((
        if worse { Tone::Bad } else { Tone::Plain },
        format!(
            "  {} {} -> {} {}{change}",
            metric.name,
            number(before.mean),
            number(after.mean),
            metric.unit
        ),
    ))
}

fn launch_diff_body(doc: &mut Doc, diff: &LaunchDiff) {
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
    let metrics: Vec<_> = diff
        .metrics
        .iter()
        .filter(|m| m.before.is_some() || m.after.is_some())
        .collect();
    if !metrics.is_empty() {
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
                        metric
                            .change
                            .map_or("-".into(), |c| format!("{:+.1}%", c * 100.0)),
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

/// A host's launch timeline, oldest first.
pub fn timeline_doc(timeline: &Timeline) -> Doc {
    let mut doc = Doc::default();
    doc.heading(1, format!("probe timeline: {}", timeline.host));
    if timeline.events.is_empty() {
        doc.line(Tone::Dim, "no launches or installs found");
        return doc;
    }
    if let Some(offset) = timeline.host_clock_offset_s {
        doc.line(
            Tone::Warn,
            format!(
                "times are the host's: its clock was {} {} this machine's at collection; \
                 \"here\" is the same time on this machine's clock, right if the clock was as \
                 far off when the event was written",
                crate::report::duration(offset.abs()),
                if offset > 0 { "ahead of" } else { "behind" }
            ),
        );
    }
    let rows = timeline
        .events
        .iter()
        .map(|event| {
            let mut when = bounds_text(&event.time);
            if let Some(here) = &event.corrected_time {
                when.push_str(&format!(" (here {})", bounds_text(here)));
            }
            let mark = if event.running {
                "running"
            } else if event.previous {
                "previous"
            } else {
                ""
            };
            let kind = serde_json::to_value(event.kind)
                .ok()
                .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
                .unwrap_or_default();
            let confidence = serde_json::to_value(event.confidence)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            (
                if event.running {
                    Tone::Good
                } else if event.previous {
                    Tone::Warn
                } else {
                    Tone::Plain
                },
                vec![
                    when,
                    confidence,
                    kind,
                    mark.to_string(),
                    event.summary.clone(),
                ],
            )
        })
        .collect();
    doc.table(
        ["time", "order", "event", "", "what"]
            .map(String::from)
            .to_vec(),
        rows,
    );
    doc
}

/// An event's time: exact, else its bounds, else `?`.
fn bounds_text(time: &probe_model::TimeBounds) -> String {
    time.at
        .map(format_time)
        .or_else(|| time.not_after.map(|t| format!("<= {}", format_time(t))))
        .or_else(|| time.not_before.map(|t| format!(">= {}", format_time(t))))
        .unwrap_or_else(|| "?".into())
}

/// Launches read from a text (`probe launch`).
pub fn launches_doc(launches: &[LaunchConfig]) -> Doc {
    let mut doc = Doc::default();
    if launches.is_empty() {
        doc.line(Tone::Warn, "no model server launch found in the text");
        return doc;
    }
    for (index, launch) in launches.iter().enumerate() {
        if launches.len() > 1 {
            doc.heading(2, format!("Launch {}", index + 1));
        }
        let mut fields = vec![("engine".to_string(), launch.engine.to_string())];
        if let Some(version) = &launch.engine_version {
            fields.push(("version".into(), version.clone()));
        }
        if let Some(model) = &launch.model {
            fields.push(("model".into(), model.clone()));
        }
        if let Some(entry) = &launch.entrypoint {
            fields.push(("entrypoint".into(), entry.clone()));
        }
        if let Some(interpreter) = &launch.interpreter {
            fields.push(("interpreter".into(), interpreter.clone()));
        }
        if !launch.wrappers.is_empty() {
            fields.push(("wrappers".into(), launch.wrappers.join(" > ")));
        }
        if let Some(directory) = &launch.working_directory {
            fields.push(("directory".into(), directory.clone()));
        }
        if !launch.log_files.is_empty() {
            fields.push(("logs".into(), launch.log_files.join(", ")));
        }
        doc.fields(fields);
        if !launch.options.is_empty() {
            let rows = launch
                .options
                .iter()
                .map(|(name, option)| {
                    (
                        Tone::Plain,
                        vec![
                            name.clone(),
                            format_value(&option.value),
                            option.written.clone(),
                        ],
                    )
                })
                .collect();
            doc.table(
                ["option", "value", "as written"].map(String::from).to_vec(),
                rows,
            );
        }
        let mut items = Vec::new();
        for (key, value) in &launch.env {
            items.push((0, Tone::Plain, format!("env {key}={value}")));
        }
        for unknown in &launch.unknown {
            items.push((0, Tone::Warn, format!("unknown flag kept: {unknown}")));
        }
        for warning in &launch.warnings {
            items.push((0, Tone::Warn, format!("warning: {warning}")));
        }
        doc.items(items);
    }
    doc
}

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
                    None => e.engine.clone(),
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

/// `probe snapshots list`.
pub fn snapshots_doc(metas: &[SnapshotMeta]) -> Doc {
    let mut doc = Doc::default();
    if metas.is_empty() {
        doc.line(Tone::Dim, "no snapshots stored");
        return doc;
    }
    let rows = metas
        .iter()
        .map(|meta| {
            let versions = meta
                .versions
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ");
            (
                Tone::Plain,
                vec![
                    meta.id.clone(),
                    meta.hostname.clone().unwrap_or_else(|| "?".into()),
                    meta.target.clone(),
                    format_time(meta.collected_at),
                    meta.engines.join(","),
                    versions,
                ],
            )
        })
        .collect();
    doc.table(
        [
            "id",
            "hostname",
            "target",
            "collected",
            "engines",
            "versions",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    );
    doc
}

#[cfg(test)]
mod tests;
