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
        mechanism: None,
        verdict: None,
        unset_default: None,
        startup_limit: None,
        consequence_of: Vec::new(),
    }
}

fn snapshot_diff() -> SnapshotDiff {
    SnapshotDiff {
        schema_version: 1,
        before: SnapshotRef {
            id: "gpu7-1795000000-aaaa".into(),
            host: "gpu7".into(),
            collected_at: 1_795_000_000,
            ..SnapshotRef::default()
        },
        after: SnapshotRef {
            id: "gpu7-1795170000-bbbb".into(),
            host: "gpu7".into(),
            collected_at: 1_795_170_000,
            ..SnapshotRef::default()
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
        ..SnapshotDiff::default()
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
        ..HostReport::default()
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
                engine: probe_model::Engine::Sglang,
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

/// The story: a hand launch replaced a unit; the unit's runs ran an older engine; the new run
/// resolved a third of the KV capacity and one running request.
fn host_report_with_runs() -> HostReport {
    use probe_model::{
        Certainty, ComputeApp, ModelSummary, Run, RunBound, RunPackage, RunVersion, TimelineEvent,
        TimelineEventKind, VersionSource,
    };
    let unit_run = Run {
        launch: "unit:sglang-qwen.service".into(),
        engine: Engine::Sglang,
        start: RunBound {
            at: Some(1_795_160_000),
            evidence: "start-up log line".into(),
            certainty: Certainty::Exact,
        },
        end: Some(RunBound {
            at: Some(1_795_170_000),
            evidence: "journal of sglang-qwen.service: Stopped sglang-qwen.service".into(),
            certainty: Certainty::Exact,
        }),
        engine_version: RunVersion {
            version: None,
            source: VersionSource::InstalledAfter,
            note: Some(
                "older than 0.5.9, installed 2026-11-21 15:03 UTC, after this run started".into(),
            ),
        },
        limits: [
            ("max_total_num_tokens".to_string(), 1_286_144.0),
            ("max_running_requests".to_string(), 2048.0),
            ("context_len".to_string(), 131_072.0),
        ]
        .into(),
        launches: 1,
        ..Run::default()
    };
    let hand_run = Run {
        launch: "pid:4242".into(),
        engine: Engine::Sglang,
        running: true,
        start: RunBound {
            at: Some(1_795_180_000),
            evidence: "process start".into(),
            certainty: Certainty::Exact,
        },
        engine_version: RunVersion {
            version: Some("0.5.9".into()),
            source: VersionSource::Running,
            note: None,
        },
        packages: vec![
            RunPackage {
                name: "sglang".into(),
                version: Some("0.5.9".into()),
                installed_at: Some(1_795_175_000),
                note: None,
            },
            RunPackage {
                name: "torch".into(),
                version: Some("2.9.1+cu128".into()),
                ..RunPackage::default()
            },
        ],
        driver: Some("570.172.08".into()),
        cuda: Some("12.8".into()),
        limits: [
            ("max_total_num_tokens".to_string(), 428_714.0),
            ("max_running_requests".to_string(), 1.0),
            ("available_gpu_mem_gb".to_string(), 4.1),
        ]
        .into(),
        launches: 3,
        ..Run::default()
    };
    let cause = |key: &str,
                 before: serde_json::Value,
                 after: serde_json::Value,
                 mechanism: Option<&str>| Change {
        category: Category::MemoryKvCache,
        impact: Impact::High,
        key: key.into(),
        before: Some(before),
        after: Some(after),
        explanation: format!("{key} changed"),
        mechanism: mechanism.map(String::from),
        ..Change::default()
    };
    let mut report = host_report();
    report.runs = vec![unit_run, hand_run];
    report.install_events = vec![TimelineEvent {
        kind: TimelineEventKind::PackageInstall,
        time: TimeBounds {
            at: Some(1_795_175_000),
            ..TimeBounds::default()
        },
        summary: "installed in /opt/venvs/sglang/bin/python3: sglang 0.5.9, sgl-kernel 0.3.21"
            .into(),
        ..TimelineEvent::default()
    }];
    report.models = vec![ModelSummary {
        model: "Qwen/Qwen3-Next-80B-A3B-Instruct-FP8".into(),
        revision: Some("9c7f2fbe84465e40164a94a6f4b1e8c26b16a1e0".into()),
        architecture: Some("qwen3_next".into()),
        layers: Some(48),
        full_attention_layers: Some(12),
        linear_attention_layers: Some(36),
        mtp_layers: Some(1),
        quantization: Some("fp8".into()),
        dtype: Some("bfloat16".into()),
        max_positions: Some(262_144),
        ..ModelSummary::default()
    }];
    report.gpu.gpus[0].uuid = Some("GPU-0".into());
    report.gpu.gpus[0].memory_used_mib = Some(131_208);
    report.gpu.gpus[0].memory_total_mib = Some(143_771);
    report.gpu.compute_apps = vec![ComputeApp {
        gpu_uuid: Some("GPU-0".into()),
        pid: Some(4250),
        process_name: Some("sglang::scheduler_TP0".into()),
        used_memory_mib: Some(131_000),
    }];
    if let Some(diff) = report.vs_previous_launch.as_mut() {
        diff.load_note = Some("load: running requests 38 -> 1, idle samples left out of the means: 0 before, 12 after; the load differs: throughput is not like for like".into());
        diff.changes = vec![
            cause(
                "limit:max_total_num_tokens",
                json!(1_286_144),
                json!(428_714),
                None,
            ),
            cause(
                "limit:max_running_requests",
                json!(2048),
                json!(1),
                Some(
                    "the engine admits at most 1 requests at once (2048 -> 1); the run averaged 38 -> 1 running requests",
                ),
            ),
        ];
        diff.not_explaining = vec!["package:transformers: 4.57.0 -> 4.57.1 between unit:a and unit:b; gen_throughput stayed 1000 -> 1010 tok/s: does not explain the slowdown".into()];
    }
    report
}

#[test]
fn host_report_runs_human() {
    masked!(
        "host_report_runs_human",
        human::render(
            &host_report_doc(&host_report_with_runs()),
            Styles::new(false)
        )
    );
}

#[test]
fn host_report_runs_markdown() {
    masked!(
        "host_report_runs_markdown",
        markdown::render(&host_report_doc(&host_report_with_runs()))
    );
}

/// A timeline of a host whose clock was three years ahead: the host's times as recorded, the
/// same time on this machine's clock beside each, and one line that says which is which.
#[test]
fn timeline_of_a_host_clock_far_off_says_both_times() {
    let offset = 3 * 365 * 86_400;
    let at = 1_796_000_000;
    let timeline = probe_model::Timeline {
        host: "gpu7".into(),
        events: vec![probe_model::TimelineEvent {
            kind: probe_model::TimelineEventKind::Launch,
            time: TimeBounds {
                at: Some(at),
                ..TimeBounds::default()
            },
            corrected_time: Some(TimeBounds {
                at: Some(at - offset),
                ..TimeBounds::default()
            }),
            summary: "sglang --tp 4".into(),
            ..probe_model::TimelineEvent::default()
        }],
        host_clock_offset_s: Some(offset),
        ..probe_model::Timeline::default()
    };
    let text = human::render(&timeline_doc(&timeline), Styles::new(false));
    assert!(
        text.contains("times are the host's: its clock was 3 y 0 d ahead of this machine's"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "{} (here {})",
            format_time(at),
            format_time(at - offset)
        )),
        "{text}"
    );
    let behind = probe_model::Timeline {
        host_clock_offset_s: Some(-600),
        ..timeline
    };
    let text = human::render(&timeline_doc(&behind), Styles::new(false));
    assert!(text.contains("10 min behind this machine's"), "{text}");
}
