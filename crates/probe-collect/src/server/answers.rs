//! Reading a server's JSON answers into its [`ServerReading`]: every string made terminal-safe
//! and redacted, nested values bounded.

use probe_model::{ServerMetric, ServerMetricKind, ServerReading};
use serde_json::{Map, Value};

use super::endpoints::{Endpoints, Reads};
use crate::redact::Redactor;
use crate::sanitize::sanitize_line;

/// Longest string kept from an answer (a chat template is not configuration).
const MAX_STRING: usize = 512;
/// Deepest nesting kept.
const MAX_DEPTH: usize = 6;

/// A value made safe to store: strings sanitized, cut and redacted; secret keys redacted.
pub fn clean(key: &str, v: &Value, r: Option<&Redactor>, depth: usize) -> Value {
    if r.is_some_and(|r| r.is_secret_key(key)) && !v.is_null() && v != &Value::Bool(false) {
        let text = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return Value::String(crate::redact::marker(&text));
    }
    match v {
        Value::String(s) => {
            let s: String = sanitize_line(s).chars().take(MAX_STRING).collect();
            Value::String(match r {
                Some(r) => r.redact_text(&s).into_owned(),
                None => s,
            })
        }
        Value::Array(items) if depth < MAX_DEPTH => Value::Array(
            items
                .iter()
                .take(256)
                .map(|x| clean(key, x, r, depth + 1))
                .collect(),
        ),
        Value::Object(m) if depth < MAX_DEPTH => Value::Object(
            m.iter()
                .take(256)
                .map(|(k, x)| (sanitize_line(k), clean(k, x, r, depth + 1)))
                .collect(),
        ),
        Value::Array(_) | Value::Object(_) => Value::String("<nested too deep>".into()),
        other => other.clone(),
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => {
            Some(sanitize_line(s).chars().take(MAX_STRING).collect())
        }
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Folds one JSON answer into `reading`. `path` names the request in sources.
pub fn fold(
    reads: Reads,
    body: &Value,
    path: &str,
    cfg: &Endpoints,
    r: Option<&Redactor>,
    reading: &mut ServerReading,
) {
    let Some(obj) = body.as_object() else {
        return;
    };
    match reads {
        Reads::ServerInfo => server_info(obj, path, cfg, r, reading),
        Reads::ModelInfo => {
            if reading.model.is_none() {
                reading.model = text(obj.get("model_path"));
            }
        }
        Reads::Version => reading.version = text(obj.get("version")).or(reading.version.take()),
        Reads::Models => models(obj, r, reading),
        Reads::Props => props(obj, r, reading),
        Reads::Info => {
            scalars(obj, r, reading);
            reading.model = text(obj.get("model_id")).or(reading.model.take());
            reading.version = text(obj.get("version")).or(reading.version.take());
        }
        Reads::LoadedModels => loaded_models(obj, r, reading),
        Reads::Metrics => {}
    }
}

/// Models loaded at most, read from one answer.
const MAX_LOADED_MODELS: usize = 16;

/// `{"models": [{name, size, size_vram, context_length, ...}]}`: each loaded model as args
/// `loaded.<name>.<field>` (size and size_vram in bytes, their ratio as `gpu_share`), the first
/// as the reading's model.
fn loaded_models(obj: &Map<String, Value>, r: Option<&Redactor>, reading: &mut ServerReading) {
    let Some(models) = obj.get("models").and_then(Value::as_array) else {
        return;
    };
    for m in models
        .iter()
        .take(MAX_LOADED_MODELS)
        .filter_map(Value::as_object)
    {
        let Some(name) = text(m.get("name")).or_else(|| text(m.get("model"))) else {
            continue;
        };
        let name = sanitize_line(&name);
        if reading.model.is_none() {
            reading.model = Some(name.clone());
        }
        for key in ["size", "size_vram", "context_length", "expires_at"] {
            if let Some(v) = m.get(key).filter(|v| !v.is_null()) {
                reading
                    .args
                    .insert(format!("loaded.{name}.{key}"), clean(key, v, r, 0));
            }
        }
        let num = |k: &str| m.get(k).and_then(Value::as_f64).filter(|v| v.is_finite());
        if let (Some(size), Some(vram)) = (num("size"), num("size_vram"))
            && size > 0.0
        {
            let share = (vram / size).clamp(0.0, 1.0);
            reading.args.insert(
                format!("loaded.{name}.gpu_share"),
                Value::from((share * 1000.0).round() / 1000.0),
            );
        }
    }
}

fn server_info(
    obj: &Map<String, Value>,
    path: &str,
    cfg: &Endpoints,
    r: Option<&Redactor>,
    reading: &mut ServerReading,
) {
    for (k, v) in obj.iter().take(2048) {
        match k.as_str() {
            "internal_states" => {}
            "version" => reading.version = text(Some(v)),
            _ => {
                reading.args.insert(sanitize_line(k), clean(k, v, r, 0));
            }
        }
    }
    reading.model = text(obj.get("served_model_name"))
        .or_else(|| text(obj.get("model_path")))
        .or(reading.model.take());
    let state = obj
        .get("internal_states")
        .and_then(|s| s.as_array())
        .and_then(|a| a.first())
        .and_then(|s| s.as_object());
    if let Some(state) = state {
        for is in &cfg.internal_states {
            if let Some(value) = state.get(&is.key).and_then(Value::as_f64)
                && value.is_finite()
            {
                reading.metrics.push(ServerMetric {
                    name: is.name.clone(),
                    kind: ServerMetricKind::Gauge,
                    value,
                    source: format!("GET {path} internal_states[0].{}", is.key),
                });
            }
        }
    }
}

fn models(obj: &Map<String, Value>, r: Option<&Redactor>, reading: &mut ServerReading) {
    let Some(first) = obj
        .get("data")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_object)
    else {
        return;
    };
    reading.model = text(first.get("id")).or(reading.model.take());
    for key in ["root", "max_model_len"] {
        if let Some(v) = first.get(key) {
            reading.args.insert(key.into(), clean(key, v, r, 0));
        }
    }
}

fn props(obj: &Map<String, Value>, r: Option<&Redactor>, reading: &mut ServerReading) {
    scalars(obj, r, reading);
    for key in ["chat_template", "bos_token", "eos_token"] {
        reading.args.remove(key);
    }
    if let Some(n_ctx) = obj
        .get("default_generation_settings")
        .and_then(|d| d.get("n_ctx"))
    {
        reading
            .args
            .insert("n_ctx".into(), clean("n_ctx", n_ctx, r, 0));
    }
    reading.model = text(obj.get("model_alias"))
        .or_else(|| text(obj.get("model_path")))
        .or(reading.model.take());
    reading.version = text(obj.get("build_info")).or(reading.version.take());
}

/// The top-level scalars of an answer as args.
fn scalars(obj: &Map<String, Value>, r: Option<&Redactor>, reading: &mut ServerReading) {
    for (k, v) in obj.iter().take(512) {
        if matches!(v, Value::Array(_) | Value::Object(_)) {
            continue;
        }
        reading.args.insert(sanitize_line(k), clean(k, v, r, 0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::endpoints::endpoints;
    use serde_json::json;

    /// Ollama's `/api/ps` (api/types.go ProcessModelResponse): (answer, model, args expected).
    #[test]
    fn loaded_models_table() {
        type Case = (Value, Option<&'static str>, Vec<(&'static str, Value)>);
        let cases: Vec<Case> = vec![
            (
                json!({"models": [{"name": "llama3.3:70b", "model": "llama3.3:70b", "size": 86767722496_i64,
                    "digest": "7b91", "details": {"family": "llama"}, "expires_at": "2026-12-05T13:19:54Z",
                    "size_vram": 47459028992_i64, "context_length": 32768}]}),
                Some("llama3.3:70b"),
                vec![
                    ("loaded.llama3.3:70b.size", json!(86767722496_i64)),
                    ("loaded.llama3.3:70b.size_vram", json!(47459028992_i64)),
                    ("loaded.llama3.3:70b.context_length", json!(32768)),
                    ("loaded.llama3.3:70b.gpu_share", json!(0.547)),
                ],
            ),
            (
                json!({"models": [
                    {"name": "qwen2.5:32b", "size": 100, "size_vram": 100},
                    {"name": "llama3.1:8b", "size": 10, "size_vram": 20}]}),
                Some("qwen2.5:32b"),
                vec![
                    ("loaded.qwen2.5:32b.gpu_share", json!(1.0)),
                    ("loaded.llama3.1:8b.gpu_share", json!(1.0)),
                ],
            ),
            (json!({"models": []}), None, vec![]),
            (json!({"models": "x"}), None, vec![]),
            (json!({"models": [{"size": 1}, 3, null]}), None, vec![]),
            (
                json!({"models": [{"name": "a", "size": 0, "size_vram": 5}]}),
                Some("a"),
                vec![("loaded.a.size", json!(0))],
            ),
        ];
        for (answer, model, args) in cases {
            let mut reading = ServerReading::default();
            fold(
                Reads::LoadedModels,
                &answer,
                "/api/ps",
                endpoints(),
                None,
                &mut reading,
            );
            assert_eq!(reading.model.as_deref(), model, "{answer}");
            for (k, v) in &args {
                assert_eq!(
                    reading.args.get(*k),
                    Some(v),
                    "{k} in {answer}: {:?}",
                    reading.args
                );
            }
            if args.is_empty() {
                assert!(
                    !reading.args.keys().any(|k| k.ends_with("gpu_share")),
                    "{answer}: {:?}",
                    reading.args
                );
            }
        }
    }

    #[test]
    fn sglang_server_info_table() {
        let body = json!({
            "model_path": "Qwen/Qwen3-8B", "tp_size": 2, "api_key": "sk-proj-abcdefghijklmnop0123",
            "chunked_prefill_size": 8192, "max_total_num_tokens": 1286144,
            "attention_backend": "fa3\u{1b}[2J",
            "internal_states": [{"avg_spec_accept_length": 1.02, "last_gen_throughput": 412.5}],
            "version": "0.5.9"
        });
        let mut reading = ServerReading::default();
        fold(
            Reads::ServerInfo,
            &body,
            "/get_server_info",
            endpoints(),
            Some(Redactor::builtin()),
            &mut reading,
        );
        // (key, expected)
        let cases = [
            ("tp_size", json!(2)),
            ("max_total_num_tokens", json!(1286144)),
            ("attention_backend", json!("fa3")),
        ];
        for (k, v) in cases {
            assert_eq!(reading.args.get(k), Some(&v), "{k}");
        }
        let key = reading.args.get("api_key").and_then(Value::as_str).unwrap();
        assert!(key.starts_with("<redacted:"), "{key}");
        assert!(!reading.args.contains_key("internal_states"));
        assert_eq!(reading.version.as_deref(), Some("0.5.9"));
        assert_eq!(reading.model.as_deref(), Some("Qwen/Qwen3-8B"));
        let accept = reading
            .metrics
            .iter()
            .find(|m| m.name == "spec_accept_length")
            .unwrap();
        assert_eq!(accept.value, 1.02);
        assert_eq!(
            accept.source,
            "GET /get_server_info internal_states[0].avg_spec_accept_length"
        );
    }

    #[test]
    fn other_engines_and_hostile_shapes() {
        let mut reading = ServerReading::default();
        let cfg = endpoints();
        fold(
            Reads::Version,
            &json!({"version": "0.11.0"}),
            "/version",
            cfg,
            None,
            &mut reading,
        );
        fold(
            Reads::Models,
            &json!({"object": "list", "data": [{"id": "llama-3.3-70b", "root": "/mnt/models/x", "max_model_len": 32768}]}),
            "/v1/models",
            cfg,
            None,
            &mut reading,
        );
        assert_eq!(reading.version.as_deref(), Some("0.11.0"));
        assert_eq!(reading.model.as_deref(), Some("llama-3.3-70b"));
        assert_eq!(reading.args.get("max_model_len"), Some(&json!(32768)));
        // Not objects, wrong types: nothing, no panic.
        for body in [
            json!([1, 2]),
            json!("x"),
            json!({"data": "x"}),
            json!({"internal_states": 5}),
        ] {
            for reads in [Reads::ServerInfo, Reads::Models, Reads::Props, Reads::Info] {
                fold(reads, &body, "/x", cfg, None, &mut ServerReading::default());
            }
        }
        let deep = (0..50).fold(json!(1), |acc, _| json!([acc]));
        let cleaned = clean("k", &deep, None, 0);
        assert!(cleaned.to_string().contains("nested too deep"));
    }
}
