//! A small, static shell reader: enough of bash (and a little fish) to find what a script, a
//! history line or a README snippet actually runs.
//!
//! It lexes the text with bash's quoting rules (backslash-newline continuations, comments ending a
//! command, single/double quotes, `$VAR`, `${VAR...}`, `$(...)`, `$((...))`, arrays, redirections,
//! here-documents) and then walks the commands in order, tracking variables and exports. Values fixed
//! by an assignment in the text are resolved; anything that depends on the outside (positional
//! parameters, environment variables, `$0`, variables a loop or `case` may overwrite) is kept as
//! written.

// Reads remote and local text: no input may panic it.
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod budget;
mod builtins;
mod expand;
mod flow;
mod lexer;
pub(crate) mod markdown;
pub(crate) mod paste;
mod state;
mod walker;

pub(crate) use budget::{Budget, weight, words};
pub(crate) use state::{State, Val, normalize_path};
pub(crate) use walker::{ShellCommand, commands};

use std::collections::BTreeMap;
use std::rc::Rc;

use lexer::{Tok, Word, lex};

/// Bounds against hostile input.
pub(super) const MAX_TOKENS: usize = 200_000;
pub(super) const MAX_DEPTH: usize = 8;
/// Here-document files kept per text, and their size.
pub(super) const MAX_FILES: usize = 16;
pub(super) const MAX_FILE_BYTES: usize = 64 * 1024;
/// A variable's value; a longer one is not followed.
pub(super) const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Exported variables tracked per text.
pub(super) const MAX_EXPORTS: usize = 512;
/// Variables carried from one history entry to the next (`CMD="vllm serve ..."` typed, then
/// `eval "$CMD"`): at most this many, the most recently set kept, and this many bytes in all
/// (every later entry that references a variable gets a copy).
const MAX_CARRIED: usize = 64;
const MAX_CARRIED_BYTES: usize = 256 * 1024;

/// Sets in `vars` what the text's assignments leave fixed (one shell session's history read
/// entry by entry); values that depend on the outside are left out. The walk is paid from
/// `budget` (the history file's).
pub(crate) fn carry_vars(text: &str, vars: &mut BTreeMap<String, String>, budget: &Rc<Budget>) {
    if !(text.contains('=') || text.contains("read ") || text.contains("set ")) {
        return;
    }
    let known = reachable(text, vars);
    if !budget.take(weight(&known)) {
        return;
    }
    let mut st = State {
        budget: budget.clone(),
        ..State::default()
    };
    for (k, v) in known {
        st.vars.insert(k, Val::Text(v));
    }
    let _ = commands(text, &mut st, 0);
    for (k, v) in st.vars {
        match v {
            Val::Text(t) if t.len() <= MAX_FILE_BYTES => {
                if vars.len() >= MAX_CARRIED && !vars.contains_key(&k) {
                    continue;
                }
                let others = weight(vars.iter().filter(|(n, _)| **n != k));
                if others + k.len() + t.len() + 1 > MAX_CARRIED_BYTES {
                    vars.remove(&k);
                    continue;
                }
                vars.insert(k, t);
            }
            _ => {
                vars.remove(&k);
            }
        }
    }
}

/// The variables of `vars` that `text` can reach: those it names (`$X`, `${X...}`), and those
/// their values name, and so on. An entry gets copies of these only, not of every variable
/// carried so far.
pub(crate) fn reachable(text: &str, vars: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut todo: Vec<&str> = vec![text];
    while let Some(t) = todo.pop() {
        for name in named(t) {
            if let Some((k, v)) = vars.get_key_value(name)
                && !out.contains_key(k)
            {
                out.insert(k.clone(), v.clone());
                todo.push(v);
            }
        }
    }
    out
}

/// The names after each `$` (or `${`) of `text`.
fn named(text: &str) -> impl Iterator<Item = &str> {
    text.split('$').skip(1).filter_map(|after| {
        let after = after.strip_prefix('{').unwrap_or(after);
        let end = after
            .char_indices()
            .find(|(_, c)| !lexer::is_name_char(*c))
            .map_or(after.len(), |(i, _)| i);
        after.get(..end).filter(|n| !n.is_empty())
    })
}

/// Splits a compose `command:` string or similar shell-style, without any expansion: quotes are
/// removed, `$...` stays as written.
pub(crate) fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for t in lex(text) {
        if let Tok::Word(w) = t {
            let raw = if let Some(items) = &w.array {
                items.iter().map(Word::raw).collect::<Vec<_>>().join(" ")
            } else {
                w.raw()
            };
            out.push(raw);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Vec<ShellCommand> {
        let mut st = State::default();
        commands(text, &mut st, 0)
    }

    #[test]
    fn continuation_and_comment_end_the_command() {
        let c = run("python -m x \\\n--a 1 \\\n# comment\n--b 2\n");
        assert_eq!(
            c.first().map(|c| c.argv.clone()),
            Some(vec![
                "python".into(),
                "-m".into(),
                "x".into(),
                "--a".into(),
                "1".into()
            ])
        );
        assert_eq!(
            c.get(1).map(|c| c.argv.clone()),
            Some(vec!["--b".into(), "2".into()])
        );
    }

    #[test]
    fn variables_follow_assignments_and_keep_outside_values() {
        let c = run(
            "port=8082 # c\nm=$1\nx=\"${HOST:-0.0.0.0}\"\nrun --port $port --m ${m} --h \"${x}\" --e $ENV",
        );
        let argv = c.last().map(|c| c.argv.clone()).unwrap_or_default();
        assert_eq!(
            argv,
            vec![
                "run",
                "--port",
                "8082",
                "--m",
                "$1",
                "--h",
                "${HOST:-0.0.0.0}",
                "--e",
                "$ENV"
            ]
        );
    }

    #[test]
    fn loop_assignments_are_unstable() {
        let c = run(
            "dp=1\nwhile true; do\n case $1 in\n --dp) dp=$2; shift 2;;\n esac\ndone\nrun --dp $dp --n $((dp * 2))",
        );
        let argv = c.last().map(|c| c.argv.clone()).unwrap_or_default();
        assert_eq!(argv, vec!["run", "--dp", "$dp", "--n", "$((dp * 2))"]);
    }

    #[test]
    fn arithmetic_on_fixed_values() {
        let c = run("dp=2\nrun $((dp * 512 + 1))");
        assert_eq!(
            c.last().map(|c| c.argv.clone()),
            Some(vec!["run".into(), "1025".into()])
        );
    }

    #[test]
    fn redirections_tee_and_heredoc() {
        let c = run(
            "cat > ./a.yml <<EOF\nk: v\nEOF\nnohup srv > out.log 2>&1 &\nsrv2 | tee -a t.log\n",
        );
        assert_eq!(
            c.get(1).map(|c| c.redirects.clone()),
            Some(vec![(">".into(), "out.log".into())])
        );
        assert_eq!(c.get(2).map(|c| c.tee.clone()), Some(vec!["t.log".into()]));
        assert_eq!(
            c.get(2).and_then(|c| c.files.get("a.yml").cloned()),
            Some("k: v\n".into())
        );
    }

    #[test]
    fn arrays_and_quote_concatenation() {
        let c = run(
            "N=\"${N:-3}\"\nA=(\n \"m\"\n --x 1\n)\nif (( N > 0 )); then\n A+=(--j '{\"n\":'\"${N}\"'}')\nfi\nexec run \"${A[@]}\"",
        );
        let argv = c.last().map(|c| c.argv.clone()).unwrap_or_default();
        assert_eq!(
            argv,
            vec!["exec", "run", "m", "--x", "1", "--j", "{\"n\":${N:-3}}"]
        );
    }

    #[test]
    fn fish_set_and_exports() {
        let c = run("set M a/b\nexport C=0\nrun \"$M\"");
        let last = c.last().cloned().unwrap_or_default();
        assert_eq!(last.argv, vec!["run", "a/b"]);
        assert_eq!(last.exported.get("C").map(String::as_str), Some("0"));
    }
}

#[cfg(test)]
mod lexer_tests;
#[cfg(test)]
mod walker_tests;
