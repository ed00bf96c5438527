//! What a snapshot says is installed for a launch: the engine's packages, the Python environment
//! a launch runs in, its engine version, and the launch re-read with that version's catalog.

use probe_model::{Engine, LaunchConfig, Snapshot, SourceKind};

use crate::ctx::Ctx;
use crate::hints::ParseHints;
use crate::merge::evidence_label;
use crate::{argv, work};

/// The Python distributions that are `engine` (its definition's `packages`, as snapshots name
/// them: [`Engine::packages`]).
pub fn engine_package(engine: Engine) -> &'static [String] {
    engine.packages()
}

/// The container a launch runs in, when it runs in one: `Some(Some(id))` a known container
/// (its own record, or a process inside it), `Some(None)` a container not in the snapshot (a
/// `docker run` history line or unit), `None` the host.
fn container_of(snapshot: &Snapshot, l: &LaunchConfig) -> Option<Option<String>> {
    match l.source.kind {
        SourceKind::Container => {
            let origin = l.source.origin();
            let label = origin.container().unwrap_or_default();
            let id = snapshot
                .containers
                .iter()
                .find(|c| c.name.as_deref() == Some(label) || c.id == label)
                .map(|c| c.id.clone());
            Some(id)
        }
        SourceKind::Process => {
            let pid = l.source.pid()?;
            let p = snapshot.processes.iter().find(|p| p.pid == pid)?;
            p.container_id.clone().map(Some)
        }
        _ => l
            .wrappers
            .iter()
            .any(|w| matches!(w.as_str(), "docker" | "podman"))
            .then_some(None),
    }
}

/// One container id names the other (a short id is a prefix of the long one).
fn same_container_id(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    a.len() >= 12 && b.len() >= 12 && (a.starts_with(b) || b.starts_with(a))
}

/// The processes (`pid:N`) and mount roots of container `id`.
fn container_users(snapshot: &Snapshot, id: &str) -> (Vec<String>, Vec<String>) {
    let mut pids = Vec::new();
    let mut roots = Vec::new();
    for p in &snapshot.processes {
        if p.container_id
            .as_deref()
            .is_some_and(|c| same_container_id(c, id))
        {
            pids.push(format!("pid:{}", p.pid));
            if let Some(root) = &p.mount_root {
                roots.push(root.clone());
            }
        }
    }
    (pids, roots)
}

/// A Python environment read inside a container (through a containerised process's root).
fn env_in_container(snapshot: &Snapshot, env: &probe_model::PythonEnv) -> bool {
    snapshot.processes.iter().any(|p| {
        p.container_id.is_some()
            && (env.used_by.contains(&format!("pid:{}", p.pid))
                || (env.mount_root.is_some() && env.mount_root == p.mount_root))
    })
}

/// Fills `engine_version` from the snapshot's Python environments: the one whose interpreter or
/// users match the launch, else the only host one that has the engine. A launch in a container
/// takes only that container's own packages (over its image tag's version, set when it was
/// read); the host's or another container's packages are never its version.
pub(crate) fn fill_version(snapshot: &Snapshot, l: &mut LaunchConfig) {
    let pkgs = engine_package(l.engine);
    if pkgs.is_empty() {
        return;
    }
    let version_in = |env: &probe_model::PythonEnv| {
        env.packages
            .iter()
            .find(|p| pkgs.contains(&p.name))
            .map(|p| p.version.clone())
    };
    if let Some(container) = container_of(snapshot, l) {
        let Some(id) = container else { return };
        let (pids, roots) = container_users(snapshot, &id);
        let own = snapshot.python_envs.iter().find(|e| {
            e.used_by.iter().any(|u| pids.contains(u))
                || e.mount_root.as_ref().is_some_and(|r| roots.contains(r))
        });
        if let Some(v) = own.and_then(version_in) {
            l.engine_version = Some(v);
        }
        return;
    }
    if l.engine_version.is_some() {
        return;
    }
    // A package written after this launch started is not what it ran: only a launch that runs
    // now, or one that started after the install, takes the installed version.
    let start = l.source.time.at;
    let running = l.source.running;
    let in_effect = |env: &probe_model::PythonEnv| {
        env.packages
            .iter()
            .find(|p| pkgs.contains(&p.name))
            .filter(|p| {
                running
                    || matches!((p.installed_at, start), (Some(installed), Some(start)) if installed <= start)
            })
            .map(|p| p.version.clone())
    };
    if let Some(env) = serving_env(snapshot, l) {
        if let Some(v) = in_effect(env) {
            l.engine_version = Some(v);
        }
        return;
    }
    let all: Vec<&probe_model::PythonEnv> = snapshot
        .python_envs
        .iter()
        .filter(|e| !env_in_container(snapshot, e))
        .filter(|e| version_in(e).is_some())
        .collect();
    if let [only] = all.as_slice()
        && let Some(v) = in_effect(only)
    {
        l.engine_version = Some(v);
    }
}

/// The Python environment a launch runs in: the one whose interpreter, venv or users match it.
pub fn serving_env<'a>(
    snapshot: &'a Snapshot,
    l: &LaunchConfig,
) -> Option<&'a probe_model::PythonEnv> {
    let label = evidence_label(l);
    let loc = l.source.location.trim();
    snapshot.python_envs.iter().find(|e| {
        l.interpreter
            .as_deref()
            .map(|i| i == e.interpreter && e.mount_root.is_none())
            .unwrap_or(false)
            || e.used_by.iter().any(|u| u == loc || *u == label)
            || l.venv
                .as_deref()
                .zip(e.prefix.as_deref())
                .map(|(a, b)| a == b && e.mount_root.is_none())
                .unwrap_or(false)
    })
}

/// Re-reads a launch with its engine version's catalog once the version is known.
pub(crate) fn with_version(l: LaunchConfig, hints: &ParseHints) -> LaunchConfig {
    let Some(v) = l.engine_version.clone() else {
        return l;
    };
    if l.argv.is_empty() {
        return l;
    }
    let h = ParseHints {
        engine_version: Some(v),
        ..hints.clone()
    };
    match argv::launch(
        &l.argv,
        Ctx {
            env: l.env.clone(),
            cwd: l.working_directory.clone(),
            budget: work::budget_of(work::words(&l.argv), &l.env),
            ..Ctx::default()
        },
        &h,
    ) {
        Some(mut n) => {
            n.source = l.source;
            n.log_files = l.log_files;
            n.wrappers = l.wrappers;
            n
        }
        None => l,
    }
}
