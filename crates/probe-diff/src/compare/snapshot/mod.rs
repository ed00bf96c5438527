//! Two snapshots compared: one host over time, or two hosts side by side.
//!
//! Launches are matched by what identifies a server (its systemd unit, else engine and port,
//! else engine and model), never by PID. Everything else is compared field by field; volatile
//! fields (PIDs, uptime, utilisation, temperatures, current clocks) are kept apart. One room per
//! area: `servers` (launches matched and compared), `packages`, `gpus`, `model_config`,
//! `metrics`, `host`, `units` (unit files and containers); `collector` gathers their changes.

mod collector;
mod gpus;
mod host;
mod metrics;
mod model_config;
mod packages;
mod servers;
mod units;

use probe_model::KeyArea;
use probe_model::{
    Change, Gpu, Impact, LaunchConfig, SCHEMA_VERSION, Snapshot, SnapshotDiff, SnapshotRef,
};
use serde_json::Value;

use super::options::CompareOptions;
use crate::analysis::Analysis;
use crate::ranking::rank;
use collector::Collector;
use gpus::compare_gpus;
use host::compare_host;
use metrics::compare_metrics;
use model_config::compare_model_configs;
use packages::compare_packages;
use servers::{compare_servers, matched_servers};
use units::{compare_containers, compare_units};

/// What two snapshots' areas compared give, before a conclusion is drawn from it.
pub(crate) struct Areas<'a> {
    /// The comparison, its changes not yet in it.
    pub(crate) diff: SnapshotDiff,
    /// Every change that is not volatile (volatile ones too with `include_volatile`), ranked.
    pub(crate) changes: Vec<Change>,
    /// The first server both snapshots run, as (before, after).
    pub(crate) first: Option<(&'a LaunchConfig, &'a LaunchConfig)>,
}

/// Compares the areas of two snapshots already read (servers, packages, GPUs, models,
/// metrics, host, units, containers, hardware, the servers' readings and their runs): their
/// launches, timelines and runs are used as they are, never rebuilt.
pub(crate) fn compare_areas<'a>(
    before: &Snapshot,
    before_analysis: &'a Analysis,
    after: &Snapshot,
    after_analysis: &'a Analysis,
    options: &CompareOptions,
) -> Areas<'a> {
    let before_launches = before_analysis.launches.as_slice();
    let after_launches = after_analysis.launches.as_slice();
    let mut diff = SnapshotDiff {
        schema_version: SCHEMA_VERSION,
        before: snapshot_ref(before),
        after: snapshot_ref(after),
        ..SnapshotDiff::default()
    };
    let mut collector = Collector::default();

    compare_servers(
        before,
        before_launches,
        after,
        after_launches,
        &mut diff,
        &mut collector,
    );
    compare_packages(before, after, &mut collector);
    compare_gpus(before, after, &mut collector);
    compare_model_configs(&before.models, &after.models, &mut collector);
    diff.metrics = compare_metrics(before, after, &mut collector);
    compare_host(before, after, &mut collector);
    diff.texts = compare_units(before, after, &mut collector);
    compare_containers(before, after, &mut collector);
    (super::hardware::compare(before, after, after_launches).into_iter())
        .for_each(|(c, v)| collector.add(c, v));
    (super::server::compare(before, after, &mut diff.metrics).into_iter())
        .for_each(|(c, v)| collector.add(c, v));
    let matched = matched_servers(before, before_launches, after, after_launches);
    let sides = super::shared_runs::Sides {
        before: (before, before_analysis),
        after: (after, after_analysis),
    };
    let runs = super::shared_runs::run_changes(sides, &matched, &collector.changes);
    collector.changes.extend(runs);

    // Identity (host names, PIDs, seeds, ...) is in the header, never a change.
    let (identity, changes): (Vec<Change>, Vec<Change>) =
        drop_engine_version_echoes(collector.changes)
            .into_iter()
            .partition(|c| probe_model::identity::is_identity(&c.key));
    let mut changes = changes;
    let (mut identity, mut volatile): (Vec<Change>, Vec<Change>) = (identity, Vec::new());
    for change in collector.volatile {
        if probe_model::identity::is_identity(&change.key) {
            identity.push(change);
        } else {
            volatile.push(change);
        }
    }
    if options.include_volatile {
        changes.append(&mut volatile);
    }
    // Shown with the volatile differences, never among the changes, even when those are.
    volatile.extend(identity);
    rank(&mut changes);
    volatile.sort_by(|left, right| left.key.cmp(&right.key));
    diff.volatile = volatile;
    Areas {
        diff,
        changes,
        first: matched.first().map(|m| (m.0, m.1)),
    }
}

/// A launch's engine version usually comes from its interpreter's packages; when the package
/// change says the same (same versions), the launch-level `engine_version` change is dropped.
fn drop_engine_version_echoes(changes: Vec<Change>) -> Vec<Change> {
    let package_versions: Vec<(Option<Value>, Option<Value>)> = changes
        .iter()
        .filter(|change| change.key_area() == KeyArea::Package)
        .map(|change| (change.before.clone(), change.after.clone()))
        .collect();
    changes
        .into_iter()
        .filter(|change| {
            let is_engine_version = change.key_area() == KeyArea::EngineVersion;
            !(is_engine_version
                && package_versions
                    .iter()
                    .any(|(before, after)| *before == change.before && *after == change.after))
        })
        .collect()
}

/// The changes that are drift: a change of configuration, versions, driver, model, hardware
/// state or units (anything ranked above `none` that is not a performance number). A metric
/// that moved (a log mean, a server's lifetime throughput) is a symptom, not drift: it is
/// reported apart ([`performance_moves`]), and a young process's lifetime average moves on its
/// own between two collections minutes apart.
pub fn drift(diff: &SnapshotDiff) -> impl Iterator<Item = &Change> {
    diff.changes
        .iter()
        .filter(|change| change.impact != Impact::None && !is_performance(change))
}

/// Whether a snapshot diff holds drift ([`drift`]) or a server that switched engines.
pub fn has_drift(diff: &SnapshotDiff) -> bool {
    drift(diff).next().is_some()
        || diff
            .launches
            .iter()
            .any(|launch| launch.engine_switch.is_some())
}

/// The performance numbers that moved (metric means, lifetime values), ranked as the diff ranks
/// them: symptoms to hold against causes, never drift on their own.
pub fn performance_moves(diff: &SnapshotDiff) -> impl Iterator<Item = &Change> {
    diff.changes
        .iter()
        .filter(|change| change.impact != Impact::None && is_performance(change))
}

fn is_performance(change: &Change) -> bool {
    change.category == probe_model::Category::Metrics
}

/// Whether a snapshot diff holds anything an operator should look at (`probe diff` exits 1).
pub fn is_meaningful(diff: &SnapshotDiff) -> bool {
    diff.changes
        .iter()
        .any(|change| change.impact != Impact::None)
        || diff
            .launches
            .iter()
            .any(|launch| launch.engine_switch.is_some())
}

fn snapshot_ref(snapshot: &Snapshot) -> SnapshotRef {
    SnapshotRef {
        id: snapshot.id.clone(),
        host: snapshot
            .host
            .hostname
            .clone()
            .unwrap_or_else(|| snapshot.target.clone()),
        collected_at: snapshot.collected_at,
        machine_id: snapshot.host.machine_id.clone(),
        address: snapshot.address.clone(),
        boot_time: snapshot.host.boot_time,
        gpus: gpu_summary(&snapshot.gpu.gpus),
        gpu_uuids: snapshot
            .gpu
            .gpus
            .iter()
            .filter_map(|g| g.uuid.clone())
            .collect(),
    }
}

/// `4 x NVIDIA H100 80GB HBM3`, `1 x A, 1 x B`, or empty without GPUs.
fn gpu_summary(gpus: &[Gpu]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for gpu in gpus {
        let name = gpu.name.clone().unwrap_or_else(|| String::from("GPU"));
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => counts.push((name, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(n, c)| format!("{c} x {n}")).collect();
    parts.join(", ")
}
