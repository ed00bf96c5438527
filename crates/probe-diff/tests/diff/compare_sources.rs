//! Comparing launches read from different kinds of evidence: a process (whole environment) with a
//! history line (only the variables written on it), a unit with a start-up log line (the model
//! logged as `model` and `model_tag`), and how log-derived options are written.

use std::collections::BTreeMap;

use probe_diff::compare_launches;
use probe_launch::{ParseHints, TextKind, from_argv, from_startup_log, reconstruct};
use probe_model::{ChangeKind, LaunchConfig, LaunchSource, SourceKind, StartupRecord, SystemdUnit};

fn source(kind: SourceKind, location: &str) -> LaunchSource {
    LaunchSource {
        kind,
        location: location.into(),
        ..LaunchSource::default()
    }
}

fn history(text: &str) -> LaunchConfig {
    let hints = ParseHints {
        kind: TextKind::Shell,
        source: source(SourceKind::History, "/root/.bash_history#13"),
        ..ParseHints::default()
    };
    reconstruct(text, &hints)
        .into_iter()
        .next()
        .expect("a launch")
}

fn process(argv: &str, env: &[(&str, &str)]) -> LaunchConfig {
    let argv: Vec<String> = argv.split(' ').map(String::from).collect();
    let env: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let hints = ParseHints {
        source: source(SourceKind::Process, "pid:62"),
        ..ParseHints::default()
    };
    from_argv(&argv, &env, &hints).expect("a launch")
}

const SGLANG: &str = "/opt/venvs/sglang/bin/python3 -m sglang.launch_server --model-path Qwen/Q --tp 2 --mem-fraction-static 0.85";

#[test]
fn a_history_line_does_not_show_the_environment_it_ran_in() {
    let before = history(
        "nohup /opt/venvs/sglang/bin/python3 -m sglang.launch_server --model-path Qwen/Q --tp 2 --mem-fraction-static 0.9 > /root/sglang.log 2>&1 &",
    );
    let after = process(
        SGLANG,
        &[
            ("CUDA_VISIBLE_DEVICES", "0,1"),
            ("PATH", "/usr/local/bin:/usr/bin"),
            ("HF_TOKEN", "<redacted:3032fb4a>"),
            ("HOSTNAME", "gpu7"),
            ("SSH_CONNECTION", "10.0.0.1 1 10.0.0.2 22"),
            ("TERM", "xterm"),
        ],
    );
    let diff = compare_launches(&before, &after);
    let keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
    assert!(
        !keys.iter().any(|k| k.starts_with("env:")),
        "variables missing from a history line are unknown there, not added: {keys:?}"
    );
    assert!(keys.contains(&"mem-fraction-static"), "{keys:?}");
    let note = diff
        .notes
        .iter()
        .find(|n| n.starts_with("env not compared"))
        .expect("a note about the variables not compared");
    assert!(note.contains("CUDA_VISIBLE_DEVICES"), "{note}");
    assert!(note.contains("HF_TOKEN"), "{note}");
    // Session noise is not even worth the note.
    for noise in ["PATH", "HOSTNAME", "SSH_CONNECTION", "TERM"] {
        assert!(!note.contains(noise), "{noise} in {note}");
    }

    // The other way round (process before, history line after) reads the same.
    let reverse = compare_launches(&after, &before);
    assert!(!reverse.changes.iter().any(|c| c.key.starts_with("env:")));
    assert_eq!(reverse.notes.len(), 1, "{:?}", reverse.notes);
}

#[test]
fn a_variable_written_on_both_sides_is_still_compared() {
    let before = history(
        "CUDA_VISIBLE_DEVICES=0,1,2,3 /opt/venvs/sglang/bin/python3 -m sglang.launch_server --model-path Qwen/Q --tp 2 --mem-fraction-static 0.85",
    );
    let after = process(
        SGLANG,
        &[("CUDA_VISIBLE_DEVICES", "0,1"), ("HF_TOKEN", "x")],
    );
    let diff = compare_launches(&before, &after);
    let change = diff
        .changes
        .iter()
        .find(|c| c.key == "env:CUDA_VISIBLE_DEVICES")
        .expect("both sides name it and the values differ");
    assert_eq!(change.kind, ChangeKind::Changed);
    assert_eq!(change.impact, probe_model::Impact::High);
    assert!(!diff.changes.iter().any(|c| c.key == "env:HF_TOKEN"));
}

#[test]
fn two_whole_environments_still_report_added_and_removed_variables() {
    let before = process(SGLANG, &[("PATH", "/a"), ("SGLANG_ENABLE_SPEC_V2", "1")]);
    let after = process(
        SGLANG,
        &[
            ("PATH", "/b"),
            ("CUDA_VISIBLE_DEVICES", "0,1"),
            ("HOSTNAME", "x"),
        ],
    );
    let diff = compare_launches(&before, &after);
    let find = |key: &str| diff.changes.iter().find(|c| c.key == key);
    assert_eq!(
        find("env:CUDA_VISIBLE_DEVICES").map(|c| c.kind),
        Some(ChangeKind::Added)
    );
    assert_eq!(
        find("env:SGLANG_ENABLE_SPEC_V2").map(|c| c.kind),
        Some(ChangeKind::Removed)
    );
    // PATH and HOSTNAME are session noise: never ranked.
    assert!(find("env:PATH").is_none());
    assert!(find("env:HOSTNAME").is_none());
    assert!(diff.notes.is_empty(), "{:?}", diff.notes);
}

fn vllm_log(text: &str) -> LaunchConfig {
    let record = StartupRecord {
        time: Some(1_795_192_272),
        engine: probe_model::Engine::Vllm,
        text: text.into(),
        version: Some("0.11.0".into()),
    };
    let hints = ParseHints {
        source: source(SourceKind::Log, "vllm.service"),
        ..ParseHints::default()
    };
    from_startup_log(&record, &hints).expect("a launch")
}

#[test]
fn the_model_is_compared_once_even_when_the_log_names_it_twice() {
    let unit = SystemdUnit {
        name: "vllm.service".into(),
        exec_start: vec![
            "/opt/venvs/vllm/bin/vllm serve /mnt/models/GLM-4.5-Air-FP8 --tensor-parallel-size 4 --gpu-memory-utilization 0.92".into(),
        ],
        ..SystemdUnit::default()
    };
    let hints = ParseHints {
        source: source(SourceKind::Unit, "unit:vllm.service"),
        ..ParseHints::default()
    };
    let after = probe_launch::from_unit(&unit, &hints)
        .into_iter()
        .next()
        .expect("a launch");
    let before = vllm_log(
        "non-default args: {'model_tag': '/mnt/models/GLM-4.5-Air-FP8', 'host': '0.0.0.0', \
         'model': '/mnt/models/GLM-4.5-Air-FP8', 'tensor_parallel_size': 4, \
         'gpu_memory_utilization': 0.9}",
    );
    assert_eq!(before.model.as_deref(), Some("/mnt/models/GLM-4.5-Air-FP8"));
    assert!(before.unknown.is_empty(), "{:?}", before.unknown);
    let diff = compare_launches(&before, &after);
    let keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
    assert!(!keys.iter().any(|k| k.contains("model")), "{keys:?}");
    assert_eq!(keys.first(), Some(&"gpu-memory-utilization"), "{keys:?}");

    // A different model is one change, not two.
    let other = vllm_log(
        "non-default args: {'model_tag': '/mnt/models/Other', 'model': '/mnt/models/Other', \
         'tensor_parallel_size': 4, 'gpu_memory_utilization': 0.92}",
    );
    let diff = compare_launches(&other, &after);
    let model_changes: Vec<&str> = diff
        .changes
        .iter()
        .map(|c| c.key.as_str())
        .filter(|k| k.contains("model"))
        .collect();
    assert_eq!(model_changes, vec!["model"]);

    // `--model X` on a command line against a positional model: the same model.
    let flag = reconstruct(
        "python3 -m vllm.entrypoints.openai.api_server --model /mnt/models/GLM-4.5-Air-FP8 --tensor-parallel-size 4 --gpu-memory-utilization 0.92",
        &ParseHints::default(),
    )
    .into_iter()
    .next()
    .expect("a launch");
    let diff = compare_launches(&flag, &after);
    assert!(
        !diff.changes.iter().any(|c| c.key.contains("model")),
        "{:?}",
        diff.changes
    );
}

#[test]
fn log_options_are_written_like_a_command_line() {
    let launch = vllm_log(
        "non-default args: {'model_tag': '/m', 'enable_prefix_caching': True, \
         'gpu_memory_utilization': 0.92, 'served_model_name': ['glm-4.5-air'], \
         'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 1}, 'host': '0.0.0.0'}",
    );
    let written = |name: &str| launch.options.get(name).map(|o| o.written.clone());
    assert_eq!(
        written("gpu-memory-utilization").as_deref(),
        Some("--gpu-memory-utilization 0.92")
    );
    assert_eq!(
        written("enable-prefix-caching").as_deref(),
        Some("--enable-prefix-caching")
    );
    assert_eq!(
        written("served-model-name").as_deref(),
        Some("--served-model-name glm-4.5-air")
    );
    assert_eq!(written("host").as_deref(), Some("--host 0.0.0.0"));
    assert_eq!(
        written("speculative-config").as_deref(),
        Some(r#"--speculative-config '{"method":"mtp","num_speculative_tokens":1}'"#)
    );

    let record = StartupRecord {
        time: None,
        engine: probe_model::Engine::Sglang,
        text: "server_args=ServerArgs(model_path='Qwen/Q', mem_fraction_static=0.85, \
               attention_backend='fa3', disable_cuda_graph=False, tp_size=2)"
            .into(),
        version: None,
    };
    let launch = from_startup_log(&record, &ParseHints::default()).expect("a launch");
    let written = |name: &str| launch.options.get(name).map(|o| o.written.clone());
    assert_eq!(
        written("mem-fraction-static").as_deref(),
        Some("--mem-fraction-static 0.85")
    );
    assert_eq!(
        written("attention-backend").as_deref(),
        Some("--attention-backend fa3")
    );
    assert_eq!(written("tp-size").as_deref(), Some("--tp-size 2"));
    assert!(
        !launch.options.contains_key("model-path"),
        "the model is not an option"
    );
    assert_eq!(launch.model.as_deref(), Some("Qwen/Q"));
}

/// TGI logs its launcher's arguments as Rust `Debug` output; they read like a command line.
#[test]
fn tgi_launcher_args_from_the_log() {
    let record = StartupRecord {
        time: Some(1_790_000_000),
        engine: probe_model::Engine::Tgi,
        text: "Args { model_id: \"meta-llama/Llama-3.1-8B-Instruct\", revision: None, \
               num_shard: Some(2), quantize: Some(Gptq), max_total_tokens: Some(8192), \
               max_concurrent_requests: 128, lora_adapters: Some( \"a,b\", ), }"
            .into(),
        version: None,
    };
    let launch = from_startup_log(&record, &ParseHints::default()).expect("a launch");
    let written = |name: &str| launch.options.get(name).map(|o| o.written.clone());
    assert_eq!(launch.engine, probe_model::Engine::Tgi);
    assert_eq!(
        launch.model.as_deref(),
        Some("meta-llama/Llama-3.1-8B-Instruct")
    );
    assert!(
        !launch.options.contains_key("model-id"),
        "{:?}",
        launch.options
    );
    assert!(!launch.options.contains_key("revision"), "None is not set");
    assert_eq!(written("num-shard").as_deref(), Some("--num-shard 2"));
    assert_eq!(written("quantize").as_deref(), Some("--quantize gptq"));
    assert_eq!(
        written("max-total-tokens").as_deref(),
        Some("--max-total-tokens 8192")
    );
    assert_eq!(
        written("max-concurrent-requests").as_deref(),
        Some("--max-concurrent-requests 128")
    );
    assert_eq!(launch.source.time.at, Some(1_790_000_000));
}

#[test]
fn login_session_variables_are_summed_in_one_line() {
    let argv = "/opt/venv/bin/python3 -m sglang.launch_server --model-path /m --tp 2";
    let before = process(argv, &[("CUDA_VISIBLE_DEVICES", "0,1")]);
    let mut session: Vec<(String, String)> = (0..20)
        .map(|i| (format!("AWS_SETTING_{i}"), format!("v{i}")))
        .collect();
    session.push(("REQUESTS_CA_BUNDLE".into(), "/etc/ssl/certs/ca.pem".into()));
    session.push(("CUDA_VISIBLE_DEVICES".into(), "0,1,2,3".into()));
    let refs: Vec<(&str, &str)> = session
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let after = process(argv, &refs);
    let diff = probe_diff::compare_launches(&before, &after);
    let env: Vec<&str> = diff
        .changes
        .iter()
        .map(|c| c.key.as_str())
        .filter(|k| k.starts_with("env:"))
        .collect();
    assert_eq!(
        env,
        ["env:CUDA_VISIBLE_DEVICES", "env:(login session)"],
        "{env:?}"
    );
    let summed = diff
        .changes
        .iter()
        .find(|c| c.key == "env:(login session)")
        .unwrap_or_else(|| unreachable!());
    assert!(
        summed
            .explanation
            .starts_with("21 login-session variables differ"),
        "{}",
        summed.explanation
    );
    assert!(
        summed.explanation.contains("and "),
        "{}",
        summed.explanation
    );
}
