//! The GPUs of two snapshots: status, driver and CUDA, count, each GPU's fields (by index), and
//! the memory other processes hold.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use probe_model::{ChangeKind, ComputeApp, Gpu, GpuState, Snapshot};
use serde_json::Value;

use super::collector::Collector;
use crate::impact::{Area, Subject};
use probe_launch::catalog::values_equal;

/// Other processes' GPU memory must move by this much to count as a change.
const OTHER_GPU_MEMORY_THRESHOLD_MIB: u64 = 1024;

type GpuField = (&'static str, fn(&Gpu) -> Option<Value>);

const GPU_FIELDS: [GpuField; 21] = [
    ("name", |g| g.name.clone().map(Value::from)),
    ("memory_total_mib", |g| g.memory_total_mib.map(Value::from)),
    ("power_limit_w", |g| g.power_limit_w.map(Value::from)),
    ("power_max_limit_w", |g| {
        g.power_max_limit_w.map(Value::from)
    }),
    ("clocks_max_sm_mhz", |g| {
        g.clocks_max_sm_mhz.map(Value::from)
    }),
    ("clocks_max_mem_mhz", |g| {
        g.clocks_max_mem_mhz.map(Value::from)
    }),
    ("persistence_mode", |g| {
        g.persistence_mode.clone().map(Value::from)
    }),
    ("ecc_mode", |g| g.ecc_mode.clone().map(Value::from)),
    ("mig_mode", |g| g.mig_mode.clone().map(Value::from)),
    ("compute_mode", |g| g.compute_mode.clone().map(Value::from)),
    ("pcie_link_width", |g| g.pcie_link_width.map(Value::from)),
    ("vbios_version", |g| {
        g.vbios_version.clone().map(Value::from)
    }),
    ("memory_used_mib", |g| g.memory_used_mib.map(Value::from)),
    ("utilization_gpu_pct", |g| {
        g.utilization_gpu_pct.map(Value::from)
    }),
    ("utilization_memory_pct", |g| {
        g.utilization_memory_pct.map(Value::from)
    }),
    ("temperature_c", |g| g.temperature_c.map(Value::from)),
    ("power_draw_w", |g| g.power_draw_w.map(Value::from)),
    ("clocks_sm_mhz", |g| g.clocks_sm_mhz.map(Value::from)),
    ("clocks_mem_mhz", |g| g.clocks_mem_mhz.map(Value::from)),
    ("pstate", |g| g.pstate.clone().map(Value::from)),
    ("pcie_link_gen", |g| g.pcie_link_gen.map(Value::from)),
];

fn gpu_status_name(status: probe_model::GpuStatus) -> &'static str {
    match status {
        probe_model::GpuStatus::Present => "present",
        probe_model::GpuStatus::NoNvidiaSmi => "no nvidia-smi",
        probe_model::GpuStatus::NoDevices => "no devices",
        probe_model::GpuStatus::DriverError => "driver error",
    }
}

pub(super) fn compare_gpus(before: &Snapshot, after: &Snapshot, collector: &mut Collector) {
    let (before_gpu, after_gpu) = (&before.gpu, &after.gpu);
    compare_status(before_gpu, after_gpu, collector);
    compare_driver(before_gpu, after_gpu, collector);
    compare_count(before_gpu, after_gpu, collector);
    compare_fields(&gpu_pairs(before_gpu, after_gpu), collector);
    compare_other_gpu_processes(before, after, collector);
}

fn compare_status(before_gpu: &GpuState, after_gpu: &GpuState, collector: &mut Collector) {
    if before_gpu.status != after_gpu.status {
        let before_value = Value::from(gpu_status_name(before_gpu.status));
        let after_value = Value::from(gpu_status_name(after_gpu.status));
        let subject = Subject::new(Area::Gpu, "status", ChangeKind::Changed)
            .values(Some(&before_value), Some(&after_value));
        collector.push(
            &subject,
            String::from("gpu.status"),
            after_gpu.message.clone(),
        );
    }
}

/// The driver and CUDA versions.
fn compare_driver(before_gpu: &GpuState, after_gpu: &GpuState, collector: &mut Collector) {
    for (name, before_value, after_value) in [
        (
            "driver_version",
            &before_gpu.driver_version,
            &after_gpu.driver_version,
        ),
        (
            "cuda_version",
            &before_gpu.cuda_version,
            &after_gpu.cuda_version,
        ),
    ] {
        if let (Some(a), Some(b)) = (before_value, after_value)
            && a.trim() != b.trim()
        {
            let before_json = Value::from(a.trim());
            let after_json = Value::from(b.trim());
            let subject = Subject::new(Area::Gpu, name, ChangeKind::Changed)
                .values(Some(&before_json), Some(&after_json));
            collector.push(&subject, format!("gpu.{name}"), None);
        }
    }
}

/// How many GPUs, when both sides saw them.
fn compare_count(before_gpu: &GpuState, after_gpu: &GpuState, collector: &mut Collector) {
    let (before_count, after_count) = (before_gpu.gpus.len(), after_gpu.gpus.len());
    let both_present = before_gpu.status == probe_model::GpuStatus::Present
        && after_gpu.status == probe_model::GpuStatus::Present;
    if before_count != after_count && both_present {
        let before_value = Value::from(before_count);
        let after_value = Value::from(after_count);
        let subject = Subject::new(Area::Gpu, "count", ChangeKind::Changed)
            .values(Some(&before_value), Some(&after_value));
        collector.push(&subject, String::from("gpu.count"), None);
    }
}

/// The GPUs of both sides paired by index (by position when the index is missing), as
/// (index, before, after).
fn gpu_pairs<'a>(
    before_gpu: &'a GpuState,
    after_gpu: &'a GpuState,
) -> Vec<(u32, &'a Gpu, &'a Gpu)> {
    let index_of = |position: usize, gpu: &Gpu| gpu.index.unwrap_or(position as u32);
    let before_by_index: BTreeMap<u32, &Gpu> = before_gpu
        .gpus
        .iter()
        .enumerate()
        .map(|(position, gpu)| (index_of(position, gpu), gpu))
        .collect();
    after_gpu
        .gpus
        .iter()
        .enumerate()
        .filter_map(|(position, gpu)| {
            let index = index_of(position, gpu);
            before_by_index
                .get(&index)
                .map(|before| (index, *before, gpu))
        })
        .collect()
}

/// Each field of [`GPU_FIELDS`] over the paired GPUs: one `gpu:*` change when every GPU moved
/// the same way, else one change per GPU.
fn compare_fields(pairs: &[(u32, &Gpu, &Gpu)], collector: &mut Collector) {
    for (field, read) in GPU_FIELDS {
        let differing: Vec<(u32, Value, Value)> = pairs
            .iter()
            .filter_map(|(index, before, after)| match (read(before), read(after)) {
                (Some(a), Some(b)) if !values_equal(&a, &b, None) => Some((*index, a, b)),
                _ => None,
            })
            .collect();
        let Some((_, first_before, first_after)) = differing.first() else {
            continue;
        };
        let uniform = differing.len() == pairs.len()
            && pairs.len() > 1
            && differing
                .iter()
                .all(|(_, a, b)| a == first_before && b == first_after);
        if uniform {
            let subject = Subject::new(Area::Gpu, field, ChangeKind::Changed)
                .values(Some(first_before), Some(first_after));
            let note = format!("all {} GPUs", pairs.len());
            collector.push(&subject, format!("gpu:*.{field}"), Some(note));
        } else {
            for (index, a, b) in &differing {
                let subject =
                    Subject::new(Area::Gpu, field, ChangeKind::Changed).values(Some(a), Some(b));
                collector.push(&subject, format!("gpu:{index}.{field}"), None);
            }
        }
    }
}

/// GPU memory held by compute processes that are not the model servers of the snapshot.
fn other_processes(snapshot: &Snapshot) -> (u64, BTreeSet<String>) {
    let server_pids: HashSet<u32> = snapshot
        .processes
        .iter()
        .map(|process| process.pid)
        .collect();
    let others: Vec<&ComputeApp> = snapshot
        .gpu
        .compute_apps
        .iter()
        .filter(|app| app.pid.is_some_and(|pid| !server_pids.contains(&pid)))
        .collect();
    let total = others.iter().filter_map(|app| app.used_memory_mib).sum();
    let names = others
        .iter()
        .map(|app| {
            app.process_name
                .clone()
                .unwrap_or_else(|| String::from("?"))
        })
        .collect();
    (total, names)
}

fn compare_other_gpu_processes(before: &Snapshot, after: &Snapshot, collector: &mut Collector) {
    if before.gpu.status != probe_model::GpuStatus::Present
        || after.gpu.status != probe_model::GpuStatus::Present
    {
        return;
    }
    let (before_total, _) = other_processes(before);
    let (after_total, after_names) = other_processes(after);
    if before_total.abs_diff(after_total) < OTHER_GPU_MEMORY_THRESHOLD_MIB {
        return;
    }
    let before_value = Value::from(before_total);
    let after_value = Value::from(after_total);
    let subject = Subject::new(Area::Gpu, "other_processes_mib", ChangeKind::Changed)
        .values(Some(&before_value), Some(&after_value));
    let note = (!after_names.is_empty()).then(|| {
        let names: Vec<&str> = after_names.iter().map(String::as_str).collect();
        format!("MiB held by other processes; now: {}", names.join(", "))
    });
    collector.push(&subject, String::from("gpu.other_processes_mib"), note);
}
