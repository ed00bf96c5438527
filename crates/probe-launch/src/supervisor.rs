//! supervisord configuration: each `[program:NAME]` section's `command=` is a launch, run with
//! its `environment=`, `directory=` and log files (supervisord's own option names, from its
//! `options.py`: `command`, `environment`, `directory`, `stdout_logfile`, `stderr_logfile`,
//! `numprocs`, `numprocs_start`). As supervisord reads it: a `;` or `#` after a blank starts a
//! comment (its parser's `inline_comment_prefixes`), `%(name)s` expansions it knows from the
//! file are made (`program_name`, `process_num`, `numprocs`, `group_name`, `%%`) and the others
//! (`%(ENV_X)s`, `%(here)s`) kept as written, and the command is split as `shlex.split` does
//! (no shell: quotes and backslashes only).

use std::collections::BTreeMap;

use probe_model::LaunchConfig;

use super::ctx::{Ctx, ReadArgv};
use super::hints::ParseHints;
use super::ini::{Section, sections, starts_with_header};

/// Whether `text` is a supervisord configuration with at least one program that has a command.
pub(crate) fn is_supervisor(text: &str) -> bool {
    starts_with_header(text) && sections(text).iter().any(|s| program(s).is_some())
}

/// The program name of a `[program:NAME]` section that has a `command=`.
fn program(s: &Section) -> Option<&str> {
    let name = s.name.strip_prefix("program:")?;
    s.get("command").map(|_| name.trim())
}

/// The launches of every program of `text`.
pub(crate) fn launches(
    text: &str,
    read: ReadArgv,
    ctx: &Ctx,
    hints: &ParseHints,
) -> Vec<LaunchConfig> {
    let mut out = Vec::new();
    for s in sections(text) {
        let Some(name) = program(&s) else { continue };
        let get = |key: &str| s.get(key).map(uncommented);
        let numprocs: usize = get("numprocs")
            .and_then(|n| n.parse().ok())
            .unwrap_or(1)
            .clamp(1, MAX_PROCS);
        let start: usize = get("numprocs_start")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let command = get("command").unwrap_or_default();
        // One process, or one per `process_num` when the command names it.
        let each = if command.contains("%(process_num)") {
            numprocs
        } else {
            1
        };
        for i in 0..each {
            let expand = |v: &str| expand(v, name, start + i, numprocs);
            let command = expand(command);
            let mut c = ctx.clone();
            if !c.budget.take(command.len()) {
                return out;
            }
            for (k, v) in environment(get("environment").unwrap_or_default()) {
                c.env.insert(k, expand(&v));
            }
            if let Some(d) = get("directory") {
                c.cwd = Some(expand(d));
            }
            for key in ["stdout_logfile", "stderr_logfile"] {
                if let Some(f) = get(key).filter(|f| !matches!(*f, "NONE" | "AUTO" | "")) {
                    c.log_files.push(expand(f));
                }
            }
            out.extend(read(&shlex_split(&command), c, hints));
        }
    }
    out
}

/// Processes of one program read at most (`numprocs`).
const MAX_PROCS: usize = 16;

/// A value without its inline comment (`;` or `#` after a blank).
fn uncommented(v: &str) -> &str {
    let mut prev_blank = false;
    for (i, c) in v.char_indices() {
        if prev_blank && matches!(c, ';' | '#') {
            return v.get(..i).unwrap_or(v).trim_end();
        }
        prev_blank = c.is_whitespace();
    }
    v
}

/// supervisord's `%(name)s` / `%(name)d` / `%(name)02d` expansions of what the file fixes;
/// the others (`%(ENV_X)s`, `%(here)s`) kept as written.
fn expand(v: &str, program: &str, process_num: usize, numprocs: usize) -> String {
    let mut out = String::new();
    let mut rest = v;
    while let Some(at) = rest.find('%') {
        out.push_str(rest.get(..at).unwrap_or(""));
        let tail = rest.get(at..).unwrap_or("");
        if let Some(after) = tail.strip_prefix("%%") {
            out.push('%');
            rest = after;
            continue;
        }
        let parsed = tail.strip_prefix("%(").and_then(|t| {
            let (key, after) = t.split_once(')')?;
            let spec_end = after.find(|c: char| c.is_ascii_alphabetic())?;
            let (spec, conv) = (after.get(..spec_end)?, after.get(spec_end..spec_end + 1)?);
            Some((key, spec, conv, after.get(spec_end + 1..)?))
        });
        let value = |key: &str| match key {
            "program_name" | "group_name" => Some(program.to_string()),
            "process_num" => Some(process_num.to_string()),
            "numprocs" => Some(numprocs.to_string()),
            _ => None,
        };
        match parsed {
            Some((key, spec, _, after)) if value(key).is_some() => {
                let v = value(key).unwrap_or_default();
                // `%(process_num)02d`: zero-padded to the width.
                let width: usize = spec.trim_start_matches('0').parse().unwrap_or(0);
                let pad = if spec.starts_with('0') { '0' } else { ' ' };
                for _ in v.len()..width {
                    out.push(pad);
                }
                out.push_str(&v);
                rest = after;
            }
            _ => {
                out.push('%');
                rest = tail.get(1..).unwrap_or("");
            }
        }
    }
    out.push_str(rest);
    out
}

/// Python's `shlex.split` (POSIX mode, no comments): words split on blanks, `'...'` literal,
/// `"..."` with `\\` escaping `\\`, `"`, `$` and `` ` ``, a backslash outside quotes escaping
/// the next character.
fn shlex_split(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' if chars
                            .peek()
                            .is_some_and(|n| matches!(n, '\\' | '"' | '$' | '`')) =>
                        {
                            if let Some(n) = chars.next() {
                                cur.push(n);
                            }
                        }
                        q => cur.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// `KEY="value",KEY2=value2`: commas inside quotes belong to the value.
fn environment(v: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    for c in v.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ',') => items.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    items.push(cur);
    for it in items {
        if let Some((k, val)) = it.split_once('=') {
            let k = k.trim();
            if !k.is_empty() {
                out.insert(k.to_string(), val.trim().to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_supervisord_reads_them() {
        let cases: &[(&str, &str)] = &[
            ("vllm serve m ; the server", "vllm serve m"),
            ("vllm serve m # note", "vllm serve m"),
            ("a;b#c", "a;b#c"),
        ];
        for (v, want) in cases {
            assert_eq!(uncommented(v), *want, "{v}");
        }
        assert_eq!(
            expand(
                "--port 80%(process_num)02d %(program_name)s %(ENV_M)s %(here)s 100%%",
                "x",
                3,
                4
            ),
            "--port 8003 x %(ENV_M)s %(here)s 100%"
        );
        assert_eq!(
            shlex_split(r#"python -m x --m %(ENV_M)s --j '{"a": 1}' "a \"b\"" c\ d"#),
            [
                "python",
                "-m",
                "x",
                "--m",
                "%(ENV_M)s",
                "--j",
                r#"{"a": 1}"#,
                r#"a "b""#,
                "c d"
            ]
        );
    }

    #[test]
    fn environment_values_keep_their_commas() {
        let e = environment("CUDA_VISIBLE_DEVICES=\"0,1\", HF_HOME='/data/hf',X=1");
        assert_eq!(
            e.get("CUDA_VISIBLE_DEVICES").map(String::as_str),
            Some("0,1")
        );
        assert_eq!(e.get("HF_HOME").map(String::as_str), Some("/data/hf"));
        assert_eq!(e.get("X").map(String::as_str), Some("1"));
    }
}
