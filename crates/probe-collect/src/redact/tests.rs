use super::*;

fn r() -> &'static Redactor {
    Redactor::builtin()
}

#[test]
fn keys() {
    for k in [
        "HF_TOKEN",
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "DB_PASS",
        "--api-key",
        "api_key",
        "--hf-token",
        "KEY",
        "quantization_config.hub_api_key",
    ] {
        assert!(r().is_secret_key(k), "{k}");
    }
    for k in [
        "KEYBOARD",
        "TOKENIZERS_PARALLELISM",
        "PATH",
        "--tokenizer",
        "--max-num-batched-tokens",
        "SSH_AUTH_SOCK",
        "--ssl-keyfile",
        "--speculative-token-map",
        "PWD",
        "HOTKEYS",
        "pad_token",
        "--return-tokens-as-token-ids",
        "SENTRY_DSN",
    ] {
        assert!(!r().is_secret_key(k), "{k}");
    }
}

#[test]
fn env_and_argv() {
    let m = marker("hf_abcdefghijklmnopqrstuvwxyz");
    assert_eq!(
        r().redact_env("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz"),
        m
    );
    assert_eq!(r().redact_env("HF_TOKEN", ""), "");
    assert_eq!(r().redact_env("HF_TOKEN", "$4"), "$4");
    assert_eq!(r().redact_env("HF_TOKEN", "${HF_TOKEN:-}"), "${HF_TOKEN:-}");
    assert_eq!(r().redact_env("PATH", "/usr/bin"), "/usr/bin");
    assert_eq!(
        r().redact_env("MYAPIKEY", "Zq8vN2kLp4Rt7XwB"),
        marker("Zq8vN2kLp4Rt7XwB")
    );
    assert_eq!(r().redact_env("MYAPIKEY", "unset"), "unset");
    let mut argv: Vec<String> = [
        "python3",
        "-m",
        "sglang.launch_server",
        "--api-key",
        "s3cret",
        "--tp",
        "2",
        "--admin-api-key=abc",
        "--tokenizer",
        "x",
    ]
    .map(String::from)
    .to_vec();
    r().redact_argv(&mut argv);
    assert_eq!(argv[4], marker("s3cret"));
    assert_eq!(argv[6], "2");
    assert_eq!(argv[7], format!("--admin-api-key={}", marker("abc")));
    assert_eq!(argv[9], "x");
    // Idempotent.
    let before = argv.clone();
    r().redact_argv(&mut argv);
    assert_eq!(argv, before);
}

/// `(argv, index of the secret word, what it becomes)`.
#[test]
fn argv_table() {
    let cases: &[(&str, usize, String)] = &[
        (
            "vllm serve m --api-key -dashfirst --port 8000",
            4,
            marker("-dashfirst"),
        ),
        (
            "mysql -uroot -pS3cretPw db",
            2,
            format!("-p{}", marker("S3cretPw")),
        ),
        ("mysql -uroot -p db", 3, "db".into()),
        ("sshpass -p hunter22 ssh host", 2, marker("hunter22")),
        (
            "/usr/bin/sshpass -phunter22 ssh h",
            1,
            format!("-p{}", marker("hunter22")),
        ),
        (
            "docker login -u me -p dckr_pat_x1 reg",
            5,
            marker("dckr_pat_x1"),
        ),
        ("docker run -p 8000:8000 img", 3, "8000:8000".into()),
        (
            "curl -u user:pw123 https://x",
            2,
            format!("user:{}", marker("pw123")),
        ),
        ("curl -u user https://x", 2, "user".into()),
        ("docker run -e HF_TOKEN=$4 img", 3, "HF_TOKEN=$4".into()),
        (
            "docker run --env=HF_TOKEN=hfsecretvalue img",
            2,
            format!("--env=HF_TOKEN={}", marker("hfsecretvalue")),
        ),
        ("vllm serve m --api-key --port 8000", 4, "--port".into()),
    ];
    for (line, i, expected) in cases {
        let mut argv: Vec<String> = line.split(' ').map(String::from).collect();
        r().redact_argv(&mut argv);
        assert_eq!(&argv[*i], expected, "{line}: {argv:?}");
        let once = argv.clone();
        r().redact_argv(&mut argv);
        assert_eq!(argv, once, "idempotent: {line}");
    }
}

/// `(text, secret that must be gone, text that must stay)`.
#[test]
fn text_table() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "Environment=MY_DB_PASSWORD=pw-unquoted-1",
            "pw-unquoted-1",
            "Environment=MY_DB_PASSWORD=<redacted:",
        ),
        (
            "Environment=\"OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz\"",
            "sk-abc",
            "Environment=\"OPENAI_API_KEY=<redacted:",
        ),
        (
            "Environment=A=1 HF_TOKEN=tok-in-unit B=2",
            "tok-in-unit",
            "A=1",
        ),
        (
            "docker run --env=HF_TOKEN=hist-token-1 vllm/vllm-openai",
            "hist-token-1",
            "--env=HF_TOKEN=<redacted:",
        ),
        (
            "INFO non-default args: {'model': 'm', 'api_key': ['vllm-list-key'], 'port': 8000}",
            "vllm-list-key",
            "'api_key': ['<redacted:",
        ),
        (
            "mysql -h db -uroot -pGluedPw9 prod",
            "GluedPw9",
            "-p<redacted:",
        ),
        ("mysql -uroot -p prod", "\u{0}", "-p prod"),
        (
            "docker login -u bot -p dockerpw77 registry.local",
            "dockerpw77",
            "registry.local",
        ),
        ("docker run -p 8000:8000 vllm", "\u{0}", "-p 8000:8000"),
        ("sshpass -p sshpw55 ssh root@h", "sshpw55", "ssh root@h"),
        (
            "curl -u admin:curlpw66 https://h/x",
            "curlpw66",
            "-u admin:<redacted:",
        ),
        (
            "curl --user admin:curlpw67 https://h/x",
            "curlpw67",
            "--user admin:<redacted:",
        ),
        (
            "git clone https://ghtokenAbc123xyz789@github.com/o/r",
            "ghtokenAbc123xyz789",
            "@github.com/o/r",
        ),
        (
            "pip install git+https://u:pa55w0rd@example.com/x",
            "pa55w0rd",
            "https://u:<redacted:",
        ),
        ("ssh://git@github.com/o/r", "\u{0}", "git@github.com"),
        (
            "aws configure set aws_secret_access_key wJalrXUtnFEMIK7MDENG",
            "wJalrXUtnFEMIK7MDENG",
            "aws_secret_access_key <redacted:",
        ),
        (
            "aws configure set region us-east-1",
            "\u{0}",
            "region us-east-1",
        ),
        ("export DB_PASS=dbpass88", "dbpass88", "DB_PASS=<redacted:"),
        (
            "SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/42",
            "0123456789abcdef0123456789abcdef",
            "@o1.ingest.sentry.io/42",
        ),
        (
            "vllm serve m --api-key -leadingdash",
            "-leadingdash",
            "--api-key <redacted:",
        ),
        ("docker run -e HF_TOKEN=$4 img", "\u{0}", "HF_TOKEN=$4"),
        (
            "HF_TOKEN=${HF_TOKEN:-} python x",
            "\u{0}",
            "HF_TOKEN=${HF_TOKEN:-}",
        ),
        (
            "echo ${HF_TOKEN:-unset} $HF_TOKEN",
            "\u{0}",
            "${HF_TOKEN:-unset} $HF_TOKEN",
        ),
        ("--hf-token \"$HF_TOKEN\"", "\u{0}", "\"$HF_TOKEN\""),
        (
            "token hf_abcdefghijklmnopqrstuvwx",
            "hf_abcdefghijklmnopqrstuvwx",
            "token <redacted:",
        ),
        (
            "k=sk-ant-api03-abcdefghijklmnopqrstuv",
            "sk-ant-api03",
            "k=<redacted:",
        ),
        (
            "see ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "ghp_abc",
            "see <redacted:",
        ),
        (
            "xoxb-1234567890-abcdefghij",
            "xoxb-1234567890",
            "<redacted:",
        ),
        (
            "id AKIAIOSFODNN7EXAMPLE",
            "AKIAIOSFODNN7EXAMPLE",
            "id <redacted:",
        ),
        ("glpat-abcdefghijklmnopqrstu", "glpat-abc", "<redacted:"),
        (
            "a eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f b",
            "eyJhbGci",
            "a <redacted:",
        ),
        (
            "MYSERVICEAPIKEY=Zq8vN2kLp4Rt7XwBq9 KEYBOARD=us",
            "Zq8vN2kLp4Rt7XwBq9",
            "KEYBOARD=us",
        ),
        (
            "{\"quantization_config\": {\"hub_api_key\": \"qkey-1\"}}",
            "qkey-1",
            "\"hub_api_key\": \"<redacted:",
        ),
        (
            "curl -H 'Authorization: Bearer abcdefghijkl' x",
            "abcdefghijkl",
            "Bearer <redacted:",
        ),
        (
            "server_args=ServerArgs(model_path='m', api_key='topsecret', tp_size=2)",
            "topsecret",
            "tp_size=2",
        ),
        (
            "{'model': 'x', 'api_key': None, 'hf_token': 'hf_zzzzzzzzzzzzzzzzzzzzzzzz'}",
            "hf_zzzz",
            "'api_key': None",
        ),
        (
            "nothing here: tokens=5 KEYBOARD=us",
            "\u{0}",
            "nothing here: tokens=5 KEYBOARD=us",
        ),
        (
            "kubectl create secret generic s --from-literal=password=k8spw1",
            "k8spw1",
            "--from-literal=password=<redacted:",
        ),
    ];
    for (text, gone, kept) in cases {
        let o = r().redact_text(text);
        assert!(!o.contains(gone), "{text:?} -> {o:?}");
        assert!(o.contains(kept), "{text:?} -> {o:?} lacks {kept:?}");
        assert_eq!(r().redact_text(&o), o, "idempotent: {text:?}");
    }
}

#[test]
fn walk_uses_keys_at_any_depth_and_keeps_types() {
    let mut v = serde_json::json!({
        "env": {"HF_TOKEN": "hf-literal-1", "REF": "$HF_TOKEN", "N": 3},
        "fields": {
            "quantization_config.hub_api_key": "qk-2",
            "quantization_config": {"nested": {"api_key": "qk-3", "bits": 4}},
            "pad_token": "<pad>",
            "url": "https://user:urlpw@h/x",
        },
        "argv": ["vllm", "serve", "--api-key", "ak-4"],
        "list": {"api_key": ["lk-5"]},
        "flag": true,
    });
    r().redact_value(&mut v);
    let text = v.to_string();
    for gone in ["hf-literal-1", "qk-2", "qk-3", "urlpw", "ak-4", "lk-5"] {
        assert!(!text.contains(gone), "{gone}: {text}");
    }
    assert_eq!(v["env"]["REF"], "$HF_TOKEN");
    assert_eq!(v["env"]["N"], 3);
    assert_eq!(v["fields"]["quantization_config"]["nested"]["bits"], 4);
    assert_eq!(v["fields"]["pad_token"], "<pad>");
    assert_eq!(v["flag"], true);
}

#[test]
fn rules_refuse_unknown_keys() {
    let err = Redactor::from_toml(&format!("secret_componets = []\n{RULES}")).unwrap_err();
    assert!(err.to_string().contains("secret_componets"), "{err}");
    // The TOML reader's own error is kept as the source, not flattened into text.
    assert!(
        matches!(err, crate::config::ConfigError::Toml(_)),
        "{err:?}"
    );
}

/// A benchmark result's embedded `/get_server_info` carries the server's `api_key` (SGLang's
/// server args): the snapshot pass redacts it, the configuration stays.
#[test]
fn benchmark_server_info_is_redacted() {
    let mut r0 = probe_model::BenchmarkResult::default();
    r0.server_info
        .insert("api_key".into(), serde_json::json!("sk-bench-secret-1"));
    r0.server_info
        .insert("speculative_num_steps".into(), serde_json::json!(3));
    let mut snap = probe_model::Snapshot {
        benchmarks: vec![r0],
        ..Default::default()
    };
    crate::redact::redact_snapshot(&mut snap, r());
    let text = serde_json::to_string(&snap.benchmarks).unwrap_or_default();
    assert!(!text.contains("sk-bench-secret-1"), "{text}");
    assert_eq!(snap.benchmarks[0].server_info["speculative_num_steps"], 3);
}
