//! Server logs: lifecycle lines, the engines' version and start-up lines (the resolved
//! arguments), their start-up limits and their periodic metrics as bounded time series with
//! summaries. What each engine prints is data (`configs/log_lines.toml`, read by
//! [`super::engine_lines`]); this reader names no engine.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use probe_model::{
    LogOrigin, LogSource, LogThinning, MetricSeries, MetricSummary, SectionStatus, StartupRecord,
    UnixTime,
};
use regex::Regex;

use super::engine_lines::{self, Found, Place, TextKind, TimeForm};
use crate::frame::{FileHeader, FileStatus, file_header, records};
use crate::sanitize::{sanitize_line, sanitize_terminal};

/// Older points kept per series at most, evenly spread over the whole log (when this many have
/// come, every other one is let go, and from then on every second one is taken), besides the
/// newest [`RECENT_POINTS`]; the summary covers all samples.
pub const MAX_POINTS: usize = 2048;
/// The newest points of a series, kept all (the running run's samples).
pub const RECENT_POINTS: usize = 1024;

/// Substrings of a service manager's lifecycle lines ([`lifecycle`]).
const LIFECYCLE_MARKERS: &[&str] = &[
    "Started ",
    "Stopping ",
    "Stopped ",
    "Deactivated successfully",
    "Main process exited",
    "Failed with result",
];

/// What journalctl writes for a line it holds binary (without `-a`).
const BLOB_MARKER: &str = "blob data]";

/// Substrings of every line other than a metric line these readers take something from:
/// lifecycle, the engines' versions, start-up arguments and limits (`keep` of
/// `configs/log_lines.toml`; the thinning adds every limit marker), unreadable placeholders. The
/// host keeps such lines in full (within its caps an hour and a run); the test
/// `thinning_keeps_what_the_reader_reads` holds this list to the readers.
pub fn keep_markers() -> Vec<&'static str> {
    LIFECYCLE_MARKERS
        .iter()
        .copied()
        .chain(engine_lines::keep())
        .chain([BLOB_MARKER])
        .collect()
}

/// Start-up records kept per log (the newest).
pub const MAX_STARTUPS: usize = 32;
/// Longest start-up text kept.
const MAX_STARTUP_TEXT: usize = 64 * 1024;

struct Res {
    /// `journalctl -o short-iso`: `TIME HOST UNIT[PID]: `.
    journal: Regex,
    blob: Regex,
}

fn res() -> &'static Res {
    static R: OnceLock<Res> = OnceLock::new();
    R.get_or_init(|| {
        let r = |s: &str| crate::config::built_in("log pattern", Regex::new(s));
        Res {
            journal: r(r"^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?:[+-][0-9]{2}:?[0-9]{2}|Z)?) \S+ [^:]{1,256}: ?"),
            blob: r(r"^\[[0-9.]+[KMG]?B blob data\]$"),
        }
    })
}

/// Running accumulation of one series.
#[derive(Default)]
struct Acc {
    unit: &'static str,
    /// The points before the newest [`RECENT_POINTS`], every `stride`-th of them (`offered`
    /// counts them).
    points: Vec<(Option<UnixTime>, f64)>,
    stride: usize,
    offered: usize,
    /// The newest points, all of them.
    recent: std::collections::VecDeque<(Option<UnixTime>, f64)>,
    all: Vec<f64>,
    first_time: Option<UnixTime>,
    last_time: Option<UnixTime>,
}

impl Acc {
    /// Keeps the newest [`RECENT_POINTS`] points all, and of the older ones every `stride`-th,
    /// halving them (and doubling the stride) when they reach [`MAX_POINTS`]: the points stay
    /// evenly spread over the whole log, and which older sample is a point depends only on its
    /// place in the log and the stride, not on how many lines came after it.
    fn offer(&mut self, point: (Option<UnixTime>, f64)) {
        self.recent.push_back(point);
        if self.recent.len() <= RECENT_POINTS {
            return;
        }
        let Some(older) = self.recent.pop_front() else {
            return;
        };
        let stride = self.stride.max(1);
        if self.offered.is_multiple_of(stride) {
            self.points.push(older);
        }
        self.offered += 1;
        if self.points.len() >= MAX_POINTS {
            let mut i = 0;
            self.points.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.stride = stride * 2;
        }
    }

    /// The older points, then the newest.
    fn into_points(self) -> Vec<(Option<UnixTime>, f64)> {
        let mut points = self.points;
        points.extend(self.recent);
        points
    }
}

/// Parses one log text. `reference`: a time near the end of the log (file mtime or the remote
/// clock), used to put the year on time stamps that have none (`month-day`); `tz`: UTC offset
/// of the host.
pub fn parse_text(t: &str, reference: Option<UnixTime>, tz: i64, src: &mut LogSource) {
    let clock = super::elapsed::Clock::of(t, reference);
    parse_lines(
        t.lines()
            .enumerate()
            .map(|(i, l)| (clock.as_ref().and_then(|c| c.time_of(i, l)), l)),
        reference,
        tz,
        src,
    );
}

/// [`parse_text`] for lines that carry their own time (a container runtime's per-line
/// timestamp): that time is the line's, whatever timestamp the text itself shows (an engine's
/// `MM-DD HH:MM:SS` has no year and is in the container's time zone).
pub fn parse_timed_lines<'a>(
    lines: impl IntoIterator<Item = (Option<UnixTime>, &'a str)>,
    reference: Option<UnixTime>,
    tz: i64,
    src: &mut LogSource,
) {
    parse_lines(lines.into_iter(), reference, tz, src);
}

fn parse_lines<'a>(
    lines: impl Iterator<Item = (Option<UnixTime>, &'a str)>,
    reference: Option<UnixTime>,
    tz: i64,
    src: &mut LogSource,
) {
    let r = res();
    let mut acc: BTreeMap<&'static str, Acc> = BTreeMap::new();
    let mut versions: Vec<(&'static str, String)> = Vec::new();
    let mut block: Option<OpenBlock> = None;
    let mut found = Vec::new();
    for (outer, raw) in lines {
        let clean = sanitize_terminal(raw);
        let (stamped, l) = strip_line_prefixes(&clean, reference, tz);
        let time = outer.or(stamped);
        if r.blob.is_match(l.trim()) {
            src.unreadable_lines += 1;
            continue;
        }
        if read_block(raw, l, time, &mut block, src) {
            continue;
        }
        if let Some(event) = lifecycle(l, time) {
            src.lifecycle.push(event);
            continue;
        }
        if read_texts(l, time, &mut versions, src) {
            continue;
        }
        record_engine_lines(l, time, &mut acc, &mut found, src);
    }
    if let Some(a) = block.take() {
        push_startup(src, a.time, a.engine, &a.text, None);
    }
    finish_series(acc, src);
    if src.startups.len() > MAX_STARTUPS {
        src.startups.drain(..src.startups.len() - MAX_STARTUPS);
    }
}

/// Strips a journal prefix, a process prefix and an engine's timestamp from a line (the
/// engines' `[[prefix]]` entries); returns the time they showed and the rest of the line.
fn strip_line_prefixes(
    line: &str,
    reference: Option<UnixTime>,
    tz: i64,
) -> (Option<UnixTime>, &str) {
    let r = res();
    let mut l = line;
    let mut time = None;
    if let Some(c) = r.journal.captures(l) {
        time = c.get(1).and_then(|m| super::parse_rfc3339(m.as_str()));
        l = rest_after(l, &c);
    } else if let Some((at, _)) = prefix_at(Place::Line, l, reference, tz) {
        // The time only: the rest of the line (a JSON object's fields) stays for the readers.
        time = at;
    }
    for place in [Place::Process, Place::Message] {
        if let Some((at, rest)) = prefix_at(place, l, reference, tz) {
            time = at.or(time);
            l = rest;
        }
    }
    (time, l)
}

/// The first prefix of `place` the line starts with: the time it shows and the rest of the line.
fn prefix_at(
    place: Place,
    l: &str,
    reference: Option<UnixTime>,
    tz: i64,
) -> Option<(Option<UnixTime>, &str)> {
    for p in engine_lines::prefixes(place) {
        let Some(form) = p.time else {
            if let Some(m) = p.pattern.find(l) {
                return Some((None, l.get(m.end()..).unwrap_or("")));
            }
            continue;
        };
        // Most lines start with no prefix of a place: `is_match` fails at their first bytes
        // without the allocation of a capture.
        if !p.pattern.is_match(l) {
            continue;
        }
        if let Some(c) = p.pattern.captures(l) {
            return Some((time_of(form, &c, reference, tz), rest_after(l, &c)));
        }
    }
    None
}

/// The time a prefix's groups show, read as its form says.
fn time_of(
    form: TimeForm,
    c: &regex::Captures<'_>,
    reference: Option<UnixTime>,
    tz: i64,
) -> Option<UnixTime> {
    let text = |i| c.get(i).map(|m| m.as_str());
    match form {
        TimeForm::Rfc3339 => text(1).and_then(super::parse_rfc3339),
        TimeForm::Local => text(1).and_then(super::parse_datetime).map(|x| x - tz),
        TimeForm::MonthDay => year_less_time(c, reference, tz),
        // Dated from the log's end, line by line, by `parse_text` (`super::elapsed`).
        TimeForm::Elapsed => None,
    }
}

/// What follows a prefix the patterns matched (they stop at the prefix: matching the rest of a
/// long line in the capturing engine is most of the time of reading a log).
fn rest_after<'a>(l: &'a str, c: &regex::Captures<'_>) -> &'a str {
    c.get(0).and_then(|m| l.get(m.end()..)).unwrap_or("")
}

/// The time of a `MM-DD HH:MM:SS` timestamp (groups 1-5): the year of `reference`, or the year
/// before where that would put it more than two days after `reference`.
fn year_less_time(
    c: &regex::Captures<'_>,
    reference: Option<UnixTime>,
    tz: i64,
) -> Option<UnixTime> {
    let g = |i| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
    let (Some(mo), Some(d), Some(h), Some(mi), Some(s)) = (g(1), g(2), g(3), g(4), g(5)) else {
        return None;
    };
    let ref_t = reference.unwrap_or(0);
    let mut y = super::year_of(ref_t + tz);
    let mut at = super::civil(y, mo, d, h, mi, s).map(|x| x - tz);
    if let Some(a) = at
        && reference.is_some()
        && a > ref_t + 2 * 86_400
    {
        y -= 1;
        at = super::civil(y, mo, d, h, mi, s).map(|x| x - tz);
    }
    at
}

/// The versions and start-up settings a line holds (`[[version]]`, `[[startup]]` of
/// `configs/log_lines.toml`); returns whether it held a start-up record. `versions`: the last
/// version each engine logged, for its later start-up records that carry it (`versioned`).
fn read_texts(
    l: &str,
    time: Option<UnixTime>,
    versions: &mut Vec<(&'static str, String)>,
    src: &mut LogSource,
) -> bool {
    let found = engine_lines::read_text(l);
    for f in found.iter().filter(|f| f.kind == TextKind::Version) {
        push_version(src, time, f.engine, Some(&f.text));
        match versions.iter_mut().find(|(e, _)| *e == f.engine) {
            Some(v) => v.1.clone_from(&f.text),
            None => versions.push((f.engine, f.text.clone())),
        }
    }
    let mut startup = false;
    for f in found.iter().filter(|f| f.kind == TextKind::Startup) {
        let version = versions
            .iter()
            .find(|(e, _)| f.versioned && *e == f.engine)
            .map(|(_, v)| v.clone());
        push_startup(src, time, f.engine, &f.text, version);
        startup = true;
    }
    startup
}

/// A `[[block]]` start-up record being read over several lines (`{:#?}`).
struct OpenBlock {
    engine: &'static str,
    time: Option<UnixTime>,
    text: String,
    lines: usize,
}

/// Lines one block may take.
const BLOCK_LINES: usize = 400;

/// A start-up record that is a Rust `Debug` value (`configs/log_lines.toml` `[[block]]`, TGI's
/// launcher `Args { model_id: ..., }`): on one line (`{:?}`; JSON output, the message escaped),
/// or over many (`{:#?}`), whose indented lines are gathered until the closing brace. A line
/// that is not such a continuation ends the block and is read as usual. Returns whether the
/// line was taken.
fn read_block(
    raw: &str,
    l: &str,
    time: Option<UnixTime>,
    open: &mut Option<OpenBlock>,
    src: &mut LogSource,
) -> bool {
    if let Some(a) = open.as_mut() {
        let t = l.trim();
        // Indented after the journal's prefix (`... tgi[7]:     model_id: ...`) or in a file.
        let continues = raw.starts_with([' ', '\t']) || l.starts_with([' ', '\t']) || t == "}";
        if continues && a.lines < BLOCK_LINES && a.text.len() < MAX_STARTUP_TEXT {
            a.text.push(' ');
            a.text.push_str(t);
            a.lines += 1;
            if t == "}"
                && let Some(a) = open.take()
            {
                push_startup(src, a.time, a.engine, &a.text, None);
            }
            return true;
        }
        if let Some(a) = open.take() {
            push_startup(src, a.time, a.engine, &a.text, None);
        }
    }
    engine_lines::blocks().any(|b| block_starts(b, l, time, open, src))
}

/// Whether `l` starts the block `b` (and then its record is pushed or opened).
fn block_starts(
    b: &'static engine_lines::Block,
    l: &str,
    time: Option<UnixTime>,
    open: &mut Option<OpenBlock>,
    src: &mut LogSource,
) -> bool {
    let Some(i) = l.find(&b.marker) else {
        return false;
    };
    let rest = l.get(i..).unwrap_or("");
    if l.starts_with('{') && l.contains(&b.json_marker) {
        let message = serde_json::from_str::<serde_json::Value>(l)
            .ok()
            .and_then(|v| {
                v.get("fields")
                    .and_then(|f| f.get("message"))
                    .or_else(|| v.get("message"))
                    .and_then(|m| m.as_str())
                    .map(str::to_string)
            });
        if let Some(m) = message {
            push_startup(src, time, &b.engine, &m.replace('\n', " "), None);
            return true;
        }
        return false;
    }
    if !(l.contains(&b.logger) || rest.contains(&b.holds)) {
        return false;
    }
    if rest.trim_end().ends_with('{') {
        *open = Some(OpenBlock {
            engine: &b.engine,
            time,
            text: rest.trim().to_string(),
            lines: 0,
        });
    } else {
        push_startup(src, time, &b.engine, rest, None);
    }
    true
}

/// Adds one value to the series `name`.
fn push_point(
    acc: &mut BTreeMap<&'static str, Acc>,
    name: &'static str,
    unit: &'static str,
    time: Option<UnixTime>,
    v: f64,
) {
    let a = acc.entry(name).or_default();
    if a.all.iter().len() == 0 && a.points.is_empty() {
        a.unit = unit;
    }
    a.all.push(v);
    a.offer((time, v));
    if time.is_some() {
        if a.first_time.is_none() {
            a.first_time = time;
        }
        a.last_time = time;
    }
}

/// The engines' metric and limit lines (`configs/log_lines.toml`): their metric values into
/// series, their start-up limits into the log's limit records.
fn record_engine_lines(
    l: &str,
    time: Option<UnixTime>,
    acc: &mut BTreeMap<&'static str, Acc>,
    found: &mut Vec<Found>,
    src: &mut LogSource,
) {
    let mut limits = Vec::new();
    let mut repeats = true;
    engine_lines::read_into(l, found);
    for f in found.drain(..) {
        match f {
            Found::Metric { name, unit, value } => push_point(acc, name, unit, time, value),
            Found::Limit {
                key,
                engine,
                value,
                repeated,
            } => {
                limits.push((key, engine, value));
                repeats &= repeated;
            }
        }
    }
    if !limits.is_empty() {
        merge_limits(limits, time, repeats, src);
    }
}

/// Turns the accumulated series into the log's metrics (points spread over the whole log, the
/// newest all, and a summary of all).
fn finish_series(acc: BTreeMap<&'static str, Acc>, src: &mut LogSource) {
    for (name, a) in acc {
        let unit = a.unit.to_string();
        let summary = summarize(&a.all, a.first_time, a.last_time);
        src.metrics.push(MetricSeries {
            name: name.to_string(),
            unit,
            points: a.into_points(),
            summary,
        });
    }
}

/// A service manager's lifecycle line (`Started X`, `Stopping X...`, `Stopped X`,
/// `X: Deactivated successfully.`, `X: Main process exited, code=killed, status=9/KILL`,
/// `X: Failed with result 'exit-code'.`).
fn lifecycle(line: &str, time: Option<UnixTime>) -> Option<probe_model::LifecycleEvent> {
    use probe_model::LifecycleKind;
    let l = line.trim();
    let kind = if l.starts_with("Started ") {
        LifecycleKind::Started
    } else if l.starts_with("Stopping ") {
        LifecycleKind::Stopping
    } else if l.starts_with("Stopped ") || l.ends_with(": Deactivated successfully.") {
        LifecycleKind::Stopped
    } else if l.contains(": Main process exited, code=") || l.contains(": Failed with result ") {
        LifecycleKind::Exited
    } else {
        return None;
    };
    Some(probe_model::LifecycleEvent {
        time,
        kind,
        text: sanitize_line(l),
    })
}

fn push_version(src: &mut LogSource, time: Option<UnixTime>, engine: &str, version: Option<&str>) {
    let Some(version) = version.filter(|v| !v.is_empty()) else {
        return;
    };
    if src.versions.len() >= MAX_STARTUPS * 4 {
        src.versions.drain(..MAX_STARTUPS * 2);
    }
    src.versions.push(probe_model::VersionLine {
        time,
        engine: engine_of(engine),
        version: sanitize_line(version),
    });
}

/// Adds the limits one line held to the log's records: into the record of the same start-up
/// (within [`LIMITS_SAME_STARTUP_S`] of it, same engine, keys not yet set), else a new record. A
/// line that only repeats values the record has (`repeats`: llama.cpp's `new slot, n_ctx = N`,
/// once per slot) adds nothing.
fn merge_limits(
    found: Vec<(&'static str, &'static str, f64)>,
    time: Option<UnixTime>,
    repeats: bool,
    src: &mut LogSource,
) {
    let engine = found.first().map_or("", |f| f.1);
    let near = |last: &probe_model::StartupLimits| {
        last.engine == engine_of(engine)
            && match (last.time, time) {
                (Some(a), Some(b)) => (b - a).abs() <= LIMITS_SAME_STARTUP_S,
                (None, None) => true,
                _ => false,
            }
    };
    if repeats
        && src.limits.last().is_some_and(|last| {
            near(last) && found.iter().all(|(k, _, v)| last.values.get(*k) == Some(v))
        })
    {
        return;
    }
    let same = src
        .limits
        .last_mut()
        .filter(|last| near(last) && found.iter().all(|(k, _, _)| !last.values.contains_key(*k)));
    match same {
        Some(last) => {
            for (k, _, v) in found {
                last.values.insert(k.to_string(), v);
            }
        }
        None => {
            if src.limits.len() >= MAX_STARTUPS * 4 {
                src.limits.drain(..MAX_STARTUPS * 2);
            }
            src.limits.push(probe_model::StartupLimits {
                time,
                engine: engine_of(engine),
                values: found
                    .into_iter()
                    .map(|(k, _, v)| (k.to_string(), v))
                    .collect(),
            });
        }
    }
}

/// The engine a name stands for (the names are the log lines config's, checked at load).
fn engine_of(name: &str) -> probe_model::Engine {
    probe_model::Engine::parse(name).unwrap_or_default()
}

/// Limit lines of one start-up are at most this far apart.
const LIMITS_SAME_STARTUP_S: i64 = 600;

fn push_startup(
    src: &mut LogSource,
    time: Option<UnixTime>,
    engine: &str,
    text: &str,
    version: Option<String>,
) {
    let mut t = text.trim().to_string();
    if t.len() > MAX_STARTUP_TEXT {
        let mut end = MAX_STARTUP_TEXT;
        while !t.is_char_boundary(end) {
            end -= 1;
        }
        t.truncate(end);
    }
    src.startups.push(StartupRecord {
        time,
        engine: engine_of(engine),
        text: t,
        version,
    });
    if src.startups.len() > 4 * MAX_STARTUPS {
        src.startups.drain(..2 * MAX_STARTUPS);
    }
}

/// count/min/max/mean/p50/p90/last over all samples.
pub fn summarize(
    v: &[f64],
    first_time: Option<UnixTime>,
    last_time: Option<UnixTime>,
) -> MetricSummary {
    if v.is_empty() {
        return MetricSummary {
            first_time,
            last_time,
            ..Default::default()
        };
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        let i = ((s.len() - 1) as f64 * p).round() as usize;
        s.get(i).copied().unwrap_or(0.0)
    };
    MetricSummary {
        count: v.len() as u64,
        min: s.first().copied().unwrap_or(0.0),
        max: s.last().copied().unwrap_or(0.0),
        mean: v.iter().sum::<f64>() / v.len() as f64,
        p50: pct(0.5),
        p90: pct(0.9),
        last: v.last().copied().unwrap_or(0.0),
        first_time,
        last_time,
    }
}

/// Parses the `logs` section (file tails).
pub fn parse_files(
    body: &[u8],
    boundary: &str,
    clock: Option<UnixTime>,
    tz: i64,
) -> Vec<LogSource> {
    let recs = records(body, boundary);
    (0..recs.len())
        .filter_map(|i| file_source(&recs, i, clock, tz))
        .collect()
}

/// The log of the file record `recs[i]` (`None`: not a file record).
fn file_source(
    recs: &[crate::frame::Record<'_>],
    i: usize,
    clock: Option<UnixTime>,
    tz: i64,
) -> Option<LogSource> {
    let r = recs.get(i).filter(|r| r.kind == 'F')?;
    let thinning = thinning_after(recs, i);
    let h = file_header(&r.header);
    let mut src = LogSource {
        origin: LogOrigin::File,
        location: h.path.clone(),
        mtime: h.mtime,
        ..Default::default()
    };
    match (&h.status, thinning) {
        (FileStatus::Ok, Some(t)) => read_thinned(r.data, t, h.mtime.or(clock), tz, &mut src),
        (FileStatus::Ok, None) => {
            src.bytes_read = r.data.len() as u64;
            src.truncated = h.size.is_some_and(|s| s > r.data.len() as u64);
            let mut data = r.data;
            if src.truncated {
                // A tail starts mid-line.
                data = data
                    .iter()
                    .position(|&c| c == b'\n')
                    .and_then(|i| data.get(i + 1..))
                    .unwrap_or(&[]);
            }
            parse_text(
                &String::from_utf8_lossy(data),
                h.mtime.or(clock),
                tz,
                &mut src,
            );
            if src.truncated {
                src.status = SectionStatus::Truncated;
            }
        }
        _ => set_file_status(&mut src, &h, None),
    }
    Some(src)
}

/// The `found_logs` section: the files of each place `found` names (`rec found INDEX` before
/// them), each with the place's reason; kubelet's CRI files decoded as such.
pub fn parse_found(
    body: &[u8],
    boundary: &str,
    clock: Option<UnixTime>,
    tz: i64,
    found: &[crate::found::FoundPlace],
) -> Vec<LogSource> {
    let recs = records(body, boundary);
    let mut place: Option<&crate::found::FoundPlace> = None;
    let mut budget = MAX_CONTAINER_LINES_TOTAL;
    let mut out = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        if let Some(n) = r.header.strip_prefix("found ") {
            place = n.trim().parse::<usize>().ok().and_then(|n| found.get(n));
            continue;
        }
        if r.kind != 'F' {
            continue;
        }
        // A file the plan did not ask for is not taken.
        let Some(p) = place else { continue };
        let src = match p.mode {
            crate::found::FoundMode::Text => file_source(&recs, i, clock, tz).map(|mut s| {
                date_by_mtime(&mut s);
                s
            }),
            crate::found::FoundMode::Cri => {
                container_source(&recs, i, "k8s-file", &mut budget, clock, tz).map(|mut s| {
                    s.origin = LogOrigin::File;
                    s
                })
            }
        };
        out.extend(src.map(|mut s| {
            s.found_by = Some(sanitize_line(&p.reason));
            s
        }));
    }
    out.extend(
        found
            .iter()
            .filter(|p| !crate::found::passed(p))
            .map(|p| LogSource {
                origin: LogOrigin::File,
                location: sanitize_line(&format!("{}/{}", p.dir, p.pattern)),
                status: SectionStatus::NotPresent,
                message: Some(crate::found::not_passed(p)),
                found_by: Some(sanitize_line(&p.reason)),
                ..LogSource::default()
            }),
    );
    out
}

/// Lines of a found file that shows no time of its own at most, for the file's mtime to date
/// them: a command's whole output written at once (`ollama run --verbose ... > FILE`, one file
/// per run of a cron job), not a log that grew over days.
const MTIME_DATED_MAX_LINES: u64 = 200;

/// A found file none of whose lines has a time, small enough to be one command's output: its
/// metric points are dated by the file's mtime (when the command finished writing it).
pub fn date_by_mtime(src: &mut LogSource) {
    let Some(mtime) = src.mtime else { return };
    let timed = src
        .metrics
        .iter()
        .flat_map(|m| m.points.iter())
        .any(|(t, _)| t.is_some())
        || src.lifecycle.iter().any(|e| e.time.is_some())
        || src.startups.iter().any(|r| r.time.is_some())
        || src.limits.iter().any(|l| l.time.is_some())
        || src.versions.iter().any(|v| v.time.is_some());
    let samples: u64 = src.metrics.iter().map(|m| m.summary.count).sum();
    if timed || samples == 0 || samples > MTIME_DATED_MAX_LINES {
        return;
    }
    for m in &mut src.metrics {
        for p in &mut m.points {
            p.0 = Some(mtime);
        }
        m.summary.first_time = Some(mtime);
        m.summary.last_time = Some(mtime);
    }
}

/// The `thin` record the host's thinning pass wrote right after a log's record, if any:
/// `thin SEEN KEPT METRIC_SEEN METRIC_KEPT OVER_CAPS OVER_SIZE READER_STATUS`.
fn thinning_after(recs: &[crate::frame::Record<'_>], i: usize) -> Option<LogThinning> {
    let next = recs.get(i + 1).filter(|r| r.kind == 'R')?;
    let rest = next.header.strip_prefix("thin ")?;
    let w: Vec<&str> = rest.split(' ').collect();
    let n = |k: usize| w.get(k).and_then(|x| x.parse::<u64>().ok());
    Some(LogThinning {
        lines_seen: n(0)?,
        lines_kept: n(1)?,
        metric_lines_seen: n(2)?,
        metric_lines_kept: n(3)?,
        dropped_over_caps: n(4)?,
        dropped_over_size: n(5)?,
        stopped_early: w.get(6).is_some_and(|rc| *rc == "124" || *rc == "137"),
        metric_lines_per_hour: crate::config::probes().thinning.metric_lines_per_hour,
        first_time: None,
        last_time: None,
    })
}

/// Reads what the host's thinning pass kept of a log: every line it sent, the coverage (the
/// first and last time kept) and, when it stopped early or hit its byte cap, why it is partial.
fn read_thinned(
    data: &[u8],
    thinning: LogThinning,
    reference: Option<UnixTime>,
    tz: i64,
    src: &mut LogSource,
) {
    src.bytes_read = data.len() as u64;
    parse_text(&String::from_utf8_lossy(data), reference, tz, src);
    finish_thinning(thinning, src);
}

/// A thinned log's coverage (the first and last time among what was kept) and, when the reader
/// stopped early, why it is partial.
fn finish_thinning(mut t: LogThinning, src: &mut LogSource) {
    let times = src
        .metrics
        .iter()
        .flat_map(|m| [m.summary.first_time, m.summary.last_time])
        .chain(src.lifecycle.iter().map(|e| e.time))
        .chain(src.startups.iter().map(|s| s.time))
        .flatten();
    t.first_time = times.clone().min();
    t.last_time = times.max();
    src.truncated = t.stopped_early;
    if t.stopped_early {
        src.status = SectionStatus::Truncated;
        src.message = Some(String::from(
            "read only in part: the reader stopped at its time limit; the newest lines were \
             read again from the end, and what lay between is missing",
        ));
    }
    src.thinning = Some(t);
}

/// A log file record that was not read: its status, and why (`denied_message` replaces the
/// plain "permission denied" where the caller knows more).
fn set_file_status(src: &mut LogSource, h: &FileHeader, denied_message: Option<&str>) {
    let (status, message) = h.section_status();
    src.status = status;
    src.message = match (status, message) {
        (_, Some(message)) => Some(message.into()),
        (SectionStatus::PermissionDenied, None) => denied_message.map(String::from),
        (SectionStatus::Failed, None) => Some(h.status.describe()),
        _ => None,
    };
}

/// Parses the `journal` section (`journalctl -o short-iso` per unit).
pub fn parse_journal(
    body: &[u8],
    boundary: &str,
    clock: Option<UnixTime>,
    tz: i64,
    cap: u64,
) -> Vec<LogSource> {
    let mut out = Vec::new();
    let recs = records(body, boundary);
    for (i, r) in recs.iter().enumerate() {
        let Some(rest) = r.header.strip_prefix("unit ") else {
            continue;
        };
        let name = match rest.split_once(' ') {
            // A container logging to the journal: its entries, by their CONTAINER_NAME field.
            Some(("container", n)) => sanitize_line(&format!("CONTAINER_NAME={n}")),
            Some((_, n)) => sanitize_line(n),
            None => sanitize_line(rest),
        };
        let mut src = LogSource {
            origin: LogOrigin::Journal,
            location: name,
            bytes_read: r.data.len() as u64,
            ..Default::default()
        };
        if let Some(thinning) = thinning_after(&recs, i) {
            read_thinned(r.data, thinning, clock, tz, &mut src);
            if r.data.is_empty() {
                src.status = SectionStatus::NotPresent;
                src.message = Some("no journal entries".into());
            }
            out.push(src);
            continue;
        }
        src.truncated = r.data.len() as u64 >= cap;
        parse_text(&String::from_utf8_lossy(r.data), clock, tz, &mut src);
        if r.data.is_empty() {
            src.status = SectionStatus::NotPresent;
            src.message = Some("no journal entries".into());
        } else if src.unreadable_lines > 0 {
            src.status = SectionStatus::Truncated;
            src.message = Some(format!(
                "read only in part: {} journal lines came as \"[N blob data]\" (journalctl \
                 without -a) and were not read",
                src.unreadable_lines
            ));
        } else if src.truncated {
            src.status = SectionStatus::Truncated;
            src.message = Some(format!("read only in part: the newest {cap} bytes"));
        }
        out.push(src);
    }
    out
}

/// Decoded lines kept per container log (the newest).
pub const MAX_CONTAINER_LINES: usize = 200_000;
/// Decoded lines over all container logs of one collection.
pub const MAX_CONTAINER_LINES_TOTAL: usize = 1_000_000;
/// Longest line rebuilt from partial entries (docker splits lines at 16 KiB).
const MAX_JOINED_LINE: usize = 1 << 20;

/// Log drivers whose file [`decode_container_log`] reads.
pub fn container_log_readable(driver: &str) -> bool {
    matches!(driver, "json-file" | "k8s-file")
}

/// One entry of docker's json-file log.
#[derive(serde::Deserialize)]
struct JsonEntry {
    #[serde(default)]
    log: String,
    #[serde(default)]
    stream: String,
    #[serde(default)]
    time: String,
}

/// Lines being rebuilt from partial entries, per stream (stdout, everything else).
#[derive(Default)]
struct Joiner {
    parts: [Option<(Option<UnixTime>, String)>; 2],
    out: Vec<(Option<UnixTime>, String)>,
    budget: usize,
}

impl Joiner {
    /// Adds one entry's text; `done`: the entry ends its line.
    fn push(&mut self, stream: &str, time: Option<UnixTime>, text: &str, done: bool) {
        let slot = usize::from(stream != "stdout");
        let Some(part) = self.parts.get_mut(slot) else {
            return;
        };
        let (t0, mut line) = part.take().unwrap_or((time, String::new()));
        if line.len() < MAX_JOINED_LINE {
            let mut end = text.len().min(MAX_JOINED_LINE - line.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            line.push_str(text.get(..end).unwrap_or(""));
        }
        if done {
            self.emit(t0, &line);
        } else {
            *part = Some((t0, line));
        }
    }

    fn emit(&mut self, time: Option<UnixTime>, text: &str) {
        for l in text.split('\n') {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            self.out
                .push((time, l.strip_suffix('\r').unwrap_or(l).to_string()));
        }
        if self.out.len() > 2 * MAX_CONTAINER_LINES {
            self.out.drain(..MAX_CONTAINER_LINES);
        }
    }

    fn finish(mut self) -> Vec<(Option<UnixTime>, String)> {
        for slot in 0..self.parts.len() {
            if let Some((t, l)) = self.parts.get_mut(slot).and_then(Option::take) {
                self.emit(t, &l);
            }
        }
        let mut out = self.out;
        if out.len() > MAX_CONTAINER_LINES {
            out.drain(..out.len() - MAX_CONTAINER_LINES);
        }
        out
    }
}

/// Decodes the text of a container runtime's log file into (time, line) pairs: docker
/// `json-file` (one JSON object a line, `{"log":"...\n","stream":"stdout","time":"RFC 3339"}`;
/// an entry whose `log` lacks the final `\n` is the first part of a longer line) or podman/CRI
/// `k8s-file` (`TIME STREAM P|F TEXT`, `P` = partial). Stdout and stderr are joined
/// separately. Returns the lines (the newest [`MAX_CONTAINER_LINES`], at most `budget` lines
/// decoded, which is decreased) and how many lines could not be decoded.
pub fn decode_container_log(
    data: &[u8],
    driver: &str,
    budget: &mut usize,
) -> (Vec<(Option<UnixTime>, String)>, usize) {
    let mut j = Joiner {
        budget: *budget,
        ..Default::default()
    };
    let mut bad = 0usize;
    for raw in data.split(|&c| c == b'\n') {
        if j.budget == 0 {
            break;
        }
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match driver {
            "k8s-file" => {
                let l = String::from_utf8_lossy(raw);
                let mut it = l.splitn(4, ' ');
                let (Some(t), Some(stream), Some(tag)) = (it.next(), it.next(), it.next()) else {
                    bad += 1;
                    continue;
                };
                let time = super::parse_rfc3339(t);
                if time.is_none() || !matches!(tag, "F" | "P") {
                    bad += 1;
                    continue;
                }
                let text = it.next().unwrap_or("");
                j.push(stream, time, text, tag == "F");
            }
            _ => match serde_json::from_slice::<JsonEntry>(raw) {
                Ok(e) => {
                    let time = super::parse_rfc3339(&e.time);
                    let (text, done) = match e.log.strip_suffix('\n') {
                        Some(t) => (t, true),
                        None => (e.log.as_str(), false),
                    };
                    j.push(&e.stream, time, text, done);
                }
                Err(_) => bad += 1,
            },
        }
    }
    let used = *budget - j.budget;
    *budget -= used;
    (j.finish(), bad)
}

/// Parses the `container_logs` section: per container a `clog DRIVER` record, then the tail
/// of its log file; decoded by driver and read for start-ups and metrics with the runtime's
/// own line times.
pub fn parse_container_logs(
    body: &[u8],
    boundary: &str,
    clock: Option<UnixTime>,
    tz: i64,
) -> Vec<LogSource> {
    let mut out = Vec::new();
    let mut driver = String::new();
    let mut budget = MAX_CONTAINER_LINES_TOTAL;
    let recs = records(body, boundary);
    for (i, r) in recs.iter().enumerate() {
        if let Some(d) = r.header.strip_prefix("clog ") {
            driver = d.trim().to_string();
            continue;
        }
        out.extend(container_source(&recs, i, &driver, &mut budget, clock, tz));
    }
    out
}

/// The container log of the file record `recs[i]`, decoded as `driver` writes it (`None`: not
/// a file record); `budget`: decoded lines left for the collection.
fn container_source(
    recs: &[crate::frame::Record<'_>],
    i: usize,
    driver: &str,
    budget: &mut usize,
    clock: Option<UnixTime>,
    tz: i64,
) -> Option<LogSource> {
    let r = recs.get(i).filter(|r| r.kind == 'F')?;
    let h = file_header(&r.header);
    let mut src = LogSource {
        origin: LogOrigin::Container,
        location: h.path.clone(),
        mtime: h.mtime,
        ..Default::default()
    };
    match h.status {
        FileStatus::Ok if !container_log_readable(driver) => {
            src.status = SectionStatus::Failed;
            src.message = Some(format!(
                "log driver {}: not a text log this collector reads",
                sanitize_line(driver)
            ));
        }
        FileStatus::Ok => {
            let thinning = thinning_after(recs, i);
            src.bytes_read = r.data.len() as u64;
            src.truncated = thinning.is_none() && h.size.is_some_and(|s| s > r.data.len() as u64);
            let mut data = r.data;
            if src.truncated {
                // A tail starts mid-line.
                data = data
                    .iter()
                    .position(|&c| c == b'\n')
                    .and_then(|i| data.get(i + 1..))
                    .unwrap_or(&[]);
            }
            let (lines, bad) = decode_container_log(data, driver, budget);
            parse_timed_lines(
                lines.iter().map(|(t, l)| (*t, l.as_str())),
                h.mtime.or(clock),
                tz,
                &mut src,
            );
            if src.truncated {
                src.status = SectionStatus::Truncated;
            }
            if let Some(t) = thinning {
                finish_thinning(t, &mut src);
            }
            if bad > 0 && lines.is_empty() {
                src.status = SectionStatus::Failed;
                src.message = Some(format!(
                    "not a {} log: none of its {bad} lines could be decoded",
                    sanitize_line(driver)
                ));
            } else if bad > 0 {
                src.message = Some(format!("{bad} lines could not be decoded"));
            }
            if *budget == 0 {
                src.message = Some(format!(
                    "stopped decoding after {MAX_CONTAINER_LINES_TOTAL} lines of container logs"
                ));
            }
        }
        _ => set_file_status(
            &mut src,
            &h,
            Some("readable by root only (needs root or --sudo)"),
        ),
    }
    Some(src)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A missing log file whose name came with U+FFFD (a name that is not UTF-8) says why;
    /// a plain missing file stays a plain `not_present`. `(path, message)`.
    #[test]
    fn a_missing_log_whose_name_was_not_utf8_says_so() {
        const B: &str = "00112233445566778899aabbccddeeff";
        let cases = [("/root/caf\u{fffd}.log", true), ("/root/cafe.log", false)];
        for (path, said) in cases {
            let body = format!("{B} F missing log 0 0 {path}\n");
            let sources = parse_files(body.as_bytes(), B, None, 0);
            assert_eq!(sources.len(), 1, "{path}");
            assert_eq!(sources[0].status, SectionStatus::NotPresent, "{path}");
            assert_eq!(
                sources[0]
                    .message
                    .as_deref()
                    .is_some_and(|m| m.contains("not UTF-8")),
                said,
                "{path}: {:?}",
                sources[0].message
            );
        }
    }

    /// The definition test: every entry of `configs/log_lines.toml` reads its own sample line (a
    /// line as the engine prints it, prefixes included) through the whole reader as it says.
    #[test]
    fn every_sample_reads_through_the_log_reader() {
        use engine_lines::Reads;
        let samples = engine_lines::samples();
        assert!(samples.len() >= 60, "{}", samples.len());
        for s in samples {
            let what = format!("{} {:?}: {}", s.engine, s.reads, s.line);
            let engine = engine_of(s.engine);
            let mut src = LogSource::default();
            parse_text(s.line, Some(1_800_000_000), 0, &mut src);
            match &s.reads {
                Reads::Prefix { place, time } => {
                    let (at, rest) = strip_line_prefixes(s.line, Some(1_800_000_000), 0);
                    assert!(at.is_some() || !*time, "{what}: no time");
                    if *place != Place::Line {
                        assert!(rest.len() < s.line.len(), "{what}: nothing taken off");
                    }
                }
                Reads::Version => {
                    assert!(
                        src.versions.iter().any(|v| v.engine == engine),
                        "{what}: {:?}",
                        src.versions
                    );
                }
                Reads::Startup => {
                    assert!(
                        src.startups.iter().any(|v| v.engine == engine),
                        "{what}: {:?}",
                        src.startups
                    );
                }
                Reads::Metrics(names) => {
                    for n in names {
                        assert!(
                            src.metrics.iter().any(|m| m.name == *n),
                            "{what}: no {n} in {:?}",
                            src.metrics
                        );
                    }
                }
                Reads::Limits(keys) => {
                    for k in keys {
                        assert!(
                            src.limits
                                .iter()
                                .any(|l| l.engine == engine && l.values.contains_key(*k)),
                            "{what}: no {k} in {:?}",
                            src.limits
                        );
                    }
                }
            }
        }
    }

    /// TGI's launcher arguments, as each release and output format logs them: one line
    /// (`{:?}`), many lines (`{:#?}`, a line that is not a continuation ends the block and is read
    /// as usual), and JSON output with the message escaped.
    #[test]
    fn tgi_launcher_args() {
        let one = "2024-02-06T16:11:25.163010Z  INFO text_generation_launcher: Args { model_id: \"TheBloke/Llama-2-7B-GPTQ\", num_shard: Some(2), quantize: Some(Gptq), max_input_length: 4095, max_total_tokens: 4096 }\n";
        let many = "2024-08-28T15:18:57.451962Z  INFO text_generation_launcher: Args {\n    model_id: \"meta-llama/Llama-3.1-8B-Instruct\",\n    lora_adapters: Some(\n        \"a,b\",\n    ),\n    max_concurrent_requests: 128,\n}\n\
                    2024-08-28T15:19:05.001Z  INFO text_generation_launcher: Starting download process.\n";
        let cut = "2024-08-28T15:18:57.451962Z  INFO text_generation_launcher: Args {\n    model_id: \"x\",\n2024-08-28T15:19:05.001Z  INFO text_generation_router: time_per_token=\"49.697663ms\"\n";
        let json = r#"{"timestamp":"2024-08-28T15:18:57.451962Z","level":"INFO","fields":{"message":"Args {\n    model_id: \"bigscience/bloom-560m\",\n    max_batch_prefill_tokens: Some(\n        4096,\n    ),\n}"},"target":"text_generation_launcher"}"#;
        let read = |t: &str| {
            let mut s = LogSource::default();
            parse_text(t, None, 0, &mut s);
            s
        };
        let s = read(one);
        assert_eq!(s.startups.len(), 1);
        assert_eq!(s.startups[0].engine, probe_model::Engine::Tgi);
        assert!(
            s.startups[0]
                .text
                .starts_with("Args { model_id: \"TheBloke"),
            "{:?}",
            s.startups
        );
        assert_eq!(
            s.startups[0].time,
            super::super::parse_rfc3339("2024-02-06T16:11:25.163010Z")
        );
        let s = read(many);
        assert_eq!(
            s.startups[0].text,
            "Args { model_id: \"meta-llama/Llama-3.1-8B-Instruct\", lora_adapters: Some( \"a,b\", ), max_concurrent_requests: 128, }"
        );
        let s = read(cut);
        assert_eq!(s.startups.len(), 1);
        assert!(s.startups[0].text.ends_with("model_id: \"x\","));
        assert!(
            s.metrics.iter().any(|m| m.name == "request_tpot_ms"),
            "the line after an unclosed block is read: {:?}",
            s.metrics
        );
        let s = read(&format!("{json}\n"));
        assert_eq!(s.startups.len(), 1, "{s:?}");
        assert!(
            s.startups[0]
                .text
                .contains("model_id: \"bigscience/bloom-560m\"")
        );
        assert!(!s.startups[0].text.contains('\n'));
        // Args of another program are no TGI start-up.
        assert!(read("Args { x: 1 }\n").startups.is_empty());
        // The same block as the journal holds it (`journalctl -o short-iso`): one entry a line.
        let journal = "2026-11-08T10:02:11+00:00 h text-generation-launcher[2214]: 2026-11-08T10:02:11.200000Z  INFO text_generation_launcher: Args {\n\
                       2026-11-08T10:02:11+00:00 h text-generation-launcher[2214]:     model_id: \"m\",\n\
                       2026-11-08T10:02:11+00:00 h text-generation-launcher[2214]:     cuda_graphs: None,\n\
                       2026-11-08T10:02:11+00:00 h text-generation-launcher[2214]: }\n";
        let s = read(journal);
        assert_eq!(
            s.startups.first().map(|x| x.text.as_str()),
            Some("Args { model_id: \"m\", cuda_graphs: None, }"),
            "{s:?}"
        );
    }

    #[test]
    fn sglang_lines() {
        let t = "[2026-10-30 11:59:00] server_args=ServerArgs(model_path='/models/q', tp_size=2, speculative_algorithm='NEXTN')\n\
                 [2026-10-30 12:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 128, full token usage: 0.00, mamba usage: 0.05, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 7.34\n\
                 [2026-10-30 12:00:05 TP0] Decode batch, #running-req: 9, #full token: 11584, full token usage: 0.01, mamba num: 36, mamba usage: 0.60, accept len: 3.04, accept rate: 0.68, cuda graph: True, gen throughput (token/s): 422.40, #queue-req: 1\n\
                 \x1b[32m[2026-10-30 12:00:09 TP0] Decode batch, #running-req: 13, #full token: 8704, full token usage: 0.02, mamba num: 36, mamba usage: 0.62, accept len: 3.20, accept rate: 0.73, cuda graph: True, gen throughput (token/s): 980.50, #queue-req: 2\x1b[0m\n";
        let mut s = LogSource::default();
        parse_text(t, None, 0, &mut s);
        assert_eq!(s.startups.len(), 1);
        assert_eq!(s.startups[0].engine, probe_model::Engine::Sglang);
        assert_eq!(
            s.startups[0].time,
            super::super::parse_datetime("2026-10-30 11:59:00")
        );
        assert!(
            s.startups[0]
                .text
                .starts_with("ServerArgs(model_path='/models/q'")
        );
        let m = |n: &str| s.metrics.iter().find(|x| x.name == n).unwrap();
        assert_eq!(m("gen_throughput").summary.count, 2);
        assert_eq!(m("gen_throughput").summary.max, 980.5);
        assert_eq!(m("gen_throughput").summary.last, 980.5);
        assert_eq!(m("accept_len").summary.min, 3.04);
        assert_eq!(m("mamba_usage").summary.count, 2);
        assert_eq!(m("token_usage").summary.count, 2);
        assert_eq!(m("running_reqs").summary.max, 13.0);
        assert_eq!(m("input_throughput").summary.count, 1);
        assert_eq!(
            m("gen_throughput").summary.first_time,
            super::super::parse_datetime("2026-10-30 12:00:05")
        );
    }

    #[test]
    fn vllm_lines_and_year() {
        let t = "(APIServer pid=1234) INFO 11-01 09:59:00 [api_server.py:1] vLLM API server version 0.11.0\n\
                 (APIServer pid=1234) INFO 11-01 09:59:01 [utils.py:1] non-default args: {'model': '/models/m', 'tensor_parallel_size': 4, 'api_key': 'x'}\n\
                 (APIServer pid=1234) INFO 11-01 10:00:00 [loggers.py:336] Engine 000: Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: 1830.5 tokens/s, Running: 24 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 43.1%\n\
                 (APIServer pid=1234) INFO 11-01 10:00:00 [metrics.py:121] SpecDecoding metrics: Mean acceptance length: 2.38, Accepted throughput: 123.40 tokens/s, Drafted throughput: 178.30 tokens/s, Accepted: 1234 tokens, Drafted: 1783 tokens, Per-position acceptance rate: 0.812, 0.655, 0.512, Avg Draft acceptance rate: 69.2%\n";
        let reference = super::super::parse_datetime("2026-11-02 00:00:00");
        let mut s = LogSource::default();
        parse_text(t, reference, 0, &mut s);
        assert_eq!(s.startups.len(), 1);
        assert_eq!(s.startups[0].version.as_deref(), Some("0.11.0"));
        assert_eq!(
            s.startups[0].time,
            super::super::parse_datetime("2026-11-01 09:59:01")
        );
        let m = |n: &str| s.metrics.iter().find(|x| x.name == n).unwrap();
        assert_eq!(m("gen_throughput").summary.last, 1830.5);
        assert!((m("kv_cache_usage").summary.last - 0.125).abs() < 1e-9);
        assert!((m("accept_rate").summary.last - 0.692).abs() < 1e-9);
        assert_eq!(m("accept_len").summary.last, 2.38);
        assert_eq!(m("running_reqs").summary.last, 24.0);
        // A December line read in January belongs to the previous year.
        let mut s = LogSource::default();
        let jan = super::super::parse_datetime("2027-01-02 00:00:00");
        parse_text(
            "INFO 12-31 23:00:00 [x.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%\n",
            jan,
            0,
            &mut s,
        );
        assert_eq!(
            s.metrics[0].summary.first_time,
            super::super::parse_datetime("2026-12-31 23:00:00")
        );
    }

    #[test]
    fn journal_prefix() {
        let body = "\nB R unit system sglang.service\n2026-10-30T12:00:05+0000 gpu7 python3[4242]: [2026-10-30 12:00:05 TP0] Decode batch, #running-req: 9, #token: 45210, token usage: 0.21, cuda graph: True, gen throughput (token/s): 2150.37, #queue-req: 0\n";
        let s = parse_journal(body.as_bytes(), "B", None, 0, 1 << 22);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].location, "sglang.service");
        assert_eq!(
            s[0].metrics
                .iter()
                .find(|m| m.name == "gen_throughput")
                .unwrap()
                .summary
                .last,
            2150.37
        );
    }

    #[test]
    fn journal_lifecycle_limits_versions_and_blobs() {
        // As vLLM 0.11 writes under systemd (coloured prefix), read with `journalctl -a`, plus
        // one line as journalctl prints it without `-a`.
        let body = "\nB R unit system vllm.service\n\
2026-11-20T16:31:11+00:00 h systemd[1]: Started vllm.service - vLLM.\n\
2026-11-20T16:31:12+00:00 h vllm[1571]: \u{1b}[1;36m(APIServer pid=1571)\u{1b}[0;0m INFO 11-20 16:31:12 [api_server.py:1885] vLLM API server version 0.10.1.1\n\
2026-11-20T16:32:40+00:00 h vllm[1571]: (EngineCore_DP0 pid=1578) INFO 11-20 16:32:40 [kv_cache_utils.py:1087] GPU KV cache size: 1,234,560 tokens\n\
2026-11-20T16:32:40+00:00 h vllm[1571]: (EngineCore_DP0 pid=1578) INFO 11-20 16:32:40 [kv_cache_utils.py:1091] Maximum concurrency for 65,536 tokens per request: 18.84x\n\
2026-11-20T16:40:00+00:00 h vllm[1571]: [253B blob data]\n\
2026-11-20T17:00:00+00:00 h systemd[1]: Stopping vllm.service - vLLM...\n\
2026-11-20T17:00:04+00:00 h systemd[1]: vllm.service: Main process exited, code=killed, status=9/KILL\n\
2026-11-20T17:00:04+00:00 h systemd[1]: vllm.service: Deactivated successfully.\n";
        let s = parse_journal(body.as_bytes(), "B", None, 0, 1 << 22);
        let j = &s[0];
        let kinds: Vec<probe_model::LifecycleKind> = j.lifecycle.iter().map(|e| e.kind).collect();
        use probe_model::LifecycleKind::*;
        assert_eq!(kinds, vec![Started, Stopping, Exited, Stopped]);
        assert_eq!(j.versions.len(), 1);
        assert_eq!(j.versions[0].version, "0.10.1.1");
        assert_eq!(j.limits.len(), 1, "{:?}", j.limits);
        assert_eq!(j.limits[0].values["kv_cache_tokens"], 1_234_560.0);
        assert_eq!(j.limits[0].values["max_concurrency"], 18.84);
        assert_eq!(j.limits[0].values["max_model_len"], 65_536.0);
        assert_eq!(j.unreadable_lines, 1);
        assert_eq!(j.status, SectionStatus::Truncated);
        assert!(j.message.as_deref().unwrap_or("").contains("blob data"));
    }

    #[test]
    fn sglang_limits_line() {
        let cases: &[(&str, &[(&str, f64)])] = &[
            (
                "[2026-11-05 08:01:38 TP0] max_total_num_tokens=1286144, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=131072, available_gpu_mem=12.40 GB",
                &[
                    ("max_total_num_tokens", 1_286_144.0),
                    ("max_running_requests", 2048.0),
                    ("context_len", 131_072.0),
                    ("available_gpu_mem_gb", 12.4),
                ],
            ),
            (
                "[2026-11-05 08:01:38] server_args=ServerArgs(max_running_requests=48)",
                &[],
            ),
            (
                "[2026-11-05 08:01:38 TP0] Decode batch, #running-req: 9",
                &[],
            ),
        ];
        for (line, expected) in cases {
            let mut src = LogSource::default();
            parse_text(line, None, 0, &mut src);
            let got = src
                .limits
                .first()
                .map(|l| l.values.clone())
                .unwrap_or_default();
            for (k, v) in *expected {
                assert_eq!(got.get(*k), Some(v), "{line}: {got:?}");
            }
            if expected.is_empty() {
                assert!(src.limits.is_empty(), "{line}: {:?}", src.limits);
            }
        }
    }

    #[test]
    fn docker_json_file() {
        // vLLM lines as docker's json-file driver stores them: the engine's own `MM-DD`
        // timestamp (no year, container time zone) loses to docker's per-line `time`; a
        // start-up line over 16 KiB arrives in parts; stderr interleaves with stdout.
        let long = "x".repeat(20_000);
        let args =
            format!("{{'model': '/mnt/models/L', 'tensor_parallel_size': 4, 'pad': '{long}'}}");
        let (a, b) = args.split_at(16_384 - 60);
        let j = |log: &str, stream: &str, time: &str| {
            format!(
                "{}\n",
                serde_json::json!({"log": log, "stream": stream, "time": time})
            )
        };
        let mut text = String::from("{\"log\":\"cut off\\n\",\"stre"); // a tail's first line
        text = text.split_at(10).0.to_string() + "\n";
        text += &j(
            "(APIServer pid=7) INFO 11-30 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n",
            "stdout",
            "2026-11-30T10:00:00.1Z",
        );
        text += &j(
            &format!("(APIServer pid=7) INFO 11-30 10:00:01 [utils.py:233] non-default args: {a}"),
            "stdout",
            "2026-11-30T10:00:01.123456789Z",
        );
        text += &j(
            "(EngineCore_DP0 pid=9) WARNING 11-30 10:00:01 [x.py:1] partial line on stderr\n",
            "stderr",
            "2026-11-30T10:00:01.2Z",
        );
        text += &j(&format!("{b}\n"), "stdout", "2026-11-30T10:00:01.3Z");
        text += "garbage that is not json\n";
        for (i, t) in ["2026-11-30T10:00:05Z", "2026-11-30T10:00:06.5Z"]
            .iter()
            .enumerate()
        {
            text += &j(
                &format!(
                    "(APIServer pid=7) INFO 01-01 00:00:0{i} [loggers.py:127] Engine 000: Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: {}.5 tokens/s, Running: 24 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 43.1%\n",
                    2100 + i
                ),
                "stdout",
                t,
            );
        }
        let mut budget = MAX_CONTAINER_LINES_TOTAL;
        let (lines, bad) = decode_container_log(text.as_bytes(), "json-file", &mut budget);
        assert_eq!(bad, 2, "the cut first line and the garbage");
        assert_eq!(lines.len(), 5);
        assert_eq!(budget, MAX_CONTAINER_LINES_TOTAL - 5);
        let mut s = LogSource::default();
        parse_timed_lines(
            lines.iter().map(|(t, l)| (*t, l.as_str())),
            None,
            3600,
            &mut s,
        );
        assert_eq!(s.startups.len(), 1);
        assert_eq!(s.startups[0].version.as_deref(), Some("0.11.0"));
        assert_eq!(
            s.startups[0].time,
            super::super::parse_rfc3339("2026-11-30T10:00:01Z")
        );
        assert!(
            s.startups[0]
                .text
                .starts_with("{'model': '/mnt/models/L', 'tensor_parallel_size': 4")
        );
        assert!(
            s.startups[0]
                .text
                .ends_with(&format!("{}'}}", "x".repeat(10)))
        );
        let g = &s
            .metrics
            .iter()
            .find(|m| m.name == "gen_throughput")
            .unwrap()
            .summary;
        assert_eq!((g.count, g.last), (2, 2101.5));
        assert_eq!(
            g.first_time,
            super::super::parse_rfc3339("2026-11-30T10:00:05Z")
        );
        assert_eq!(
            g.last_time,
            super::super::parse_rfc3339("2026-11-30T10:00:06Z")
        );
        // Parse through the section record format.
        let body = format!(
            "\nB R clog json-file\n\nB F ok log 1795000000 {} /var/lib/docker/containers/c/c-json.log\n{text}",
            text.len()
        );
        let l = parse_container_logs(body.as_bytes(), "B", None, 0);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].origin, LogOrigin::Container);
        assert_eq!(l[0].location, "/var/lib/docker/containers/c/c-json.log");
        assert_eq!(l[0].status, SectionStatus::Ok);
        assert_eq!(
            l[0].message.as_deref(),
            Some("2 lines could not be decoded")
        );
        assert_eq!(l[0].startups.len(), 1);
        // A binary (`local` driver) or non-JSON file is recorded, not parsed.
        let body = "\nB R clog local\n\nB F ok log 1 4 /x\n\u{1}\u{2}\u{3}\n\nB R clog json-file\n\nB F ok log 1 4 /y\nabc\n\nB R clog json-file\n\nB F denied log - - /z\n";
        let l = parse_container_logs(body.as_bytes(), "B", None, 0);
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].status, SectionStatus::Failed);
        assert!(
            l[0].message
                .as_deref()
                .unwrap()
                .contains("log driver local")
        );
        assert_eq!(l[1].status, SectionStatus::Failed);
        assert!(
            l[1].message
                .as_deref()
                .unwrap()
                .contains("none of its 1 lines")
        );
        assert_eq!(l[2].status, SectionStatus::PermissionDenied);
    }

    #[test]
    fn podman_k8s_file_and_budget() {
        let text = "2026-11-30T10:00:00.5+01:00 stdout P [2026-11-30 10:00:00 TP0] Decode batch, #running-req: 9, gen thr\n\
                    2026-11-30T10:00:00.6+01:00 stderr F some warning\n\
                    2026-11-30T10:00:00.7+01:00 stdout F oughput (token/s): 422.40, #queue-req: 1\n\
                    not a k8s line\n";
        let mut budget = 10;
        let (lines, bad) = decode_container_log(text.as_bytes(), "k8s-file", &mut budget);
        assert_eq!(bad, 1);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[1].1,
            "[2026-11-30 10:00:00 TP0] Decode batch, #running-req: 9, gen throughput (token/s): 422.40, #queue-req: 1"
        );
        assert_eq!(
            lines[1].0,
            super::super::parse_rfc3339("2026-11-30T09:00:00Z")
        );
        let mut s = LogSource::default();
        parse_timed_lines(lines.iter().map(|(t, l)| (*t, l.as_str())), None, 0, &mut s);
        let g = &s
            .metrics
            .iter()
            .find(|m| m.name == "gen_throughput")
            .unwrap()
            .summary;
        assert_eq!(g.last, 422.4);
        assert_eq!(
            g.last_time,
            super::super::parse_rfc3339("2026-11-30T09:00:00Z")
        );
        // The total budget stops decoding.
        let many = "{\"log\":\"a\\n\",\"stream\":\"stdout\",\"time\":\"2026-11-30T10:00:00Z\"}\n"
            .repeat(50);
        let mut budget = 7;
        let (lines, _) = decode_container_log(many.as_bytes(), "json-file", &mut budget);
        assert_eq!((lines.len(), budget), (7, 0));
    }

    #[test]
    fn llama_cpp_print_timing_lines() {
        // (log text, series, count, last value)
        let cases: &[(&str, &str, u64, f64)] = &[
            (
                "slot print_timing: id  0 | task 42 | \nprompt eval time =     123.45 ms /    12 tokens (   10.29 ms per token,    97.21 tokens per second)\n       eval time =    1234.56 ms /   100 tokens (   12.35 ms per token,    81.00 tokens per second)\n      total time =    1358.01 ms /   112 tokens\n",
                "request_gen_throughput",
                1,
                81.0,
            ),
            (
                "prompt eval time =     123.45 ms /    12 tokens (   10.29 ms per token,    97.21 tokens per second)\n",
                "request_prompt_ms",
                1,
                123.45,
            ),
            (
                "       eval time =    1234.56 ms /   100 tokens (   12.35 ms per token,    81.00 tokens per second)\n       eval time =    1000.00 ms /   100 tokens (   10.00 ms per token,   100.00 tokens per second)\n",
                "request_tpot_ms",
                2,
                10.0,
            ),
            // Older builds (llama_print_timings) say `runs`.
            (
                "llama_print_timings:        eval time =   500.00 ms /    49 runs   (   10.20 ms per token,    98.00 tokens per second)\n",
                "request_gen_throughput",
                1,
                98.0,
            ),
        ];
        for (text, name, count, last) in cases {
            let mut src = LogSource::default();
            parse_text(text, None, 0, &mut src);
            let m = src.metrics.iter().find(|m| m.name == *name);
            assert_eq!(
                m.map(|m| m.summary.count),
                Some(*count),
                "{name} in {text:?}"
            );
            assert_eq!(m.map(|m| m.summary.last), Some(*last), "{name} in {text:?}");
        }
        // Not timings: a total line, a garbled one.
        let mut src = LogSource::default();
        parse_text(
            "      total time =    1358.01 ms /   112 tokens\neval time = x ms / 3 tokens (\n",
            None,
            0,
            &mut src,
        );
        assert!(src.metrics.is_empty());
    }

    #[test]
    fn bounded_points() {
        let mut t = String::new();
        for i in 0..20_000 {
            t.push_str(&format!("[2026-10-30 12:00:00] Decode batch, #running-req: {i}, gen throughput (token/s): 1.0, #queue-req: 0\n"));
        }
        let mut s = LogSource::default();
        parse_text(&t, None, 0, &mut s);
        let m = s.metrics.iter().find(|m| m.name == "running_reqs").unwrap();
        assert_eq!(m.summary.count, 20_000);
        assert!(
            m.points.len() <= MAX_POINTS + RECENT_POINTS,
            "{}",
            m.points.len()
        );
        // The newest all, the first kept, the older ones evenly spread (one every 16th here).
        let values: Vec<f64> = m.points.iter().map(|p| p.1).collect();
        assert_eq!(values.first(), Some(&0.0));
        let recent: Vec<f64> = (20_000 - RECENT_POINTS..20_000).map(|v| v as f64).collect();
        assert_eq!(values[values.len() - RECENT_POINTS..], recent[..]);
        let older = &values[..values.len() - RECENT_POINTS];
        assert!(older.windows(2).all(|w| w[1] - w[0] == 16.0), "{older:?}");
    }
}
