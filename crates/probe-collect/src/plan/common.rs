//! What the three steps share: a section's report and notes, the sections a round did not
//! reach, where a process's or container's paths are rooted, and which container logs are read.

use probe_model::{ProcessRole, SectionReport, SectionStatus, Snapshot};

use crate::frame::{Framed, RawSection};
use crate::parse::Ctx;
use crate::sanitize::{line, sanitize_line};
use crate::script::{self};

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
pub(super) fn without_sudo_noise(stderr: &[u8]) -> Vec<u8> {
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

pub(super) fn push_note(r: &mut SectionReport, note: String) {
    r.message = Some(match r.message.take() {
        Some(m) if !m.is_empty() => format!("{m}; {note}"),
        _ => note,
    });
}

/// Sections of `round` the script never reached.
pub(super) fn not_reached(snap: &mut Snapshot, framed: &Framed, round: u8, message: &str) {
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

/// The log driver of a container whose log is kept (docker `json-file`, podman `k8s-file`),
/// when `inspect` names a file for it.
pub(super) fn container_log_driver(c: &probe_model::ContainerInfo) -> Option<&str> {
    let p = c.log_path.as_deref()?;
    match c.log_driver.as_deref() {
        Some(d) => Some(d),
        None if p.ends_with("-json.log") => Some("json-file"),
        None => None,
    }
}

/// Whether round 2 can read the journal (systemd runs, or `journalctl` is installed).
pub(super) fn journal_readable(ctx: &Ctx) -> bool {
    ctx.systemd_running || ctx.tools.iter().any(|t| t == "journalctl")
}

/// `path` as seen through `root` (`/proc/PID/root`) for a process in another mount namespace.
pub(super) fn rooted(root: Option<&str>, path: &str) -> String {
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
pub(super) fn root_of<'a>(snap: &'a Snapshot, p: &'a probe_model::ProcessInfo) -> Option<&'a str> {
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
pub(super) fn container_root<'a>(
    snap: &'a Snapshot,
    c: &probe_model::ContainerInfo,
) -> Option<&'a str> {
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
