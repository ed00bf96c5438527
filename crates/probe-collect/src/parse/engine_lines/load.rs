//! Loading `configs/log_lines.toml`: each entry compiled and checked against its own sample
//! line, the markers gathered into sets; and the accessors the log reader walks.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use super::defs::{
    Block, Entry, LogLines, Place, Prefix, Target, TextEntry, TextKind, TimeForm, Value,
};
use super::raw::{BlockToml, EntryToml, LogLinesToml, PrefixToml, TextToml};
use super::values::{number_before, value_of};
use crate::config::ConfigError;

const LOG_LINES: &str = include_str!("../../../../../configs/log_lines.toml");

pub(super) fn compile(text: &str) -> Result<LogLines, ConfigError> {
    let t: LogLinesToml = toml::from_str(text)?;
    let mut entries = Vec::new();
    for (target, list) in [(Target::Metric, t.metrics), (Target::Limit, t.limits)] {
        for e in list {
            entries.push(entry(target, e)?);
        }
    }
    let (markers, marked) = marker_set(&entries)?;
    let (texts, text_markers) = texts([
        (TextKind::Version, t.versions),
        (TextKind::Startup, t.startups),
        (TextKind::Loaded, t.loaded),
    ])?;
    let prefixes = t
        .prefixes
        .into_iter()
        .map(prefix)
        .collect::<Result<_, _>>()?;
    let blocks = t.blocks.into_iter().map(block).collect::<Result<_, _>>()?;
    Ok(LogLines {
        entries,
        markers,
        marked,
        texts,
        text_markers,
        prefixes,
        blocks,
        keep: t.keep,
    })
}

/// Each distinct marker of the entries once, as one set, and per marker the entries with it,
/// in file order.
fn marker_set(entries: &[Entry]) -> Result<(RegexSet, Vec<Vec<usize>>), ConfigError> {
    let mut distinct: Vec<String> = Vec::new();
    let mut marked: Vec<Vec<usize>> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let m = regex::escape(&e.marker);
        let m = if e.at_start { format!("^{m}") } else { m };
        match distinct.iter().position(|d| *d == m) {
            Some(k) => marked.get_mut(k).into_iter().for_each(|l| l.push(i)),
            None => {
                distinct.push(m);
                marked.push(vec![i]);
            }
        }
    }
    let markers = RegexSet::new(&distinct).map_err(ConfigError::pattern("the markers"))?;
    Ok((markers, marked))
}

/// The version, start-up and loaded-model text entries, compiled and checked, and their
/// markers as one set.
fn texts<const N: usize>(
    lists: [(TextKind, Vec<TextToml>); N],
) -> Result<(Vec<TextEntry>, RegexSet), ConfigError> {
    let mut texts = Vec::new();
    let mut text_markers = Vec::new();
    for (kind, list) in lists {
        for e in list {
            let (entry, marker) = text_entry(kind, e)?;
            text_markers.push(marker);
            texts.push(entry);
        }
    }
    let text_markers =
        RegexSet::new(text_markers).map_err(ConfigError::pattern("the text markers"))?;
    Ok((texts, text_markers))
}

/// One text entry, checked against its sample line, and its marker pattern.
fn text_entry(kind: TextKind, e: TextToml) -> Result<(TextEntry, String), ConfigError> {
    let pattern = Regex::new(&e.pattern).map_err(ConfigError::pattern(&e.pattern))?;
    if e.group == 0 || e.group >= pattern.captures_len() {
        return Err(ConfigError::Invalid(format!(
            "{}: no group {}",
            e.pattern, e.group
        )));
    }
    known_engine(&e.engine, &e.pattern)?;
    if e.versioned && kind != TextKind::Startup {
        return Err(ConfigError::Invalid(format!(
            "{}: only a start-up line is `versioned`",
            e.pattern
        )));
    }
    let m = regex::escape(&e.marker);
    let m = if e.ignore_case { format!("(?i){m}") } else { m };
    let holds_marker = Regex::new(&m).is_ok_and(|r| r.is_match(&e.sample));
    let reads = pattern
        .captures(&e.sample)
        .is_some_and(|c| c.get(e.group).is_some());
    if !holds_marker || e.unless.as_deref().is_some_and(|u| e.sample.contains(u)) || !reads {
        return Err(unread_sample(&e.engine, &e.marker, &e.sample));
    }
    let entry = TextEntry {
        kind,
        engine: e.engine,
        unless: e.unless,
        pattern,
        group: e.group,
        versioned: e.versioned,
        sample: e.sample,
    };
    Ok((entry, m))
}

/// One `[[block]]`, checked against its sample line.
fn block(b: BlockToml) -> Result<Block, ConfigError> {
    known_engine(&b.engine, &b.marker)?;
    if [&b.marker, &b.logger, &b.holds]
        .iter()
        .any(|x| x.is_empty())
    {
        return Err(ConfigError::Invalid(format!(
            "block {}: marker, logger and holds are not empty",
            b.marker
        )));
    }
    if !b.sample.contains(&b.marker)
        || !(b.sample.contains(&b.logger) || b.sample.contains(&b.holds))
    {
        return Err(unread_sample(&b.engine, &b.marker, &b.sample));
    }
    Ok(Block {
        json_marker: format!("\"message\":\"{}", b.marker),
        engine: b.engine,
        marker: b.marker,
        logger: b.logger,
        holds: b.holds,
        sample: b.sample,
    })
}

fn prefix(p: PrefixToml) -> Result<Prefix, ConfigError> {
    if !p.pattern.starts_with('^') {
        return Err(ConfigError::Invalid(format!(
            "{}: a prefix is anchored with `^`",
            p.pattern
        )));
    }
    let pattern = Regex::new(&p.pattern).map_err(ConfigError::pattern(&p.pattern))?;
    let groups = p.time.map_or(0, TimeForm::groups);
    if pattern.captures_len() <= groups {
        return Err(ConfigError::Invalid(format!(
            "{}: a {:?} time reads {groups} groups",
            p.pattern, p.time
        )));
    }
    if p.engines.is_empty() {
        return Err(ConfigError::Invalid(format!("{}: no engine", p.pattern)));
    }
    for e in &p.engines {
        known_engine(e, &p.pattern)?;
    }
    if !pattern.is_match(&p.sample) {
        return Err(unread_sample(&p.engines.join(", "), &p.pattern, &p.sample));
    }
    Ok(Prefix {
        place: p.place,
        pattern,
        time: p.time,
        sample: p.sample,
        engines: p.engines,
    })
}

/// An entry whose own sample line it does not read.
fn unread_sample(engine: &str, what: &str, sample: &str) -> ConfigError {
    ConfigError::Invalid(format!(
        "{engine} `{what}`: the entry does not read its own sample line {sample:?}"
    ))
}

fn known_engine(engine: &str, pattern: &str) -> Result<(), ConfigError> {
    if probe_model::Engine::parse(engine).is_none_or(|k| k == probe_model::Engine::Other) {
        return Err(ConfigError::Invalid(format!(
            "{pattern}: unknown engine `{engine}`"
        )));
    }
    Ok(())
}

fn entry(target: Target, e: EntryToml) -> Result<Entry, ConfigError> {
    let pattern = Regex::new(&e.pattern).map_err(ConfigError::pattern(&e.pattern))?;
    let mut values = Vec::new();
    for v in e.values {
        let name = match (target, v.name, v.key) {
            (Target::Metric, Some(n), None) | (Target::Limit, None, Some(n)) => n,
            _ => {
                return Err(ConfigError::Invalid(format!(
                    "{}: a metric has `name`, a limit `key`",
                    e.pattern
                )));
            }
        };
        let groups = pattern.captures_len();
        if v.group >= groups || v.divide_by.is_some_and(|d| d >= groups) {
            return Err(ConfigError::Invalid(format!(
                "{}: no group {}",
                e.pattern, v.group
            )));
        }
        values.push(Value {
            group: v.group,
            name,
            unit: v.unit.unwrap_or_default(),
            scale: v.scale,
            duration: v.duration,
            divide_by: v.divide_by,
        });
    }
    known_engine(&e.engine, &e.pattern)?;
    // An entry at the start of a message reads the sample from its marker on (the prefixes are
    // taken off before; the test `every_sample_reads_through_the_log_reader` reads it whole).
    let message = match e.sample.find(&e.marker) {
        Some(i) if e.at_start => e.sample.get(i..).unwrap_or(""),
        _ => e.sample.as_str(),
    };
    let reads = pattern.captures(message).is_some_and(|c| {
        values
            .iter()
            .all(|v: &Value| value_of(|g| c.get(g).map(|m| m.as_str()), v).is_some())
    });
    if !reads
        || !e.sample.contains(&e.marker)
        || e.unless.as_deref().is_some_and(|u| e.sample.contains(u))
    {
        return Err(unread_sample(&e.engine, &e.marker, &e.sample));
    }
    if target == Target::Metric && e.repeated.is_some() {
        return Err(ConfigError::Invalid(format!(
            "{}: only a limit is `repeated`",
            e.pattern
        )));
    }
    let mut entry = Entry {
        target,
        engine: e.engine,
        unless: e.unless,
        repeated: e.repeated.unwrap_or(true),
        at_start: e.at_start,
        marker: e.marker,
        suffix: None,
        pattern,
        values,
        sample: e.sample,
    };
    entry.suffix = number_at_end(&entry);
    Ok(entry)
}

/// The number group every simple metric pattern ends with.
const NUMBER_GROUP: &str = "([0-9]+(?:\\.[0-9]+)?)";

/// Whether the entry's one value is the number its match ends with, before a plain suffix
/// (`label: ([0-9]+(?:\.[0-9]+)?)%`): then `read_entry` (`read.rs`) takes it from a plain `find` (a
/// capture costs several times more, on every metric line). Checked against the sample.
fn number_at_end(e: &Entry) -> Option<String> {
    let [v] = e.values.as_slice() else {
        return None;
    };
    if v.group != 1 || v.duration || v.divide_by.is_some() || e.pattern.captures_len() != 2 {
        return None;
    }
    let p = e.pattern.as_str();
    let at = p.rfind(NUMBER_GROUP)?;
    let before = p.get(..at)?.chars().next_back()?;
    let suffix = p.get(at + NUMBER_GROUP.len()..)?;
    // The group follows a plain character that is no digit or dot (so the digits before the
    // suffix are the group's), and the suffix is plain text.
    let plain = |c: char| c.is_alphanumeric() || " :=%,x/".contains(c);
    let head = p.get(..at)?;
    if !plain(before)
        || before.is_ascii_digit()
        || !suffix.chars().all(plain)
        || head.contains("(?")
        || head.get(..head.len() - before.len_utf8())?.ends_with('\\')
    {
        return None;
    }
    let fast = number_before(e.pattern.find(&e.sample)?.as_str(), suffix);
    let slow = e
        .pattern
        .captures(&e.sample)
        .and_then(|c| value_of(|g| c.get(g).map(|m| m.as_str()), v));
    (fast.is_some() && fast.map(|x| x * v.scale) == slow).then(|| suffix.to_string())
}

static LOG_LINES_CONFIG: LazyLock<LogLines> =
    LazyLock::new(|| crate::config::built_in("configs/log_lines.toml", compile(LOG_LINES)));

/// The embedded `configs/log_lines.toml`.
pub fn log_lines() -> &'static LogLines {
    &LOG_LINES_CONFIG
}
/// The markers of the entries of one kind (metric or limit lines), in file order.
pub fn markers(target: Target) -> impl Iterator<Item = &'static str> {
    log_lines()
        .entries
        .iter()
        .filter(move |e| e.target == target)
        .map(|e| e.marker.as_str())
}

/// The prefixes of one place, in file order.
pub fn prefixes(place: Place) -> impl Iterator<Item = &'static Prefix> {
    log_lines()
        .prefixes
        .iter()
        .filter(move |p| p.place == place)
}
/// The `[[block]]` start-up records, in file order.
pub fn blocks() -> impl Iterator<Item = &'static Block> {
    log_lines().blocks.iter()
}

/// The substrings of the lines the host keeps in full beyond the limit markers (`keep`), in
/// file order.
pub fn keep() -> impl Iterator<Item = &'static str> {
    log_lines().keep.iter().map(String::as_str)
}
