//! Turning framed sections into the snapshot and planning round 2 from round 1 (the final
//! redaction pass is [`crate::redact::redact_snapshot`]).

use std::collections::BTreeMap;

use probe_model::{
    GpuStatus, LaunchOrigin, ProcessRole, PythonEnv, SectionReport, SectionStatus, Snapshot,
    SystemdUnit, UnitScope, UnixTime,
};

use crate::config::{Round1Parser, Round2Parser};
use crate::frame::{Framed, RawSection};
use crate::parse::{self, Ctx, processes::ProcExtra};
use crate::sanitize::{line, sanitize_line};
use crate::script::{self, ModelLookup, ModelLookupKind, Round2Inputs};

/// Limits on what round 2 reads.
const MAX_PREFIXES: usize = 16;
const MAX_MODELS: usize = 16;
const MAX_LOGS: usize = 16;
/// Units whose journal round 2 reads (one `journalctl` each, seconds on a large journal).
pub(crate) const MAX_UNITS: usize = 8;
/// Container log files read (running containers first).
const MAX_CONTAINER_LOGS: usize = 8;
/// Launch files read (compose files), and the bytes read of each (the script's `fil` cap).
const MAX_LAUNCH_FILES: usize = 16;
const LAUNCH_FILE_CAP: usize = 262_144;
/// Compute processes whose owner is read, and serving processes whose maps are read.
const MAX_GPU_PIDS: usize = 64;
const MAX_MAPS: usize = 16;
/// Directories searched for benchmark result files.
const MAX_BENCH_DIRS: usize = 8;
/// Directories never searched for benchmark results (a launch started in `/` names no
/// workspace of its own).
const NOT_WORKSPACES: &[&str] = &[
    "/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/proc", "/run", "/sbin", "/sys",
    "/usr", "/var", "/var/lib", "/var/log",
];

/// The report of one section, and its body cut to the probe's cap.
pub fn report(raw: &RawSection, transport_truncated: bool) -> (SectionReport, Vec<u8>) {
    let probe = script::probe(&raw.name);
    let cap = probe.map_or(u64::MAX, |p| p.max_bytes);
    let mut body = raw.body.clone();
    let truncated = body.len() as u64 > cap;
    if truncated {
        body.truncate(usize::try_from(cap).unwrap_or(usize::MAX));
    }
    let err = without_sudo_noise(&raw.stderr);
    let stderr = line(err.get(..err.len().min(600)).unwrap_or(&[]));
    let msg = |s: &str| (!s.is_empty()).then(|| s.to_string());
    let (status, message) = match raw.rc {
        _ if !raw.complete => (
            if transport_truncated {
                SectionStatus::Truncated
            } else {
                SectionStatus::Failed
            },
            Some("output cut off before the section ended".to_string()),
        ),
        Some(124 | 137 | 143) => (
            SectionStatus::TimedOut,
            Some(format!(
                "stopped after its time limit of {}s",
                probe.map_or(0, |p| p.timeout_s)
            )),
        ),
        Some(200) => (
            SectionStatus::TimedOut,
            Some(format!(
                "not run: {} timed out",
                probe.and_then(|p| p.depends_on.clone()).unwrap_or_default()
            )),
        ),
        Some(201) => (
            SectionStatus::TimedOut,
            Some("not run: collection deadline reached".to_string()),
        ),
        _ if truncated => (
            SectionStatus::Truncated,
            Some(format!("output capped at {cap} bytes")),
        ),
        Some(0) => (SectionStatus::Ok, msg(&stderr)),
        Some(3 | 127) => (SectionStatus::NotPresent, msg(&stderr)),
        Some(4 | 126) => (SectionStatus::PermissionDenied, msg(&stderr)),
        Some(rc) => (
            SectionStatus::Failed,
            Some(if stderr.is_empty() {
                format!("exit status {rc}")
            } else {
                stderr.clone()
            }),
        ),
        None => (SectionStatus::Failed, Some("no exit status".to_string())),
    };
    let duration_ms = match (raw.t0, raw.t1) {
        (Some(a), Some(b)) if b >= a => Some((b - a) * 10),
        _ => None,
    };
    (
        SectionReport {
            name: sanitize_line(&raw.name),
            status,
            bytes: body.len() as u64,
            duration_ms,
            exit_code: raw.rc,
            message,
        },
        body,
    )
}

/// A section's stderr without sudo's warning that the host's own name does not resolve (common
/// on cloud hosts; sudo prints it for every command, so it would be every section's message).
fn without_sudo_noise(stderr: &[u8]) -> Vec<u8> {
    const NOISE: &[u8] = b"sudo: unable to resolve host ";
    if crate::frame::find(stderr, NOISE).is_none() {
        return stderr.to_vec();
    }
    stderr
        .split(|&c| c == b'\n')
        .filter(|l| !l.starts_with(NOISE) && !l.is_empty())
        .collect::<Vec<_>>()
        .join(&b'\n')
}

fn push_note(r: &mut SectionReport, note: String) {
    r.message = Some(match r.message.take() {
        Some(m) if !m.is_empty() => format!("{m}; {note}"),
        _ => note,
    });
}

/// What round 1's sections leave for after the loop over them.
#[derive(Default)]
struct Round1State {
    extra: BTreeMap<u32, ProcExtra>,
    /// The `host` section's `sudo_mode` and `sudo_msg` records.
    sudo_mode: Option<String>,
    sudo_msg: Option<String>,
    /// `systemctl show` per unit name.
    show: Option<BTreeMap<String, probe_model::UnitState>>,
}

/// Parses every round-1 section into the snapshot. Returns per-process extras for round 2.
pub fn apply_round1(
    snap: &mut Snapshot,
    ctx: &mut Ctx,
    framed: &Framed,
    transport_truncated: bool,
) -> BTreeMap<u32, ProcExtra> {
    let mut state = Round1State::default();
    // `host` first: everything else needs its clock, users and CLK_TCK; `gpu_apps` after
    // `gpu_query`, whose GPUs it adds to.
    let mut order: Vec<&RawSection> = framed.sections.iter().collect();
    order.sort_by_key(|s| (s.name != "host", s.name == "gpu_apps"));
    for raw in order {
        let (mut rep, body) = report(raw, transport_truncated);
        let parser = script::probe(&raw.name).and_then(|p| p.parser.round1());
        if let Some(kind) = parser {
            read_round1(kind, snap, ctx, raw, &body, &mut rep, &mut state);
        }
        // Junk where the GPU list should be is the section's error; a broken driver is a GPU
        // state, not a failed section.
        let junk = snap
            .gpu
            .message
            .as_deref()
            .filter(|m| m.starts_with(parse::gpu::JUNK));
        if parser == Some(Round1Parser::GpuQuery)
            && let Some(m) = junk
        {
            rep.status = SectionStatus::Failed;
            push_note(&mut rep, m.to_string());
        } else if parser == Some(Round1Parser::GpuQuery)
            && rep.status == SectionStatus::Failed
            && snap.gpu.status != GpuStatus::Present
        {
            rep.status = SectionStatus::Ok;
            push_note(&mut rep, format!("GPU state: {:?}", snap.gpu.status));
        }
        snap.sections.push(rep);
    }
    if let Some(show) = &state.show {
        for u in snap
            .units
            .iter_mut()
            .filter(|u| u.scope == UnitScope::System)
        {
            if let Some(s) = show.get(&u.name) {
                u.state = Some(s.clone());
            }
        }
    }
    not_reached(
        snap,
        framed,
        1,
        "not run: the script ended before this section",
    );
    // `Snapshot::sudo` says whether sudo was used, not only asked for.
    if let Some(m) = state.sudo_mode.as_deref() {
        snap.sudo = m == "on";
    }
    snap.sections.extend(sudo_section(
        state.sudo_mode.as_deref(),
        state.sudo_msg.as_deref(),
    ));
    container_log_notes(snap, journal_readable(ctx));
    attach_output_files(snap, &state.extra);
    state.extra
}

/// Each server process's stdout and stderr files, as round 2 reads them (rooted in its mount
/// namespace), so that its log is linked to it whatever its command line names.
fn attach_output_files(snap: &mut Snapshot, extra: &BTreeMap<u32, ProcExtra>) {
    let files: Vec<(usize, Vec<String>)> = snap
        .processes
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.role, ProcessRole::Launcher))
        .filter_map(|(i, p)| {
            let x = extra.get(&p.pid)?;
            let root = root_of(snap, p);
            let mut out: Vec<String> = Vec::new();
            for f in [&x.stdout, &x.stderr].into_iter().flatten() {
                let f = rooted(root, f);
                if is_output_file(&f) && !out.contains(&f) {
                    out.push(f);
                }
            }
            Some((i, out))
        })
        .collect();
    for (i, out) in files {
        if let Some(p) = snap.processes.get_mut(i) {
            p.output_files = out;
        }
    }
}

/// A regular file a process writes its output to (not a terminal, pipe or deleted file).
fn is_output_file(f: &str) -> bool {
    f.starts_with('/') && !f.contains("/dev/") && !f.ends_with(" (deleted)")
}

/// One round-1 section into the snapshot.
fn read_round1(
    kind: Round1Parser,
    snap: &mut Snapshot,
    ctx: &mut Ctx,
    raw: &RawSection,
    body: &[u8],
    rep: &mut SectionReport,
    state: &mut Round1State,
) {
    let b = ctx.boundary.clone();
    match kind {
        Round1Parser::Host => {
            snap.host = parse::host::parse(body, ctx);
            let recs = crate::frame::records(body, &b);
            let rec = |name: &str| recs.iter().find(|r| r.header == name).map(|r| line(r.data));
            state.sudo_mode = rec("sudo_mode");
            state.sudo_msg = rec("sudo_msg").filter(|m| !m.is_empty());
        }
        Round1Parser::History => {
            let (files, skipped) = parse::history::parse(body, &b);
            snap.histories = files;
            for s in skipped.iter().take(20) {
                push_note(rep, format!("{} not read ({})", s.path, s.why));
            }
        }
        Round1Parser::Units => snap.units = parse::units::parse(body, &b),
        Round1Parser::UnitState => {
            state.show = Some(parse::units::parse_show(body, ctx.tz_offset_s));
        }
        Round1Parser::Processes => {
            let (p, e) = parse::processes::parse(body, ctx);
            snap.processes = p;
            state.extra = e;
        }
        Round1Parser::Containers => {
            let (c, m) = parse::containers::parse(body, &b);
            snap.containers = c;
            if let Some(m) = m {
                push_note(rep, m);
            }
        }
        Round1Parser::GpuQuery => match rep.status {
            SectionStatus::NotPresent => snap.gpu.status = GpuStatus::NoNvidiaSmi,
            SectionStatus::TimedOut => {
                snap.gpu.status = GpuStatus::DriverError;
                snap.gpu.message = Some("nvidia-smi did not answer within its time limit".into());
            }
            _ => {
                snap.hardware.gpus =
                    parse::gpu::parse_query_section(body, &raw.stderr, &b, &mut snap.gpu);
            }
        },
        Round1Parser::GpuApps => parse::gpu::apply_q(body, &mut snap.gpu, &mut snap.hardware.gpus),
        Round1Parser::GpuTopo => snap.gpu.topology = parse::gpu::parse_topo(body),
        Round1Parser::KernelLog => {
            let (faults, source) = parse::kernel_log::parse(body, ctx);
            parse::kernel_log::merge(&mut snap.hardware, faults, source);
        }
        Round1Parser::LogPlaces => {
            let places = crate::found::parse_places(body, &b);
            if !places.not_read.is_empty() {
                push_note(rep, format!("not read: {}", places.not_read.join("; ")));
            }
            ctx.log_places = places;
        }
        Round1Parser::PkgHistory => {
            snap.package_events = parse::pkgs::parse(body, &b, ctx.tz_offset_s);
            files_not_read(rep, parse::pkgs::not_read(body, &b));
        }
    }
}

/// Files a section found but did not read, named in its message; one that is not a regular
/// file (a FIFO where a log should be) makes an `ok` section `failed`, and a section whose
/// every file was refused is `permission_denied`.
fn files_not_read(rep: &mut SectionReport, items: Vec<(SectionStatus, String)>) {
    if items.is_empty() {
        return;
    }
    let texts: Vec<&str> = items.iter().map(|(_, t)| t.as_str()).collect();
    push_note(rep, format!("not read: {}", texts.join("; ")));
    if rep.status != SectionStatus::Ok {
        return;
    }
    if items.iter().any(|(s, _)| *s == SectionStatus::Failed) {
        rep.status = SectionStatus::Failed;
    }
}

/// Sections of `round` the script never reached.
fn not_reached(snap: &mut Snapshot, framed: &Framed, round: u8, message: &str) {
    for p in script::probes(round) {
        if !framed.sections.iter().any(|s| s.name == p.name) {
            snap.sections.push(SectionReport {
                name: p.name.clone(),
                status: SectionStatus::Failed,
                message: Some(message.into()),
                ..Default::default()
            });
        }
    }
}

/// The `sudo` section when `--sudo` was asked for and not used.
fn sudo_section(mode: Option<&str>, msg: Option<&str>) -> Option<SectionReport> {
    let (status, message) = match mode? {
        "password" => (
            SectionStatus::PermissionDenied,
            "sudo -n: a password is required; collected without sudo".to_string(),
        ),
        "failed" => (
            SectionStatus::PermissionDenied,
            format!(
                "sudo -n failed ({}); collected without sudo",
                msg.unwrap_or("no message")
            ),
        ),
        "missing" => (
            SectionStatus::NotPresent,
            "sudo is not installed; collected without sudo".to_string(),
        ),
        _ => return None,
    };
    Some(SectionReport {
        name: "sudo".into(),
        status,
        message: Some(message),
        ..Default::default()
    })
}

/// The log driver of a container whose log is kept (docker `json-file`, podman `k8s-file`),
/// when `inspect` names a file for it.
fn container_log_driver(c: &probe_model::ContainerInfo) -> Option<&str> {
    let p = c.log_path.as_deref()?;
    match c.log_driver.as_deref() {
        Some(d) => Some(d),
        None if p.ends_with("-json.log") => Some("json-file"),
        None => None,
    }
}

/// Whether round 2 can read the journal (systemd runs, or `journalctl` is installed).
fn journal_readable(ctx: &Ctx) -> bool {
    ctx.systemd_running || ctx.tools.iter().any(|t| t == "journalctl")
}

/// Containers whose log this collector does not read (a binary `local` log, journald where the
/// journal cannot be read, none) get a log entry that says so.
fn container_log_notes(snap: &mut Snapshot, journal: bool) {
    let mut notes = Vec::new();
    for c in &snap.containers {
        let Some(d) = c.log_driver.as_deref() else {
            continue;
        };
        if parse::logs::container_log_readable(d) || (d == "journald" && journal) {
            continue;
        }
        let what = match d {
            "local" => "binary format, not supported (only json-file and k8s-file are read)",
            "journald" => "kept in the journal, which cannot be read here (no journalctl)",
            "none" => "the container's output is not kept",
            _ => "not read (only json-file and k8s-file logs are)",
        };
        notes.push(probe_model::LogSource {
            origin: probe_model::LogOrigin::Container,
            location: c
                .log_path
                .clone()
                .unwrap_or_else(|| format!("container:{}", c.name.as_deref().unwrap_or(&c.id))),
            status: SectionStatus::NotPresent,
            message: Some(format!(
                "container {}: log driver {d}: {what}",
                c.name.as_deref().unwrap_or(&c.id)
            )),
            ..Default::default()
        });
    }
    snap.logs.extend(notes);
}

fn dirname(p: &str) -> Option<&str> {
    p.rsplit_once('/')
        .map(|(d, _)| if d.is_empty() { "/" } else { d })
}

/// `/opt/venv/bin/python3` → `/opt/venv`.
fn prefix_of_bin(p: &str) -> Option<String> {
    if !p.starts_with('/') {
        return None;
    }
    let d = dirname(p)?;
    if !d.ends_with("/bin") {
        return None;
    }
    dirname(d).map(str::to_string)
}

fn join(base: Option<&str>, p: &str) -> Option<String> {
    if p.starts_with('/') {
        return Some(p.to_string());
    }
    let b = base.filter(|b| b.starts_with('/'))?;
    let p = p.strip_prefix("./").unwrap_or(p);
    Some(format!("{}/{p}", b.trim_end_matches('/')))
}

fn is_hf_id(m: &str) -> bool {
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
struct ModelRef {
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

/// `path` as seen through `root` (`/proc/PID/root`) for a process in another mount namespace.
fn rooted(root: Option<&str>, path: &str) -> String {
    match root {
        Some(r) if path.starts_with('/') => format!("{r}{path}"),
        _ => path.to_string(),
    }
}

/// `/proc/PID/root/rest` → (`/proc/PID/root`, `/rest`).
pub fn split_root(path: &str) -> Option<(String, String)> {
    let rest = path.strip_prefix("/proc/")?;
    let (pid, rest) = rest.split_once('/')?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rest = rest.strip_prefix("root")?;
    if !rest.starts_with('/') {
        return None;
    }
    Some((format!("/proc/{pid}/root"), rest.to_string()))
}

/// The root to read a process's files through: its own, or that of the first launcher of the
/// same container (one set of reads per container).
fn root_of<'a>(snap: &'a Snapshot, p: &'a probe_model::ProcessInfo) -> Option<&'a str> {
    let own = p.mount_root.as_deref()?;
    let Some(cid) = p.container_id.as_deref() else {
        return Some(own);
    };
    snap.processes
        .iter()
        .filter(|q| q.role == ProcessRole::Launcher && q.container_id.as_deref() == Some(cid))
        .find_map(|q| q.mount_root.as_deref())
        .or(Some(own))
}

/// The running process of a container (its cgroup names the container's id).
fn container_root<'a>(snap: &'a Snapshot, c: &probe_model::ContainerInfo) -> Option<&'a str> {
    if c.id.len() < 12 {
        return None;
    }
    let p = snap.processes.iter().find(|p| {
        p.role == ProcessRole::Launcher
            && p.container_id
                .as_deref()
                .is_some_and(|id| id.starts_with(&c.id) || c.id.starts_with(id))
    })?;
    root_of(snap, p)
}

/// The mount root (`/proc/PID/root`) and run-as user of a launch: a process's or container's
/// own filesystem view, the unit's `User=`.
fn launch_place<'a>(
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
fn add(v: &mut Vec<String>, x: String, max: usize) {
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
    hardware_inputs(snap, &mut inp);
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
fn launch_inputs(
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
    if l.source.running {
        engine_config_files(l, root, inp);
    }
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
fn bench_dirs(
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
fn process_prefix(
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
fn output_files(snap: &Snapshot, extra: &BTreeMap<u32, ProcExtra>, inp: &mut Round2Inputs) {
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
fn journal_units(snap: &Snapshot, ctx: &Ctx, inp: &mut Round2Inputs) {
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
fn recency(u: &SystemdUnit) -> (bool, UnixTime) {
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
fn container_logs(snap: &Snapshot, inp: &mut Round2Inputs) {
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
fn compose_files(snap: &Snapshot, inp: &mut Round2Inputs) {
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

/// The config files a running launch's options name (`--config FILE`), inside its mount
/// namespace: read as launch files, their keys the engine's options.
fn engine_config_files(l: &probe_model::LaunchConfig, root: Option<&str>, inp: &mut Round2Inputs) {
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

/// An absolute `.yml`/`.yaml` path with no `..`: what a compose label may make the collector read.
fn is_compose_path(p: &str) -> bool {
    p.starts_with('/')
        && !p.split('/').any(|x| x == "..")
        && (p.ends_with(".yml") || p.ends_with(".yaml"))
}

/// Where to look for one model: its directory (absolute, or under the working directory), or
/// for a Hugging Face id also the hub caches its environment and user point to.
fn model_lookups(m: &ModelRef, ctx: &Ctx, out: &mut Vec<ModelLookup>) {
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
fn hub_caches(m: &ModelRef, ctx: &Ctx) -> Vec<String> {
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
fn hardware_inputs(snap: &Snapshot, inp: &mut Round2Inputs) {
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

/// Parses the round-2 sections into the snapshot.
pub fn apply_round2(snap: &mut Snapshot, ctx: &Ctx, framed: &Framed, inputs: &Round2Inputs) {
    let b = &ctx.boundary;
    let (clock, tz) = (ctx.remote_clock, ctx.tz_offset_s);
    for raw in &framed.sections {
        let (mut rep, body) = report(raw, false);
        match script::probe(&raw.name).and_then(|p| p.parser.round2()) {
            Some(Round2Parser::Python) => read_python(snap, &body, b, &mut rep),
            Some(Round2Parser::Models) => {
                let mut models = parse::models::parse(&body, b);
                for m in &mut models {
                    if let Some((root, rest)) = split_root(&m.config_path) {
                        m.config_path = rest;
                        m.mount_root = Some(root);
                    }
                }
                all_denied(
                    &mut rep,
                    models.iter().map(|m| (m.status, m.config_path.as_str())),
                );
                snap.models = models;
            }
            Some(Round2Parser::Logs) => {
                let mut logs = parse::logs::parse_files(&body, b, clock, tz);
                for l in &mut logs {
                    if let Some((root, rest)) = split_root(&l.location) {
                        l.location = rest;
                        l.mount_root = Some(root);
                    }
                }
                all_denied(
                    &mut rep,
                    logs.iter().map(|l| (l.status, l.location.as_str())),
                );
                let failed: Vec<String> = logs
                    .iter()
                    .filter(|l| l.status == SectionStatus::Failed)
                    .map(|l| {
                        format!(
                            "{}: {}",
                            l.location,
                            l.message.as_deref().unwrap_or("failed")
                        )
                    })
                    .collect();
                if !failed.is_empty() {
                    push_note(&mut rep, format!("not read: {}", failed.join("; ")));
                }
                snap.logs.extend(logs);
            }
            Some(Round2Parser::FoundLogs) => {
                let logs = parse::logs::parse_found(&body, b, clock, tz, &inputs.found);
                all_denied(
                    &mut rep,
                    logs.iter().map(|l| (l.status, l.location.as_str())),
                );
                snap.logs.extend(logs);
            }
            Some(Round2Parser::ContainerLogs) => {
                let logs = parse::logs::parse_container_logs(&body, b, clock, tz);
                container_logs_denied(&mut rep, &logs);
                snap.logs.extend(logs);
            }
            Some(Round2Parser::GpuProcs) => {
                let (owners, libs) = parse::gpu_procs::parse(&body, b);
                snap.hardware.processes =
                    parse::gpu_procs::owned(&snap.gpu.compute_apps, &owners, ctx);
                snap.hardware.loaded_libs = libs;
            }
            Some(Round2Parser::Journal) => {
                let cap = script::probe("journal").map_or(u64::MAX, |_| 4 << 20);
                let j = parse::logs::parse_journal(&body, b, clock, tz, cap);
                if j.is_empty() && rep.status == SectionStatus::Ok && !inputs.units.is_empty() {
                    push_note(&mut rep, "no journal output".into());
                }
                snap.logs.extend(j);
            }
            Some(Round2Parser::LaunchFiles) => {
                let files = parse::launch_files::parse(&body, b, LAUNCH_FILE_CAP);
                let unread: Vec<String> = files
                    .iter()
                    .filter(|f| f.status != SectionStatus::Ok)
                    .map(|f| format!("{}: {}", f.path, f.message.as_deref().unwrap_or("not read")))
                    .collect();
                if !unread.is_empty() {
                    push_note(&mut rep, format!("not read: {}", unread.join("; ")));
                }
                snap.launch_files = files;
            }
            Some(Round2Parser::Benchmarks) => {
                let read = parse::bench::parse(&body, b, tz);
                if !read.notes.is_empty() {
                    push_note(&mut rep, format!("not read: {}", read.notes.join("; ")));
                }
                snap.benchmarks = read.results;
            }
            // A section name the script does not define is only reported.
            None => {}
        }
        snap.sections.push(rep);
    }
    not_reached(snap, framed, 2, "not run: the round-2 script ended early");
}

/// The `python_envs` section: environments with their users, prefixes refused noted.
fn read_python(snap: &mut Snapshot, body: &[u8], b: &str, rep: &mut SectionReport) {
    let mut envs = parse::python::parse(body, b);
    for e in &mut envs {
        unroot_env(e);
        fill_env_users(e, snap);
    }
    envs.retain(|e| !e.site_packages.is_empty());
    let denied: Vec<String> = crate::frame::records(body, b)
        .iter()
        .filter_map(|r| r.header.strip_prefix("denied "))
        .map(|p| match split_root(p) {
            Some((root, rest)) => format!("{rest} (through {root})"),
            None => p.to_string(),
        })
        .map(|p| sanitize_line(&p))
        .collect();
    if !denied.is_empty() {
        push_note(
            rep,
            format!(
                "permission denied (another mount namespace; needs root or --sudo): {}",
                denied.join(", ")
            ),
        );
        if envs.is_empty() && rep.status == SectionStatus::Ok {
            rep.status = SectionStatus::PermissionDenied;
        }
    }
    snap.python_envs = envs;
}

/// Container log files only root may read are noted (all of them: the section is denied).
fn container_logs_denied(rep: &mut SectionReport, logs: &[probe_model::LogSource]) {
    let denied = logs
        .iter()
        .filter(|l| l.status == SectionStatus::PermissionDenied)
        .count();
    if denied == 0 {
        return;
    }
    push_note(
        rep,
        format!(
            "{denied} of {} container log files readable by root only (needs root or --sudo)",
            logs.len()
        ),
    );
    if denied == logs.len() && rep.status == SectionStatus::Ok {
        rep.status = SectionStatus::PermissionDenied;
    }
}

/// Round 2 did not run or its output never came (deadline, connection dropped): every
/// round-2 section is reported with `status` and `message`, plus a `round2` summary section.
pub fn round2_not_run(snap: &mut Snapshot, status: SectionStatus, message: &str) {
    snap.sections.push(SectionReport {
        name: "round2".into(),
        status,
        message: Some(message.to_string()),
        ..Default::default()
    });
    for p in script::probes(2) {
        snap.sections.push(SectionReport {
            name: p.name.clone(),
            status,
            message: Some(message.to_string()),
            ..Default::default()
        });
    }
}

/// A section whose every item was refused (a container's root, not root) says so.
fn all_denied<'a>(rep: &mut SectionReport, items: impl Iterator<Item = (SectionStatus, &'a str)>) {
    let mut n = 0;
    let mut denied = Vec::new();
    for (st, path) in items {
        n += 1;
        if st == SectionStatus::PermissionDenied {
            denied.push(path.to_string());
        }
    }
    if denied.is_empty() {
        return;
    }
    push_note(rep, format!("permission denied: {}", denied.join(", ")));
    if denied.len() == n && rep.status == SectionStatus::Ok {
        rep.status = SectionStatus::PermissionDenied;
    }
}

/// A Python env read through `/proc/PID/root`: paths as the process sees them, root recorded.
fn unroot_env(e: &mut PythonEnv) {
    let Some((root, pre)) = e.prefix.as_deref().and_then(split_root) else {
        return;
    };
    for sp in &mut e.site_packages {
        if let Some((_, rest)) = split_root(sp) {
            *sp = rest;
        }
    }
    e.prefix = Some(pre);
    e.mount_root = Some(root);
}

/// Interpreter and users of a prefix, from processes and units (only those that see the same
/// filesystem: a container's env belongs to the processes of that container).
fn fill_env_users(e: &mut PythonEnv, snap: &Snapshot) {
    let Some(pre) = e.prefix.clone() else { return };
    let under = |p: &str| p.starts_with(&format!("{}/", pre.trim_end_matches('/')));
    let same_fs = |p: &probe_model::ProcessInfo| match (&e.mount_root, &p.mount_root) {
        (None, None) => true,
        (Some(r), Some(_)) => root_of(snap, p) == Some(r.as_str()),
        _ => false,
    };
    let container_env = e.mount_root.is_some();
    let procs: Vec<&probe_model::ProcessInfo> = snap
        .processes
        .iter()
        .filter(|p| p.role == ProcessRole::Launcher && same_fs(p))
        .collect();
    for p in procs {
        let a0 = p.argv.first().cloned().unwrap_or_default();
        let uses = under(&a0)
            || p.argv.get(1).is_some_and(|a| under(a))
            || p.exe.as_deref().is_some_and(under)
            || p.env.get("VIRTUAL_ENV") == Some(&pre)
            || p.env.get("CONDA_PREFIX") == Some(&pre);
        if uses {
            e.used_by.push(format!("pid:{}", p.pid));
            if e.interpreter.is_empty() {
                e.interpreter = if under(&a0) {
                    a0
                } else {
                    p.exe.clone().unwrap_or_default()
                };
            }
        }
    }
    for u in snap.units.iter().filter(|_| !container_env) {
        let first = u
            .exec_start
            .last()
            .map(|x| parse::units::split_quoted(x))
            .unwrap_or_default();
        let a0 = first
            .first()
            .map(|w| w.trim_start_matches(['@', '-', ':', '+', '!']).to_string())
            .unwrap_or_default();
        if under(&a0) || u.environment.get("VIRTUAL_ENV") == Some(&pre) {
            e.used_by.push(format!("unit:{}", u.name));
            if e.interpreter.is_empty() {
                e.interpreter = a0;
            }
        }
    }
    if e.interpreter.is_empty() {
        e.interpreter = format!("{}/bin/python3", pre.trim_end_matches('/'));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journals_of_the_units_that_ran_are_read_first() {
        let unit = |name: &str, active: Option<&str>, start: Option<UnixTime>, mtime: UnixTime| {
            SystemdUnit {
                name: name.into(),
                fragment: probe_model::FileText {
                    mtime: Some(mtime),
                    ..Default::default()
                },
                state: active.map(|a| probe_model::UnitState {
                    active_state: Some(a.into()),
                    exec_main_start: start,
                    ..Default::default()
                }),
                ..Default::default()
            }
        };
        let mut units = vec![
            unit("never.service", Some("inactive"), None, 900),
            unit("old.service", Some("failed"), Some(100), 50),
            unit("running.service", Some("active"), Some(10), 10),
            unit("recent.service", Some("inactive"), Some(500), 60),
            unit("nostate.service", None, None, 700),
        ];
        units.extend((0..20).map(|i| unit(&format!("bulk-{i:02}.service"), None, None, i)));
        let snap = Snapshot {
            units,
            ..Default::default()
        };
        let ctx = Ctx {
            systemd_running: true,
            ..Default::default()
        };
        let mut inp = Round2Inputs::default();
        journal_units(&snap, &ctx, &mut inp);
        let names: Vec<&str> = inp.units.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "running.service",
                "never.service",
                "nostate.service",
                "recent.service",
                "old.service",
                "bulk-19.service",
                "bulk-18.service",
                "bulk-17.service",
            ]
        );
    }

    #[test]
    fn model_args() {
        assert!(is_hf_id("Qwen/Qwen3.5-35B-A3B"));
        assert!(!is_hf_id("/abs/path"));
        assert!(!is_hf_id("./rel/x"));
        assert_eq!(
            prefix_of_bin("/opt/venv/bin/python3").as_deref(),
            Some("/opt/venv")
        );
        assert_eq!(
            prefix_of_bin("/usr/bin/python3.11").as_deref(),
            Some("/usr")
        );
        assert_eq!(prefix_of_bin("python3"), None);
    }

    #[test]
    fn container_paths_go_through_proc_root() {
        let v = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let cid = "3f2a9c1d8e7b5a4f6c0d2e1b9a8f7c6d5e4b3a2f1c0d9e8b7a6f5c4d3e2b1a0f";
        let mut snap = Snapshot::default();
        snap.processes.push(probe_model::ProcessInfo {
            pid: 66,
            argv: v(
                "python3 -m vllm.entrypoints.openai.api_server --model /mnt/m --log-file l.log",
            ),
            exe: Some("/usr/bin/python3.11".into()),
            cwd: Some("/workspace".into()),
            role: ProcessRole::Launcher,
            container_id: Some(cid.into()),
            mount_root: Some("/proc/66/root".into()),
            ..Default::default()
        });
        snap.processes.push(probe_model::ProcessInfo {
            pid: 7,
            argv: v("/opt/venv/bin/python3 -m sglang.launch_server --model-path /srv/m"),
            role: ProcessRole::Launcher,
            ..Default::default()
        });
        let extra: BTreeMap<u32, ProcExtra> = [(
            66,
            ProcExtra {
                stdout: Some("/var/log/vllm/server.log".into()),
                stderr: Some("pipe:[123]".into()),
            },
        )]
        .into();
        let inp = round2_inputs(&snap, &Ctx::default(), &extra);
        assert!(
            inp.python_prefixes
                .contains(&"/proc/66/root/usr".to_string())
        );
        assert!(inp.python_prefixes.contains(&"/opt/venv".to_string()));
        let dir = |named: &str, dir: &str| ModelLookup {
            kind: ModelLookupKind::Dir,
            named: named.into(),
            dir: dir.into(),
        };
        assert!(inp.models.contains(&dir("/mnt/m", "/proc/66/root/mnt/m")));
        assert!(inp.models.contains(&dir("/srv/m", "/srv/m")));
        assert!(
            inp.logs
                .contains(&"/proc/66/root/var/log/vllm/server.log".to_string())
        );
        // `--log-file` is no vLLM option (the catalog does not know it): round 2 reads only
        // what probe-launch read out of the launch, and no flag list of its own.
        assert!(
            !inp.logs
                .contains(&"/proc/66/root/workspace/l.log".to_string())
        );
        assert_eq!(inp.logs.len(), 1, "{:?}", inp.logs);
        assert_eq!(
            split_root("/proc/66/root/var/log/x"),
            Some(("/proc/66/root".into(), "/var/log/x".into()))
        );
        assert_eq!(split_root("/proc/66/rootx/y"), None);
        assert_eq!(split_root("/proc/self/root/y"), None);
        assert_eq!(split_root("/var/log/x"), None);
    }

    #[test]
    fn report_statuses() {
        let mk = |rc, body: &[u8]| RawSection {
            name: "gpu_query".into(),
            body: body.to_vec(),
            rc: Some(rc),
            complete: true,
            t0: Some(10),
            t1: Some(25),
            ..Default::default()
        };
        assert_eq!(report(&mk(0, b"x"), false).0.status, SectionStatus::Ok);
        assert_eq!(report(&mk(0, b"x"), false).0.duration_ms, Some(150));
        assert_eq!(
            report(&mk(124, b""), false).0.status,
            SectionStatus::TimedOut
        );
        assert_eq!(
            report(&mk(3, b""), false).0.status,
            SectionStatus::NotPresent
        );
        assert_eq!(
            report(&mk(4, b""), false).0.status,
            SectionStatus::PermissionDenied
        );
        assert_eq!(report(&mk(9, b""), false).0.status, SectionStatus::Failed);
        let mut noisy = mk(0, b"x");
        noisy.stderr =
            b"sudo: unable to resolve host gpu7: Name or service not known\nreal problem".to_vec();
        assert_eq!(
            report(&noisy, false).0.message.as_deref(),
            Some("real problem")
        );
        noisy.stderr = b"sudo: unable to resolve host gpu7: Name or service not known\n".to_vec();
        assert_eq!(report(&noisy, false).0.message, None);
        let big = vec![b'a'; 1_048_577];
        let (r, b) = report(&mk(141, &big), false);
        assert_eq!(r.status, SectionStatus::Truncated);
        assert_eq!(b.len(), 1_048_576);
    }

    /// A FIFO where a log should be: the logs section names it (and keeps the log's status),
    /// a FIFO `/var/log/dpkg.log` makes `pkg_history` fail with what it met, junk from
    /// nvidia-smi makes `gpu_query` fail and names no GPU.
    #[test]
    fn what_a_section_met_is_said() {
        let b = "0123456789abcdef0123456789abcdef";
        let sec = |name: &str, body: String| RawSection {
            name: name.into(),
            body: body.into_bytes(),
            rc: Some(0),
            complete: true,
            ..Default::default()
        };
        let ctx = Ctx {
            boundary: b.into(),
            ..Default::default()
        };
        let mut snap = Snapshot::default();
        let logs = sec(
            "logs",
            format!("\n{b} F fifo log - - /srv/sglang/server.log\n"),
        );
        let framed = Framed {
            sections: vec![logs],
            done: true,
        };
        apply_round2(&mut snap, &ctx, &framed, &Round2Inputs::default());
        let rep = snap.sections.iter().find(|s| s.name == "logs").unwrap();
        let m = rep.message.as_deref().unwrap_or("");
        assert!(
            m.contains("/srv/sglang/server.log: not a regular file (a FIFO)"),
            "{m}"
        );
        assert_eq!(snap.logs[0].status, SectionStatus::Failed);

        let mut snap = Snapshot::default();
        let mut ctx = ctx.clone();
        let framed = Framed {
            sections: vec![
                sec("pkg_history", format!("\n{b} R fifo /var/log/dpkg.log\n")),
                sec(
                    "gpu_query",
                    format!("\n{b} R csv\nindex, name\n0, {}\n", "\u{7f}x".repeat(5000)),
                ),
            ],
            done: true,
        };
        apply_round1(&mut snap, &mut ctx, &framed, false);
        let rep = |n: &str| snap.sections.iter().find(|s| s.name == n).unwrap().clone();
        let pkg = rep("pkg_history");
        assert_eq!(pkg.status, SectionStatus::Failed);
        assert!(
            pkg.message
                .as_deref()
                .unwrap_or("")
                .contains("/var/log/dpkg.log: not a regular file (a FIFO)"),
            "{pkg:?}"
        );
        let gpu = rep("gpu_query");
        assert_eq!(gpu.status, SectionStatus::Failed, "{gpu:?}");
        assert!(
            gpu.message
                .as_deref()
                .unwrap_or("")
                .contains(parse::gpu::JUNK),
            "{gpu:?}"
        );
        assert!(snap.gpu.gpus.is_empty());
    }
}
