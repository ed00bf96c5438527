//! Two snapshots compared: one host over time, or two hosts side by side.
//!
//! Launches are matched by what identifies a server (its systemd unit, else engine and port,
//! else engine and model), never by PID. Everything else is compared field by field; volatile
//! fields (PIDs, uptime, utilisation, temperatures, current clocks) are kept apart.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use probe_model::KeyArea;
use probe_model::{
    Change, ChangeKind, ComputeApp, Gpu, Impact, LaunchConfig, MetricComparison, MetricSummary,
    ModelConfig, PythonEnv, SCHEMA_VERSION, Snapshot, SnapshotDiff, SnapshotRef, SourceKind,
};
use serde_json::Value;

use super::launch::compare_launches_split;
use super::options::CompareOptions;
use super::text::unified_diff;
use crate::analysis::Analysis;
use crate::impact::{Area, Subject, change_for, compare_versions};
use crate::ranking::rank;
use probe_launch::catalog::values_equal;
use probe_launch::{port_of, unit_of};

/// Other processes' GPU memory must move by this much to count as a change.
const OTHER_GPU_MEMORY_THRESHOLD_MIB: u64 = 1024;

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

#[derive(Default)]
struct Collector {
    changes: Vec<Change>,
    volatile: Vec<Change>,
}

impl Collector {
    fn push(&mut self, subject: &Subject<'_>, key: String, note: Option<String>) {
        if let Some((mut change, volatile)) = change_for(subject, key) {
            change.note = note;
            self.add(change, volatile);
        }
    }

    fn add(&mut self, mut change: Change, volatile: bool) {
        if volatile {
            change.impact = Impact::None;
            self.volatile.push(change);
        } else {
            self.changes.push(change);
        }
    }
}

fn kind_of<T>(before: &Option<T>, after: &Option<T>) -> ChangeKind {
    match (before, after) {
        (None, Some(_)) => ChangeKind::Added,
        (Some(_), None) => ChangeKind::Removed,
        _ => ChangeKind::Changed,
    }
}

// ---------------------------------------------------------------------------------------------
// Servers (launches).

/// A running (or defined) model server of one snapshot.
struct Server<'a> {
    launch: &'a LaunchConfig,
    unit: Option<String>,
    port: Option<String>,
    model: Option<String>,
    pid: Option<u32>,
}

impl Server<'_> {
    fn identity(&self) -> String {
        if let Some(unit) = &self.unit {
            return unit.clone();
        }
        match (&self.port, &self.model) {
            (Some(port), _) => format!("{}:{port}", self.launch.engine),
            (None, Some(model)) => format!("{}:{model}", self.launch.engine),
            (None, None) => self.launch.engine.to_string(),
        }
    }
}

fn source_preference(kind: SourceKind) -> u8 {
    match kind {
        SourceKind::Process => 0,
        SourceKind::Container => 1,
        SourceKind::Unit => 2,
        SourceKind::Log => 3,
        SourceKind::File => 4,
        SourceKind::History => 5,
        SourceKind::Text => 6,
    }
}

/// The servers of a snapshot: its running launches, or, when nothing runs, its units' launches.
/// One launch per server (a process and its unit describe the same server).
fn servers<'a>(snapshot: &Snapshot, launches: &'a [LaunchConfig]) -> Vec<Server<'a>> {
    let mut pool: Vec<&LaunchConfig> = launches.iter().filter(|l| l.source.running).collect();
    if pool.is_empty() {
        pool = launches
            .iter()
            .filter(|l| l.source.kind == SourceKind::Unit)
            .collect();
    }
    pool.sort_by_key(|launch| source_preference(launch.source.kind));
    let mut kept: Vec<Server<'a>> = Vec::new();
    for launch in pool {
        let server = Server {
            launch,
            unit: unit_of(snapshot, launch),
            port: port_of(launch),
            model: launch
                .model
                .as_deref()
                .map(|m| m.trim().trim_end_matches('/').to_string()),
            pid: launch.source.pid(),
        };
        let duplicate = kept.iter().any(|other| {
            (server.unit.is_some() && other.unit == server.unit)
                || (other.launch.engine == server.launch.engine
                    && server.port.is_some()
                    && other.port == server.port)
        });
        if !duplicate {
            kept.push(server);
        }
    }
    kept
}

type MatchRule = fn(&Server<'_>, &Server<'_>) -> bool;

fn match_servers(
    before: &[Server<'_>],
    after: &[Server<'_>],
) -> Vec<(Option<usize>, Option<usize>)> {
    let rules: [MatchRule; 6] = [
        |a, b| a.unit.is_some() && a.unit == b.unit,
        |a, b| a.launch.engine == b.launch.engine && a.port.is_some() && a.port == b.port,
        |a, b| a.launch.engine == b.launch.engine && a.model.is_some() && a.model == b.model,
        |a, b| a.port.is_some() && a.port == b.port,
        |a, b| a.model.is_some() && a.model == b.model,
        // Servers nothing identifies (no unit, port or model) pair up by engine, in order.
        |a, b| a.launch.engine == b.launch.engine && a.identity() == b.identity(),
    ];
    let mut before_used = vec![false; before.len()];
    let mut after_used = vec![false; after.len()];
    let mut pairs = Vec::new();
    for rule in rules {
        for (before_index, before_server) in before.iter().enumerate() {
            if before_used.get(before_index).copied().unwrap_or(true) {
                continue;
            }
            let found = after
                .iter()
                .enumerate()
                .find(|(after_index, after_server)| {
                    !after_used.get(*after_index).copied().unwrap_or(true)
                        && rule(before_server, after_server)
                });
            if let Some((after_index, _)) = found {
                if let Some(slot) = before_used.get_mut(before_index) {
                    *slot = true;
                }
                if let Some(slot) = after_used.get_mut(after_index) {
                    *slot = true;
                }
                pairs.push((Some(before_index), Some(after_index)));
            }
        }
    }
    let before_left: Vec<usize> = (0..before.len()).filter(|i| !before_used[*i]).collect();
    let after_left: Vec<usize> = (0..after.len()).filter(|i| !after_used[*i]).collect();
    if let ([only_before], [only_after]) = (before_left.as_slice(), after_left.as_slice()) {
        pairs.push((Some(*only_before), Some(*only_after)));
    } else {
        pairs.extend(before_left.into_iter().map(|i| (Some(i), None)));
        pairs.extend(after_left.into_iter().map(|i| (None, Some(i))));
    }
    pairs
}

fn compare_servers(
    before: &Snapshot,
    before_launches: &[LaunchConfig],
    after: &Snapshot,
    after_launches: &[LaunchConfig],
    diff: &mut SnapshotDiff,
    collector: &mut Collector,
) {
    let before_servers = servers(before, before_launches);
    let after_servers = servers(after, after_launches);
    let pairs = match_servers(&before_servers, &after_servers);
    let several = pairs.len() > 1;
    for pair in pairs {
        match pair {
            (Some(b), Some(a)) => {
                let (Some(before_server), Some(after_server)) =
                    (before_servers.get(b), after_servers.get(a))
                else {
                    continue;
                };
                let (launch_diff, volatile) =
                    compare_launches_split(before_server.launch, after_server.launch);
                let prefix = if several {
                    format!("{}/", after_server.identity())
                } else {
                    String::new()
                };
                for mut change in launch_diff.changes.iter().cloned() {
                    change.key = format!("{prefix}{}", change.key);
                    collector.add(change, false);
                }
                for mut change in volatile {
                    change.key = format!("{prefix}{}", change.key);
                    collector.add(change, true);
                }
                if before_server.pid != after_server.pid
                    && let (Some(before_pid), Some(after_pid)) =
                        (before_server.pid, after_server.pid)
                {
                    let before_value = Value::from(before_pid);
                    let after_value = Value::from(after_pid);
                    let subject = Subject::new(Area::Host, "pid", ChangeKind::Changed)
                        .values(Some(&before_value), Some(&after_value));
                    collector.push(
                        &subject,
                        format!("{prefix}pid"),
                        Some(String::from("the server was restarted")),
                    );
                }
                let before_start = before_server.launch.source.time.at;
                let after_start = after_server.launch.source.time.at;
                if before_start != after_start
                    && let (Some(before_start), Some(after_start)) = (before_start, after_start)
                {
                    let before_value = Value::from(before_start);
                    let after_value = Value::from(after_start);
                    let subject = Subject::new(Area::Host, "start_time", ChangeKind::Changed)
                        .values(Some(&before_value), Some(&after_value));
                    collector.push(&subject, format!("{prefix}start_time"), None);
                }
                diff.launches.push(launch_diff);
            }
            (Some(b), None) => {
                if let Some(server) = before_servers.get(b) {
                    let value = Value::from(crate::label::launch_label(server.launch));
                    let subject = Subject::new(Area::Launch, "server", ChangeKind::Removed)
                        .values(Some(&value), None);
                    collector.push(&subject, format!("server:{}", server.identity()), None);
                }
            }
            (None, Some(a)) => {
                if let Some(server) = after_servers.get(a) {
                    let value = Value::from(crate::label::launch_label(server.launch));
                    let subject = Subject::new(Area::Launch, "server", ChangeKind::Added)
                        .values(None, Some(&value));
                    collector.push(&subject, format!("server:{}", server.identity()), None);
                }
            }
            (None, None) => {}
        }
    }
}

/// The servers both snapshots have, matched as [`compare_servers`] matches them, with the key
/// prefix their changes carry (the server's identity when there are several).
fn matched_servers<'a>(
    before: &Snapshot,
    before_launches: &'a [LaunchConfig],
    after: &Snapshot,
    after_launches: &'a [LaunchConfig],
) -> Vec<(&'a LaunchConfig, &'a LaunchConfig, String)> {
    let before_servers = servers(before, before_launches);
    let after_servers = servers(after, after_launches);
    let pairs = match_servers(&before_servers, &after_servers);
    let several = pairs.len() > 1;
    pairs
        .into_iter()
        .filter_map(|pair| match pair {
            (Some(b), Some(a)) => {
                let (b, a) = (before_servers.get(b)?, after_servers.get(a)?);
                let prefix = if several {
                    format!("{}/", a.identity())
                } else {
                    String::new()
                };
                Some((b.launch, a.launch, prefix))
            }
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Python packages.

fn serving_envs(snapshot: &Snapshot) -> Vec<&PythonEnv> {
    let serving: Vec<&PythonEnv> = snapshot
        .python_envs
        .iter()
        .filter(|env| !env.used_by.is_empty())
        .collect();
    if serving.is_empty() {
        snapshot.python_envs.iter().collect()
    } else {
        serving
    }
}

fn compare_packages(before: &Snapshot, after: &Snapshot, collector: &mut Collector) {
    let before_envs = serving_envs(before);
    let after_envs = serving_envs(after);
    let mut pairs: Vec<(&PythonEnv, &PythonEnv)> = Vec::new();
    let mut after_used: HashSet<usize> = HashSet::new();
    let mut before_left = Vec::new();
    for before_env in &before_envs {
        let found = after_envs.iter().enumerate().find(|(index, after_env)| {
            !after_used.contains(index)
                && (after_env.interpreter == before_env.interpreter
                    || (before_env.prefix.is_some() && after_env.prefix == before_env.prefix))
        });
        match found {
            Some((index, after_env)) => {
                after_used.insert(index);
                pairs.push((before_env, after_env));
            }
            None => before_left.push(*before_env),
        }
    }
    let after_left: Vec<&PythonEnv> = after_envs
        .iter()
        .enumerate()
        .filter(|(index, _)| !after_used.contains(index))
        .map(|(_, env)| *env)
        .collect();
    if let ([only_before], [only_after]) = (before_left.as_slice(), after_left.as_slice()) {
        pairs.push((only_before, only_after));
    }
    let several = pairs.len() > 1;
    for (before_env, after_env) in pairs {
        let before_packages: BTreeMap<&str, &str> = before_env
            .packages
            .iter()
            .map(|package| (package.name.as_str(), package.version.as_str()))
            .collect();
        let after_packages: BTreeMap<&str, &str> = after_env
            .packages
            .iter()
            .map(|package| (package.name.as_str(), package.version.as_str()))
            .collect();
        let names: BTreeSet<&str> = before_packages
            .keys()
            .chain(after_packages.keys())
            .copied()
            .collect();
        for name in names {
            let before_version = before_packages.get(name).copied();
            let after_version = after_packages.get(name).copied();
            if before_version == after_version {
                continue;
            }
            let kind = kind_of(&before_version, &after_version);
            let note = match (before_version, after_version) {
                (Some(a), Some(b)) => Some(match compare_versions(a, b) {
                    std::cmp::Ordering::Less => format!("upgraded in {}", after_env.interpreter),
                    std::cmp::Ordering::Greater => {
                        format!("downgraded in {}", after_env.interpreter)
                    }
                    std::cmp::Ordering::Equal => format!("rebuilt in {}", after_env.interpreter),
                }),
                (None, Some(_)) => Some(format!("installed in {}", after_env.interpreter)),
                (Some(_), None) => Some(format!("gone from {}", before_env.interpreter)),
                (None, None) => None,
            };
            let note = match (
                note,
                after_version.and_then(|_| installed_by(after, after_env, name)),
            ) {
                (Some(n), Some(by)) => Some(format!("{n}, {by}")),
                (n, _) => n,
            };
            let before_value = before_version.map(Value::from);
            let after_value = after_version.map(Value::from);
            let subject = Subject::new(Area::Package, name, kind)
                .values(before_value.as_ref(), after_value.as_ref());
            let key = if several {
                format!("package:{name}@{}", after_env.interpreter)
            } else {
                format!("package:{name}")
            };
            collector.push(&subject, key, note);
        }
    }
}

/// Seconds a history line's time may follow the dist-info it wrote (the line is stamped when
/// the command starts, the directory written as the install ends, or the line after).
const INSTALL_SLACK_S: i64 = 600;

/// How `name` came into `env` as far as the host says: its installer (the dist-info's
/// `INSTALLER`) and the newest history line that installs it, no later than the install
/// (`by pip, root's /root/.bash_history entry 41: pip install transformers==4.57.1`).
fn installed_by(snapshot: &Snapshot, env: &PythonEnv, name: &str) -> Option<String> {
    let package = env.packages.iter().find(|p| p.name == name)?;
    let line = snapshot
        .histories
        .iter()
        .flat_map(|h| h.entries.iter().map(move |e| (h, e)))
        .filter(|(_, e)| match (e.time, package.installed_at) {
            (Some(t), Some(at)) => t <= at + INSTALL_SLACK_S,
            _ => true,
        })
        // A line pinning another version installed that one, not this.
        .filter(|(_, e)| {
            probe_launch::package_install(&e.command, name)
                .is_some_and(|i| i.pinned.is_none_or(|v| package.version.starts_with(&v)))
        })
        .max_by_key(|(h, e)| (e.time, h.path.clone(), e.index));
    let line = line.map(|(h, e)| {
        let command = probe_model::text::clip(&probe_model::text::sanitize_line(&e.command), 160);
        format!("{}'s {} entry {}: {command}", h.user, h.path, e.index + 1)
    });
    match (&package.installer, line) {
        (Some(tool), Some(line)) => Some(format!("by {tool}, {line}")),
        (Some(tool), None) => Some(format!("by {tool}")),
        (None, Some(line)) => Some(format!("by {line}")),
        (None, None) => None,
    }
}

// ---------------------------------------------------------------------------------------------
// GPUs.

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

fn compare_gpus(before: &Snapshot, after: &Snapshot, collector: &mut Collector) {
    let (before_gpu, after_gpu) = (&before.gpu, &after.gpu);
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

    // Pair GPUs by index (by position when the index is missing).
    let index_of = |position: usize, gpu: &Gpu| gpu.index.unwrap_or(position as u32);
    let before_by_index: BTreeMap<u32, &Gpu> = before_gpu
        .gpus
        .iter()
        .enumerate()
        .map(|(position, gpu)| (index_of(position, gpu), gpu))
        .collect();
    let pairs: Vec<(u32, &Gpu, &Gpu)> = after_gpu
        .gpus
        .iter()
        .enumerate()
        .filter_map(|(position, gpu)| {
            let index = index_of(position, gpu);
            before_by_index
                .get(&index)
                .map(|before| (index, *before, gpu))
        })
        .collect();
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
    compare_other_gpu_processes(before, after, collector);
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

// ---------------------------------------------------------------------------------------------
// Model config.json.

fn compare_model_configs(before: &[ModelConfig], after: &[ModelConfig], collector: &mut Collector) {
    let normalize = |model: &str| model.trim().trim_end_matches('/').to_string();
    let mut pairs: Vec<(&ModelConfig, &ModelConfig)> = before
        .iter()
        .filter_map(|left| {
            after
                .iter()
                .find(|right| normalize(&right.model) == normalize(&left.model))
                .map(|right| (left, right))
        })
        .collect();
    if pairs.is_empty()
        && let ([only_before], [only_after]) = (before, after)
    {
        pairs.push((only_before, only_after));
    }
    let several = pairs.len() > 1;
    for (left, right) in pairs {
        let names: BTreeSet<&String> = left.fields.keys().chain(right.fields.keys()).collect();
        for name in names {
            let before_value = left.fields.get(name);
            let after_value = right.fields.get(name);
            let equal = match (before_value, after_value) {
                (Some(a), Some(b)) => values_equal(a, b, None),
                (None, None) => true,
                _ => false,
            };
            if equal {
                continue;
            }
            let kind = kind_of(&before_value, &after_value);
            let subject =
                Subject::new(Area::ModelConfig, name, kind).values(before_value, after_value);
            let key = if several {
                format!("model_config[{}]:{name}", right.model)
            } else {
                format!("model_config:{name}")
            };
            collector.push(&subject, key, None);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Log metrics.

/// All series of one metric in a snapshot's logs, merged into one summary.
fn merged_metrics(snapshot: &Snapshot) -> BTreeMap<String, (String, MetricSummary)> {
    let mut merged: BTreeMap<String, (String, MetricSummary)> = BTreeMap::new();
    for log in &snapshot.logs {
        for series in &log.metrics {
            let summary = &series.summary;
            if summary.count == 0 || !summary.mean.is_finite() {
                continue;
            }
            match merged.get_mut(&series.name) {
                None => {
                    merged.insert(series.name.clone(), (series.unit.clone(), summary.clone()));
                }
                Some((_, total)) => {
                    let count = total.count + summary.count;
                    let mean = (total.mean * total.count as f64
                        + summary.mean * summary.count as f64)
                        / count as f64;
                    let newer = summary.last_time > total.last_time;
                    let larger = summary.count > total.count;
                    total.min = total.min.min(summary.min);
                    total.max = total.max.max(summary.max);
                    if larger {
                        total.p50 = summary.p50;
                        total.p90 = summary.p90;
                    }
                    if newer {
                        total.last = summary.last;
                        total.last_time = summary.last_time;
                    }
                    total.first_time = match (total.first_time, summary.first_time) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    total.count = count;
                    total.mean = mean;
                }
            }
        }
    }
    merged
}

fn compare_metrics(
    before: &Snapshot,
    after: &Snapshot,
    collector: &mut Collector,
) -> Vec<MetricComparison> {
    let before_metrics = merged_metrics(before);
    let after_metrics = merged_metrics(after);
    let names: BTreeSet<&String> = before_metrics.keys().chain(after_metrics.keys()).collect();
    let mut comparisons = Vec::new();
    for name in names {
        let before_entry = before_metrics.get(name);
        let after_entry = after_metrics.get(name);
        let unit = after_entry
            .or(before_entry)
            .map(|(unit, _)| unit.clone())
            .unwrap_or_default();
        let before_summary = before_entry.map(|(_, summary)| summary.clone());
        let after_summary = after_entry.map(|(_, summary)| summary.clone());
        let change = match (&before_summary, &after_summary) {
            (Some(a), Some(b)) if a.mean != 0.0 => Some(b.mean / a.mean - 1.0),
            _ => None,
        };
        if let (Some(a), Some(b), Some(_)) = (&before_summary, &after_summary, change) {
            let before_value = rounded(a.mean);
            let after_value = rounded(b.mean);
            let subject = Subject::new(Area::Metric, name, ChangeKind::Changed)
                .values(Some(&before_value), Some(&after_value));
            let note = format!("{} samples before, {} after ({unit})", a.count, b.count);
            collector.push(&subject, format!("metric:{name}"), Some(note));
        }
        comparisons.push(MetricComparison {
            name: name.clone(),
            unit,
            before: before_summary,
            after: after_summary,
            change,
        });
    }
    comparisons
}

fn rounded(value: f64) -> Value {
    let rounded = (value * 100.0).round() / 100.0;
    serde_json::Number::from_f64(rounded)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

// ---------------------------------------------------------------------------------------------
// Host facts.

fn compare_host(before: &Snapshot, after: &Snapshot, collector: &mut Collector) {
    let (left, right) = (&before.host, &after.host);
    let text = |value: &Option<String>| value.as_ref().map(|v| Value::from(v.trim()));
    let number = |value: Option<u64>| value.map(Value::from);
    let fields: [(&str, Option<Value>, Option<Value>); 11] = [
        ("hostname", text(&left.hostname), text(&right.hostname)),
        ("os_pretty", text(&left.os_pretty), text(&right.os_pretty)),
        (
            "os_version_id",
            text(&left.os_version_id),
            text(&right.os_version_id),
        ),
        ("kernel", text(&left.kernel), text(&right.kernel)),
        ("arch", text(&left.arch), text(&right.arch)),
        ("cpu_model", text(&left.cpu_model), text(&right.cpu_model)),
        (
            "cpu_count",
            number(left.cpu_count.map(u64::from)),
            number(right.cpu_count.map(u64::from)),
        ),
        (
            "mem_total_kib",
            number(left.mem_total_kib),
            number(right.mem_total_kib),
        ),
        ("uptime_s", number(left.uptime_s), number(right.uptime_s)),
        (
            "boot_time",
            left.boot_time.map(Value::from),
            right.boot_time.map(Value::from),
        ),
        (
            "mem_available_kib",
            number(left.mem_available_kib),
            number(right.mem_available_kib),
        ),
    ];
    for (name, before_value, after_value) in fields {
        let (Some(a), Some(b)) = (before_value, after_value) else {
            continue;
        };
        if values_equal(&a, &b, None) {
            continue;
        }
        // The total memory the kernel reports moves by a few MiB between kernels.
        if name == "mem_total_kib"
            && let (Some(x), Some(y)) = (a.as_u64(), b.as_u64())
            && x.abs_diff(y) < 512 * 1024
        {
            continue;
        }
        let subject =
            Subject::new(Area::Host, name, ChangeKind::Changed).values(Some(&a), Some(&b));
        let note = (name == "hostname").then(|| String::from("two different hosts are compared"));
        collector.push(&subject, format!("host.{name}"), note);
    }
}

// ---------------------------------------------------------------------------------------------
// Unit files and containers.

fn compare_units(
    before: &Snapshot,
    after: &Snapshot,
    collector: &mut Collector,
) -> Vec<probe_model::TextDiff> {
    let mut texts = Vec::new();
    let names: BTreeSet<&String> = before
        .units
        .iter()
        .chain(after.units.iter())
        .map(|unit| &unit.name)
        .collect();
    for name in names {
        let left = before.units.iter().find(|unit| &unit.name == name);
        let right = after.units.iter().find(|unit| &unit.name == name);
        // Every file of the unit on either side: the fragment, then the drop-ins by path.
        let mut files: BTreeMap<String, (Option<&str>, Option<&str>)> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        for (unit, is_before) in [(left, true), (right, false)] {
            let Some(unit) = unit else { continue };
            let fragment_label = if unit.fragment.path.is_empty() {
                name.clone()
            } else {
                unit.fragment.path.clone()
            };
            for (label, content) in
                std::iter::once((fragment_label, unit.fragment.content.as_str())).chain(
                    unit.drop_ins
                        .iter()
                        .map(|d| (d.path.clone(), d.content.as_str())),
                )
            {
                if !files.contains_key(&label) {
                    order.push(label.clone());
                }
                let entry = files.entry(label).or_default();
                if is_before {
                    entry.0 = Some(content);
                } else {
                    entry.1 = Some(content);
                }
            }
        }
        let mut changed = false;
        for label in order {
            let Some((before_text, after_text)) = files.get(&label) else {
                continue;
            };
            if before_text == after_text {
                continue;
            }
            let text_diff =
                unified_diff(&label, before_text.unwrap_or(""), after_text.unwrap_or(""));
            if !text_diff.unified.is_empty() {
                changed = true;
                texts.push(text_diff);
            }
        }
        let kind = match (left, right) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            _ => ChangeKind::Changed,
        };
        if changed || kind != ChangeKind::Changed {
            let subject = Subject::new(Area::Unit, name, kind);
            collector.push(&subject, format!("unit:{name}"), None);
        }
    }
    texts
}

fn compare_containers(before: &Snapshot, after: &Snapshot, collector: &mut Collector) {
    for left in &before.containers {
        let right = after
            .containers
            .iter()
            .find(|right| match (&left.name, &right.name) {
                (Some(a), Some(b)) => a == b,
                _ => left.id == right.id,
            });
        let Some(right) = right else { continue };
        if left.image.trim() != right.image.trim() {
            let before_value = Value::from(left.image.trim());
            let after_value = Value::from(right.image.trim());
            let subject = Subject::new(Area::Launch, "image", ChangeKind::Changed)
                .values(Some(&before_value), Some(&after_value));
            let label = left.name.clone().unwrap_or_else(|| left.id.clone());
            collector.push(&subject, format!("container:{label}.image"), None);
        }
    }
}
