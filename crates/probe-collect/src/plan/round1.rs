//! Round 1 applied: its sections read into the snapshot (with the state the reading keeps),
//! the sudo section, the notes for container logs this collector does not read.

use std::collections::BTreeMap;

use probe_model::{GpuStatus, ProcessRole, SectionReport, SectionStatus, Snapshot, UnitScope};

use crate::config::Round1Parser;
use crate::frame::{Framed, RawSection};
use crate::parse::{self, Ctx, processes::ProcExtra};
use crate::sanitize::line;
use crate::script::{self};

use super::common::*;

/// What round 1's sections leave for after the loop over them.
#[derive(Default)]
pub(super) struct Round1State {
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
pub(super) fn attach_output_files(snap: &mut Snapshot, extra: &BTreeMap<u32, ProcExtra>) {
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
pub(super) fn is_output_file(f: &str) -> bool {
    f.starts_with('/') && !f.contains("/dev/") && !f.ends_with(" (deleted)")
}

/// One round-1 section into the snapshot.
pub(super) fn read_round1(
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
pub(super) fn files_not_read(rep: &mut SectionReport, items: Vec<(SectionStatus, String)>) {
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

/// The `sudo` section when `--sudo` was asked for and not used.
pub(super) fn sudo_section(mode: Option<&str>, msg: Option<&str>) -> Option<SectionReport> {
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

/// Containers whose log this collector does not read (a binary `local` log, journald where the
/// journal cannot be read, none) get a log entry that says so.
pub(super) fn container_log_notes(snap: &mut Snapshot, journal: bool) {
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
