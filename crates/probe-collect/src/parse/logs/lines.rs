//! Reading a log's lines: each line's prefixes (journal, process, an engine's timestamp)
//! stripped and its time read, then handed to the start-up, lifecycle and series readers.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use probe_model::{LogSource, UnixTime};
use regex::Regex;

use super::lifecycle::lifecycle;
use super::series::{Acc, finish_series, record_engine_lines};
use super::startups::{MAX_STARTUPS, OpenBlock, push_startup, read_block, read_texts};
use crate::parse::engine_lines::{self, Place, TimeForm};
use crate::sanitize::sanitize_terminal;

/// What journalctl writes for a line it holds binary (without `-a`).
pub(super) const BLOB_MARKER: &str = "blob data]";
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
/// Parses one log text. `reference`: a time near the end of the log (file mtime or the remote
/// clock), used to put the year on time stamps that have none (`month-day`); `tz`: UTC offset
/// of the host.
pub fn parse_text(t: &str, reference: Option<UnixTime>, tz: i64, src: &mut LogSource) {
    let clock = crate::parse::elapsed::Clock::of(t, reference);
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
pub(super) fn strip_line_prefixes(
    line: &str,
    reference: Option<UnixTime>,
    tz: i64,
) -> (Option<UnixTime>, &str) {
    let r = res();
    let mut l = line;
    let mut time = None;
    if let Some(c) = r.journal.captures(l) {
        time = c
            .get(1)
            .and_then(|m| crate::parse::parse_rfc3339(m.as_str()));
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
        TimeForm::Rfc3339 => text(1).and_then(crate::parse::parse_rfc3339),
        TimeForm::Local => text(1)
            .and_then(crate::parse::parse_datetime)
            .map(|x| x - tz),
        TimeForm::MonthDay => year_less_time(c, reference, tz),
        // Dated from the log's end, line by line, by `parse_text` (`crate::parse::elapsed`).
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
    let mut y = crate::parse::year_of(ref_t + tz);
    let mut at = crate::parse::civil(y, mo, d, h, mi, s).map(|x| x - tz);
    if let Some(a) = at
        && reference.is_some()
        && a > ref_t + 2 * 86_400
    {
        y -= 1;
        at = crate::parse::civil(y, mo, d, h, mi, s).map(|x| x - tz);
    }
    at
}
