//! Pasted shell prompts: the command after a prompt (`user@host:~$ vllm serve ...`), and whether a
//! line starts a command a launch can come from.

use crate::{ctx, entry};

/// The command after a pasted shell prompt (`(venv) user@host:~/dir$ vllm serve ...`,
/// `root@box:/# ...`, `C:\\Users\\me>llama-server.exe ...`, `$ ...`, `> ...`), or `None` when the
/// line does not start with a prompt followed by something we can launch.
pub(crate) fn strip_prompt(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start().len();
    let mut rest = line.get(indent..)?;
    // A virtualenv / conda marker: `(name) `.
    if let Some(inner) = rest.strip_prefix('(')
        && let Some(end) = inner.find(") ")
        && inner
            .get(..end)
            .map(|n| !n.is_empty() && !n.contains(char::is_whitespace))
            .unwrap_or(false)
    {
        rest = inner.get(end + 2..)?.trim_start();
    }
    let first = rest.split_whitespace().next()?;
    let after = if matches!(first, "$" | "%" | ">" | "#") {
        // A bare prompt sign; `#` only when something else marks a prompt (it is a comment).
        if first == "#" {
            return None;
        }
        rest.get(first.len()..)?.trim_start()
    } else if first.contains('@')
        && (first.ends_with('$') || first.ends_with('#') || first.ends_with('%'))
        && first.contains(':')
    {
        // `user@host:path$`
        rest.get(first.len()..)?.trim_start()
    } else if first.len() > 3
        && first.as_bytes().get(1) == Some(&b':')
        && first.as_bytes().get(2) == Some(&b'\\')
        && let Some(gt) = rest.find('>')
    {
        // Windows `C:\\dir>cmd` (the command is glued to the prompt).
        rest.get(gt + 1..)?.trim_start()
    } else {
        return None;
    };
    if after.is_empty() || std::ptr::eq(after, line) {
        return None;
    }
    let words: Vec<String> = after.split_whitespace().map(str::to_string).collect();
    let head = words.first()?;
    let head = head.trim_matches(['"', '\'']);
    if entry::is_launcher_word(head, words.get(1..).unwrap_or(&[]))
        || ctx::assignment(head).is_some()
    {
        Some(after)
    } else {
        None
    }
}

/// Whether `line` starts a command a launch can come from (a launcher, an assignment, a
/// builtin that sets what the launch sees), after a pasted prompt.
pub(crate) fn starts_command(line: &str) -> bool {
    let line = strip_prompt(line).unwrap_or(line);
    let words: Vec<String> = line
        .split_whitespace()
        .take(3)
        .map(str::to_string)
        .collect();
    let Some((head, next)) = words.split_first() else {
        return false;
    };
    entry::is_launcher_word(head, next)
        || ctx::assignment(head).is_some()
        || matches!(
            head.as_str(),
            "export" | "source" | "." | "cd" | "read" | "set"
        )
}

pub(crate) fn strip_prompts(text: &str) -> String {
    text.lines()
        .map(|l| strip_prompt(l).unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}
