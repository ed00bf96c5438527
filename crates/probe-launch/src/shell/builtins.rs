//! Builtins that change the walk's state and run nothing: `export`/`declare`, `unset`, fish's
//! `set`, `cd`, `source .../activate`, `conda activate`, `read` (from a here-document or a
//! here-string) and Makefile-style assignments.

use super::MAX_EXPORTS;
use super::expand::{assigned, basename, is_assignment};
use super::lexer::{Word, is_name_char, word_lit};
use super::state::{Branch, State, Val, exports_mut, set_var, val_text};

/// A command that may be a builtin: its expanded words, its words as written and its input.
pub(super) struct Builtin<'a> {
    pub cmd: &'a str,
    pub args: &'a [String],
    /// The command's words as written (the command itself first).
    pub words: &'a [&'a Word],
    /// What a here-document or here-string feeds it, expanded as the shell would.
    pub input: Option<&'a str>,
    pub branch: Branch,
}

/// Runs `call` when it is a state-changing builtin; `false` when it is an ordinary command.
pub(super) fn run(call: &Builtin, state: &mut State) -> bool {
    if make_assignment(call, state) {
        return true;
    }
    match call.cmd {
        "export" | "declare" | "typeset" | "local" | "readonly" => declare(call, state),
        "unset" => {
            for a in call.args {
                state.vars.remove(a);
                if state.exported.contains_key(a) {
                    exports_mut(state).remove(a);
                }
            }
        }
        "set" => fish_set(call, state),
        "cd" | "pushd" => cd(call.args, state),
        "source" | "." => source(call.args, state),
        "conda" | "mamba" | "micromamba"
            if call.args.first().map(String::as_str) == Some("activate") =>
        {
            conda_activate(call.args, state);
        }
        "read" => read(call, state),
        _ => return false,
    }
    true
}

/// Makefile-style assignment (`MODEL ?= x`, `PORT := 8000`).
fn make_assignment(call: &Builtin, state: &mut State) -> bool {
    let Some(op) = call.args.first() else {
        return false;
    };
    if !(matches!(op.as_str(), "=" | ":=" | "?=" | "::=")
        && call.cmd.chars().all(is_name_char)
        && !call.branch.unstable)
    {
        return false;
    }
    let value = call.args.get(1..).unwrap_or(&[]).join(" ");
    if !(op == "?=" && state.vars.contains_key(call.cmd)) {
        state.vars.insert(call.cmd.to_string(), Val::Text(value));
    }
    true
}

/// `export`, `declare [-x]`, `typeset`, `local`, `readonly`.
fn declare(call: &Builtin, state: &mut State) {
    let exporting = call.cmd == "export"
        || call
            .args
            .iter()
            .any(|a| a.starts_with('-') && a.contains('x'));
    for (j, w) in call.words.iter().enumerate().skip(1) {
        let lit = word_lit(w);
        if lit.starts_with('-') {
            continue;
        }
        if let Some((name, _, append)) = is_assignment(&lit) {
            let val = if call.branch.unstable {
                Val::Opaque
            } else {
                assigned(w, state)
            };
            set_var(state, name, val.clone(), append);
            if exporting {
                let text = match state.vars.get(name).unwrap_or(&val) {
                    // A value the text cannot work out (`export P="$(pwd):$P"`), outside a
                    // branch: the process gets it as the shell builds it, kept as written.
                    Val::Opaque if !call.branch.unstable && !append => written_value(&w.raw()),
                    v => val_text(name, v),
                };
                if state.exported.len() < MAX_EXPORTS || state.exported.contains_key(name) {
                    exports_mut(state).insert(name.to_string(), text);
                }
            }
        } else if exporting {
            export_existing(call.args.get(j - 1).map(String::as_str), state);
        }
    }
}

/// The value of a `NAME=value` word as written, without the quotes around all of it.
fn written_value(raw: &str) -> String {
    let v = raw.split_once('=').map(|(_, v)| v).unwrap_or(raw);
    match v
        .strip_prefix('"')
        .and_then(|i| i.strip_suffix('"'))
        .or_else(|| v.strip_prefix('\'').and_then(|i| i.strip_suffix('\'')))
    {
        Some(inner) if !inner.contains('"') && !inner.contains('\'') => inner.to_string(),
        _ => v.to_string(),
    }
}

/// `export NAME` of a variable set before.
fn export_existing(name: Option<&str>, state: &mut State) {
    let Some(name) = name else { return };
    if let Some(v) = state.vars.get(name).cloned()
        && !matches!(v, Val::Opaque | Val::Either(_))
    {
        let text = val_text(name, &v);
        if state.exported.len() < MAX_EXPORTS || state.exported.contains_key(name) {
            exports_mut(state).insert(name.to_string(), text);
        }
    }
}

/// fish: `set [-gx...] NAME value...`; bash `set -x` / `set -euo pipefail` change options.
fn fish_set(call: &Builtin, state: &mut State) {
    let flags = call.args.iter().take_while(|a| a.starts_with('-')).count();
    let export = call
        .args
        .iter()
        .take(flags)
        .any(|a| a.contains('x') && !a.starts_with("--"));
    let Some(name) = call.args.get(flags) else {
        return;
    };
    if name.is_empty() || !name.chars().all(is_name_char) || call.args.len() <= flags + 1 {
        return;
    }
    let value = call.args.get(flags + 1..).unwrap_or(&[]).join(" ");
    let val = if call.branch.unstable {
        Val::Opaque
    } else {
        Val::Text(value.clone())
    };
    state.vars.insert(name.clone(), val);
    if export && (state.exported.len() < MAX_EXPORTS || state.exported.contains_key(name)) {
        exports_mut(state).insert(name.clone(), value);
    }
}

fn cd(args: &[String], state: &mut State) {
    let Some(d) = args.iter().find(|a| !a.starts_with('-')) else {
        return;
    };
    let absolute = d.starts_with('/') || d.starts_with('~') || d.starts_with('$');
    state.cwd = Some(match (&state.cwd, absolute) {
        (Some(c), false) => format!("{}/{}", c.trim_end_matches('/'), d),
        _ => d.clone(),
    });
}

/// `source VENV/bin/activate`; conda's own `activate` (`source .../bin/activate NAME`,
/// `source activate NAME`, or the script of a conda prefix) activates a conda environment.
fn source(args: &[String], state: &mut State) {
    if let Some(p) = args.first()
        && basename(p) == "activate"
    {
        let prefix = p.trim_end_matches("activate").trim_end_matches('/');
        let prefix = prefix.strip_suffix("/bin").unwrap_or(prefix);
        if let Some(env) = args.get(1) {
            add_context(state, "conda");
            state.venv = Some(env.clone());
        } else if is_conda_prefix(prefix) || prefix == "bin" || prefix.is_empty() {
            add_context(state, "conda");
            state.venv = Some(prefix.to_string()).filter(|p| !p.is_empty() && p != "bin");
        } else {
            add_context(state, "venv");
            state.venv = Some(prefix.to_string());
        }
    }
}

/// A conda installation or one of its environments (`/opt/miniconda3`,
/// `~/anaconda3/envs/vllm`, `$CONDA_PREFIX`, `/opt/conda`): a path segment names a conda
/// distribution, or the prefix is under an `envs` folder.
fn is_conda_prefix(prefix: &str) -> bool {
    let segments: Vec<String> = prefix.split('/').map(str::to_ascii_lowercase).collect();
    segments.iter().any(|s| {
        let s = s.trim_start_matches('$').trim_matches(['{', '}']);
        [
            "conda",
            "anaconda",
            "miniconda",
            "miniforge",
            "mambaforge",
            "micromamba",
        ]
        .iter()
        .any(|d| {
            s.strip_prefix(d)
                .is_some_and(|r| r.chars().all(|c| c.is_ascii_digit()))
        }) || s == "conda_prefix"
    }) || segments.iter().rev().nth(1).is_some_and(|s| s == "envs")
}

fn conda_activate(args: &[String], state: &mut State) {
    add_context(state, "conda");
    if let Some(env) = args.get(1) {
        state.venv = Some(env.clone());
    }
}

fn add_context(state: &mut State, wrapper: &str) {
    if !state.context_wrappers.iter().any(|w| w == wrapper) {
        state.context_wrappers.push(wrapper.into());
    }
}

/// `read [-r] [-d DELIM] [-p PROMPT] NAME... <<EOF` / `<<< TEXT`: the names take the input's
/// first line (all of it with `-d ''`), split over the names as bash does.
fn read(call: &Builtin, state: &mut State) {
    let Some(input) = call.input else {
        // Reads the terminal or a pipe: nothing the text knows.
        for name in read_names(call.args) {
            state.vars.insert(name.to_string(), Val::Opaque);
        }
        return;
    };
    let (raw, whole) = read_flags(call.args);
    let text = if whole {
        input
    } else {
        input.split('\n').next().unwrap_or("")
    };
    let text = if raw {
        text.to_string()
    } else {
        text.replace("\\\n", "")
    };
    let names = read_names(call.args);
    let mut rest = text.trim();
    for (i, name) in names.iter().enumerate() {
        let value = if i + 1 == names.len() {
            std::mem::take(&mut rest).to_string()
        } else {
            let (head, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            rest = tail.trim_start();
            head.to_string()
        };
        let val = if call.branch.unstable {
            Val::Opaque
        } else {
            Val::Text(value)
        };
        set_var(state, name, val, false);
    }
}

/// `-r` given, and `-d ''` (read to the end) given.
fn read_flags(args: &[String]) -> (bool, bool) {
    let mut raw = false;
    let mut whole = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-d" => whole = it.next().map(|d| d.is_empty()).unwrap_or(false),
            "-p" | "-a" | "-n" | "-N" | "-t" | "-u" | "-i" => {
                it.next();
            }
            f if f.starts_with('-') => {
                raw |= f.contains('r');
                if f.ends_with('d') {
                    whole = it.next().map(|d| d.is_empty()).unwrap_or(false);
                }
            }
            _ => {}
        }
    }
    (raw, whole)
}

/// The variable names `read` sets.
fn read_names(args: &[String]) -> Vec<&str> {
    let mut names = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-d" | "-p" | "-a" | "-n" | "-N" | "-t" | "-u" | "-i" => {
                it.next();
            }
            f if f.starts_with('-') && (f.ends_with('d') || f.ends_with('p')) => {
                it.next();
            }
            n if !n.is_empty() && n.chars().all(is_name_char) => names.push(n),
            _ => {}
        }
    }
    names
}
