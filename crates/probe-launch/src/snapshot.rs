//! A snapshot's evidence to launches: every process, unit, container, history entry and start-up
//! log line read, completed with its engine version, then one run's evidence merged into one
//! launch.

use std::collections::BTreeMap;

use probe_model::{
    Engine, LaunchConfig, LaunchOrigin, LaunchSource, ProcessRole, Snapshot, SourceKind, TimeBounds,
};

use crate::evidence::{from_argv, from_startup_log, from_unit};
use crate::hints::{ParseHints, TextKind};
use crate::installed::{fill_version, with_version};
use crate::merge::merge_runs;
use crate::reading::reconstruct_within;
use crate::{argv, config_files, container, container_text, defining, shell, work};

thread_local! {
    static READINGS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many snapshots [`launches_of`] has read on this thread: a command reads each snapshot
/// once and passes the [`crate::Analysis`] on; tests hold it to that.
pub fn snapshot_readings() -> usize {
    READINGS.with(std::cell::Cell::get)
}

/// The snapshots [`launches_of`] read last, by id, with how often: a command spreads over
/// threads (collection, store, report), so a test of a whole command counts the readings of
/// its snapshot by id. The newest [`RECENT_IDS`] ids are kept.
static READINGS_BY_ID: std::sync::Mutex<std::collections::VecDeque<(String, usize)>> =
    std::sync::Mutex::new(std::collections::VecDeque::new());

/// How many snapshot ids [`snapshot_readings_of`] remembers.
pub const RECENT_IDS: usize = 256;

/// How many times [`launches_of`] read the snapshot `id` (on any thread), among the newest
/// [`RECENT_IDS`] snapshots read. A snapshot being collected has no id yet: the partial views
/// round 2 is planned from are other inputs and not counted here.
pub fn snapshot_readings_of(id: &str) -> usize {
    let recent = READINGS_BY_ID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    recent
        .iter()
        .find(|(seen, _)| seen == id)
        .map_or(0, |(_, count)| *count)
}

fn count_reading(id: &str) {
    READINGS.with(|count| count.set(count.get() + 1));
    if id.is_empty() {
        return;
    }
    let mut recent = READINGS_BY_ID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match recent.iter_mut().find(|(seen, _)| seen == id) {
        Some((_, count)) => *count += 1,
        None => {
            if recent.len() >= RECENT_IDS {
                recent.pop_front();
            }
            recent.push_back((id.to_string(), 1));
        }
    }
}

/// Every launch in a snapshot: each piece of evidence reconstructed, then the evidence of one
/// run merged into one launch ([`merge_runs`]).
pub fn launches_of(snapshot: &Snapshot) -> Vec<LaunchConfig> {
    count_reading(&snapshot.id);
    let mut out = Vec::new();
    process_launches(snapshot, &mut out);
    crate::python_script::fill(snapshot, &mut out);
    unit_launches(snapshot, &mut out);
    container_launches(snapshot, &mut out);
    container_text::annotate(snapshot, &mut out);
    history_launches(snapshot, &mut out);
    log_launches(snapshot, &mut out);
    defining::fill(snapshot, &mut out);
    config_files::fill(snapshot, &mut out);
    let mut merged = merge_runs(snapshot, out);
    crate::loaded_models::fill(snapshot, &mut merged);
    crate::loaded_models::fill_logged(snapshot, &mut merged);
    merged
}

/// A launch completed with its engine version from the snapshot, re-read with that version's
/// catalog.
fn finish(
    snapshot: &Snapshot,
    mut l: LaunchConfig,
    hints: &ParseHints,
    out: &mut Vec<LaunchConfig>,
) {
    fill_version(snapshot, &mut l);
    out.push(with_version(l, hints));
}

/// The launcher processes (argv, environment, working directory).
fn process_launches(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for p in &snapshot.processes {
        if p.role != ProcessRole::Launcher {
            continue;
        }
        let hints = ParseHints::of_process(p);
        if let Some(mut l) = from_argv(&p.argv, &p.env, &hints) {
            if let Some(e) = p.engine
                && l.engine == Engine::Other
                && e != Engine::Other
            {
                l.engine = e;
            }
            finish(snapshot, l, &hints, out);
        }
    }
}

/// The systemd units (effective `ExecStart=`; running when their main PID is alive or they are
/// active).
fn unit_launches(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for u in &snapshot.units {
        let running_pid = u
            .state
            .as_ref()
            .and_then(|s| s.main_pid)
            .filter(|p| *p != 0);
        let running = running_pid
            .map(|pid| snapshot.processes.iter().any(|p| p.pid == pid))
            .unwrap_or(false)
            || u.state.as_ref().and_then(|s| s.active_state.as_deref()) == Some("active");
        let mtimes: Vec<i64> = std::iter::once(u.fragment.mtime)
            .chain(u.drop_ins.iter().map(|d| d.mtime))
            .flatten()
            .collect();
        let hints = ParseHints {
            source: LaunchSource {
                kind: SourceKind::Unit,
                location: LaunchOrigin::Unit {
                    name: u.name.clone(),
                }
                .location(),
                time: TimeBounds {
                    at: u
                        .state
                        .as_ref()
                        .and_then(|s| s.exec_main_start)
                        .filter(|_| running),
                    not_before: mtimes.iter().max().copied(),
                    not_after: None,
                },
                running,
                ..LaunchSource::default()
            },
            working_directory: u.working_directory.clone(),
            ..ParseHints::default()
        };
        for l in from_unit(u, &hints) {
            finish(snapshot, l, &hints, out);
        }
    }
}

/// The containers (image, entrypoint, command, environment).
fn container_launches(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for c in &snapshot.containers {
        let hints = ParseHints {
            source: LaunchSource {
                kind: SourceKind::Container,
                location: LaunchOrigin::Container {
                    name: c.name.clone().unwrap_or_else(|| c.id.clone()),
                }
                .location(),
                time: TimeBounds {
                    at: c.started_at,
                    ..TimeBounds::default()
                },
                running: c.state.as_deref() == Some("running"),
                ..LaunchSource::default()
            },
            ..ParseHints::default()
        };
        if let Some(l) = container::from_container(argv::launch, c, &hints) {
            finish(snapshot, l, &hints, out);
        }
    }
}

/// The shell history lines (timestamped when the history has times, else bounded by the file).
fn history_launches(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for h in &snapshot.histories {
        out.extend(crate::history_memo::launches(
            h,
            || history_file_launches(h),
            |l| fill_version(snapshot, l),
            with_version,
        ));
    }
}

/// The launches of one history file's entries, each with the hints it was read with, before
/// the snapshot's engine versions complete them: they depend on the file alone.
fn history_file_launches(h: &probe_model::HistoryFile) -> crate::history_memo::Raw {
    let mut out = Vec::new();
    // One budget for the file: an entry that blows up spends its own file's, no other's.
    let size: usize = h.entries.iter().map(|e| e.command.len()).sum();
    let budget = work::budget_of(size, &BTreeMap::new());
    // Variables typed in earlier entries (`CMD=...`, then `eval "$CMD"`).
    let mut carried = BTreeMap::new();
    for e in &h.entries {
        if budget.exhausted() {
            break;
        }
        let hints = ParseHints {
            kind: TextKind::Shell,
            // The carried variables the entry can reach, not all of them.
            env: shell::reachable(&e.command, &carried),
            source: LaunchSource {
                kind: SourceKind::History,
                location: LaunchOrigin::History {
                    path: h.path.clone(),
                    index: Some(e.index),
                }
                .location(),
                time: TimeBounds {
                    at: e.time,
                    not_before: None,
                    not_after: if e.time.is_none() { h.mtime } else { None },
                },
                running: false,
                ..LaunchSource::default()
            },
            ..ParseHints::default()
        };
        for l in reconstruct_within(&e.command, &hints, &budget) {
            out.push((l, hints.clone()));
        }
        shell::carry_vars(&e.command, &mut carried, &budget);
    }
    out
}

/// The engines' start-up log lines (what the engine resolved).
fn log_launches(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for log in &snapshot.logs {
        for r in &log.startups {
            let hints = ParseHints {
                source: LaunchSource {
                    kind: SourceKind::Log,
                    location: log.location.clone(),
                    time: TimeBounds {
                        at: r.time,
                        ..TimeBounds::default()
                    },
                    running: false,
                    ..LaunchSource::default()
                },
                engine_version: r.version.clone(),
                ..ParseHints::default()
            };
            if let Some(mut l) = from_startup_log(r, &hints) {
                fill_version(snapshot, &mut l);
                out.push(l);
            }
        }
    }
}
