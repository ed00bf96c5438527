//! A redacted secret (`<redacted:c457ccd7>`, the collector's marker) is one literal word in every
//! launch reader: the shell lexer must not read its `<` and `>` as redirections.

use std::collections::BTreeMap;

use probe_launch::{ParseHints, TextKind, from_argv, from_unit, reconstruct};
use probe_model::{Engine, EnvironmentFile, LaunchConfig, SystemdUnit};

const MARKER: &str = "<redacted:c457ccd7>";

/// The `--api-key` value (vLLM takes a list, SGLang one string).
fn api_key(launch: &LaunchConfig) -> Option<String> {
    match &launch.options.get("api-key")?.value {
        serde_json::Value::Array(items) if items.len() == 1 => {
            items.first()?.as_str().map(str::to_string)
        }
        serde_json::Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn one(text: &str, kind: TextKind) -> LaunchConfig {
    let hints = ParseHints {
        kind,
        ..ParseHints::default()
    };
    let launches = reconstruct(text, &hints);
    assert_eq!(launches.len(), 1, "one launch in {text:?}: {launches:#?}");
    launches.into_iter().next().unwrap_or_default()
}

#[test]
fn docker_run_history_line_with_a_redacted_env_value() {
    let line = "docker run -d --name vllm-llama-v0102 --gpus all --ipc=host -p 8000:8000 \
                -v /srv/models:/mnt/models:ro -e HF_TOKEN=<redacted:c457ccd7> \
                vllm/vllm-openai:v0.10.2 --model /mnt/models/Llama-3.3-70B-Instruct \
                --served-model-name llama-3.3-70b --tensor-parallel-size 4 --max-model-len 16384 \
                --gpu-memory-utilization 0.90 --enable-prefix-caching --max-num-seqs 256";
    let launch = one(line, TextKind::Shell);
    assert_eq!(launch.engine, Engine::Vllm);
    assert_eq!(
        launch.model.as_deref(),
        Some("/mnt/models/Llama-3.3-70B-Instruct")
    );
    assert_eq!(launch.env.get("HF_TOKEN").map(String::as_str), Some(MARKER));
    assert!(launch.wrappers.iter().any(|w| w == "docker"));
    assert!(launch.log_files.is_empty(), "{:?}", launch.log_files);
    assert_eq!(
        launch.options.get("max-num-seqs").map(|o| o.value.clone()),
        Some(serde_json::json!(256))
    );
    // Auto-detection reads it the same way.
    assert_eq!(one(line, TextKind::Auto).model, launch.model);
}

#[test]
fn marker_as_a_flag_value_and_glued_to_text() {
    let launch = one(
        "API_KEY=<redacted:0123abcd> python -m sglang.launch_server --model-path /m \
         --api-key <redacted:89abcdef> --tp 2 > /var/log/sg.log 2>&1 &",
        TextKind::Shell,
    );
    assert_eq!(launch.engine, Engine::Sglang);
    assert_eq!(launch.model.as_deref(), Some("/m"));
    assert_eq!(api_key(&launch), Some("<redacted:89abcdef>".to_string()));
    assert_eq!(
        launch.env.get("API_KEY").map(String::as_str),
        Some("<redacted:0123abcd>")
    );
    // A real redirection right after the marker still is one.
    assert_eq!(launch.log_files, vec!["/var/log/sg.log".to_string()]);
    assert_eq!(
        launch.options.get("tp-size").map(|o| o.value.clone()),
        Some(serde_json::json!(2))
    );

    // Inside `bash -c '...'` and in a URL.
    let launch = one(
        "nohup bash -c 'HF_TOKEN=<redacted:c457ccd7> vllm serve /m --tensor-parallel-size 2' &",
        TextKind::Shell,
    );
    assert_eq!(launch.env.get("HF_TOKEN").map(String::as_str), Some(MARKER));
    assert_eq!(launch.model.as_deref(), Some("/m"));
}

#[test]
fn something_that_only_looks_like_a_marker_is_still_a_redirection() {
    let launch = one(
        "vllm serve /m --tensor-parallel-size 2 <redacted:xyz> out.log",
        TextKind::Shell,
    );
    assert_eq!(launch.model.as_deref(), Some("/m"));
    assert!(!launch.argv.iter().any(|a| a.contains("redacted")));
}

#[test]
fn systemd_unit_with_markers() {
    let text = "[Service]\nEnvironment=HF_TOKEN=<redacted:c457ccd7>\n\
                ExecStart=/opt/v/bin/vllm serve /m --api-key <redacted:89abcdef> --tensor-parallel-size 4\n";
    let launch = one(text, TextKind::Auto);
    assert_eq!(launch.model.as_deref(), Some("/m"));
    assert_eq!(launch.env.get("HF_TOKEN").map(String::as_str), Some(MARKER));
    assert_eq!(api_key(&launch), Some("<redacted:89abcdef>".to_string()));

    // A collected unit whose EnvironmentFile holds a redacted value used in ExecStart.
    let unit = SystemdUnit {
        name: "vllm.service".into(),
        exec_start: vec![
            "/opt/v/bin/vllm serve /m --api-key ${KEY} --tensor-parallel-size 4".into(),
        ],
        environment_files: vec![EnvironmentFile {
            path: "/etc/vllm.env".into(),
            vars: BTreeMap::from([("KEY".into(), "<redacted:89abcdef>".into())]),
            ..EnvironmentFile::default()
        }],
        ..SystemdUnit::default()
    };
    let launches = from_unit(&unit, &ParseHints::default());
    let launch = launches.first().expect("a launch");
    assert_eq!(api_key(launch), Some("<redacted:89abcdef>".to_string()));
}

#[test]
fn compose_and_kubernetes_with_markers() {
    let compose = "services:\n  vllm:\n    image: vllm/vllm-openai:v0.10.2\n    environment:\n      \
                   - HF_TOKEN=<redacted:c457ccd7>\n    command: --model /m --api-key <redacted:89abcdef> --tensor-parallel-size 2\n";
    let launch = one(compose, TextKind::Compose);
    assert_eq!(launch.engine, Engine::Vllm);
    assert_eq!(launch.model.as_deref(), Some("/m"));
    assert_eq!(launch.env.get("HF_TOKEN").map(String::as_str), Some(MARKER));
    assert_eq!(api_key(&launch), Some("<redacted:89abcdef>".to_string()));

    let k8s = "containers:\n- name: vllm\n  image: vllm/vllm-openai:v0.10.2\n  command: [\"/bin/sh\", \"-c\"]\n  \
               args: [\"vllm serve /m --api-key <redacted:89abcdef> --tensor-parallel-size 2\"]\n  env:\n  \
               - name: HF_TOKEN\n    value: <redacted:c457ccd7>\n";
    let launch = one(k8s, TextKind::Kubernetes);
    assert_eq!(launch.model.as_deref(), Some("/m"));
    assert_eq!(api_key(&launch), Some("<redacted:89abcdef>".to_string()));
    assert_eq!(launch.env.get("HF_TOKEN").map(String::as_str), Some(MARKER));
}

#[test]
fn argv_with_markers() {
    let argv: Vec<String> = [
        "/opt/v/bin/python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/m",
        "--api-key",
        "<redacted:89abcdef>",
    ]
    .map(String::from)
    .to_vec();
    let env = BTreeMap::from([("HF_TOKEN".to_string(), MARKER.to_string())]);
    let launch = from_argv(&argv, &env, &ParseHints::default()).expect("a launch");
    assert_eq!(launch.model.as_deref(), Some("/m"));
    assert_eq!(api_key(&launch), Some("<redacted:89abcdef>".to_string()));
    // `bash -c` in an argv goes through the shell reader.
    let argv: Vec<String> = [
        "bash",
        "-c",
        "HF_TOKEN=<redacted:c457ccd7> exec vllm serve /m --tensor-parallel-size 2 >> /l 2>&1",
    ]
    .map(String::from)
    .to_vec();
    let launch = from_argv(&argv, &BTreeMap::new(), &ParseHints::default()).expect("a launch");
    assert_eq!(launch.env.get("HF_TOKEN").map(String::as_str), Some(MARKER));
    assert_eq!(launch.model.as_deref(), Some("/m"));
}
