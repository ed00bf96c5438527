//! The lines of a unit file as written: each directive with its physical lines (continuations
//! kept), so a plan can name the exact text to replace; the words of an `ExecStart=` and of an
//! `Environment=` line, to change one flag or one variable in them.

/// One directive of a unit text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    /// The physical lines as the file holds them, joined by `\n`.
    pub(crate) raw: String,
    /// The directive with continuations joined as `probe_launch::UnitFile::directives` joins
    /// them (`Key=value more`).
    pub(crate) joined: String,
}

/// The directives of a unit text, in order (comments, headers and blank lines left out).
pub(crate) fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut cur: Option<(Vec<&str>, String)> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some((raw, joined)) = cur.as_mut() {
            raw.push(line);
            joined.push(' ');
            joined.push_str(t.trim_end_matches('\\').trim_end());
            if !t.ends_with('\\')
                && let Some((raw, joined)) = cur.take()
            {
                out.push(Block {
                    raw: raw.join("\n"),
                    joined,
                });
            }
            continue;
        }
        if t.is_empty() || t.starts_with(['#', ';', '[']) || !t.contains('=') {
            continue;
        }
        if t.ends_with('\\') {
            cur = Some((vec![line], t.trim_end_matches('\\').trim_end().to_string()));
        } else {
            out.push(Block {
                raw: line.to_string(),
                joined: t.to_string(),
            });
        }
    }
    if let Some((raw, joined)) = cur {
        out.push(Block {
            raw: raw.join("\n"),
            joined,
        });
    }
    out
}

/// The `ExecStart=` in effect in one file: its last non-empty one.
pub(crate) fn exec_start(text: &str) -> Option<Block> {
    blocks(text)
        .into_iter()
        .rev()
        .find(|b| b.joined.starts_with("ExecStart=") && b.joined.len() > "ExecStart=".len())
}

/// The `Environment=` line of a file that sets `var` (the last one: a later assignment wins).
pub(crate) fn environment_line(text: &str, var: &str) -> Option<Block> {
    blocks(text).into_iter().rev().find(|b| {
        b.joined
            .strip_prefix("Environment=")
            .is_some_and(|rest| assignments(rest).iter().any(|a| name_of(a) == Some(var)))
    })
}

/// The assignments of an `Environment=` value, each as written (`"A=b c"`, `D=e`): words split
/// at blanks outside double or single quotes.
pub(crate) fn assignments(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    for c in value.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => {
                quote = None;
                cur.push(c);
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                cur.push(c);
            }
            (None, c) if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            (_, c) => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The variable an assignment word sets (`"A=b"` -> `A`).
pub(crate) fn name_of(word: &str) -> Option<&str> {
    word.trim_start_matches(['"', '\''])
        .split_once('=')
        .map(|(name, _)| name)
        .filter(|n| !n.is_empty())
}

/// An `Environment=` line with `var`'s assignment replaced by `value` (or removed: `None`);
/// `None` when nothing of the line is left.
pub(crate) fn environment_edit(joined: &str, var: &str, value: Option<&str>) -> Option<String> {
    let rest = joined.strip_prefix("Environment=")?;
    let words: Vec<String> = assignments(rest)
        .into_iter()
        .filter_map(|w| {
            if name_of(&w) != Some(var) {
                return Some(w);
            }
            value.map(|v| environment_word(var, v))
        })
        .collect();
    (!words.is_empty()).then(|| format!("Environment={}", words.join(" ")))
}

/// `VAR=value` as one `Environment=` word, quoted when it holds blanks or quotes.
pub(crate) fn environment_word(var: &str, value: &str) -> String {
    if value
        .chars()
        .any(|c| c.is_whitespace() || c == '"' || c == '\'' || c == '\\')
    {
        format!(
            "\"{var}={}\"",
            value.replace('\\', "\\\\").replace('"', "\\\"")
        )
    } else {
        format!("{var}={value}")
    }
}

/// An `ExecStart=` with its words changed: each `(remove, insert)` takes the words of `remove`
/// out where they stand (in their place `insert`'s), or adds `insert` at the end when there is
/// nothing to remove. One line; `None` when a word to remove is not there as written.
pub(crate) fn exec_start_edit(
    joined: &str,
    edits: &[(Option<String>, Option<String>)],
) -> Option<String> {
    let rest = joined.strip_prefix("ExecStart=")?;
    let mut words: Vec<String> = rest.split_whitespace().map(String::from).collect();
    for (remove, insert) in edits {
        let insert: Vec<String> = insert
            .as_deref()
            .map(|i| i.split_whitespace().map(String::from).collect())
            .unwrap_or_default();
        match remove {
            Some(remove) => {
                let remove: Vec<&str> = remove.split_whitespace().collect();
                if remove.is_empty() {
                    return None;
                }
                let at = words
                    .windows(remove.len())
                    .position(|w| w.iter().map(String::as_str).eq(remove.iter().copied()))?;
                words.splice(at..at + remove.len(), insert);
            }
            None => words.extend(insert),
        }
    }
    Some(format!("ExecStart={}", words.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_with_their_physical_lines() {
        let text = "# c\n[Service]\nEnvironment=A=1\nExecStart=\nExecStart=/v serve \\\n    --tp 4 \\\n    --x\nRestart=always\n";
        let b = blocks(text);
        let raw: Vec<&str> = b.iter().map(|b| b.raw.as_str()).collect();
        assert_eq!(
            raw,
            [
                "Environment=A=1",
                "ExecStart=",
                "ExecStart=/v serve \\\n    --tp 4 \\\n    --x",
                "Restart=always"
            ]
        );
        assert_eq!(
            exec_start(text).unwrap().joined,
            "ExecStart=/v serve --tp 4 --x"
        );
        assert_eq!(environment_line(text, "A").unwrap().raw, "Environment=A=1");
        assert!(environment_line(text, "B").is_none());
    }

    /// (line, var, value) -> the line after.
    #[test]
    fn one_variable_of_an_environment_line() {
        let cases = [
            ("Environment=A=1", "A", None, None),
            ("Environment=A=1 B=2", "A", None, Some("Environment=B=2")),
            (
                "Environment=\"A=1 2\" B=2",
                "B",
                Some("3"),
                Some("Environment=\"A=1 2\" B=3"),
            ),
            (
                "Environment=A=1",
                "A",
                Some("x y"),
                Some("Environment=\"A=x y\""),
            ),
        ];
        for (line, var, value, want) in cases {
            assert_eq!(
                environment_edit(line, var, value).as_deref(),
                want,
                "{line}"
            );
        }
    }

    /// (ExecStart, edits) -> after.
    #[test]
    fn flags_of_an_exec_start() {
        let s = |t: &str| Some(t.to_string());
        let line = "ExecStart=/v serve /m --tp 4 --disable-custom-all-reduce";
        type Edits = Vec<(Option<String>, Option<String>)>;
        let cases: [(Edits, Option<&str>); 4] = [
            (
                vec![(s("--disable-custom-all-reduce"), None)],
                Some("ExecStart=/v serve /m --tp 4"),
            ),
            (
                vec![(s("--tp 4"), s("--tp 8"))],
                Some("ExecStart=/v serve /m --tp 8 --disable-custom-all-reduce"),
            ),
            (
                vec![(None, s("--max-num-seqs 64"))],
                Some("ExecStart=/v serve /m --tp 4 --disable-custom-all-reduce --max-num-seqs 64"),
            ),
            (vec![(s("--tp 2"), None)], None),
        ];
        for (edits, want) in cases {
            assert_eq!(exec_start_edit(line, &edits).as_deref(), want, "{edits:?}");
        }
    }
}
