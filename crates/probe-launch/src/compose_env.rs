//! Docker Compose's variable interpolation: `${VAR}`, `$VAR`, `${VAR:-default}`,
//! `${VAR-default}`, `${VAR:?message}`, `${VAR?message}`, `${VAR:+replacement}`,
//! `${VAR+replacement}` and `$$` in a compose file's values, from the variables
//! of the `.env` file beside it (`dotenv`, Compose's own format: `KEY=VALUE`, `#` comments,
//! quotes, `export ` prefixes). A variable the `.env` does not set stays as written (it comes
//! from the shell that ran `docker compose`, which the text does not show).

use std::collections::BTreeMap;

use serde_json::Value;

/// The variables of a `.env` text, in Compose's format.
pub fn dotenv(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let k = k.trim();
        if k.is_empty()
            || !k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            continue;
        }
        let v = v.trim();
        let v = if let Some(inner) = v.strip_prefix('"').and_then(|r| r.rsplit_once('"')) {
            inner.0.replace("\\n", "\n").replace("\\\"", "\"")
        } else if let Some(inner) = v.strip_prefix('\'').and_then(|r| r.rsplit_once('\'')) {
            inner.0.to_string()
        } else {
            // An unquoted value ends at ` #`.
            match v.find(" #") {
                Some(i) => v.get(..i).unwrap_or(v).trim_end().to_string(),
                None => v.to_string(),
            }
        };
        out.insert(k.to_string(), v);
    }
    out
}

/// Interpolates every string of a compose document with `vars`; returns the variables used.
pub(crate) fn interpolate(doc: &mut Value, vars: &BTreeMap<String, String>) -> Vec<String> {
    let mut used = Vec::new();
    walk(doc, vars, &mut used, 0);
    used
}

fn walk(v: &mut Value, vars: &BTreeMap<String, String>, used: &mut Vec<String>, depth: usize) {
    if depth > 64 {
        return;
    }
    match v {
        Value::String(s) => *s = interpolate_str(s, vars, used),
        Value::Array(items) => {
            for it in items {
                walk(it, vars, used, depth + 1);
            }
        }
        Value::Object(m) => {
            for (_, it) in m.iter_mut() {
                walk(it, vars, used, depth + 1);
            }
        }
        _ => {}
    }
}

/// One string, interpolated as Compose does.
pub(crate) fn interpolate_str(
    s: &str,
    vars: &BTreeMap<String, String>,
    used: &mut Vec<String>,
) -> String {
    interpolate_at(s, vars, used, 0)
}

/// Nesting of `${A:-${B:-...}}` followed; deeper text stays as written.
const MAX_NESTING: usize = 4;

/// The end of a `${...}` body: the `}` that closes it, past nested `${...}`.
fn closing_brace(inner: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut prev = ' ';
    for (i, c) in inner.char_indices() {
        match c {
            '{' if prev == '$' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
        prev = c;
    }
    None
}

fn interpolate_at(
    s: &str,
    vars: &BTreeMap<String, String>,
    used: &mut Vec<String>,
    depth: usize,
) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find('$') {
        out.push_str(rest.get(..at).unwrap_or(""));
        let tail = rest.get(at + 1..).unwrap_or("");
        if let Some(after) = tail.strip_prefix('$') {
            // `$$` is a literal `$` (for the container's shell).
            out.push_str("$$");
            rest = after;
            continue;
        }
        let Some((name, op, after)) = reference(tail) else {
            out.push('$');
            rest = tail;
            continue;
        };
        let written = rest.get(at..rest.len() - after.len()).unwrap_or("");
        match replacement(name, op, vars, used, depth) {
            Some(v) => {
                if !used.iter().any(|u| u == name) {
                    used.push(name.to_string());
                }
                out.push_str(&v);
            }
            None => out.push_str(written),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The reference that `tail` (the text after a `$`) starts with: the variable's name, the
/// operator with its operand (`:-8192`, empty for none) and the text after the reference;
/// `None` for a `${` that is never closed.
fn reference(tail: &str) -> Option<(&str, &str, &str)> {
    match tail.strip_prefix('{') {
        Some(inner) => {
            let end = closing_brace(inner)?;
            let body = inner.get(..end).unwrap_or("");
            let name_end = name_end(body);
            Some((
                body.get(..name_end).unwrap_or(""),
                body.get(name_end..).unwrap_or(""),
                inner.get(end + 1..).unwrap_or(""),
            ))
        }
        None => {
            let name_end = name_end(tail);
            Some((
                tail.get(..name_end).unwrap_or(""),
                "",
                tail.get(name_end..).unwrap_or(""),
            ))
        }
    }
}

/// Where a variable's name that starts `s` ends.
fn name_end(s: &str) -> usize {
    s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len())
}

/// What the reference to `name` with `op` becomes, or `None` when it stays as written.
fn replacement(
    name: &str,
    op: &str,
    vars: &BTreeMap<String, String>,
    used: &mut Vec<String>,
    depth: usize,
) -> Option<String> {
    let value = vars.get(name);
    // A default or replacement is interpolated in turn (`${A:-${B}}`).
    let mut nested = |t: &str| {
        if depth < MAX_NESTING {
            interpolate_at(t, vars, used, depth + 1)
        } else {
            t.to_string()
        }
    };
    match (op, value) {
        _ if name.is_empty() => None,
        ("", Some(v)) => Some(v.clone()),
        (op, Some(v)) if op.starts_with(":-") && v.is_empty() => op.get(2..).map(&mut nested),
        (op, Some(v)) if op.starts_with(":?") || op.starts_with('?') => {
            Some(v.clone()).filter(|v| !v.is_empty() || op.starts_with('?'))
        }
        (op, Some(v)) if op.starts_with(":-") || op.starts_with('-') => Some(v.clone()),
        // `${VAR:+replacement}`: the replacement when set and not empty, else nothing;
        // `${VAR+replacement}`: the replacement when set at all.
        (op, Some(v)) if op.starts_with(":+") => Some(if v.is_empty() {
            String::new()
        } else {
            nested(op.get(2..).unwrap_or(""))
        }),
        (op, Some(_)) if op.starts_with('+') => op.get(1..).map(&mut nested),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// With no `.env`, every reference comes from the shell that runs compose, which the
        /// text does not show: the text stays exactly as written, whatever it holds.
        #[test]
        fn without_a_dotenv_the_text_is_kept(s in "[ -~]{0,120}") {
            let mut used = Vec::new();
            prop_assert_eq!(interpolate_str(&s, &BTreeMap::new(), &mut used), s);
            prop_assert!(used.is_empty());
        }

        /// Any `.env` and any text: read without a panic, every variable reported used is one
        /// the `.env` sets.
        #[test]
        fn any_dotenv_and_text(env in "[ -~\n]{0,200}", s in "[ -~]{0,200}") {
            let vars = dotenv(&env);
            let mut used = Vec::new();
            let _ = interpolate_str(&s, &vars, &mut used);
            for u in &used {
                prop_assert!(vars.contains_key(u));
            }
        }
    }

    #[test]
    fn compose_interpolation_from_a_dotenv() {
        let vars = dotenv(
            "# models\nMODEL=Qwen/Qwen2.5-7B\nexport TP=2\nEMPTY=\nQ=\"a b\" \nU=x # note\n",
        );
        assert_eq!(vars.get("TP").map(String::as_str), Some("2"));
        assert_eq!(vars.get("Q").map(String::as_str), Some("a b"));
        assert_eq!(vars.get("U").map(String::as_str), Some("x"));
        let cases = [
            ("--model ${MODEL}", "--model Qwen/Qwen2.5-7B"),
            ("--tp $TP", "--tp 2"),
            ("${EMPTY:-d} ${EMPTY-d}", "d "),
            ("${NOPE:-8192}", "${NOPE:-8192}"),
            ("${MODEL:-other}", "Qwen/Qwen2.5-7B"),
            ("$$HOME ${TP:?need tp}", "$$HOME 2"),
            ("${", "${"),
            // The compose spec's replacement forms: set and not empty / set at all.
            ("${TP:+--tp $TP}", "--tp 2"),
            ("${EMPTY:-${TP}}x", "2x"),
            ("${EMPTY:-${NOPE:-7}}", "${NOPE:-7}"),
            ("${EMPTY:+x}|${EMPTY+x}", "|x"),
            ("${NOPE:+x}", "${NOPE:+x}"),
            ("${EMPTY?need it}", ""),
            ("${EMPTY:?need it}", "${EMPTY:?need it}"),
        ];
        for (s, want) in cases {
            let mut used = Vec::new();
            assert_eq!(interpolate_str(s, &vars, &mut used), want, "{s}");
        }
    }
}
