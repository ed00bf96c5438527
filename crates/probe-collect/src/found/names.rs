//! What names a server in a command: its container (name, id, compose service), its unit, or
//! the engine's own command line; and kubelet's pod log directories of containers in pods.

use probe_model::Snapshot;

use super::{FoundMode, FoundPlace, dir_allowed};
use crate::config;

/// The names the servers of a snapshot go by.
#[derive(Debug, Clone, Default)]
pub struct ServerNames {
    /// Container names and ids (the full id and its 12-digit short form).
    pub containers: Vec<String>,
    /// Compose services, as `docker compose logs SERVICE` names them.
    pub services: Vec<String>,
    /// Serving units (`vllm.service` and `vllm`).
    pub units: Vec<String>,
    /// Kubernetes pods.
    pub pods: Vec<String>,
}

const LOG_TOOLS: &[&str] = &[
    "docker",
    "podman",
    "nerdctl",
    "docker-compose",
    "kubectl",
    "crictl",
];

impl ServerNames {
    pub fn of(snap: &Snapshot) -> ServerNames {
        let mut n = ServerNames::default();
        for c in &snap.containers {
            n.containers.extend(c.name.clone());
            if c.id.len() >= 12 {
                n.containers.push(c.id.clone());
                n.containers.extend(c.id.get(..12).map(str::to_string));
            }
            if let Some(cp) = &c.compose {
                n.services.push(cp.service.clone());
            }
            if let Some(p) = &c.pod {
                n.pods.push(p.pod.clone());
            }
        }
        for u in &snap.units {
            n.units.push(u.name.clone());
            if let Some(short) = u.name.strip_suffix(".service") {
                n.units.push(short.to_string());
            }
        }
        n
    }

    /// What in `argv` names a server, in words (`docker logs of llm-vllm-1`), if anything.
    pub fn named_by(&self, argv: &[String]) -> Option<String> {
        let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
        let tool = base(argv.first()?);
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        if LOG_TOOLS.contains(&tool.as_str()) {
            let at = words.iter().position(|w| *w == "logs")?;
            let compose = words.get(..at)?.contains(&"compose") || tool == "docker-compose";
            let args = words.get(at + 1..)?.iter().filter(|w| !w.starts_with('-'));
            for w in args {
                let w = w.strip_prefix("pod/").unwrap_or(w);
                let hit = if compose {
                    self.services.iter().any(|s| s == w)
                } else if tool == "kubectl" {
                    self.pods.iter().any(|p| p == w)
                } else {
                    self.containers.iter().any(|c| c == w)
                };
                if hit {
                    let what = if compose {
                        "docker compose logs"
                    } else {
                        "logs"
                    };
                    return Some(format!("{tool} {what} of {w}"));
                }
            }
            return None;
        }
        if tool == "journalctl" {
            let mut it = words.iter().skip(1).peekable();
            while let Some(w) = it.next() {
                let unit = match *w {
                    "-u" | "--unit" | "--user-unit" => it.peek().map(|v| **v),
                    _ => w
                        .strip_prefix("--unit=")
                        .or_else(|| w.strip_prefix("--user-unit="))
                        .or_else(|| w.strip_prefix("-u").filter(|v| !v.is_empty())),
                };
                if let Some(u) = unit
                    && self.units.iter().any(|n| n == u)
                {
                    return Some(format!("journalctl of {u}"));
                }
            }
            return None;
        }
        let line = argv.join(" ");
        let s = config::servers();
        s.engines
            .iter()
            .find(|e| e.matches.is_match(&line))
            .map(|e| format!("the output of {} ({})", e.name, tool))
    }
}

/// Kubelet's log directories (`<root>/<ns>_<pod>_<uid>/<container>`) of the containers in pods:
/// by the runtime's labels (namespace, pod, uid, container) where they are there, else by the
/// container's name as kubelet names it (`k8s_<container>_<pod>_<ns>_...`).
pub fn pod_places(snap: &Snapshot, pod_dirs: &[String]) -> Vec<FoundPlace> {
    let mut out = Vec::new();
    for c in &snap.containers {
        let Some(pod) = &c.pod else { continue };
        let container = pod.container.clone().or_else(|| {
            c.name
                .as_deref()
                .and_then(|n| n.strip_prefix("k8s_"))
                .and_then(|n| n.split('_').next())
                .map(str::to_string)
        });
        let Some(container) = container else { continue };
        for d in pod_dirs {
            let Some((parent, cname)) = d.rsplit_once('/') else {
                continue;
            };
            let pod_dir = parent.rsplit('/').next().unwrap_or("");
            let mut parts = pod_dir.splitn(3, '_');
            let (ns, name, uid) = (parts.next(), parts.next(), parts.next());
            let same = cname == container
                && name == Some(pod.pod.as_str())
                && pod.namespace.as_deref().is_none_or(|n| Some(n) == ns)
                && pod.uid.as_deref().is_none_or(|u| Some(u) == uid);
            if same && dir_allowed(d) {
                out.push(FoundPlace {
                    mode: FoundMode::Cri,
                    dir: d.clone(),
                    pattern: "*.log".into(),
                    reason: format!(
                        "kubelet:{d} holds the output of container {container} of pod {} (this run and the restarts before it)",
                        pod.pod
                    ),
                });
            }
        }
    }
    out
}
