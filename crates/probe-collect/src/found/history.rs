//! History lines that read a server's saved output (`tail -n 200 /var/log/llm/vllm-2026-11-21.log`,
//! `zgrep 'tok/s' /srv/logs/*.gz`): evidence that the files matter. A found place a history
//! line reads says so in its reason; a file read there whose name carries a server's name (its
//! container, compose service, unit, or engine) is a place of its own.

use probe_model::Snapshot;

use super::names::ServerNames;
use super::{FoundMode, FoundPlace, dated_pattern, glob_match};
use crate::config;
use crate::sanitize::sanitize_line;

/// Programs that read the files they are given.
const READERS: &[&str] = &[
    "tail", "head", "less", "more", "cat", "tac", "grep", "egrep", "fgrep", "zgrep", "zegrep",
    "zcat", "zless", "zmore", "bzcat", "xzcat", "zstdcat", "rg", "wc", "view",
];
/// History entries looked at, newest first, at most.
const MAX_ENTRIES: usize = 20_000;
/// Places a history adds at most.
const MAX_ADDED: usize = 8;
/// Longest command quoted in a reason.
const QUOTE: usize = 120;

/// One history line that reads absolute paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// `root's /root/.bash_history entry 27`.
    pub at: String,
    pub command: String,
    pub paths: Vec<String>,
}

/// The history lines of `snap` that read files, newest first (by position: later lines of a
/// file are newer).
pub fn reads(snap: &Snapshot) -> Vec<Read> {
    let mut out = Vec::new();
    for h in &snap.histories {
        for e in h.entries.iter().rev().take(MAX_ENTRIES) {
            let paths = read_paths(&e.command);
            if !paths.is_empty() {
                out.push(Read {
                    at: format!("{}'s {} entry {}", h.user, h.path, e.index + 1),
                    command: e.command.clone(),
                    paths,
                });
            }
        }
    }
    out
}

/// The absolute paths a command line gives to a reading program (each part of a pipeline or a
/// list: `tail -f /a.log | grep x /b.log; cat /c.log`); a word with a quote is never one (it
/// may be part of a quoted pattern).
pub fn read_paths(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in command.split(['|', ';', '&', '\n', '(', ')']) {
        let mut words = part.split_whitespace();
        let Some(first) = words.next() else { continue };
        let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
        let reader = |w: &&str| READERS.contains(&base(w).as_str());
        // `sudo [-u USER ...] tail ...`: the reader among sudo's first words.
        let found = if first == "sudo" {
            words.by_ref().take(4).find(reader).is_some()
        } else {
            reader(&first)
        };
        if !found {
            continue;
        }
        out.extend(
            words
                .filter(|w| w.starts_with('/') && !w.contains(['<', '>', '$', '`', '"', '\'']))
                .map(str::to_string),
        );
    }
    out
}

/// Adds to each place's reason the history lines that read its files.
pub fn mark(places: &mut [FoundPlace], reads: &[Read]) {
    for p in places.iter_mut().filter(|p| p.mode == FoundMode::Text) {
        let hits: Vec<&Read> = reads
            .iter()
            .filter(|r| !p.reason.contains(&r.at))
            .filter(|r| r.paths.iter().any(|path| reads_place(path, p)))
            .collect();
        if let Some(newest) = hits.first() {
            p.reason = format!(
                "{}; read by {}{}: `{}`",
                p.reason,
                count(hits.len()),
                newest.at,
                quote(&newest.command)
            );
        }
    }
}

/// Places for files history lines read whose names carry a server's name, not already planned.
pub fn places(reads: &[Read], names: &ServerNames, planned: &[FoundPlace]) -> Vec<FoundPlace> {
    let mut out: Vec<FoundPlace> = Vec::new();
    for r in reads {
        for path in &r.paths {
            if out.len() >= MAX_ADDED || planned.iter().chain(&out).any(|p| reads_place(path, p)) {
                continue;
            }
            let name = path.rsplit('/').next().unwrap_or("");
            let Some(what) = server_in(name, names) else {
                continue;
            };
            let Some((dir, patterns)) = dated_pattern(path) else {
                continue;
            };
            out.extend(patterns.into_iter().map(|pattern| FoundPlace {
                mode: FoundMode::Text,
                dir: dir.clone(),
                pattern,
                reason: format!(
                    "{} reads {} (its name carries {what}): `{}`",
                    r.at,
                    sanitize_line(path),
                    quote(&r.command)
                ),
            }));
        }
    }
    out
}

fn reads_place(path: &str, p: &FoundPlace) -> bool {
    match path.rsplit_once('/') {
        Some((dir, name)) => dir == p.dir && glob_match(&p.pattern, name),
        None => false,
    }
}

/// The server a file name carries: a container, compose service or unit name (3 characters or
/// more), else an engine's pattern (`configs/servers.toml`).
fn server_in(name: &str, names: &ServerNames) -> Option<String> {
    let short = |u: &String| u.strip_suffix(".service").unwrap_or(u).to_string();
    names
        .containers
        .iter()
        .chain(&names.services)
        .map(short)
        .chain(names.units.iter().map(short))
        .find(|n| n.len() >= 3 && name.contains(n.as_str()))
        .or_else(|| {
            config::servers()
                .engines
                .iter()
                .find(|e| e.matches.is_match(name))
                .map(|e| e.name.clone())
        })
}

fn count(n: usize) -> String {
    if n == 1 {
        String::new()
    } else {
        format!("{n} history lines, the newest ")
    }
}

fn quote(command: &str) -> String {
    probe_model::text::clip(&sanitize_line(command), QUOTE)
}
