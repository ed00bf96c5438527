//! Thinning a server log on the host, over its whole retention.
//!
//! A server that has run for weeks has logged a stats line every few seconds: hundreds of
//! thousands of lines per run. Reading the newest N of them reaches back a day or two, so an
//! earlier run has no numbers. Instead, round 2 passes every line of a journal or log file
//! through one POSIX `awk` on the host (the program here, `$THIN` in the script), which keeps
//! the lines the readers take something from (lifecycle, versions, start-up arguments and
//! limits, errors) in full, within caps an hour and a run, and the metric lines evenly in time:
//! at most `metric_lines_per_hour` a kind of line (an idle line at most once an hour). The
//! bytes on the wire then grow with the number of runs and hours, not with the lines logged,
//! and a run three weeks old keeps hundreds of samples.
//!
//! The markers come from their owners: the log reader ([`crate::parse::logs::keep_markers`]:
//! lifecycle lines and `keep` of `configs/log_lines.toml`) and the engines' metric and limit
//! lines (`configs/log_lines.toml`); the caps and the program text from
//! `configs/probes.toml` (`[thinning]`). Markers are written into the program as regex
//! literals (one compiled pattern per class: busybox awk compiles a dynamic regex on every
//! use, several times slower).

use std::sync::LazyLock;

pub use crate::config::Thinning;

use crate::config;
use crate::parse::engine_lines;

static PROGRAM: LazyLock<String> = LazyLock::new(|| program_of(&config::probes().thinning));

/// The awk program of the built-in configuration (the script's `$THIN`).
pub fn program() -> &'static str {
    &PROGRAM
}

/// The built-in `[thinning]` of `configs/probes.toml`.
pub fn builtin() -> &'static Thinning {
    &config::probes().thinning
}

/// Metric lines kept an hour a kind, as configured.
pub fn metric_lines_per_hour() -> u32 {
    config::probes().thinning.metric_lines_per_hour
}

/// The metric markers, one kind of line each: the engines' (`configs/log_lines.toml`), each
/// once, in file order.
pub fn metric_markers() -> Vec<&'static str> {
    dedup(engine_lines::markers(engine_lines::Target::Metric))
}

/// The markers of lines kept in full: the readers' start-up markers, the other engines'
/// limit lines, and the configured ones.
pub fn keep_markers<'a>(t: &'a Thinning) -> Vec<&'a str> {
    let fixed: Vec<&'a str> = crate::parse::logs::keep_markers()
        .into_iter()
        .chain(engine_lines::markers(engine_lines::Target::Limit))
        .collect();
    dedup(fixed.into_iter().chain(t.keep.iter().map(String::as_str)))
}

fn dedup<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for m in it {
        if !m.is_empty() && !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

/// The program with its markers and caps written in.
pub fn program_of(t: &Thinning) -> String {
    let metrics = metric_markers();
    let mets: Vec<String> = metrics.iter().map(|m| m.replace("@@", "@")).collect();
    t.program
        .replace("@MET@", &regex_literal(&metrics))
        .replace("@METS@", &string_literal(&mets.join("@@")))
        .replace("@KEEP@", &regex_literal(&keep_markers(t)))
        .replace(
            "@START@",
            &regex_literal(&t.start.iter().map(String::as_str).collect::<Vec<_>>()),
        )
        .replace(
            "@IDLE@",
            &regex_literal(&t.idle.iter().map(String::as_str).collect::<Vec<_>>()),
        )
        .replace("@MPH@", &t.metric_lines_per_hour.clamp(1, 60).to_string())
        .replace("@KPH@", &t.keep_per_hour.to_string())
        .replace("@KPR@", &t.keep_per_run.to_string())
        .replace("@WIN@", &t.startup_window.to_string())
        .replace("@RECENT@", &t.recent_metric_lines.max(1).to_string())
        .replace("@MAXB@", &t.max_bytes.to_string())
}

/// An awk regex literal (`/a|b/`) matching any of the substrings. Every character that is
/// special in an ERE becomes a bracket expression; `/`, `\` and `^`, which no bracket form
/// writes the same in every awk, match any character there (the kind of a metric line is then
/// told by the exact substring, with `index`). An empty list matches nothing.
pub fn regex_literal(markers: &[&str]) -> String {
    if markers.is_empty() {
        return String::from("/$^/");
    }
    let alts: Vec<String> = markers
        .iter()
        .map(|m| {
            let mut out = String::new();
            for c in m.chars() {
                match c {
                    '/' | '\\' | '^' => out.push('.'),
                    ']' => out.push_str("[]]"),
                    '.' | '[' | '(' | ')' | '*' | '+' | '?' | '{' | '}' | '|' | '$' => {
                        out.push('[');
                        out.push(c);
                        out.push(']');
                    }
                    '\n' | '\r' => out.push('.'),
                    c => out.push(c),
                }
            }
            out
        })
        .collect();
    format!("/{}/", alts.join("|"))
}

/// An awk string literal.
fn string_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
