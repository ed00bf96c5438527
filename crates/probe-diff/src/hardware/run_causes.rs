//! The hardware lane per run: what each run had (the power limits in effect, the throttle
//! reasons seen, kernel GPU faults in its period or just before its start, and for a running run
//! the findings on the GPUs and the process now), and what differs between two runs as ranked
//! causes. A fault or a limit change belongs to the run period it falls in; a fault in the hour
//! before a start is also a cause of that start (the crash that led to the restart).

use probe_model::{
    Change, ChangeKind, GpuHealth, HardwareState, KernelFault, Run, RunHardware,
    RunHardwareFinding, RunPowerLimit, Snapshot, UnixTime,
};
use probe_model::{ChangeKey, KeyArea};
use serde_json::Value;

use super::{
    Finding, PowerLimitSet, RESTART_WINDOW_S, attribute_libs, faults, finding_change, limit_of,
    power_limit_commands, state_findings,
};
use crate::impact::{Area, Subject, change_for};

/// Throttle reasons that say nothing about a slowdown.
const BENIGN_REASONS: &[&str] = &["gpu_idle", "none"];

/// What the snapshot says about the hardware, read once for all runs.
struct Inputs<'a> {
    state: HardwareState,
    now: Vec<Finding>,
    commands: Vec<PowerLimitSet>,
    gpus: &'a [GpuHealth],
}

/// Fills `hardware` of every run of `runs` (the snapshot's runs, oldest first).
pub fn annotate_runs(snapshot: &Snapshot, runs: &mut [Run]) {
    let mut state = snapshot.hardware.clone();
    attribute_libs(&mut state.loaded_libs, snapshot);
    let inputs = Inputs {
        now: state_findings(snapshot, None, &state),
        commands: power_limit_commands(snapshot),
        gpus: &snapshot.hardware.gpus,
        state,
    };
    let ends: Vec<Option<UnixTime>> = (0..runs.len()).map(|i| period_end(runs, i)).collect();
    for (run, end) in runs.iter_mut().zip(ends) {
        run.hardware = run_hardware(&inputs, run, end);
    }
}

/// Where a run's period ends: its end, else the next start of the same launch, else open.
fn period_end(runs: &[Run], index: usize) -> Option<UnixTime> {
    let run = runs.get(index)?;
    if run.running {
        return None;
    }
    run.end.as_ref().and_then(|e| e.at).or_else(|| {
        runs.iter()
            .skip(index + 1)
            .find(|r| r.launch_index == run.launch_index)
            .and_then(|r| r.start.at)
    })
}

fn within(t: Option<UnixTime>, from: UnixTime, to: Option<UnixTime>) -> bool {
    t.is_some_and(|t| t >= from && to.is_none_or(|e| t < e))
}

fn run_hardware(inputs: &Inputs<'_>, run: &Run, end: Option<UnixTime>) -> Option<RunHardware> {
    let start = run.start.at?;
    let during: Vec<KernelFault> = (inputs.state.faults.iter())
        .filter(|f| within(f.time, start, end))
        .cloned()
        .collect();
    let before: Vec<KernelFault> = (inputs.state.faults.iter())
        .filter(|f| within(f.time, start - RESTART_WINDOW_S, Some(start)))
        .cloned()
        .collect();
    let mut findings: Vec<&Finding> = Vec::new();
    if run.running {
        findings.extend(inputs.now.iter());
    }
    let (before_found, during_found) = (faults(&before, &[start]), faults(&during, &[]));
    findings.extend(before_found.iter().chain(during_found.iter()));
    let hardware = RunHardware {
        power_limits: inputs
            .gpus
            .iter()
            .flat_map(|g| power_limits(g, &inputs.commands, start, end, run.running))
            .collect(),
        throttle_reasons: if run.running {
            throttle_reasons(inputs.gpus)
        } else {
            Vec::new()
        },
        faults: during_found.iter().map(|f| f.evidence.clone()).collect(),
        faults_before_start: before_found.iter().map(|f| f.evidence.clone()).collect(),
        findings: findings
            .into_iter()
            .map(|f| RunHardwareFinding {
                id: f.id.to_string(),
                key: f.key.clone(),
                evidence: f.evidence.clone(),
            })
            .collect(),
    };
    (hardware != RunHardware::default()).then_some(hardware)
}

fn throttle_reasons(gpus: &[GpuHealth]) -> Vec<String> {
    gpus.iter()
        .flat_map(|g| {
            let name = super::gpu_name(g);
            g.event_reasons
                .iter()
                .filter(|r| !BENIGN_REASONS.contains(&r.as_str()))
                .map(move |r| format!("{name}: {r}"))
        })
        .collect()
}

/// The limits of one GPU during a run: the one in effect at its start, then each set while it
/// ran, then (running) the enforced limit now where it disagrees with the last.
fn power_limits(
    g: &GpuHealth,
    commands: &[PowerLimitSet],
    start: UnixTime,
    end: Option<UnixTime>,
    running: bool,
) -> Vec<RunPowerLimit> {
    let applies = |c: &&PowerLimitSet| c.gpu.is_none() || c.gpu == g.index;
    let from = |c: &PowerLimitSet| RunPowerLimit {
        gpu: g.index,
        watts: c.watts,
        since: c.time,
        source: format!("history: {}", c.command),
    };
    let at_start = commands
        .iter()
        .filter(applies)
        .rfind(|c| c.time.is_some_and(|t| t <= start));
    let during: Vec<RunPowerLimit> = commands
        .iter()
        .filter(applies)
        .filter(|c| c.time.is_some_and(|t| t > start) && within(c.time, start, end))
        .map(from)
        .collect();
    let now = limit_of(g).filter(|_| running).map(|w| RunPowerLimit {
        gpu: g.index,
        watts: w,
        since: None,
        source: String::from("nvidia-smi now (enforced limit)"),
    });
    let mut out: Vec<RunPowerLimit> = match at_start {
        Some(c) => vec![from(c)],
        None if during.is_empty() && now.is_some() => Vec::new(),
        None => g
            .default_power_limit_w
            .map(|w| RunPowerLimit {
                gpu: g.index,
                watts: w,
                since: None,
                source: String::from(
                    "default limit (no nvidia-smi -pl before this run in the histories read)",
                ),
            })
            .into_iter()
            .collect(),
    };
    out.extend(during);
    if let Some(now) = now
        && out
            .last()
            .is_none_or(|l| (l.watts - now.watts).abs() >= 1.0)
    {
        out.push(now);
    }
    out
}

/// The hardware causes of `after` against `before`: its findings that `before` did not have,
/// and power limits that differ (where no throttling finding already names the change).
pub fn run_causes(before: &Run, after: &Run) -> Vec<Change> {
    let Some(a) = &after.hardware else {
        return Vec::new();
    };
    let b = before.hardware.as_ref();
    let had = |f: &RunHardwareFinding| {
        b.is_some_and(|b| {
            b.findings
                .iter()
                .any(|x| x.key == f.key && x.evidence == f.evidence)
        })
    };
    let mut out: Vec<Change> = (a.findings.iter())
        .filter(|f| !had(f))
        .filter_map(|f| {
            let mut change = finding_change(&f.id, f.key.clone(), &f.evidence)?;
            if after.running && !before.running && ChangeKey::area_of(&f.key) != KeyArea::Kernel {
                change.note = Some(String::from(
                    "read now, while this run runs; not known for the earlier run",
                ));
            }
            Some(change)
        })
        .collect();
    out.extend(limit_changes(b, a));
    out
}

fn limit_changes(before: Option<&RunHardware>, after: &RunHardware) -> Vec<Change> {
    let Some(before) = before else {
        return Vec::new();
    };
    let mut gpus: Vec<Option<u32>> = after.power_limits.iter().map(|l| l.gpu).collect();
    gpus.dedup();
    let mut out = Vec::new();
    for gpu in gpus {
        let first = before.power_limits.iter().find(|l| l.gpu == gpu);
        let last = after.power_limits.iter().rfind(|l| l.gpu == gpu);
        let (Some(first), Some(last)) = (first, last) else {
            continue;
        };
        let key = match gpu {
            Some(i) => format!("gpu:{i}"),
            None => String::from("gpu:*"),
        };
        let throttled = after
            .findings
            .iter()
            .any(|f| f.key == format!("{key}.power_cap"));
        if (first.watts - last.watts).abs() < 1.0 || throttled {
            continue;
        }
        let (bv, av) = (
            Value::from(first.watts.round() as i64),
            Value::from(last.watts.round() as i64),
        );
        let subject = Subject::new(Area::Hardware, "power-limit", ChangeKind::Changed)
            .values(Some(&bv), Some(&av));
        if let Some((mut change, false)) = change_for(&subject, format!("{key}.power_limit")) {
            change.note = Some(format!("{} -> {}", first.source, last.source));
            out.push(change);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use probe_model::{
        FaultKind, HardwareState, HistoryEntry, HistoryFile, Impact, RunBound, Snapshot,
    };

    use super::*;

    const NOW: UnixTime = 1_796_094_764;

    fn snapshot() -> Snapshot {
        Snapshot {
            hardware: HardwareState {
                gpus: vec![GpuHealth {
                    index: Some(1),
                    uuid: Some("GPU-1".into()),
                    event_reasons: vec!["sw_power_cap".into(), "gpu_idle".into()],
                    enforced_power_limit_w: Some(200.0),
                    default_power_limit_w: Some(700.0),
                    ..GpuHealth::default()
                }],
                faults: vec![KernelFault {
                    time: Some(NOW - 240),
                    kind: FaultKind::Xid,
                    code: Some(79),
                    pci_bus_id: Some("0000:17:00.0".into()),
                    meaning: Some("GPU has fallen off the bus".into()),
                    ..KernelFault::default()
                }],
                ..HardwareState::default()
            },
            histories: vec![HistoryFile {
                entries: vec![HistoryEntry {
                    time: Some(NOW - 4 * 86_400),
                    command: "nvidia-smi -i 1 -pl 200".into(),
                    ..HistoryEntry::default()
                }],
                ..HistoryFile::default()
            }],
            ..Snapshot::default()
        }
    }

    fn run(start: UnixTime, running: bool) -> Run {
        Run {
            running,
            start: RunBound {
                at: Some(start),
                ..RunBound::default()
            },
            end: (!running).then(|| RunBound {
                at: Some(NOW),
                ..RunBound::default()
            }),
            ..Run::default()
        }
    }

    #[test]
    fn runs_get_their_period_and_causes() {
        let mut runs = vec![run(NOW - 6 * 86_400, false), run(NOW, true)];
        annotate_runs(&snapshot(), &mut runs);
        let (old, new) = (
            runs[0].hardware.clone().unwrap(),
            runs[1].hardware.clone().unwrap(),
        );
        // (what, got, expected)
        let limits = |h: &RunHardware| -> Vec<(f64, String)> {
            h.power_limits
                .iter()
                .map(|l| (l.watts, l.source.clone()))
                .collect()
        };
        assert_eq!(
            limits(&old),
            [
                (
                    700.0,
                    "default limit (no nvidia-smi -pl before this run in the histories read)"
                        .to_string()
                ),
                (200.0, "history: nvidia-smi -i 1 -pl 200".to_string()),
            ]
        );
        assert_eq!(
            limits(&new),
            [(200.0, "history: nvidia-smi -i 1 -pl 200".to_string())]
        );
        assert_eq!(new.throttle_reasons, ["GPU 1: sw_power_cap"]);
        assert!(old.throttle_reasons.is_empty(), "not read for a past run");
        assert_eq!(old.faults.len(), 1, "{old:#?}");
        assert!(old.faults_before_start.is_empty());
        assert_eq!(
            new.faults_before_start,
            [
                "Xid 79 on 0000:17:00.0 at 03:08, 4 minutes before the restart (GPU has fallen off the bus)"
            ]
        );
        let causes = run_causes(&runs[0], &runs[1]);
        let evidence: Vec<(&str, Impact)> = causes
            .iter()
            .filter_map(|c| Some((c.after.as_ref()?.as_str()?, c.impact)))
            .collect();
        assert!(
            evidence.iter().any(|(e, i)| e.starts_with(
                "GPU 1 throttled by SW power cap: power limit 700 -> 200 W since 2026-11-27"
            ) && *i == Impact::High),
            "{evidence:#?}"
        );
        assert!(
            evidence
                .iter()
                .any(|(e, _)| e.contains("4 minutes before the restart")),
            "{evidence:#?}"
        );
        // The throttling finding names the limit change: no second line for it.
        assert!(!causes.iter().any(|c| c.key.ends_with(".power_limit")));
        // Nothing differs between a run and itself.
        assert!(run_causes(&runs[1], &runs[1]).is_empty());
    }

    #[test]
    fn a_lowered_limit_without_throttling_is_a_cause() {
        let mut s = snapshot();
        s.hardware.gpus[0].event_reasons.clear();
        let mut runs = vec![run(NOW - 6 * 86_400, false), run(NOW, true)];
        annotate_runs(&s, &mut runs);
        let causes = run_causes(&runs[0], &runs[1]);
        let limit = causes
            .iter()
            .find(|c| c.key == "gpu:1.power_limit")
            .unwrap_or_else(|| panic!("{causes:#?}"));
        assert_eq!(limit.before, Some(Value::from(700)));
        assert_eq!(limit.after, Some(Value::from(200)));
        assert_eq!(limit.impact, Impact::Medium);
    }
}
