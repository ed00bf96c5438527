//! Snapshot tests (insta) of the human and Markdown renderings of fixed report values. Times and
//! durations are masked so the snapshots only change when the layout does.

use std::collections::BTreeMap;

use probe_model::{
    AuditRecord, AuditStatus, AuditSummary, Category, Change, ChangeKind, Engine, EngineVersion,
    Gpu, GpuState, GpuStatus, HostFacts, HostReport, Impact, LaunchConfig, LaunchDiff,
    LaunchOption, LaunchSource, MetricComparison, MetricReport, MetricSummary, RunMetrics,
    SectionReport, SectionStatus, SnapshotDiff, SnapshotRef, SourceKind, Speculative, TextDiff,
    TimeBounds,
};
use serde_json::json;

use super::*;
use crate::output::Styles;

fn option(value: serde_json::Value, written: &str) -> LaunchOption {
    LaunchOption {
        value,
        written: written.into(),
    }
}

fn running_launch() -> LaunchConfig {
    let mut options = BTreeMap::new();
    options.insert("tp-size".into(), option(json!(4), "--tp 4"));
    options.insert(
        "mem-fraction-static".into(),
        option(json!(0.85), "--mem-fraction-static 0.85"),
    );
    options.insert(
        "speculative-num-steps".into(),
        option(json!(5), "--speculative-num-steps 5"),
    );
    LaunchConfig {
        engine: Engine::Sglang,
        engine_version: Some("0.5.4.post1".into()),
        model: Some("/models/Qwen3-Next-80B-A3B".into()),
        options,
        wrappers: vec!["nohup".into()],
        working_directory: Some("/root".into()),
        env: BTreeMap::from([("HF_TOKEN".into(), "<redacted:3f2a>".into())]),
        speculative: Some(Speculative {
            algorithm: Some("NEXTN".into()),
            effective_algorithm: Some("EAGLE".into()),
            num_steps: Some(json!(5)),
            eagle_topk: Some(json!(1)),
            num_draft_tokens: Some(json!(6)),
            ..Speculative::default()
        }),
        source: LaunchSource {
            kind: SourceKind::Process,
            location: "pid:4242".into(),
            time: TimeBounds {
                at: Some(1_795_168_800),
                ..TimeBounds::default()
            },
            running: true,
            ..LaunchSource::default()
        },
        ..LaunchConfig::default()
    }
}

fn earlier_launch() -> LaunchConfig {
    let mut options = BTreeMap::new();
    options.insert("tp-size".into(), option(json!(4), "--tp-size 4"));
    options.insert(
        "speculative-num-steps".into(),
        option(json!(3), "--speculative-num-steps 3"),
    );
    LaunchConfig {
        engine: Engine::Sglang,
        model: Some("/models/Qwen3-Next-80B-A3B".into()),
        options,
        unknown: vec!["--weird-flag".into()],
        source: LaunchSource {
            kind: SourceKind::Unit,
            location: "unit:sglang.service".into(),
            time: TimeBounds {
                not_after: Some(1_794_000_000),
                ..TimeBounds::default()
            },
            running: false,
            ..LaunchSource::default()
        },
        ..LaunchConfig::default()
    }
}

fn steps_change() -> Change {
    Change {
        category: Category::SpeculativeDecoding,
        impact: Impact::High,
        kind: ChangeKind::Changed,
        key: "speculative-num-steps".into(),
        before: Some(json!(3)),
        after: Some(json!(5)),
        before_written: Some("--speculative-num-steps 3".into()),
        after_written: Some("--speculative-num-steps 5".into()),
        explanation: "more draft steps: higher accept length, more verify cost per step".into(),
        note: None,
    }
}

fn snapshot_diff() -> SnapshotDiff {
    SnapshotDiff {
        schema_version: 1,
        before: SnapshotRef {
            id: "gpu7-1795000000-aaaa".into(),
            host: "gpu7".into(),
            collected_at: 1_795_000_000,
        },
        after: SnapshotRef {
            id: "gpu7-1795170000-bbbb".into(),
            host: "gpu7".into(),
            collected_at: 1_795_170_000,
        },
        changes: vec![
            steps_change(),
            Change {
                category: Category::EngineVersions,
                impact: Impact::Medium,
                kind: ChangeKind::Changed,
                key: "package:sglang".into(),
                before: Some(json!("0.5.3")),
                after: Some(json!("0.5.4.post1")),
                explanation: "engine upgrade: kernels and scheduler may differ".into(),
                ..Change::default()
            },
            Change {
                category: Category::GpuDriver,
                impact: Impact::Low,
                kind: ChangeKind::Added,
                key: "gpu:0.power_limit_w".into(),
                after: Some(json!(600.0)),
                explanation: "lower power limit caps clocks".into(),
                note: Some("set by nvidia-smi -pl".into()),
                ..Change::default()
            },
        ],
        launches: vec![LaunchDiff {
            before: "unit:sglang.service".into(),
            after: "pid:4242".into(),
            engine_switch: None,
            changes: vec![steps_change()],
            equal_by_default: vec!["chunked-prefill-size".into()],
            ..LaunchDiff::default()
        }],
        texts: vec![TextDiff {
            label: "sglang.service".into(),
            unified: "--- a/etc/systemd/system/sglang.service\n+++ b/etc/systemd/system/sglang.service\n@@ -1,2 +1,2 @@\n-ExecStart=/opt/venv/bin/python -m sglang.launch_server --speculative-num-steps 3\n+ExecStart=/opt/venv/bin/python -m sglang.launch_server --speculative-num-steps 5\n".into(),
        }],
        metrics: vec![MetricComparison {
            name: "gen_throughput".into(),
            unit: "tok/s".into(),
            before: Some(MetricSummary {
                mean: 1840.5,
                ..MetricSummary::default()
            }),
            after: Some(MetricSummary {
                mean: 1402.25,
                ..MetricSummary::default()
            }),
            change: Some(-0.238),
        }],
        volatile: vec![Change {
            key: "process:pid".into(),
            ..Change::default()
        }],
    }
}

fn host_report() -> HostReport {
    HostReport {
        hardware: Default::default(),
        schema_version: 1,
        target: "gpu7".into(),
        address: Some("root@10.20.0.7:22".into()),
        snapshot_id: "gpu7-1795170000-bbbb".into(),
        collected_at: 1_795_170_000,
        stored: true,
        host: HostFacts {
            hostname: Some("gpu7-prod".into()),
            machine_id: Some("4c4c4544004a3510".into()),
            os_pretty: Some("Ubuntu 22.04.4 LTS".into()),
            kernel: Some("6.8.0-45-generic".into()),
            cpu_model: Some("AMD EPYC 9654".into()),
            cpu_count: Some(192),
            mem_total_kib: Some(1_584_000_000),
            uptime_s: Some(356_400),
            ..HostFacts::default()
        },
        gpu: GpuState {
            status: GpuStatus::Present,
            driver_version: Some("570.86.15".into()),
            cuda_version: Some("12.8".into()),
            gpus: (0..4)
                .map(|index| Gpu {
                    index: Some(index),
                    name: Some("NVIDIA H100 80GB HBM3".into()),
                    power_limit_w: Some(700.0),
                    ..Gpu::default()
                })
                .collect(),
            ..GpuState::default()
        },
        running: vec![running_launch()],
        earlier: vec![earlier_launch()],
        vs_previous_launch: snapshot_diff()
            .launches
            .into_iter()
            .next()
            .map(|diff| LaunchDiff {
                metrics: vec![MetricComparison {
                    name: "gen_throughput".into(),
                    unit: "tok/s".into(),
                    before: Some(MetricSummary {
                        count: 354,
                        mean: 1021.1,
                        ..MetricSummary::default()
                    }),
                    after: Some(MetricSummary {
                        count: 6,
                        mean: 428.7,
                        ..MetricSummary::default()
                    }),
                    change: Some(428.7 / 1021.1 - 1.0),
                }],
                metrics_note: Some("means while unit:sglang.service vs while pid:4242".into()),
                notes: vec!["env not compared: CUDA_VISIBLE_DEVICES set in the process".into()],
                ..diff
            }),
        vs_last_snapshot: Some(snapshot_diff()),
        metrics: vec![
            MetricReport {
                name: "gen_throughput".into(),
                unit: "tok/s".into(),
                source: "/root/sglang.log".into(),
                summary: MetricSummary {
                    count: 120,
                    min: 900.0,
                    max: 2010.5,
                    mean: 1402.25,
                    p50: 1400.0,
                    p90: 1900.0,
                    last: 1388.0,
                    first_time: Some(1_795_160_000),
                    last_time: Some(1_795_169_000),
                },
            },
            MetricReport {
                name: "gen_throughput".into(),
                unit: "tok/s".into(),
                source: "/root/other-server.log".into(),
                summary: MetricSummary {
                    count: 3,
                    min: 10.0,
                    max: 30.0,
                    mean: 20.0,
                    last: 30.0,
                    ..MetricSummary::default()
                },
            },
        ],
        metrics_by_run: vec![
            RunMetrics {
                launch: "pid:4242".into(),
                running: true,
                start: Some(1_795_168_000),
                end: None,
                metrics: vec![MetricReport {
                    name: "gen_throughput".into(),
                    unit: "tok/s".into(),
                    source: "/root/sglang.log".into(),
                    summary: MetricSummary {
                        count: 20,
                        min: 900.0,
                        max: 1500.0,
                        mean: 1100.5,
                        last: 1388.0,
                        ..MetricSummary::default()
                    },
                }],
            },
            RunMetrics {
                launch: "unit:sglang.service".into(),
                running: false,
                start: Some(1_795_160_000),
                end: Some(1_795_168_000),
                metrics: vec![MetricReport {
                    name: "gen_throughput".into(),
                    unit: "tok/s".into(),
                    source: "sglang.service, /root/sglang.log".into(),
                    summary: MetricSummary {
                        count: 100,
                        min: 1200.0,
                        max: 2010.5,
                        mean: 1460.0,
                        last: 1300.0,
                        ..MetricSummary::default()
                    },
                }],
            },
            RunMetrics {
                launch: "history:/root/.bash_history#7".into(),
                running: false,
                start: Some(1_795_150_000),
                end: Some(1_795_160_000),
                metrics: Vec::new(),
            },
        ],
        problems: vec![SectionReport {
            name: "history:/home/bob/.bash_history".into(),
            status: SectionStatus::PermissionDenied,
            message: Some("not readable as ubuntu; try --sudo".into()),
            ..SectionReport::default()
        }],
        notices: vec!["host key for gpu7 recorded in known_hosts (\u{1b}[31mED25519)".into()],
    }
}

fn audit() -> (Vec<AuditRecord>, AuditSummary) {
    let records = vec![
        AuditRecord {
            host: "gpu7".into(),
            status: AuditStatus::Changed,
            changes: 2,
            top_changes: vec![
                "speculative-num-steps: 3 -> 5".into(),
                "package:sglang: 0.5.3 -> 0.5.4".into(),
            ],
            engines: vec![EngineVersion {
                engine: "sglang".into(),
                version: Some("0.5.4".into()),
            }],
            previous_snapshot_id: Some("x".into()),
            duration_ms: 2300,
            ..AuditRecord::default()
        },
        AuditRecord {
            host: "gpu8".into(),
            status: AuditStatus::Ok,
            previous_snapshot_id: Some("y".into()),
            duration_ms: 1900,
            ..AuditRecord::default()
        },
        AuditRecord {
            host: "gpu9".into(),
            status: AuditStatus::HostKeyRefused,
            error: Some("gpu9: HOST KEY CHANGED for gpu9".into()),
            duration_ms: 40,
            ..AuditRecord::default()
        },
    ];
    let summary = AuditSummary {
        inventory: "fleet.toml".into(),
        hosts: 3,
        ok: 1,
        changed: 1,
        failed: 1,
        duration_ms: 2400,
        ..AuditSummary::default()
    };
    (records, summary)
}

macro_rules! masked {
    ($name:expr, $value:expr) => {
        insta::with_settings!({filters => vec![
            (r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "[TIME]"),
            (r"\b\d+\.\ds\b", "[DURATION]"),
        ]}, {
            insta::assert_snapshot!($name, $value);
        });
    };
}

#[test]
fn host_report_human() {
    masked!(
        "host_report_human",
        human::render(&host_report_doc(&host_report()), Styles::new(false))
    );
}

#[test]
fn host_report_markdown() {
    masked!(
        "host_report_markdown",
        markdown::render(&host_report_doc(&host_report()))
    );
}

#[test]
fn snapshot_diff_human() {
    masked!(
        "snapshot_diff_human",
        human::render(&snapshot_diff_doc(&snapshot_diff()), Styles::new(false))
    );
}

#[test]
fn snapshot_diff_markdown() {
    masked!(
        "snapshot_diff_markdown",
        markdown::render(&snapshot_diff_doc(&snapshot_diff()))
    );
}

#[test]
fn audit_human() {
    let (records, summary) = audit();
    masked!(
        "audit_human",
        human::render(&audit_doc(&records, &summary), Styles::new(false))
    );
}

#[test]
fn launches_human() {
    masked!(
        "launches_human",
        human::render(&launches_doc(&[running_launch()]), Styles::new(false))
    );
}

#[test]
fn remote_escapes_never_reach_output() {
    let text = human::render(&host_report_doc(&host_report()), Styles::new(false));
    assert!(!text.contains('\u{1b}'), "{text}");
    let colored = human::render(&host_report_doc(&host_report()), Styles::new(true));
    // Colour codes come only from our styles: no ESC followed by "[31mED25519".
    assert!(!colored.contains("\u{1b}[31mED25519"));
}
