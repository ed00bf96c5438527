//! Evidence found where people put it (issue 30): server output their own tools saved into
//! files. A cron line, a timer's service or a script either of them runs (`scripts`) that runs
//! `docker logs <container>`, `journalctl -u <unit>` or the engine itself with its output going
//! into a file (`>`, `>>`, `tee [-a]`,
//! `--log-file`, `-o`), logrotate's `olddir` for a log already named, and kubelet's pod log
//! directories of the containers in pods. Round 1's `log_places` section reads the texts
//! (`configs/log_places.toml` says where); [`plan`] turns the lines that name a server into
//! places round 2's `found_logs` reads: one directory and a name pattern each (a dated name's
//! `$(date +%F)` becomes `*`), never more (no walk), each with the reason it is read.

mod history;
mod lines;
mod logrotate;
mod names;
mod scripts;
mod writes_memo;

use probe_model::Snapshot;

use crate::config;
use crate::frame::{FileStatus, file_header, records};
use crate::sanitize::sanitize_line;

pub use crate::config::PlaceKind;
pub use history::read_paths;
pub use lines::{dated_pattern, writes_of};
pub use names::ServerNames;

/// Places planned at most per collection.
pub const MAX_PLACES: usize = 32;

/// One text round 1 read from a place of `configs/log_places.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceText {
    pub kind: PlaceKind,
    pub path: String,
    pub text: String,
}

/// What round 1's `log_places` section gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Places {
    pub texts: Vec<PlaceText>,
    /// Kubelet's pod log directories (`/var/log/pods/<ns>_<pod>_<uid>/<container>`).
    pub pod_dirs: Vec<String>,
    /// Files listed but not read (a FIFO, a device, refused), `path: why`.
    pub not_read: Vec<String>,
}

/// How round 2 reads the files of a [`FoundPlace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoundMode {
    /// Text as the tool wrote it (what `docker logs`/`journalctl` print, the engine's output).
    Text,
    /// Kubelet's CRI log lines (`2024-01-01T00:00:00.000000000Z stdout F <line>`).
    Cri,
}

/// One directory round 2 looks in, for the files whose names match `pattern`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundPlace {
    pub mode: FoundMode,
    /// Absolute, normalised, not one of `configs/log_places.toml`'s `never` directories.
    pub dir: String,
    /// One name pattern: `[A-Za-z0-9._-]` and `*`.
    pub pattern: String,
    /// Why it is read (kept with each file read: `LogSource::found_by`).
    pub reason: String,
}

/// Parses round 1's `log_places` section.
pub fn parse_places(body: &[u8], boundary: &str) -> Places {
    let mut out = Places::default();
    for r in records(body, boundary) {
        if r.kind == 'R' && r.header == "pods" {
            let text = String::from_utf8_lossy(r.data);
            out.pod_dirs = text
                .lines()
                .filter(|l| l.starts_with('/') && !l.contains(['\t', '\r']))
                .take(config::log_places().max_pod_containers as usize)
                .map(str::to_string)
                .collect();
            continue;
        }
        if r.kind != 'F' {
            continue;
        }
        let h = file_header(&r.header);
        let Some(kind) = PlaceKind::from_word(&h.tag) else {
            continue;
        };
        match h.status {
            FileStatus::Ok => out.texts.push(PlaceText {
                kind,
                path: sanitize_line(&h.path),
                text: String::from_utf8_lossy(r.data).into_owned(),
            }),
            FileStatus::Missing => {}
            ref other => {
                out.not_read
                    .push(format!("{}: {}", sanitize_line(&h.path), other.describe()))
            }
        }
    }
    out
}

/// The places round 2 reads for the servers of `snap`: cron lines, timers' services and the
/// scripts they run that write a server's output into files, the `olddir` logrotate moves those
/// files or the logs the launches name (`named_logs`) to, the pod log directories of containers
/// in pods, and files history lines read whose names carry a server's name; each place a
/// history line reads says so.
pub fn plan(snap: &Snapshot, places: &Places, named_logs: &[String]) -> Vec<FoundPlace> {
    let names = ServerNames::of(snap);
    let mut out: Vec<FoundPlace> = Vec::new();
    for t in &places.texts {
        let ran_by = (t.kind == PlaceKind::Script)
            .then(|| scripts::runner(&t.path, &places.texts))
            .flatten();
        for mut w in writes_of(t, &names) {
            if let Some(by) = &ran_by {
                w.reason = format!("{} (run by {by})", w.reason);
            }
            push(&mut out, w);
        }
    }
    let mut logs: Vec<String> = named_logs.to_vec();
    logs.extend(
        out.iter()
            .filter(|p| p.mode == FoundMode::Text)
            .map(|p| format!("{}/{}", p.dir, p.pattern)),
    );
    for t in places
        .texts
        .iter()
        .filter(|t| t.kind == PlaceKind::Logrotate)
    {
        for p in logrotate::olddirs(t, &logs) {
            push(&mut out, p);
        }
    }
    for p in names::pod_places(snap, &places.pod_dirs) {
        push(&mut out, p);
    }
    let reads = history::reads(snap);
    for p in history::places(&reads, &names, &out) {
        push(&mut out, p);
    }
    history::mark(&mut out, &reads);
    out
}

fn push(out: &mut Vec<FoundPlace>, p: FoundPlace) {
    if out.len() < MAX_PLACES && !out.iter().any(|q| q.dir == p.dir && q.pattern == p.pattern) {
        out.push(p);
    }
}

/// Whether round 2 may look in `dir`: absolute, normalised (no `.`, `..` or empty part), and
/// not one of the directories `configs/log_places.toml` keeps out (`/`, `/proc/*`, ...). A name
/// that is not ASCII is taken (one that came with U+FFFD, not UTF-8 on the host, is looked for
/// there under its exact name, else reported as not read with the reason).
pub fn dir_allowed(dir: &str) -> bool {
    let lp = config::log_places();
    dir.starts_with('/')
        && dir.len() > 1
        && !dir.ends_with('/')
        && dir
            .split('/')
            .skip(1)
            .all(|c| !c.is_empty() && c != "." && c != "..")
        && dir.chars().all(|c| {
            (c.is_ascii_graphic() && !"'\"\\$`*?[]".contains(c))
                || (!c.is_ascii() && !c.is_control())
        })
        && !lp.never.iter().any(|n| n == dir)
        && !lp
            .never_under
            .iter()
            .any(|n| dir.starts_with(n.as_str()) || format!("{dir}/") == *n)
}

/// Whether `p` is a name pattern round 2 takes: `[A-Za-z0-9._-]` and `*`, not only `*`s and dots.
pub fn pattern_allowed(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 255
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-*".contains(c))
        && p.chars().any(|c| c.is_ascii_alphanumeric())
}

/// Whether a name is one the host's shell is not given as a pattern, but a place that holds it
/// is planned (and said not read): letters outside ASCII (`café-*.log`, a Latin-1 name shown
/// with U+FFFD), the rest as [`pattern_allowed`] takes.
pub fn name_not_passed(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= 255
        && !p.is_ascii()
        && p.chars().all(|c| {
            c.is_ascii_alphanumeric() || "._-*".contains(c) || (!c.is_ascii() && !c.is_control())
        })
}

/// Whether round 2's `found_logs` is given `p` (else it is said not read: [`not_passed`]).
pub fn passed(p: &FoundPlace) -> bool {
    dir_allowed(&p.dir) && pattern_allowed(&p.pattern)
}

/// Why a planned place was not given to the host, for its record.
pub fn not_passed(p: &FoundPlace) -> String {
    format!(
        "not read: the name pattern {} has letters outside ASCII, which probe does not give the host's shell as a pattern",
        sanitize_line(&p.pattern)
    )
}

/// `$R2_FOUND`: `INDEX<TAB>MODE<TAB>DIR<TAB>PATTERN` a line (a place that could break the format
/// is left out; the index is its place in `found`).
pub fn script_lines(found: &[FoundPlace]) -> String {
    found
        .iter()
        .enumerate()
        .filter(|(_, p)| passed(p))
        .map(|(i, p)| {
            let mode = match p.mode {
                FoundMode::Text => "text",
                FoundMode::Cri => "cri",
            };
            format!("{i}\t{mode}\t{}\t{}", p.dir, p.pattern)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Matches `name` against a shell pattern of `*` and `?` (logrotate's paths, kubelet names).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(c) if *c == '?' || Some(c) == n.get(ni) => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p.get(pi..)
        .is_some_and(|rest| rest.iter().all(|c| *c == '*'))
}
