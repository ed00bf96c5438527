//! The models a running server's children load where its command line names none: a child
//! whose arguments name a blob of a content-addressed model store (`STORE/blobs/sha256-<hex>`,
//! as an Ollama server starts its runners), named by the store's manifests
//! (`Snapshot::self_installed.model_names`). Each model once, in the children's order.

use probe_model::{LaunchConfig, LaunchOrigin, Snapshot};

/// Where a content-addressed store keeps a blob: `STORE/blobs/sha256-<hex>`.
const BLOBS: &str = "/blobs/";

/// Children read per server, and arguments per child.
const MAX_CHILDREN: usize = 64;
const MAX_ARGS: usize = 64;

/// Fills `loaded_models` of each running launch of a process whose model is not set.
pub(crate) fn fill(snapshot: &Snapshot, launches: &mut [LaunchConfig]) {
    let names = &snapshot.self_installed.model_names;
    if names.is_empty() {
        return;
    }
    for l in launches
        .iter_mut()
        .filter(|l| l.source.running && l.model.is_none())
    {
        let LaunchOrigin::Process { pid } = l.source.origin() else {
            continue;
        };
        let mut loaded: Vec<String> = Vec::new();
        for child in snapshot
            .processes
            .iter()
            .filter(|p| p.ppid == Some(pid))
            .take(MAX_CHILDREN)
        {
            for a in child.argv.iter().take(MAX_ARGS) {
                let Some((store, blob)) = a.split_once(BLOBS) else {
                    continue;
                };
                let store = squeeze(store);
                if let Some(n) = names
                    .iter()
                    .find(|n| n.blob == blob && squeeze(&n.store) == store)
                    && !loaded.contains(&n.name)
                {
                    loaded.push(n.name.clone());
                }
            }
        }
        l.loaded_models = loaded;
    }
}

/// `a//b` → `a/b` (a process may pad its title with slashes).
fn squeeze(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, reason = "a test's own vectors")]
mod tests {
    use super::*;
    use probe_model::{BlobName, LaunchSource, ProcessInfo, SelfInstalled, SourceKind};

    #[test]
    fn runner_blobs_to_model_names() {
        let blob = |h: char| format!("sha256-{}", h.to_string().repeat(64));
        let store = "/srv/store/models";
        let child = |pid: u32, ppid: u32, h: char| ProcessInfo {
            pid,
            ppid: Some(ppid),
            argv: ["/opt/srv/bin/server", "runner", "--model"]
                .iter()
                .map(|s| s.to_string())
                .chain([format!("{store}/blobs/{}", blob(h))])
                .collect(),
            ..ProcessInfo::default()
        };
        let snap = Snapshot {
            processes: vec![
                child(11, 10, 'a'),
                child(12, 10, 'b'),
                child(13, 10, 'a'),
                child(14, 99, 'b'),
                child(15, 10, 'c'),
            ],
            self_installed: SelfInstalled {
                model_names: vec![
                    BlobName {
                        store: store.into(),
                        blob: blob('a'),
                        name: "qwen2.5:32b".into(),
                    },
                    BlobName {
                        store: store.into(),
                        blob: blob('b'),
                        name: "llama3.1:8b".into(),
                    },
                ],
                ..SelfInstalled::default()
            },
            ..Snapshot::default()
        };
        let launch = |location: &str, running: bool, model: Option<&str>| LaunchConfig {
            model: model.map(str::to_string),
            source: LaunchSource {
                kind: SourceKind::Process,
                location: location.into(),
                running,
                ..LaunchSource::default()
            },
            ..LaunchConfig::default()
        };
        let mut launches = vec![
            launch("pid:10", true, None),
            launch("pid:10", true, Some("x")),
            launch("pid:10", false, None),
            launch("pid:99", true, None),
        ];
        fill(&snap, &mut launches);
        assert_eq!(launches[0].loaded_models, ["qwen2.5:32b", "llama3.1:8b"]);
        assert!(launches[1].loaded_models.is_empty());
        assert!(launches[2].loaded_models.is_empty());
        assert_eq!(launches[3].loaded_models, ["llama3.1:8b"]);
    }
}
