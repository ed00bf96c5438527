//! A container's own launch text, held against what it runs: the compose files it was made from
//! ([`Snapshot::launch_files`]: the service as its files say it now, later files overriding
//! earlier ones as `docker compose -f a.yaml -f b.yaml` merges them), or the manifest `kubectl
//! apply` left on its pod. A text that says what runs is more evidence of that launch; one that
//! says something else was changed and not applied, and the container's launch says how.

use std::collections::BTreeMap;

use probe_model::{
    ContainerInfo, LaunchConfig, LaunchFile, LaunchFileKind, LaunchOrigin, SectionStatus, Snapshot,
    SourceKind, TimeBounds,
};
use serde_json::{Map, Value};

use super::hints::{ParseHints, TextKind};
use super::{argv, container, work};
use crate::{ConfigDifference, ConfigField, configuration_differences};

/// Differences named in a "not applied" warning (the rest are counted).
const SHOWN: usize = 6;

/// What a container's own text says its launch is: where it says it, the launch, the image it
/// names, and which text it is.
struct Said<'a> {
    label: String,
    launch: LaunchConfig,
    image: Option<String>,
    text: Text<'a>,
}

/// The text a container's launch was held against.
enum Text<'a> {
    Compose {
        compose: &'a probe_model::ComposeOrigin,
        files: Vec<&'a LaunchFile>,
    },
    Manifest,
}

impl Text<'_> {
    /// Why a difference is there, after "says otherwise: ...": asked only when there is one
    /// (the compose case reads the histories).
    fn why(&self, snapshot: &Snapshot, c: &ContainerInfo) -> String {
        match self {
            Text::Compose { compose, files } => format!(
                "{}{}",
                not_applied(files, c),
                history_of(snapshot, compose, files)
            ),
            Text::Manifest => String::from(
                "; a pod's command cannot change while it runs, so what runs came from elsewhere (a controller's template, an admission webhook, a manifest applied since)",
            ),
        }
    }
}

/// Each compose container's launch in `out` learns what its compose files say, and each pod's
/// container what its last applied manifest says.
pub(super) fn annotate(snapshot: &Snapshot, out: &mut [LaunchConfig]) {
    for c in &snapshot.containers {
        let Some(said) = compose_said(snapshot, c).or_else(|| manifest_said(c)) else {
            continue;
        };
        let name = LaunchOrigin::Container {
            name: c.name.clone().unwrap_or_else(|| c.id.clone()),
        }
        .location();
        let Some(running) = out
            .iter_mut()
            .find(|l| l.source.kind == SourceKind::Container && l.source.location == name)
        else {
            continue;
        };
        let changes = differences(&said, running, c);
        if changes.is_empty() {
            running.source.also_seen_in.push(said.label);
        } else {
            let shown = probe_model::text::join_capped(&changes, SHOWN, ", ");
            running.warnings.push(format!(
                "{} says otherwise: {}{}",
                said.label,
                shown,
                said.text.why(snapshot, c)
            ));
        }
    }
}

/// The service a compose container was made for, as its files say it now.
fn compose_said<'a>(snapshot: &'a Snapshot, c: &'a ContainerInfo) -> Option<Said<'a>> {
    let compose = c.compose.as_ref()?;
    let files = files_of(snapshot, c);
    let first = files.first()?;
    let service = merged_service(&files, &compose.service)?;
    let launch = text_launch(
        &Value::Object(service.clone()),
        false,
        file_source(first),
        first.text.len(),
    )?;
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    Some(Said {
        label: format!("compose:{} (service {})", paths.join(", "), compose.service),
        launch,
        image: service
            .get("image")
            .and_then(Value::as_str)
            .map(|i| i.trim().to_string()),
        text: Text::Compose { compose, files },
    })
}

/// What the shell histories say of the project since it was last brought up: the last `docker
/// compose up` run in its directory (or naming it), and a later line that names one of its
/// files (an edit that came after). Empty when no history speaks of it.
fn history_of(
    snapshot: &Snapshot,
    compose: &probe_model::ComposeOrigin,
    files: &[&LaunchFile],
) -> String {
    let names: Vec<&str> = files
        .iter()
        .filter_map(|f| f.path.rsplit('/').next())
        .collect();
    for h in &snapshot.histories {
        let mut cwd: Option<String> = None;
        let mut up: Option<u32> = None;
        let mut after: Option<(u32, &str)> = None;
        for e in &h.entries {
            // Most lines are none of a `cd`, a compose command or a line naming the files.
            let c = e.command.as_str();
            if !(c.contains("cd") || c.contains("compose") || names.iter().any(|n| c.contains(n))) {
                continue;
            }
            for part in c.split(['\n', ';']).flat_map(|p| p.split("&&")) {
                let w = super::shell::split_words(part);
                if w.first().map(String::as_str) == Some("cd") {
                    cwd = w.get(1).cloned();
                }
            }
            let words = super::shell::split_words(&e.command);
            let ours = cwd
                .as_deref()
                .zip(compose.working_dir.as_deref())
                .is_some_and(|(a, b)| a.trim_end_matches('/') == b.trim_end_matches('/'))
                || compose
                    .working_dir
                    .as_deref()
                    .is_some_and(|d| e.command.contains(d))
                || words.windows(2).any(|w| {
                    matches!(w, [flag, name] if matches!(flag.as_str(), "-p" | "--project-name") && *name == compose.project)
                });
            let is_up = super::host_change::runs_compose_up(&e.command);
            if ours && is_up {
                up = Some(e.index);
                after = None;
            } else if up.is_some()
                && after.is_none()
                && words
                    .iter()
                    .any(|w| names.iter().any(|n| w.rsplit('/').next() == Some(*n)))
            {
                after = Some((e.index, e.command.as_str()));
            }
        }
        let Some(up) = up else { continue };
        let tail = match after {
            Some((i, line)) => format!(
                ", and entry {i} (`{}`) names its files after it",
                probe_model::text::clip(line, 60)
            ),
            None => String::new(),
        };
        return format!(
            "; in {} the last `docker compose up` for it is entry {up}{tail}",
            h.path
        );
    }
    String::new()
}

/// The annotation `kubectl apply` leaves on what it applied: the pod's own manifest, for a pod
/// applied as such (a controller's pods carry their controller's template, not this).
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The container of a pod as its last applied manifest says it.
fn manifest_said(c: &ContainerInfo) -> Option<Said<'static>> {
    let pod = c.pod.as_ref()?;
    let text = pod.annotations.get(LAST_APPLIED)?;
    let doc: Value = serde_json::from_str(text).ok()?;
    let containers = doc.get("spec")?.get("containers")?.as_array()?;
    let wanted = pod.container.as_deref();
    let spec = containers
        .iter()
        .find(|k| k.get("name").and_then(Value::as_str) == wanted)
        .or_else(|| {
            (containers.len() == 1)
                .then(|| containers.first())
                .flatten()
        })?;
    let namespace = pod.namespace.as_deref().unwrap_or("default");
    let source = probe_model::LaunchSource {
        kind: SourceKind::Text,
        location: format!("pod {namespace}/{} manifest", pod.pod),
        ..probe_model::LaunchSource::default()
    };
    let launch = text_launch(spec, true, source, text.len())?;
    Some(Said {
        label: format!(
            "manifest:{namespace}/{} (container {}, its {LAST_APPLIED})",
            pod.pod,
            wanted.unwrap_or("?")
        ),
        launch,
        image: spec
            .get("image")
            .and_then(Value::as_str)
            .map(|i| i.trim().to_string()),
        text: Text::Manifest,
    })
}

/// What the text says and the container does not: its image, options and model, and the
/// variables it sets (the container's own also hold the image's).
fn differences(said: &Said, running: &LaunchConfig, c: &ContainerInfo) -> Vec<String> {
    let mut changes: Vec<String> = said
        .image
        .as_deref()
        .filter(|i| !i.is_empty() && !i.contains('$') && *i != c.image)
        .map(|i| format!("image: {i} (runs {})", c.image))
        .into_iter()
        .collect();
    changes.extend(
        configuration_differences(running, &said.launch)
            .iter()
            .filter(|d| !matches!(d.field, ConfigField::Detail("wrappers" | "entrypoint")))
            .map(said_and_runs),
    );
    changes.extend(said.launch.env.iter().filter_map(|(k, v)| {
        let now = running.env.get(k);
        (now != Some(v)).then(|| match now {
            Some(now) => format!("{k}={v} (runs {now})"),
            None => format!("{k}={v} (runs without it)"),
        })
    }));
    changes
}

/// One difference as the file says it and what runs: `--max-model-len 65536 (runs 32768)`,
/// `--enable-prefix-caching (runs without it)`, `without --quantization (runs fp8)`.
fn said_and_runs(d: &ConfigDifference) -> String {
    let plain = |v: &Option<Value>| match v {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    let key = match &d.field {
        ConfigField::Engine => String::from("engine"),
        ConfigField::Model => String::from("model"),
        ConfigField::Speculative(name) => format!("speculative {name}"),
        ConfigField::Option(name) | ConfigField::Default(name) | ConfigField::Unknown(name) => {
            name.clone()
        }
        ConfigField::Detail(name) => (*name).to_string(),
    };
    let flag = |written: &Option<String>, value: &Option<Value>| {
        written.clone().unwrap_or_else(|| match value {
            Some(_) => format!("{key} {}", plain(value)),
            None => key.clone(),
        })
    };
    match (&d.before, &d.after) {
        (None, Some(_)) => format!("{} (runs without it)", flag(&d.after_written, &d.after)),
        (Some(_), None) => format!(
            "without {key} (runs {})",
            flag(&d.before_written, &d.before)
        ),
        _ => format!(
            "{} (runs {})",
            flag(&d.after_written, &d.after),
            plain(&d.before)
        ),
    }
}

/// The service a compose container was made for, merged across the files that were read.
pub(super) fn service_of(snapshot: &Snapshot, c: &ContainerInfo) -> Option<Map<String, Value>> {
    let compose = c.compose.as_ref()?;
    merged_service(&files_of(snapshot, c), &compose.service)
}

/// The compose files of a container that were read, in the order its label names them.
fn files_of<'a>(snapshot: &'a Snapshot, c: &ContainerInfo) -> Vec<&'a LaunchFile> {
    let Some(compose) = &c.compose else {
        return Vec::new();
    };
    compose
        .config_files
        .iter()
        .filter_map(|path| {
            snapshot.launch_files.iter().find(|lf| {
                lf.kind == LaunchFileKind::Compose
                    && lf.path == *path
                    && lf.status == SectionStatus::Ok
            })
        })
        .collect()
}

/// The service's definition across the files: a later file's keys replace an earlier one's,
/// except `environment` and `labels`, which merge key by key (as Compose merges them).
fn merged_service(files: &[&LaunchFile], service: &str) -> Option<Map<String, Value>> {
    let mut merged: Option<Map<String, Value>> = None;
    for f in files {
        let Some(doc) = super::yaml::yaml_to_json(&f.text) else {
            continue;
        };
        let Some(Value::Object(def)) = doc.get("services").and_then(|s| s.get(service)) else {
            continue;
        };
        let into = merged.get_or_insert_with(Map::new);
        for (k, v) in def {
            match (k.as_str(), into.get_mut(k)) {
                ("environment" | "labels", Some(old)) => {
                    let mut m = as_map(old);
                    m.extend(as_map(v));
                    *old = Value::Object(m.into_iter().collect());
                }
                _ => {
                    into.insert(k.clone(), v.clone());
                }
            }
        }
    }
    merged
}

/// `environment:` as a map, from either of Compose's two spellings (`K: V` or `- K=V`).
fn as_map(v: &Value) -> BTreeMap<String, Value> {
    match v {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|s| s.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), Value::String(v.to_string())))
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// A compose file's evidence: the file, as of its mtime.
fn file_source(file: &LaunchFile) -> probe_model::LaunchSource {
    probe_model::LaunchSource {
        kind: SourceKind::File,
        location: LaunchOrigin::File {
            path: file.path.clone(),
        }
        .location(),
        time: TimeBounds {
            not_after: file.mtime,
            ..TimeBounds::default()
        },
        ..probe_model::LaunchSource::default()
    }
}

/// The launch a compose service or a Kubernetes container describes, read like any other.
fn text_launch(
    spec: &Value,
    kubernetes: bool,
    source: probe_model::LaunchSource,
    size: usize,
) -> Option<LaunchConfig> {
    let hints = ParseHints {
        kind: if kubernetes {
            TextKind::Kubernetes
        } else {
            TextKind::Compose
        },
        source,
        ..ParseHints::default()
    };
    let ctx = super::ctx::Ctx {
        budget: work::budget_of(size, &BTreeMap::new()),
        ..super::ctx::Ctx::default()
    };
    let mut found = Vec::new();
    container::from_yaml(argv::launch, spec, kubernetes, &ctx, &hints, &mut found, 0);
    found.into_iter().next()
}

/// Why a compose file says otherwise: it changed after the container started (the newest of
/// the files), or the container was made some other way.
fn not_applied(files: &[&LaunchFile], c: &ContainerInfo) -> String {
    let changed = files.iter().filter_map(|f| f.mtime).max();
    match (changed, c.started_at) {
        (Some(m), Some(s)) if m > s => format!(
            "; the file changed at {}, after the container started at {}: not applied (`docker compose up -d` re-creates the container with it)",
            probe_model::civil::utc_minute(m),
            probe_model::civil::utc_minute(s)
        ),
        _ => String::from(
            "; the container was not made from the file as it is now (other files, variables or a `docker compose run` override)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use probe_model::{ComposeOrigin, ContainerInfo, LaunchFile, Snapshot};

    fn container(cmd: &[&str], image: &str) -> ContainerInfo {
        ContainerInfo {
            runtime: probe_model::ContainerRuntime::Docker,
            id: "c1".into(),
            name: Some("llm-vllm-1".into()),
            image: image.into(),
            cmd: cmd.iter().map(|s| s.to_string()).collect(),
            env: [("VLLM_USE_V1".to_string(), "1".to_string())].into(),
            started_at: Some(1_000),
            state: Some("running".into()),
            compose: Some(ComposeOrigin {
                project: "llm".into(),
                service: "vllm".into(),
                config_files: vec!["/srv/llm/compose.yaml".into(), "/srv/llm/gpu.yaml".into()],
                working_dir: Some("/srv/llm".into()),
                container_number: Some(1),
            }),
            ..ContainerInfo::default()
        }
    }

    fn file(path: &str, mtime: i64, text: &str) -> LaunchFile {
        LaunchFile {
            path: path.into(),
            named_by: "container:llm-vllm-1".into(),
            mtime: Some(mtime),
            text: text.into(),
            ..LaunchFile::default()
        }
    }

    const BASE: &str = "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    environment:\n      VLLM_USE_V1: \"1\"\n    command: [\"--model\", \"/m\", \"--max-model-len\", \"8192\"]\n";

    /// The histories say when the project was last brought up and what was edited after.
    #[test]
    fn the_history_of_a_compose_project() {
        use probe_model::{HistoryEntry, HistoryFile};
        let entries = |lines: &[&str]| {
            lines
                .iter()
                .enumerate()
                .map(|(i, l)| HistoryEntry {
                    index: i as u32,
                    time: None,
                    command: l.to_string(),
                })
                .collect::<Vec<_>>()
        };
        let snap = |lines: &[&str]| Snapshot {
            containers: vec![container(
                &["--model", "/m", "--max-model-len", "4096"],
                "vllm/vllm-openai:v0.11.0",
            )],
            launch_files: vec![file("/srv/llm/compose.yaml", 900, BASE)],
            histories: vec![HistoryFile {
                path: "/root/.bash_history".into(),
                entries: entries(lines),
                ..HistoryFile::default()
            }],
            ..Snapshot::default()
        };
        let cases: &[(&[&str], &str)] = &[
            (
                &[
                    "mkdir -p /srv/llm && cd /srv/llm",
                    "docker compose up -d",
                    "docker compose logs -f",
                    "vim compose.yaml",
                ],
                "; in /root/.bash_history the last `docker compose up` for it is entry 1, and entry 3 (`vim compose.yaml`) names its files after it",
            ),
            (
                &[
                    "vim /srv/llm/compose.yaml",
                    "docker compose -p llm up -d vllm",
                ],
                "; in /root/.bash_history the last `docker compose up` for it is entry 1",
            ),
            // Another project's up, and no up at all: the history says nothing of this one.
            (&["cd /srv/other", "docker compose up -d"], ""),
            (&["cd /srv/llm", "vim compose.yaml"], ""),
        ];
        for (lines, tail) in cases {
            let want = format!(
                "compose:/srv/llm/compose.yaml (service vllm) says otherwise: --max-model-len 8192 (runs 4096); the container was not made from the file as it is now (other files, variables or a `docker compose run` override){tail}"
            );
            assert_eq!(
                said_of(&snap(lines), "container:llm-vllm-1"),
                want,
                "{lines:?}"
            );
        }
    }

    /// A pod's last applied manifest, held against what its container runs.
    #[test]
    fn a_pods_applied_manifest_against_what_runs() {
        use probe_model::PodOrigin;
        let manifest = |args: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"vllm-0","namespace":"serving"}},"spec":{{"containers":[{{"name":"sidecar","image":"busybox"}},{{"name":"vllm","image":"vllm/vllm-openai:v0.11.0","command":["vllm","serve"],"args":{args},"env":[{{"name":"VLLM_USE_V1","value":"1"}}]}}]}}}}"#
            )
        };
        let pod = |annotation: String| ContainerInfo {
            runtime: probe_model::ContainerRuntime::Docker,
            id: "k1".into(),
            name: Some("k8s_vllm_vllm-0_serving_9f1c_0".into()),
            image: "vllm/vllm-openai:v0.11.0".into(),
            entrypoint: vec!["vllm".into(), "serve".into()],
            cmd: vec!["/m".into(), "--max-num-seqs".into(), "128".into()],
            env: [("VLLM_USE_V1".to_string(), "1".to_string())].into(),
            state: Some("running".into()),
            pod: Some(PodOrigin {
                namespace: Some("serving".into()),
                pod: "vllm-0".into(),
                container: Some("vllm".into()),
                annotations: [(super::LAST_APPLIED.to_string(), annotation)].into(),
                ..PodOrigin::default()
            }),
            ..ContainerInfo::default()
        };
        let cases = [
            (
                manifest(r#"["/m","--max-num-seqs","128"]"#),
                "seen in manifest:serving/vllm-0 (container vllm, its kubectl.kubernetes.io/last-applied-configuration)",
            ),
            (
                manifest(r#"["/m","--max-num-seqs","256"]"#),
                "manifest:serving/vllm-0 (container vllm, its kubectl.kubernetes.io/last-applied-configuration) says otherwise: --max-num-seqs 256 (runs 128); a pod's command cannot change while it runs, so what runs came from elsewhere (a controller's template, an admission webhook, a manifest applied since)",
            ),
            ("{not json".to_string(), "nothing"),
        ];
        for (annotation, want) in cases {
            let snap = Snapshot {
                containers: vec![pod(annotation)],
                ..Snapshot::default()
            };
            assert_eq!(
                said_of(&snap, "container:k8s_vllm_vllm-0_serving_9f1c_0"),
                want
            );
        }
    }

    /// The provenance or warning a container's launch got from its own text.
    fn said_of(snap: &Snapshot, location: &str) -> String {
        let launches = crate::launches_of(snap);
        let l = launches
            .iter()
            .find(|l| l.source.location == location)
            .expect("the container's launch");
        let seen: Vec<String> = l
            .source
            .also_seen_in
            .iter()
            .filter(|s| s.starts_with("compose:") || s.starts_with("manifest:"))
            .map(|s| format!("seen in {s}"))
            .chain(
                l.warnings
                    .iter()
                    .filter(|w| w.starts_with("compose:") || w.starts_with("manifest:"))
                    .cloned(),
            )
            .collect();
        if seen.is_empty() {
            "nothing".to_string()
        } else {
            seen.join("\n")
        }
    }

    /// (what the container runs, its files, the warning or provenance the launch gets)
    #[test]
    fn what_the_files_say_against_what_runs() {
        let runs = ["--model", "/m", "--max-model-len", "8192"];
        let image = "vllm/vllm-openai:v0.11.0";
        let cases: Vec<(ContainerInfo, Vec<LaunchFile>, &str)> = vec![
            (
                container(&runs, image),
                vec![file("/srv/llm/compose.yaml", 900, BASE)],
                "seen in compose:/srv/llm/compose.yaml (service vllm)",
            ),
            (
                container(&runs, image),
                vec![
                    file("/srv/llm/compose.yaml", 900, BASE),
                    file(
                        "/srv/llm/gpu.yaml",
                        2_000,
                        "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.1\n    environment:\n      - VLLM_ATTENTION_BACKEND=FLASHINFER\n    command: --model /m --max-model-len 16384 --enable-prefix-caching\n",
                    ),
                ],
                "compose:/srv/llm/compose.yaml, /srv/llm/gpu.yaml (service vllm) says otherwise: image: vllm/vllm-openai:v0.11.1 (runs vllm/vllm-openai:v0.11.0), --enable-prefix-caching (runs without it), --max-model-len 16384 (runs 8192), VLLM_ATTENTION_BACKEND=FLASHINFER (runs without it); the file changed at 1970-01-01 00:33 UTC, after the container started at 1970-01-01 00:16 UTC: not applied (`docker compose up -d` re-creates the container with it)",
            ),
            (
                container(&["--model", "/m", "--max-model-len", "4096"], image),
                vec![file("/srv/llm/compose.yaml", 900, BASE)],
                "compose:/srv/llm/compose.yaml (service vllm) says otherwise: --max-model-len 8192 (runs 4096); the container was not made from the file as it is now (other files, variables or a `docker compose run` override)",
            ),
            // No file read, or none that defines the service: nothing is said.
            (container(&runs, image), vec![], "nothing"),
            (
                container(&runs, image),
                vec![file(
                    "/srv/llm/compose.yaml",
                    900,
                    "services:\n  other:\n    image: x\n",
                )],
                "nothing",
            ),
        ];
        for (c, files, want) in cases {
            let snap = Snapshot {
                containers: vec![c],
                launch_files: files,
                ..Snapshot::default()
            };
            let got = said_of(&snap, "container:llm-vllm-1");
            assert_eq!(got, want);
        }
    }
}
