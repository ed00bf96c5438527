//! The report's evidence sections: the runs with what was in effect while each ran, the
//! serving packages, installs near the runs, the model's config, GPU memory and its holders; and
//! the symptoms of a comparison, kept apart from its causes.

use probe_diff::LIFETIME_SOURCE;
use probe_model::{
    Certainty, HostReport, LaunchDiff, ModelSummary, Run, RunBound, RunHardware, RunServer,
    TimelineEventKind, VersionSource,
};

use super::doc::{Doc, Tone};
use super::format_time;
use super::metrics::{metric_line, number};
use super::verdict::changes_or_causes;

/// Metric lines shown among the symptoms.
const MAX_SYMPTOM_LINES: usize = 5;
/// Packages shown in one line.
const MAX_PACKAGES: usize = 12;
/// GPU memory holders listed.
const MAX_HOLDERS: usize = 16;

fn bound_text(bound: &RunBound) -> String {
    let at = bound.at.map(format_time).unwrap_or_else(|| "?".into());
    match bound.certainty {
        Certainty::Exact => at,
        Certainty::Bounded => format!("<= {at}"),
        Certainty::Unknown => String::from("?"),
    }
}

fn version_text(run: &Run) -> String {
    match (&run.engine_version.version, &run.engine_version.note) {
        // Where the version came from when it is not the run's own or its environment's.
        (Some(v), Some(note)) if run.engine_version.source == VersionSource::HistoryPin => {
            format!("{} {v} ({note})", run.engine)
        }
        // A self-installed engine's checkout (`editable, /opt/src/vllm @ 8d41f0b`).
        (Some(v), Some(note))
            if matches!(
                run.engine_version.source,
                VersionSource::Running | VersionSource::InstalledBefore
            ) =>
        {
            format!("{} {v} ({note})", run.engine)
        }
        (Some(v), _) => format!("{} {v}", run.engine),
        (None, Some(note)) => format!("{} ({note})", run.engine),
        (None, None) => format!("{} (version unknown)", run.engine),
    }
}

/// `KV 1286144 tokens, max running 2048, context 131072, GPU memory left 12.4 GB`.
pub(super) fn limits_text(run: &Run) -> Option<String> {
    let names = [
        ("max_total_num_tokens", "KV capacity", " tokens"),
        ("kv_cache_tokens", "KV capacity", " tokens"),
        ("max_running_requests", "max running requests", ""),
        ("max_num_seqs", "max sequences", ""),
        ("max_concurrency", "max concurrency", "x"),
        ("context_len", "context", ""),
        ("max_model_len", "context", ""),
        ("max_num_batched_tokens", "batched tokens", ""),
        ("available_gpu_mem_gb", "GPU memory left", " GB"),
    ];
    let parts: Vec<String> = names
        .iter()
        .filter_map(|(key, label, unit)| {
            run.limits
                .get(*key)
                .map(|v| format!("{label} {}{unit}", number(*v)))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn run_items(run: &Run, items: &mut Vec<(u8, Tone, String)>) {
    let end = match &run.end {
        None => String::from("running now"),
        Some(end) => format!("{} ({})", bound_text(end), end.evidence),
    };
    let launches = if run.launches > 1 {
        format!(" [launched {} times]", run.launches)
    } else {
        String::new()
    };
    items.push((
        0,
        if run.running { Tone::Good } else { Tone::Plain },
        format!(
            "{}: {} -> {}{launches}",
            run.launch,
            bound_text(&run.start),
            end
        ),
    ));
    items.push((1, Tone::Plain, format!("engine: {}", version_text(run))));
    if let Some(limits) = limits_text(run) {
        items.push((1, Tone::Plain, format!("start-up limits: {limits}")));
    }
    let mut stack = Vec::new();
    if let Some(driver) = &run.driver {
        stack.push(format!("driver {driver}"));
    }
    if let Some(cuda) = &run.cuda {
        stack.push(format!("CUDA {cuda}"));
    }
    if let Some(model) = &run.model
        && let Some(revision) = &model.revision
    {
        stack.push(format!("model revision {}", short_revision(revision)));
    }
    if !stack.is_empty() {
        items.push((1, Tone::Dim, stack.join(", ")));
    }
    if let Some(hardware) = &run.hardware {
        hardware_items(hardware, items);
    }
    if let Some(server) = &run.server {
        server_items(server, items);
    }
}

/// `GPU 1 700 W (default), 200 W since 2026-11-27 (nvidia-smi -i 1 -pl 200)`.
fn power_limits_text(hardware: &RunHardware) -> Option<String> {
    let mut gpus: Vec<Option<u32>> = hardware.power_limits.iter().map(|l| l.gpu).collect();
    gpus.dedup();
    let parts: Vec<String> = gpus
        .into_iter()
        .map(|gpu| {
            let limits: Vec<String> = (hardware.power_limits.iter())
                .filter(|l| l.gpu == gpu)
                .map(|l| {
                    let since = l
                        .since
                        .map(|t| format!(" since {}", format_time(t)))
                        .unwrap_or_default();
                    let source = l.source.strip_prefix("history: ").unwrap_or(&l.source);
                    let source = source.split(" (").next().unwrap_or(source);
                    format!("{} W{since} ({source})", number(l.watts))
                })
                .collect();
            let name = gpu.map_or_else(|| "all GPUs".to_string(), |i| format!("GPU {i}"));
            format!("{name} {}", limits.join(" -> "))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn hardware_items(hardware: &RunHardware, items: &mut Vec<(u8, Tone, String)>) {
    if let Some(limits) = power_limits_text(hardware) {
        items.push((1, Tone::Plain, format!("power limit: {limits}")));
    }
    if !hardware.throttle_reasons.is_empty() {
        items.push((
            1,
            Tone::Warn,
            format!(
                "throttle reasons now: {}",
                hardware.throttle_reasons.join(", ")
            ),
        ));
    }
    for fault in &hardware.faults_before_start {
        items.push((1, Tone::Bad, format!("GPU fault before its start: {fault}")));
    }
    for fault in &hardware.faults {
        items.push((1, Tone::Bad, format!("GPU fault while it ran: {fault}")));
    }
}

fn server_items(server: &RunServer, items: &mut Vec<(u8, Tone, String)>) {
    let version = server
        .version
        .as_deref()
        .map(|v| format!(", version {v}"))
        .unwrap_or_default();
    items.push((
        1,
        Tone::Plain,
        format!(
            "server says ({}, {}{version})",
            server.evidence,
            server.status.as_str()
        ),
    ));
    let (now, lifetime): (Vec<_>, Vec<_>) =
        server.lifetime.iter().partition(|v| v.window_s.is_some());
    let values = |vs: &[&probe_model::LifetimeValue]| {
        vs.iter()
            .map(|v| format!("{} {} {}", v.name, number(v.value), v.unit))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !lifetime.is_empty() {
        items.push((
            2,
            Tone::Plain,
            format!("lifetime ({}): {}", LIFETIME_SOURCE, values(&lifetime)),
        ));
    }
    if let Some(window) = now.first().and_then(|v| v.window_s) {
        items.push((
            2,
            Tone::Plain,
            format!(
                "now (the {} s between two scrapes): {}",
                number(window),
                values(&now)
            ),
        ));
    }
    if let Some(effective) = super::server::effective_summary(&server.effective) {
        items.push((2, Tone::Plain, format!("effective: {effective}")));
    }
}

fn short_revision(revision: &str) -> &str {
    revision.get(..12).unwrap_or(revision)
}

/// Runs the terminal lists: the newest (the report holds more; a page draws them all).
const MAX_RUNS_SHOWN: usize = 12;

/// "Runs (oldest first)": the newest runs with their end, version and limits, and how many
/// older ones are left to `probe timeline`.
pub(super) fn runs_section(doc: &mut Doc, report: &HostReport) {
    if report.runs.is_empty() {
        return;
    }
    doc.heading(2, "Runs (oldest first)");
    let skip = report.runs.len().saturating_sub(MAX_RUNS_SHOWN);
    let more = skip + report.runs_omitted;
    if more > 0 {
        doc.line(
            Tone::Dim,
            format!(
                "  ... {more} older: probe timeline {}, or --format html",
                report.target
            ),
        );
    }
    let mut items = Vec::new();
    for run in &report.runs[skip..] {
        run_items(run, &mut items);
    }
    doc.items(items);
}

fn model_line(model: &ModelSummary) -> String {
    let mut parts = Vec::new();
    if let Some(a) = &model.architecture {
        parts.push(a.clone());
    }
    if let Some(layers) = model.layers {
        let mut text = format!("{layers} layers");
        if let (Some(full), Some(linear)) =
            (model.full_attention_layers, model.linear_attention_layers)
        {
            text.push_str(&format!(
                " ({full} full attention, {linear} linear attention)"
            ));
        }
        parts.push(text);
    }
    if let Some(mtp) = model.mtp_layers {
        parts.push(format!("{mtp} MTP layer(s)"));
    }
    if let Some(q) = &model.quantization {
        parts.push(format!("quantization {q}"));
    }
    if let Some(d) = &model.dtype {
        parts.push(format!("dtype {d}"));
    }
    if let Some(p) = model.max_positions {
        parts.push(format!("max positions {p}"));
    }
    if let Some(r) = &model.revision {
        parts.push(format!("revision {}", short_revision(r)));
    }
    if let Some(m) = model.config_mtime {
        parts.push(format!("config.json written {}", format_time(m)));
    }
    format!("{}: {}", model.model, parts.join(", "))
}

/// The evidence: serving packages of the running run, installs near the runs, the model config,
/// GPU memory and the processes holding it.
pub(super) fn evidence_section(doc: &mut Doc, report: &HostReport) {
    if let Some(run) = report.runs.iter().rev().find(|r| r.running) {
        let packages: Vec<String> = run
            .packages
            .iter()
            .take(MAX_PACKAGES)
            .map(|p| {
                let version = p.version.as_deref().unwrap_or("?");
                match p.installed_at {
                    Some(at) => format!("{} {version} ({})", p.name, format_time(at)),
                    None => format!("{} {version}", p.name),
                }
            })
            .collect();
        if !packages.is_empty() {
            doc.heading(2, format!("Serving packages ({})", run.launch));
            doc.line(Tone::Plain, format!("  {}", packages.join(", ")));
        }
    }
    if !report.install_events.is_empty() {
        doc.heading(2, "Installs and host changes near the runs");
        let items = report
            .install_events
            .iter()
            .map(|event| {
                let when = event
                    .time
                    .at
                    .or(event.time.not_after)
                    .map(format_time)
                    .unwrap_or_else(|| "?".into());
                let kind = match event.kind {
                    TimelineEventKind::DriverInstall => "driver",
                    TimelineEventKind::HostChange => "history",
                    TimelineEventKind::EngineInstall => "engine",
                    _ => "packages",
                };
                (0, Tone::Plain, format!("{when} [{kind}] {}", event.summary))
            })
            .collect();
        doc.items(items);
    }
    if !report.models.is_empty() {
        doc.heading(2, "Model config");
        doc.items(
            report
                .models
                .iter()
                .map(|m| (0, Tone::Plain, model_line(m)))
                .collect(),
        );
    }
    gpu_memory(doc, report);
}

fn gpu_memory(doc: &mut Doc, report: &HostReport) {
    let gpus: Vec<String> = report
        .gpu
        .gpus
        .iter()
        .filter_map(|g| {
            let (used, total) = (g.memory_used_mib?, g.memory_total_mib?);
            Some(format!(
                "GPU {}: {used} / {total} MiB",
                g.index.map_or("?".into(), |i| i.to_string())
            ))
        })
        .collect();
    if gpus.is_empty() && report.gpu.compute_apps.is_empty() {
        return;
    }
    doc.heading(2, "GPU memory");
    let mut items: Vec<(u8, Tone, String)> =
        gpus.into_iter().map(|g| (0, Tone::Plain, g)).collect();
    for app in report.gpu.compute_apps.iter().take(MAX_HOLDERS) {
        let gpu = report
            .gpu
            .gpus
            .iter()
            .find(|g| g.uuid.is_some() && g.uuid == app.gpu_uuid)
            .and_then(|g| g.index)
            .map_or_else(|| String::from("?"), |i| i.to_string());
        items.push((
            1,
            Tone::Plain,
            format!(
                "held by pid {} {} on GPU {gpu}: {} MiB",
                app.pid.map_or("?".into(), |p| p.to_string()),
                app.process_name.as_deref().unwrap_or("?"),
                app.used_memory_mib.map_or("?".into(), |m| m.to_string())
            ),
        ));
    }
    if report.gpu.compute_apps.len() > MAX_HOLDERS {
        items.push((
            1,
            Tone::Dim,
            format!(
                "... {}",
                probe_model::text::and_more(report.gpu.compute_apps.len() - MAX_HOLDERS)
            ),
        ));
    }
    doc.items(items);
}

/// A comparison: what got worse (symptoms), whether it is like for like, then the candidate
/// causes ranked, their mechanisms, and what does not explain it.
pub(super) fn diff_body(doc: &mut Doc, diff: &LaunchDiff) {
    if let Some((before, after)) = diff.engine_switch {
        doc.line(Tone::Bad, format!("  engine switched: {before} -> {after}"));
    }
    if !diff.metrics.is_empty() {
        doc.line(
            Tone::Plain,
            "  Symptoms (run against run, idle samples left out):",
        );
        for (tone, line) in diff
            .metrics
            .iter()
            .take(MAX_SYMPTOM_LINES)
            .filter_map(metric_line)
        {
            doc.line(tone, format!("  {line}"));
        }
        if let Some(note) = &diff.metrics_note {
            doc.line(Tone::Dim, format!("    ({note})"));
        }
        if let Some(load) = &diff.load_note {
            doc.line(Tone::Dim, format!("    {load}"));
        }
        doc.line(
            Tone::Plain,
            "  Candidate causes, tested against the symptoms (explains, consistent, ruled out):",
        );
    } else if let Some(note) = &diff.metrics_note {
        doc.line(Tone::Dim, format!("  ({note})"));
    }
    changes_or_causes(doc, &diff.changes, 15);
    for change in diff.changes.iter().filter(|c| c.mechanism.is_some()) {
        if let Some(mechanism) = &change.mechanism {
            doc.line(Tone::Warn, format!("  why {}: {mechanism}", change.key));
        }
    }
    for line in &diff.not_explaining {
        doc.line(Tone::Dim, format!("  not the cause: {line}"));
    }
    for note in &diff.notes {
        doc.line(Tone::Dim, format!("  note: {note}"));
    }
    if !diff.equal_by_default.is_empty() {
        doc.line(
            Tone::Dim,
            format!(
                "  equal once defaults apply: {}",
                diff.equal_by_default.join(", ")
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use probe_model::{
        EffectiveKind, EffectiveValue, Engine, LifetimeValue, RunHardwareFinding, RunPowerLimit,
        ServerStatus,
    };
    use serde_json::json;

    use super::*;
    use crate::output::Styles;
    use crate::render::{human, markdown};

    /// A run that ended after root lowered GPU 1's limit, and the restart after an Xid 79,
    /// with its server's own view.
    fn report() -> HostReport {
        let limit = |watts: f64, since: Option<i64>, source: &str| RunPowerLimit {
            gpu: Some(1),
            watts,
            since,
            source: source.into(),
        };
        let crashed = Run {
            launch: "history:/root/.bash_history#3".into(),
            engine: Engine::Sglang,
            start: RunBound {
                at: Some(1_795_600_000),
                evidence: "history line".into(),
                certainty: Certainty::Exact,
            },
            end: Some(RunBound {
                at: Some(1_796_094_764),
                evidence: "next start of the same server".into(),
                certainty: Certainty::Bounded,
            }),
            hardware: Some(RunHardware {
                power_limits: vec![
                    limit(
                        700.0,
                        None,
                        "default limit (no nvidia-smi -pl before this run in the histories read)",
                    ),
                    limit(
                        200.0,
                        Some(1_795_771_320),
                        "history: nvidia-smi -i 1 -pl 200",
                    ),
                ],
                faults: vec![
                    "Xid 79 on 0000:17:00.0 at 2026-12-01 03:08 (GPU has fallen off the bus)"
                        .into(),
                ],
                ..RunHardware::default()
            }),
            ..Run::default()
        };
        let restarted = Run {
            launch: "pid:4242".into(),
            engine: Engine::Sglang,
            running: true,
            start: RunBound {
                at: Some(1_796_094_764),
                evidence: "process start".into(),
                certainty: Certainty::Exact,
            },
            hardware: Some(RunHardware {
                power_limits: vec![limit(
                    200.0,
                    Some(1_795_771_320),
                    "history: nvidia-smi -i 1 -pl 200",
                )],
                throttle_reasons: vec!["GPU 1: sw_power_cap".into()],
                faults_before_start: vec![
                    "Xid 79 on 0000:17:00.0 at 03:08, 4 minutes before the restart (GPU has fallen off the bus)".into(),
                ],
                findings: vec![RunHardwareFinding {
                    id: "sw-power-cap".into(),
                    key: "gpu:1.power_cap".into(),
                    evidence: "GPU 1 throttled by SW power cap".into(),
                }],
                ..RunHardware::default()
            }),
            server: Some(RunServer {
                evidence: "server:127.0.0.1:30000".into(),
                status: ServerStatus::Answered,
                version: Some("0.5.9".into()),
                effective: vec![
                    EffectiveValue {
                        key: "mem-fraction-static".into(),
                        kind: EffectiveKind::Differs,
                        declared: Some(json!(0.85)),
                        effective: json!(0.8),
                        ..EffectiveValue::default()
                    },
                    EffectiveValue {
                        key: "max_total_num_tokens".into(),
                        kind: EffectiveKind::Resolved,
                        effective: json!(1_286_144),
                        ..EffectiveValue::default()
                    },
                ],
                lifetime: vec![LifetimeValue {
                    name: "generation_throughput".into(),
                    value: 1500.0,
                    unit: "tokens/s".into(),
                    source: "generation_tokens_total 1500000 / uptime 1000 s".into(),
                    window_s: None,
                }],
                uptime_s: Some(1000),
                asked_at: Some(1_796_095_764),
            }),
            ..Run::default()
        };
        HostReport {
            runs: vec![crashed, restarted],
            ..HostReport::default()
        }
    }

    fn doc() -> Doc {
        let mut doc = Doc::default();
        runs_section(&mut doc, &report());
        doc
    }

    #[test]
    fn runs_with_hardware_and_server_human() {
        insta::assert_snapshot!(human::render(&doc(), Styles::new(false)));
    }

    #[test]
    fn runs_with_hardware_and_server_markdown() {
        insta::assert_snapshot!(markdown::render(&doc()));
    }

    /// The terminal lists the newest runs; the older ones in the report and those the report
    /// itself left out are counted, with where to see them.
    #[test]
    fn older_runs_are_counted_not_listed() {
        let run = |i: i64| Run {
            launch: format!("history:/root/.bash_history#{i}"),
            start: RunBound {
                at: Some(1_796_000_000 + i * 3_600),
                ..RunBound::default()
            },
            ..Run::default()
        };
        let report = HostReport {
            target: "gpu7".into(),
            runs: (0..15).map(run).collect(),
            runs_omitted: 5,
            ..HostReport::default()
        };
        let mut doc = Doc::default();
        runs_section(&mut doc, &report);
        let text = human::render(&doc, Styles::new(false));
        assert!(
            text.contains("... 8 older: probe timeline gpu7, or --format html"),
            "{text}"
        );
        assert!(!text.contains("bash_history#2:"), "{text}");
        assert!(text.contains("bash_history#3:") && text.contains("bash_history#14:"));
    }
}
