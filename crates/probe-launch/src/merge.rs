//! One run, one launch: evidence of the same run of a server merged into one [`LaunchConfig`].
//!
//! A running server leaves several traces: its process, the container or unit that started it,
//! the start-up line it wrote to its log a second later (and the journal's copy of that line), the
//! history line that ran it. Each is reconstructed on its own; this pass merges those that
//! describe the same run, keeps the most precise one's options (process argv > unit > container >
//! history > log), lets the others fill in what it lacks (a log's resolved speculative values, a
//! container's wrapper), and lists them in [`probe_model::LaunchSource::also_seen_in`].

use probe_model::{LaunchConfig, LaunchOrigin, ProcessRole, Snapshot, SourceKind, UnixTime};

use super::identity::same_server;
use super::shell::split_words;
use crate::configuration::same_configuration;

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
fn container_names(launches: &[LaunchConfig], merges: &Merges, j: usize) -> Vec<String> {
    merges
        .members(j)
        .filter_map(|k| launches.get(k))
        .filter(|l| l.source.kind == SourceKind::Container)
        .map(|l| {
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
    merges: &Merges,
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
            let names = container_names(launches, merges, j);
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
    // The files that define the run are its unit's or its container's.
    if primary.files.is_empty() {
        primary.files = other.files;
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

/// Which launch each launch's evidence folds into: a union-find forest one level deep. A launch
/// merged into another points at the launch that stands for its run; that launch is merged into
/// nothing (only unmerged launches are ever chosen as targets).
struct Merges {
    into: Vec<Option<usize>>,
}

// Internal bookkeeping over indices of one `Vec<LaunchConfig>`, not a parser of remote bytes:
// every index comes from `0..len` of that vector, so indexing cannot go out of bounds.
#[expect(
    clippy::indexing_slicing,
    reason = "indices are 0..len of the launches the table was made for"
)]
impl Merges {
    fn new(count: usize) -> Merges {
        Merges {
            into: vec![None; count],
        }
    }

    /// The launch `i` was merged into, if any.
    fn target(&self, i: usize) -> Option<usize> {
        self.into[i]
    }

    fn is_merged(&self, i: usize) -> bool {
        self.into[i].is_some()
    }

    /// Merges launch `i` into launch `j`.
    fn merge(&mut self, i: usize, j: usize) {
        self.into[i] = Some(j);
    }

    /// Launch `j` and the launches merged into it.
    fn members(&self, j: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.into.len()).filter(move |&k| k == j || self.into[k] == Some(j))
    }
}

/// The launches of one snapshot while their evidence is matched up into runs.
struct Merge<'a> {
    snapshot: &'a Snapshot,
    launches: &'a [LaunchConfig],
    starts: Vec<Option<UnixTime>>,
    merges: Merges,
}

impl Merge<'_> {
    fn kind(&self, i: usize) -> Option<SourceKind> {
        self.launches.get(i).map(|l| l.source.kind)
    }

    fn start(&self, i: usize) -> Option<UnixTime> {
        self.starts.get(i).copied().flatten()
    }

    /// Unmerged launches of `kind`.
    fn free_of(&self, kind: SourceKind) -> impl Iterator<Item = usize> + '_ {
        (0..self.launches.len())
            .filter(move |&i| self.kind(i) == Some(kind) && !self.merges.is_merged(i))
    }

    /// Phase 1: A launcher process and the unit or container that started it.
    fn processes_with_their_units(&mut self) {
        let launches = self.launches;
        for (i, process) in launches.iter().enumerate() {
            if process.source.kind != SourceKind::Process || !self.is_launcher(process) {
                continue;
            }
            for (j, other) in launches.iter().enumerate() {
                if i != j
                    && !self.merges.is_merged(j)
                    && matches!(other.source.kind, SourceKind::Unit | SourceKind::Container)
                    && other.engine == process.engine
                    && same_run_structurally(self.snapshot, process, other)
                    && same_configuration(other, process)
                {
                    self.merges.merge(j, i);
                }
            }
        }
    }

    fn is_launcher(&self, process: &LaunchConfig) -> bool {
        process
            .source
            .pid()
            .and_then(|pid| self.snapshot.processes.iter().find(|p| p.pid == pid))
            .is_none_or(|p| p.role == ProcessRole::Launcher)
    }

    /// The runs evidence can be merged into: unmerged processes, units and containers.
    fn anchors(&self) -> Vec<usize> {
        (0..self.launches.len())
            .filter(|&i| {
                !self.merges.is_merged(i)
                    && matches!(
                        self.kind(i),
                        Some(SourceKind::Process | SourceKind::Unit | SourceKind::Container)
                    )
            })
            .collect()
    }

    /// Phase 2: Start-up log lines and timestamped history lines, by time: a log line written shortly
    /// after a run started, a history line run shortly before.
    fn lines_by_time(&mut self, anchors: &[usize]) {
        let order: Vec<usize> = self
            .free_of(SourceKind::History)
            .chain(self.free_of(SourceKind::Log))
            .collect();
        for i in order {
            let (Some(launch), Some(at)) = (self.launches.get(i), self.start(i)) else {
                continue;
            };
            let Some((j, start)) = self.closest_run(launch, at, anchors) else {
                continue;
            };
            if !self.interrupted(i, j, at, start) {
                self.merges.merge(i, j);
            }
        }
    }

    /// The run a timed line most likely belongs to: the closest start in its window with the
    /// same engine and configuration (for log lines, history lines kept so far count as runs).
    fn closest_run(
        &self,
        line: &LaunchConfig,
        at: UnixTime,
        anchors: &[usize],
    ) -> Option<(usize, UnixTime)> {
        let is_log = line.source.kind == SourceKind::Log;
        let histories: Vec<usize> = if is_log {
            self.free_of(SourceKind::History).collect()
        } else {
            Vec::new()
        };
        let mut best: Option<(usize, UnixTime)> = None;
        for j in anchors.iter().copied().chain(histories) {
            let (Some(anchor), Some(start)) = (self.launches.get(j), self.start(j)) else {
                continue;
            };
            let in_window = if is_log {
                at >= start && at - start <= LOG_AFTER_START_S
            } else {
                start >= at && start - at <= HISTORY_BEFORE_START_S
            };
            let closer = best.is_none_or(|(_, best_start)| {
                if is_log {
                    start > best_start
                } else {
                    start < best_start
                }
            });
            if in_window
                && anchor.engine == line.engine
                && closer
                && same_configuration(line, anchor)
            {
                best = Some((j, start));
            }
        }
        best
    }

    /// Whether another run of the same server started between line `i` (at `at`) and run `j`
    /// (at `start`).
    fn interrupted(&self, i: usize, j: usize, at: UnixTime, start: UnixTime) -> bool {
        let is_log = self.kind(i) == Some(SourceKind::Log);
        let (low, high) = if is_log { (start, at) } else { (at, start) };
        let Some(anchor) = self.launches.get(j) else {
            return false;
        };
        self.launches.iter().enumerate().any(|(k, other)| {
            k != i
                && k != j
                && self.merges.target(k) != Some(j)
                && self.start(k).is_some_and(|s| s > low && s < high)
                && other.source.kind != SourceKind::Log
                && same_server(self.snapshot, other, anchor)
        })
    }

    /// Phase 2b: History lines with no time (see [`untimed_history_run`]).
    fn untimed_history_lines(&mut self, anchors: &[usize]) {
        let untimed: Vec<usize> = self
            .free_of(SourceKind::History)
            .filter(|&i| self.start(i).is_none())
            .collect();
        for i in untimed {
            if let Some(j) =
                untimed_history_run(self.snapshot, self.launches, &self.merges, anchors, i)
            {
                self.merges.merge(i, j);
            }
        }
    }

    /// Phase 3: Copies of one start-up line with no run around them (the journal and a file).
    fn copies_of_log_lines(&mut self) {
        let logs: Vec<usize> = self.free_of(SourceKind::Log).collect();
        for i in logs {
            if self.merges.is_merged(i) {
                continue;
            }
            let Some(at) = self.start(i) else {
                continue;
            };
            let copy_of = (0..i).find(|&j| {
                self.kind(j) == Some(SourceKind::Log)
                    && !self.merges.is_merged(j)
                    && self.start(j).is_some_and(|s| (s - at).abs() <= SAME_LINE_S)
                    && self
                        .launches
                        .get(i)
                        .zip(self.launches.get(j))
                        .is_some_and(|(a, b)| a.engine == b.engine && same_configuration(a, b))
            });
            if let Some(j) = copy_of {
                self.merges.merge(i, j);
            }
        }
    }

    /// An untimed history line that started a run of known start bounds the lines before it in
    /// that file: they ran before that start. Returns `(file, entry index, start)` per such line.
    fn history_bounds(&self) -> Vec<(String, u32, UnixTime)> {
        (0..self.launches.len())
            .filter_map(|i| {
                let line = self.launches.get(i)?;
                if line.source.kind != SourceKind::History || self.start(i).is_some() {
                    return None;
                }
                let start = self.start(self.merges.target(i)?)?;
                let (path, index) = history_entry(line)?;
                Some((path, index, start))
            })
            .collect()
    }
}

/// Bounds the unmerged untimed history lines by the starts of the runs later lines started.
fn bound_untimed_history(
    launches: &mut [LaunchConfig],
    merges: &Merges,
    bounds: &[(String, u32, UnixTime)],
) {
    for (i, line) in launches.iter_mut().enumerate() {
        if line.source.kind != SourceKind::History
            || line.source.time.at.is_some()
            || merges.is_merged(i)
        {
            continue;
        }
        let Some((path, index)) = history_entry(line) else {
            continue;
        };
        for (p, n, start) in bounds {
            if *p == path && index < *n {
                let bound = line.source.time.not_after.map_or(*start, |b| b.min(*start));
                line.source.time.not_after = Some(bound);
            }
        }
    }
}

/// Folds every merged launch into its run's launch, most precise first (a unit fills in before a
/// log line does).
fn fold(
    launches: Vec<LaunchConfig>,
    merges: &Merges,
    starts: &[Option<UnixTime>],
) -> Vec<LaunchConfig> {
    let mut merged: Vec<(u8, usize)> = launches
        .iter()
        .enumerate()
        .filter(|(i, _)| merges.is_merged(*i))
        .map(|(i, l)| (precision(l.source.kind), i))
        .collect();
    merged.sort();
    let mut slots: Vec<Option<LaunchConfig>> = launches.into_iter().map(Some).collect();
    for (_, i) in merged {
        let Some(j) = merges.target(i) else {
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

/// Merges the evidence of each run into one launch (see the module documentation).
pub fn merge_runs(snapshot: &Snapshot, launches: Vec<LaunchConfig>) -> Vec<LaunchConfig> {
    let mut m = Merge {
        snapshot,
        launches: &launches,
        starts: launches.iter().map(|l| run_start(snapshot, l)).collect(),
        merges: Merges::new(launches.len()),
    };
    m.processes_with_their_units();
    let anchors = m.anchors();
    m.lines_by_time(&anchors);
    m.untimed_history_lines(&anchors);
    m.copies_of_log_lines();
    let bounds = m.history_bounds();
    let Merge { starts, merges, .. } = m;
    let mut launches = launches;
    bound_untimed_history(&mut launches, &merges, &bounds);
    fold(launches, &merges, &starts)
}
