//! The lines of cron tables and timers' services that write a server's output into files, and
//! the directory and name pattern of each file (a dated name's `$(date +%F)` as `*`).

use probe_launch::{WritingCommand, writing_commands};

use super::names::ServerNames;
use super::writes_memo::Writes;
use super::{FoundMode, FoundPlace, PlaceText, dir_allowed, pattern_allowed};
use crate::config::PlaceKind;

/// Lines of one text read at most.
const MAX_LINES: usize = 2_000;
/// Longest line read (a cron line, an `ExecStart=` with its continuations).
const MAX_LINE: usize = 16 * 1024;

/// The places the lines of `t` write a server's output to, each with why.
pub fn writes_of(t: &PlaceText, names: &ServerNames) -> Vec<FoundPlace> {
    let mut out = Vec::new();
    for (no, w) in writing_of(t).iter() {
        let Some(what) = names.named_by(&w.argv) else {
            continue;
        };
        let at = no.map_or_else(String::new, |n| format!(" line {n}"));
        for target in &w.targets {
            let Some((dir, patterns)) = dated_pattern(target) else {
                continue;
            };
            for pattern in patterns {
                out.push(FoundPlace {
                    mode: FoundMode::Text,
                    dir: dir.clone(),
                    pattern,
                    reason: format!(
                        "{}:{}{at} writes {what} to {target}",
                        t.kind.as_str(),
                        t.path
                    ),
                });
            }
        }
    }
    out
}

/// The commands of `t` that write their output to files, each with its line: a script read
/// whole (its values carry from line to line), a table's or a service's commands one by one (a
/// service's `StandardOutput=append:FILE` one more target of each). A fleet's hosts mostly
/// hold the same texts (the distribution's cron scripts): read once per thread
/// ([`super::writes_memo`]).
fn writing_of(t: &PlaceText) -> std::rc::Rc<Writes> {
    super::writes_memo::remembered(t.kind, &t.text, || read_writing(t))
}

/// [`writing_of`], read afresh.
fn read_writing(t: &PlaceText) -> Writes {
    if t.kind == PlaceKind::Script {
        return super::scripts::writes(&t.text);
    }
    let mut out = Vec::new();
    for (no, cmd, extra) in commands_of(t) {
        out.extend(writing_commands(&cmd).into_iter().map(|w| (Some(no), w)));
        if let Some(target) = extra {
            for c in writing_commands(&format!("{cmd} >> {target}")) {
                let w = WritingCommand {
                    argv: c.argv,
                    targets: vec![target.clone()],
                };
                out.push((Some(no), w));
            }
        }
    }
    out
}

/// The shell commands of a text with their line numbers (and, for a service, the file its
/// `StandardOutput=` appends to): a cron table's commands (after the time fields, and the
/// user in a system table; `%` ends the command, `\%` is a `%`), a service's `ExecStart=`s.
fn commands_of(t: &PlaceText) -> Vec<(usize, String, Option<String>)> {
    let lines = t.text.lines().take(MAX_LINES).enumerate();
    match t.kind {
        PlaceKind::Cron | PlaceKind::Crontab => lines
            .filter_map(|(i, l)| {
                let l = l.get(..l.len().min(MAX_LINE)).unwrap_or("");
                cron_command(l, t.kind == PlaceKind::Cron).map(|c| (i + 1, c, None))
            })
            .collect(),
        PlaceKind::Service => {
            let out_file = lines
                .clone()
                .filter_map(|(_, l)| l.trim().strip_prefix("StandardOutput="))
                .find_map(|v| {
                    v.strip_prefix("append:")
                        .or_else(|| v.strip_prefix("file:"))
                })
                .map(|f| f.trim().to_string());
            let mut out = Vec::new();
            let mut pending: Option<(usize, String)> = None;
            for (i, l) in lines {
                let l = l.trim_end();
                if let Some((no, mut acc)) = pending.take() {
                    acc.push(' ');
                    acc.push_str(&l.trim_end_matches('\\').replace("%%", "%"));
                    if l.ends_with('\\') && acc.len() < MAX_LINE {
                        pending = Some((no, acc));
                    } else {
                        out.push((no, acc, out_file.clone()));
                    }
                    continue;
                }
                let Some(v) = l.trim_start().strip_prefix("ExecStart=") else {
                    continue;
                };
                let v = v
                    .trim_start_matches(['@', '-', ':', '+', '!'])
                    .replace("%%", "%");
                let l = l.replace("%%", "%");
                let l = l.as_str();
                if l.ends_with('\\') {
                    pending = Some((i + 1, v.trim_end_matches('\\').to_string()));
                } else if !v.is_empty() {
                    out.push((i + 1, v.to_string(), out_file.clone()));
                }
            }
            out.extend(pending.map(|(no, acc)| (no, acc, out_file.clone())));
            out
        }
        _ => Vec::new(),
    }
}

/// The command of one cron line: after the five time fields (or one `@daily`-like word) and,
/// in a system table, the user; `None` for a comment, a blank line or a variable setting.
fn cron_command(line: &str, system: bool) -> Option<String> {
    let l = line.trim_start();
    if l.is_empty() || l.starts_with('#') {
        return None;
    }
    let first = l.split_whitespace().next()?;
    if !first.starts_with('@') && first.contains('=') {
        return None;
    }
    let fields = if first.starts_with('@') { 1 } else { 5 } + usize::from(system);
    let mut rest = l;
    for _ in 0..fields {
        rest = rest.trim_start();
        let end = rest.find([' ', '\t'])?;
        rest = rest.get(end..)?;
    }
    // cron: an unescaped `%` ends the command (what follows is its stdin), `\%` is a `%`.
    let mut cmd = String::new();
    let mut chars = rest.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'%') => {
                cmd.push('%');
                chars.next();
            }
            '%' => break,
            c => cmd.push(c),
        }
    }
    (!cmd.trim().is_empty()).then_some(cmd)
}

/// The directory of a file a line writes and the name patterns of it and its copies: a dated
/// name's command substitutions and variables (`vllm-$(date +%F).log`) become `*`
/// (`vllm-*.log`); an undated name is itself and its rotated copies (`name.*`, `name-*`).
/// `None` for a relative path, a directory not normalised or kept out (`/`, `/proc/*`, ...),
/// a directory that is itself not fixed, or a name that is only a pattern. A name with letters
/// outside ASCII is planned, to be said not read ([`super::name_not_passed`]).
pub fn dated_pattern(target: &str) -> Option<(String, Vec<String>)> {
    let (dir, name) = target.rsplit_once('/')?;
    if !dir_allowed(dir) || name.is_empty() {
        return None;
    }
    let pattern = starred(name)?;
    if !(pattern_allowed(&pattern) || super::name_not_passed(&pattern)) {
        return None;
    }
    let patterns = if pattern.contains('*') {
        vec![pattern]
    } else {
        vec![
            pattern.clone(),
            format!("{pattern}.*"),
            format!("{pattern}-*"),
        ]
    };
    Some((dir.to_string(), patterns))
}

/// `name` with each `$(...)`, `` `...` ``, `${...}` and `$NAME` as one `*` (runs of `*` as one).
fn starred(name: &str) -> Option<String> {
    let mut out = String::new();
    let chars: Vec<char> = name.chars().collect();
    let mut i = 0;
    let star = |out: &mut String| {
        if !out.ends_with('*') {
            out.push('*');
        }
    };
    while let Some(&c) = chars.get(i) {
        match (c, chars.get(i + 1)) {
            ('$', Some('(' | '{')) => {
                let (open, close) = if chars.get(i + 1) == Some(&'(') {
                    ('(', ')')
                } else {
                    ('{', '}')
                };
                let mut depth = 0usize;
                let mut j = i + 1;
                loop {
                    match chars.get(j) {
                        Some(x) if *x == open => depth += 1,
                        Some(x) if *x == close => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        Some(_) => {}
                        None => return None,
                    }
                    j += 1;
                }
                star(&mut out);
                i = j + 1;
            }
            ('$', Some(n)) if n.is_ascii_alphanumeric() || *n == '_' => {
                i += 1;
                while chars
                    .get(i)
                    .is_some_and(|x| x.is_ascii_alphanumeric() || *x == '_')
                {
                    i += 1;
                }
                star(&mut out);
            }
            ('`', _) => {
                let end = chars.get(i + 1..)?.iter().position(|x| *x == '`')?;
                star(&mut out);
                i += end + 2;
            }
            ('*' | '?', _) => {
                star(&mut out);
                i += 1;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}
