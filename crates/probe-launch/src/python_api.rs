//! A Python script that starts an engine through its API (issue 34, item 2): `serve(MODEL,
//! backend_config=TurbomindEngineConfig(tp=2, cache_max_entry_count=0.5), server_port=23333)`,
//! `pipe = pipeline(MODEL, backend_config=cfg)` with `cfg = PytorchEngineConfig(...)` earlier.
//! Which module, calls, keyword and classes mark such a script is the catalog's `[python]`; the
//! keywords of the call and of the config object are the catalog's options (underscores for
//! dashes). A value the text fixes (a literal, or a name assigned a literal) is read; anything
//! else (a variable from outside, an expression) leaves the option unset with a warning that says
//! why, and is never guessed.
//!
//! The reader is a small tokenizer (names, numbers, strings, punctuation; comments dropped; line
//! ends inside brackets ignored, as Python does) and a walk over statements: bounded by the
//! text, by [`MAX_CALLS`] launches and by [`MAX_DEPTH`] nested values or name look-ups.

use std::collections::BTreeMap;

use probe_model::{Engine, LaunchConfig, LaunchOption};
use serde_json::Value;

use crate::catalog::{Catalog, PythonApi, ValueKind, catalog};
use crate::hints::ParseHints;
use crate::{options, values};

/// Launches read from one script at most.
const MAX_CALLS: usize = 16;
/// Nesting of values (lists, calls) and chains of names followed at most.
const MAX_DEPTH: usize = 16;
/// Tokens read at most (the text is already cut to the reader's limit).
const MAX_TOKENS: usize = 200_000;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Name(String),
    Num(String),
    Str(String),
    /// An f-string or a string with a prefix the reader does not evaluate (`f"..."`, `b"..."`).
    OpaqueStr(String),
    Punct(char),
    /// The end of a logical line.
    End,
}

/// The launches a Python script starts through an engine's API, one per starting call.
pub(crate) fn launches(text: &str, hints: &ParseHints) -> Vec<LaunchConfig> {
    launches_in(text, hints, None)
}

/// [`launches`] of the script at `file` (read on the host): each option's `written` says the
/// keyword and the file (`cache_max_entry_count=0.5 (in /srv/serve.py)`).
pub(crate) fn launches_in(text: &str, hints: &ParseHints, file: Option<&str>) -> Vec<LaunchConfig> {
    let apis: Vec<(&'static Catalog, &PythonApi)> = Engine::ALL
        .iter()
        .map(|e| catalog(*e, hints.engine_version.as_deref()))
        .filter(|c| !c.python.modules.is_empty() && imports_any(text, &c.python.modules))
        .map(|c| (c, &c.python))
        .collect();
    if apis.is_empty() {
        return Vec::new();
    }
    let toks = tokens(text);
    let script = Script::read(&toks);
    let mut out = Vec::new();
    for (cat, api) in apis {
        for call in &script.calls {
            if out.len() >= MAX_CALLS {
                return out;
            }
            if api.calls.iter().any(|c| c == &call.name) {
                out.push(launch(cat, api, call, &script, hints, file));
            }
        }
    }
    out
}

/// Whether `text` imports the API module of an engine (a catalog's `[python] modules`): a script
/// that imports none starts no engine this reader knows.
pub(crate) fn imports_an_engine(text: &str) -> bool {
    Engine::ALL
        .iter()
        .map(|e| catalog(*e, None))
        .any(|c| !c.python.modules.is_empty() && imports_any(text, &c.python.modules))
}

/// Whether a line imports one of `modules` (`import m`, `import m.x as y`, `from m import ...`,
/// `from m.x import ...`).
fn imports_any(text: &str, modules: &[String]) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        let rest = line
            .strip_prefix("import ")
            .or_else(|| line.strip_prefix("from "));
        rest.is_some_and(|rest| {
            rest.split([',', ' '])
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .take(8)
                .any(|w| {
                    modules.iter().any(|m| {
                        w == m
                            || w.strip_prefix(m.as_str())
                                .is_some_and(|r| r.starts_with('.'))
                    })
                })
        })
    })
}

fn tokens(text: &str) -> Vec<Tok> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut depth = 0usize;
    while i < b.len() && out.len() < MAX_TOKENS {
        let c = b.get(i).copied().unwrap_or(b' ');
        match c {
            b'#' => i = line_end(b, i),
            b'\n' | b';' => {
                if depth == 0 && out.last().is_some_and(|t| *t != Tok::End) {
                    out.push(Tok::End);
                }
                i += 1;
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => i += 2,
            b' ' | b'\t' | b'\r' => i += 1,
            b'\'' | b'"' => {
                let (s, next) = string(b, i);
                out.push(Tok::Str(s));
                i = next;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => i = word(b, i, &mut out),
            c if c.is_ascii_digit()
                || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) =>
            {
                i = number(b, i, &mut out);
            }
            _ => {
                let ch = char::from(c);
                match ch {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                if c.is_ascii() {
                    out.push(Tok::Punct(ch));
                }
                i += 1;
            }
        }
    }
    out
}

/// The index of the line end at or after `i` (a comment's end).
fn line_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b.get(i) != Some(&b'\n') {
        i += 1;
    }
    i
}

/// A name at `i`, or a prefixed string (`f"..."`, `rb'...'`) whose value is read only for the
/// `r`/`u` prefixes: pushed to `out`; returns the index after it.
fn word(b: &[u8], mut i: usize, out: &mut Vec<Tok>) -> usize {
    let start = i;
    while b
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
    {
        i += 1;
    }
    let word = String::from_utf8_lossy(b.get(start..i).unwrap_or_default()).into_owned();
    // A prefixed string: `f"..."`, `rb'...'`: its value is not read.
    if word.len() <= 2
        && word.chars().all(|c| "rRbBfFuU".contains(c))
        && matches!(b.get(i), Some(b'\'' | b'"'))
    {
        let (s, next) = string(b, i);
        if word.eq_ignore_ascii_case("r") || word.eq_ignore_ascii_case("u") {
            out.push(Tok::Str(s));
        } else {
            out.push(Tok::OpaqueStr(format!("{word}\"{s}\"")));
        }
        next
    } else {
        out.push(Tok::Name(word));
        i
    }
}

/// A number at `i` (`1_000`, `0.5`, `1e-3`, `0x1f`), underscores dropped: pushed to `out`;
/// returns the index after it.
fn number(b: &[u8], mut i: usize, out: &mut Vec<Tok>) -> usize {
    let start = i;
    while b
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'_')
        || (matches!(b.get(i), Some(b'+' | b'-'))
            && matches!(b.get(i.wrapping_sub(1)), Some(b'e' | b'E')))
    {
        i += 1;
    }
    let n = String::from_utf8_lossy(b.get(start..i).unwrap_or_default()).replace('_', "");
    out.push(Tok::Num(n));
    i
}

/// A string literal at `i` (single, double or triple quoted): its text and the index after it.
fn string(b: &[u8], i: usize) -> (String, usize) {
    let q = b.get(i).copied().unwrap_or(b'"');
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    let mut j = if triple { i + 3 } else { i + 1 };
    let mut out = Vec::new();
    while j < b.len() {
        let c = b.get(j).copied().unwrap_or(q);
        if c == b'\\' {
            if let Some(n) = b.get(j + 1) {
                out.push(*n);
            }
            j += 2;
            continue;
        }
        if c == q && (!triple || (b.get(j + 1) == Some(&q) && b.get(j + 2) == Some(&q))) {
            j += if triple { 3 } else { 1 };
            return (String::from_utf8_lossy(&out).into_owned(), j);
        }
        if c == b'\n' && !triple {
            break;
        }
        out.push(c);
        j += 1;
    }
    (String::from_utf8_lossy(&out).into_owned(), j)
}

/// One call: its name (the last dotted part), its positional and keyword arguments as tokens.
#[derive(Debug, Clone)]
struct Call {
    name: String,
    /// The name as written (`lmdeploy.serve`).
    written: String,
    /// The statement it is in (names are resolved by the assignments before it).
    at: usize,
    positional: Vec<Vec<Tok>>,
    keywords: Vec<(String, Vec<Tok>)>,
}

struct Script {
    /// `NAME = value` statements: each name's assignments with their statement, in order.
    assigned: BTreeMap<String, Vec<(usize, Vec<Tok>)>>,
    /// The calls, in text order (a call inside another's arguments too).
    calls: Vec<Call>,
}

impl Script {
    fn read(toks: &[Tok]) -> Script {
        let mut assigned: BTreeMap<String, Vec<(usize, Vec<Tok>)>> = BTreeMap::new();
        let mut calls = Vec::new();
        for (at, stmt) in toks.split(|t| *t == Tok::End).enumerate() {
            if let [Tok::Name(name), Tok::Punct('='), rest @ ..] = stmt
                && rest.first() != Some(&Tok::Punct('='))
            {
                assigned
                    .entry(name.clone())
                    .or_default()
                    .push((at, rest.to_vec()));
            }
            find_calls(stmt, at, &mut calls);
        }
        Script { assigned, calls }
    }

    /// The value `name` was last assigned before statement `at`.
    fn value_of(&self, name: &str, at: usize) -> Option<&[Tok]> {
        self.assigned
            .get(name)?
            .iter()
            .rev()
            .find(|(i, _)| *i < at)
            .map(|(_, v)| v.as_slice())
    }
}

/// Every `name(...)` / `a.b.name(...)` in `toks` (statement `at`).
fn find_calls(toks: &[Tok], at: usize, out: &mut Vec<Call>) {
    let mut i = 0;
    while i < toks.len() && out.len() < MAX_TOKENS {
        if let (Some(Tok::Name(name)), Some(Tok::Punct('('))) = (toks.get(i), toks.get(i + 1)) {
            let mut written = name.clone();
            let mut k = i;
            while k >= 2
                && toks.get(k - 1) == Some(&Tok::Punct('.'))
                && let Some(Tok::Name(prev)) = toks.get(k - 2)
            {
                written = format!("{prev}.{written}");
                k -= 2;
            }
            let (args, _) = arguments(toks, i + 1);
            let mut call = Call {
                name: name.clone(),
                written,
                at,
                positional: Vec::new(),
                keywords: Vec::new(),
            };
            for arg in args {
                match arg.as_slice() {
                    [Tok::Name(k), Tok::Punct('='), value @ ..]
                        if value.first() != Some(&Tok::Punct('=')) =>
                    {
                        call.keywords.push((k.clone(), value.to_vec()));
                    }
                    _ => call.positional.push(arg),
                }
            }
            out.push(call);
        }
        i += 1;
    }
}

/// The comma-separated arguments of the bracket opening at `open`, and the index after its
/// closing bracket.
fn arguments(toks: &[Tok], open: usize) -> (Vec<Vec<Tok>>, usize) {
    let mut args = Vec::new();
    let mut cur = Vec::new();
    let mut depth = 0usize;
    let mut i = open;
    while let Some(t) = toks.get(i) {
        match t {
            Tok::Punct('(' | '[' | '{') => {
                depth += 1;
                if depth > 1 {
                    cur.push(t.clone());
                }
            }
            Tok::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if !cur.is_empty() {
                        args.push(cur);
                    }
                    return (args, i + 1);
                }
                cur.push(t.clone());
            }
            Tok::Punct(',') if depth == 1 => args.push(std::mem::take(&mut cur)),
            Tok::End => break,
            t => cur.push(t.clone()),
        }
        i += 1;
    }
    if !cur.is_empty() {
        args.push(cur);
    }
    (args, i)
}

/// What a value's tokens hold: a literal read, or the text of what the script does not fix.
#[derive(Debug, Clone, PartialEq)]
enum Read {
    Value(Value),
    /// A config object (`TurbomindEngineConfig(...)`): its class and keywords.
    Object(String, Vec<(String, Vec<Tok>)>),
    Unknown(String),
}

fn text_of(toks: &[Tok]) -> String {
    let mut s = String::new();
    for t in toks.iter().take(64) {
        let piece = match t {
            Tok::Name(n) | Tok::Num(n) => n.clone(),
            Tok::Str(v) => format!("'{v}'"),
            Tok::OpaqueStr(v) => v.clone(),
            Tok::Punct(c) => c.to_string(),
            Tok::End => String::new(),
        };
        let glue = matches!(t, Tok::Punct('.' | '(' | ')' | '[' | ']' | ','))
            || s.ends_with(['.', '(', '[']);
        if !s.is_empty() && !glue {
            s.push(' ');
        }
        s.push_str(&piece);
    }
    s
}

/// What `toks` hold in statement `at` (names by their assignments before it).
fn read(toks: &[Tok], at: usize, script: &Script, api: &PythonApi, depth: usize) -> Read {
    if depth > MAX_DEPTH {
        return Read::Unknown(text_of(toks));
    }
    match toks {
        [Tok::Str(s)] => Read::Value(Value::String(s.clone())),
        [Tok::Num(n)] => Read::Value(values::guess(n)),
        [Tok::Punct('-'), Tok::Num(n)] => Read::Value(values::guess(&format!("-{n}"))),
        [Tok::Name(n)] if n == "True" => Read::Value(Value::Bool(true)),
        [Tok::Name(n)] if n == "False" => Read::Value(Value::Bool(false)),
        [Tok::Name(n)] if n == "None" => Read::Value(Value::Null),
        [Tok::Name(n)] => match script.value_of(n, at) {
            Some(v) => match read(v, at, script, api, depth + 1) {
                Read::Unknown(_) => Read::Unknown(n.clone()),
                known => known,
            },
            None => Read::Unknown(n.clone()),
        },
        [Tok::Punct('['), .., Tok::Punct(']')] | [Tok::Punct('('), .., Tok::Punct(')')] => {
            let (items, _) = arguments(toks, 0);
            let mut out = Vec::new();
            for item in items {
                match read(&item, at, script, api, depth + 1) {
                    Read::Value(v) => out.push(v),
                    _ => return Read::Unknown(text_of(toks)),
                }
            }
            Read::Value(Value::Array(out))
        }
        _ => {
            // A config object: `[module.]Class(k=v, ...)`.
            let paren = toks.iter().position(|t| *t == Tok::Punct('('));
            if let Some(paren) = paren
                && paren >= 1
                && let Some(Tok::Name(class)) = toks.get(paren - 1)
                && api.config_classes.iter().any(|c| c == class)
                && toks.get(..paren - 1).is_some_and(|head| {
                    head.iter()
                        .all(|t| matches!(t, Tok::Name(_) | Tok::Punct('.')))
                })
            {
                let mut calls = Vec::new();
                find_calls(toks.get(paren - 1..).unwrap_or_default(), at, &mut calls);
                if let Some(call) = calls.into_iter().next() {
                    return Read::Object(class.clone(), call.keywords);
                }
            }
            Read::Unknown(text_of(toks))
        }
    }
}

fn launch(
    cat: &Catalog,
    api: &PythonApi,
    call: &Call,
    script: &Script,
    hints: &ParseHints,
    file: Option<&str>,
) -> LaunchConfig {
    let mut l = LaunchConfig {
        engine: cat.engine(),
        engine_version: hints.engine_version.clone(),
        entrypoint: Some(format!("{}()", call.written)),
        working_directory: hints.working_directory.clone(),
        source: hints.source.clone(),
        ..LaunchConfig::default()
    };
    read_model(&mut l, api, call, script);
    for setting in settings(&mut l, api, call, script) {
        apply(&mut l, cat, api, (call, script), setting, file);
    }
    l.speculative = options::speculative(cat, &l.options);
    l
}

/// The model: the first positional argument, or its keyword.
fn read_model(l: &mut LaunchConfig, api: &PythonApi, call: &Call, script: &Script) {
    let model = call.positional.first().cloned().or_else(|| {
        call.keywords
            .iter()
            .find(|(k, _)| api.model_keywords.contains(k))
            .map(|(_, v)| v.clone())
    });
    match model.map(|m| read(&m, call.at, script, api, 0)) {
        Some(Read::Value(Value::String(m))) if !m.trim().is_empty() => l.model = Some(m),
        Some(Read::Unknown(text)) => l.warnings.push(format!(
            "the model is unknown: `{text}` is a value the text does not fix"
        )),
        _ => {}
    }
}

/// One keyword to read as an option: its name, its value's tokens, and what it was given to
/// (the call as written, or the config class).
type Setting = (String, Vec<Tok>, String);

/// The call's keywords and its config object's, in order (the model's and ignored ones left
/// out); a config keyword that is no config object is a warning.
fn settings(l: &mut LaunchConfig, api: &PythonApi, call: &Call, script: &Script) -> Vec<Setting> {
    let mut out: Vec<Setting> = Vec::new();
    for (k, v) in &call.keywords {
        if api.model_keywords.contains(k) || api.ignore.contains(k) {
            continue;
        }
        if api.config_keyword.as_deref() != Some(k.as_str()) {
            out.push((k.clone(), v.clone(), call.written.clone()));
            continue;
        }
        match read(v, call.at, script, api, 0) {
            Read::Object(class, keywords) => {
                for (ck, cv) in keywords {
                    out.push((ck, cv, class.clone()));
                }
            }
            Read::Value(Value::Null) => {}
            Read::Value(other) => l.warnings.push(format!(
                "{k}={other} is not an engine config object: not read"
            )),
            Read::Unknown(text) => l.warnings.push(format!(
                "the engine config is unknown: {k}={text} is a value the text does not fix"
            )),
        }
    }
    out
}

/// One setting read into the launch: an option of the catalog, an unknown keyword, or a value
/// the text does not fix. `file`: the script it was read from, said in the option's `written`.
fn apply(
    l: &mut LaunchConfig,
    cat: &Catalog,
    api: &PythonApi,
    (call, script): (&Call, &Script),
    (k, v, from): Setting,
    file: Option<&str>,
) {
    let spec = cat.lookup_name_loose(&k);
    match (read(&v, call.at, script, api, 0), spec) {
        (Read::Value(Value::Null), _) => {}
        (Read::Value(value), Some(spec)) => {
            let value = match (&value, &spec.kind) {
                (Value::String(s), kind) if !matches!(kind, ValueKind::Str) => {
                    values::typed(s, kind, cat.units)
                }
                _ => value,
            };
            let written = match file {
                Some(path) => format!("{k}={value} (in {path})"),
                None => options::written_like_cli(spec, &value),
            };
            l.options
                .insert(spec.name.clone(), LaunchOption { value, written });
        }
        (Read::Value(value), None) => l.unknown.push(format!("{k}={value}")),
        (Read::Object(class, _), _) => l.unknown.push(format!("{k}={class}(...)")),
        (Read::Unknown(text), spec) => {
            let name = spec.map_or(k.clone(), |s| s.name.clone());
            l.warnings.push(format!(
                "{name} is unknown: {k}={text} in {from}(...) is a value the text does not fix"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_join_lines_inside_brackets() {
        let t = tokens("x = f(1,\n  'a')  # c\ny = 2\n");
        let ends = t.iter().filter(|t| **t == Tok::End).count();
        assert_eq!(ends, 2, "{t:?}");
    }

    #[test]
    fn unterminated_input_does_not_panic() {
        for s in [
            "serve(", "x = '", "f(\"\"\"", "a.(", ")))", "= =", "\\", "0x", "1e+",
        ] {
            let _ = tokens(s);
            let _ = Script::read(&tokens(s));
        }
    }
}
