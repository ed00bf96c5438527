//! `launches_of`: every piece of launch evidence in a snapshot, with sources, times, running state
//! and the engine version from the serving interpreter's packages.

use std::collections::BTreeMap;

use probe_launch::common::common_fields;
use probe_launch::launches_of;
use probe_model::*;

fn snapshot() -> Snapshot {
    let mut env = BTreeMap::new();
    env.insert("CUDA_VISIBLE_DEVICES".to_string(), "0,1".to_string());
    Snapshot {
        processes: vec![
            ProcessInfo {
                pid: 4242,
                argv: ["/opt/sg/bin/python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Q", "--tp", "2", "--cuda-graph-max-bs", "16"]
                    .map(String::from)
                    .to_vec(),
                cwd: Some("/srv".into()),
                start_time: Some(1_700_000_500),
                env,
                role: ProcessRole::Launcher,
                ..ProcessInfo::default()
            },
            ProcessInfo { pid: 4243, argv: vec!["sglang::scheduler_TP0".into()], role: ProcessRole::Worker, ..ProcessInfo::default() },
        ],
        python_envs: vec![PythonEnv {
            interpreter: "/opt/sg/bin/python3".into(),
            prefix: Some("/opt/sg".into()),
            packages: vec![PythonPackage { name: "sglang".into(), version: "0.5.14".into(), ..PythonPackage::default() }],
            ..PythonEnv::default()
        }],
        units: vec![SystemdUnit {
            name: "vllm@a.service".into(),
            fragment: FileText { path: "/etc/systemd/system/vllm@.service".into(), mtime: Some(1_600_000_000), ..FileText::default() },
            exec_start: vec!["/usr/bin/vllm serve /models/%i --port ${PORT} $EXTRA".into()],
            environment: [("PORT".to_string(), "8001".to_string())].into_iter().collect(),
            environment_files: vec![EnvironmentFile {
                path: "/etc/vllm.env".into(),
                vars: [("EXTRA".to_string(), "--max-model-len 16K -tp 2".to_string())].into_iter().collect(),
                ..EnvironmentFile::default()
            }],
            state: Some(UnitState { active_state: Some("inactive".into()), ..UnitState::default() }),
            ..SystemdUnit::default()
        }],
        histories: vec![HistoryFile {
            path: "/root/.bash_history".into(),
            mtime: Some(1_650_000_000),
            entries: vec![
                HistoryEntry { index: 0, time: None, command: "ls".into() },
                HistoryEntry { index: 1, time: None, command: "nohup vllm serve m --port 9 > v.log 2>&1 &".into() },
            ],
            ..HistoryFile::default()
        }],
        containers: vec![ContainerInfo {
            runtime: probe_model::ContainerRuntime::Docker,
            id: "abc".into(),
            name: Some("tgi".into()),
            image: "ghcr.io/huggingface/text-generation-inference:3.0.1".into(),
            entrypoint: vec!["text-generation-launcher".into()],
            cmd: vec!["--json-output".into()],
            env: [("MODEL_ID".to_string(), "org/m".to_string()), ("NUM_SHARD".to_string(), "2".to_string())].into_iter().collect(),
            state: Some("running".into()),
            ..ContainerInfo::default()
        }],
        logs: vec![LogSource {
            location: "/srv/s.log".into(),
            startups: vec![StartupRecord {
                time: Some(1_700_000_510),
                engine: probe_model::Engine::Sglang,
                text: "server_args=ServerArgs(model_path='Qwen/Q', tp_size=2, mem_fraction_static=0.85)".into(),
                version: None,
            }],
            ..LogSource::default()
        }],
        ..Snapshot::default()
    }
}

#[test]
fn every_source_is_read() {
    let all = launches_of(&snapshot());
    assert_eq!(
        all.len(),
        5,
        "{:#?}",
        all.iter()
            .map(|l| l.source.location.clone())
            .collect::<Vec<_>>()
    );

    let p = all
        .iter()
        .find(|l| l.source.location == "pid:4242")
        .cloned()
        .unwrap_or_default();
    assert_eq!(p.engine, Engine::Sglang);
    assert!(p.source.running);
    assert_eq!(p.source.time.at, Some(1_700_000_500));
    assert_eq!(p.engine_version.as_deref(), Some("0.5.14"));
    assert_eq!(p.working_directory.as_deref(), Some("/srv"));
    // 0.5.14 knows the old spelling as the renamed option.
    assert!(
        p.options.contains_key("cuda-graph-max-bs-decode"),
        "{:?}",
        p.options.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        common_fields(&p).get("tensor_parallel"),
        Some(&serde_json::json!(2))
    );

    let u = all
        .iter()
        .find(|l| l.source.location == "unit:vllm@a.service")
        .cloned()
        .unwrap_or_default();
    assert_eq!(u.model.as_deref(), Some("/models/a"));
    assert_eq!(
        u.options.get("port").map(|o| o.value.clone()),
        Some(serde_json::json!(8001))
    );
    assert_eq!(
        u.options.get("max-model-len").map(|o| o.value.clone()),
        Some(serde_json::json!(16384))
    );
    assert!(!u.source.running);
    assert_eq!(u.source.time.not_before, Some(1_600_000_000));

    let h = all
        .iter()
        .find(|l| l.source.location == "/root/.bash_history#1")
        .cloned()
        .unwrap_or_default();
    assert_eq!(h.source.time.not_after, Some(1_650_000_000));
    assert_eq!(h.log_files, vec!["v.log".to_string()]);

    let c = all
        .iter()
        .find(|l| l.source.location == "container:tgi")
        .cloned()
        .unwrap_or_default();
    assert_eq!(c.engine, Engine::Tgi);
    assert_eq!(c.model.as_deref(), Some("org/m"));
    assert_eq!(
        common_fields(&c).get("tensor_parallel"),
        Some(&serde_json::json!(2))
    );
    assert!(c.source.running);

    let g = all
        .iter()
        .find(|l| l.source.location == "/srv/s.log")
        .cloned()
        .unwrap_or_default();
    assert_eq!(g.source.time.at, Some(1_700_000_510));
    assert_eq!(
        g.options
            .get("mem-fraction-static")
            .map(|o| o.value.clone()),
        Some(serde_json::json!(0.85))
    );
}
