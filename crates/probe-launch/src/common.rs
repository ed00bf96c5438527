//! Cross-engine view of a launch: the fields named exactly as in the launch corpus's `expected`
//! records (`../shared/corpus/README.md`).

use probe_model::LaunchConfig;
use serde_json::{Map, Value};

use crate::catalog::catalog;

/// The cross-engine keys read from options, in output order.
pub const OPTION_KEYS: [&str; 13] = [
    "tensor_parallel",
    "pipeline_parallel",
    "data_parallel",
    "host",
    "port",
    "served_model_name",
    "context_length",
    "gpu_memory_fraction",
    "max_running_requests",
    "quantization",
    "kv_cache_dtype",
    "dtype",
    "trust_remote_code",
];

/// Wrapper names as the corpus spells them.
fn wrapper_name(w: &str) -> &str {
    match w {
        "conda run" => "conda",
        "podman" => "docker",
        other => other,
    }
}

fn value_key(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An object with the corpus `expected` keys (engine, model, tensor_parallel, ...); a key is
/// absent when the launch text did not set it.
pub fn common_fields(launch: &LaunchConfig) -> Value {
    let mut out = Map::new();
    // Every engine with a definition in `configs/engines/` is named (Ollama is `ollama`, as
    // the corpus labels it); `other` is a server probe has no definition for.
    out.insert(
        "engine".into(),
        Value::String(launch.engine.as_str().into()),
    );
    if let Some(m) = &launch.model {
        out.insert("model".into(), Value::String(m.clone()));
    }
    let cat = catalog(launch.engine, launch.engine_version.as_deref());
    for key in OPTION_KEYS {
        for spec in cat.all_by_common(key) {
            let Some(o) = launch.options.get(&spec.name) else {
                continue;
            };
            let mut v = o.value.clone();
            if v.is_null() {
                continue;
            }
            if !spec.value_map.is_empty() {
                match spec.value_map.get(&value_key(&v)) {
                    Some(m) => v = m.clone(),
                    None => continue,
                }
            }
            if let Value::Array(items) = &v
                && items.len() == 1
                && let Some(first) = items.first()
            {
                v = first.clone();
            }
            out.insert(key.into(), v);
            break;
        }
    }
    if let Some(s) = &launch.speculative {
        let mut m = Map::new();
        if let Some(a) = &s.algorithm {
            m.insert("algorithm".into(), Value::String(a.clone()));
        }
        for (k, v) in [
            ("num_steps", &s.num_steps),
            ("eagle_topk", &s.eagle_topk),
            ("num_draft_tokens", &s.num_draft_tokens),
            ("num_speculative_tokens", &s.num_speculative_tokens),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), v.clone());
            }
        }
        if let Some(d) = &s.draft_model {
            m.insert("draft_model".into(), Value::String(d.clone()));
        }
        if !m.is_empty() {
            out.insert("speculative".into(), Value::Object(m));
        }
    }
    if !launch.env.is_empty() {
        out.insert(
            "env".into(),
            Value::Object(
                launch
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect(),
            ),
        );
    }
    if let Some(w) = launch.wrappers.first() {
        out.insert("wrapper".into(), Value::String(wrapper_name(w).to_string()));
    }
    Value::Object(out)
}
