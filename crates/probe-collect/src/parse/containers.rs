//! `docker inspect` / `podman inspect` JSON → containers of model-server images.

use probe_model::ContainerInfo;
use serde_json::Value;

use crate::config;
use crate::frame::records;
use crate::sanitize::{sanitize_line, sanitize_terminal};

/// Parses the `containers` section. Returns the containers and, when some JSON could not be
/// read, a message.
pub fn parse(body: &[u8], boundary: &str) -> (Vec<ContainerInfo>, Option<String>) {
    let mut out = Vec::new();
    let mut msg = None;
    for r in records(body, boundary) {
        let Some(rt) = r.header.strip_prefix("ctr ") else {
            continue;
        };
        let runtime = sanitize_line(rt.trim());
        match serde_json::from_slice::<Value>(r.data) {
            Ok(Value::Array(items)) => {
                for it in items.iter().take(1000) {
                    if let Some(c) = one(&runtime, it)
                        && is_server(&c)
                    {
                        out.push(c);
                    }
                }
            }
            Ok(_) => msg = Some(format!("{runtime} inspect: not a JSON array")),
            Err(e) => msg = Some(format!("{runtime} inspect: invalid JSON ({e})")),
        }
    }
    (out, msg)
}

fn strs(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .take(4096)
            .filter_map(|x| x.as_str())
            .map(sanitize_terminal)
            .collect(),
        Some(Value::String(s)) => vec![sanitize_terminal(s)],
        _ => Vec::new(),
    }
}

fn one(runtime: &str, v: &Value) -> Option<ContainerInfo> {
    let id = v.get("Id")?.as_str()?;
    let cfg = v.get("Config");
    let image = cfg
        .and_then(|c| c.get("Image"))
        .and_then(Value::as_str)
        .or_else(|| v.get("ImageName").and_then(Value::as_str))
        .unwrap_or("");
    let mut env = std::collections::BTreeMap::new();
    for kv in strs(cfg.and_then(|c| c.get("Env"))) {
        if let Some((k, val)) = kv.split_once('=') {
            env.insert(sanitize_line(k), val.to_string());
        }
    }
    let state = v.get("State");
    Some(ContainerInfo {
        runtime: runtime.to_string(),
        id: sanitize_line(id),
        name: v
            .get("Name")
            .and_then(Value::as_str)
            .map(|n| sanitize_line(n.trim_start_matches('/'))),
        image: sanitize_line(image),
        entrypoint: strs(cfg.and_then(|c| c.get("Entrypoint"))),
        cmd: strs(cfg.and_then(|c| c.get("Cmd"))),
        env,
        started_at: state
            .and_then(|s| s.get("StartedAt"))
            .and_then(Value::as_str)
            .and_then(super::parse_rfc3339)
            .filter(|&t| t > 0),
        state: state
            .and_then(|s| s.get("Status"))
            .and_then(Value::as_str)
            .map(sanitize_line),
        log_path: v
            .get("LogPath")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(sanitize_line),
        log_driver: v
            .get("HostConfig")
            .and_then(|h| h.get("LogConfig"))
            .and_then(|l| l.get("Type"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(sanitize_line),
    })
}

fn is_server(c: &ContainerInfo) -> bool {
    let re = &config::servers().container_re;
    re.is_match(&c.image) || re.is_match(&c.entrypoint.join(" ")) || re.is_match(&c.cmd.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inspect() {
        let j = r#"[{"Id":"abc123","Name":"/vllm","Config":{"Image":"vllm/vllm-openai:v0.11.0","Entrypoint":["vllm","serve"],"Cmd":["Qwen/Qwen3-8B","--tensor-parallel-size","2"],"Env":["HF_TOKEN=hf_x","PATH=/usr/bin"]},"State":{"Status":"running","StartedAt":"2026-10-30T12:00:01.123456789Z"}},
                    {"Id":"def","Name":"/redis","Config":{"Image":"redis:7","Cmd":["redis-server"]},"State":{"Status":"running","StartedAt":"0001-01-01T00:00:00Z"}}]"#;
        let body = format!("\nB R ctr docker\n{j}");
        let (c, m) = parse(body.as_bytes(), "B");
        assert!(m.is_none());
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].name.as_deref(), Some("vllm"));
        assert_eq!(c[0].cmd[0], "Qwen/Qwen3-8B");
        assert_eq!(c[0].started_at, Some(1_793_361_601));
        assert_eq!(c[0].env.get("HF_TOKEN").map(String::as_str), Some("hf_x"));
        assert_eq!(c[0].log_path, None);
        let j = r#"[{"Id":"abc","Config":{"Image":"vllm/vllm-openai:v0.11.0"},"LogPath":"/var/lib/docker/containers/abc/abc-json.log","HostConfig":{"LogConfig":{"Type":"json-file","Config":{"max-size":"100m"}}}}]"#;
        let (c, _) = parse(format!("\nB R ctr docker\n{j}").as_bytes(), "B");
        assert_eq!(
            c[0].log_path.as_deref(),
            Some("/var/lib/docker/containers/abc/abc-json.log")
        );
        assert_eq!(c[0].log_driver.as_deref(), Some("json-file"));
        let (_, m) = parse(b"\nB R ctr docker\n[{\"Id\":", "B");
        assert!(m.is_some());
    }
}
