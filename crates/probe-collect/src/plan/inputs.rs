//! Round 2 planned from round 1: the `R2_*` inputs (Python prefixes, models, logs, units,
//! container logs, launch and config files, benchmark directories, GPU processes), bounded.

use std::collections::BTreeMap;

use probe_model::{LaunchOrigin, ProcessRole, Snapshot, SystemdUnit, UnitScope, UnixTime};

use crate::parse::{self, Ctx, processes::ProcExtra};
use crate::script::{self, ModelLookup, ModelLookupKind, Round2Inputs};

use super::common::*;

/// Limits on what round 2 reads.
pub(super) const MAX_PREFIXES: usize = 16;

pub(super) const MAX_MODELS: usize = 16;

pub(super) const MAX_LOGS: usize = 16;

/// Units whose journal round 2 reads (one `journalctl` each, seconds on a large journal).
pub(super) const MAX_UNITS: usize = 8;

/// Container log files read (running containers first).
pub(super) const MAX_CONTAINER_LOGS: usize = 8;

/// Launch files read (compose files), and the bytes read of each (the script's `fil` cap).
pub(super) const MAX_LAUNCH_FILES: usize = 16;

/// Compute processes whose owner is read, and serving processes whose maps are read.
pub(super) const MAX_GPU_PIDS: usize = 64;

pub(super) const MAX_MAPS: usize = 16;

/// Directories searched for benchmark result files.
pub(super) const MAX_BENCH_DIRS: usize = 8;

/// Directories never searched for benchmark results (a launch started in `/` names no
/// workspace of its own).
pub(super) const NOT_WORKSPACES: &[&str] = &[
    "/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/run", "/sbin", "/sys",
    "/usr", "/var", "/var/lib", "/var/log",
];

pub(super) fn dirname(p: &str) -> Option<&str> {
    p.rsplit_once('/')
        .map(|(d, _)| if d.is_empty() { "/" } else { d })
}

/// `/opt/venv/bin/python3` → `/opt/venv`.
pub(super) fn prefix_of_bin(p: &str) -> Option<String> {
    if !p.starts_with('/') {
        return None;
    }
    let d = dirname(p)?;
    if !d.ends_with("/bin") {
        return None;
    }
    dirname(d).map(str::to_string)
}

pub(super) fn join(base: Option<&str>, p: &str) -> Option<String> {
    if p.starts_with('/') {
        return Some(p.to_string());
    }
    let b = base.filter(|b| b.starts_with('/'))?;
    let p = p.strip_prefix("./").unwrap_or(p);
    Some(format!("{}/{p}", b.trim_end_matches('/')))
}

pub(super) fn is_hf_id(m: &str) -> bool {
    let mut parts = m.split('/');
    let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let ok = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    ok(a) && ok(b)
}

/// A model one launch names, with what finding it on the host takes.
pub(super) struct ModelRef {
    /// The launch's working directory (a relative model path is under it).
    cwd: Option<String>,
    /// The model as named (a path or a Hugging Face id).
    model: String,
    /// The run-as user (its home holds the default hub cache).
    user: Option<String>,
    /// The launch's environment (`HF_HUB_CACHE`, `HF_HOME`).
    env: BTreeMap<String, String>,
    /// `/proc/PID/root` of a process in another mount namespace.
    root: Option<String>,
}

/// The mount root (`/proc/PID/root`) and run-as user of a launch: a process's or container's
/// own filesystem view, the unit's `User=`.
pub(super) fn launch_place<'a>(
    snap: &'a Snapshot,
    origin: &LaunchOrigin,
) -> (Option<&'a str>, Option<String>) {
    match origin {
        LaunchOrigin::Process { pid } => {
            let p = snap.processes.iter().find(|p| p.pid == *pid);
            (
                p.and_then(|p| root_of(snap, p)),
                p.and_then(|p| p.user.clone()),
            )
        }
        LaunchOrigin::Container { name } => (
            snap.containers
                .iter()
                .find(|c| c.name.as_deref() == Some(name.as_str()) || c.id == *name)
                .and_then(|c| container_root(snap, c)),
            None,
        ),
        LaunchOrigin::Unit { name } => (
            None,
            snap.units
                .iter()
                .find(|u| u.name == *name)
                .and_then(|u| u.run_as.clone()),
        ),
        _ => (None, None),
    }
}

/// Adds `x` to `v` unless empty, already there, or `v` is full.
pub(super) fn add(v: &mut Vec<String>, x: String, max: usize) {
    if !x.is_empty() && !v.contains(&x) && v.len() < max {
        v.push(x);
    }
}

/// Round-2 inputs from what round 1 found: the launches probe-launch read (interpreter, venv,
/// model, log files) mapped to remote paths, the files each server process writes to, the units
/// whose journal to read and the containers' log files. Nothing here reads a command line.
pub fn round2_inputs(snap: &Snapshot, ctx: &Ctx, extra: &BTreeMap<u32, ProcExtra>) -> Round2Inputs {
    let mut inp = Round2Inputs {
        cpus: snap.host.cpu_count,
        ..Default::default()
    };
    let mut models: Vec<ModelRef> = Vec::new();
    let launches = probe_launch::launches_of(snap);
    for l in &launches {
        models.extend(launch_inputs(snap, l, &mut inp));
    }
    bench_dirs(snap, ctx, &launches, &mut inp);
    output_files(snap, extra, &mut inp);
    journal_units(snap, ctx, &mut inp);
    container_logs(snap, &mut inp);
    compose_files(snap, &mut inp);
    script_inputs(snap, &launches, &mut inp);
    hardware_inputs(snap, &mut inp);
    super::self_installed::self_installed(snap, &mut inp);
    inp.found = crate::found::plan(snap, &ctx.log_places, &inp.logs);
    for m in &models {
        if inp.models.len() >= MAX_MODELS * 4 {
            break;
        }
        model_lookups(m, ctx, &mut inp.models);
    }
    inp
}

/// What one launch names: its Python prefixes and log files (added to `inp`), and its model.
pub(super) fn launch_inputs(
    snap: &Snapshot,
    l: &probe_model::LaunchConfig,
    inp: &mut Round2Inputs,
) -> Option<ModelRef> {
    // A running process's or container's launch names paths inside its mount namespace.
    let (root, user) = launch_place(snap, &l.source.origin());
    let r = |x: &str| rooted(root, x);
    let named = [
        l.venv.clone(),
        l.interpreter.as_deref().and_then(prefix_of_bin),
    ]
    .into_iter()
    .flatten()
    .chain(
        ["VIRTUAL_ENV", "CONDA_PREFIX"]
            .iter()
            .filter_map(|k| l.env.get(*k).cloned()),
    )
    .filter(|pre| pre.starts_with('/'))
    .fold(false, |_, pre| {
        add(&mut inp.python_prefixes, r(&pre), MAX_PREFIXES);
        true
    });
    for f in &l.log_files {
        if let Some(p) = join(l.working_directory.as_deref(), f) {
            add(&mut inp.logs, r(&p), MAX_LOGS);
        }
    }
    if !named {
        process_prefix(snap, l, root, inp);
    }
    // Every launch's: an earlier launch takes a file only where it was last written before that
    // launch started (probe-launch's `config_files`).
    engine_config_files(l, root, inp);
    let model = l.model.as_ref()?;
    Some(ModelRef {
        cwd: l.working_directory.clone(),
        model: model.clone(),
        user,
        env: l.env.clone(),
        root: root.map(str::to_string),
    })
}

/// Where benchmark results may lie: each launch's working directory (on the host's own
/// filesystem), read as the launch's user, and the homes of the users that serve (running
/// launchers, units' `User=`, the launches' users).
pub(super) fn bench_dirs(
    snap: &Snapshot,
    ctx: &Ctx,
    launches: &[probe_model::LaunchConfig],
    inp: &mut Round2Inputs,
) {
    let uid_of = |user: &str| {
        ctx.users
            .iter()
            .find(|(_, name)| name.as_str() == user)
            .map(|(uid, _)| *uid)
    };
    let mut push = |owner: Option<&str>, dir: &str| {
        let dir = dir.trim_end_matches('/');
        if !dir.starts_with('/')
            || NOT_WORKSPACES.contains(&dir)
            || dir.split('/').any(|x| x == "..")
        {
            return;
        }
        let home = owner
            .and_then(|u| ctx.homes.get(u))
            .map(|h| h.trim_end_matches('/').to_string())
            .filter(|h| h.starts_with('/') && !NOT_WORKSPACES.contains(&h.as_str()));
        let home = home.filter(|h| dir == h || dir.starts_with(&format!("{h}/")));
        let e = crate::script::BenchDir {
            owner: owner.unwrap_or("-").to_string(),
            uid: owner.and_then(uid_of),
            home,
            dir: dir.to_string(),
        };
        if inp.bench_dirs.len() < MAX_BENCH_DIRS && !inp.bench_dirs.iter().any(|d| d.dir == e.dir) {
            inp.bench_dirs.push(e);
        }
    };
    let mut users: Vec<String> = Vec::new();
    for l in launches {
        let (root, user) = launch_place(snap, &l.source.origin());
        if root.is_some() {
            continue;
        }
        if let Some(cwd) = l.working_directory.as_deref() {
            push(user.as_deref(), cwd);
        }
        users.extend(user);
    }
    users.extend(
        snap.processes
            .iter()
            .filter(|p| p.role == ProcessRole::Launcher && p.mount_root.is_none())
            .filter_map(|p| p.user.clone()),
    );
    for u in users {
        if let Some(home) = ctx.homes.get(&u).cloned() {
            push(Some(&u), &home);
        }
    }
}

/// The Python prefix of a launch's running process when nothing in the launch names one.
pub(super) fn process_prefix(
    snap: &Snapshot,
    l: &probe_model::LaunchConfig,
    root: Option<&str>,
    inp: &mut Round2Inputs,
) {
    let Some(pid) = l.source.pid() else { return };
    let Some(p) = snap.processes.iter().find(|p| p.pid == pid) else {
        return;
    };
    // /proc/PID/exe resolves a venv's python symlink to the base interpreter: use it only
    // when nothing names the environment.
    match p.exe.as_deref().and_then(prefix_of_bin) {
        Some(pre) => add(&mut inp.python_prefixes, rooted(root, &pre), MAX_PREFIXES),
        // A container whose exe could not be read (not root): images keep Python under /usr
        // (`/usr/local/lib/python3.X/dist-packages` included).
        None if root.is_some() => add(&mut inp.python_prefixes, rooted(root, "/usr"), MAX_PREFIXES),
        None => {}
    }
}

/// The files each server process's stdout and stderr go to.
pub(super) fn output_files(
    snap: &Snapshot,
    extra: &BTreeMap<u32, ProcExtra>,
    inp: &mut Round2Inputs,
) {
    for p in snap
        .processes
        .iter()
        .filter(|p| matches!(p.role, ProcessRole::Launcher))
    {
        let root = root_of(snap, p);
        if let Some(x) = extra.get(&p.pid) {
            for f in [&x.stdout, &x.stderr].into_iter().flatten() {
                if f.starts_with('/') && !f.starts_with("/dev/") && !f.ends_with(" (deleted)") {
                    add(&mut inp.logs, rooted(root, f), MAX_LOGS);
                }
            }
        }
    }
}

/// The units whose journal is read (when there is a journal to read).
pub(super) fn journal_units(snap: &Snapshot, ctx: &Ctx, inp: &mut Round2Inputs) {
    if !journal_readable(ctx) {
        return;
    }
    // Containers whose runtime logs to the journal (docker/podman `--log-driver journald`):
    // their entries carry CONTAINER_NAME; running ones first.
    let mut journald: Vec<&probe_model::ContainerInfo> = snap
        .containers
        .iter()
        .filter(|c| c.log_driver.as_deref() == Some("journald"))
        .collect();
    journald.sort_by_key(|c| c.state.as_deref() != Some("running"));
    for c in journald {
        let Some(name) = c.name.as_deref().filter(|n| script::valid_unit_name(n)) else {
            continue;
        };
        let e = ("container".to_string(), name.to_string());
        if inp.units.len() < MAX_UNITS && !inp.units.contains(&e) {
            inp.units.push(e);
        }
    }
    let mut units: Vec<&SystemdUnit> = snap.units.iter().collect();
    units.sort_by_key(|u| std::cmp::Reverse(recency(u)));
    for u in units {
        if inp.units.len() >= MAX_UNITS {
            break;
        }
        let scope = if u.scope == UnitScope::User {
            "user"
        } else {
            "system"
        };
        let e = (scope.to_string(), u.name.clone());
        if !inp.units.contains(&e) {
            inp.units.push(e);
        }
    }
}

/// How recently a unit ran, for the order its journal is read in: running now first, then by
/// the newest of its state's timestamps (this boot's), else its unit file's mtime; a unit
/// whose state says nothing may have run before the boot, so it is never left out for that.
pub(super) fn recency(u: &SystemdUnit) -> (bool, UnixTime) {
    let st = u.state.as_ref();
    let running = st.is_some_and(|s| {
        s.main_pid.is_some_and(|p| p > 0)
            || matches!(
                s.active_state.as_deref(),
                Some("active" | "activating" | "reloading" | "deactivating")
            )
    });
    let latest = st
        .and_then(|s| {
            [s.exec_main_start, s.exec_main_exit, s.inactive_enter]
                .into_iter()
                .flatten()
                .max()
        })
        .or(u.fragment.mtime)
        .unwrap_or(UnixTime::MIN);
    (running, latest)
}

/// The runtime's log file of each container (running ones first): read as a file.
pub(super) fn container_logs(snap: &Snapshot, inp: &mut Round2Inputs) {
    let mut ctrs: Vec<&probe_model::ContainerInfo> = snap.containers.iter().collect();
    ctrs.sort_by_key(|c| c.state.as_deref() != Some("running"));
    for c in ctrs {
        let (Some(d), Some(p)) = (container_log_driver(c), c.log_path.as_deref()) else {
            continue;
        };
        let e = (d.to_string(), p.to_string());
        if parse::logs::container_log_readable(d)
            && p.starts_with('/')
            && !p.split('/').any(|x| x == "..")
            && !inp.container_logs.contains(&e)
            && inp.container_logs.len() < MAX_CONTAINER_LOGS
        {
            inp.container_logs.push(e);
        }
    }
}

/// The compose files of the server containers Docker Compose made, as their labels name them:
/// read as those launches' text.
pub(super) fn compose_files(snap: &Snapshot, inp: &mut Round2Inputs) {
    for c in &snap.containers {
        let Some(compose) = &c.compose else { continue };
        let by = LaunchOrigin::Container {
            name: c.name.clone().unwrap_or_else(|| c.id.clone()),
        }
        .label();
        for path in &compose.config_files {
            let e = ("compose".to_string(), by.clone(), path.clone());
            if is_compose_path(&e.2)
                && !inp.launch_files.iter().any(|(_, _, p)| *p == e.2)
                && inp.launch_files.len() < MAX_LAUNCH_FILES
            {
                inp.launch_files.push(e);
            }
        }
    }
}

/// The config files a launch's options name (`--config FILE`), inside its mount namespace (a
/// running one's): read as launch files, their keys the engine's options.
pub(super) fn engine_config_files(
    l: &probe_model::LaunchConfig,
    root: Option<&str>,
    inp: &mut Round2Inputs,
) {
    let by = l.source.origin().label();
    for path in probe_launch::config_files(l) {
        let e = ("config".to_string(), by.clone(), rooted(root, &path));
        if path.starts_with('/')
            && !path.split('/').any(|x| x == "..")
            && !inp.launch_files.iter().any(|(_, _, p)| *p == e.2)
            && inp.launch_files.len() < MAX_LAUNCH_FILES
        {
            inp.launch_files.push(e);
        }
    }
}

/// The Python scripts running servers run (`python3 serve_lmdeploy.py`), read as launch files
/// of kind `script`, and their interpreters' prefixes (the engine's version).
pub(super) fn script_inputs(
    snap: &Snapshot,
    launches: &[probe_model::LaunchConfig],
    inp: &mut Round2Inputs,
) {
    for s in super::scripts::python_scripts(snap, launches) {
        if let Some(pre) = s.interpreter.as_deref().and_then(prefix_of_bin) {
            add(
                &mut inp.python_prefixes,
                rooted(s.root.as_deref(), &pre),
                MAX_PREFIXES,
            );
        }
        if !inp.launch_files.iter().any(|(_, _, p)| *p == s.file.2)
            && inp.launch_files.len() < MAX_LAUNCH_FILES
        {
            inp.launch_files.push(s.file);
        }
    }
}

/// An absolute `.yml`/`.yaml` path with no `..`: what a compose label may make the collector read.
pub(super) fn is_compose_path(p: &str) -> bool {
    p.starts_with('/')
        && !p.split('/').any(|x| x == "..")
        && (p.ends_with(".yml") || p.ends_with(".yaml"))
}

/// Where to look for one model: its directory (absolute, or under the working directory), or
/// for a Hugging Face id also the hub caches its environment and user point to.
pub(super) fn model_lookups(m: &ModelRef, ctx: &Ctx, out: &mut Vec<ModelLookup>) {
    let root = m.root.as_deref();
    let mut push = |kind: ModelLookupKind, dir: String| {
        let e = ModelLookup {
            kind,
            named: m.model.clone(),
            dir,
        };
        if !out.contains(&e) {
            out.push(e);
        }
    };
    let name = m.model.as_str();
    if name.starts_with('/') {
        push(ModelLookupKind::Dir, rooted(root, name));
        return;
    }
    let hf = is_hf_id(name);
    if let Some(d) = join(m.cwd.as_deref(), name).filter(|_| name.starts_with('.') || !hf) {
        push(ModelLookupKind::Dir, rooted(root, &d));
        return;
    }
    if !hf {
        return;
    }
    if let Some(d) = join(m.cwd.as_deref(), name) {
        push(ModelLookupKind::Dir, rooted(root, &d));
    }
    let repo = format!("models--{}", name.replace('/', "--"));
    for h in hub_caches(m, ctx) {
        if h.starts_with('/') {
            push(
                ModelLookupKind::HfCache,
                rooted(root, &format!("{}/{repo}", h.trim_end_matches('/'))),
            );
        }
    }
}

/// The Hugging Face hub caches a launch may use, most specific first.
pub(super) fn hub_caches(m: &ModelRef, ctx: &Ctx) -> Vec<String> {
    let mut hubs: Vec<String> = Vec::new();
    if let Some(h) = m
        .env
        .get("HF_HUB_CACHE")
        .or_else(|| m.env.get("HUGGINGFACE_HUB_CACHE"))
    {
        hubs.push(h.clone());
    }
    if let Some(h) = m.env.get("HF_HOME") {
        hubs.push(format!("{}/hub", h.trim_end_matches('/')));
    }
    // Home directories are the host's (its /etc/passwd): not for a container.
    if let Some(home) = m
        .user
        .as_ref()
        .filter(|_| m.root.is_none())
        .and_then(|u| ctx.homes.get(u))
    {
        hubs.push(format!(
            "{}/.cache/huggingface/hub",
            home.trim_end_matches('/')
        ));
    }
    hubs.push("/root/.cache/huggingface/hub".into());
    hubs
}

/// Round-2 inputs of the hardware lane: the owners of nvidia-smi's compute processes, and the
/// maps of the serving processes (launchers, and compute processes that are server workers).
pub(super) fn hardware_inputs(snap: &Snapshot, inp: &mut Round2Inputs) {
    for pid in snap
        .gpu
        .compute_apps
        .iter()
        .filter_map(|a| a.pid)
        .take(MAX_GPU_PIDS)
    {
        if !inp.gpu_pids.contains(&pid) {
            inp.gpu_pids.push(pid);
        }
    }
    let serving = snap.processes.iter().filter(|p| {
        p.role == ProcessRole::Launcher
            || (p.role == ProcessRole::Worker && inp.gpu_pids.contains(&p.pid))
    });
    for p in serving {
        if !inp.maps_pids.contains(&p.pid) && inp.maps_pids.len() < MAX_MAPS {
            inp.maps_pids.push(p.pid);
        }
    }
}
