//! Runs: every start of a server on the timeline, up to its stop, with what was in effect while
//! it ran.
//!
//! A run starts at a launch event with an exact time. It ends where the evidence says it stopped
//! (a journal `Stopped`/`Deactivated`/`Main process exited` line, `systemctl show`
//! `ExecMainExitTimestamp`/`InactiveEnterTimestamp`), else no later than the last line it logged,
//! else at the next start of the same server. Its engine version is its own start-up version
//! line, else the engine package present before it started; a package written after the run
//! started is never credited to it.

use probe_model::{
    Certainty, LaunchConfig, LaunchOrigin, LifecycleKind, LogOrigin, LogSource, ModelConfig,
    ModelSummary, PythonEnv, PythonPackage, Run, RunBound, RunPackage, RunVersion, Snapshot,
    Timeline, UnixTime, VersionSource,
};
use serde_json::Value;

use crate::impact::is_serving_package;
use probe_launch::ServerLaunches;
use probe_launch::same_server;
use probe_launch::{engine_package, evidence_label, serving_env};
use probe_model::civil::utc_minute as utc;

/// A start-up line (version, limits) written this long after a run started belongs to it.
const STARTUP_WINDOW_S: i64 = 900;
/// A version line may precede the start the evidence gives by this much (clock granularity).
const EARLY_S: i64 = 5;

/// One start of a server: the launch event, its time and the server it belongs to.
struct Start {
    launch: usize,
    at: UnixTime,
    server: usize,
    repeats: u32,
}

/// The starts on the timeline grouped by server: `servers[s]` is a representative launch.
fn starts(snapshot: &Snapshot, timeline: &Timeline) -> Vec<Start> {
    let mut servers: Vec<usize> = Vec::new();
    let mut out: Vec<Start> = Vec::new();
    for event in &timeline.events {
        let (Some(index), Some(at)) = (event.launch, event.time.at) else {
            continue;
        };
        let Some(launch) = timeline.launches.get(index) else {
            continue;
        };
        let server = match servers.iter().position(|&rep| {
            timeline
                .launches
                .get(rep)
                .is_some_and(|r| rep == index || same_server(snapshot, r, launch))
        }) {
            Some(server) => server,
            None => {
                servers.push(index);
                servers.len() - 1
            }
        };
        out.push(Start {
            launch: index,
            at,
            server,
            repeats: event.repeats.max(1),
        });
    }
    out.sort_by_key(|s| (s.server, s.at));
    out.dedup_by(|later, earlier| later.server == earlier.server && later.at == earlier.at);
    out
}

/// Every run, oldest first.
pub fn runs_of(snapshot: &Snapshot, timeline: &Timeline) -> Vec<Run> {
    let starts = starts(snapshot, timeline);
    let mut runs = Vec::with_capacity(starts.len());
    let pins = crate::pins::Pins::of(snapshot);
    // Each server's launches, found once for all of its runs and logs, and the serving
    // environment of the first of them that has one (a run whose own launch names none ran in it).
    let mut servers: std::collections::BTreeMap<usize, (ServerLaunches<'_>, Option<&PythonEnv>)> =
        Default::default();
    for (position, start) in starts.iter().enumerate() {
        let Some(launch) = timeline.launches.get(start.launch) else {
            continue;
        };
        let (server_launches, server_env) = servers.entry(start.server).or_insert_with(|| {
            let launches = ServerLaunches::of(snapshot, timeline, launch);
            let env = launches
                .launches()
                .iter()
                .find_map(|other| serving_env(snapshot, other));
            (launches, env)
        });
        let next = starts
            .get(position + 1)
            .filter(|n| n.server == start.server)
            .map(|n| n.at);
        let logs: Vec<&LogSource> = snapshot
            .logs
            .iter()
            .filter(|log| crate::rotated::names_log(snapshot, server_launches, log.location.trim()))
            .collect();
        let running = launch.source.running && next.is_none();
        let end = if running {
            None
        } else {
            Some(run_end(snapshot, launch, start.at, next, &logs))
        };
        let window_end = end.as_ref().and_then(|e| e.at).or(next);
        let env = serving_env(snapshot, launch).or(*server_env);
        runs.push(Run {
            launch: evidence_label(launch),
            launch_index: start.launch,
            engine: launch.engine,
            running,
            start: RunBound {
                at: Some(start.at),
                evidence: start_evidence(launch),
                certainty: Certainty::Exact,
            },
            end,
            engine_version: crate::self_installed::run_version(
                snapshot,
                launch,
                start.at,
                engine_package(launch.engine),
                env,
                pinned_version(
                    &pins,
                    launch,
                    start.at,
                    run_version(launch, start.at, window_end, running, &logs, env),
                ),
            ),
            packages: run_packages(env, start.at, running),
            driver: driver_at(snapshot, start.at, running),
            cuda: cuda_at(snapshot, start.at, running),
            model: launch
                .model
                .as_deref()
                .and_then(|m| model_of(snapshot, m))
                .map(summarize_model),
            limits: limits_of(&logs, start.at, window_end),
            launches: start.repeats,
            hardware: None,
            server: None,
        });
    }
    runs.sort_by_key(|r| r.start.at);
    crate::hardware::annotate_runs(snapshot, &mut runs);
    crate::server::annotate_runs(snapshot, timeline, &mut runs);
    runs
}

fn start_evidence(launch: &LaunchConfig) -> String {
    match launch.source.origin() {
        LaunchOrigin::Process { .. } => String::from("process start"),
        LaunchOrigin::Unit { .. } => String::from("systemctl show ExecMainStartTimestamp"),
        LaunchOrigin::Container { .. } => String::from("container StartedAt"),
        LaunchOrigin::History { .. } => String::from("history timestamp"),
        LaunchOrigin::Log { .. } => String::from("start-up log line"),
        LaunchOrigin::File { .. } | LaunchOrigin::Text { .. } => String::from("given time"),
    }
}

/// The unit a launch ran under: its own, one merged into it, or the journal its log line is in.
pub(crate) fn unit_of<'a>(
    snapshot: &'a Snapshot,
    launch: &LaunchConfig,
) -> Option<&'a probe_model::SystemdUnit> {
    let mut names: Vec<String> = Vec::new();
    for origin in std::iter::once(launch.source.origin()).chain(launch.source.also_seen()) {
        match origin {
            LaunchOrigin::Unit { name } => names.push(name),
            LaunchOrigin::Log { location } if !location.starts_with('/') => names.push(location),
            _ => {}
        }
    }
    snapshot
        .units
        .iter()
        .find(|unit| names.contains(&unit.name))
}

/// Where a run that is not running ended, and how sure that is.
fn run_end(
    snapshot: &Snapshot,
    launch: &LaunchConfig,
    start: UnixTime,
    next: Option<UnixTime>,
    logs: &[&LogSource],
) -> RunBound {
    let before_next = |t: UnixTime| t > start && next.is_none_or(|n| t <= n);
    let unit = unit_of(snapshot, launch);
    // 1. The service manager's own line in the unit's journal.
    let stopped = logs
        .iter()
        .filter(|log| {
            log.origin == LogOrigin::Journal && unit.is_none_or(|u| u.name == log.location.trim())
        })
        .flat_map(|log| log.lifecycle.iter().map(move |e| (log, e)))
        .filter(|(_, e)| {
            matches!(e.kind, LifecycleKind::Stopped | LifecycleKind::Exited)
                && e.time.is_some_and(before_next)
        })
        .min_by_key(|(_, e)| e.time);
    if let Some((log, event)) = stopped {
        return RunBound {
            at: event.time,
            evidence: format!("journal of {}: {}", log.location.trim(), event.text),
            certainty: Certainty::Exact,
        };
    }
    // 2. `systemctl show` for the unit's last run.
    if let Some(state) = unit.and_then(|u| u.state.as_ref()) {
        let inactive = state.active_state.as_deref() != Some("active");
        for (at, name) in [
            (state.exec_main_exit, "ExecMainExitTimestamp"),
            (state.inactive_enter, "InactiveEnterTimestamp"),
        ] {
            if let Some(at) = at.filter(|t| inactive && before_next(*t)) {
                return RunBound {
                    at: Some(at),
                    evidence: format!("systemctl show {name}"),
                    certainty: Certainty::Exact,
                };
            }
        }
    }
    // 3. The container runtime's own record of the container's last stop.
    if let Some(bound) = container_stop(snapshot, launch, &before_next) {
        return bound;
    }
    match next {
        Some(at) => RunBound {
            at: Some(at),
            evidence: String::from("next start of the same server (no stop recorded)"),
            certainty: Certainty::Bounded,
        },
        None => RunBound {
            at: None,
            evidence: String::from("not running now; no stop recorded"),
            certainty: Certainty::Unknown,
        },
    }
}

/// The stop the runtime recorded for the container a launch ran in (`State.FinishedAt`): the
/// end of its run when it lies after the run's start and before the next one (a container
/// restarted since keeps its previous stop there).
fn container_stop(
    snapshot: &Snapshot,
    launch: &LaunchConfig,
    before_next: &dyn Fn(UnixTime) -> bool,
) -> Option<RunBound> {
    let LaunchOrigin::Container { name } = launch.source.origin() else {
        return None;
    };
    let c = snapshot
        .containers
        .iter()
        .find(|c| c.name.as_deref() == Some(name.as_str()) || c.id == name)?;
    let at = c.finished_at.filter(|t| before_next(*t))?;
    Some(RunBound {
        at: Some(at),
        evidence: format!("container {name} FinishedAt"),
        certainty: Certainty::Exact,
    })
}

/// Where the installed package came after the run started, the version a history line pinned
/// before it (`pip install sglang==0.5.8`), if any: an earlier version known, not only
/// "older than".
fn pinned_version(
    pins: &crate::pins::Pins<'_>,
    launch: &LaunchConfig,
    start: UnixTime,
    version: RunVersion,
) -> RunVersion {
    if version.source != VersionSource::InstalledAfter {
        return version;
    }
    let Some(pin) = pins.before(engine_package(launch.engine), start) else {
        return version;
    };
    RunVersion {
        version: Some(pin.version.clone()),
        source: VersionSource::HistoryPin,
        note: Some(format!(
            "pinned by pip install {}=={} ({}); {}",
            engine_package(launch.engine)
                .first()
                .map_or("", String::as_str),
            pin.version,
            pin.evidence,
            version.note.unwrap_or_default()
        )),
    }
}

/// The engine version a run ran (see the module documentation).
fn run_version(
    launch: &LaunchConfig,
    start: UnixTime,
    end: Option<UnixTime>,
    running: bool,
    logs: &[&LogSource],
    env: Option<&PythonEnv>,
) -> RunVersion {
    if let Some(version) = logged_version(launch, (start, end), logs) {
        return RunVersion {
            version: Some(version),
            source: VersionSource::StartupLine,
            note: None,
        };
    }
    let package = env.and_then(|env| {
        env.packages
            .iter()
            .find(|p| engine_package(launch.engine).contains(&p.name))
    });
    let Some(package) = package else {
        // A container's image tag, read with the launch.
        return match (&launch.engine_version, running) {
            (Some(version), true) => RunVersion {
                version: Some(version.clone()),
                source: VersionSource::Running,
                note: None,
            },
            _ => RunVersion::default(),
        };
    };
    installed_version(package, start, running)
}

/// The first version the logs gave within a run's start-up (from [`EARLY_S`] before its start
/// to [`STARTUP_WINDOW_S`] after, never after its end): a version line of its engine or a
/// start-up line's version.
fn logged_version(
    launch: &LaunchConfig,
    (start, end): (UnixTime, Option<UnixTime>),
    logs: &[&LogSource],
) -> Option<String> {
    let in_window = |t: Option<UnixTime>| {
        t.is_some_and(|t| {
            t >= start - EARLY_S && t <= start + STARTUP_WINDOW_S && end.is_none_or(|e| t <= e)
        })
    };
    logs.iter()
        .flat_map(|log| {
            log.versions
                .iter()
                .filter(|v| v.engine == launch.engine && in_window(v.time))
                .map(|v| (v.time, v.version.clone()))
                .chain(
                    log.startups
                        .iter()
                        .filter(|s| in_window(s.time))
                        .filter_map(|s| s.version.clone().map(|v| (s.time, v))),
                )
        })
        .min_by_key(|(t, _)| *t)
        .map(|(_, version)| version)
}

/// The version the engine package installed now gives a run that started at `start`: none
/// when it was installed after the start, unknown when its install time is.
fn installed_version(package: &PythonPackage, start: UnixTime, running: bool) -> RunVersion {
    match package.installed_at {
        Some(installed) if installed > start => RunVersion {
            version: None,
            source: VersionSource::InstalledAfter,
            note: Some(format!(
                "older than {}, installed {}, after this run started",
                package.version,
                utc(installed)
            )),
        },
        Some(_) => RunVersion {
            version: Some(package.version.clone()),
            source: if running {
                VersionSource::Running
            } else {
                VersionSource::InstalledBefore
            },
            note: None,
        },
        None if running => RunVersion {
            version: Some(package.version.clone()),
            source: VersionSource::Running,
            note: None,
        },
        None => RunVersion {
            version: None,
            source: VersionSource::Unknown,
            note: Some(format!(
                "{} {} is installed now; when it was installed is unknown",
                package.name, package.version
            )),
        },
    }
}

/// The serving packages as a run had them.
fn run_packages(env: Option<&PythonEnv>, start: UnixTime, running: bool) -> Vec<RunPackage> {
    let Some(env) = env else {
        return Vec::new();
    };
    env.packages
        .iter()
        .filter(|p| is_serving_package(&p.name))
        .map(|p| {
            let later = p.installed_at.is_some_and(|at| at > start);
            let unknown = p.installed_at.is_none() && !running;
            RunPackage {
                name: p.name.clone(),
                version: (!later && !unknown).then(|| p.version.clone()),
                installed_at: p.installed_at,
                note: if later {
                    Some(format!(
                        "{} installed {}, after this run started",
                        p.version,
                        p.installed_at.map(utc).unwrap_or_default()
                    ))
                } else if unknown {
                    Some(format!("{} installed at an unknown time", p.version))
                } else {
                    None
                },
            }
        })
        .collect()
}

fn is_driver_package(name: &str) -> bool {
    name.starts_with("nvidia-driver")
        || name.starts_with("cuda-drivers")
        || name.starts_with("nvidia-kernel-open")
        || name.starts_with("nvidia-open")
}

fn is_cuda_package(name: &str) -> bool {
    name.starts_with("cuda-toolkit") || name.starts_with("cuda-runtime")
}

/// A package's version in effect at `start`: the last event before it, else the version the
/// first later event replaced, else (nothing changed since) `current`.
fn package_at(
    snapshot: &Snapshot,
    start: UnixTime,
    running: bool,
    select: fn(&str) -> bool,
    current: Option<&String>,
) -> Option<String> {
    let mut events: Vec<&probe_model::PackageEvent> = snapshot
        .package_events
        .iter()
        .filter(|e| select(&e.package) && e.time.is_some())
        .collect();
    events.sort_by_key(|e| e.time);
    let later = events.iter().find(|e| e.time.is_some_and(|t| t > start));
    if running || later.is_none() {
        return current
            .cloned()
            .or_else(|| events.last().and_then(|e| e.to_version.clone()));
    }
    events
        .iter()
        .rev()
        .find(|e| e.time.is_some_and(|t| t <= start))
        .and_then(|e| e.to_version.clone())
        .or_else(|| later.and_then(|e| e.from_version.clone()))
}

fn driver_at(snapshot: &Snapshot, start: UnixTime, running: bool) -> Option<String> {
    package_at(
        snapshot,
        start,
        running,
        is_driver_package,
        snapshot.gpu.driver_version.as_ref(),
    )
}

fn cuda_at(snapshot: &Snapshot, start: UnixTime, running: bool) -> Option<String> {
    package_at(
        snapshot,
        start,
        running,
        is_cuda_package,
        snapshot.gpu.cuda_version.as_ref(),
    )
}

/// The model config read for `model` (as the launch names it).
pub(crate) fn model_of<'a>(snapshot: &'a Snapshot, model: &str) -> Option<&'a ModelConfig> {
    let model = model.trim().trim_end_matches('/');
    snapshot
        .models
        .iter()
        .find(|m| m.model.trim().trim_end_matches('/') == model && !m.fields.is_empty())
}

fn field<'a>(config: &'a ModelConfig, key: &str) -> Option<&'a Value> {
    config
        .fields
        .get(key)
        .or_else(|| config.fields.get(&format!("text_config.{key}")))
}

fn field_u64(config: &ModelConfig, key: &str) -> Option<u64> {
    field(config, key).and_then(|v| {
        v.as_u64()
            .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
    })
}

fn field_text(config: &ModelConfig, key: &str) -> Option<String> {
    match field(config, key)? {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => items.first().and_then(Value::as_str).map(str::to_string),
        Value::Object(map) => map
            .get("quant_method")
            .and_then(Value::as_str)
            .map(str::to_string),
        other => Some(other.to_string()),
    }
}

/// The HF cache revision in a config path (`.../snapshots/<rev>/config.json`).
fn revision_of(path: &str) -> Option<String> {
    let (_, rest) = path.split_once("/snapshots/")?;
    let revision = rest.split('/').next()?;
    (!revision.is_empty()).then(|| revision.to_string())
}

/// A model config, summarised for a reader.
pub fn summarize_model(config: &ModelConfig) -> ModelSummary {
    let layers = field_u64(config, "num_hidden_layers");
    let layer_types: Vec<String> = field(config, "layer_types")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let (full, linear) = if layer_types.is_empty() {
        match (field_u64(config, "full_attention_interval"), layers) {
            (Some(interval), Some(layers)) if interval > 0 => {
                let full = layers / interval;
                (Some(full), Some(layers - full))
            }
            _ => (None, None),
        }
    } else {
        let full = layer_types.iter().filter(|t| t.contains("full")).count() as u64;
        let linear = layer_types
            .iter()
            .filter(|t| t.contains("linear") || t.contains("mamba"))
            .count() as u64;
        (Some(full), Some(linear))
    };
    ModelSummary {
        model: config.model.clone(),
        config_path: config.config_path.clone(),
        revision: revision_of(&config.config_path),
        config_mtime: config.mtime,
        architecture: field_text(config, "model_type")
            .or_else(|| field_text(config, "architectures")),
        layers,
        full_attention_layers: full,
        linear_attention_layers: linear,
        mtp_layers: field_u64(config, "mtp_num_hidden_layers")
            .or_else(|| field_u64(config, "num_nextn_predict_layers")),
        quantization: field_text(config, "quantization_config")
            .or_else(|| field_text(config, "quantization_config.quant_method")),
        dtype: field_text(config, "torch_dtype").or_else(|| field_text(config, "dtype")),
        max_positions: field_u64(config, "max_position_embeddings"),
    }
}

/// The limits the engine logged at this run's start-up (all records within the start-up window).
fn limits_of(
    logs: &[&LogSource],
    start: UnixTime,
    end: Option<UnixTime>,
) -> std::collections::BTreeMap<String, f64> {
    let mut out = std::collections::BTreeMap::new();
    let mut records: Vec<&probe_model::StartupLimits> = logs
        .iter()
        .flat_map(|log| log.limits.iter())
        .filter(|l| {
            l.time.is_some_and(|t| {
                t >= start - EARLY_S && t <= start + STARTUP_WINDOW_S && end.is_none_or(|e| t <= e)
            })
        })
        .collect();
    // An engine that loads its model on the first request (Ollama) logs the load's limits
    // (layers offloaded, KV size) whenever that came: with none in the start-up window, the
    // records anywhere in the run count.
    if records.is_empty() {
        records.extend(logs.iter().flat_map(|log| log.limits.iter()).filter(|l| {
            l.time
                .is_some_and(|t| t >= start && end.is_none_or(|e| t <= e))
        }));
    }
    records.sort_by_key(|l| l.time);
    // A log whose engine writes no times (llama.cpp without --log-timestamps): its last start-up
    // is the one of the run still going, the newest of its server.
    // Of several such logs (a rotated copy beside it), the one written last.
    if records.is_empty() && end.is_none() {
        records.extend(
            logs.iter()
                .filter(|log| log.limits.iter().any(|l| l.time.is_none()))
                .max_by_key(|log| log.mtime)
                .and_then(|log| log.limits.iter().rev().find(|l| l.time.is_none())),
        );
    }
    for record in records {
        for (key, value) in &record.values {
            out.entry(key.clone()).or_insert(*value);
        }
    }
    out
}
