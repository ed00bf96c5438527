//! "Containers": each model-server container's image with its tag and content digest, and where
//! its launch comes from (the compose file and service Docker Compose labelled it with, the
//! Kubernetes pod it belongs to).

use probe_model::ContainerInfo;

use super::doc::{Doc, Tone};

/// Characters of a `sha256:` digest shown (the full one is in the JSON).
const DIGEST_SHOWN: usize = 7 + 12;

fn short(digest: &str) -> &str {
    let mut end = digest.len().min(DIGEST_SHOWN);
    while !digest.is_char_boundary(end) {
        end -= 1;
    }
    digest.get(..end).unwrap_or(digest)
}

/// `vllm/vllm-openai:v0.11.0 (sha256:5f1e9d0c4b3a)`: the image as named, and the image it ran by
/// content when the runtime said.
pub fn image_line(c: &ContainerInfo) -> String {
    let image = if c.image.is_empty() {
        "(image not known)"
    } else {
        c.image.as_str()
    };
    let mut known = Vec::new();
    if let Some(id) = c.image_id.as_deref().filter(|id| !c.image.contains(id)) {
        known.push(short(id).to_string());
    }
    // The registry digest of the image's own repository, else the first one.
    let repo = probe_model::image_repository(&c.image);
    let digest = c
        .repo_digests
        .iter()
        .find(|d| d.split('@').next() == Some(repo))
        .or(c.repo_digests.first())
        .filter(|d| !c.image.contains(d.as_str()));
    if let Some(d) = digest
        && let Some((name, hash)) = d.split_once('@')
    {
        known.push(format!("pull {name}@{}", short(hash)));
    }
    if known.is_empty() {
        image.to_string()
    } else {
        format!("{image} ({})", known.join(", "))
    }
}

/// Where the container's launch comes from, as its labels say.
pub fn origin_line(c: &ContainerInfo) -> Option<String> {
    if let Some(compose) = &c.compose {
        let files = if compose.config_files.is_empty() {
            String::from("(compose file not labelled)")
        } else {
            compose.config_files.join(", ")
        };
        let replica = compose
            .container_number
            .filter(|n| *n > 1)
            .map(|n| format!(", replica {n}"))
            .unwrap_or_default();
        return Some(format!(
            "compose service {} of project {} in {files}{replica}",
            compose.service, compose.project
        ));
    }
    let pod = c.pod.as_ref()?;
    let namespace = pod.namespace.as_deref().unwrap_or("default");
    let container = pod
        .container
        .as_deref()
        .map(|n| format!(", container {n}"))
        .unwrap_or_default();
    let owner = pod
        .owner
        .as_ref()
        .map(|o| {
            let detail = o
                .detail
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            format!(
                ", of {} {}{detail}, as its name says",
                o.kind.as_str(),
                o.name
            )
        })
        .unwrap_or_default();
    Some(format!(
        "Kubernetes pod {namespace}/{}{container}{owner}",
        pod.pod
    ))
}

/// The section (nothing when the host runs no server container).
pub fn section(doc: &mut Doc, containers: &[ContainerInfo]) {
    if containers.is_empty() {
        return;
    }
    doc.heading(2, "Containers");
    let mut items = Vec::new();
    for c in containers {
        let name = c.name.as_deref().unwrap_or(c.id.as_str());
        let state = c.state.as_deref().unwrap_or("state not known");
        let tone = if state == "running" {
            Tone::Good
        } else {
            Tone::Plain
        };
        items.push((
            0,
            tone,
            format!("{name} ({state})  image {}", image_line(c)),
        ));
        if let Some(origin) = origin_line(c) {
            items.push((1, Tone::Dim, format!("launched from {origin}")));
        }
    }
    doc.items(items);
}

/// The log files found where people put the server's output, grouped by what named them:
/// how many, the first and last, and the reason (nothing when none was).
pub fn found_section(doc: &mut Doc, found: &[probe_model::FoundLog]) {
    if found.is_empty() {
        return;
    }
    doc.heading(2, "Logs found where they were put");
    let mut groups: Vec<(&str, Vec<&probe_model::FoundLog>)> = Vec::new();
    for f in found {
        match groups.iter_mut().find(|(r, _)| *r == f.found_by) {
            Some((_, v)) => v.push(f),
            None => groups.push((f.found_by.as_str(), vec![f])),
        }
    }
    let mut items = Vec::new();
    for (reason, files) in groups {
        let (Some(first), Some(last)) = (files.first(), files.last()) else {
            continue;
        };
        let lines: u64 = files.iter().filter_map(|f| f.lines_seen).sum();
        let starts: usize = files.iter().map(|f| f.startups).sum();
        let unread = files
            .iter()
            .filter(|f| f.status != probe_model::SectionStatus::Ok)
            .count();
        let span = if files.len() == 1 {
            first.location.clone()
        } else {
            format!(
                "{} files, {} .. {}",
                files.len(),
                first.location,
                last.location
            )
        };
        items.push((
            0,
            Tone::Plain,
            format!(
                "{span}: {lines} lines read, {starts} start-up{}",
                if starts == 1 { "" } else { "s" }
            ),
        ));
        items.push((1, Tone::Dim, format!("read because {reason}")));
        if unread > 0 {
            items.push((
                1,
                Tone::Warn,
                format!("{unread} not read (see the JSON's logs)"),
            ));
        }
    }
    doc.items(items);
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::{ComposeOrigin, PodOrigin, PodOwner, PodOwnerKind};

    #[test]
    fn image_and_origin_lines() {
        let compose = ContainerInfo {
            image: "vllm/vllm-openai:v0.11.0".into(),
            image_id: Some("sha256:5f1e9d0c4b3a29e8d7c6b5a4f3e2d1c0".into()),
            compose: Some(ComposeOrigin {
                project: "llm".into(),
                service: "vllm".into(),
                config_files: vec!["/srv/llm/compose.yaml".into()],
                working_dir: Some("/srv/llm".into()),
                container_number: Some(1),
            }),
            ..ContainerInfo::default()
        };
        let pod = ContainerInfo {
            image: "lmsysorg/sglang@sha256:0123".into(),
            image_id: Some("sha256:0123".into()),
            pod: Some(PodOrigin {
                namespace: Some("serving".into()),
                pod: "sglang-0".into(),
                container: Some("sglang".into()),
                ..PodOrigin::default()
            }),
            ..ContainerInfo::default()
        };
        let hex = "9c3b".repeat(16);
        let pulled = ContainerInfo {
            image: "vllm/vllm-openai:v0.11.0".into(),
            image_id: Some("sha256:5f1e9d0c4b3a29e8d7c6b5a4f3e2d1c0".into()),
            repo_digests: vec![
                format!("mirror.local/vllm@sha256:{hex}"),
                format!("vllm/vllm-openai@sha256:{hex}"),
            ],
            pod: Some(PodOrigin {
                namespace: Some("serving".into()),
                pod: "vllm-7d9c8b6f5-x2k4q".into(),
                owner: Some(PodOwner {
                    kind: PodOwnerKind::Deployment,
                    name: "vllm".into(),
                    detail: Some("vllm-7d9c8b6f5".into()),
                }),
                ..PodOrigin::default()
            }),
            ..ContainerInfo::default()
        };
        // (container, image line, origin line)
        let cases = [
            (
                &compose,
                "vllm/vllm-openai:v0.11.0 (sha256:5f1e9d0c4b3a)",
                Some("compose service vllm of project llm in /srv/llm/compose.yaml"),
            ),
            (
                &pod,
                "lmsysorg/sglang@sha256:0123",
                Some("Kubernetes pod serving/sglang-0, container sglang"),
            ),
            (
                &pulled,
                "vllm/vllm-openai:v0.11.0 (sha256:5f1e9d0c4b3a, pull vllm/vllm-openai@sha256:9c3b9c3b9c3b)",
                Some(
                    "Kubernetes pod serving/vllm-7d9c8b6f5-x2k4q, of Deployment vllm (vllm-7d9c8b6f5), as its name says",
                ),
            ),
        ];
        for (c, image, origin) in cases {
            assert_eq!(image_line(c), image);
            assert_eq!(origin_line(c).as_deref(), origin);
        }
        assert_eq!(origin_line(&ContainerInfo::default()), None);
        for (image, repo) in [
            ("vllm/vllm-openai:v0.11.0", "vllm/vllm-openai"),
            ("registry:5000/vllm:v1", "registry:5000/vllm"),
            ("registry:5000/vllm", "registry:5000/vllm"),
            ("lmsysorg/sglang@sha256:0123", "lmsysorg/sglang"),
        ] {
            assert_eq!(probe_model::image_repository(image), repo);
        }
        assert_eq!(image_line(&ContainerInfo::default()), "(image not known)");
    }
}
