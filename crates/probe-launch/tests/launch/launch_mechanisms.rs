//! The general mechanisms behind the extra corpus, each on its own: pasted shell prompts, images
//! without a catalog entry, `docker exec`, distributed launchers, first-branch assignments, glued
//! short-option values, newer/older entry points. Plus property tests: a prompt in front of a
//! launch line never changes its reading, and a prompt-looking line that is no launch stays none.

use probe_launch::common::common_fields;
use probe_launch::{ParseHints, reconstruct};
use proptest::prelude::*;
use serde_json::{Value, json};

fn first(text: &str) -> Value {
    reconstruct(text, &ParseHints::default())
        .first()
        .map(common_fields)
        .unwrap_or(Value::Null)
}

fn field(text: &str, key: &str) -> Value {
    first(text).get(key).cloned().unwrap_or(Value::Null)
}

#[test]
fn pasted_prompts_are_not_part_of_the_command() {
    let line = "vllm serve /m --port 8001 -tp 2";
    let want = first(line);
    assert_eq!(want.get("engine"), Some(&json!("vllm")));
    for prompt in [
        "$ ",
        "(venv) user@gpu-01:~/work$ ",
        "root@4034937c8c66:/mnt/gemma2# ",
        "(base) root@box:/# ",
        "> ",
    ] {
        assert_eq!(first(&format!("{prompt}{line}")), want, "prompt {prompt:?}");
    }
    // Windows cmd.exe: the command is glued to the prompt and the binary ends in .exe.
    let win = r#"C:\Users\me>llama-server.exe -m "D:\m\q.gguf" --port 8084"#;
    assert_eq!(field(win, "engine"), json!("llama.cpp"));
    assert_eq!(field(win, "model"), json!(r"D:\m\q.gguf"));
    assert_eq!(field(win, "port"), json!(8084));
    // A comment stays a comment, and a prompt before a non-launch is nothing.
    assert!(reconstruct("# vllm serve /m", &ParseHints::default()).is_empty());
    assert!(reconstruct("user@host:~$ ls -la", &ParseHints::default()).is_empty());
}

#[test]
fn unknown_images_are_read_from_their_name_or_their_flags() {
    // Engine named in a third-party image.
    let t = "docker run --gpus all vastai/vllm:v0.7.0 --model /m --max-num-seqs 16";
    assert_eq!(field(t, "engine"), json!("vllm"));
    assert_eq!(field(t, "model"), json!("/m"));
    assert_eq!(field(t, "max_running_requests"), json!(16));
    // Nothing in the name: the launcher flags decide (TGI here).
    let t = "docker run --gpus all falcon-lctx:0.9.2 --model-id /data --num-shard 4 \
             --max-total-tokens 12001 --quantize gptq";
    assert_eq!(field(t, "engine"), json!("tgi"));
    assert_eq!(field(t, "tensor_parallel"), json!(4));
    assert_eq!(field(t, "quantization"), json!("gptq"));
    // Too little evidence: no guess.
    let t = "docker run --gpus all my/app:1 --port 8000";
    assert!(reconstruct(t, &ParseHints::default()).is_empty());
    // A command after the image is still run as written.
    let t = "docker run my/app:1 bash";
    assert!(reconstruct(t, &ParseHints::default()).is_empty());
}

#[test]
fn docker_exec_runs_its_command_in_a_container() {
    let t = r#"docker exec -d -e A=1 --workdir /w box env B=2 bash -lc "python3 -m sglang.launch_server --model-path /m --tp-size 2""#;
    let got = first(t);
    assert_eq!(got.get("engine"), Some(&json!("sglang")));
    assert_eq!(got.get("tensor_parallel"), Some(&json!(2)));
    assert_eq!(got.get("env"), Some(&json!({"A": "1", "B": "2"})));
    assert_eq!(got.get("wrapper"), Some(&json!("docker")));
    assert!(reconstruct("docker exec -it node /bin/bash", &ParseHints::default()).is_empty());
}

#[test]
fn distributed_launchers_run_the_module() {
    for t in [
        "torchrun --nproc_per_node 2 -m sglang.launch_server --model-path /m --tp 2",
        "accelerate launch --num_processes 2 -m sglang.launch_server --model-path /m --tp 2",
    ] {
        assert_eq!(field(t, "engine"), json!("sglang"), "{t}");
        assert_eq!(field(t, "tensor_parallel"), json!(2), "{t}");
    }
    assert!(reconstruct("torchrun --nnodes 2 train.py", &ParseHints::default()).is_empty());
}

#[test]
fn first_branch_assignment_of_an_unset_variable_is_the_default_path() {
    let t = "if [ \"$E\" == sglang ]; then\n  cmd=(python3 -m sglang.launch_server --model /x)\nfi\n\"${cmd[@]}\"";
    assert_eq!(field(t, "model"), json!("/x"));
    // A variable that already had a value becomes unknown, not the branch value.
    let t = "M=/a\nif [ -n \"$B\" ]; then\n  M=/b\nfi\nvllm serve $M";
    assert_ne!(field(t, "model"), json!("/b"));
}

#[test]
fn glued_short_values_only_when_they_look_like_values() {
    // ik_llama.cpp `-mla 2` is its own option, not `-m la`.
    let t = "llama-server -m /m.gguf -mla 2 -c 4096";
    assert_eq!(field(t, "model"), json!("/m.gguf"));
    assert_eq!(field(t, "context_length"), json!(4096));
    // `-tp8` is `-tp 8`.
    assert_eq!(field("vllm serve /m -tp8", "tensor_parallel"), json!(8));
}

#[test]
fn entry_point_generations() {
    // trtllm-serve with and without the `serve` subcommand.
    let a = first("trtllm-serve serve /m --tp_size 2");
    let b = first("trtllm-serve /m --tp_size 2");
    assert_eq!(a, b);
    assert_eq!(a.get("model"), Some(&json!("/m")));
    // LMDeploy's old fire CLI module with underscore flags; --session-len is the context length.
    let t = "python -m lmdeploy.serve.openai.api_server --tp=2 --server_name=0.0.0.0 ./ws";
    assert_eq!(
        first(t),
        json!({"engine": "lmdeploy", "model": "./ws", "tensor_parallel": 2, "host": "0.0.0.0"})
    );
    assert_eq!(
        field(
            "lmdeploy serve api_server /m --session-len 8000",
            "context_length"
        ),
        json!(8000)
    );
}

#[test]
fn container_runtimes_and_helm_items() {
    // `apptainer exec IMAGE cmd`: `exec` is the wrapper's subcommand, not the shell builtin.
    let t = "apptainer exec --nv vllm.sif vllm serve /m --tensor-parallel-size 4";
    assert_eq!(field(t, "model"), json!("/m"));
    assert_eq!(field(t, "tensor_parallel"), json!(4));
    // An unrendered Helm list item stays a literal value.
    let t = "      containers:\n        - name: vllm\n          image: \"{{ .Values.image }}\"\n          command: [\"vllm\", \"serve\"]\n          args:\n            - {{ .Values.model }}\n            - --tensor-parallel-size\n            - \"{{ .Values.tp }}\"";
    assert_eq!(field(t, "model"), json!("{{ .Values.model }}"));
    assert_eq!(field(t, "tensor_parallel"), json!("{{ .Values.tp }}"));
}

fn launch_line() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("vllm serve /models/a"),
            Just("python3 -m sglang.launch_server --model-path /m"),
            Just("llama-server -m /m.gguf"),
            Just("lmdeploy serve api_server /m"),
            Just("trtllm-serve /m"),
        ],
        prop::collection::vec(
            prop_oneof![
                Just("--port 8001"),
                Just("--host 0.0.0.0"),
                Just("--tp 2"),
                Just("-c 4096"),
            ],
            0..3,
        ),
    )
        .prop_map(|(head, flags)| format!("{head} {}", flags.join(" ")))
}

fn prompt() -> impl Strategy<Value = String> {
    (
        prop::option::of("[a-z_]{1,8}"),
        "[a-z]{1,8}",
        "[a-z0-9-]{1,12}",
        "[~/a-z]{0,12}",
        prop_oneof![Just('$'), Just('#')],
    )
        .prop_map(|(env, user, host, dir, sign)| {
            let env = env.map(|e| format!("({e}) ")).unwrap_or_default();
            format!("{env}{user}@{host}:{dir}{sign} ")
        })
}

proptest! {
    #[test]
    fn a_prompt_never_changes_the_reading(line in launch_line(), p in prompt()) {
        let plain = first(&line);
        prop_assert_eq!(first(&format!("{p}{line}")), plain);
    }

    #[test]
    fn a_prompt_before_a_non_launch_is_no_launch(p in prompt(), cmd in "(ls|cd|echo|cat|nvidia-smi)( [a-z/]{1,10}){0,3}") {
        let text = format!("{p}{cmd}");
        let n = reconstruct(&text, &ParseHints::default()).len();
        prop_assert_eq!(n, 0);
    }
}

/// Round 2's side of config files: the files a launch names (absolute against its working
/// directory), and their values put in once read, each naming its file; the command line wins
/// (vLLM), or the file does (TRT-LLM's `--extra_llm_api_options`).
#[test]
fn config_files_named_by_a_launch_and_read_later() {
    use probe_launch::{apply_config_file, config_files};
    let cases: &[(&str, &str, &str, Value)] = &[
        (
            "cd /srv/llm && vllm serve m --config cfg.yaml --max-model-len 4096",
            "/srv/llm/cfg.yaml",
            "max-model-len: 8192\ntensor_parallel_size: 2\ngpu-memory-utilization: 0.8\n",
            json!({"engine": "vllm", "model": "m", "tensor_parallel": 2, "context_length": 4096, "gpu_memory_fraction": 0.8}),
        ),
        (
            "trtllm-serve m --max_batch_size 256 --extra_llm_api_options /etc/trt/extra.yml",
            "/etc/trt/extra.yml",
            "max_batch_size: 64\nkv_cache_config:\n  dtype: fp8\nspeculative_config:\n  decoding_type: MTP\n  num_nextn_predict_layers: 3\n",
            json!({"engine": "trtllm", "model": "m", "max_running_requests": 64, "kv_cache_dtype": "fp8", "speculative": {"algorithm": "MTP", "num_speculative_tokens": 3}}),
        ),
    ];
    for (text, path, file, want) in cases {
        let mut launches = reconstruct(text, &ParseHints::default());
        let l = launches.first_mut().expect("a launch");
        assert_eq!(config_files(l), vec![path.to_string()], "{text}");
        assert!(
            l.warnings.iter().any(|w| w.contains("not visible here")),
            "{text}: {:?}",
            l.warnings
        );
        assert!(apply_config_file(l, path, file));
        let mut got = common_fields(l);
        if let Some(m) = got.as_object_mut() {
            m.remove("wrapper");
        }
        assert_eq!(&got, want, "{text}");
        assert!(l.warnings.iter().all(|w| !w.contains("not visible here")));
        let from_file: Vec<&str> = l
            .options
            .values()
            .filter(|o| o.written.ends_with(&format!("(in {path})")))
            .map(|o| o.written.as_str())
            .collect();
        assert!(from_file.len() >= 2, "{text}: {from_file:?}");
    }
    let mut launches = reconstruct("vllm serve m --config c.yaml", &ParseHints::default());
    let l = launches.first_mut().expect("a launch");
    assert!(!apply_config_file(l, "c.yaml", "- not\n- a map\n"));
}

/// A compose file read with the variables of the `.env` beside it (the hints' environment):
/// Compose's interpolation, defaults included; one it does not set stays as written.
#[test]
fn a_compose_file_with_its_dotenv() {
    let compose = "services:\n  vllm:\n    image: vllm/vllm-openai:${TAG:-v0.8.5}\n    command: --model ${MODEL:-Qwen/Qwen2.5-7B-Instruct} --max-model-len ${MAX_LEN:-8192} --tensor-parallel-size ${TP}\n";
    let cases = [
        (
            "",
            json!({"engine": "vllm", "model": "${MODEL:-Qwen/Qwen2.5-7B-Instruct}", "tensor_parallel": "${TP}", "context_length": "${MAX_LEN:-8192}", "wrapper": "docker"}),
        ),
        (
            "TP=4\nMAX_LEN=\n",
            json!({"engine": "vllm", "model": "${MODEL:-Qwen/Qwen2.5-7B-Instruct}", "tensor_parallel": 4, "context_length": 8192, "wrapper": "docker"}),
        ),
        (
            "MODEL=meta-llama/Llama-3.1-8B\nTP=2\nMAX_LEN=16384\n",
            json!({"engine": "vllm", "model": "meta-llama/Llama-3.1-8B", "tensor_parallel": 2, "context_length": 16384, "wrapper": "docker"}),
        ),
    ];
    for (dotenv, want) in cases {
        let hints = ParseHints {
            env: probe_launch::compose_env::dotenv(dotenv),
            ..ParseHints::default()
        };
        let got = reconstruct(compose, &hints);
        assert_eq!(got.first().map(common_fields), Some(want), "{dotenv}");
    }
}

/// The config files round 2 read on the host (`launch_files` of kind `engine_config`) go into
/// the running launch that names them, listed among its defining files with the options they
/// set; a history launch naming the same file is left alone (the file now is not what it read);
/// a file changed after the launch started, or not read, is said. `(file as read, expected
/// max-num-seqs, warning expected)`.
#[test]
fn config_files_read_on_the_host_go_into_the_running_launch() {
    use probe_model::{
        DefiningFileRole, HistoryEntry, HistoryFile, LaunchFile, LaunchFileKind, ProcessInfo,
        ProcessRole, SectionStatus, Snapshot,
    };
    let file = |path: &str, mtime: i64, status: SectionStatus, text: &str| LaunchFile {
        kind: LaunchFileKind::EngineConfig,
        path: path.into(),
        named_by: "pid:4242".into(),
        status,
        mtime: Some(mtime),
        text: text.into(),
        ..LaunchFile::default()
    };
    let yaml = "max-num-seqs: 64\nenable-prefix-caching: true\n";
    let cases: Vec<(LaunchFile, Option<u64>, Option<&str>)> = vec![
        (
            file("/srv/llm/cfg.yaml", 1_700_000_000, SectionStatus::Ok, yaml),
            Some(64),
            None,
        ),
        (
            file(
                "/proc/4242/root/srv/llm/cfg.yaml",
                1_700_000_000,
                SectionStatus::Ok,
                yaml,
            ),
            Some(64),
            None,
        ),
        (
            file("/srv/llm/cfg.yaml", 1_700_000_900, SectionStatus::Ok, yaml),
            Some(64),
            Some("changed after this launch started"),
        ),
        (
            LaunchFile {
                message: Some("a symbolic link, not followed".into()),
                ..file("/srv/llm/cfg.yaml", 0, SectionStatus::Failed, "")
            },
            None,
            Some("was not read on the host: a symbolic link, not followed"),
        ),
        (
            file("/srv/other.yaml", 1_700_000_000, SectionStatus::Ok, yaml),
            None,
            None,
        ),
    ];
    for (read, want_seqs, want_warning) in cases {
        let snap = Snapshot {
            processes: vec![ProcessInfo {
                pid: 4242,
                argv: [
                    "/opt/v/bin/python3",
                    "-m",
                    "vllm.entrypoints.openai.api_server",
                    "--model",
                    "m",
                    "--config",
                    "cfg.yaml",
                ]
                .map(String::from)
                .to_vec(),
                cwd: Some("/srv/llm".into()),
                start_time: Some(1_700_000_500),
                role: ProcessRole::Launcher,
                ..ProcessInfo::default()
            }],
            histories: vec![HistoryFile {
                path: "/root/.bash_history".into(),
                entries: vec![HistoryEntry {
                    index: 0,
                    time: None,
                    command: "cd /srv/llm && vllm serve m2 --config /srv/llm/cfg.yaml".into(),
                }],
                ..HistoryFile::default()
            }],
            launch_files: vec![read.clone()],
            ..Snapshot::default()
        };
        let launches = probe_launch::launches_of(&snap);
        let running = launches.iter().find(|l| l.source.running).expect("running");
        let seqs = running
            .options
            .get("max-num-seqs")
            .and_then(|o| o.value.as_u64());
        assert_eq!(seqs, want_seqs, "{}: {:?}", read.path, running.options);
        let listed = running
            .files
            .iter()
            .find(|f| f.role == DefiningFileRole::EngineConfig);
        assert_eq!(listed.is_some(), want_seqs.is_some(), "{}", read.path);
        if let Some(f) = listed {
            assert_eq!(f.path, "/srv/llm/cfg.yaml");
            assert!(f.sets.contains(&"max-num-seqs".to_string()), "{:?}", f.sets);
        }
        let warned = |w: &str| running.warnings.iter().any(|x| x.contains(w));
        if let Some(w) = want_warning {
            assert!(warned(w), "{}: {:?}", read.path, running.warnings);
        }
        assert_eq!(
            warned("not visible here"),
            want_seqs.is_none(),
            "{:?}",
            running.warnings
        );
        let history = launches
            .iter()
            .find(|l| !l.source.running)
            .expect("history launch");
        assert!(!history.options.contains_key("max-num-seqs"));
    }
}
