//! The hardware lane: what the GPUs themselves say about a slowdown. Findings (power-cap and
//! thermal throttling, PCIe links below their maximum, kernel-reported faults before a restart,
//! other users' processes holding GPU memory, CUDA libraries loaded from outside the wheel the
//! environment ships, ECC / row-remapping trouble, persistence mode off) become ranked
//! [`Change`]s whose `after` is the evidence; faults and power-limit changes become timeline
//! events. Knowledge is data: the Xid catalogue (`configs/xid.toml`), the CUDA library families
//! and their wheels (`configs/cuda_libs.toml`), the impact of each finding (`configs/impact.toml`,
//! area `hardware`).

use std::collections::BTreeSet;

use probe_model::{
    Change, ChangeKind, Confidence, FaultKind, GpuHealth, HardwareReport, HardwareState,
    KernelFault, LoadedLib, ProcessRole, PythonEnv, Snapshot, TimeBounds, Timeline, TimelineEvent,
    TimelineEventKind, UnixTime,
};
use probe_model::{ChangeKey, KeyArea};
use serde_json::Value;

use crate::impact::{Area, Subject, change_for};
use crate::ranking::rank;

mod run_causes;
pub use run_causes::{annotate_runs, run_causes};

/// A fault this long (seconds) before a server start counts as "before the restart".
pub(crate) const RESTART_WINDOW_S: i64 = 3600;
/// A process of another user holding at least this much GPU memory is a finding.
const FOREIGN_MIB: u64 = 1024;
/// Timeline events from kernel faults, at most.
const MAX_FAULT_EVENTS: usize = 50;

/// `YYYY-MM-DD` (UTC) of a Unix time.
pub(crate) fn date(t: UnixTime) -> String {
    probe_model::civil::utc_date(t)
}

/// `HH:MM` (UTC) of a Unix time.
pub(crate) fn hhmm(t: UnixTime) -> String {
    probe_model::civil::utc_hhmm(t)
}

/// Whole minutes in a gap of seconds, to the nearest: a process start read from `/proc` is
/// truncated to the second, so 239 s after a fault reads as the 4 minutes it was.
fn minutes_rounded(gap_s: i64) -> i64 {
    (gap_s + 30) / 60
}

pub(crate) fn watts(w: f64) -> String {
    format!("{w:.0}")
}

/// One finding before the rules rate it.
pub(crate) struct Finding {
    /// The process it is about (another user's, or a serving process's mapped library).
    pub(crate) pid: Option<u32>,
    pub(crate) id: &'static str,
    pub(crate) key: String,
    pub(crate) evidence: String,
}

impl Finding {
    /// The finding as a ranked change (the rules of area `hardware`); `None` when a rule says
    /// it is no change at all.
    pub(crate) fn change(&self) -> Option<Change> {
        finding_change(self.id, self.key.clone(), &self.evidence)
    }
}

/// A finding `id` with its evidence as a [`Change`] rated by the rules of area `hardware`.
pub(crate) fn finding_change(id: &str, key: String, evidence: &str) -> Option<Change> {
    let evidence = Value::String(evidence.to_string());
    let subject = Subject::new(Area::Hardware, id, ChangeKind::Added).values(None, Some(&evidence));
    change_for(&subject, key).map(|(c, _)| c)
}

/// Findings on the state read now (everything but the kernel faults).
pub(crate) fn state_findings(
    snapshot: &Snapshot,
    previous: Option<&Snapshot>,
    state: &HardwareState,
) -> Vec<Finding> {
    let mut raw = Vec::new();
    raw.extend(throttling(snapshot, previous));
    raw.extend(links(snapshot));
    raw.extend(foreign_processes(snapshot, state));
    raw.extend(libraries(&state.loaded_libs));
    raw.extend(memory_health(&state.gpus));
    raw
}

/// The hardware report of a snapshot: the state with library wheels attributed, and the
/// findings ranked (most likely cause of a slowdown first).
pub fn report(
    snapshot: &Snapshot,
    previous: Option<&Snapshot>,
    timeline: &Timeline,
) -> HardwareReport {
    let mut state = snapshot.hardware.clone();
    attribute_libs(&mut state.loaded_libs, snapshot);
    let mut raw = state_findings(snapshot, previous, &state);
    raw.extend(faults(&state.faults, &restarts(timeline)));
    let mut findings: Vec<Change> = raw.iter().filter_map(Finding::change).collect();
    rank(&mut findings);
    HardwareReport { state, findings }
}

/// Start times of the running launches (a start is a restart when it is not the first).
fn restarts(timeline: &Timeline) -> Vec<UnixTime> {
    timeline
        .events
        .iter()
        .filter(|e| e.kind == TimelineEventKind::Launch && e.running)
        .filter_map(|e| e.time.at.or(e.time.not_before))
        .collect()
}

pub(crate) fn gpu_name(g: &GpuHealth) -> String {
    match g.index {
        Some(i) => format!("GPU {i}"),
        None => format!("GPU {}", g.pci_bus_id.as_deref().unwrap_or("?")),
    }
}

fn same_gpu(a: &GpuHealth, b: &GpuHealth) -> bool {
    match (&a.uuid, &b.uuid) {
        (Some(x), Some(y)) => x == y,
        _ => a.index.is_some() && a.index == b.index,
    }
}

/// A power limit set with `nvidia-smi -pl W` (`--power-limit`), for GPU `-i N` or all GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerLimitSet {
    pub gpu: Option<u32>,
    pub watts: f64,
    pub time: Option<UnixTime>,
    pub command: String,
}

/// `nvidia-smi [-i N] -pl W` commands in the shell histories, oldest first.
pub fn power_limit_commands(snapshot: &Snapshot) -> Vec<PowerLimitSet> {
    let mut out = Vec::new();
    for h in &snapshot.histories {
        for e in &h.entries {
            for cmd in e.command.split(['\n', ';', '&', '|']) {
                if let Some((gpu, w)) = parse_power_limit(cmd) {
                    out.push(PowerLimitSet {
                        gpu,
                        watts: w,
                        time: e.time,
                        command: cmd.trim().chars().take(200).collect(),
                    });
                }
            }
        }
    }
    out.sort_by_key(|p| p.time);
    out
}

/// `(gpu, watts)` of `nvidia-smi [-i N|--id=N] (-pl W|--power-limit[=| ]W)`.
pub fn parse_power_limit(cmd: &str) -> Option<(Option<u32>, f64)> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.rsplit('/').next() == Some("nvidia-smi"))?;
    let mut gpu = None;
    let mut limit = None;
    let mut it = words[at + 1..].iter();
    while let Some(w) = it.next() {
        match *w {
            "-i" | "--id" => gpu = it.next().and_then(|v| v.parse().ok()),
            "-pl" | "--power-limit" => limit = it.next().and_then(|v| v.parse().ok()),
            _ => {
                if let Some(v) = w.strip_prefix("--id=") {
                    gpu = v.parse().ok();
                } else if let Some(v) = w.strip_prefix("--power-limit=") {
                    limit = v.parse().ok();
                }
            }
        }
    }
    limit
        .filter(|w: &f64| w.is_finite() && *w > 0.0)
        .map(|w| (gpu, w))
}

pub(crate) fn limit_of(g: &GpuHealth) -> Option<f64> {
    g.enforced_power_limit_w.or(g.power_limit_w)
}

/// How the limit came to be: "power limit 300 -> 200 W since 2026-11-27", when known.
fn limit_change(g: &GpuHealth, snapshot: &Snapshot, previous: Option<&Snapshot>) -> Option<String> {
    let now = limit_of(g)?;
    if let Some(before) = previous
        .and_then(|p| p.hardware.gpus.iter().find(|x| same_gpu(x, g)))
        .and_then(limit_of)
        .filter(|b| (b - now).abs() >= 1.0)
    {
        let since = previous.map(|p| p.collected_at).unwrap_or_default();
        return Some(format!(
            "power limit {} -> {} W since the snapshot of {}",
            watts(before),
            watts(now),
            date(since)
        ));
    }
    let set = power_limit_commands(snapshot)
        .into_iter()
        .rev()
        .find(|p| (p.gpu.is_none() || p.gpu == g.index) && (p.watts - now).abs() < 1.0)?;
    let from = g
        .default_power_limit_w
        .filter(|d| (d - now).abs() >= 1.0)
        .map(|d| format!("{} -> ", watts(d)))
        .unwrap_or_default();
    let since = set
        .time
        .map(|t| format!(" since {}", date(t)))
        .unwrap_or_default();
    Some(format!(
        "power limit {from}{} W{since} (`{}`)",
        watts(now),
        set.command
    ))
}

fn clock_text(g: &GpuHealth) -> String {
    match (g.clocks_sm_mhz, g.clocks_max_sm_mhz) {
        (Some(c), Some(m)) => format!(", SM clock {c} of {m} MHz"),
        _ => String::new(),
    }
}

fn throttling(snapshot: &Snapshot, previous: Option<&Snapshot>) -> Vec<Finding> {
    let mut out = Vec::new();
    for g in &snapshot.hardware.gpus {
        let has = |r: &str| g.event_reasons.iter().any(|x| x == r);
        if has("sw_power_cap") || has("hw_power_brake_slowdown") {
            let how = limit_change(g, snapshot, previous).unwrap_or_else(|| {
                let draw = g
                    .power_draw_w
                    .map(|d| format!("drawing {} W of ", watts(d)))
                    .unwrap_or_default();
                let def = g
                    .default_power_limit_w
                    .filter(|d| limit_of(g).is_some_and(|l| (d - l).abs() >= 1.0))
                    .map(|d| format!(" (default {} W)", watts(d)))
                    .unwrap_or_default();
                format!(
                    "{draw}its {} W limit{def}",
                    limit_of(g).map(watts).unwrap_or_else(|| "?".into())
                )
            });
            let what = if has("sw_power_cap") {
                "SW power cap"
            } else {
                "HW power brake"
            };
            out.push(Finding {
                pid: None,
                id: "sw-power-cap",
                key: gpu_key(g, "power_cap"),
                evidence: format!(
                    "{} throttled by {what}: {how}{}",
                    gpu_name(g),
                    clock_text(g)
                ),
            });
        }
        let thermal: Vec<&str> = ["hw_slowdown", "hw_thermal_slowdown", "sw_thermal_slowdown"]
            .into_iter()
            .filter(|r| has(r))
            .collect();
        if !thermal.is_empty() {
            let temp = g
                .temperature_c
                .map(|t| format!(" at {t} C"))
                .unwrap_or_default();
            let slow = g
                .slowdown_temp_c
                .map(|t| format!(" (slowdown at {t} C)"))
                .unwrap_or_default();
            out.push(Finding {
                pid: None,
                id: "thermal-slowdown",
                key: gpu_key(g, "slowdown"),
                evidence: format!(
                    "{} clocks slowed ({}){temp}{slow}{}",
                    gpu_name(g),
                    thermal.join(", "),
                    clock_text(g)
                ),
            });
        }
        if g.persistence_mode.as_deref() == Some("Disabled") {
            out.push(Finding {
                pid: None,
                id: "persistence-off",
                key: gpu_key(g, "persistence_mode"),
                evidence: format!("{} persistence mode is off", gpu_name(g)),
            });
        }
    }
    out
}

pub(crate) fn gpu_key(g: &GpuHealth, field: &str) -> String {
    let gpu = match g.index {
        Some(i) => i.to_string(),
        None => g.pci_bus_id.as_deref().unwrap_or("?").to_string(),
    };
    ChangeKey::new(KeyArea::Gpu, field).of(gpu).to_string()
}

fn links(snapshot: &Snapshot) -> Vec<Finding> {
    let busy = |g: &GpuHealth| {
        snapshot
            .gpu
            .gpus
            .iter()
            .find(|x| {
                (x.uuid.is_some() && x.uuid == g.uuid) || (x.index.is_some() && x.index == g.index)
            })
            .and_then(|x| x.utilization_gpu_pct)
            .is_some_and(|u| u >= 10)
    };
    let mut out = Vec::new();
    for g in &snapshot.hardware.gpus {
        let narrow =
            matches!((g.pcie_width_current, g.pcie_width_max), (Some(c), Some(m)) if c < m);
        // An idle GPU trains its link down to gen 1 to save power: only a busy one counts.
        let slow =
            matches!((g.pcie_gen_current, g.pcie_gen_max), (Some(c), Some(m)) if c < m) && busy(g);
        if !narrow && !slow {
            continue;
        }
        let opt = |v: Option<u32>| v.map_or("?".to_string(), |x| x.to_string());
        out.push(Finding {
            pid: None,
            id: "pcie-below-max",
            key: gpu_key(g, "pcie_link"),
            evidence: format!(
                "{} PCIe link gen {} x{} (max gen {} x{})",
                gpu_name(g),
                opt(g.pcie_gen_current),
                opt(g.pcie_width_current),
                opt(g.pcie_gen_max),
                opt(g.pcie_width_max)
            ),
        });
    }
    out
}

/// What a fault says, for evidence and the timeline: `Xid 79 on 0000:17:00.0`.
pub fn fault_label(f: &KernelFault) -> String {
    let what = match (f.kind, f.code) {
        (FaultKind::Xid, Some(c)) => format!("Xid {c}"),
        (FaultKind::Sxid, Some(c)) => format!("SXid {c}"),
        (FaultKind::FallenOffBus, _) => "GPU fallen off the bus".to_string(),
        (FaultKind::GpuReset, _) => "GPU reset".to_string(),
        (FaultKind::Nvlink, _) => "NVLink error".to_string(),
        (_, None) => "GPU fault".to_string(),
    };
    match &f.pci_bus_id {
        Some(b) => format!("{what} on {b}"),
        None => what,
    }
}

/// The kernel's "GPU has fallen off the bus" line that follows an Xid 79 on the same GPU: one
/// event, named once (by the Xid).
fn echoes_xid_79(f: &KernelFault, all: &[KernelFault]) -> bool {
    f.kind == FaultKind::FallenOffBus
        && all.iter().any(|x| {
            x.kind == FaultKind::Xid
                && x.code == Some(79)
                && x.pci_bus_id == f.pci_bus_id
                && matches!((x.time, f.time), (Some(a), Some(b)) if (a - b).abs() <= 5)
        })
}

pub(crate) fn faults(faults: &[KernelFault], restarts: &[UnixTime]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    // Newest first: the fault closest to a restart is the one to name.
    for f in faults.iter().rev() {
        if echoes_xid_79(f, faults) {
            continue;
        }
        let label = fault_label(f);
        if !seen.insert(label.clone()) {
            continue;
        }
        let meaning = f
            .meaning
            .as_deref()
            .map(|m| format!(" ({m})"))
            .unwrap_or_default();
        let before = f.time.and_then(|t| {
            restarts
                .iter()
                .filter(|r| **r >= t && **r - t <= RESTART_WINDOW_S)
                .min()
                .map(|r| (t, r - t))
        });
        let (id, evidence) = match before {
            Some((t, gap)) => (
                "xid-before-restart",
                format!(
                    "{label} at {}, {} minutes before the restart{meaning}",
                    hhmm(t),
                    minutes_rounded(gap)
                ),
            ),
            None => {
                let when = f
                    .time
                    .map(|t| format!(" at {} {}", date(t), hhmm(t)))
                    .unwrap_or_default();
                let boot = if f.boot == Some(-1) {
                    " (previous boot)"
                } else {
                    ""
                };
                ("gpu-fault", format!("{label}{when}{boot}{meaning}"))
            }
        };
        out.push(Finding {
            pid: None,
            id,
            key: ChangeKey::new(
                KeyArea::Kernel,
                label.to_ascii_lowercase().replace(' ', "_"),
            )
            .to_string(),
            evidence,
        });
        if out.len() >= 8 {
            break;
        }
    }
    out
}

fn foreign_processes(snapshot: &Snapshot, state: &HardwareState) -> Vec<Finding> {
    let servers: BTreeSet<&str> = snapshot
        .processes
        .iter()
        .filter(|p| matches!(p.role, ProcessRole::Launcher | ProcessRole::Worker))
        .filter_map(|p| p.user.as_deref())
        .collect();
    let ours: BTreeSet<u32> = snapshot
        .processes
        .iter()
        .filter(|p| matches!(p.role, ProcessRole::Launcher | ProcessRole::Worker))
        .map(|p| p.pid)
        .collect();
    let mut out = Vec::new();
    for p in &state.processes {
        let (Some(user), Some(mib)) = (p.user.as_deref(), p.used_memory_mib) else {
            continue;
        };
        if mib < FOREIGN_MIB || servers.contains(user) || p.pid.is_some_and(|x| ours.contains(&x)) {
            continue;
        }
        let gpu = snapshot
            .gpu
            .gpus
            .iter()
            .find(|g| g.uuid.is_some() && g.uuid == p.gpu_uuid)
            .and_then(|g| g.index)
            .map_or_else(|| "a GPU".to_string(), |i| format!("GPU {i}"));
        out.push(Finding {
            pid: p.pid,
            id: "foreign-gpu-process",
            key: ChangeKey::new(KeyArea::GpuProcess, p.pid.unwrap_or(0).to_string()).to_string(),
            evidence: format!(
                "{gpu}: pid {} ({}) of user {user} holds {:.1} GiB",
                p.pid.map_or("?".into(), |x| x.to_string()),
                p.process_name.as_deref().unwrap_or("?"),
                mib as f64 / 1024.0
            ),
        });
    }
    out
}

/// The environment a process uses (`used_by` names its PID or its launcher's).
fn env_of(snapshot: &Snapshot, pid: u32) -> Option<&PythonEnv> {
    let launcher = snapshot
        .processes
        .iter()
        .find(|p| p.pid == pid)
        .and_then(|p| p.launcher_pid)
        .unwrap_or(pid);
    snapshot.python_envs.iter().find(|e| {
        e.used_by
            .iter()
            .any(|u| u == &format!("pid:{pid}") || u == &format!("pid:{launcher}"))
    })
}

/// Fills each loaded library's wheel, wheel version and whether it comes from that wheel.
pub fn attribute_libs(libs: &mut [LoadedLib], snapshot: &Snapshot) {
    for l in libs {
        let Some(env) = env_of(snapshot, l.pid) else {
            continue;
        };
        let Some(pkg) = l
            .wheels
            .iter()
            .find_map(|w| env.packages.iter().find(|p| &p.name == w))
        else {
            continue;
        };
        l.wheel = Some(pkg.name.clone());
        l.wheel_version = Some(pkg.version.clone());
        l.from_wheel = Some(env.site_packages.iter().any(|sp| {
            l.path
                .starts_with(&format!("{}/", sp.trim_end_matches('/')))
        }));
    }
}

/// Whether a file-name version disagrees with the wheel's (`2` agrees with `2.27.5`).
fn versions_disagree(file: &str, wheel: &str) -> bool {
    let w: Vec<&str> = wheel.split(['+', '.']).collect();
    file.split('.').zip(w.iter()).any(|(a, b)| a != *b)
}

fn libraries(libs: &[LoadedLib]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for l in libs {
        let (Some(wheel), Some(wv)) = (&l.wheel, &l.wheel_version) else {
            continue;
        };
        let outside = l.from_wheel == Some(false);
        let differs = l
            .version
            .as_deref()
            .is_some_and(|v| versions_disagree(v, wv));
        if !(outside || differs) || !seen.insert((l.name.clone(), l.path.clone())) {
            continue;
        }
        let v = l
            .version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        out.push(Finding {
            pid: Some(l.pid),
            id: "lib-not-from-wheel",
            key: ChangeKey::new(KeyArea::Lib, l.name.as_str()).to_string(),
            evidence: format!(
                "pid {} loaded {}{v} from {}, but the environment's wheel is {wheel} {wv}",
                l.pid, l.name, l.path
            ),
        });
    }
    out
}

fn memory_health(gpus: &[GpuHealth]) -> Vec<Finding> {
    let mut out = Vec::new();
    for g in gpus {
        if let Some(n) = g.ecc_volatile_uncorrected.filter(|n| *n > 0) {
            out.push(Finding {
                pid: None,
                id: "ecc-uncorrected",
                key: gpu_key(g, "ecc"),
                evidence: format!(
                    "{} {n} uncorrected ECC errors since the driver loaded",
                    gpu_name(g)
                ),
            });
        }
        let yes = |v: &Option<String>| v.as_deref().is_some_and(|x| x.eq_ignore_ascii_case("yes"));
        if yes(&g.remapped_rows_failure)
            || yes(&g.remapped_rows_pending)
            || yes(&g.retired_pages_pending)
        {
            let what = if yes(&g.remapped_rows_failure) {
                "row remapping failed"
            } else {
                "a row remap / page retirement is pending (needs a GPU reset)"
            };
            out.push(Finding {
                pid: None,
                id: "memory-remap",
                key: gpu_key(g, "remapped_rows"),
                evidence: format!("{} {what}", gpu_name(g)),
            });
        }
    }
    out
}

/// The state findings as timeline events: a library finding at its process's start (it was
/// mapped since then), the others when they were read.
fn observations(snapshot: &Snapshot) -> Vec<TimelineEvent> {
    let mut state = snapshot.hardware.clone();
    attribute_libs(&mut state.loaded_libs, snapshot);
    state_findings(snapshot, None, &state)
        .into_iter()
        .map(|f| {
            let started = (f.id == "lib-not-from-wheel")
                .then(|| {
                    let pid = f.pid?;
                    snapshot.processes.iter().find(|p| p.pid == pid)?.start_time
                })
                .flatten();
            let (at, suffix) = match started {
                Some(t) => (t, " (mapped since the process started)"),
                None => (snapshot.collected_at, " (seen at collection)"),
            };
            TimelineEvent {
                kind: TimelineEventKind::GpuObservation,
                time: TimeBounds {
                    at: Some(at),
                    ..TimeBounds::default()
                },
                confidence: Confidence::Bounded,
                summary: format!("{}{suffix}", f.evidence),
                ..TimelineEvent::default()
            }
        })
        .collect()
}

/// Timeline events of the hardware lane: kernel faults, `nvidia-smi -pl` commands and the
/// state findings ([`observations`]).
pub fn events(snapshot: &Snapshot) -> Vec<TimelineEvent> {
    let exact = |t: Option<UnixTime>| TimeBounds {
        at: t,
        ..TimeBounds::default()
    };
    let conf = |t: Option<UnixTime>| {
        if t.is_some() {
            Confidence::Exact
        } else {
            Confidence::Unknown
        }
    };
    let mut out: Vec<TimelineEvent> = snapshot
        .hardware
        .faults
        .iter()
        .rev()
        .take(MAX_FAULT_EVENTS)
        .map(|f| {
            let mut summary = fault_label(f);
            if let Some(m) = &f.meaning {
                summary.push_str(&format!(": {m}"));
            }
            if let Some(p) = f.pid {
                summary.push_str(&format!(
                    " (pid {p}{})",
                    f.process
                        .as_deref()
                        .map(|n| format!(", {n}"))
                        .unwrap_or_default()
                ));
            }
            TimelineEvent {
                kind: TimelineEventKind::GpuFault,
                time: exact(f.time),
                confidence: conf(f.time),
                summary,
                ..TimelineEvent::default()
            }
        })
        .collect();
    out.extend(observations(snapshot));
    out.extend(
        power_limit_commands(snapshot)
            .into_iter()
            .map(|p| TimelineEvent {
                kind: TimelineEventKind::PowerLimitChange,
                time: exact(p.time),
                confidence: conf(p.time),
                summary: format!(
                    "power limit set to {} W on {} (`{}`)",
                    watts(p.watts),
                    p.gpu
                        .map_or_else(|| "all GPUs".to_string(), |i| format!("GPU {i}")),
                    p.command
                ),
                ..TimelineEvent::default()
            }),
    );
    out
}

#[cfg(test)]
mod tests;
