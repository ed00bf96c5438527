//! What model servers answer is redacted like every other string of a snapshot, by key and by
//! value shape: a secret planted in each kind of endpoint field (a metric label's value, a label
//! named like a secret, a server-info key or value, a nested server-info value, a model list
//! entry, TGI's and llama.cpp's info) is absent from the JSON of the snapshot `ask_servers`
//! leaves. The servers are real HTTP listeners on 127.0.0.1, asked through `LocalExec`'s
//! forwarding, for launches `probe-launch` reads from launcher processes.

use std::collections::BTreeMap;
use std::sync::Arc;

use probe_collect::server::{AskOptions, ask_servers};
use probe_model::{ProcessInfo, ProcessRole, ServerStatus, Snapshot};
use probe_transport::LocalExec;
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The token shapes of `configs/redaction.toml`, as patterns proptest can generate from (word
/// boundaries dropped, `\d` as ASCII digits, repetition bounded).
fn shape_patterns() -> Vec<String> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/redaction.toml"
    ))
    .expect("configs/redaction.toml");
    let table: toml::Table = text.parse().expect("redaction.toml parses");
    let shapes: Vec<String> = table
        .get("token_shapes")
        .and_then(toml::Value::as_array)
        .expect("token_shapes")
        .iter()
        .map(|p| p.as_str().expect("a pattern").to_string())
        .collect();
    assert!(shapes.len() >= 5, "{shapes:?}");
    shapes
        .iter()
        .map(|p| {
            p.replace(r"\b", "")
                .replace(r"\d", "[0-9]")
                .replace(",}", ",40}")
        })
        .collect()
}

/// A secret as it is planted, and the part of it that must not appear in the output.
#[derive(Debug, Clone)]
struct Secret {
    planted: String,
    hidden: String,
}

fn secret() -> impl Strategy<Value = Secret> {
    let shapes: Vec<BoxedStrategy<Secret>> = shape_patterns()
        .into_iter()
        .map(|p| {
            proptest::string::string_regex(&p)
                .unwrap_or_else(|e| panic!("{p}: {e}"))
                .prop_map(|s| Secret {
                    planted: s.clone(),
                    hidden: s,
                })
                .boxed()
        })
        .collect();
    let bearer = "[A-Za-z0-9]{16,32}"
        .prop_map(|t| Secret {
            planted: format!("Bearer {t}"),
            hidden: t,
        })
        .boxed();
    let url = "[A-Za-z0-9]{14,24}"
        .prop_map(|t| Secret {
            planted: format!("https://probe:{t}@hub.example.org/m"),
            hidden: t,
        })
        .boxed();
    proptest::strategy::Union::new(shapes.into_iter().chain([bearer, url]))
}

/// A value with no shape at all, secret only by the name it is given.
fn plain() -> impl Strategy<Value = String> {
    "[a-z]{6}[0-9]{6}[a-z]{6}"
}

/// Where a secret is planted.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Place {
    /// `vllm:cache_config_info{hf_token="SECRET"}`.
    LabelValueSecretName,
    /// `vllm:cache_config_info{served_note="SECRET"}`: found by its shape only.
    LabelValueNeutralName,
    /// `vllm:cache_config_info{api_key="plain"}`: found by the label's name only.
    LabelNamedSecret,
    /// `/get_server_info {"note": "SECRET"}`.
    ServerInfoValue,
    /// `/get_server_info {"SECRET": 1}`.
    ServerInfoKey,
    /// `/get_server_info {"hub_api_key": "plain"}`.
    ServerInfoSecretKey,
    /// `/get_server_info {"lora_paths": {"a": ["SECRET"]}}`.
    ServerInfoNested,
    /// `/v1/models {"data": [{"id": "SECRET", "root": "SECRET"}]}`.
    ModelList,
    /// TGI `/info {"model_id": "SECRET"}`.
    TgiInfo,
    /// llama.cpp `/props {"model_path": "SECRET"}`.
    LlamaProps,
}

const PLACES: [Place; 10] = [
    Place::LabelValueSecretName,
    Place::LabelValueNeutralName,
    Place::LabelNamedSecret,
    Place::ServerInfoValue,
    Place::ServerInfoKey,
    Place::ServerInfoSecretKey,
    Place::ServerInfoNested,
    Place::ModelList,
    Place::TgiInfo,
    Place::LlamaProps,
];

/// Every path of every engine's endpoints, answered with `value` planted at `place`.
fn answers(place: Place, value: &str) -> BTreeMap<&'static str, (String, String)> {
    let json = |v: serde_json::Value| ("application/json".to_string(), v.to_string());
    let at = |p: Place| if p == place { value } else { "ok" };
    let mut info = serde_json::json!({
        "model_path": "Qwen/Qwen3-8B", "tp_size": 1, "enable_metrics": true,
        "note": at(Place::ServerInfoValue),
        "hub_api_key": at(Place::ServerInfoSecretKey),
        "lora_paths": {"a": [at(Place::ServerInfoNested)]},
        "version": "0.5.9",
    });
    if place == Place::ServerInfoKey {
        info[value] = serde_json::json!(1);
    }
    let label = |p: Place| at(p).replace('\\', "\\\\").replace('"', "\\\"");
    let metrics = format!(
        "vllm:cache_config_info{{block_size=\"16\",hf_token=\"{}\",served_note=\"{}\",api_key=\"{}\"}} 1.0\n\
         vllm:num_requests_running{{model_name=\"m\"}} 2.0\n\
         sglang:num_running_reqs 2.0\n",
        label(Place::LabelValueSecretName),
        label(Place::LabelValueNeutralName),
        label(Place::LabelNamedSecret),
    );
    BTreeMap::from([
        ("/get_server_info", json(info)),
        (
            "/get_model_info",
            json(serde_json::json!({"model_path": "Qwen/Qwen3-8B"})),
        ),
        ("/version", json(serde_json::json!({"version": "0.11.0"}))),
        (
            "/v1/models",
            json(serde_json::json!({"object": "list", "data": [
                {"id": at(Place::ModelList), "root": at(Place::ModelList), "max_model_len": 8192}
            ]})),
        ),
        (
            "/info",
            json(serde_json::json!({"model_id": at(Place::TgiInfo), "version": "3.0.0"})),
        ),
        (
            "/props",
            json(
                serde_json::json!({"model_path": at(Place::LlamaProps), "total_slots": 4, "build_info": "b1"}),
            ),
        ),
        (
            "/metrics",
            ("text/plain; version=0.0.4".to_string(), metrics),
        ),
    ])
}

/// Serves `answers` on a loopback port until the runtime ends: one request per connection.
async fn serve(answers: Arc<BTreeMap<&'static str, (String, String)>>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let answers = answers.clone();
            tokio::spawn(async move {
                let mut req = Vec::new();
                let mut buf = [0u8; 4096];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let line = String::from_utf8_lossy(&req);
                let path = line.split_whitespace().nth(1).unwrap_or("/");
                let reply = match answers.get(path) {
                    Some((ty, body)) => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: {ty}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                    None => {
                        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_string()
                    }
                };
                let _ = sock.write_all(reply.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    port
}

fn launcher(pid: u32, argv: &[&str]) -> ProcessInfo {
    ProcessInfo {
        pid,
        argv: argv.iter().map(|s| s.to_string()).collect(),
        role: ProcessRole::Launcher,
        ..ProcessInfo::default()
    }
}

/// The snapshot `ask_servers` leaves for servers answering with `value` at `place`.
fn asked(place: Place, value: &str) -> Snapshot {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let answers = Arc::new(answers(place, value));
        let mut ports = Vec::new();
        for _ in 0..4 {
            ports.push(serve(answers.clone()).await.to_string());
        }
        let p = |i: usize| ports[i].as_str();
        let mut snapshot = Snapshot {
            processes: vec![
                launcher(101, &["vllm", "serve", "Qwen/Qwen3-8B", "--port", p(0)]),
                launcher(
                    102,
                    &[
                        "python3",
                        "-m",
                        "sglang.launch_server",
                        "--model-path",
                        "Qwen/Qwen3-8B",
                        "--port",
                        p(1),
                    ],
                ),
                launcher(
                    103,
                    &[
                        "text-generation-launcher",
                        "--model-id",
                        "m",
                        "--port",
                        p(2),
                    ],
                ),
                launcher(
                    104,
                    &[
                        "llama-server",
                        "-m",
                        "/m/x.gguf",
                        "--port",
                        p(3),
                        "--metrics",
                    ],
                ),
            ],
            ..Snapshot::default()
        };
        let opts = AskOptions {
            redact: true,
            deadline: std::time::Duration::from_secs(60),
        };
        ask_servers(&LocalExec::new(), &mut snapshot, &opts).await;
        snapshot
    })
}

#[test]
fn every_server_is_asked_and_answers() {
    let s = asked(Place::ServerInfoValue, "nothing secret");
    let statuses: Vec<_> = s
        .servers
        .iter()
        .map(|r| (r.engine, r.status, r.message.clone()))
        .collect();
    assert_eq!(s.servers.len(), 4, "{statuses:?}");
    assert!(
        s.servers.iter().all(|r| r.status == ServerStatus::Answered),
        "{statuses:?}"
    );
    // The planted fields are read (so a secret there would reach the snapshot unless redacted).
    let vllm = s
        .servers
        .iter()
        .find(|r| r.engine == probe_model::Engine::Vllm)
        .expect("vllm");
    for key in [
        "cache_config.hf_token",
        "cache_config.served_note",
        "cache_config.api_key",
        "root",
    ] {
        assert!(vllm.args.contains_key(key), "{key}: {:?}", vllm.args);
    }
    let sglang = s
        .servers
        .iter()
        .find(|r| r.engine == probe_model::Engine::Sglang)
        .expect("sglang");
    assert_eq!(
        sglang.args.get("note"),
        Some(&serde_json::json!("nothing secret"))
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn no_planted_secret_survives_the_servers_answers(secret in secret(), plain in plain()) {
        for place in PLACES {
            // A place found by the key's name alone gets a shapeless value.
            let s = match place {
                Place::LabelNamedSecret | Place::ServerInfoSecretKey => Secret {
                    planted: plain.clone(),
                    hidden: plain.clone(),
                },
                _ => secret.clone(),
            };
            let snapshot = asked(place, &s.planted);
            prop_assert_eq!(snapshot.servers.len(), 4);
            prop_assert!(snapshot.servers.iter().all(|r| r.status == ServerStatus::Answered));
            let json = serde_json::to_string(&snapshot).expect("json");
            prop_assert!(!json.contains(&s.hidden), "{:?}: {} in {}", place, s.hidden, json);
            prop_assert!(json.contains("<redacted:"), "{:?}: no marker in {}", place, json);
        }
    }
}
