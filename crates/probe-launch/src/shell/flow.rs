//! Control flow, read statically: the condition of an `if`/`elif`/`while` or a `&&`/`||` test
//! (its text, and its value when the text fixes every operand), `case` patterns, the items of a
//! `for` loop whose list the text fixes, and where a loop body or a function body ends.
//!
//! Nothing here walks commands; the walker asks and decides what to read again.

use super::expand::{expand_simple, expand_word};
use super::lexer::{Op, Part, Tok, Word};
use super::state::State;

/// Iterations of a literal `for` loop read one by one; a longer list is read once, "in a loop".
pub(super) const MAX_ITERATIONS: usize = 16;

/// A condition as the launch notes it (`$1 = -d`) and its value when the text decides it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Cond {
    pub text: String,
    pub decided: Option<bool>,
}

/// Whether `w` is written as the plain unquoted word `s` (a keyword, a brace of a group).
pub(super) fn is_bare(w: &Word, s: &str) -> bool {
    matches!(w.parts.as_slice(), [Part::Lit(t, false)] if t == s) && w.array.is_none()
}

/// `(( ... ))` as a command: arithmetic, not a program.
pub(super) fn is_arith_command(w: &Word) -> bool {
    matches!(w.parts.as_slice(), [Part::Arith(raw, false)] if raw.starts_with("(("))
}

/// Whether the command `words` is a test (`[ ... ]`, `[[ ... ]]`, `test ...`, `(( ... ))`).
pub(super) fn is_test(words: &[&Word]) -> bool {
    let words = match words.split_first() {
        Some((first, rest)) if is_bare(first, "!") => rest,
        _ => words,
    };
    words
        .first()
        .is_some_and(|w| is_arith_command(w) || ["[", "[[", "test"].iter().any(|k| is_bare(w, k)))
}

/// The condition a command stands for: a test's operands (`[ "$1" = "-d" ]` is `$1 = -d`),
/// anything else as written.
pub(super) fn condition(words: &[&Word], state: &State) -> Cond {
    let (negate, words) = match words.split_first() {
        Some((first, rest)) if is_bare(first, "!") => (true, rest),
        _ => (false, words),
    };
    let mut operands: Vec<&Word> = words.to_vec();
    let test = match operands.first() {
        Some(w) if is_arith_command(w) => {
            let text = arith_text(w);
            let decided = decide_arith(&text, state);
            return negated(Cond { text, decided }, negate);
        }
        Some(w) if is_bare(w, "[") || is_bare(w, "[[") || is_bare(w, "test") => true,
        _ => false,
    };
    if test {
        operands.remove(0);
        if operands
            .last()
            .is_some_and(|w| is_bare(w, "]") || is_bare(w, "]]"))
        {
            operands.pop();
        }
    }
    let text = operands
        .iter()
        .map(|w| w.raw())
        .collect::<Vec<_>>()
        .join(" ");
    let decided = if test { decide(&operands, state) } else { None };
    negated(Cond { text, decided }, negate)
}

fn negated(c: Cond, negate: bool) -> Cond {
    if !negate {
        return c;
    }
    Cond {
        text: format!("! {}", c.text),
        decided: c.decided.map(|d| !d),
    }
}

/// `(( N > 0 ))` without its parentheses.
fn arith_text(w: &Word) -> String {
    let raw = w.raw();
    raw.trim_start_matches('(')
        .trim_end_matches(')')
        .trim()
        .to_string()
}

/// A test's value when every operand is fixed by the text: string (in)equality, `-z`/`-n`, and
/// integer comparisons. Files and anything else the host decides stay undecided.
fn decide(operands: &[&Word], state: &State) -> Option<bool> {
    let mut vals = Vec::new();
    for w in operands {
        let v = expand_simple(w, state);
        if v.contains('$') || v.contains('`') {
            return None;
        }
        vals.push(v);
    }
    let strs: Vec<&str> = vals.iter().map(String::as_str).collect();
    match strs.as_slice() {
        [a] if !a.starts_with('-') => Some(!a.is_empty()),
        ["-z", a] => Some(a.is_empty()),
        ["-n", a] => Some(!a.is_empty()),
        [a, "=" | "==", b] if !b.contains(['*', '?', '[']) => Some(a == b),
        [a, "!=", b] if !b.contains(['*', '?', '[']) => Some(a != b),
        [a, op, b] => compare_ints(a, op, b),
        _ => None,
    }
}

/// `(( A OP B ))` of integers the text fixes (literals, in-text integer variables).
fn decide_arith(text: &str, state: &State) -> Option<bool> {
    let int = |t: &str| -> Option<i64> {
        let t = t.trim().trim_start_matches('$');
        t.parse().ok().or_else(|| match state.vars.get(t) {
            Some(super::state::Val::Text(v)) => v.trim().parse().ok(),
            _ => None,
        })
    };
    for (op, test) in [
        (">=", "-ge"),
        ("<=", "-le"),
        ("==", "-eq"),
        ("!=", "-ne"),
        (">", "-gt"),
        ("<", "-lt"),
    ] {
        if let Some((a, b)) = text.split_once(op) {
            let (a, b) = (int(a)?, int(b)?);
            return compare_ints(&a.to_string(), test, &b.to_string());
        }
    }
    None
}

fn compare_ints(a: &str, op: &str, b: &str) -> Option<bool> {
    let (x, y): (i64, i64) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    Some(match op {
        "-eq" => x == y,
        "-ne" => x != y,
        "-gt" => x > y,
        "-ge" => x >= y,
        "-lt" => x < y,
        "-le" => x <= y,
        _ => return None,
    })
}

/// Whether `value` matches one of a `case` arm's `patterns`; `None` when a pattern uses a
/// bracket class (not followed).
pub(super) fn case_matches(patterns: &[String], value: &str) -> Option<bool> {
    let mut any = false;
    for p in patterns {
        if p.contains('[') {
            return None;
        }
        any |= glob(p.as_bytes(), value.as_bytes());
    }
    Some(any)
}

/// `*` and `?` globbing, linear in the two lengths times the stars (one backtrack point).
fn glob(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        match pat.get(p) {
            Some(b'*') => {
                star = Some((p, i));
                p += 1;
            }
            Some(c) if *c == b'?' || Some(c) == s.get(i) => {
                p += 1;
                i += 1;
            }
            _ => match star {
                Some((sp, si)) => {
                    p = sp + 1;
                    i = si + 1;
                    star = Some((sp, si + 1));
                }
                None => return false,
            },
        }
    }
    pat.get(p..)
        .is_some_and(|rest| rest.iter().all(|c| *c == b'*'))
}

/// The items of `for NAME in ITEMS` when the text fixes them (literal words, in-text values,
/// `{0..3}`, `$(seq A B)`), at most [`MAX_ITERATIONS`]; `None` otherwise.
pub(super) fn literal_items(items: &[&Word], state: &State) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for w in items {
        if let Some(range) = brace_range(w).or_else(|| seq(w, state)) {
            out.extend(range);
        } else {
            if w.parts.iter().any(|p| matches!(p, Part::Cmd(..))) {
                return None;
            }
            for v in expand_word(w, state) {
                if v.contains('$') || v.contains('`') || v.contains(['*', '?']) {
                    return None;
                }
                out.push(v);
            }
        }
        if out.len() > MAX_ITERATIONS {
            return None;
        }
    }
    Some(out)
}

/// `for ((i = A; i < B; i++))` with bounds the text fixes: the variable and its values, at most
/// [`MAX_ITERATIONS`].
pub(super) fn counted(w: &Word, state: &State) -> Option<(String, Vec<String>)> {
    if !is_arith_command(w) {
        return None;
    }
    let inner = arith_text(w);
    let mut clauses = inner.split(';').map(|c| c.replace(' ', ""));
    let (init, cond, step) = (clauses.next()?, clauses.next()?, clauses.next()?);
    let (name, start) = init.split_once('=')?;
    let int = |t: &str| -> Option<i64> {
        t.parse().ok().or_else(|| match state.vars.get(t) {
            Some(super::state::Val::Text(v)) => v.trim().parse().ok(),
            _ => None,
        })
    };
    let start = int(start)?;
    let (end, inclusive) = match cond.strip_prefix(name)? {
        c if c.starts_with("<=") => (int(c.get(2..)?)?, true),
        c if c.starts_with('<') => (int(c.get(1..)?)?, false),
        _ => return None,
    };
    let by = match step.as_str() {
        s if s == format!("{name}++") || s == format!("++{name}") => 1,
        s => int(s.strip_prefix(name)?.strip_prefix("+=")?)?,
    };
    if by <= 0 {
        return None;
    }
    let mut out = Vec::new();
    let mut i = start;
    while i < end || (inclusive && i == end) {
        if out.len() >= MAX_ITERATIONS {
            return None;
        }
        out.push(i.to_string());
        i = i.checked_add(by)?;
    }
    Some((name.to_string(), out))
}

/// `{A..B}` of integers.
fn brace_range(w: &Word) -> Option<Vec<String>> {
    let [Part::Lit(t, false)] = w.parts.as_slice() else {
        return None;
    };
    let (a, b) = t.strip_prefix('{')?.strip_suffix('}')?.split_once("..")?;
    range(a.parse().ok()?, b.parse().ok()?)
}

/// `$(seq B)`, `$(seq A B)` of integers fixed by the text.
fn seq(w: &Word, state: &State) -> Option<Vec<String>> {
    let [Part::Cmd(raw, _)] = w.parts.as_slice() else {
        return None;
    };
    let inner = raw.strip_prefix("$(")?.strip_suffix(')')?;
    let words: Vec<String> = super::lexer::lex(inner)
        .iter()
        .filter_map(|t| match t {
            Tok::Word(w) => Some(expand_simple(w, state)),
            _ => None,
        })
        .collect();
    let nums: Vec<i64> = match words.split_first() {
        Some((cmd, args)) if cmd == "seq" => {
            args.iter().map(|a| a.parse().ok()).collect::<Option<_>>()?
        }
        _ => return None,
    };
    match nums.as_slice() {
        [b] => range(1, *b),
        [a, b] => range(*a, *b),
        _ => None,
    }
}

fn range(a: i64, b: i64) -> Option<Vec<String>> {
    if b < a || b.checked_sub(a)? >= MAX_ITERATIONS as i64 {
        return None;
    }
    Some((a..=b).map(|n| n.to_string()).collect())
}

/// The index of the word that closes the block whose body starts at `start`: `done` for a loop
/// (`do` opens one), `}` for a function (`{` opens one), counted at the start of commands only.
pub(super) fn block_end(toks: &[Tok], start: usize, open: &str, close: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut at_start = true;
    for (i, t) in toks.iter().enumerate().skip(start) {
        match t {
            Tok::Op(_) => at_start = true,
            Tok::Word(w) if at_start => {
                if is_bare(w, close) {
                    if depth == 0 {
                        return Some(i);
                    }
                    depth -= 1;
                } else if is_bare(w, open) {
                    depth += 1;
                } else if !is_keyword(w) {
                    at_start = false;
                }
            }
            _ => {}
        }
    }
    None
}

/// Words after which a command still starts (`then do`, `if {`, `! cmd`).
fn is_keyword(w: &Word) -> bool {
    [
        "then", "do", "else", "elif", "if", "while", "until", "!", "{", "}",
    ]
    .iter()
    .any(|k| is_bare(w, k))
}

/// A function definition at `i` (`name() {`, `function name {`, `function name() {`): its name
/// and the index of the first token of its body. `cur` holds the tokens of the element so far,
/// `i` the operator that ended it.
pub(super) fn function_header(toks: &[Tok], i: usize, cur: &[&Tok]) -> Option<(String, usize)> {
    let words: Vec<&Word> = cur
        .iter()
        .filter_map(|t| match t {
            Tok::Word(w) => Some(w),
            _ => None,
        })
        .collect();
    if words.len() != cur.len() {
        return None;
    }
    let parens = matches!(toks.get(i), Some(Tok::Op(Op::Open)))
        && matches!(toks.get(i + 1), Some(Tok::Op(Op::Close)));
    let (name, after) = match (words.as_slice(), parens) {
        ([name], true) => (name, i + 2),
        ([kw, name], true) if is_bare(kw, "function") => (name, i + 2),
        ([kw, name, brace], false) if is_bare(kw, "function") && is_bare(brace, "{") => {
            return Some((name.raw(), i + 1));
        }
        _ => return None,
    };
    // The body's `{` may come after line ends.
    let mut j = after;
    while matches!(toks.get(j), Some(Tok::Op(Op::Newline))) {
        j += 1;
    }
    match toks.get(j) {
        Some(Tok::Word(w)) if is_bare(w, "{") => Some((name.raw(), j + 1)),
        _ => Some((name.raw(), after)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_case() {
        for (pat, s, want) in [
            ("-d", "-d", true),
            ("-d", "-x", false),
            ("*", "", true),
            ("--*", "--dp", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("?x", "ax", true),
        ] {
            assert_eq!(glob(pat.as_bytes(), s.as_bytes()), want, "{pat} {s}");
        }
    }
}
