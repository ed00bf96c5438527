//! The models a running server's children load where its command line names none: a child
//! whose arguments name a blob of a content-addressed model store (`STORE/blobs/sha256-<hex>`,
//! as an Ollama server starts its runners), named by the store's manifests
//! (`Snapshot::self_installed.model_names`). Each model once, in the children's order. An
//! earlier start read from a log's start-up record has no children: its models are the files
//! the log says the server loaded between that start and the next (`LogSource::loaded`), named
//! the same way.

use probe_model::{BlobName, LaunchConfig, LaunchOrigin, Snapshot};

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
                if let Some(n) = name_of(names, a)
                    && !loaded.contains(&n.name)
                {
                    loaded.push(n.name.clone());
                }
            }
        }
        l.loaded_models = loaded;
    }
}

/// The manifest's name of the blob an argument names (`STORE/blobs/sha256-<hex>`).
fn name_of<'a>(names: &'a [BlobName], arg: &str) -> Option<&'a BlobName> {
    let (store, blob) = arg.split_once(BLOBS)?;
    let store = squeeze(store);
    names
        .iter()
        .find(|n| n.blob == blob && squeeze(&n.store) == store)
}

/// Fills `loaded_models` of each launch read from a log's start-up record whose model is not
/// set: the model files that log says its engine loaded from that start until the log's next
/// start-up record, each once, in the order loaded.
pub(crate) fn fill_logged(snapshot: &Snapshot, launches: &mut [LaunchConfig]) {
    let names = &snapshot.self_installed.model_names;
    if names.is_empty() {
        return;
    }
    for l in launches
        .iter_mut()
        .filter(|l| l.model.is_none() && l.loaded_models.is_empty())
    {
        let LaunchOrigin::Log { location } = l.source.origin() else {
            continue;
        };
        let (Some(start), Some(log)) = (
            l.source.time.at,
            snapshot.logs.iter().find(|g| g.location == location),
        ) else {
            continue;
        };
        let end = log
            .startups
            .iter()
            .filter_map(|s| s.time)
            .filter(|t| *t > start)
            .min();
        let within = |t: Option<i64>| t.is_some_and(|t| t >= start && end.is_none_or(|e| t < e));
        let mut loaded: Vec<String> = Vec::new();
        for m in log
            .loaded
            .iter()
            .filter(|m| m.engine == l.engine && within(m.time))
        {
            if let Some(n) = name_of(names, &m.model)
                && !loaded.contains(&n.name)
            {
                loaded.push(n.name.clone());
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
mod tests {
    #![allow(clippy::indexing_slicing, reason = "a test's own vectors")]
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

    /// An earlier start's models: the loads its log names from its start-up record until the
    /// next one, each once, named by the manifests; another log's or engine's loads, a load
    /// before the start and an unknown blob are not its models.
    #[test]
    fn logged_loads_between_starts_to_model_names() {
        use probe_model::{Engine, LogSource, ModelLoad, StartupRecord, TimeBounds};
        let blob = |h: char| format!("sha256-{}", h.to_string().repeat(64));
        let store = "/usr/share/ollama/.ollama/models";
        let load = |time: i64, h: char| ModelLoad {
            time: Some(time),
            engine: Engine::Ollama,
            model: format!("{store}/blobs/{}", blob(h)),
        };
        let start = |time: i64| StartupRecord {
            time: Some(time),
            engine: Engine::Ollama,
            ..StartupRecord::default()
        };
        let name = |h: char, name: &str| BlobName {
            store: store.into(),
            blob: blob(h),
            name: name.into(),
        };
        let mut other = load(150, 'b');
        other.engine = Engine::LlamaCpp;
        let snap = Snapshot {
            logs: vec![LogSource {
                location: "ollama.service".into(),
                startups: vec![start(100), start(200), start(300)],
                loaded: vec![
                    load(90, 'b'),
                    load(110, 'a'),
                    other,
                    load(120, 'a'),
                    load(210, 'a'),
                    load(220, 'b'),
                    load(230, 'c'),
                    load(310, 'b'),
                ],
                ..LogSource::default()
            }],
            self_installed: SelfInstalled {
                model_names: vec![name('a', "qwen2.5:32b"), name('b', "llama3.1:8b")],
                ..SelfInstalled::default()
            },
            ..Snapshot::default()
        };
        let launch = |location: &str, at: i64| LaunchConfig {
            engine: Engine::Ollama,
            source: LaunchSource {
                kind: SourceKind::Log,
                location: location.into(),
                time: TimeBounds {
                    at: Some(at),
                    ..TimeBounds::default()
                },
                ..LaunchSource::default()
            },
            ..LaunchConfig::default()
        };
        let mut launches = vec![
            launch("ollama.service", 100),
            launch("ollama.service", 200),
            launch("ollama.service", 300),
            launch("other.service", 100),
        ];
        fill_logged(&snap, &mut launches);
        let got: Vec<Vec<String>> = launches.iter().map(|l| l.loaded_models.clone()).collect();
        assert_eq!(
            got,
            [
                vec!["qwen2.5:32b".to_string()],
                vec!["qwen2.5:32b".to_string(), "llama3.1:8b".to_string()],
                vec!["llama3.1:8b".to_string()],
                vec![],
            ]
        );
    }
}
