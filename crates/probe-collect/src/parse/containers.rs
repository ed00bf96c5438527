//! `docker inspect` / `podman inspect` JSON → containers of model-server images.

use std::collections::BTreeMap;

use probe_model::{ComposeOrigin, ContainerInfo, PodOrigin, PodOwner, PodOwnerKind};
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
                let items = items.get(..items.len().min(1000)).unwrap_or(&[]);
                let digests = repo_digests(items);
                for it in items.iter().filter(|it| !is_image(it)) {
                    if let Some(mut c) = one(&runtime, it)
                        && is_server(&c)
                        && !out.iter().any(|o: &ContainerInfo| o.id == c.id)
                    {
                        if let Some(d) = c.image_id.as_ref().and_then(|i| digests.get(i)) {
                            c.repo_digests.clone_from(d);
                        }
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

/// An image's `inspect` object (the section asks for the containers and their images in one
/// call): it has tags or digests and no state.
fn is_image(v: &Value) -> bool {
    v.get("State").is_none() && (v.get("RepoTags").is_some() || v.get("RepoDigests").is_some())
}

/// Registry digests kept per image.
const MAX_DIGESTS: usize = 8;

/// Each image's `RepoDigests` (`repo@sha256:<64 hex>`), by its id.
fn repo_digests(items: &[Value]) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for it in items.iter().filter(|it| is_image(it)) {
        let Some(id) = it.get("Id").and_then(Value::as_str) else {
            continue;
        };
        let digests: Vec<String> = strs(it.get("RepoDigests"))
            .into_iter()
            .filter(|d| is_repo_digest(d))
            .take(MAX_DIGESTS)
            .collect();
        if !digests.is_empty() {
            out.insert(sanitize_line(id), digests);
        }
    }
    out
}

/// `name@sha256:` and 64 hex digits, the name without spaces or controls.
fn is_repo_digest(d: &str) -> bool {
    let Some((name, hex)) = d.rsplit_once("@sha256:") else {
        return false;
    };
    !name.is_empty()
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/:-".contains(c))
        && hex.len() == 64
        && hex.chars().all(|c| c.is_ascii_hexdigit())
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
        runtime: probe_model::ContainerRuntime::from_name(runtime),
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
        finished_at: state
            .and_then(|s| s.get("FinishedAt"))
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
        image_id: v
            .get("Image")
            .and_then(Value::as_str)
            .filter(|i| i.starts_with("sha256:"))
            .map(sanitize_line),
        repo_digests: Vec::new(),
        compose: compose_of(cfg.and_then(|c| c.get("Labels"))),
        pod: pod_of(cfg.and_then(|c| c.get("Labels"))),
    })
}

/// Labels kept per container, and the longest value read.
const MAX_LABELS: usize = 256;
const MAX_LABEL_VALUE: usize = 4096;
/// Pod annotations kept (the runtime copies them as `annotation.KEY` labels).
const MAX_ANNOTATIONS: usize = 32;
/// The manifest `kubectl apply` leaves on a pod is read as its launch text: kept up to this.
const MAX_MANIFEST: usize = 65_536;

fn label<'a>(labels: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a str> {
    labels
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.len() <= MAX_LABEL_VALUE)
}

/// The project and service Docker Compose wrote into a container's labels.
fn compose_of(labels: Option<&Value>) -> Option<ComposeOrigin> {
    let labels = labels?.as_object().filter(|l| l.len() <= MAX_LABELS)?;
    let project = label(labels, "com.docker.compose.project")?;
    let service = label(labels, "com.docker.compose.service")?;
    let working_dir = label(labels, "com.docker.compose.project.working_dir").map(sanitize_line);
    // A relative name is under the project's directory (Compose writes absolute ones).
    let absolute = |f: &str| match working_dir.as_deref() {
        Some(dir) if !f.starts_with('/') && dir.starts_with('/') => format!(
            "{}/{}",
            dir.trim_end_matches('/'),
            f.trim_start_matches("./")
        ),
        _ => f.to_string(),
    };
    Some(ComposeOrigin {
        project: sanitize_line(project),
        service: sanitize_line(service),
        config_files: label(labels, "com.docker.compose.project.config_files")
            .map(|f| {
                f.split(',')
                    .map(str::trim)
                    .filter(|f| !f.is_empty())
                    .take(16)
                    .map(|f| sanitize_line(&absolute(f)))
                    .collect()
            })
            .unwrap_or_default(),
        working_dir,
        container_number: label(labels, "com.docker.compose.container-number")
            .and_then(|n| n.parse().ok()),
    })
}

/// The Kubernetes pod the kubelet's runtime wrote into a container's labels.
fn pod_of(labels: Option<&Value>) -> Option<PodOrigin> {
    let labels = labels?.as_object().filter(|l| l.len() <= MAX_LABELS)?;
    let pod = label(labels, "io.kubernetes.pod.name")?;
    let mut annotations = BTreeMap::new();
    for (k, v) in labels {
        let (Some(key), Some(v)) = (k.strip_prefix("annotation."), v.as_str()) else {
            continue;
        };
        let cap = if key == "kubectl.kubernetes.io/last-applied-configuration" {
            MAX_MANIFEST
        } else {
            MAX_LABEL_VALUE
        };
        if annotations.len() >= MAX_ANNOTATIONS || v.len() > cap {
            continue;
        }
        annotations.insert(sanitize_line(key), sanitize_terminal(v));
    }
    let owner = pod_owner(pod, &annotations);
    Some(PodOrigin {
        namespace: label(labels, "io.kubernetes.pod.namespace").map(sanitize_line),
        owner,
        pod: sanitize_line(pod),
        container: label(labels, "io.kubernetes.container.name").map(sanitize_line),
        uid: label(labels, "io.kubernetes.pod.uid").map(sanitize_line),
        annotations,
    })
}

/// The characters Kubernetes draws generated name parts from (`rand.SafeEncodeString`: no
/// vowels, no 0, 1, 3 that read as letters).
fn is_generated(part: &str) -> bool {
    part.chars()
        .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c))
}

/// The workload that made a pod, from the names controllers give their pods: a Deployment's
/// `NAME-<pod-template-hash>-<5>`, a generated `NAME-<5>`, a StatefulSet's `NAME-<ordinal>`, a
/// LeaderWorkerSet worker's `NAME-<group>-<worker>`; a static pod by its annotation.
fn pod_owner(pod: &str, annotations: &BTreeMap<String, String>) -> Option<PodOwner> {
    let owner = |kind, name: &str, detail: Option<String>| {
        (!name.is_empty()).then(|| PodOwner {
            kind,
            name: sanitize_line(name),
            detail: detail.map(|d| sanitize_line(&d)),
        })
    };
    if annotations
        .get("kubernetes.io/config.source")
        .map(String::as_str)
        == Some("file")
    {
        return owner(PodOwnerKind::Static, pod, None);
    }
    let parts: Vec<&str> = pod.rsplitn(3, '-').collect();
    let number = |p: &str| !p.is_empty() && p.len() <= 6 && p.chars().all(|c| c.is_ascii_digit());
    match parts.as_slice() {
        [suffix, hash, name]
            if suffix.len() == 5
                && is_generated(suffix)
                && (6..=10).contains(&hash.len())
                && is_generated(hash) =>
        {
            owner(
                PodOwnerKind::Deployment,
                name,
                Some(format!("{name}-{hash}")),
            )
        }
        [worker, group, name] if number(worker) && number(group) => owner(
            PodOwnerKind::LeaderWorkerSet,
            name,
            Some(format!("group {group}, worker {worker}")),
        ),
        [ordinal, rest @ ..] if number(ordinal) && !rest.is_empty() => {
            let name = &pod[..pod.len() - ordinal.len() - 1];
            owner(
                PodOwnerKind::StatefulSet,
                name,
                Some(format!("ordinal {ordinal}")),
            )
        }
        [suffix, rest @ ..] if suffix.len() == 5 && is_generated(suffix) && !rest.is_empty() => {
            let name = &pod[..pod.len() - suffix.len() - 1];
            owner(PodOwnerKind::Generated, name, None)
        }
        _ => None,
    }
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
        let j = r#"[{"Id":"abc123","Name":"/vllm","Config":{"Image":"vllm/vllm-openai:v0.11.0","Entrypoint":["vllm","serve"],"Cmd":["Qwen/Qwen3-8B","--tensor-parallel-size","2"],"Env":["HF_TOKEN=hf_x","PATH=/usr/bin"]},"State":{"Status":"running","StartedAt":"2026-10-30T12:00:01.123456789Z","FinishedAt":"2026-10-30T11:59:30.5Z"}},
                    {"Id":"def","Name":"/redis","Config":{"Image":"redis:7","Cmd":["redis-server"]},"State":{"Status":"running","StartedAt":"0001-01-01T00:00:00Z"}}]"#;
        let body = format!("\nB R ctr docker\n{j}");
        let (c, m) = parse(body.as_bytes(), "B");
        assert!(m.is_none());
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].name.as_deref(), Some("vllm"));
        assert_eq!(c[0].cmd[0], "Qwen/Qwen3-8B");
        assert_eq!(c[0].started_at, Some(1_793_361_601));
        assert_eq!(c[0].finished_at, Some(1_793_361_570));
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

    /// The provenance labels as Docker Compose v2 and the kubelet (cri-dockerd) write them.
    #[test]
    fn compose_and_pod_labels() {
        let j = r#"[{"Id":"c1","Image":"sha256:5f1e9d0c4b3a","Config":{"Image":"vllm/vllm-openai:v0.11.0","Labels":{
            "com.docker.compose.project":"llm","com.docker.compose.service":"vllm",
            "com.docker.compose.project.config_files":"/srv/llm/compose.yaml,./compose.gpu.yaml",
            "com.docker.compose.project.working_dir":"/srv/llm","com.docker.compose.container-number":"1",
            "com.docker.compose.version":"2.29.1"}}},
            {"Id":"c2","Image":"sha256:77aa","Config":{"Image":"lmsysorg/sglang@sha256:0123abcd","Labels":{
            "io.kubernetes.pod.name":"sglang-0","io.kubernetes.pod.namespace":"serving",
            "io.kubernetes.container.name":"sglang","io.kubernetes.pod.uid":"9f1c",
            "annotation.kubectl.kubernetes.io/last-applied-configuration":"{\"kind\":\"Pod\"}\u001b[2J",
            "com.docker.compose.project":"only-a-project"}}},
            {"Id":"c3","Image":"not-a-digest","Config":{"Image":"vllm/vllm-openai:latest","Labels":"x"}}]"#;
        let (c, m) = parse(format!("\nB R ctr docker\n{j}").as_bytes(), "B");
        assert!(m.is_none());
        assert_eq!(c.len(), 3);
        let compose = c[0].compose.as_ref().unwrap();
        assert_eq!(
            (compose.project.as_str(), compose.service.as_str()),
            ("llm", "vllm")
        );
        assert_eq!(
            compose.config_files,
            ["/srv/llm/compose.yaml", "/srv/llm/compose.gpu.yaml"]
        );
        assert_eq!(compose.working_dir.as_deref(), Some("/srv/llm"));
        assert_eq!(compose.container_number, Some(1));
        assert_eq!(c[0].image_id.as_deref(), Some("sha256:5f1e9d0c4b3a"));
        assert!(c[0].pod.is_none());
        let pod = c[1].pod.as_ref().unwrap();
        assert_eq!(pod.pod, "sglang-0");
        assert_eq!(pod.namespace.as_deref(), Some("serving"));
        assert_eq!(pod.container.as_deref(), Some("sglang"));
        let applied = &pod.annotations["kubectl.kubernetes.io/last-applied-configuration"];
        assert!(applied.starts_with("{\"kind\":\"Pod\"}") && !applied.contains('\u{1b}'));
        assert!(
            c[1].compose.is_none(),
            "a project without a service is no compose origin"
        );
        assert_eq!(c[2].image_id, None);
        assert!(c[2].compose.is_none() && c[2].pod.is_none());
    }

    /// The containers and their images come in one `inspect` array: an image is no container,
    /// and its `RepoDigests` join the containers that run it by image id.
    #[test]
    fn images_in_the_same_array_give_their_digests() {
        let hex = "0123456789abcdef".repeat(4);
        let j = format!(
            r#"[{{"Id":"c1","Image":"sha256:aa","Config":{{"Image":"vllm/vllm-openai:v0.11.0"}},"State":{{"Status":"running"}}}},
               {{"Id":"c1","Image":"sha256:aa","Config":{{"Image":"vllm/vllm-openai:v0.11.0"}},"State":{{"Status":"running"}}}},
               {{"Id":"sha256:aa","RepoTags":["vllm/vllm-openai:v0.11.0"],"RepoDigests":["vllm/vllm-openai@sha256:{hex}","bad digest@sha256:{hex}","x@sha256:short","\u001b[2J@sha256:{hex}"],"Config":{{"Cmd":["vllm","serve"]}}}},
               {{"Id":"sha256:bb","RepoTags":["vllm/vllm-openai:v0.10.2"],"RepoDigests":[]}}]"#
        );
        let (c, m) = parse(format!("\nB R ctr docker\n{j}").as_bytes(), "B");
        assert!(m.is_none());
        assert_eq!(
            c.len(),
            1,
            "the image is no container and the repeat is one: {c:?}"
        );
        assert_eq!(
            c[0].repo_digests,
            [format!("vllm/vllm-openai@sha256:{hex}")]
        );
    }

    /// The workload a pod's name points to.
    #[test]
    fn pod_owners_from_names() {
        let none = BTreeMap::new();
        let file: BTreeMap<String, String> = [(
            "kubernetes.io/config.source".to_string(),
            "file".to_string(),
        )]
        .into();
        type Owner<'a> = Option<(PodOwnerKind, &'a str, Option<&'a str>)>;
        let cases: &[(&str, &BTreeMap<String, String>, Owner)] = &[
            (
                "vllm-7d9c8b6f5-x2k4q",
                &none,
                Some((PodOwnerKind::Deployment, "vllm", Some("vllm-7d9c8b6f5"))),
            ),
            (
                "llama-70b-serving-5c6f7d8b9c-qwxzp",
                &none,
                Some((
                    PodOwnerKind::Deployment,
                    "llama-70b-serving",
                    Some("llama-70b-serving-5c6f7d8b9c"),
                )),
            ),
            (
                "sglang-0",
                &none,
                Some((PodOwnerKind::StatefulSet, "sglang", Some("ordinal 0"))),
            ),
            (
                "vllm-lws-0-1",
                &none,
                Some((
                    PodOwnerKind::LeaderWorkerSet,
                    "vllm-lws",
                    Some("group 0, worker 1"),
                )),
            ),
            (
                "bench-job-x7k2p",
                &none,
                Some((PodOwnerKind::Generated, "bench-job", None)),
            ),
            (
                "vllm-node-gpu7",
                &file,
                Some((PodOwnerKind::Static, "vllm-node-gpu7", None)),
            ),
            // Vowels are never generated: a hand-named pod has no owner to name.
            ("my-vllm-server", &none, None),
            ("vllm", &none, None),
            ("-0", &none, None),
        ];
        for (pod, ann, want) in cases {
            let got = pod_owner(pod, ann);
            let got = got
                .as_ref()
                .map(|o| (o.kind, o.name.as_str(), o.detail.as_deref()));
            assert_eq!(got, *want, "{pod}");
        }
    }
}
