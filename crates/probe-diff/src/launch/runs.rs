//! One run, one launch: evidence of the same run of a server merged into one [`LaunchConfig`].
//!
//! A running server leaves several traces: its process, the container or unit that started it,
//! the start-up line it wrote to its log a second later (and the journal's copy of that line), the
//! history line that ran it. Each is reconstructed on its own; this pass merges those that
//! describe the same run, keeps the most precise one's options (process argv > unit > container >
//! history > log), lets the others fill in what it lacks (a log's resolved speculative values, a
//! container's wrapper), and lists them in [`probe_model::LaunchSource::also_seen_in`].

use probe_model::{LaunchConfig, LaunchOrigin, ProcessRole, Snapshot, SourceKind, UnixTime};

use super::shell::split_words;
use crate::compare::{same_configuration, same_server};

/// A start-up log line written this long after a run started belongs to that run.
pub const LOG_AFTER_START_S: i64 = 600;
/// A timestamped history line run this long before a process, unit or container started is the
/// command that started it.
pub const HISTORY_BEFORE_START_S: i64 = 120;
/// Copies of one start-up line (the journal and a file) are at most this far apart.
const SAME_LINE_S: i64 = 5;
/// Ancestors walked from a process to find the unit whose main PID started it.
const MAX_ANCESTORS: usize = 8;

/// How precise a source's options are: lower is more precise.
fn precision(kind: SourceKind) -> u8 {
    match kind {
        SourceKind::Process => 0,
        SourceKind::Unit => 1,
        SourceKind::Container => 2,
        SourceKind::History => 3,
        SourceKind::File => 4,
        SourceKind::Text => 5,
        SourceKind::Log => 6,
    }
}

/// `unit:vllm.service`, `container:vllm-llama`, `pid:120`, `log:/root/sglang.log`,
/// `history:/root/.bash_history#4`.
pub fn evidence_label(launch: &LaunchConfig) -> String {
    launch.source.origin().label()
}

fn unit_name(launch: &LaunchConfig) -> Option<String> {
    launch.source.origin().unit().map(str::to_string)
}

/// When the run this launch describes started, as exactly as the evidence tells: a process's
/// start, a unit's last `ExecMainStartTimestamp`, a container's start, a timestamped history line,
/// a start-up log line.
pub fn run_start(snapshot: &Snapshot, launch: &LaunchConfig) -> Option<UnixTime> {
    match launch.source.kind {
        SourceKind::Unit => launch.source.time.at.or_else(|| {
            let name = unit_name(launch)?;
            snapshot
                .units
                .iter()
                .find(|unit| unit.name == name)
                .and_then(|unit| unit.state.as_ref())
                .and_then(|state| state.exec_main_start)
                .filter(|at| *at > 0)
        }),
        _ => launch.source.time.at,
    }
}

/// The process launch `launch` runs in: the process itself, the unit whose main PID is it or an
/// ancestor, the container whose id its cgroup names.
fn same_run_structurally(
    snapshot: &Snapshot,
    process: &LaunchConfig,
    other: &LaunchConfig,
) -> bool {
    let Some(pid) = process.source.pid() else {
        return false;
    };
    let info = snapshot.processes.iter().find(|p| p.pid == pid);
    match other.source.kind {
        SourceKind::Container => {
            let Some(container_id) = info.and_then(|p| p.container_id.as_deref()) else {
                return false;
            };
            let origin = other.source.origin();
            let label = origin.container().unwrap_or_default();
            snapshot.containers.iter().any(|c| {
                let named = c.name.as_deref() == Some(label) || c.id == label;
                let id = c.id.trim();
                named
                    && id.len() >= 12
                    && container_id.len() >= 12
                    && (id.starts_with(container_id) || container_id.starts_with(id))
            })
        }
        SourceKind::Unit => {
            let Some(name) = unit_name(other) else {
                return false;
            };
            let Some(main_pid) = snapshot
                .units
                .iter()
                .find(|unit| unit.name == name)
                .and_then(|unit| unit.state.as_ref())
                .and_then(|state| state.main_pid)
                .filter(|pid| *pid > 1)
            else {
                return false;
            };
            let mut current = pid;
            for _ in 0..MAX_ANCESTORS {
                if current == main_pid {
                    return true;
                }
                match snapshot
                    .processes
                    .iter()
                    .find(|p| p.pid == current)
                    .and_then(|p| p.ppid)
                {
                    Some(parent) if parent > 1 && parent != current => current = parent,
                    _ => return false,
                }
            }
            false
        }
        _ => false,
    }
}

/// The history file and entry index of a history launch (`/root/.bash_history#8`).
fn history_entry(launch: &LaunchConfig) -> Option<(String, u32)> {
    match launch.source.origin() {
        LaunchOrigin::History {
            path,
            index: Some(index),
        } => Some((path, index)),
        _ => None,
    }
}

/// The `--name` of the `docker run` / `podman run` a history entry holds.
fn history_container_name(snapshot: &Snapshot, launch: &LaunchConfig) -> Option<String> {
    let (path, index) = history_entry(launch)?;
    let entry = snapshot
        .histories
        .iter()
        .filter(|h| h.path == *path)
        .flat_map(|h| h.entries.iter())
        .find(|e| e.index == index)?;
    let words = split_words(&entry.command);
    let run = words.iter().position(|w| {
        let base = w.rsplit('/').next().unwrap_or(w);
        matches!(base, "docker" | "podman" | "nerdctl")
    })?;
    let mut rest = words.iter().skip(run + 1);
    while let Some(w) = rest.next() {
        if w == "--name" {
            return rest.next().cloned();
        }
        if let Some(name) = w.strip_prefix("--name=") {
            return Some(name.to_string());
        }
    }
    None
}

/// Names of the containers behind anchor `j`: its own, and those merged into it.
fn container_names(launches: &[LaunchConfig], into: &[Option<usize>], j: usize) -> Vec<String> {
    launches
        .iter()
        .enumerate()
        .filter(|(k, l)| {
            l.source.kind == SourceKind::Container
                && (*k == j || into.get(*k).copied().flatten() == Some(j))
        })
        .map(|(_, l)| {
            l.source
                .origin()
                .container()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// The run a history line with no time started, kept conservative. Its time is only bounded
/// above (the file's mtime) and by its place in the file, so it is merged only when:
/// - it is a `docker run --name N` and a container named N is one of the anchors (a container
///   name is held by one container at a time), or it runs outside any container with the same
///   engine and configuration as a running process, unit or container outside any container
///   that started before the file was last written;
/// - exactly one anchor fits;
/// - nothing later in that file starts the same server again (a `docker run` of the same
///   container name; outside containers the same unit or port, or the same configuration).
fn untimed_history_run(
    snapshot: &Snapshot,
    launches: &[LaunchConfig],
    into: &[Option<usize>],
    anchors: &[usize],
    i: usize,
) -> Option<usize> {
    let line = launches.get(i)?;
    let (path, index) = history_entry(line)?;
    let in_container = line
        .wrappers
        .iter()
        .any(|w| matches!(w.as_str(), "docker" | "podman"));
    let name = history_container_name(snapshot, line);
    if in_container && name.is_none() {
        return None;
    }
    let fits: Vec<usize> = anchors
        .iter()
        .copied()
        .filter(|&j| {
            let Some(anchor) = launches.get(j) else {
                return false;
            };
            if anchor.engine != line.engine || !same_configuration(line, anchor) {
                return false;
            }
            let names = container_names(launches, into, j);
            match &name {
                Some(n) => names.contains(n),
                None => {
                    let anchor_in_container = !names.is_empty()
                        || anchor.source.pid().is_some_and(|pid| {
                            snapshot
                                .processes
                                .iter()
                                .any(|p| p.pid == pid && p.container_id.is_some())
                        });
                    let started_before_written =
                        match (run_start(snapshot, anchor), line.source.time.not_after) {
                            (Some(start), Some(written)) => start <= written,
                            _ => false,
                        };
                    anchor.source.running && !anchor_in_container && started_before_written
                }
            }
        })
        .collect();
    let [j] = fits.as_slice() else {
        return None;
    };
    let anchor = launches.get(*j)?;
    // A container is identified by its name; a host run by its server and configuration.
    let restarted_later = launches.iter().enumerate().any(|(k, other)| {
        k != i
            && other.source.kind == SourceKind::History
            && history_entry(other).is_some_and(|(p, n)| p == path && n > index)
            && match &name {
                Some(n) => history_container_name(snapshot, other).as_deref() == Some(n.as_str()),
                None => {
                    same_server(snapshot, other, anchor)
                        || (other.engine == anchor.engine && same_configuration(other, anchor))
                }
            }
    });
    (!restarted_later).then_some(*j)
}

/// Folds `other` (less precise) into `primary`.
fn absorb(primary: &mut LaunchConfig, other: LaunchConfig, start: Option<UnixTime>) {
    let label = evidence_label(&other);
    if !primary.source.also_seen_in.contains(&label) {
        primary.source.also_seen_in.push(label);
    }
    for more in other.source.also_seen_in {
        if !primary.source.also_seen_in.contains(&more) {
            primary.source.also_seen_in.push(more);
        }
    }
    primary.source.running |= other.source.running;
    if primary.source.time.at.is_none()
        && let Some(start) = start.or(other.source.time.at)
    {
        primary.source.time.at = Some(start);
    }
    if primary.engine_version.is_none() {
        primary.engine_version = other.engine_version;
    }
    if primary.model.is_none() {
        primary.model = other.model;
    }
    if primary.entrypoint.is_none() {
        primary.entrypoint = other.entrypoint;
    }
    if primary.interpreter.is_none() {
        primary.interpreter = other.interpreter;
    }
    if primary.venv.is_none() {
        primary.venv = other.venv;
    }
    if primary.working_directory.is_none() {
        primary.working_directory = other.working_directory;
    }
    // The wrappers around it (a container's `docker`) come first.
    let outer: Vec<String> = other
        .wrappers
        .iter()
        .filter(|w| !primary.wrappers.contains(w))
        .cloned()
        .collect();
    if other.source.kind == SourceKind::Container || primary.wrappers.is_empty() {
        primary.wrappers.splice(0..0, outer);
    }
    if primary.env.is_empty() {
        primary.env = other.env;
    }
    for file in other.log_files {
        if !primary.log_files.contains(&file) {
            primary.log_files.push(file);
        }
    }
    if other.source.kind == SourceKind::Log {
        let location = other.source.location.trim().to_string();
        if location.starts_with('/') && !primary.log_files.contains(&location) {
            primary.log_files.push(location);
        }
    }
    // What the engine resolved at start-up fills in what the command line left to it.
    if let (Some(mine), Some(theirs)) = (primary.speculative.as_mut(), other.speculative) {
        mine.num_steps = mine.num_steps.take().or(theirs.num_steps);
        mine.eagle_topk = mine.eagle_topk.take().or(theirs.eagle_topk);
        mine.num_draft_tokens = mine.num_draft_tokens.take().or(theirs.num_draft_tokens);
        mine.num_speculative_tokens = mine
            .num_speculative_tokens
            .take()
            .or(theirs.num_speculative_tokens);
        mine.draft_model = mine.draft_model.take().or(theirs.draft_model);
    }
}

/// Merges the evidence of each run into one launch (see the module documentation).
pub fn merge_runs(snapshot: &Snapshot, launches: Vec<LaunchConfig>) -> Vec<LaunchConfig> {
    let count = launches.len();
    let starts: Vec<Option<UnixTime>> = launches.iter().map(|l| run_start(snapshot, l)).collect();
    // `into[i] = Some(j)`: launch i is merged into launch j.
    let mut into: Vec<Option<usize>> = vec![None; count];
    let kind = |i: usize| launches.get(i).map(|l| l.source.kind);

    // 1. A process and the unit or container that started it.
    for (i, process) in launches.iter().enumerate() {
        if process.source.kind != SourceKind::Process {
            continue;
        }
        let is_launcher = process
            .source
            .pid()
            .and_then(|pid| snapshot.processes.iter().find(|p| p.pid == pid))
            .is_none_or(|p| p.role == ProcessRole::Launcher);
        if !is_launcher {
            continue;
        }
        for (j, other) in launches.iter().enumerate() {
            if i == j
                || into.get(j).copied().flatten().is_some()
                || !matches!(other.source.kind, SourceKind::Unit | SourceKind::Container)
                || other.engine != process.engine
            {
                continue;
            }
            if same_run_structurally(snapshot, process, other)
                && same_configuration(other, process)
                && let Some(slot) = into.get_mut(j)
            {
                *slot = Some(i);
            }
        }
    }

    // 2. Start-up log lines and timestamped history lines, by time: a log line written shortly
    // after a run started, a history line run shortly before.
    let anchors: Vec<usize> = (0..count)
        .filter(|&i| {
            into.get(i).copied().flatten().is_none()
                && matches!(
                    kind(i),
                    Some(SourceKind::Process | SourceKind::Unit | SourceKind::Container)
                )
        })
        .collect();
    let mut order: Vec<usize> = (0..count)
        .filter(|&i| matches!(kind(i), Some(SourceKind::History)))
        .chain((0..count).filter(|&i| matches!(kind(i), Some(SourceKind::Log))))
        .collect();
    order.retain(|&i| into.get(i).copied().flatten().is_none());
    for i in order {
        let (Some(launch), Some(Some(at))) = (launches.get(i), starts.get(i)) else {
            continue;
        };
        let at = *at;
        let is_log = launch.source.kind == SourceKind::Log;
        // Candidate runs: anchors, and for log lines also the history lines kept so far.
        let candidates: Vec<usize> = anchors
            .iter()
            .copied()
            .chain(if is_log {
                (0..count)
                    .filter(|&j| {
                        kind(j) == Some(SourceKind::History)
                            && into.get(j).copied().flatten().is_none()
                    })
                    .collect::<Vec<_>>()
            } else {
                Vec::new()
            })
            .collect();
        let mut best: Option<(usize, UnixTime)> = None;
        for j in candidates {
            let (Some(anchor), Some(Some(start))) = (launches.get(j), starts.get(j)) else {
                continue;
            };
            let start = *start;
            let in_window = if is_log {
                at >= start && at - start <= LOG_AFTER_START_S
            } else {
                start >= at && start - at <= HISTORY_BEFORE_START_S
            };
            if !in_window || anchor.engine != launch.engine {
                continue;
            }
            let closer = best.is_none_or(|(_, best_start)| {
                if is_log {
                    start > best_start
                } else {
                    start < best_start
                }
            });
            if closer && same_configuration(launch, anchor) {
                best = Some((j, start));
            }
        }
        let Some((j, start)) = best else { continue };
        // No other run of the same server started in between.
        let (low, high) = if is_log { (start, at) } else { (at, start) };
        let interrupted = (0..count).any(|k| {
            k != i
                && k != j
                && into.get(k).copied().flatten() != Some(j)
                && starts
                    .get(k)
                    .copied()
                    .flatten()
                    .is_some_and(|s| s > low && s < high)
                && launches
                    .get(k)
                    .zip(launches.get(j))
                    .is_some_and(|(other, anchor)| {
                        other.source.kind != SourceKind::Log && same_server(snapshot, other, anchor)
                    })
        });
        if !interrupted && let Some(slot) = into.get_mut(i) {
            *slot = Some(j);
        }
    }

    // 2b. History lines with no time (see [`untimed_history_run`]).
    for i in 0..count {
        if kind(i) != Some(SourceKind::History)
            || into.get(i).copied().flatten().is_some()
            || starts.get(i).copied().flatten().is_some()
        {
            continue;
        }
        if let Some(j) = untimed_history_run(snapshot, &launches, &into, &anchors, i)
            && let Some(slot) = into.get_mut(i)
        {
            *slot = Some(j);
        }
    }

    // 3. Copies of one start-up line with no run around them (the journal and a file).
    for i in 0..count {
        if kind(i) != Some(SourceKind::Log) || into.get(i).copied().flatten().is_some() {
            continue;
        }
        let Some(Some(at)) = starts.get(i).copied() else {
            continue;
        };
        let copy_of = (0..i).find(|&j| {
            kind(j) == Some(SourceKind::Log)
                && into.get(j).copied().flatten().is_none()
                && starts
                    .get(j)
                    .copied()
                    .flatten()
                    .is_some_and(|s| (s - at).abs() <= SAME_LINE_S)
                && launches
                    .get(i)
                    .zip(launches.get(j))
                    .is_some_and(|(a, b)| a.engine == b.engine && same_configuration(a, b))
        });
        if let (Some(j), Some(slot)) = (copy_of, into.get_mut(i)) {
            *slot = Some(j);
        }
    }

    // An untimed history line that started a run of known start bounds the lines before it
    // in that file: they ran before that start.
    let bounds: Vec<(String, u32, UnixTime)> = (0..count)
        .filter_map(|i| {
            let line = launches.get(i)?;
            if line.source.kind != SourceKind::History || starts.get(i).copied().flatten().is_some()
            {
                return None;
            }
            let j = into.get(i).copied().flatten()?;
            let start = starts.get(j).copied().flatten()?;
            let (path, index) = history_entry(line)?;
            Some((path.to_string(), index, start))
        })
        .collect();
    let mut launches = launches;
    for (i, line) in launches.iter_mut().enumerate() {
        if line.source.kind != SourceKind::History
            || line.source.time.at.is_some()
            || into.get(i).copied().flatten().is_some()
        {
            continue;
        }
        let Some((path, index)) = history_entry(line).map(|(p, n)| (p.to_string(), n)) else {
            continue;
        };
        for (p, n, start) in &bounds {
            if *p == path && index < *n {
                let bound = line.source.time.not_after.map_or(*start, |b| b.min(*start));
                line.source.time.not_after = Some(bound);
            }
        }
    }

    // Fold, most precise first: a unit fills in before a log line does.
    let mut slots: Vec<Option<LaunchConfig>> = launches.into_iter().map(Some).collect();
    let mut merged: Vec<usize> = (0..count)
        .filter(|&i| into.get(i).copied().flatten().is_some())
        .collect();
    merged.sort_by_key(|&i| {
        let precision = slots
            .get(i)
            .and_then(|slot| slot.as_ref())
            .map(|l| precision(l.source.kind))
            .unwrap_or(u8::MAX);
        (precision, i)
    });
    for i in merged {
        let Some(j) = into.get(i).copied().flatten() else {
            continue;
        };
        let Some(other) = slots.get_mut(i).and_then(Option::take) else {
            continue;
        };
        let start = starts.get(j).copied().flatten();
        if let Some(Some(primary)) = slots.get_mut(j) {
            absorb(primary, other, start);
        }
    }
    slots.into_iter().flatten().collect()
}
