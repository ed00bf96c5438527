//! The launch timeline of one snapshot.
//!
//! Every reconstructed launch (history lines, unit files, start-up log lines, running processes,
//! containers) and the events around them (unit files written, Python packages installed, GPU
//! driver packages installed) ordered oldest first, with how sure each position is: exact
//! timestamps, bounds from file mtimes, or only the position in a history file. The launch that
//! runs now is marked `running`, and the last different configuration of the same server before
//! it `previous`.

use std::collections::BTreeMap;

use probe_model::{
    Confidence, LaunchConfig, Snapshot, SourceKind, TimeBounds, Timeline, TimelineEvent,
    TimelineEventKind, UnixTime,
};

use crate::impact::{Area, Subject, assess};
use crate::label::launch_label;
use probe_launch::same_configuration;
use probe_launch::same_server;

/// Packages installed within this many seconds of each other form one install event.
const INSTALL_GROUP_WINDOW_S: i64 = 300;
/// Package names shown in one install event's summary.
const INSTALL_SUMMARY_NAMES: usize = 4;

/// How far the host's clock may be off the collecting machine's before it is said: the two are
/// read seconds apart (the collection's own time), so minutes of difference are the clocks'.
pub const CLOCK_SKEW_S: i64 = 300;

/// The host's clock minus the collecting machine's, in seconds, when they differ by more than
/// [`CLOCK_SKEW_S`].
pub fn host_clock_offset(snapshot: &Snapshot) -> Option<i64> {
    let skew = snapshot.remote_clock? - snapshot.collected_at;
    (skew.abs() > CLOCK_SKEW_S).then_some(skew)
}

/// `time` on the collecting machine's clock: the host's time minus its clock's offset.
fn corrected(time: &TimeBounds, offset: i64) -> Option<TimeBounds> {
    let shift = |t: Option<UnixTime>| t.map(|t| t.saturating_sub(offset));
    let out = TimeBounds {
        at: shift(time.at),
        not_before: shift(time.not_before),
        not_after: shift(time.not_after),
    };
    (out != TimeBounds::default()).then_some(out)
}

/// The timeline of a snapshot, reconstructing its launches.
pub fn timeline(snapshot: &Snapshot) -> Timeline {
    let launches = probe_launch::launches_of(snapshot);
    timeline_with(snapshot, &launches)
}

/// The timeline of a snapshot whose launches were already reconstructed.
pub fn timeline_with(snapshot: &Snapshot, launches: &[LaunchConfig]) -> Timeline {
    let (mut entries, kept_launches) = launch_entries(snapshot, launches);
    entries.extend(other_entries(snapshot));
    entries.sort_by(|left, right| {
        sort_time(&left.event.time)
            .cmp(&sort_time(&right.event.time))
            .then_with(|| left.order.cmp(&right.order))
    });
    let mut events: Vec<TimelineEvent> = entries.into_iter().map(|entry| entry.event).collect();
    mark_previous(snapshot, &mut events, &kept_launches);
    // Host times stay as recorded (the evidence, and their order); the corrected time is said
    // beside them.
    let offset = host_clock_offset(snapshot);
    if let Some(offset) = offset {
        for event in &mut events {
            event.corrected_time = corrected(&event.time, offset);
        }
    }

    Timeline {
        schema_version: probe_model::SCHEMA_VERSION,
        host: snapshot
            .host
            .hostname
            .clone()
            .unwrap_or_else(|| snapshot.target.clone()),
        events,
        launches: kept_launches,
        host_clock_offset_s: offset,
    }
}

/// One entry per placed launch, with the launches the entries point at (by index).
fn launch_entries(
    snapshot: &Snapshot,
    launches: &[LaunchConfig],
) -> (Vec<Entry>, Vec<LaunchConfig>) {
    let mut entries: Vec<Entry> = Vec::new();
    let mut kept_launches: Vec<LaunchConfig> = Vec::new();
    for placed in place_launches(snapshot, launches) {
        let launch_index = kept_launches.len();
        let summary = launch_summary(&placed);
        entries.push(Entry {
            event: TimelineEvent {
                kind: TimelineEventKind::Launch,
                time: placed.time.clone(),
                confidence: placed.confidence,
                summary,
                launch: Some(launch_index),
                running: placed.launch.source.running,
                previous: false,
                repeats: placed.repeats,
                first_seen: placed.first_seen,
                ..TimelineEvent::default()
            },
            order: (
                source_order(placed.launch.source.kind),
                placed.group.clone(),
                placed.position,
            ),
        });
        kept_launches.push(placed.launch.clone());
    }
    (entries, kept_launches)
}

/// The events around the launches: unit files, packages, drivers, the host, self-installed
/// engines, hardware and benchmarks, in that order (the order breaks ties of time).
fn other_entries(snapshot: &Snapshot) -> Vec<Entry> {
    let mut entries = unit_events(snapshot);
    entries.extend(package_events(snapshot));
    entries.extend(driver_events(snapshot));
    entries.extend(host_events(snapshot));
    entries.extend(grouped(
        crate::self_installed::events(snapshot),
        "self-installed",
    ));
    entries.extend(grouped(crate::hardware::events(snapshot), "hardware"));
    entries.extend(grouped(crate::bench::events(snapshot), "benchmark"));
    entries
}

/// Events of one source as entries, tied by `group` at equal times.
fn grouped(events: Vec<TimelineEvent>, group: &str) -> impl Iterator<Item = Entry> {
    events.into_iter().map(move |event| Entry {
        event,
        order: (0, String::from(group), 0),
    })
}

struct Entry {
    event: TimelineEvent,
    /// Tie-breaker for equal times: source kind, group (history file), position in the group.
    order: (u8, String, u32),
}

/// Events without any time go first (oldest evidence), in their own order.
fn sort_time(time: &TimeBounds) -> (bool, UnixTime) {
    match time.at.or(time.not_after).or(time.not_before) {
        Some(at) => (true, at),
        None => (false, 0),
    }
}

fn source_order(kind: SourceKind) -> u8 {
    match kind {
        SourceKind::History => 0,
        SourceKind::File => 1,
        SourceKind::Text => 2,
        SourceKind::Unit => 3,
        SourceKind::Container => 4,
        SourceKind::Process => 5,
        SourceKind::Log => 6,
    }
}

fn confidence_of(time: &TimeBounds, kind: SourceKind) -> Confidence {
    if time.at.is_some() {
        Confidence::Exact
    } else if kind == SourceKind::History {
        Confidence::Positional
    } else if time.not_after.is_some() || time.not_before.is_some() {
        Confidence::Bounded
    } else {
        Confidence::Unknown
    }
}

/// A launch with its place on the timeline.
struct Placed<'a> {
    launch: &'a LaunchConfig,
    time: TimeBounds,
    confidence: Confidence,
    /// History file path (or location) the launch belongs to.
    group: String,
    /// Position inside the group (history entry index).
    position: u32,
    /// How many identical consecutive launches this one stands for, their first position and
    /// the first one's time.
    repeats: u32,
    first_position: u32,
    first_seen: Option<UnixTime>,
}

/// `/root/.bash_history#57` -> (`/root/.bash_history`, 57).
fn history_position(location: &str) -> (String, Option<u32>) {
    match location.rsplit_once('#') {
        Some((path, index)) => (path.to_string(), index.trim().parse().ok()),
        None => (location.to_string(), None),
    }
}

fn place_launches<'a>(snapshot: &Snapshot, launches: &'a [LaunchConfig]) -> Vec<Placed<'a>> {
    let mut placed: Vec<Placed<'a>> = Vec::new();
    for (order, launch) in launches.iter().enumerate() {
        let mut time = launch.source.time.clone();
        let (group, position) = match launch.source.kind {
            SourceKind::History => {
                let (path, index) = history_position(&launch.source.location);
                let history = snapshot.histories.iter().find(|file| file.path == path);
                if time.at.is_none()
                    && time.not_after.is_none()
                    && let Some(mtime) = history.and_then(|file| file.mtime)
                {
                    time.not_after = Some(mtime);
                }
                (path, index.unwrap_or(order as u32))
            }
            SourceKind::Process => {
                if time.at.is_none()
                    && let Some(pid) = launch
                        .source
                        .location
                        .strip_prefix("pid:")
                        .and_then(|pid| pid.trim().parse::<u32>().ok())
                {
                    time.at = snapshot
                        .processes
                        .iter()
                        .find(|process| process.pid == pid)
                        .and_then(|process| process.start_time);
                }
                (launch.source.location.clone(), order as u32)
            }
            SourceKind::Unit => {
                if time.at.is_none() && time.not_before.is_none() && time.not_after.is_none() {
                    let name = launch.source.location.trim();
                    let name = name.strip_prefix("unit:").unwrap_or(name);
                    if let Some(unit) = snapshot.units.iter().find(|unit| unit.name == name) {
                        let written = std::iter::once(unit.fragment.mtime)
                            .chain(unit.drop_ins.iter().map(|drop_in| drop_in.mtime))
                            .flatten()
                            .max();
                        time.not_before = written;
                    }
                }
                (launch.source.location.clone(), order as u32)
            }
            _ => (launch.source.location.clone(), order as u32),
        };
        let confidence = confidence_of(&time, launch.source.kind);
        let first_seen = time.at;
        placed.push(Placed {
            launch,
            time,
            confidence,
            group,
            position,
            repeats: 1,
            first_position: position,
            first_seen,
        });
    }
    anchor_history_to_running(&mut placed);
    collapse_history_repeats(placed)
}

/// History without timestamps is ordered by position only, bounded by the file's mtime. When an
/// entry starts the configuration that runs now, that entry and the ones before it happened no
/// later than the running process started, and the ones after it no earlier.
fn anchor_history_to_running(placed: &mut [Placed<'_>]) {
    let running: Vec<(UnixTime, &LaunchConfig)> = placed
        .iter()
        .filter(|p| p.launch.source.running && p.launch.source.kind != SourceKind::History)
        .filter_map(|p| p.time.at.map(|at| (at, p.launch)))
        .collect();
    if running.is_empty() {
        return;
    }
    let mut anchors: BTreeMap<String, (u32, UnixTime)> = BTreeMap::new();
    for entry in placed.iter() {
        if entry.launch.source.kind != SourceKind::History || entry.time.at.is_some() {
            continue;
        }
        for (started, running_launch) in &running {
            if same_configuration(entry.launch, running_launch) {
                let anchor = anchors
                    .entry(entry.group.clone())
                    .or_insert((entry.position, *started));
                if entry.position >= anchor.0 {
                    *anchor = (entry.position, *started);
                }
            }
        }
    }
    for entry in placed.iter_mut() {
        if entry.launch.source.kind != SourceKind::History || entry.time.at.is_some() {
            continue;
        }
        let Some((anchor_position, started)) = anchors.get(&entry.group) else {
            continue;
        };
        if entry.position <= *anchor_position {
            let bound = entry
                .time
                .not_after
                .map_or(*started, |mtime| mtime.min(*started));
            entry.time.not_after = Some(bound);
        } else {
            entry.time.not_before = Some(*started);
        }
    }
}

/// The same command run several times in a row from one history file, to the same log, is one
/// event (the last run).
fn collapse_history_repeats(placed: Vec<Placed<'_>>) -> Vec<Placed<'_>> {
    let (mut history, others): (Vec<Placed<'_>>, Vec<Placed<'_>>) = placed
        .into_iter()
        .partition(|p| p.launch.source.kind == SourceKind::History);
    history.sort_by(|a, b| a.group.cmp(&b.group).then(a.position.cmp(&b.position)));
    let mut kept: Vec<Placed<'_>> = Vec::new();
    for entry in history {
        if let Some(last) = kept.last_mut()
            && last.group == entry.group
            && last.launch.source.running == entry.launch.source.running
            && same_configuration(last.launch, entry.launch)
            && last.launch.env == entry.launch.env
            // A run that wrote a log of its own is a run of its own, with its own metrics.
            && !own_logs(last.launch, entry.launch)
        {
            let repeats = last.repeats + 1;
            let first_position = last.first_position;
            let first_seen = last.first_seen;
            let earliest = last.time.at.or(last.time.not_before);
            *last = entry;
            last.repeats = repeats;
            last.first_position = first_position;
            last.first_seen = first_seen;
            if last.time.at.is_none() && last.time.not_before.is_none() {
                last.time.not_before = earliest;
            }
            continue;
        }
        kept.push(entry);
    }
    kept.extend(others);
    kept
}

/// Whether two launches each name log files, and not the same ones.
fn own_logs(a: &LaunchConfig, b: &LaunchConfig) -> bool {
    !a.log_files.is_empty() && !b.log_files.is_empty() && a.log_files != b.log_files
}

/// The options a launch's line on the timeline names, by their cross-engine key in the catalogs
/// (`tensor_parallel` is SGLang's `--tp-size`, vLLM's `--tensor-parallel-size`, ...).
const SUMMARY_COMMONS: &[&str] = &[
    "tensor_parallel",
    "data_parallel",
    "gpu_memory_fraction",
    "context_length",
    "quantization",
    "kv_cache_dtype",
    "port",
];

fn launch_summary(placed: &Placed<'_>) -> String {
    let launch = placed.launch;
    let mut summary = launch_label(launch);
    if let Some(model) = &launch.model {
        summary = format!("{} {model} ({})", launch.engine, source_text(launch));
    }
    let mut details: Vec<String> = Vec::new();
    let engine_catalog =
        probe_launch::catalog::catalog(launch.engine, launch.engine_version.as_deref());
    for (name, option) in launch.options.iter().take(64) {
        let common = engine_catalog
            .get(name)
            .and_then(|spec| spec.common.as_deref());
        if common.is_some_and(|c| SUMMARY_COMMONS.contains(&c)) {
            details.push(format!(
                "{name}={}",
                probe_launch::catalog::display(&option.value)
            ));
        }
    }
    if let Some(speculative) = &launch.speculative
        && let Some(algorithm) = speculative
            .effective_algorithm
            .as_deref()
            .or(speculative.algorithm.as_deref())
    {
        details.push(format!("speculative={algorithm}"));
    }
    if !details.is_empty() {
        summary.push_str(": ");
        summary.push_str(&details.join(" "));
    }
    if placed.repeats > 1 {
        summary.push_str(&format!(
            " [run {} times, entries #{}-#{}]",
            placed.repeats, placed.first_position, placed.position
        ));
    }
    summary
}

fn source_text(launch: &LaunchConfig) -> String {
    let kind = launch.source.kind.as_str();
    let mut text = if launch.source.location.is_empty() {
        kind.to_string()
    } else {
        format!("{kind} {}", launch.source.location)
    };
    if !launch.source.also_seen_in.is_empty() {
        text.push_str(&format!("; also {}", launch.source.also_seen_in.join(", ")));
    }
    text
}

/// Marks, for each running launch, the most recent earlier launch of the same server with a
/// different configuration.
fn mark_previous(snapshot: &Snapshot, events: &mut [TimelineEvent], launches: &[LaunchConfig]) {
    let running_positions: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, event)| event.running && event.launch.is_some())
        .map(|(position, _)| position)
        .collect();
    let mut previous_positions = Vec::new();
    for running_position in running_positions {
        let Some(running_launch) = events
            .get(running_position)
            .and_then(|event| event.launch)
            .and_then(|index| launches.get(index))
        else {
            continue;
        };
        let found = events
            .get(..running_position)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .rev()
            .find(|(_, event)| {
                !event.running
                    && event
                        .launch
                        .and_then(|index| launches.get(index))
                        .is_some_and(|candidate| {
                            same_server(snapshot, candidate, running_launch)
                                && !same_configuration(candidate, running_launch)
                        })
            });
        if let Some((position, _)) = found {
            previous_positions.push(position);
        }
    }
    for position in previous_positions {
        if let Some(event) = events.get_mut(position) {
            event.previous = true;
        }
    }
}

/// Unit files and drop-ins written (their mtimes).
fn unit_events(snapshot: &Snapshot) -> Vec<Entry> {
    let mut entries = Vec::new();
    for unit in &snapshot.units {
        let files = std::iter::once((&unit.fragment, "unit file"))
            .chain(unit.drop_ins.iter().map(|drop_in| (drop_in, "drop-in")));
        for (file, what) in files {
            let Some(mtime) = file.mtime else { continue };
            entries.push(Entry {
                event: TimelineEvent {
                    kind: TimelineEventKind::UnitChange,
                    time: TimeBounds {
                        at: Some(mtime),
                        ..TimeBounds::default()
                    },
                    confidence: Confidence::Bounded,
                    summary: format!("{} {what} written: {}", unit.name, file.path),
                    ..TimelineEvent::default()
                },
                order: (3, unit.name.clone(), 0),
            });
        }
    }
    entries
}

/// Python packages installed (dist-info mtimes), grouped per environment and burst of installs.
fn package_events(snapshot: &Snapshot) -> Vec<Entry> {
    let mut entries = Vec::new();
    for env in &snapshot.python_envs {
        let mut installs: Vec<(UnixTime, &str, &str)> = env
            .packages
            .iter()
            .filter_map(|package| {
                package
                    .installed_at
                    .map(|at| (at, package.name.as_str(), package.version.as_str()))
            })
            .collect();
        installs.sort();
        let mut groups: Vec<Vec<(UnixTime, &str, &str)>> = Vec::new();
        for install in installs {
            match groups.last_mut() {
                Some(group)
                    if group
                        .last()
                        .is_some_and(|last| install.0 - last.0 <= INSTALL_GROUP_WINDOW_S) =>
                {
                    group.push(install);
                }
                _ => groups.push(vec![install]),
            }
        }
        for group in groups {
            let (Some(first), Some(last)) = (group.first(), group.last()) else {
                continue;
            };
            let mut named: Vec<(probe_model::Impact, &str, &str)> = group
                .iter()
                .map(|(_, name, version)| {
                    let impact = assess(&Subject::new(
                        Area::Package,
                        name,
                        probe_model::ChangeKind::Added,
                    ))
                    .impact;
                    (impact, *name, *version)
                })
                .collect();
            named.sort();
            let shown: Vec<String> = (named.iter())
                .map(|(_, name, version)| format!("{name} {version}"))
                .collect();
            let summary = format!(
                "installed in {}: {}",
                env.interpreter,
                probe_model::text::join_capped(&shown, INSTALL_SUMMARY_NAMES, ", ")
            );
            let time = if first.0 == last.0 {
                TimeBounds {
                    at: Some(first.0),
                    ..TimeBounds::default()
                }
            } else {
                TimeBounds {
                    at: None,
                    not_before: Some(first.0),
                    not_after: Some(last.0),
                }
            };
            entries.push(Entry {
                event: TimelineEvent {
                    kind: TimelineEventKind::PackageInstall,
                    time,
                    // A dist-info mtime is when the package was written, as far as mtimes go.
                    confidence: Confidence::Bounded,
                    summary,
                    ..TimelineEvent::default()
                },
                order: (1, env.interpreter.clone(), 0),
            });
        }
    }
    entries
}

/// GPU driver, CUDA and NCCL packages from the package manager's history.
fn driver_events(snapshot: &Snapshot) -> Vec<Entry> {
    snapshot
        .package_events
        .iter()
        .enumerate()
        .map(|(position, event)| {
            let versions = match (&event.from_version, &event.to_version) {
                (Some(from), Some(to)) => format!(" ({from} -> {to})"),
                (None, Some(to)) => format!(" ({to})"),
                (Some(from), None) => format!(" ({from})"),
                (None, None) => String::new(),
            };
            let confidence = if event.time.is_some() {
                Confidence::Exact
            } else {
                Confidence::Unknown
            };
            Entry {
                event: TimelineEvent {
                    kind: TimelineEventKind::DriverInstall,
                    time: TimeBounds {
                        at: event.time,
                        ..TimeBounds::default()
                    },
                    confidence,
                    summary: format!(
                        "{} {} {}{versions}",
                        event.manager, event.action, event.package
                    ),
                    ..TimelineEvent::default()
                },
                order: (0, event.source.clone(), position as u32),
            }
        })
        .collect()
}

/// History lines that changed the host (installs, service starts and stops, image pulls),
/// placed by their timestamps (else bounded by the file's mtime, in file order).
fn host_events(snapshot: &Snapshot) -> Vec<Entry> {
    let mut entries = Vec::new();
    for file in &snapshot.histories {
        for entry in &file.entries {
            let Some(what) = probe_launch::host_change(&entry.command) else {
                continue;
            };
            let time = TimeBounds {
                at: entry.time,
                not_before: None,
                not_after: if entry.time.is_none() {
                    file.mtime
                } else {
                    None
                },
            };
            let confidence = confidence_of(&time, SourceKind::History);
            entries.push(Entry {
                event: TimelineEvent {
                    kind: TimelineEventKind::HostChange,
                    time,
                    confidence,
                    summary: format!("{what} (history {}#{})", file.path, entry.index),
                    repeats: 1,
                    ..TimelineEvent::default()
                },
                order: (0, file.path.clone(), entry.index),
            });
        }
    }
    entries
}
