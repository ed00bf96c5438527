//! The model servers of two snapshots, matched by what identifies a server (its systemd unit,
//! else engine and port, else engine and model), never by PID, and their launches compared.

use probe_model::{ChangeKind, LaunchConfig, LaunchDiff, Snapshot, SnapshotDiff, SourceKind};
use serde_json::Value;

use super::collector::Collector;
use crate::compare::launch::compare_launches_split;
use crate::impact::{Area, Subject};
use probe_launch::{port_of, unit_of};

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

pub(super) fn compare_servers(
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
                let prefix = key_prefix(several, after_server);
                let launch_diff = compare_pair(before_server, after_server, &prefix, collector);
                diff.launches.push(launch_diff);
            }
            (Some(b), None) => {
                if let Some(server) = before_servers.get(b) {
                    server_added_or_removed(server, ChangeKind::Removed, collector);
                }
            }
            (None, Some(a)) => {
                if let Some(server) = after_servers.get(a) {
                    server_added_or_removed(server, ChangeKind::Added, collector);
                }
            }
            (None, None) => {}
        }
    }
}

/// What a server's changes are keyed under: its identity when the snapshots run several.
fn key_prefix(several: bool, server: &Server<'_>) -> String {
    if several {
        format!("{}/", server.identity())
    } else {
        String::new()
    }
}

/// A server both snapshots run: its launches compared (volatile changes kept apart), and
/// whether it was restarted in between.
fn compare_pair(
    before: &Server<'_>,
    after: &Server<'_>,
    prefix: &str,
    collector: &mut Collector,
) -> LaunchDiff {
    let (launch_diff, volatile) = compare_launches_split(before.launch, after.launch);
    for mut change in launch_diff.changes.iter().cloned() {
        change.key = format!("{prefix}{}", change.key);
        collector.add(change, false);
    }
    for mut change in volatile {
        change.key = format!("{prefix}{}", change.key);
        collector.add(change, true);
    }
    compare_restart(before, after, prefix, collector);
    launch_diff
}

/// A server's PID and start time, when both sides know them.
fn compare_restart(
    before: &Server<'_>,
    after: &Server<'_>,
    prefix: &str,
    collector: &mut Collector,
) {
    if before.pid != after.pid
        && let (Some(before_pid), Some(after_pid)) = (before.pid, after.pid)
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
    let before_start = before.launch.source.time.at;
    let after_start = after.launch.source.time.at;
    if before_start != after_start
        && let (Some(before_start), Some(after_start)) = (before_start, after_start)
    {
        let before_value = Value::from(before_start);
        let after_value = Value::from(after_start);
        let subject = Subject::new(Area::Host, "start_time", ChangeKind::Changed)
            .values(Some(&before_value), Some(&after_value));
        collector.push(&subject, format!("{prefix}start_time"), None);
    }
}

/// A server only one snapshot runs (`kind` is `Added` or `Removed`), named by its launch.
fn server_added_or_removed(server: &Server<'_>, kind: ChangeKind, collector: &mut Collector) {
    let value = Value::from(crate::label::launch_label(server.launch));
    let subject = Subject::new(Area::Launch, "server", kind);
    let subject = if kind == ChangeKind::Added {
        subject.values(None, Some(&value))
    } else {
        subject.values(Some(&value), None)
    };
    collector.push(&subject, format!("server:{}", server.identity()), None);
}

/// The servers both snapshots have, matched as [`compare_servers`] matches them, with the key
/// prefix their changes carry (the server's identity when there are several).
pub(super) fn matched_servers<'a>(
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
                Some((b.launch, a.launch, key_prefix(several, a)))
            }
            _ => None,
        })
        .collect()
}
