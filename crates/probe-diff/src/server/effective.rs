//! Declared against effective: a server's own configuration next to the reconstructed launch,
//! read with the engine's catalog and `configs/server_keys.toml`.

use std::sync::OnceLock;

use probe_model::{EffectiveKind, EffectiveValue, Engine, LaunchConfig, ServerReading};
use serde::Deserialize;
use serde_json::Value;

use probe_launch::catalog::{OptionSpec, catalog};

const SERVER_KEYS: &str = include_str!("../../../../configs/server_keys.toml");

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerKeys {
    #[serde(rename = "engine")]
    pub engines: Vec<EngineKeys>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineKeys {
    pub name: String,
    #[serde(default)]
    pub resolved: Vec<String>,
    #[serde(default)]
    pub ignore: Vec<String>,
    #[serde(default)]
    pub alias: Vec<Alias>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alias {
    pub key: String,
    pub option: String,
    /// The server reports the value per unit of this other key (llama.cpp's `/props` `n_ctx` is
    /// one slot's share of `--ctx-size`, `total_slots` of them): it matches the launch's value
    /// as it is (a unified KV cache) or times that key's value (the context split per slot).
    #[serde(default)]
    pub per: Option<String>,
}

/// Why `configs/server_keys.toml` does not load.
#[derive(Debug, thiserror::Error)]
pub enum ServerKeysError {
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    #[error("unknown engine {0:?}")]
    UnknownEngine(String),
}

pub fn parse(text: &str) -> Result<ServerKeys, ServerKeysError> {
    let keys: ServerKeys = toml::from_str(text)?;
    if let Some(bad) = keys
        .engines
        .iter()
        .find(|e| Engine::parse(&e.name).is_none())
    {
        return Err(ServerKeysError::UnknownEngine(bad.name.clone()));
    }
    Ok(keys)
}

/// The embedded `configs/server_keys.toml` (checked by a test; empty if it ever failed).
pub fn server_keys() -> &'static ServerKeys {
    static K: OnceLock<ServerKeys> = OnceLock::new();
    K.get_or_init(|| probe_launch::embedded::load("configs/server_keys.toml", parse(SERVER_KEYS)))
}

fn keys_for(engine: Engine) -> Option<&'static EngineKeys> {
    server_keys()
        .engines
        .iter()
        .find(|e| Engine::parse(&e.name) == Some(engine))
}

/// A value as a number, also from text (`"0.92"`, vLLM's labels).
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        Value::Bool(_) | Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

fn boolean(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn is_none(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => matches!(s.trim(), "" | "None" | "null"),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Whether a launch value and a server value mean the same (types differ between the two:
/// numbers as text, Python's `True`, one-element lists).
pub fn same(a: &Value, b: &Value) -> bool {
    if let (Value::Array(x), y) | (y, Value::Array(x)) = (a, b)
        && !matches!(y, Value::Array(_))
        && let [only] = x.as_slice()
    {
        return same(only, y);
    }
    if is_none(a) || is_none(b) {
        return is_none(a) && is_none(b);
    }
    if let (Some(x), Some(y)) = (number(a), number(b)) {
        return (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0);
    }
    if let (Some(x), Some(y)) = (boolean(a), boolean(b)) {
        return x == y;
    }
    match (a, b) {
        (Value::String(x), Value::String(y)) => x.trim().eq_ignore_ascii_case(y.trim()),
        _ => a == b,
    }
}

fn option_for<'c>(
    cat: &'c probe_launch::catalog::Catalog,
    keys: Option<&EngineKeys>,
    key: &str,
) -> Option<&'c OptionSpec> {
    let aliased = keys
        .and_then(|k| k.alias.iter().find(|a| a.key == key))
        .map(|a| a.option.as_str());
    match aliased {
        Some(option) => cat.get(option),
        None if key.contains('.') => None,
        None => cat.lookup_name_loose(key),
    }
}

/// The values a server key stands for, compared like with like: the value, and for a value
/// reported per unit of another key ([`Alias::per`]) the value times that key's.
fn like_for_like(
    keys: Option<&EngineKeys>,
    key: &str,
    value: &Value,
    reading: &ServerReading,
) -> Vec<Value> {
    let mut out = vec![value.clone()];
    let per = keys
        .and_then(|k| k.alias.iter().find(|a| a.key == key))
        .and_then(|a| a.per.as_deref())
        .and_then(|p| reading.args.get(p))
        .and_then(number)
        .filter(|n| *n > 1.0);
    if let (Some(n), Some(v)) = (per, number(value)) {
        out.push(Value::from(v * n));
    }
    out
}

/// One server key against the launch; `None` when there is nothing to say. `values`: what the
/// server's value stands for ([`like_for_like`]; the first is the value itself).
fn compare_key(
    key: &str,
    values: &[Value],
    spec: Option<&OptionSpec>,
    launch: &LaunchConfig,
    resolved: bool,
) -> Option<(EffectiveKind, Option<Value>, Option<Value>, String)> {
    let value = values.first()?;
    let Some(spec) = spec else {
        return (resolved && !is_none(value))
            .then(|| (EffectiveKind::Resolved, None, None, key.to_string()));
    };
    let declared = launch.options.get(&spec.name).map(|o| o.value.clone());
    let default = spec.default.clone().filter(|d| !is_none(d));
    let matches = |x: &Value| values.iter().any(|v| same(x, v));
    match (&declared, &default) {
        (Some(d), _) if !matches(d) => {
            Some((EffectiveKind::Differs, declared, default, spec.name.clone()))
        }
        (Some(_), _) => None,
        (None, Some(d)) if !matches(d) => {
            Some((EffectiveKind::NotInLaunch, None, default, spec.name.clone()))
        }
        (None, Some(_)) => None,
        (None, None) => (resolved && !is_none(value))
            .then(|| (EffectiveKind::Resolved, None, None, spec.name.clone())),
    }
}

/// The server's reported configuration against `launch`: differences first, then values the
/// launch does not show, then resolved defaults.
pub fn effective(reading: &ServerReading, launch: &LaunchConfig) -> Vec<EffectiveValue> {
    let version = reading
        .version
        .as_deref()
        .or(launch.engine_version.as_deref());
    let cat = catalog(reading.engine, version);
    let keys = keys_for(reading.engine);
    let source_of = |key: &str| {
        let path = reading
            .requests
            .iter()
            .find(|r| {
                r.status.is_some_and(|s| (200..300).contains(&s))
                    && (key.contains('.') == (r.path == "/metrics"))
            })
            .map(|r| r.path.as_str())
            .unwrap_or("?");
        format!("GET {path} {key}")
    };
    let mut out: Vec<EffectiveValue> = Vec::new();
    for (key, value) in &reading.args {
        if keys.is_some_and(|k| k.ignore.iter().any(|i| i == key)) || cat.is_model_option(key) {
            continue;
        }
        let resolved = keys.is_some_and(|k| k.resolved.iter().any(|r| r == key));
        let spec = option_for(cat, keys, key);
        let values = like_for_like(keys, key, value, reading);
        if let Some((kind, declared, default, name)) =
            compare_key(key, &values, spec, launch, resolved)
        {
            if out.iter().any(|e| e.key == name) {
                continue;
            }
            out.push(EffectiveValue {
                key: name,
                kind,
                declared,
                default,
                effective: value.clone(),
                source: source_of(key),
            });
        }
    }
    let rank = |k: EffectiveKind| match k {
        EffectiveKind::Differs => 0,
        EffectiveKind::NotInLaunch => 1,
        EffectiveKind::Resolved => 2,
    };
    out.sort_by(|a, b| rank(a.kind).cmp(&rank(b.kind)).then(a.key.cmp(&b.key)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::{LaunchOption, ServerRequest};
    use serde_json::json;

    #[test]
    fn embedded_keys_load() {
        assert!(keys_for(Engine::Sglang).is_some());
        assert!(parse("[[engine]]\nname = \"sglang\"\nresolvd = []\n").is_err());
        assert!(parse("[[engine]]\nname = \"nope\"\n").is_err());
    }

    #[test]
    fn same_table() {
        let cases = [
            (json!(0.92), json!("0.92"), true),
            (json!(true), json!("True"), true),
            (json!(["glm"]), json!("glm"), true),
            (json!(null), json!("None"), true),
            (json!(8192), json!(4096), false),
            (json!("fa3"), json!("FA3"), true),
            (json!("auto"), json!("fp8_e5m2"), false),
            (json!(null), json!(48), false),
        ];
        for (a, b, expected) in cases {
            assert_eq!(same(&a, &b), expected, "{a} vs {b}");
        }
    }

    fn opt(v: Value) -> LaunchOption {
        LaunchOption {
            value: v,
            written: String::new(),
        }
    }

    #[test]
    fn sglang_declared_against_effective() {
        let mut launch = LaunchConfig {
            engine: Engine::Sglang,
            ..LaunchConfig::default()
        };
        launch
            .options
            .insert("mem-fraction-static".into(), opt(json!(0.85)));
        launch.options.insert("tp-size".into(), opt(json!(2)));
        let reading = ServerReading {
            engine: Engine::Sglang,
            args: [
                ("mem_fraction_static", json!(0.8)),
                ("tp_size", json!(2)),
                ("max_running_requests", json!(48)),
                ("max_total_num_tokens", json!(1286144)),
                ("chunked_prefill_size", json!(8192)),
                ("enable_metrics", json!(true)),
                ("random_seed", json!(570867310)),
                ("model_path", json!("Qwen/Qwen3")),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
            requests: vec![ServerRequest {
                method: "GET".into(),
                path: "/get_server_info".into(),
                status: Some(200),
                ..ServerRequest::default()
            }],
            ..ServerReading::default()
        };
        let got = effective(&reading, &launch);
        let kind = |k: &str| got.iter().find(|e| e.key == k).map(|e| e.kind);
        // (key, expected kind)
        let cases = [
            ("mem-fraction-static", Some(EffectiveKind::Differs)),
            ("tp-size", None),
            ("max-running-requests", Some(EffectiveKind::Resolved)),
            ("max_total_num_tokens", Some(EffectiveKind::Resolved)),
            ("chunked-prefill-size", Some(EffectiveKind::Resolved)),
            ("enable-metrics", Some(EffectiveKind::NotInLaunch)),
            ("random-seed", None),
            ("model-path", None),
        ];
        for (key, expected) in cases {
            assert_eq!(kind(key), expected, "{key}: {got:#?}");
        }
        assert_eq!(got.first().map(|e| e.kind), Some(EffectiveKind::Differs));
        let mem = got.iter().find(|e| e.key == "mem-fraction-static").unwrap();
        assert_eq!(mem.declared, Some(json!(0.85)));
        assert_eq!(mem.source, "GET /get_server_info mem_fraction_static");
    }

    /// llama.cpp's `/props` `n_ctx` is one slot's context: `-c 8192 -np 4` reports 2048 (split)
    /// or 8192 (unified KV), neither differs from the launch; 1024 does.
    #[test]
    fn llama_cpp_per_slot_context_is_compared_like_with_like() {
        let mut launch = LaunchConfig {
            engine: Engine::LlamaCpp,
            ..LaunchConfig::default()
        };
        launch.options.insert("ctx-size".into(), opt(json!(8192)));
        launch.options.insert("parallel".into(), opt(json!(4)));
        // (n_ctx the server reports, total_slots, differs)
        let cases = [
            (2048, 4, false),
            (8192, 4, false),
            (8192, 1, false),
            (1024, 4, true),
            (2048, 1, true),
        ];
        for (n_ctx, slots, differs) in cases {
            let reading = ServerReading {
                engine: Engine::LlamaCpp,
                args: [("n_ctx", json!(n_ctx)), ("total_slots", json!(slots))]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
                ..ServerReading::default()
            };
            let got = effective(&reading, &launch);
            let ctx = got.iter().find(|e| e.key == "ctx-size");
            assert_eq!(
                ctx.is_some_and(|e| e.kind == EffectiveKind::Differs),
                differs,
                "{n_ctx} x {slots}: {got:#?}"
            );
        }
    }
}
