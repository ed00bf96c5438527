//! The log lines of every engine, as data: `configs/log_lines.toml` says what each engine
//! writes before a message (its prefixes and time stamps), which lines hold its version and its
//! start-up settings, and, per metric or limit line, its marker, its pattern and which groups
//! are metric values or start-up limits. [`read`] tells what one line holds; the log reader
//! puts the values into series and limit records.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

use crate::config::ConfigError;
use serde::Deserialize;

const LOG_LINES: &str = include_str!("../../../../configs/log_lines.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogLinesToml {
    #[serde(rename = "metric", default)]
    metrics: Vec<EntryToml>,
    #[serde(rename = "limit", default)]
    limits: Vec<EntryToml>,
    #[serde(rename = "version", default)]
    versions: Vec<TextToml>,
    #[serde(rename = "startup", default)]
    startups: Vec<TextToml>,
    #[serde(rename = "prefix", default)]
    prefixes: Vec<PrefixToml>,
    #[serde(rename = "block", default)]
    blocks: Vec<BlockToml>,
    #[serde(default)]
    keep: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockToml {
    engine: String,
    marker: String,
    logger: String,
    holds: String,
    sample: String,
}

/// A start-up record that is a Rust `Debug` value, on one line or over many (TGI's launcher
/// `Args { ... }`; see `configs/log_lines.toml`).
pub struct Block {
    pub engine: String,
    /// Where the value starts (`Args {`).
    pub marker: String,
    /// The marker as JSON output's message field starts (`"message":"Args {`).
    pub json_marker: String,
    /// A line naming this logger holds the engine's value.
    pub logger: String,
    /// A value holding this is the engine's, whoever logged it.
    pub holds: String,
    /// A line as the engine prints it.
    pub sample: String,
}

/// What an engine writes before a message.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PrefixToml {
    engines: Vec<String>,
    place: Place,
    pattern: String,
    sample: String,
    #[serde(default)]
    time: Option<TimeForm>,
}

/// Where in a line a prefix stands (see `configs/log_lines.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    /// The start of a line that had no journal prefix: its time only, the line kept whole.
    Line,
    /// A process prefix, taken off.
    Process,
    /// The engine's own time stamp, taken off.
    Message,
}

/// How the groups of a prefix are a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeForm {
    /// Group 1, an RFC 3339 time with its zone.
    Rfc3339,
    /// Group 1, `YYYY-MM-DD HH:MM:SS` in the host's zone.
    Local,
    /// Groups 1-5: month, day, hour, minute, second in the host's zone, no year.
    MonthDay,
    /// Groups 1-4: minutes, seconds, milliseconds and microseconds since the process began to
    /// log (`M.SS.mmm.uuu`): no time of day on the line itself; a file's last run of such
    /// lines is dated back from the file's mtime (`parse::elapsed`).
    Elapsed,
}

impl TimeForm {
    /// The capture groups the form reads.
    fn groups(self) -> usize {
        match self {
            TimeForm::Rfc3339 | TimeForm::Local => 1,
            TimeForm::MonthDay => 5,
            TimeForm::Elapsed => 4,
        }
    }

    /// Whether one line shows a time of its own (an elapsed stamp needs the log's end).
    pub fn absolute(self) -> bool {
        self != TimeForm::Elapsed
    }
}

/// A prefix of `configs/log_lines.toml`, compiled.
pub struct Prefix {
    pub place: Place,
    /// Anchored at the start; stops at the prefix.
    pub pattern: Regex,
    pub time: Option<TimeForm>,
    /// A line as the engine prints it.
    pub sample: String,
    /// The engines that write it.
    pub engines: Vec<String>,
}

/// A line whose one group is text: the engine's version, or the settings it logs at start-up.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct TextToml {
    engine: String,
    marker: String,
    #[serde(default)]
    ignore_case: bool,
    #[serde(default)]
    unless: Option<String>,
    pattern: String,
    sample: String,
    group: usize,
    #[serde(default)]
    versioned: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct EntryToml {
    engine: String,
    marker: String,
    #[serde(default)]
    at_start: bool,
    #[serde(default)]
    unless: Option<String>,
    #[serde(default)]
    repeated: Option<bool>,
    pattern: String,
    sample: String,
    values: Vec<ValueToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ValueToml {
    group: usize,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    unit: Option<String>,
    #[serde(default = "one")]
    scale: f64,
    #[serde(default)]
    duration: bool,
    #[serde(default)]
    divide_by: Option<usize>,
}

fn one() -> f64 {
    1.0
}

/// What one value of a line is: a metric series or a start-up limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Metric,
    Limit,
}

struct Value {
    group: usize,
    /// The series name or the limit key.
    name: String,
    unit: String,
    scale: f64,
    duration: bool,
    divide_by: Option<usize>,
}

struct Entry {
    target: Target,
    engine: String,
    /// The substring every such line holds.
    marker: String,
    /// The line (its prefixes taken off) starts with the marker.
    at_start: bool,
    /// The entry's one value is the number its match ends with, before this suffix.
    suffix: Option<String>,
    unless: Option<String>,
    /// (Limits) the engine may print the line again within one start.
    repeated: bool,
    pattern: Regex,
    values: Vec<Value>,
    /// A line as the engine prints it.
    sample: String,
}

/// What a text line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// The engine's version.
    Version,
    /// The settings in effect, logged at each start (Ollama's `server config` line).
    Startup,
}

struct TextEntry {
    kind: TextKind,
    engine: String,
    unless: Option<String>,
    pattern: Regex,
    group: usize,
    versioned: bool,
    /// A line as the engine prints it.
    sample: String,
}

/// The compiled file: the entries and their markers as one set.
pub struct LogLines {
    entries: Vec<Entry>,
    /// Each distinct marker once (several entries share one).
    markers: RegexSet,
    /// Per pattern of `markers`, the entries with that marker, in file order.
    marked: Vec<Vec<usize>>,
    texts: Vec<TextEntry>,
    text_markers: RegexSet,
    prefixes: Vec<Prefix>,
    blocks: Vec<Block>,
    keep: Vec<String>,
}

/// The text one line held: what it is, the engine that printed it, the text, and (start-ups)
/// whether the record carries the engine's version from its version line.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundText {
    pub kind: TextKind,
    pub engine: &'static str,
    pub text: String,
    pub versioned: bool,
}

/// One value a line held.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A point of the series `name` in `unit`.
    Metric {
        name: &'static str,
        unit: &'static str,
        value: f64,
    },
    /// The start-up limit `key` of `engine`; `repeated`: the engine may print the line again
    /// within one start (a line that only repeats the start's values adds nothing).
    Limit {
        key: &'static str,
        engine: &'static str,
        value: f64,
        repeated: bool,
    },
}

fn compile(text: &str) -> Result<LogLines, ConfigError> {
    let t: LogLinesToml = toml::from_str(text)?;
    let mut entries = Vec::new();
    for (target, list) in [(Target::Metric, t.metrics), (Target::Limit, t.limits)] {
        for e in list {
            entries.push(entry(target, e)?);
        }
    }
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
    let mut texts = Vec::new();
    let mut text_markers = Vec::new();
    for (kind, list) in [
        (TextKind::Version, t.versions),
        (TextKind::Startup, t.startups),
    ] {
        for e in list {
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
            if !holds_marker || e.unless.as_deref().is_some_and(|u| e.sample.contains(u)) || !reads
            {
                return Err(unread_sample(&e.engine, &e.marker, &e.sample));
            }
            text_markers.push(m);
            texts.push(TextEntry {
                kind,
                engine: e.engine,
                unless: e.unless,
                pattern,
                group: e.group,
                versioned: e.versioned,
                sample: e.sample,
            });
        }
    }
    let text_markers =
        RegexSet::new(text_markers).map_err(ConfigError::pattern("the text markers"))?;
    let prefixes = t
        .prefixes
        .into_iter()
        .map(prefix)
        .collect::<Result<_, _>>()?;
    let mut blocks = Vec::new();
    for b in t.blocks {
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
        blocks.push(Block {
            json_marker: format!("\"message\":\"{}", b.marker),
            engine: b.engine,
            marker: b.marker,
            logger: b.logger,
            holds: b.holds,
            sample: b.sample,
        });
    }
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
/// (`label: ([0-9]+(?:\.[0-9]+)?)%`): then [`read_entry`] takes it from a plain `find` (a
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

/// The number a match ends with, before `suffix`.
fn number_before(matched: &str, suffix: &str) -> Option<f64> {
    let body = matched.strip_suffix(suffix)?;
    let start = body
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |i| i + 1);
    number(body.get(start..)?)
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

/// One entry's sample line and what the log reader must take from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The engine that prints it (a prefix's first engine).
    pub engine: &'static str,
    pub line: &'static str,
    pub reads: Reads,
}

/// What a sample line must read as.
#[derive(Debug, Clone, PartialEq)]
pub enum Reads {
    /// A prefix of `place`; `time`: it shows a time.
    Prefix { place: Place, time: bool },
    /// A version of the engine.
    Version,
    /// A start-up record of the engine (`[[startup]]`, `[[block]]`).
    Startup,
    /// Points of these series.
    Metrics(Vec<&'static str>),
    /// A limit record of the engine with these keys.
    Limits(Vec<&'static str>),
}

/// Every entry's sample line, in file order (prefixes, versions and start-ups, blocks, metrics
/// and limits): the definition test reads each through the log reader.
pub fn samples() -> Vec<Sample> {
    let l = log_lines();
    let mut out = Vec::new();
    for p in &l.prefixes {
        out.push(Sample {
            engine: p.engines.first().map_or("", String::as_str),
            line: &p.sample,
            reads: Reads::Prefix {
                place: p.place,
                time: p.time.is_some_and(TimeForm::absolute),
            },
        });
    }
    for t in &l.texts {
        out.push(Sample {
            engine: &t.engine,
            line: &t.sample,
            reads: match t.kind {
                TextKind::Version => Reads::Version,
                TextKind::Startup => Reads::Startup,
            },
        });
    }
    for b in &l.blocks {
        out.push(Sample {
            engine: &b.engine,
            line: &b.sample,
            reads: Reads::Startup,
        });
    }
    for e in &l.entries {
        let names = e.values.iter().map(|v| v.name.as_str()).collect();
        out.push(Sample {
            engine: &e.engine,
            line: &e.sample,
            reads: match e.target {
                Target::Metric => Reads::Metrics(names),
                Target::Limit => Reads::Limits(names),
            },
        });
    }
    out
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

/// The version or start-up text one (sanitised, prefix-stripped) log line holds, in file order.
pub fn read_text(line: &str) -> Vec<FoundText> {
    let lines = log_lines();
    let mut out = Vec::new();
    for i in lines.text_markers.matches(line).iter() {
        let Some(e) = lines.texts.get(i) else {
            continue;
        };
        if e.unless.as_deref().is_some_and(|u| line.contains(u)) {
            continue;
        }
        let Some(text) = e.pattern.captures(line).and_then(|c| c.get(e.group)) else {
            continue;
        };
        out.push(FoundText {
            kind: e.kind,
            engine: &e.engine,
            text: text.as_str().to_string(),
            versioned: e.versioned,
        });
    }
    out
}

/// The values one (sanitised, prefix-stripped) log line holds, in file order.
pub fn read(line: &str) -> Vec<Found> {
    let mut out = Vec::new();
    read_into(line, &mut out);
    out
}

/// [`read`] into `out` (cleared first): the log reader keeps one buffer for all its lines.
pub fn read_into(line: &str, out: &mut Vec<Found>) {
    out.clear();
    let lines = log_lines();
    let hits = lines.markers.matches(line);
    if !hits.matched_any() {
        return;
    }
    LOCATIONS.with_borrow_mut(|locs| {
        if locs.len() != lines.entries.len() {
            *locs = lines
                .entries
                .iter()
                .map(|e| e.pattern.capture_locations())
                .collect();
        }
        // By marker, each marker's entries in file order (the values of a line go into maps:
        // their order does not matter).
        for &i in hits.iter().filter_map(|k| lines.marked.get(k)).flatten() {
            let (Some(e), Some(loc)) = (lines.entries.get(i), locs.get_mut(i)) else {
                continue;
            };
            read_entry(e, loc, line, out);
        }
    });
}

thread_local! {
    /// The capture slots of each entry, kept between lines (a metric line is read by several
    /// entries; capturing into fresh slots would allocate for each).
    static LOCATIONS: std::cell::RefCell<Vec<regex::CaptureLocations>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The values entry `e` reads from `line`, pushed to `out`.
fn read_entry(
    e: &'static Entry,
    loc: &mut regex::CaptureLocations,
    line: &str,
    out: &mut Vec<Found>,
) {
    if e.unless.as_deref().is_some_and(|u| line.contains(u)) {
        return;
    }
    if let (Some(suffix), [v]) = (&e.suffix, e.values.as_slice()) {
        let Some(x) = e
            .pattern
            .find(line)
            .and_then(|m| number_before(m.as_str(), suffix))
        else {
            return;
        };
        let value = x * v.scale;
        if value.is_finite() {
            out.push(found(e, v, value));
        }
        return;
    }
    if e.pattern.captures_read(loc, line).is_none() {
        return;
    }
    let group = |g: usize| loc.get(g).and_then(|(a, b)| line.get(a..b));
    for v in &e.values {
        let Some(value) = value_of(group, v) else {
            continue;
        };
        out.push(found(e, v, value));
    }
}

/// What the value `v` of entry `e` is.
fn found(e: &'static Entry, v: &'static Value, value: f64) -> Found {
    match e.target {
        Target::Metric => Found::Metric {
            name: &v.name,
            unit: &v.unit,
            value,
        },
        Target::Limit => Found::Limit {
            key: &v.name,
            engine: &e.engine,
            value,
            repeated: e.repeated,
        },
    }
}

/// A value from its groups (`group(i)`: the text of group `i`).
fn value_of<'t>(group: impl Fn(usize) -> Option<&'t str>, v: &Value) -> Option<f64> {
    let text = group(v.group)?;
    let mut x = if v.duration {
        duration_ms(text)?
    } else {
        number(text)?
    };
    if let Some(d) = v.divide_by {
        let by = number(group(d)?)?;
        if by <= 0.0 {
            return None;
        }
        x /= by;
    }
    Some(x * v.scale).filter(|x| x.is_finite())
}

/// A number, thousands separators allowed.
fn number(text: &str) -> Option<f64> {
    let x = if text.contains(',') {
        text.replace(',', "").parse::<f64>()
    } else {
        text.parse::<f64>()
    };
    x.ok().filter(|x| x.is_finite())
}

/// A duration as Rust's `Debug` and Go's `String` write it (`49.697663ms`, `1.2s`, `67.59µs`,
/// `3ns`, `2m`), in milliseconds.
pub fn duration_ms(text: &str) -> Option<f64> {
    let end = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (n, unit) = (text.get(..end)?, text.get(end..)?);
    let per = match unit {
        "ns" => 1e-6,
        "µs" | "us" => 1e-3,
        "ms" => 1.0,
        "s" => 1e3,
        "m" => 60e3,
        "h" => 3600e3,
        _ => return None,
    };
    number(n).map(|x| x * per)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_file_compiles() {
        assert!(log_lines().entries.len() >= 20);
        assert!(
            log_lines()
                .entries
                .iter()
                .all(|e| !e.marker.is_empty() && !e.values.is_empty())
        );
    }

    #[test]
    fn a_metric_needs_a_name_and_a_group_that_exists() {
        let bad = [
            "[[metric]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nvalues=[{group=1, key='k'}]",
            "[[limit]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nvalues=[{group=2, key='k'}]",
            "[[limit]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nvalues=[{group=1, key='k', typo=1}]",
            "[[limit]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1'\nsample='a1'\nvalues=[{group=1, key='k'}]",
            // An engine name that is no engine.
            "[[limit]]\nengine='lama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nvalues=[{group=1, key='k'}]",
            // `repeated` is a limit's.
            "[[metric]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nrepeated=false\nvalues=[{group=1, name='n'}]",
        ];
        let good = "[[limit]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nvalues=[{group=1, key='k'}]";
        assert!(compile(good).is_ok());
        for text in bad {
            assert!(compile(text).is_err(), "{text}");
        }
    }

    /// A planted engine definition that lacks a part, or whose part does not read its own
    /// sample line, does not load, and the message names what is wrong.
    /// `(definition, words the error holds)`.
    #[test]
    fn a_definition_missing_a_part_fails_naming_it() {
        let cases: &[(&str, &[&str])] = &[
            (
                "[[metric]]\nengine='ollama'\nmarker='eval rate:'\npattern='eval rate: ([0-9]+)'\nvalues=[{group=1, name='n'}]",
                &["missing field `sample`"],
            ),
            (
                "[[metric]]\nengine='ollama'\nmarker='eval rate:'\npattern='eval rate: ([0-9]+)'\nsample='eval rate: fast'\nvalues=[{group=1, name='n'}]",
                &["ollama", "eval rate:", "sample"],
            ),
            (
                "[[version]]\nengine='vllm'\nmarker='server version '\npattern='server version ([0-9.]+)'\ngroup=1",
                &["missing field `sample`"],
            ),
            (
                "[[version]]\nengine='sglang'\nmarker='sglang'\nignore-case=true\nunless='server_args='\npattern='(?i)sglang==([0-9.]+)'\nsample='server_args=x sglang==0.5.9'\ngroup=1",
                &["sglang", "sample"],
            ),
            (
                "[[prefix]]\nengines=['vllm']\nplace='message'\npattern='(INFO) '\nsample='INFO x'",
                &["anchored"],
            ),
            (
                "[[prefix]]\nengines=['vllm']\nplace='message'\npattern='^INFO ([0-9]{2})-([0-9]{2}) '\ntime='month-day'\nsample='INFO 04-28 x'",
                &["5 groups"],
            ),
            (
                "[[prefix]]\nengines=[]\nplace='message'\npattern='^INFO '\nsample='INFO x'",
                &["no engine"],
            ),
            (
                "[[block]]\nengine='tgi'\nmarker='Args {'\nlogger='text_generation_launcher'\nholds='model_id:'\nsample='Args { x: 1 }'",
                &["tgi", "sample"],
            ),
            (
                "[[startup]]\nengine='sglang'\nmarker='server_args='\npattern='server_args=(.*)'\nsample='server_args=x'\ngroup=1\nversioned=true\n[[version]]\nengine='sglang'\nmarker='v'\npattern='v(1)'\nsample='v1'\ngroup=1\nversioned=true",
                &["only a start-up line is `versioned`"],
            ),
        ];
        for (text, words) in cases {
            let err = compile(text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            for w in *words {
                assert!(err.contains(w), "{text}: {err:?} lacks {w:?}");
            }
        }
    }

    /// Every entry of the embedded file has a sample, and the file has every kind of entry
    /// for the engines whose logs probe reads start to end.
    #[test]
    fn every_engine_has_its_parts() {
        let samples = samples();
        assert!(samples.iter().all(|s| !s.line.is_empty()));
        let has = |engine: &str, f: &dyn Fn(&Reads) -> bool| {
            samples.iter().any(|s| s.engine == engine && f(&s.reads))
        };
        for engine in ["sglang", "vllm", "ollama"] {
            assert!(has(engine, &|r| *r == Reads::Version), "{engine}: version");
            assert!(has(engine, &|r| *r == Reads::Startup), "{engine}: start-up");
            assert!(
                has(engine, &|r| matches!(r, Reads::Limits(_))),
                "{engine}: limits"
            );
            assert!(
                has(engine, &|r| matches!(r, Reads::Metrics(_))),
                "{engine}: metrics"
            );
        }
        for engine in ["llama.cpp", "tgi", "lmdeploy", "trtllm"] {
            assert!(
                has(engine, &|r| matches!(
                    r,
                    Reads::Metrics(_) | Reads::Limits(_)
                )),
                "{engine}: metric or limit lines"
            );
        }
    }

    /// The engines read end to end through their own start-up and speed lines (issue 32 item
    /// 3): LMDeploy logs no version line (its version is its package's) but its engine config
    /// at each start; TensorRT-LLM logs its version and resolved limits, its options being the
    /// command line and the options file. Each has a time-stamped prefix of its own.
    #[test]
    fn lmdeploy_and_trtllm_have_their_parts() {
        let samples = samples();
        let has = |engine: &str, f: &dyn Fn(&Reads) -> bool| {
            samples.iter().any(|s| s.engine == engine && f(&s.reads))
        };
        assert!(has("lmdeploy", &|r| *r == Reads::Startup));
        assert!(has("trtllm", &|r| *r == Reads::Version));
        assert!(has("trtllm", &|r| matches!(r, Reads::Limits(_))));
        for engine in ["lmdeploy", "trtllm"] {
            assert!(has(engine, &|r| matches!(r, Reads::Metrics(_))), "{engine}");
            assert!(
                has(engine, &|r| matches!(r, Reads::Prefix { time: true, .. })),
                "{engine}: a time-stamped prefix"
            );
        }
    }

    /// An entry read by a plain `find` (its value the number its match ends with) reads what
    /// the capture reads, on every sample line and on numbers that are not plain.
    #[test]
    fn the_plain_number_path_reads_what_the_capture_reads() {
        let l = log_lines();
        let fast: Vec<&'static Entry> = l.entries.iter().filter(|e| e.suffix.is_some()).collect();
        // SGLang's decode and prefill lines and most of vLLM's.
        assert!(fast.len() >= 15, "{}", fast.len());
        let mut lines: Vec<String> = l.entries.iter().map(|e| e.sample.clone()).collect();
        lines.extend(
            [
                "Decode batch, #running-req: 1.2.3, accept len: 07, gen throughput (token/s): 1e5",
                "Avg prompt throughput: .5 tokens/s, Running: 3.5 reqs, GPU KV cache usage: 9.%",
                "Decode batch, #queue-req: 99999999999999999999999999999999999999999",
            ]
            .map(String::from),
        );
        for e in fast {
            let mut loc = e.pattern.capture_locations();
            for line in &lines {
                let mut got = Vec::new();
                read_entry(e, &mut loc, line, &mut got);
                let slow = e.pattern.captures(line).and_then(|c| {
                    e.values
                        .first()
                        .and_then(|v| value_of(|g| c.get(g).map(|m| m.as_str()), v))
                });
                let fast_value = got.first().map(|f| match f {
                    Found::Metric { value, .. } | Found::Limit { value, .. } => *value,
                });
                assert_eq!(fast_value, slow, "{}: {line}", e.pattern.as_str());
            }
        }
    }

    #[test]
    fn durations() {
        let cases: &[(&str, Option<f64>)] = &[
            ("49.697663ms", Some(49.697663)),
            ("1.194364886s", Some(1194.364886)),
            ("67.59µs", Some(0.06759)),
            ("67.59us", Some(0.06759)),
            ("3ns", Some(0.000003)),
            ("2m", Some(120_000.0)),
            ("12", None),
            ("ms", None),
            ("1.2.3ms", None),
        ];
        for (text, want) in cases {
            let got = duration_ms(text);
            match (got, want) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{text}: {g}"),
                _ => assert_eq!(got, *want, "{text}"),
            }
        }
    }
}
