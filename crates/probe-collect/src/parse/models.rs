//! Model `config.json`: the keys of `configs/model_keys.toml`, nested configs flattened.

use std::collections::BTreeMap;

use probe_model::{ModelConfig, SectionStatus};
use serde_json::Value;

use crate::config;
use crate::frame::{FileStatus, file_header, records};
use crate::sanitize::{sanitize_line, sanitize_terminal};

/// Parses the `models` section: one [`ModelConfig`] per model (the first config found wins).
pub fn parse(body: &[u8], boundary: &str) -> Vec<ModelConfig> {
    let mut out: Vec<ModelConfig> = Vec::new();
    let mut cur: Option<String> = None;
    for r in records(body, boundary) {
        match r.kind {
            'R' if r.header.starts_with("model") => {
                cur = Some(sanitize_line(
                    String::from_utf8_lossy(r.data)
                        .lines()
                        .next()
                        .unwrap_or("")
                        .trim(),
                ));
            }
            'F' => {
                let Some(model) = cur.clone() else { continue };
                let h = file_header(&r.header);
                let existing = out.iter().position(|m| m.model == model);
                let status_now = existing.and_then(|i| out.get(i)).map(|m| m.status);
                if status_now.is_some_and(|st| rank(st) >= rank(h.section_status().0)) {
                    continue;
                }
                let mut m = ModelConfig {
                    model: model.clone(),
                    config_path: h.path.clone(),
                    mtime: h.mtime,
                    ..Default::default()
                };
                match &h.status {
                    FileStatus::Ok => match serde_json::from_slice::<Value>(r.data) {
                        Ok(v) => m.fields = fields(&v),
                        Err(e) => {
                            m.status = SectionStatus::Failed;
                            m.message = Some(format!("invalid JSON: {e}"));
                        }
                    },
                    other => {
                        m.status = h.section_status().0;
                        m.message = match (other, h.section_status().1) {
                            (_, Some(why)) => Some(why.to_string()),
                            (FileStatus::Missing | FileStatus::Denied, None) => None,
                            _ => Some(other.describe()),
                        };
                    }
                }
                match existing {
                    Some(i) => {
                        if let Some(slot) = out.get_mut(i) {
                            *slot = m;
                        }
                    }
                    None => out.push(m),
                }
            }
            _ => {}
        }
    }
    out
}

/// Of several candidate places for one model, the most telling result is kept: a config read
/// beats a broken one, which beats "permission denied", which beats "not there".
fn rank(s: SectionStatus) -> u8 {
    match s {
        SectionStatus::Ok => 4,
        SectionStatus::Failed | SectionStatus::Truncated | SectionStatus::TimedOut => 3,
        SectionStatus::PermissionDenied => 2,
        SectionStatus::NotPresent => 1,
    }
}

/// Selected keys, top level and nested (`text_config.num_hidden_layers`).
pub fn fields(v: &Value) -> BTreeMap<String, Value> {
    let mk = config::model_keys();
    let mut out = BTreeMap::new();
    let mut take = |prefix: &str, obj: &Value| {
        for k in &mk.keys {
            if let Some(x) = obj.get(k) {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(key, bounded(x, mk.max_value_bytes));
            }
        }
    };
    take("", v);
    for n in &mk.nested {
        if let Some(sub) = v.get(n).filter(|s| s.is_object()) {
            take(n, sub);
        }
    }
    out
}

fn bounded(v: &Value, max: usize) -> Value {
    let s = serde_json::to_string(v).unwrap_or_default();
    if s.len() <= max {
        clean(v)
    } else {
        Value::String(format!("<{} bytes of JSON, not kept>", s.len()))
    }
}

/// Strips control characters from every string in a JSON value.
fn clean(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(sanitize_terminal(s)),
        Value::Array(a) => Value::Array(a.iter().map(clean).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (sanitize_line(k), clean(x)))
                .collect(),
        ),
        x => x.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qwen35_nested() {
        let cfg = r#"{"architectures":["Qwen3_5MoeForConditionalGeneration"],"model_type":"qwen3_5_moe","text_config":{"model_type":"qwen3_5_moe_text","num_hidden_layers":48,"full_attention_interval":4,"mtp_num_hidden_layers":1,"layer_types":["linear_attention","full_attention"]},"quantization_config":{"quant_method":"fp8"},"unrelated":1}"#;
        let body = format!(
            "\nB R model hf\nQwen/Qwen3.5-35B-A3B\n\nB F ok cfg 1761800000 {} /root/.cache/huggingface/hub/models--Qwen--Qwen3.5-35B-A3B/snapshots/abc/config.json\n{cfg}",
            cfg.len()
        );
        let m = parse(body.as_bytes(), "B");
        assert_eq!(m.len(), 1);
        let f = &m[0].fields;
        assert_eq!(m[0].model, "Qwen/Qwen3.5-35B-A3B");
        assert_eq!(f["text_config.num_hidden_layers"], 48);
        assert_eq!(f["text_config.mtp_num_hidden_layers"], 1);
        assert_eq!(f["quantization_config"]["quant_method"], "fp8");
        assert!(!f.contains_key("unrelated"));
        assert_eq!(m[0].status, SectionStatus::Ok);
    }

    #[test]
    fn missing_then_found() {
        let body = "\nB R model dir\n/m\n\nB F missing cfg - - /a/config.json\n\nB R model dir\n/m\n\nB F ok cfg 1 2 /m/config.json\n{}";
        let m = parse(body.as_bytes(), "B");
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].status, SectionStatus::Ok);
        assert_eq!(m[0].config_path, "/m/config.json");
        // Denied inside a container, then not at the host's path: the denial is what counts.
        let body = "\nB R model dir\n/m\n\nB F denied cfg - - /proc/9/root/m/config.json\n\nB R model dir\n/m\n\nB F missing cfg - - /m/config.json\n";
        let m = parse(body.as_bytes(), "B");
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].status, SectionStatus::PermissionDenied);
        assert_eq!(m[0].config_path, "/proc/9/root/m/config.json");
    }
}
