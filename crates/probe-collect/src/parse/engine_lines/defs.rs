//! The compiled log lines: prefixes, blocks, metric and limit entries, text entries, and what
//! one line is found to hold.

use regex::{Regex, RegexSet};
use serde::Deserialize;

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
    pub(super) fn groups(self) -> usize {
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

/// What one value of a line is: a metric series or a start-up limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Metric,
    Limit,
}

pub(super) struct Value {
    pub(super) group: usize,
    /// The series name or the limit key.
    pub(super) name: String,
    pub(super) unit: String,
    pub(super) scale: f64,
    pub(super) duration: bool,
    pub(super) divide_by: Option<usize>,
}

pub(super) struct Entry {
    pub(super) target: Target,
    pub(super) engine: String,
    /// The substring every such line holds.
    pub(super) marker: String,
    /// The line (its prefixes taken off) starts with the marker.
    pub(super) at_start: bool,
    /// The entry's one value is the number its match ends with, before this suffix.
    pub(super) suffix: Option<String>,
    pub(super) unless: Option<String>,
    /// (Limits) the engine may print the line again within one start.
    pub(super) repeated: bool,
    pub(super) pattern: Regex,
    pub(super) values: Vec<Value>,
    /// A line as the engine prints it.
    pub(super) sample: String,
}

/// What a text line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    /// The engine's version.
    Version,
    /// The settings in effect, logged at each start (Ollama's `server config` line).
    Startup,
    /// A model file the server loads (Ollama's `starting runner ... --model BLOB`).
    Loaded,
}

pub(super) struct TextEntry {
    pub(super) kind: TextKind,
    pub(super) engine: String,
    pub(super) unless: Option<String>,
    pub(super) pattern: Regex,
    pub(super) group: usize,
    pub(super) versioned: bool,
    /// A line as the engine prints it.
    pub(super) sample: String,
}

/// The compiled file: the entries and their markers as one set.
pub struct LogLines {
    pub(super) entries: Vec<Entry>,
    /// Each distinct marker once (several entries share one).
    pub(super) markers: RegexSet,
    /// Per pattern of `markers`, the entries with that marker, in file order.
    pub(super) marked: Vec<Vec<usize>>,
    pub(super) texts: Vec<TextEntry>,
    pub(super) text_markers: RegexSet,
    pub(super) prefixes: Vec<Prefix>,
    pub(super) blocks: Vec<Block>,
    pub(super) keep: Vec<String>,
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
