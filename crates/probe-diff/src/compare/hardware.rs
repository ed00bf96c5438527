//! Two snapshots' hardware lane compared: per GPU (paired by UUID, else index) the enforced
//! power limit, ECC error counts, remapped rows and retired pages, the active throttle reasons,
//! persistence / MIG / compute mode (each only where the basic GPU query compared in
//! `snapshot/gpus.rs` did not already carry it); and the hardware findings the later snapshot has
//! that the earlier did not (a PCIe link below its max, other users' processes, kernel faults,
//! libraries not from the wheel), each with its evidence. Rules: area `hardware` of
//! `configs/impact.toml`.

use std::collections::BTreeSet;

use probe_model::{Change, ChangeKind, Gpu, GpuHealth, KernelFault, LaunchConfig, Snapshot};
use serde_json::Value;

use crate::hardware::{Finding, attribute_libs, faults, gpu_key, state_findings};
use crate::impact::{Area, Subject, change_for};

type HealthField = (&'static str, fn(&GpuHealth) -> Option<Value>);
/// A health field with the test whether the basic GPU query carries it.
type ModeField = (
    &'static str,
    fn(&GpuHealth) -> Option<Value>,
    fn(&Gpu) -> bool,
);

/// Fields of the health query compared as values: (rule name, reader).
const FIELDS: [HealthField; 7] = [
    ("ecc-uncorrected-count", |g| {
        sum(g.ecc_volatile_uncorrected, g.ecc_aggregate_uncorrected)
    }),
    ("ecc-corrected-count", |g| {
        sum(g.ecc_volatile_corrected, g.ecc_aggregate_corrected)
    }),
    ("retired_pages_pending", |g| text(&g.retired_pages_pending)),
    ("remapped_rows_pending", |g| text(&g.remapped_rows_pending)),
    ("remapped_rows_failure", |g| text(&g.remapped_rows_failure)),
    ("pcie_gen_max", |g| g.pcie_gen_max.map(Value::from)),
    ("pcie_width_max", |g| g.pcie_width_max.map(Value::from)),
];

/// Fields compared only when the basic GPU query of either snapshot lacks them.
const MODES: [ModeField; 4] = [
    (
        "power-limit",
        |g| {
            g.enforced_power_limit_w
                .or(g.power_limit_w)
                .map(Value::from)
        },
        |g| g.power_limit_w.is_some(),
    ),
    (
        "persistence_mode",
        |g| text(&g.persistence_mode),
        |g| g.persistence_mode.is_some(),
    ),
    ("mig_mode", |g| text(&g.mig_mode), |g| g.mig_mode.is_some()),
    (
        "compute_mode",
        |g| text(&g.compute_mode),
        |g| g.compute_mode.is_some(),
    ),
];

fn sum(volatile: Option<u64>, aggregate: Option<u64>) -> Option<Value> {
    aggregate.or(volatile).map(Value::from)
}

fn text(v: &Option<String>) -> Option<Value> {
    v.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "[N/A]")
        .map(Value::from)
}

fn same_gpu(a: &GpuHealth, b: &GpuHealth) -> bool {
    match (&a.uuid, &b.uuid) {
        (Some(x), Some(y)) => x == y,
        _ => a.index.is_some() && a.index == b.index,
    }
}

/// The hardware changes from `before` to `after`, each with whether it is volatile.
pub(super) fn compare(
    before: &Snapshot,
    after: &Snapshot,
    after_launches: &[LaunchConfig],
) -> Vec<(Change, bool)> {
    let mut out = Vec::new();
    for a in &after.hardware.gpus {
        let Some(b) = before.hardware.gpus.iter().find(|b| same_gpu(b, a)) else {
            continue;
        };
        fields(before, after, b, a, &mut out);
        reasons(b, a, &mut out);
    }
    out.extend(new_findings(before, after, after_launches));
    out
}

fn push(out: &mut Vec<(Change, bool)>, subject: &Subject<'_>, key: String) {
    out.extend(change_for(subject, key));
}

fn basic<'a>(snapshot: &'a Snapshot, g: &GpuHealth) -> Option<&'a Gpu> {
    snapshot.gpu.gpus.iter().find(|x| {
        (x.uuid.is_some() && x.uuid == g.uuid) || (x.index.is_some() && x.index == g.index)
    })
}

fn fields(
    before: &Snapshot,
    after: &Snapshot,
    b: &GpuHealth,
    a: &GpuHealth,
    out: &mut Vec<(Change, bool)>,
) {
    let covered = |has: fn(&Gpu) -> bool| {
        basic(before, b).is_some_and(has) && basic(after, a).is_some_and(has)
    };
    let modes = MODES
        .iter()
        .filter(|(_, _, has)| !covered(*has))
        .map(|(name, read, _)| (*name, *read));
    for (name, read) in FIELDS.iter().copied().chain(modes) {
        let (Some(bv), Some(av)) = (read(b), read(a)) else {
            continue;
        };
        if bv == av {
            continue;
        }
        let subject =
            Subject::new(Area::Hardware, name, ChangeKind::Changed).values(Some(&bv), Some(&av));
        push(out, &subject, gpu_key(a, name));
    }
}

/// Throttle reasons that became active (`throttle:sw_power_cap`, added) or cleared.
fn reasons(b: &GpuHealth, a: &GpuHealth, out: &mut Vec<(Change, bool)>) {
    let (bs, as_): (BTreeSet<&str>, BTreeSet<&str>) = (
        b.event_reasons.iter().map(String::as_str).collect(),
        a.event_reasons.iter().map(String::as_str).collect(),
    );
    let added = as_.difference(&bs).map(|r| (*r, ChangeKind::Added));
    let removed = bs.difference(&as_).map(|r| (*r, ChangeKind::Removed));
    for (reason, kind) in added.chain(removed).collect::<Vec<_>>() {
        let name = format!("throttle:{reason}");
        let value = Value::from(reason);
        let (bv, av) = match kind {
            ChangeKind::Added => (None, Some(&value)),
            _ => (Some(&value), None),
        };
        let subject = Subject::new(Area::Hardware, &name, kind).values(bv, av);
        push(out, &subject, gpu_key(a, &name));
    }
}

/// Start times of the servers running in a snapshot: a fault before one is "before the restart".
fn starts(launches: &[LaunchConfig]) -> Vec<i64> {
    launches
        .iter()
        .filter(|l| l.source.running)
        .filter_map(|l| l.source.time.at.or(l.source.time.not_before))
        .collect()
}

/// Findings of `after` whose key `before` did not have; kernel faults only those not already in
/// `before`'s log.
fn new_findings(
    before: &Snapshot,
    after: &Snapshot,
    after_launches: &[LaunchConfig],
) -> Vec<(Change, bool)> {
    let state = |s: &Snapshot| {
        let mut state = s.hardware.clone();
        attribute_libs(&mut state.loaded_libs, s);
        state
    };
    let (bs, as_) = (state(before), state(after));
    let had: BTreeSet<String> = state_findings(before, None, &bs)
        .into_iter()
        .map(|f| f.key)
        .collect();
    let seen = |f: &KernelFault| {
        bs.faults
            .iter()
            .any(|x| x.time == f.time && x.line == f.line)
    };
    let fresh: Vec<KernelFault> = as_.faults.iter().filter(|f| !seen(f)).cloned().collect();
    let mut found: Vec<Finding> = state_findings(after, Some(before), &as_)
        .into_iter()
        .filter(|f| !had.contains(&f.key))
        .collect();
    found.extend(faults(&fresh, &starts(after_launches)));
    found
        .iter()
        .filter_map(Finding::change)
        .map(|c| (c, false))
        .collect()
}

#[cfg(test)]
mod tests {
    use probe_model::{FaultKind, GpuProcess, HardwareState, Impact};

    use super::*;

    fn gpu(limit: f64, reasons: &[&str], remap: &str, ecc: u64) -> GpuHealth {
        GpuHealth {
            index: Some(0),
            uuid: Some("GPU-0".into()),
            enforced_power_limit_w: Some(limit),
            event_reasons: reasons.iter().map(|r| r.to_string()).collect(),
            remapped_rows_pending: Some(remap.into()),
            ecc_aggregate_uncorrected: Some(ecc),
            persistence_mode: Some("Enabled".into()),
            pcie_width_current: Some(16),
            pcie_width_max: Some(16),
            ..GpuHealth::default()
        }
    }

    fn snapshot(g: GpuHealth) -> Snapshot {
        Snapshot {
            hardware: HardwareState {
                gpus: vec![g],
                ..HardwareState::default()
            },
            ..Snapshot::default()
        }
    }

    #[test]
    fn hardware_state_compared() {
        let before = snapshot(gpu(700.0, &["gpu_idle"], "No", 0));
        let mut after = snapshot(gpu(300.0, &["sw_power_cap"], "Yes", 2));
        after.hardware.gpus[0].pcie_width_current = Some(4);
        after.hardware.gpus[0].persistence_mode = Some("Disabled".into());
        after.hardware.processes.push(GpuProcess {
            gpu_uuid: Some("GPU-0".into()),
            pid: Some(999),
            process_name: Some("python3".into()),
            used_memory_mib: Some(20 * 1024),
            user: Some("ana".into()),
            ..GpuProcess::default()
        });
        after.hardware.faults.push(KernelFault {
            time: Some(100),
            kind: FaultKind::Xid,
            code: Some(79),
            pci_bus_id: Some("0000:17:00.0".into()),
            line: "NVRM: Xid (PCI:0000:17:00): 79".into(),
            ..KernelFault::default()
        });
        let changes = compare(&before, &after, &[]);
        let get = |key: &str| {
            changes
                .iter()
                .find(|(c, _)| c.key == key)
                .map(|(c, v)| (c.impact, *v))
        };
        // (key, impact, volatile)
        let cases = [
            ("gpu:0.power-limit", Some((Impact::Medium, false))),
            ("gpu:0.ecc-uncorrected-count", Some((Impact::High, false))),
            ("gpu:0.remapped_rows_pending", Some((Impact::High, false))),
            ("gpu:0.throttle:sw_power_cap", Some((Impact::High, false))),
            ("gpu:0.throttle:gpu_idle", Some((Impact::None, true))),
            ("gpu:0.persistence_mode", Some((Impact::Medium, false))),
            ("gpu:0.pcie_link", Some((Impact::Medium, false))),
            ("gpu-process:999", Some((Impact::High, false))),
            (
                "kernel:xid_79_on_0000:17:00.0",
                Some((Impact::Medium, false)),
            ),
            ("gpu:0.pcie_width_max", None),
        ];
        for (key, want) in cases {
            assert_eq!(get(key), want, "{key}: {changes:#?}");
        }
        // The same snapshot twice: nothing.
        assert!(compare(&after, &after, &[]).is_empty());
    }
}
