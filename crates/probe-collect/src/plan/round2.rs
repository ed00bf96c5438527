//! Round 2 applied: its sections read into the snapshot, a section it did not run said.

use probe_model::{LaunchFileKind, ProcessRole, PythonEnv, SectionReport, SectionStatus, Snapshot};

use crate::config::Round2Parser;
use crate::frame::Framed;
use crate::parse::{self, Ctx};
use crate::sanitize::sanitize_line;
use crate::script::{self, Round2Inputs};

use super::common::*;

pub(super) const LAUNCH_FILE_CAP: usize = 262_144;

/// Parses the round-2 sections into the snapshot.
pub fn apply_round2(snap: &mut Snapshot, ctx: &Ctx, framed: &Framed, inputs: &Round2Inputs) {
    for raw in &framed.sections {
        let (mut rep, body) = report(raw, false);
        let read = Read {
            body: &body,
            ctx,
            inputs,
        };
        // A section name the script does not define is only reported.
        if let Some(parser) = script::probe(&raw.name).and_then(|p| p.parser.round2()) {
            read.apply(parser, snap, &mut rep);
        }
        snap.sections.push(rep);
    }
    not_reached(snap, framed, 2, "not run: the round-2 script ended early");
}

/// One round-2 section's body, with what its parser needs besides.
struct Read<'a> {
    body: &'a [u8],
    ctx: &'a Ctx,
    inputs: &'a Round2Inputs,
}

impl Read<'_> {
    /// The section read with its parser into the snapshot, notes on its report.
    fn apply(&self, parser: Round2Parser, snap: &mut Snapshot, rep: &mut SectionReport) {
        let (body, b) = (self.body, self.ctx.boundary.as_str());
        let (clock, tz) = (self.ctx.remote_clock, self.ctx.tz_offset_s);
        match parser {
            Round2Parser::Python => read_python(snap, body, b, rep),
            Round2Parser::Models => self.models(snap, rep),
            Round2Parser::Logs => self.logs(snap, rep),
            Round2Parser::FoundLogs => {
                let logs = parse::logs::parse_found(body, b, clock, tz, &self.inputs.found);
                all_denied(rep, logs.iter().map(|l| (l.status, l.location.as_str())));
                snap.logs.extend(logs);
            }
            Round2Parser::ContainerLogs => {
                let logs = parse::logs::parse_container_logs(body, b, clock, tz);
                container_logs_denied(rep, &logs);
                snap.logs.extend(logs);
            }
            Round2Parser::GpuProcs => {
                let (owners, libs) = parse::gpu_procs::parse(body, b);
                snap.hardware.processes =
                    parse::gpu_procs::owned(&snap.gpu.compute_apps, &owners, self.ctx);
                snap.hardware.loaded_libs = libs;
            }
            Round2Parser::Journal => self.journal(snap, rep),
            Round2Parser::LaunchFiles => self.launch_files(snap, rep),
            Round2Parser::SelfInstalled => {
                parse::self_installed::parse_into(body, b, &mut snap.self_installed);
            }
            Round2Parser::Benchmarks => {
                let read = parse::bench::parse(body, b, tz);
                if !read.notes.is_empty() {
                    push_note(rep, format!("not read: {}", read.notes.join("; ")));
                }
                snap.benchmarks = read.results;
            }
        }
    }

    /// The models' `config.json`s, paths inside a container's root unrooted.
    fn models(&self, snap: &mut Snapshot, rep: &mut SectionReport) {
        let mut models = parse::models::parse(self.body, &self.ctx.boundary);
        for m in &mut models {
            if let Some((root, rest)) = split_root(&m.config_path) {
                m.config_path = rest;
                m.mount_root = Some(root);
            }
        }
        all_denied(
            rep,
            models.iter().map(|m| (m.status, m.config_path.as_str())),
        );
        snap.models = models;
    }

    /// The log files launches name and processes write, those not read noted.
    fn logs(&self, snap: &mut Snapshot, rep: &mut SectionReport) {
        let (clock, tz) = (self.ctx.remote_clock, self.ctx.tz_offset_s);
        let mut logs = parse::logs::parse_files(self.body, &self.ctx.boundary, clock, tz);
        for l in &mut logs {
            if let Some((root, rest)) = split_root(&l.location) {
                l.location = rest;
                l.mount_root = Some(root);
            }
        }
        all_denied(rep, logs.iter().map(|l| (l.status, l.location.as_str())));
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
            push_note(rep, format!("not read: {}", failed.join("; ")));
        }
        snap.logs.extend(logs);
    }

    /// The journal of the units (and journald containers) asked for; the names not asked said.
    fn journal(&self, snap: &mut Snapshot, rep: &mut SectionReport) {
        let (clock, tz) = (self.ctx.remote_clock, self.ctx.tz_offset_s);
        let cap = script::probe("journal").map_or(u64::MAX, |_| 4 << 20);
        let j = parse::logs::parse_journal(self.body, &self.ctx.boundary, clock, tz, cap);
        let (asked, unnamed): (Vec<_>, Vec<_>) = self
            .inputs
            .units
            .iter()
            .partition(|(_, n)| script::valid_unit_name(n));
        if j.is_empty() && rep.status == SectionStatus::Ok && !asked.is_empty() {
            push_note(rep, "no journal output".into());
        }
        if !unnamed.is_empty() {
            push_note(rep, units_not_read(&unnamed));
        }
        snap.logs.extend(j);
    }

    /// The launch files (compose, engine config, Python script), those not read noted.
    fn launch_files(&self, snap: &mut Snapshot, rep: &mut SectionReport) {
        let mut files = parse::launch_files::parse(self.body, &self.ctx.boundary, LAUNCH_FILE_CAP);
        // A running process's Python script is kept only when it may start an engine through
        // its API: any other is the user's own code, which says nothing of a server.
        for f in &mut files {
            if f.kind == LaunchFileKind::PythonScript
                && !probe_launch::python_script_starts_engine(&f.text)
            {
                f.text.clear();
            }
        }
        let unread: Vec<String> = files
            .iter()
            .filter(|f| f.status != SectionStatus::Ok)
            .map(|f| format!("{}: {}", f.path, f.message.as_deref().unwrap_or("not read")))
            .collect();
        if !unread.is_empty() {
            push_note(rep, format!("not read: {}", unread.join("; ")));
        }
        snap.launch_files = files;
    }
}

/// The `python_envs` section: environments with their users, prefixes refused noted.
pub(super) fn read_python(snap: &mut Snapshot, body: &[u8], b: &str, rep: &mut SectionReport) {
    let mut envs = parse::python::parse(body, b);
    // The checkouts of editable installs (`git` records, as the `self_installed` section's).
    parse::self_installed::parse_into(body, b, &mut snap.self_installed);
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
    // A prefix whose name came with U+FFFD and matched no single directory on the host.
    let unmatched: Vec<String> = crate::frame::records(body, b)
        .iter()
        .filter_map(|r| r.header.strip_prefix("nomatch "))
        .map(|p| format!("{}: {}", sanitize_line(p), crate::frame::NAME_NOT_MATCHED))
        .collect();
    if !unmatched.is_empty() {
        push_note(rep, format!("not read: {}", unmatched.join("; ")));
    }
    snap.python_envs = envs;
}

/// Units whose name systemd does not take (bytes that were not UTF-8, shown with U+FFFD, or
/// characters outside its set): systemd loads no unit from such a file, so the journal holds
/// nothing under that name and `journalctl -u` is not run for it; said, with the names.
fn units_not_read(units: &[&(String, String)]) -> String {
    let names: Vec<String> = units
        .iter()
        .map(|(scope, n)| format!("{scope} unit {}", sanitize_line(n)))
        .collect();
    format!(
        "journal not read for {}: not a valid systemd unit name (a name that is not UTF-8 is \
         shown with \u{fffd}); systemd loads no unit from such a file, so the journal holds \
         no entries under it",
        names.join(", ")
    )
}

/// Container log files only root may read are noted (all of them: the section is denied).
pub(super) fn container_logs_denied(rep: &mut SectionReport, logs: &[probe_model::LogSource]) {
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
pub(super) fn all_denied<'a>(
    rep: &mut SectionReport,
    items: impl Iterator<Item = (SectionStatus, &'a str)>,
) {
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
pub(super) fn unroot_env(e: &mut PythonEnv) {
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
pub(super) fn fill_env_users(e: &mut PythonEnv, snap: &Snapshot) {
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
