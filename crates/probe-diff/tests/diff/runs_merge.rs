//! One run, one launch: a process with its container or unit, its start-up log line (and the
//! journal's copy), and the history line that started it are one launch with the process's
//! options; other runs stay apart.

use std::collections::BTreeMap;

use probe_launch::launches_of;
use probe_model::{
    ContainerInfo, LogOrigin, LogSource, ProcessInfo, ProcessRole, Snapshot, SourceKind,
    StartupRecord, SystemdUnit, UnitState,
};

const START: i64 = 1_796_033_530;
const CONTAINER_ID: &str = "3f2a9c1d8e7b5a4f6c0d2e1b9a8f7c6d5e4b3a2f1c0d9e8b7a6f5c4d3e2b1a0f";

fn args(text: &str) -> Vec<String> {
    text.split_whitespace().map(String::from).collect()
}

fn process(pid: u32, ppid: u32, argv: &str) -> ProcessInfo {
    ProcessInfo {
        pid,
        ppid: Some(ppid),
        argv: args(argv),
        start_time: Some(START),
        role: ProcessRole::Launcher,
        engine: Some(probe_model::Engine::Vllm),
        env: BTreeMap::from([("PATH".into(), "/usr/bin".into())]),
        ..ProcessInfo::default()
    }
}

fn log(location: &str, origin: LogOrigin, lines: &[(i64, &str)]) -> LogSource {
    LogSource {
        origin,
        location: location.into(),
        startups: lines
            .iter()
            .map(|(time, text)| StartupRecord {
                time: Some(*time),
                engine: probe_model::Engine::Vllm,
                text: format!("non-default args: {text}"),
                version: None,
            })
            .collect(),
        ..LogSource::default()
    }
}

#[test]
fn docker_process_and_its_container_are_one_running_launch() {
    let cmd = "--model /mnt/models/L --tensor-parallel-size 4 --max-model-len 32768";
    let mut inside = process(
        120,
        118,
        &format!("python3 -m vllm.entrypoints.openai.api_server {cmd}"),
    );
    inside.container_id = Some(CONTAINER_ID.into());
    let snapshot = Snapshot {
        processes: vec![inside],
        containers: vec![
            ContainerInfo {
                runtime: probe_model::ContainerRuntime::Docker,
                id: CONTAINER_ID.into(),
                name: Some("vllm-llama".into()),
                image: "vllm/vllm-openai:v0.11.0".into(),
                entrypoint: args("python3 -m vllm.entrypoints.openai.api_server"),
                cmd: args(cmd),
                started_at: Some(START + 1),
                state: Some("running".into()),
                ..ContainerInfo::default()
            },
            // Another container (exited) with another configuration stays its own launch.
            ContainerInfo {
                runtime: probe_model::ContainerRuntime::Docker,
                id: "8b1e4d7c2a5f9e0b3c6d8a1f4e7b0c2d5a8f1e4b7c0d3a6f9e2b5c8d1a4f7e0b".into(),
                name: Some("vllm-old".into()),
                image: "vllm/vllm-openai:v0.10.2".into(),
                cmd: args("--model /mnt/models/L --tensor-parallel-size 4 --max-model-len 16384"),
                started_at: Some(START - 86_400),
                state: Some("exited".into()),
                ..ContainerInfo::default()
            },
        ],
        ..Snapshot::default()
    };
    let launches = launches_of(&snapshot);
    let running: Vec<_> = launches.iter().filter(|l| l.source.running).collect();
    assert_eq!(running.len(), 1, "{running:#?}");
    let launch = running.first().copied().unwrap_or_else(|| unreachable!());
    assert_eq!(launch.source.kind, SourceKind::Process);
    assert_eq!(launch.source.location, "pid:120");
    assert_eq!(launch.source.also_seen_in, vec!["container:vllm-llama"]);
    assert_eq!(launch.wrappers.first().map(String::as_str), Some("docker"));
    // The process's whole environment, not the container's view of it.
    assert!(launch.env.contains_key("PATH"));
    assert_eq!(launches.len(), 2, "{launches:#?}");
    assert!(
        launches
            .iter()
            .any(|l| l.source.location == "container:vllm-old" && !l.source.running)
    );
}

#[test]
fn unit_process_and_start_up_lines_are_one_run_and_earlier_runs_stay_apart() {
    let exec = "/opt/v/bin/vllm serve /mnt/models/G --tensor-parallel-size 4 --gpu-memory-utilization 0.92";
    let current = "{'model_tag': '/mnt/models/G', 'model': '/mnt/models/G', \
                   'tensor_parallel_size': 4, 'gpu_memory_utilization': 0.92, \
                   'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 1}}";
    let exec = format!("{exec} --speculative-config {{\"method\":\"mtp\"}}");
    let earlier = "{'model_tag': '/mnt/models/G', 'tensor_parallel_size': 4, \
                   'gpu_memory_utilization': 0.9}";
    let snapshot = Snapshot {
        processes: vec![process(63, 1, &format!("/opt/v/bin/python3 {exec}"))],
        units: vec![SystemdUnit {
            name: "vllm.service".into(),
            exec_start: vec![exec.clone()],
            state: Some(UnitState {
                active_state: Some("active".into()),
                main_pid: Some(63),
                exec_main_start: Some(START + 1),
                ..UnitState::default()
            }),
            ..SystemdUnit::default()
        }],
        logs: vec![
            log(
                "vllm.service",
                LogOrigin::Journal,
                &[
                    (START - 9 * 86_400, earlier),
                    (START - 86_400, current),
                    (START + 1, current),
                ],
            ),
            log(
                "/var/log/vllm.log",
                LogOrigin::File,
                &[(START + 2, current)],
            ),
        ],
        ..Snapshot::default()
    };
    let launches = launches_of(&snapshot);
    let running: Vec<_> = launches.iter().filter(|l| l.source.running).collect();
    assert_eq!(running.len(), 1, "{running:#?}");
    let launch = running.first().copied().unwrap_or_else(|| unreachable!());
    assert_eq!(launch.source.location, "pid:63");
    assert_eq!(
        launch.source.also_seen_in,
        vec![
            "unit:vllm.service",
            "log:vllm.service",
            "log:/var/log/vllm.log"
        ]
    );
    // The log's resolved speculative tokens fill in what the command line left to the engine.
    assert_eq!(
        launch
            .speculative
            .as_ref()
            .and_then(|s| s.num_speculative_tokens.clone()),
        Some(serde_json::json!(1))
    );
    assert!(launch.log_files.contains(&"/var/log/vllm.log".to_string()));
    // Yesterday's start (same configuration, another run) and last week's stay their own.
    let logs: Vec<i64> = launches
        .iter()
        .filter(|l| l.source.kind == SourceKind::Log)
        .filter_map(|l| l.source.time.at)
        .collect();
    assert_eq!(logs, vec![START - 9 * 86_400, START - 86_400]);

    // The timeline has one event per run.
    let timeline = probe_diff::timeline(&snapshot);
    let launch_events = timeline
        .events
        .iter()
        .filter(|e| e.launch.is_some())
        .count();
    assert_eq!(launch_events, 3, "{:#?}", timeline.events);
}

#[test]
fn a_log_line_after_a_restart_is_not_merged_into_the_earlier_run() {
    // Unit started at START; a history line restarted the server by hand 5 minutes later with
    // the same options; the log line 6 minutes after START belongs to the later run.
    let exec = "/opt/v/bin/vllm serve /m --tensor-parallel-size 2";
    let mut snapshot = Snapshot {
        units: vec![SystemdUnit {
            name: "vllm.service".into(),
            exec_start: vec![exec.into()],
            state: Some(UnitState {
                active_state: Some("inactive".into()),
                exec_main_start: Some(START),
                ..UnitState::default()
            }),
            ..SystemdUnit::default()
        }],
        logs: vec![log(
            "/var/log/vllm.log",
            LogOrigin::File,
            &[(
                START + 360,
                "{'model_tag': '/m', 'tensor_parallel_size': 2}",
            )],
        )],
        ..Snapshot::default()
    };
    snapshot.histories = vec![probe_model::HistoryFile {
        path: "/root/.bash_history".into(),
        entries: vec![probe_model::HistoryEntry {
            index: 7,
            time: Some(START + 300),
            command: format!("nohup {exec} > /var/log/vllm.log 2>&1 &"),
        }],
        ..probe_model::HistoryFile::default()
    }];
    let launches = launches_of(&snapshot);
    let history = launches
        .iter()
        .find(|l| l.source.kind == SourceKind::History)
        .expect("the history line");
    assert_eq!(history.source.also_seen_in, vec!["log:/var/log/vllm.log"]);
    let unit = launches
        .iter()
        .find(|l| l.source.kind == SourceKind::Unit)
        .expect("the unit");
    assert!(unit.source.also_seen_in.is_empty(), "{unit:#?}");
}

/// An exited container's run ends where the runtime says it stopped (`State.FinishedAt`), not at
/// the next start; a stop the runtime did not record leaves the next start as the bound.
/// `(finished_at, expected end, its evidence)`.
#[test]
fn an_exited_containers_run_ends_at_its_recorded_stop() {
    let cases: [(Option<i64>, i64, &str); 3] = [
        (
            Some(START - 3_600),
            START - 3_600,
            "container vllm-old FinishedAt",
        ),
        (None, START, "next start of the same server"),
        // A stop after the next run started is not this run's end.
        (Some(START + 60), START, "next start of the same server"),
    ];
    for (finished_at, want_end, evidence) in cases {
        let container = |name: &str, tag: &str, started_at: i64, state: &str| ContainerInfo {
            runtime: probe_model::ContainerRuntime::Docker,
            id: format!("{name}-id"),
            name: Some(name.into()),
            image: format!("vllm/vllm-openai:{tag}"),
            cmd: args("--model /mnt/models/L --tensor-parallel-size 4"),
            started_at: Some(started_at),
            state: Some(state.into()),
            ..ContainerInfo::default()
        };
        let snapshot = Snapshot {
            containers: vec![
                container("vllm", "v0.11.0", START, "running"),
                ContainerInfo {
                    finished_at,
                    ..container("vllm-old", "v0.10.2", START - 86_400, "exited")
                },
            ],
            ..Snapshot::default()
        };
        let analysis = probe_diff::analyze(&snapshot);
        let old = analysis
            .runs
            .iter()
            .find(|r| r.launch == "container:vllm-old")
            .unwrap_or_else(|| panic!("no run of vllm-old: {:#?}", analysis.runs));
        let end = old.end.as_ref().expect("an end");
        assert_eq!(end.at, Some(want_end), "{finished_at:?}: {end:?}");
        assert!(
            end.evidence.starts_with(evidence),
            "{finished_at:?}: {}",
            end.evidence
        );
    }
}
