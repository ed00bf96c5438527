//! Expansion of words against the state: parameters (`${X:-d}`, `${X##*/}`), arrays, static
//! command substitutions (`$(basename ...)`, `$(cat <<EOF ...)`), integer arithmetic.

use super::budget::{ITEM, words};
use super::lexer::{Heredoc, Op, Part, Tok, Word, heredoc_word, is_name_char, lex};
use super::state::{State, Val, normalize_path};
use super::{MAX_FILE_BYTES, MAX_VALUE_BYTES};

pub(super) fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// A here-document's text as the command reads it: expanded unless its delimiter was quoted.
/// A body that holds here-documents of its own is taken as written (bounds the recursion).
pub(super) fn heredoc_text(h: &Heredoc, state: &State) -> String {
    if !state.budget.take(h.body.len()) {
        return String::new();
    }
    if h.expands && !h.body.contains("<<") {
        expand_simple(&heredoc_word(&h.body), state)
    } else {
        h.body.clone()
    }
}

/// The value an assignment stores: the word's text with in-text variables followed, references to
/// unknowable.
pub(crate) fn assignment_value(w: &Word, state: &State) -> Val {
    // Drop the `NAME=` / `NAME+=` prefix from the first literal part.
    let mut parts = w.parts.clone();
    if let Some(Part::Lit(t, q)) = parts.first_mut()
        && let Some((_, v)) = t.split_once('=')
    {
        *t = v.to_string();
        let _ = q;
    }
    let mut s = String::new();
    for p in &parts {
        // `X=$X$X$X...`: a value past the bound is not followed, and not built either.
        if s.len() > MAX_VALUE_BYTES {
            return Val::Opaque;
        }
        match p {
            Part::Lit(t, _) => s.push_str(t),
            Part::Var { name, op, raw, .. } => match resolve_var(name, op.as_deref(), raw, state) {
                Some(t) => s.push_str(&t),
                None => return Val::Opaque,
            },
            Part::Cmd(raw, _) => match static_cmd_subst(raw, state) {
                CmdSubst::Value(v) => s.push_str(&v),
                CmdSubst::Literal => s.push_str(raw),
                CmdSubst::Opaque => return Val::Opaque,
            },
            Part::Arith(raw, _) => s.push_str(&arith(raw, state).unwrap_or_else(|| raw.clone())),
        }
    }
    Val::Text(s)
}

/// `Some(text)` to substitute; `None` when the value is an operation on an unknowable value.
/// A value the budget cannot pay for is kept as written.
fn resolve_var(name: &str, op: Option<&str>, raw: &str, state: &State) -> Option<String> {
    let cost = match state.vars.get(name) {
        Some(Val::Text(v)) => v.len(),
        Some(Val::Array(a)) => words(a),
        _ => raw.len(),
    };
    if !state.budget.take(cost) {
        return Some(raw.to_string());
    }
    match state.vars.get(name) {
        Some(Val::Text(v)) => match op {
            None => Some(v.clone()),
            Some(o) if o.starts_with(":-") || o.starts_with('-') || o.starts_with(":=") => {
                if v.is_empty() {
                    Some(o.trim_start_matches(':').get(1..).unwrap_or("").to_string())
                } else {
                    Some(v.clone())
                }
            }
            Some(o) => {
                if v.contains('$') {
                    None
                } else {
                    Some(param_op(v, o).unwrap_or_else(|| raw.to_string()))
                }
            }
        },
        Some(Val::Array(a)) => Some(a.join(" ")),
        Some(Val::Opaque | Val::Either(_)) => Some(raw.to_string()),
        // Environment variables, positional parameters: kept as written.
        None => match op {
            Some(o)
                if !(o.starts_with(":-")
                    || o.starts_with('-')
                    || o.starts_with(":=")
                    || o.starts_with('[')) =>
            {
                None
            }
            _ => Some(raw.to_string()),
        },
    }
}

fn param_op(v: &str, op: &str) -> Option<String> {
    if let Some(pat) = op.strip_prefix("##") {
        if pat == "*/" {
            return Some(v.rsplit('/').next().unwrap_or(v).to_string());
        }
        return v
            .strip_prefix(pat)
            .map(str::to_string)
            .or(Some(v.to_string()));
    }
    if let Some(pat) = op.strip_prefix("%%").or_else(|| op.strip_prefix('%')) {
        if pat == "/*" {
            return Some(
                v.rsplit_once('/')
                    .map(|(a, _)| a.to_string())
                    .unwrap_or_default(),
            );
        }
        return v
            .strip_suffix(pat)
            .map(str::to_string)
            .or(Some(v.to_string()));
    }
    if let Some(pat) = op.strip_prefix('#') {
        if pat == "*/" {
            return Some(
                v.split_once('/')
                    .map(|(_, b)| b.to_string())
                    .unwrap_or_else(|| v.to_string()),
            );
        }
        return v
            .strip_prefix(pat)
            .map(str::to_string)
            .or(Some(v.to_string()));
    }
    if op.starts_with(":+") || op.starts_with('+') {
        return Some(if v.is_empty() {
            String::new()
        } else {
            op.trim_start_matches(':')
                .get(1..)
                .unwrap_or("")
                .to_string()
        });
    }
    None
}

enum CmdSubst {
    Value(String),
    Literal,
    Opaque,
}

fn static_cmd_subst(raw: &str, state: &State) -> CmdSubst {
    let inner = raw
        .strip_prefix("$(")
        .and_then(|s| s.strip_suffix(')'))
        .or_else(|| raw.strip_prefix('`').and_then(|s| s.strip_suffix('`')))
        .unwrap_or("")
        .trim();
    // Each substitution is lexed again where its word is expanded.
    if !state.budget.take(inner.len()) {
        return CmdSubst::Literal;
    }
    if let Some(text) = cat_output(inner, state) {
        // Command substitution drops the trailing newlines.
        return CmdSubst::Value(text.trim_end_matches('\n').to_string());
    }
    // A program over several lines (`$(python3 -c "\nimport torch\n...")`): what it prints is
    // not in the text, and its text is no value.
    if inner.contains('\n') {
        return CmdSubst::Opaque;
    }
    if inner.contains("BASH_SOURCE")
        || inner.contains("$0")
        || inner.contains("pwd")
        || inner.contains("realpath")
        || inner.contains("readlink")
    {
        return CmdSubst::Opaque;
    }
    // Make variables: `$(MODEL)` where MODEL is assigned in the text.
    if inner.chars().all(is_name_char)
        && let Some(Val::Text(v)) = state.vars.get(inner)
        && state.budget.take(v.len())
    {
        return CmdSubst::Value(v.clone());
    }
    // Nested substitutions are left as written (and bound the recursion).
    if inner.contains("$(") || inner.contains('`') || inner.len() > 4096 {
        return CmdSubst::Literal;
    }
    let toks = lex(inner);
    let words: Vec<&Word> = toks
        .iter()
        .filter_map(|t| match t {
            Tok::Word(w) => Some(w),
            _ => None,
        })
        .collect();
    if words.len() != 2
        || toks
            .iter()
            .any(|t| matches!(t, Tok::Op(o) if *o != Op::Newline) || matches!(t, Tok::Redir(..)))
    {
        return CmdSubst::Literal;
    }
    let (Some(cmd), Some(arg)) = (words.first(), words.get(1)) else {
        return CmdSubst::Literal;
    };
    let cmd = cmd.raw();
    let arg = expand_simple(arg, state);
    if arg.contains('$') {
        return CmdSubst::Literal;
    }
    match cmd.as_str() {
        "basename" => CmdSubst::Value(basename(arg.trim_end_matches('/')).to_string()),
        "dirname" => CmdSubst::Value(
            arg.trim_end_matches('/')
                .rsplit_once('/')
                .map(|(a, _)| {
                    if a.is_empty() {
                        "/".to_string()
                    } else {
                        a.to_string()
                    }
                })
                .unwrap_or_else(|| ".".into()),
        ),
        "echo" => CmdSubst::Value(arg),
        _ => CmdSubst::Literal,
    }
}

/// What `cat` prints when the text knows it: `cat <<EOF ... EOF` (a command kept in a
/// here-document) or `cat FILE` of a file a here-document wrote earlier.
fn cat_output(inner: &str, state: &State) -> Option<String> {
    if !inner.starts_with("cat") || inner.len() > MAX_FILE_BYTES {
        return None;
    }
    let toks = lex(inner);
    let mut words = toks.iter().filter_map(|t| match t {
        Tok::Word(w) => Some(w),
        _ => None,
    });
    if words.next().map(Word::raw).as_deref() != Some("cat") {
        return None;
    }
    let file = words.next();
    if words.next().is_some() {
        return None;
    }
    let heredoc = toks.iter().find_map(|t| match t {
        Tok::Heredoc(h) => Some(h),
        _ => None,
    });
    match (file, heredoc) {
        (None, Some(h)) => Some(heredoc_text(h, state)),
        (Some(f), None) => {
            let path = normalize_path(&expand_simple(f, state));
            state
                .files
                .get(&path)
                .filter(|t| state.budget.take(t.len()))
                .cloned()
        }
        _ => None,
    }
}

/// Integer arithmetic on literals and in-text integer variables; `None` otherwise.
fn arith(raw: &str, state: &State) -> Option<String> {
    let inner = raw.strip_prefix("$((")?.strip_suffix("))")?;
    let mut expr = String::new();
    let mut name = String::new();
    let flush = |name: &mut String, expr: &mut String| -> Option<()> {
        if name.is_empty() {
            return Some(());
        }
        let n = std::mem::take(name);
        if n.chars().all(|c| c.is_ascii_digit()) {
            expr.push_str(&n);
            return Some(());
        }
        match state.vars.get(n.trim_start_matches('$')) {
            Some(Val::Text(v)) if v.trim().parse::<i64>().is_ok() => {
                expr.push_str(v.trim());
                Some(())
            }
            _ => None,
        }
    };
    for c in inner.chars() {
        if is_name_char(c) || c == '$' {
            name.push(c);
        } else {
            flush(&mut name, &mut expr)?;
            expr.push(c);
        }
    }
    flush(&mut name, &mut expr)?;
    eval_arith(&expr).map(|v| v.to_string())
}

fn eval_arith(e: &str) -> Option<i64> {
    // Sum of products, left to right, integers only.
    let e: String = e.chars().filter(|c| !c.is_whitespace()).collect();
    let mut total: i64 = 0;
    for (si, term) in split_keep(&e, &['+', '-']).into_iter().enumerate() {
        let (sign, body) = match term.strip_prefix('-') {
            Some(b) => (-1, b),
            None => (1, term.strip_prefix('+').unwrap_or(term)),
        };
        if body.is_empty() && si == 0 {
            continue;
        }
        let mut acc: Option<i64> = None;
        let mut op = '*';
        let mut num = String::new();
        for c in body.chars().chain(std::iter::once('*')) {
            if c.is_ascii_digit() {
                num.push(c);
            } else if matches!(c, '*' | '/' | '%') {
                let n: i64 = num.parse().ok()?;
                num.clear();
                acc = Some(match (acc, op) {
                    (None, _) => n,
                    (Some(a), '*') => a.checked_mul(n)?,
                    (Some(a), '/') => a.checked_div(n)?,
                    (Some(a), _) => a.checked_rem(n)?,
                });
                op = c;
            } else {
                return None;
            }
        }
        total = total.checked_add(acc?.checked_mul(sign)?)?;
    }
    Some(total)
}

fn split_keep<'a>(s: &'a str, seps: &[char]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if i > start && seps.contains(&c) {
            out.push(s.get(start..i).unwrap_or(""));
            start = i;
        }
    }
    out.push(s.get(start..).unwrap_or(""));
    out
}

/// A word that is one unquoted command substitution whose output the text does not hold
/// (`$(cat /etc/vllm/args)`, `` `get-args` ``): the shell splits that output into words, so it
/// stands for an unknown number of them (none, a model, options). Its text as written.
pub(crate) fn unknown_words<'w>(w: &'w Word, state: &State) -> Option<&'w str> {
    if w.array.is_some() {
        return None;
    }
    match w.parts.as_slice() {
        [Part::Cmd(raw, false)] => match static_cmd_subst(raw, state) {
            CmdSubst::Value(_) => None,
            _ => Some(raw.as_str()),
        },
        _ => None,
    }
}

/// Expands a word without field splitting into a single string.
pub(crate) fn expand_simple(w: &Word, state: &State) -> String {
    expand_word(w, state).join(" ")
}

/// Expands one word into argv items (unquoted expansions of in-text values are split on
/// whitespace; `"${ARR[@]}"` yields one item per element).
pub(crate) fn expand_word(w: &Word, state: &State) -> Vec<String> {
    if let Some(items) = &w.array {
        return items.iter().flat_map(|it| expand_word(it, state)).collect();
    }
    let mut out = Fields::default();
    // The empty text a `"..."` ends with makes no word of its own beside a quoted variable
    // (which says itself whether it is one: `"$@"` of nothing is none).
    let quoted_var = w
        .parts
        .iter()
        .any(|p| matches!(p, Part::Var { quoted: true, .. }));
    for p in &w.parts {
        match p {
            Part::Lit(t, true) if t.is_empty() && quoted_var => {}
            Part::Lit(t, q) => out.glue(t, *q),
            Part::Var {
                name,
                op,
                raw,
                quoted,
            } => expand_var(name, op.as_deref(), raw, *quoted, state, &mut out),
            Part::Cmd(raw, q) => match static_cmd_subst(raw, state) {
                CmdSubst::Value(v) => out.glue(&v, *q),
                _ => out.glue(raw, *q),
            },
            Part::Arith(raw, q) => out.glue(&arith(raw, state).unwrap_or_else(|| raw.clone()), *q),
        }
    }
    out.finish()
}

/// The argv items one word expands to, as they are built.
struct Fields {
    fields: Vec<String>,
    any_quoted: bool,
    produced: bool,
}

impl Default for Fields {
    fn default() -> Self {
        Fields {
            fields: vec![String::new()],
            any_quoted: false,
            produced: false,
        }
    }
}

impl Fields {
    /// Appends text to the current item.
    fn glue(&mut self, text: &str, quoted: bool) {
        if let Some(last) = self.fields.last_mut() {
            last.push_str(text);
        }
        self.any_quoted |= quoted;
        self.produced = true;
    }

    /// Appends items: the first joins the current one, the rest start new ones.
    fn split<'a>(&mut self, mut items: impl Iterator<Item = &'a str>) {
        if let Some(first) = items.next()
            && let Some(last) = self.fields.last_mut()
        {
            last.push_str(first);
        }
        self.fields.extend(items.map(str::to_string));
    }

    fn finish(self) -> Vec<String> {
        let empty = self.fields.len() == 1 && self.fields.first().is_some_and(String::is_empty);
        if (!self.produced || empty) && !self.any_quoted {
            return Vec::new();
        }
        self.fields
    }
}

/// `$NAME`, `${NAME...}`, `${ARR[@]}`: in-text values substituted (an unquoted multi-word value
/// split into items, as the shell does), anything else kept as written.
fn expand_var(
    name: &str,
    op: Option<&str>,
    raw: &str,
    quoted: bool,
    state: &State,
    out: &mut Fields,
) {
    // `"${ARR[@]}"`, and `"$@"` in a function called with arguments: one item per element.
    let all = matches!(op, Some("[@]" | "[*]")) || (op.is_none() && matches!(name, "@" | "*"));
    if all
        && let Some(Val::Array(items)) = state.vars.get(name)
        && state.budget.take(words(items))
    {
        out.split(items.iter().map(String::as_str));
        out.produced |= !items.is_empty();
        // `"$@"` and `"${ARR[@]}"` of nothing are no word at all.
        out.any_quoted |= quoted && !items.is_empty();
        return;
    }
    let text = resolve_var(name, op, raw, state).unwrap_or_else(|| raw.to_string());
    let from_text = matches!(state.vars.get(name), Some(Val::Text(_) | Val::Array(_)));
    // A value standing for a computed result (`$(...)`, `${X:-d}`) is one word.
    let placeholder = text.starts_with("$(") || text.starts_with("${") || text.starts_with('`');
    // Unquoted, the value splits into words (each one paid for; unpaid, it stays as written).
    // (`ARGS=" --flag"`: the blanks around one word are no part of it either.)
    let split = !quoted && from_text && !placeholder && text.contains(char::is_whitespace);
    if split && state.budget.take(ITEM * text.split_whitespace().count()) {
        let items = value_words(&text);
        // `x$ARGS` with a value that starts with a blank: the value's words start anew.
        if text.starts_with(char::is_whitespace) && out.fields.last().is_some_and(|f| !f.is_empty())
        {
            out.fields.push(String::new());
        }
        // A backslash left from a line continuation in a quoted here-document is no argument.
        out.split(items.into_iter().filter(|w| *w != "\\"));
    } else if let Some(last) = out.fields.last_mut() {
        last.push_str(if split { raw } else { &text });
    }
    out.any_quoted |= quoted;
    out.produced |= !text.is_empty() || quoted;
}

/// The words an unquoted value splits into. A substitution the value holds as written
/// (`$(grep ... | cut -d: -f2)`, `${X:-a b}`, `` `cmd arg` ``), because the text does not
/// know its output, stays one word: its blanks are inside a program, not between arguments.
pub(super) fn value_words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    // Open `$(` / `(` and `${` / `{` inside a substitution, innermost last; a backquote span.
    let mut open: Vec<char> = Vec::new();
    let mut backquote = false;
    let mut prev = ' ';
    for (i, c) in text.char_indices() {
        let inside = !open.is_empty() || backquote;
        if c.is_whitespace() && !inside {
            if let Some(s) = start.take() {
                out.push(text.get(s..i).unwrap_or(""));
            }
            prev = c;
            continue;
        }
        if start.is_none() {
            start = Some(i);
        }
        match c {
            '(' if prev == '$' || !open.is_empty() => open.push(')'),
            '{' if prev == '$' || !open.is_empty() => open.push('}'),
            ')' | '}' if open.last() == Some(&c) => {
                open.pop();
            }
            '`' => backquote = !backquote,
            _ => {}
        }
        // Past this many open substitutions the rest of the value is one word.
        if open.len() > 32 {
            break;
        }
        prev = c;
    }
    if let Some(s) = start {
        out.push(text.get(s..).unwrap_or(""));
    }
    out
}

/// `NAME=value` / `NAME+=value`: the name, the value text and whether it appends.
pub(super) fn is_assignment(s: &str) -> Option<(&str, &str, bool)> {
    let (name, value) = s.split_once('=')?;
    let (name, append) = match name.strip_suffix('+') {
        Some(n) => (n, true),
        None => (name, false),
    };
    if name.is_empty()
        || !name.chars().all(is_name_char)
        || name
            .chars()
            .next()
            .map(|c| c.is_ascii_digit())
            .unwrap_or(true)
    {
        return None;
    }
    Some((name, value, append))
}

/// The value of an assignment word: its array items, else its text.
pub(super) fn assigned(w: &Word, state: &State) -> Val {
    match &w.array {
        // `args=("$@")` of a script's own arguments: not knowable, item by item.
        Some(items)
            if items.iter().flat_map(|it| it.parts.iter()).any(|p| {
                matches!(p, Part::Var { name, .. }
                    if matches!(name.as_str(), "@" | "*") && !state.vars.contains_key(name))
            }) =>
        {
            Val::Opaque
        }
        Some(items) => Val::Array(items.iter().flat_map(|it| expand_word(it, state)).collect()),
        None => assignment_value(w, state),
    }
}
