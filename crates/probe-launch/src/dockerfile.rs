//! Dockerfiles (and Containerfiles): the last stage's `FROM` image, its `ENV`, `ENTRYPOINT` and
//! `CMD` make the container's launch (exec form as a JSON array, shell form run by `/bin/sh
//! -c`, as the Dockerfile reference says).

use std::collections::BTreeMap;

use probe_model::LaunchConfig;

use super::ctx::{Ctx, ReadArgv};
use super::hints::ParseHints;
use super::shell::split_words;
use super::spec::{Spec, from_spec};

/// Instruction lines, continuations (`\`) joined and comments dropped: `(INSTRUCTION, rest)`.
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('#') || (t.is_empty() && cur.is_empty()) {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head);
                cur.push(' ');
            }
            None => {
                cur.push_str(t);
                let (word, rest) = cur
                    .trim()
                    .split_once(char::is_whitespace)
                    .unwrap_or((cur.trim(), ""));
                out.push((word.to_ascii_uppercase(), rest.trim().to_string()));
                cur.clear();
            }
        }
    }
    out
}

/// Whether `text` is a Dockerfile that says what its container runs: it starts with `FROM` (or
/// `ARG`s and then `FROM`) and has a `CMD` or `ENTRYPOINT`.
pub(crate) fn is_dockerfile(text: &str) -> bool {
    let ins = instructions(text);
    // The first instruction as written, upper-cased by convention: prose that starts "From
    // the docs" is no Dockerfile.
    let first = text
        .lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("ARG"));
    first.is_some_and(|l| l.starts_with("FROM "))
        && ins.iter().any(|(w, _)| w == "CMD" || w == "ENTRYPOINT")
}

/// `["a", "b"]` (exec form) or a shell command line (shell form).
fn command(rest: &str) -> Vec<String> {
    if rest.starts_with('[')
        && let Ok(serde_json::Value::Array(items)) = serde_json::from_str(rest)
    {
        return items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
    }
    vec!["/bin/sh".into(), "-c".into(), rest.to_string()]
}

/// `$NAME` and `${NAME}` in an `ENV` value replaced by the value an earlier `ENV` of this stage
/// gave `NAME` (the builder substitutes them, so `ENV PATH=/b:$PATH` after `ENV PATH=/a:$PATH`
/// is `/b:/a:$PATH`). A name no earlier `ENV` set (the base image's, a build `ARG`) is not known
/// from the text and stays as written, as does any other `${...}` form.
fn expand_known(value: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, len) = match after.strip_prefix('{') {
            Some(inner) => match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            },
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], end)
            }
        };
        match env.get(name) {
            Some(v) if !name.is_empty() => out.push_str(v),
            _ => out.push_str(&rest[at..at + 1 + len]),
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// `ENV K=V K2="v 2"` or the old `ENV K V`; earlier values substituted ([`expand_known`]),
/// except in a single-quoted value (`K='$X'`), where the builder leaves `$` alone.
fn env_line(rest: &str, env: &mut BTreeMap<String, String>) {
    let words = split_words(rest);
    if words.iter().all(|w| w.contains('=')) {
        // Every pair of one line sees the values from before the line.
        let pairs: Vec<(String, String)> = words
            .iter()
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| {
                let v = if rest.contains(&format!("{k}='")) {
                    v.to_string()
                } else {
                    expand_known(v, env)
                };
                (k.to_string(), v)
            })
            .collect();
        env.extend(pairs);
    } else if let Some((k, v)) = rest.split_once(char::is_whitespace) {
        let v = v.trim();
        let v = if v.starts_with('\'') {
            v.to_string()
        } else {
            expand_known(v, env)
        };
        env.insert(k.to_string(), v);
    }
}

/// The launch of the Dockerfile's last stage.
pub(crate) fn launch(
    text: &str,
    read: ReadArgv,
    ctx: Ctx,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    let mut image = None;
    let mut env = BTreeMap::new();
    let mut entrypoint = None;
    let mut cmd = Vec::new();
    for (word, rest) in instructions(text) {
        match word.as_str() {
            "FROM" => {
                // `FROM [--platform=...] image [AS name]`: a new stage starts afresh.
                image = rest
                    .split_whitespace()
                    .find(|w| !w.starts_with("--"))
                    .map(str::to_string);
                env.clear();
                entrypoint = None;
                cmd.clear();
            }
            "ENV" => env_line(&rest, &mut env),
            "ENTRYPOINT" => entrypoint = Some(command(&rest)),
            "CMD" => cmd = command(&rest),
            _ => {}
        }
    }
    let spec = Spec {
        image,
        entrypoint,
        cmd,
        env,
        docker_wrapper: true,
    };
    from_spec(read, spec, ctx, hints)
}
