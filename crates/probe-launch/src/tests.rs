//! Unit tests of the launch reader on small texts.

use std::collections::BTreeMap;

use probe_model::{Engine, LaunchConfig, ProcessRole, Snapshot};

use super::*;

fn one(text: &str) -> LaunchConfig {
    let v = reconstruct(text, &ParseHints::default());
    assert!(!v.is_empty(), "no launch in {text:?}");
    v.into_iter().next().unwrap_or_default()
}

#[test]
fn sglang_prefixes_resolve_against_the_catalog() {
    let l = one(
        "python -m sglang.launch_server --model m --tp 2 --speculative-algo NEXTN --mem-fraction 0.8",
    );
    assert_eq!(l.engine, Engine::Sglang);
    assert_eq!(l.model.as_deref(), Some("m"));
    assert_eq!(
        l.options.get("tp-size").map(|o| o.value.clone()),
        Some(serde_json::json!(2))
    );
    assert_eq!(
        l.options.get("tp-size").map(|o| o.written.clone()),
        Some("--tp 2".into())
    );
    assert_eq!(
        l.options
            .get("mem-fraction-static")
            .map(|o| o.value.clone()),
        Some(serde_json::json!(0.8))
    );
    let s = l.speculative.unwrap_or_default();
    assert_eq!(s.algorithm.as_deref(), Some("NEXTN"));
    assert_eq!(s.effective_algorithm.as_deref(), Some("EAGLE"));
    assert_eq!(s.implied.get("num_steps"), Some(&serde_json::json!(3)));
}

#[test]
fn ambiguous_prefix_is_reported() {
    let l = one("python -m sglang.launch_server --model-path m --speculative-draft d");
    assert!(
        l.warnings.iter().any(|w| w.contains("ambiguous")),
        "{:?}",
        l.warnings
    );
}

#[test]
fn vllm_units_underscores_and_dotted_keys() {
    let l = one(
        "vllm serve m --max_model_len 16K --max-num-batched-tokens 16k --speculative-config.method mtp --speculative-config.num_speculative_tokens 2",
    );
    assert_eq!(
        l.options.get("max-model-len").map(|o| o.value.clone()),
        Some(serde_json::json!(16384))
    );
    assert_eq!(
        l.options
            .get("max-num-batched-tokens")
            .map(|o| o.value.clone()),
        Some(serde_json::json!(16000))
    );
    assert_eq!(
        l.options.get("speculative-config").map(|o| o.value.clone()),
        Some(serde_json::json!({"method": "mtp", "num_speculative_tokens": 2}))
    );
}

#[test]
fn repeated_flag_last_wins_and_unknown_kept() {
    let l = one("vllm serve m --port 1 --port 2 --frobnicate 3");
    assert_eq!(
        l.options.get("port").map(|o| o.value.clone()),
        Some(serde_json::json!(2))
    );
    assert_eq!(l.unknown, vec!["--frobnicate".to_string(), "3".to_string()]);
    assert!(l.warnings.iter().any(|w| w.contains("--frobnicate")));
}

#[test]
fn renamed_sglang_flags_follow_the_version() {
    let old = reconstruct(
        "python -m sglang.launch_server --model-path m --cuda-graph-max-bs 8",
        &ParseHints {
            engine_version: Some("0.5.14".into()),
            ..ParseHints::default()
        },
    );
    let l = old.first().cloned().unwrap_or_default();
    assert!(
        l.options.contains_key("cuda-graph-max-bs-decode"),
        "{:?}",
        l.options.keys().collect::<Vec<_>>()
    );
    let new = reconstruct(
        "python -m sglang.launch_server --model-path m --cuda-graph-max-bs 8",
        &ParseHints {
            engine_version: Some("0.5.23".into()),
            ..ParseHints::default()
        },
    );
    let l = new.first().cloned().unwrap_or_default();
    assert!(
        l.warnings.iter().any(|w| w.contains("ambiguous")),
        "{:?}",
        l.warnings
    );
}

#[test]
fn wrappers_logs_and_workdir() {
    let l = one("cd /srv && nohup uv run vllm serve m > v.log 2>&1 &");
    assert_eq!(l.wrappers, vec!["nohup".to_string(), "uv run".to_string()]);
    assert_eq!(l.log_files, vec!["v.log".to_string()]);
    assert_eq!(l.working_directory.as_deref(), Some("/srv"));
    let l = one("nohup python3 -m sglang.launch_server --model-path m &");
    assert_eq!(l.log_files, vec!["nohup.out".to_string()]);
    let l = one("python -m sglang.launch_server --model-path m 2>&1 | tee -a s.log");
    assert_eq!(l.log_files, vec!["s.log".to_string()]);
    assert!(l.wrappers.contains(&"tee".to_string()));
}

#[test]
fn docker_and_argv() {
    let l = one(
        "docker run --gpus all -e A=1 -p 80:8000 vllm/vllm-openai:v0.9.0 m --tensor-parallel-size 2",
    );
    assert_eq!(l.engine, Engine::Vllm);
    assert_eq!(l.model.as_deref(), Some("m"));
    assert_eq!(l.env.get("A").map(String::as_str), Some("1"));
    assert_eq!(l.wrappers.first().map(String::as_str), Some("docker"));
    let v = reconstruct(
        "/opt/v/bin/python3\0-m\0vllm.entrypoints.openai.api_server\0--model\0x\0",
        &ParseHints::default(),
    );
    assert_eq!(
        v.first().and_then(|l| l.model.clone()).as_deref(),
        Some("x")
    );
}

#[test]
fn startup_lines() {
    let l = one(
        "[2025] server_args=ServerArgs(model_path='m', tp_size=4, speculative_algorithm='EAGLE', speculative_num_steps=3)",
    );
    assert_eq!(l.engine, Engine::Sglang);
    assert_eq!(
        l.options.get("tp-size").map(|o| o.value.clone()),
        Some(serde_json::json!(4))
    );
    let l = one(
        "INFO non-default args: {'model': 'x', 'tensor_parallel_size': 2, 'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 1}}",
    );
    assert_eq!(l.engine, Engine::Vllm);
    assert_eq!(l.model.as_deref(), Some("x"));
    assert_eq!(l.speculative.and_then(|s| s.algorithm), Some("mtp".into()));
}

#[test]
fn non_server_commands_are_skipped() {
    assert!(reconstruct("echo hi\nls -la\npython train.py\n", &ParseHints::default()).is_empty());
}

#[test]
fn console_script_run_by_its_interpreter() {
    // /proc/PID/cmdline of a script started through its shebang.
    let argv: Vec<String> = [
        "/opt/venvs/vllm/bin/python3",
        "/opt/venvs/vllm/bin/vllm",
        "serve",
        "/mnt/models/GLM-4.5-Air-FP8",
        "--tensor-parallel-size",
        "4",
    ]
    .map(String::from)
    .to_vec();
    let l = from_argv(&argv, &BTreeMap::new(), &ParseHints::default()).unwrap_or_default();
    assert_eq!(l.engine, Engine::Vllm);
    assert_eq!(l.model.as_deref(), Some("/mnt/models/GLM-4.5-Air-FP8"));
    assert_eq!(
        l.interpreter.as_deref(),
        Some("/opt/venvs/vllm/bin/python3")
    );
    assert_eq!(l.venv.as_deref(), Some("/opt/venvs/vllm"));
    // A script that is no engine stays no launch.
    let argv: Vec<String> = ["python3", "/srv/train.py", "serve"]
        .map(String::from)
        .to_vec();
    assert!(from_argv(&argv, &BTreeMap::new(), &ParseHints::default()).is_none());
}

/// docker-vllm in small: a running container (its own packages read through pid 120), an
/// exited one from an older image, the history lines that started both, and a host venv.
fn docker_snapshot() -> Snapshot {
    use probe_model::{
        ContainerInfo, HistoryEntry, HistoryFile, ProcessInfo, PythonEnv, PythonPackage,
    };
    let vllm = |v: &str| PythonPackage {
        name: "vllm".into(),
        version: v.into(),
        ..PythonPackage::default()
    };
    let running_id = "3f2a9c1d8e7b5a4f6c0d2e1b9a8f7c6d";
    let cmd = |name: &str| -> Vec<String> {
        let _ = name;
        ["--model", "/m", "--tensor-parallel-size", "4"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let history = |i: u32, image: &str, name: &str| HistoryEntry {
        index: i,
        time: None,
        command: format!(
            "docker run -d --name {name} --gpus all {image} --model /m --tensor-parallel-size 4"
        ),
    };
    Snapshot {
        processes: vec![ProcessInfo {
            pid: 120,
            argv: [
                "python3",
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                "/m",
                "--tensor-parallel-size",
                "4",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            role: ProcessRole::Launcher,
            engine: Some(probe_model::Engine::Vllm),
            container_id: Some(running_id.into()),
            mount_root: Some("/proc/120/root".into()),
            ..ProcessInfo::default()
        }],
        containers: vec![
            ContainerInfo {
                runtime: probe_model::ContainerRuntime::Docker,
                id: running_id.into(),
                name: Some("vllm-llama".into()),
                image: "vllm/vllm-openai:v0.11.0".into(),
                cmd: cmd("vllm-llama"),
                state: Some("running".into()),
                ..ContainerInfo::default()
            },
            ContainerInfo {
                runtime: probe_model::ContainerRuntime::Docker,
                id: "8b1e4d7c2a5f9e0b3c6d8a1f4e7b0c2d".into(),
                name: Some("vllm-llama-v0102".into()),
                image: "vllm/vllm-openai:v0.10.2".into(),
                cmd: cmd("vllm-llama-v0102"),
                state: Some("exited".into()),
                started_at: Some(1_700_000_000),
                ..ContainerInfo::default()
            },
        ],
        python_envs: vec![
            PythonEnv {
                interpreter: "/usr/bin/python3.11".into(),
                used_by: vec!["pid:120".into()],
                packages: vec![vllm("0.11.0")],
                mount_root: Some("/proc/120/root".into()),
                ..PythonEnv::default()
            },
            PythonEnv {
                interpreter: "/opt/venv/bin/python3".into(),
                prefix: Some("/opt/venv".into()),
                packages: vec![PythonPackage {
                    installed_at: Some(1_000),
                    ..vllm("0.9.0")
                }],
                ..PythonEnv::default()
            },
        ],
        histories: vec![HistoryFile {
            path: "/root/.bash_history".into(),
            entries: vec![
                history(4, "vllm/vllm-openai:v0.10.2", "old"),
                history(5, "vllm/vllm-openai:latest", "latest"),
                history(6, "vllm/vllm-openai@sha256:0123456789abcdef", "digest"),
                HistoryEntry {
                    index: 7,
                    time: Some(2_000),
                    command:
                        "/opt/venv/bin/python3 -m vllm.entrypoints.openai.api_server --model /h"
                            .into(),
                },
                // Run before the venv's vllm was installed: that version is not what it ran.
                HistoryEntry {
                    index: 8,
                    time: Some(500),
                    command:
                        "/opt/venv/bin/python3 -m vllm.entrypoints.openai.api_server --model /h"
                            .into(),
                },
            ],
            ..HistoryFile::default()
        }],
        ..Snapshot::default()
    }
}

#[test]
fn container_launches_take_their_image_tag_or_their_own_packages() {
    let launches = launches_of(&docker_snapshot());
    let version = |loc: &str| {
        launches
            .iter()
            .find(|l| l.source.location == loc || l.source.also_seen_in.iter().any(|s| s == loc))
            .unwrap_or_else(|| panic!("no launch from {loc}: {launches:#?}"))
            .engine_version
            .clone()
    };
    // The exited container: its image tag, not the running container's packages.
    assert_eq!(
        version("container:vllm-llama-v0102").as_deref(),
        Some("0.10.2")
    );
    // The running one: its own packages (read through its process).
    assert_eq!(version("pid:120").as_deref(), Some("0.11.0"));
    assert_eq!(version("/root/.bash_history#4").as_deref(), Some("0.10.2"));
    // `latest` and a digest name no version; the host venv's is not theirs.
    assert_eq!(version("/root/.bash_history#5"), None);
    assert_eq!(version("/root/.bash_history#6"), None);
    // A host launch by the venv's interpreter: the venv's version, not the container's.
    assert_eq!(version("/root/.bash_history#7").as_deref(), Some("0.9.0"));
    // Never a version installed after the launch started.
    assert_eq!(version("/root/.bash_history#8"), None);
}

#[test]
fn image_tags_name_versions() {
    use super::spec::image_version;
    let v = |i: &str, e| image_version(i, e);
    assert_eq!(
        v("vllm/vllm-openai:v0.10.2", Engine::Vllm).as_deref(),
        Some("0.10.2")
    );
    assert_eq!(
        v("lmsysorg/sglang:v0.5.9-cu128", Engine::Sglang).as_deref(),
        Some("0.5.9")
    );
    assert_eq!(
        v(
            "ghcr.io/huggingface/text-generation-inference:3.0.1",
            Engine::Tgi
        )
        .as_deref(),
        Some("3.0.1")
    );
    assert_eq!(v("localhost:5000/vllm-openai", Engine::Vllm), None);
    assert_eq!(v("vllm/vllm-openai:latest", Engine::Vllm), None);
    assert_eq!(v("vllm/vllm-openai", Engine::Vllm), None);
    assert_eq!(v("vllm/vllm-openai:nightly-abc", Engine::Vllm), None);
    assert_eq!(v("vllm/vllm-openai@sha256:00ff", Engine::Vllm), None);
    // Ollama's own image: its tag is Ollama's version (the engine hints name it, as every engine).
    assert_eq!(
        v("ollama/ollama:0.12.3", Engine::Ollama).as_deref(),
        Some("0.12.3")
    );
    assert_eq!(v("ollama/ollama:0.12.3", Engine::Vllm), None);
    // Not the engine's own image: its tag is the base image's version.
    assert_eq!(v("nvcr.io/nvidia/pytorch:24.05-py3", Engine::Vllm), None);
}

fn untimed(index: u32, command: &str) -> probe_model::HistoryEntry {
    probe_model::HistoryEntry {
        index,
        time: None,
        command: command.into(),
    }
}

fn with_history(mut s: Snapshot, mtime: i64, entries: Vec<probe_model::HistoryEntry>) -> Snapshot {
    s.histories = vec![probe_model::HistoryFile {
        path: "/root/.bash_history".into(),
        mtime: Some(mtime),
        entries,
        ..probe_model::HistoryFile::default()
    }];
    s
}

/// Where history entry `n` ended up: the location of the launch it is (or was merged into).
fn home_of(launches: &[LaunchConfig], n: u32) -> String {
    let loc = format!("/root/.bash_history#{n}");
    let label = format!("history:{loc}");
    launches
        .iter()
        .find(|l| l.source.location == loc || l.source.also_seen_in.contains(&label))
        .map(|l| l.source.location.clone())
        .unwrap_or_else(|| panic!("history #{n} is nowhere: {launches:#?}"))
}

#[test]
fn untimed_docker_run_lines_join_the_container_they_named() {
    let run = |name: &str, image: &str, tp: u32| {
        format!(
            "docker run -d --name {name} --gpus all {image} --model /m --tensor-parallel-size {tp}"
        )
    };
    let s = with_history(
        docker_snapshot(),
        1_800_000_000,
        vec![
            untimed(4, &run("vllm-llama-v0102", "vllm/vllm-openai:v0.10.2", 4)),
            untimed(7, "docker stop vllm-llama-v0102"),
            untimed(8, &run("vllm-llama", "vllm/vllm-openai:v0.11.0", 4)),
            untimed(9, "docker logs --tail 50 vllm-llama"),
        ],
    );
    let launches = launches_of(&s);
    assert_eq!(home_of(&launches, 8), "pid:120");
    assert_eq!(home_of(&launches, 4), "container:vllm-llama-v0102");
    let running = launches.iter().find(|l| l.source.running).unwrap();
    assert_eq!(running.engine_version.as_deref(), Some("0.11.0"));

    // A later line starts a container of that name again (other options): the earlier line is
    // not the running one's, and neither is the later one (its configuration differs).
    let s = with_history(
        docker_snapshot(),
        1_800_000_000,
        vec![
            untimed(8, &run("vllm-llama", "vllm/vllm-openai:v0.11.0", 4)),
            untimed(9, "docker rm -f vllm-llama"),
            untimed(10, &run("vllm-llama", "vllm/vllm-openai:v0.11.0", 2)),
        ],
    );
    let launches = launches_of(&s);
    assert_eq!(home_of(&launches, 8), "/root/.bash_history#8");
    assert_eq!(home_of(&launches, 10), "/root/.bash_history#10");
    // Another name, same options: not that container's line.
    let s = with_history(
        docker_snapshot(),
        1_800_000_000,
        vec![untimed(8, &run("other", "vllm/vllm-openai:v0.11.0", 4))],
    );
    assert_eq!(home_of(&launches_of(&s), 8), "/root/.bash_history#8");
}

#[test]
fn untimed_host_lines_join_a_running_process_started_before_the_file_was_written() {
    let host = |mtime: i64, entries| {
        let mut s = with_history(Snapshot::default(), mtime, entries);
        s.processes = vec![probe_model::ProcessInfo {
            pid: 7,
            argv: ["vllm", "serve", "/m", "--tensor-parallel-size", "4"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            role: ProcessRole::Launcher,
            engine: Some(probe_model::Engine::Vllm),
            start_time: Some(1_000),
            ..probe_model::ProcessInfo::default()
        }];
        launches_of(&s)
    };
    let line = "nohup vllm serve /m --tensor-parallel-size 4 > /tmp/v.log 2>&1 &";
    assert_eq!(home_of(&host(2_000, vec![untimed(3, line)]), 3), "pid:7");
    // The file was last written before the process started: another session started it.
    assert_eq!(
        home_of(&host(500, vec![untimed(3, line)]), 3),
        "/root/.bash_history#3"
    );
    // Other options: not its line.
    let other = "vllm serve /m --tensor-parallel-size 2";
    assert_eq!(
        home_of(&host(2_000, vec![untimed(3, other)]), 3),
        "/root/.bash_history#3"
    );
    // The same line run again later: only the last one is the running run's.
    let launches = host(2_000, vec![untimed(3, line), untimed(5, line)]);
    assert_eq!(home_of(&launches, 3), "/root/.bash_history#3");
    assert_eq!(home_of(&launches, 5), "pid:7");
}
