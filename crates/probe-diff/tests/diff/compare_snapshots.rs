//! `compare_snapshots` on hand-made snapshots: servers matched across restarts, packages, GPUs,
//! metrics, volatile fields, unit texts, and the ranking that answers "why is it slower".

use probe_diff::{CompareOptions, compare_snapshots_with, is_meaningful, rank, unified_diff};
use probe_model::{
    Category, Change, ChangeKind, ComputeApp, Engine, FileText, Gpu, GpuState, GpuStatus,
    HostFacts, Impact, LaunchConfig, LaunchOption, LaunchSource, LogSource, MetricSeries,
    MetricSummary, ModelConfig, ProcessInfo, PythonEnv, PythonPackage, Snapshot, SourceKind,
    Speculative, SystemdUnit, UnitState,
};
use serde_json::{Value, json};

const MODEL: &str = "/models/DeepSeek-V3";

fn launch(pid: u32, options: &[(&str, Value)]) -> LaunchConfig {
    let mut config = LaunchConfig {
        engine: Engine::Sglang,
        engine_version: Some(String::from("0.5.9")),
        model: Some(MODEL.to_string()),
        interpreter: Some(String::from("/opt/venv/bin/python3")),
        source: LaunchSource {
            kind: SourceKind::Process,
            location: format!("pid:{pid}"),
            running: true,
            ..LaunchSource::default()
        },
        ..LaunchConfig::default()
    };
    for (name, value) in options {
        config.options.insert(
            name.to_string(),
            LaunchOption {
                value: value.clone(),
                written: format!("--{name} {value}"),
            },
        );
    }
    config
}

fn gpu(index: u32, power_limit: f64, temperature: u32) -> Gpu {
    Gpu {
        index: Some(index),
        name: Some(String::from("NVIDIA H200")),
        uuid: Some(format!("GPU-{index}")),
        memory_total_mib: Some(143_771),
        memory_used_mib: Some(120_000 + u64::from(temperature)),
        power_limit_w: Some(power_limit),
        power_draw_w: Some(450.0 + f64::from(temperature)),
        temperature_c: Some(temperature),
        clocks_max_sm_mhz: Some(1980),
        clocks_sm_mhz: Some(1755 + temperature),
        ecc_mode: Some(String::from("Enabled")),
        mig_mode: Some(String::from("Disabled")),
        persistence_mode: Some(String::from("Enabled")),
        ..Gpu::default()
    }
}

fn summary(mean: f64, count: u64) -> MetricSummary {
    MetricSummary {
        count,
        min: mean * 0.8,
        max: mean * 1.2,
        mean,
        p50: mean,
        p90: mean * 1.1,
        last: mean,
        first_time: Some(1_700_000_000),
        last_time: Some(1_700_003_600),
    }
}

/// A host serving DeepSeek-V3 with SGLang on 8 GPUs.
fn snapshot(pid: u32, collected_at: i64) -> Snapshot {
    Snapshot {
        schema_version: 1,
        id: format!("gpu7-{collected_at}"),
        target: String::from("gpu7"),
        collected_at,
        host: HostFacts {
            hostname: Some(String::from("gpu7")),
            kernel: Some(String::from("6.8.0-45-generic")),
            uptime_s: Some(1000 + collected_at as u64 % 1000),
            mem_available_kib: Some(900_000_000 + collected_at as u64 % 1000),
            ..HostFacts::default()
        },
        processes: vec![ProcessInfo {
            pid,
            start_time: Some(collected_at - 3600),
            ..ProcessInfo::default()
        }],
        python_envs: vec![PythonEnv {
            interpreter: String::from("/opt/venv/bin/python3"),
            used_by: vec![format!("pid:{pid}")],
            packages: vec![
                package("sglang", "0.5.9"),
                package("torch", "2.8.0+cu128"),
                package("flashinfer-python", "0.4.1"),
                package("requests", "2.32.3"),
            ],
            ..PythonEnv::default()
        }],
        gpu: GpuState {
            status: GpuStatus::Present,
            driver_version: Some(String::from("570.124.06")),
            cuda_version: Some(String::from("12.8")),
            gpus: (0..8).map(|index| gpu(index, 700.0, 60 + index)).collect(),
            compute_apps: vec![ComputeApp {
                gpu_uuid: Some(String::from("GPU-0")),
                pid: Some(pid),
                process_name: Some(String::from("sglang::scheduler_TP0")),
                used_memory_mib: Some(120_000),
            }],
            ..GpuState::default()
        },
        models: vec![ModelConfig {
            model: MODEL.to_string(),
            fields: [
                (String::from("model_type"), json!("deepseek_v3")),
                (String::from("num_nextn_predict_layers"), json!(1)),
            ]
            .into_iter()
            .collect(),
            ..ModelConfig::default()
        }],
        logs: vec![LogSource {
            location: String::from("/var/log/sglang.log"),
            metrics: vec![
                MetricSeries {
                    name: String::from("gen_throughput"),
                    unit: String::from("tok/s"),
                    summary: summary(2000.0, 500),
                    ..MetricSeries::default()
                },
                MetricSeries {
                    name: String::from("accept_len"),
                    unit: String::from("ratio"),
                    summary: summary(2.5, 500),
                    ..MetricSeries::default()
                },
            ],
            ..LogSource::default()
        }],
        ..Snapshot::default()
    }
}

fn package(name: &str, version: &str) -> PythonPackage {
    PythonPackage {
        name: name.to_string(),
        version: version.to_string(),
        ..PythonPackage::default()
    }
}

fn keys(changes: &[Change]) -> Vec<&str> {
    changes.iter().map(|change| change.key.as_str()).collect()
}

fn base_options() -> Vec<(&'static str, Value)> {
    vec![
        ("tp-size", json!(8)),
        ("mem-fraction-static", json!(0.85)),
        ("port", json!(30000)),
    ]
}

#[test]
fn same_server_after_restart_is_matched_and_only_volatile_differs() {
    let before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(200, 1_700_090_000);
    after.host.uptime_s = Some(90_000);
    for gpu in &mut after.gpu.gpus {
        gpu.temperature_c = Some(75);
        gpu.utilization_gpu_pct = Some(97);
    }
    let before_launches = [launch(100, &base_options())];
    let after_launches = [launch(200, &base_options())];
    let diff = compare_snapshots_with(
        &before,
        &before_launches,
        &after,
        &after_launches,
        &CompareOptions::default(),
    );
    assert!(diff.changes.is_empty(), "{:#?}", diff.changes);
    assert!(!is_meaningful(&diff));
    assert_eq!(diff.launches.len(), 1);
    let volatile = keys(&diff.volatile);
    assert!(volatile.contains(&"pid"), "{volatile:?}");
    assert!(volatile.contains(&"host.uptime_s"), "{volatile:?}");
    assert!(
        volatile.iter().any(|key| key.ends_with("temperature_c")),
        "{volatile:?}"
    );
    assert!(
        diff.volatile
            .iter()
            .all(|change| change.impact == Impact::None)
    );

    let loud = compare_snapshots_with(
        &before,
        &before_launches,
        &after,
        &after_launches,
        &CompareOptions {
            include_volatile: true,
            ..CompareOptions::default()
        },
    );
    // The volatile differences join the changes; identity (the PID, the uptime) stays apart
    // even then: it is in the header, never a candidate cause (issue 33).
    let loud_keys = keys(&loud.changes);
    assert!(
        loud_keys.iter().any(|key| key.ends_with("temperature_c")),
        "{loud_keys:?}"
    );
    assert!(!loud_keys.contains(&"pid"), "{loud_keys:?}");
    assert_eq!(keys(&loud.volatile), ["host.uptime_s", "pid"]);
    assert!(
        !is_meaningful(&loud),
        "volatile changes alone are not meaningful"
    );
}

#[test]
fn servers_match_by_unit_not_pid() {
    let mut before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(200, 1_700_090_000);
    for (snapshot, pid) in [(&mut before, 100), (&mut after, 200)] {
        snapshot.units.push(SystemdUnit {
            name: String::from("sglang.service"),
            state: Some(UnitState {
                main_pid: Some(pid),
                ..UnitState::default()
            }),
            ..SystemdUnit::default()
        });
    }
    // The port moved too, and another server appeared on the host.
    let mut moved = base_options();
    moved[2] = ("port", json!(30001));
    let mut other = launch(300, &[("port", json!(31000))]);
    other.model = Some(String::from("/models/Qwen3-8B"));
    let diff = compare_snapshots_with(
        &before,
        &[launch(100, &base_options())],
        &after,
        &[other, launch(200, &moved)],
        &CompareOptions::default(),
    );
    assert_eq!(diff.launches.len(), 1, "{:#?}", diff.launches);
    let changes = keys(&diff.changes);
    assert!(changes.contains(&"sglang.service/port"), "{changes:?}");
    assert!(changes.contains(&"server:sglang:31000"), "{changes:?}");
}

#[test]
fn package_upgrade_is_ranked_by_impact() {
    let before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(100, 1_700_090_000);
    after.python_envs[0].packages = vec![
        package("sglang", "0.5.9"),
        package("torch", "2.9.1+cu128"),
        package("flashinfer-python", "0.4.1"),
        package("requests", "2.32.4"),
        package("nvidia-nccl-cu12", "2.27.3"),
    ];
    let launches = [launch(100, &base_options())];
    let diff = compare_snapshots_with(
        &before,
        &launches,
        &after,
        &launches,
        &CompareOptions::default(),
    );
    assert_eq!(
        keys(&diff.changes),
        [
            "package:torch",
            "package:nvidia-nccl-cu12",
            "package:requests"
        ]
    );
    let torch = &diff.changes[0];
    assert_eq!(torch.impact, Impact::High);
    assert_eq!(torch.category, Category::EngineVersions);
    assert_eq!(
        torch.note.as_deref(),
        Some("upgraded in /opt/venv/bin/python3")
    );
    assert_eq!(diff.changes[1].kind, ChangeKind::Added);
    assert!(is_meaningful(&diff));
}

/// Every distribution of the serving interpreter is compared, a pure-Python one too, each saying
/// how it came: its installer and the newest history line that installed that version, no later
/// than the install; a line that pinned another version is not it.
#[test]
fn a_package_says_which_history_line_installed_it() {
    let entry = |index: u32, time: i64, command: &str| probe_model::HistoryEntry {
        index,
        time: Some(time),
        command: command.into(),
    };
    let installed_at = 1_700_080_000;
    let before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(100, 1_700_090_000);
    after.python_envs[0].packages[3] = PythonPackage {
        installed_at: Some(installed_at),
        installer: Some("pip".into()),
        ..package("requests", "2.32.4")
    };
    after.python_envs[0].packages.push(PythonPackage {
        installed_at: Some(installed_at),
        installer: Some("uv".into()),
        ..package("pydantic", "2.12.0")
    });
    after.histories.push(probe_model::HistoryFile {
        user: "root".into(),
        path: "/root/.bash_history".into(),
        entries: vec![
            entry(0, 1_699_000_000, "pip install requests==2.32.3"),
            entry(
                1,
                installed_at - 40,
                "/opt/venv/bin/pip install -U 'requests==2.32.4' idna",
            ),
            entry(2, installed_at + 5_000, "pip install requests==2.33.0"),
            entry(3, 1_699_500_000, "uv pip install pydantic==2.11.0"),
        ],
        ..Default::default()
    });
    let launches = [launch(100, &base_options())];
    let diff = compare_snapshots_with(
        &before,
        &launches,
        &after,
        &launches,
        &CompareOptions::default(),
    );
    let note = |key: &str| {
        diff.changes
            .iter()
            .find(|c| c.key == key)
            .and_then(|c| c.note.clone())
            .unwrap_or_else(|| panic!("{key}: {:#?}", diff.changes))
    };
    assert_eq!(
        note("package:requests"),
        "upgraded in /opt/venv/bin/python3, by pip, root's /root/.bash_history entry 2: \
         /opt/venv/bin/pip install -U 'requests==2.32.4' idna"
    );
    // The only line names 2.11.0: not the line that installed 2.12.0.
    assert_eq!(
        note("package:pydantic"),
        "installed in /opt/venv/bin/python3, by uv"
    );
}

#[test]
fn engine_upgrade_is_reported_once() {
    let before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(100, 1_700_090_000);
    after.python_envs[0].packages[0] = package("sglang", "0.5.10");
    let before_launches = [launch(100, &base_options())];
    let mut upgraded = launch(100, &base_options());
    upgraded.engine_version = Some(String::from("0.5.10"));
    let diff = compare_snapshots_with(
        &before,
        &before_launches,
        &after,
        &[upgraded],
        &CompareOptions::default(),
    );
    let top = keys(&diff.changes);
    // The upgrade is one change: the package, not again as the launch's engine_version.
    assert_eq!(
        top.iter().filter(|k| **k == "package:sglang").count(),
        1,
        "{top:?}"
    );
    assert!(!top.contains(&"engine_version"), "{top:?}");
    let package = diff
        .changes
        .iter()
        .find(|c| c.key == "package:sglang")
        .unwrap();
    assert_eq!(package.impact, Impact::High);
    // SGLang 0.5.10 changed the default of --fp4-gemm-backend (flashinfer_cutlass -> auto):
    // an implicit configuration change the version catalogs know about, reported as such.
    assert!(top.contains(&"fp4-gemm-backend"), "{top:?}");
    // The launch comparison itself still names the engine version.
    assert!(keys(&diff.launches[0].changes).contains(&"engine_version"));
}

#[test]
fn gpu_power_limit_on_all_gpus_is_one_high_change() {
    let before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(100, 1_700_090_000);
    for gpu in &mut after.gpu.gpus {
        gpu.power_limit_w = Some(500.0);
    }
    after.gpu.gpus[3].ecc_mode = Some(String::from("Disabled"));
    let launches = [launch(100, &base_options())];
    let diff = compare_snapshots_with(
        &before,
        &launches,
        &after,
        &launches,
        &CompareOptions::default(),
    );
    assert_eq!(
        keys(&diff.changes),
        ["gpu:*.power_limit_w", "gpu:3.ecc_mode"]
    );
    let power = &diff.changes[0];
    assert_eq!(power.impact, Impact::High);
    assert_eq!(power.note.as_deref(), Some("all 8 GPUs"));
    assert!(
        power.explanation.contains("700 W -> 500 W"),
        "{}",
        power.explanation
    );
}

#[test]
fn other_processes_gpu_memory() {
    let before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(100, 1_700_090_000);
    after.gpu.compute_apps.push(ComputeApp {
        gpu_uuid: Some(String::from("GPU-0")),
        pid: Some(4242),
        process_name: Some(String::from("python3 train.py")),
        used_memory_mib: Some(20_000),
    });
    let launches = [launch(100, &base_options())];
    let diff = compare_snapshots_with(
        &before,
        &launches,
        &after,
        &launches,
        &CompareOptions::default(),
    );
    assert_eq!(keys(&diff.changes), ["gpu.other_processes_mib"]);
    assert_eq!(diff.changes[0].category, Category::MemoryKvCache);
    assert_eq!(diff.changes[0].after, Some(json!(20_000)));
}

#[test]
fn metrics_drop_and_model_config() {
    let before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(100, 1_700_090_000);
    after.logs[0].metrics[0].summary = summary(1200.0, 300);
    after.logs[0].metrics[1].summary = summary(2.45, 300);
    after.models[0]
        .fields
        .insert(String::from("num_nextn_predict_layers"), json!(0));
    let launches = [launch(100, &base_options())];
    let diff = compare_snapshots_with(
        &before,
        &launches,
        &after,
        &launches,
        &CompareOptions::default(),
    );
    let throughput = diff
        .metrics
        .iter()
        .find(|metric| metric.name == "gen_throughput")
        .expect("gen_throughput compared");
    let change = throughput.change.expect("relative change");
    assert!((change + 0.4).abs() < 1e-9, "{change}");
    // accept_len moved 2%: compared, but not a change.
    assert_eq!(diff.metrics.len(), 2);
    assert_eq!(
        keys(&diff.changes),
        [
            "model_config:num_nextn_predict_layers",
            "metric:gen_throughput",
        ]
    );
    // The cause is held against the symptom; the symptom follows the causes.
    let cause = diff.changes[0].verdict.as_ref().expect("a verdict");
    assert_eq!(cause.assessment, probe_model::Assessment::Consistent);
    let symptom = &diff.changes[1];
    assert!(symptom.verdict.is_none());
    assert_eq!(symptom.impact, Impact::High);
    assert!(
        symptom.explanation.contains("fell 40%"),
        "{}",
        symptom.explanation
    );
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, probe_model::Conclusion::Unexplained);
}

#[test]
fn why_is_it_slower_comes_first() {
    let before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(200, 1_700_090_000);
    after.logs[0].metrics[0].summary = summary(900.0, 300);
    after.host.kernel = Some(String::from("6.8.0-50-generic"));
    after.python_envs[0].packages[2] = package("flashinfer-python", "0.4.2");
    let mut with_spec = launch(100, &base_options());
    with_spec.speculative = Some(Speculative {
        algorithm: Some(String::from("NEXTN")),
        effective_algorithm: Some(String::from("EAGLE")),
        num_steps: Some(json!(3)),
        ..Speculative::default()
    });
    let mut without = launch(200, &base_options());
    without.options.insert(
        String::from("mem-fraction-static"),
        LaunchOption {
            value: json!(0.8),
            written: String::from("--mem-fraction-static 0.8"),
        },
    );
    let diff = compare_snapshots_with(
        &before,
        &[with_spec],
        &after,
        &[without],
        &CompareOptions::default(),
    );
    assert_eq!(
        keys(&diff.changes),
        [
            "mem-fraction-static",
            "package:flashinfer-python",
            "host.kernel",
            "speculative.algorithm",
            "metric:gen_throughput",
        ]
    );
    // The logs of both sides report the same accept length: the speculative change is held
    // against it and ruled out, after the causes still open.
    let speculative = diff
        .changes
        .iter()
        .find(|c| c.key == "speculative.algorithm")
        .unwrap();
    let verdict = speculative.verdict.as_ref().unwrap();
    assert_eq!(
        verdict.assessment,
        probe_model::Assessment::RuledOut,
        "{verdict:?}"
    );
    assert!(
        verdict.reason.contains("accept length held"),
        "{}",
        verdict.reason
    );
    assert_eq!(speculative.kind, ChangeKind::Removed);
    assert!(
        speculative
            .explanation
            .contains("decode throughput drops without speculative decoding")
    );
}

#[test]
fn unit_file_text_diff() {
    let unit = |exec: &str, mtime: i64| SystemdUnit {
        name: String::from("sglang.service"),
        fragment: FileText {
            path: String::from("/etc/systemd/system/sglang.service"),
            mtime: Some(mtime),
            content: format!(
                "[Unit]\nDescription=SGLang\n\n[Service]\nExecStart={exec}\nRestart=always\n"
            ),
            truncated: false,
        },
        ..SystemdUnit::default()
    };
    let mut before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(100, 1_700_090_000);
    before.units.push(unit(
        "/opt/venv/bin/python3 -m sglang.launch_server --tp 8",
        1,
    ));
    after.units.push(unit(
        "/opt/venv/bin/python3 -m sglang.launch_server --tp 4",
        2,
    ));
    let diff = compare_snapshots_with(&before, &[], &after, &[], &CompareOptions::default());
    assert_eq!(diff.texts.len(), 1);
    assert_eq!(
        diff.texts[0].unified,
        "--- a/etc/systemd/system/sglang.service\n\
         +++ b/etc/systemd/system/sglang.service\n\
         @@ -2,5 +2,5 @@\n \
         Description=SGLang\n \n \
         [Service]\n\
         -ExecStart=/opt/venv/bin/python3 -m sglang.launch_server --tp 8\n\
         +ExecStart=/opt/venv/bin/python3 -m sglang.launch_server --tp 4\n \
         Restart=always\n"
    );
    assert_eq!(keys(&diff.changes), ["unit:sglang.service"]);
}

#[test]
fn unified_diff_of_equal_and_new_texts() {
    assert_eq!(unified_diff("x", "same\n", "same\n").unified, "");
    let added = unified_diff(
        "override.conf",
        "",
        "[Service]\nEnvironment=NCCL_P2P_DISABLE=1\n",
    );
    assert_eq!(
        added.unified,
        "--- a/override.conf\n+++ b/override.conf\n@@ -0,0 +1,2 @@\n+[Service]\n+Environment=NCCL_P2P_DISABLE=1\n"
    );
    assert_eq!(added.label, "override.conf");
}

#[test]
fn identical_snapshots_have_no_changes() {
    let before = snapshot(100, 1_700_000_000);
    let launches = [launch(100, &base_options())];
    let diff = compare_snapshots_with(
        &before,
        &launches,
        &before,
        &launches,
        &CompareOptions::default(),
    );
    assert!(diff.changes.is_empty() && diff.volatile.is_empty() && diff.texts.is_empty());
    assert_eq!(diff.before.host, "gpu7");
}

#[test]
fn rank_orders_impact_then_category_then_key() {
    let change = |key: &str, impact: Impact, category: Category| Change {
        key: key.to_string(),
        impact,
        category,
        ..Change::default()
    };
    let mut changes = vec![
        change("host.kernel", Impact::Low, Category::Host),
        change("metric:gen_throughput", Impact::High, Category::Metrics),
        change("b", Impact::Medium, Category::MemoryKvCache),
        change("a", Impact::Medium, Category::MemoryKvCache),
        change("tp-size", Impact::High, Category::Parallelism),
        change(
            "speculative.algorithm",
            Impact::High,
            Category::SpeculativeDecoding,
        ),
    ];
    rank(&mut changes);
    assert_eq!(
        keys(&changes),
        [
            "speculative.algorithm",
            "tp-size",
            "metric:gen_throughput",
            "a",
            "b",
            "host.kernel"
        ]
    );
}

/// Two hosts side by side: what names them (host name, machine id, GPU UUIDs) is the diff's
/// header, never a change, a candidate cause or the verdict's (issue 33: identity apart).
#[test]
fn identity_is_the_header_never_a_change() {
    let before = snapshot(100, 1_700_000_000);
    let mut after = snapshot(100, 1_700_000_600);
    after.host.hostname = Some(String::from("gpu8"));
    after.host.machine_id = Some(String::from("0f3c"));
    after.gpu.gpus = vec![gpu(0, 700.0, 50)];
    after.gpu.gpus[0].uuid = Some(String::from("GPU-8f1e"));
    let launches = [launch(100, &base_options())];
    let diff = compare_snapshots_with(
        &before,
        &launches,
        &after,
        &launches,
        &CompareOptions::default(),
    );
    assert!(
        !keys(&diff.changes).contains(&"host.hostname"),
        "{:?}",
        keys(&diff.changes)
    );
    assert!(keys(&diff.volatile).contains(&"host.hostname"));
    assert_eq!(
        (diff.after.host.as_str(), diff.after.machine_id.as_deref()),
        ("gpu8", Some("0f3c"))
    );
    assert_eq!(diff.after.gpu_uuids, ["GPU-8f1e"]);
    assert!(diff.after.gpus.starts_with("1 x "), "{}", diff.after.gpus);
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert!(
        !verdict.headline.contains("hostname"),
        "{}",
        verdict.headline
    );
}
