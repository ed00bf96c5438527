//! Start-up records: the engines' version lines, start-up texts on one line or over many
//! (`[[block]]`), and the limits one start-up logged, merged into one record.

use probe_model::{LogSource, ModelLoad, StartupRecord, UnixTime};

use crate::parse::engine_lines::{self, TextKind};
use crate::sanitize::sanitize_line;

/// Start-up records kept per log (the newest).
pub const MAX_STARTUPS: usize = 32;
/// Longest start-up text kept.
const MAX_STARTUP_TEXT: usize = 64 * 1024;
/// The versions and start-up settings a line holds (`[[version]]`, `[[startup]]` of
/// `configs/log_lines.toml`); returns whether it held a start-up record. `versions`: the last
/// version each engine logged, for its later start-up records that carry it (`versioned`).
pub(super) fn read_texts(
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
    for f in found.iter().filter(|f| f.kind == TextKind::Loaded) {
        push_loaded(src, time, f.engine, &f.text);
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
pub(super) struct OpenBlock {
    pub(super) engine: &'static str,
    pub(super) time: Option<UnixTime>,
    pub(super) text: String,
    lines: usize,
}

/// Lines one block may take.
const BLOCK_LINES: usize = 400;

/// A start-up record that is a Rust `Debug` value (`configs/log_lines.toml` `[[block]]`, TGI's
/// launcher `Args { model_id: ..., }`): on one line (`{:?}`; JSON output, the message escaped),
/// or over many (`{:#?}`), whose indented lines are gathered until the closing brace. A line
/// that is not such a continuation ends the block and is read as usual. Returns whether the
/// line was taken.
pub(super) fn read_block(
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
pub(super) fn merge_limits(
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
pub(super) fn engine_of(name: &str) -> probe_model::Engine {
    probe_model::Engine::parse(name).unwrap_or_default()
}

/// Limit lines of one start-up are at most this far apart.
const LIMITS_SAME_STARTUP_S: i64 = 600;

pub(super) fn push_startup(
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

/// Model loads kept per log (the newest).
const MAX_LOADED: usize = 256;
/// Longest model path kept.
const MAX_LOADED_TEXT: usize = 4096;

/// A model file the server logged loading (`[[loaded]]`), bounded in length and count.
fn push_loaded(src: &mut LogSource, time: Option<UnixTime>, engine: &str, text: &str) {
    let model = text.trim();
    if model.is_empty() || model.len() > MAX_LOADED_TEXT {
        return;
    }
    src.loaded.push(ModelLoad {
        time,
        engine: engine_of(engine),
        model: model.to_string(),
    });
    if src.loaded.len() > 2 * MAX_LOADED {
        src.loaded.drain(..MAX_LOADED);
    }
}
