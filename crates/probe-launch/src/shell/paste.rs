//! Repairs of a command as chat tools, documentation sites and editors paste it: CRLF line
//! ends, a line continuation followed by spaces, typographic quotes, non-breaking spaces, and an
//! em or en dash where `--` was meant (`—tp`). Each repair is returned as a note for the launch
//! ("read `—tp` as `--tp`"). One pass over the text: linear in its size.

use std::borrow::Cow;

/// Notes kept per text (one per distinct dashed word, and one per other kind of repair).
const MAX_NOTES: usize = 8;

/// The text with the repairs made, and a note for each.
pub(crate) fn repair(text: &str) -> (Cow<'_, str>, Vec<String>) {
    if text.is_ascii() && !text.contains('\r') && !text.contains("\\ ") && !text.contains("\\\t") {
        return (Cow::Borrowed(text), Vec::new());
    }
    let mut notes = Notes::default();
    let mut out = String::with_capacity(text.len());
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let line = match line.strip_suffix('\r') {
            Some(l) => {
                notes.once("read CRLF line ends as LF");
                l
            }
            None => line,
        };
        repair_line(line, &mut out, &mut notes);
    }
    (Cow::Owned(out), notes.items)
}

#[derive(Default)]
struct Notes {
    items: Vec<String>,
}

impl Notes {
    fn once(&mut self, note: &str) {
        if self.items.len() < MAX_NOTES && !self.items.iter().any(|n| n == note) {
            self.items.push(note.to_string());
        }
    }
}

fn repair_line(line: &str, out: &mut String, notes: &mut Notes) {
    let line = continuation(line, notes);
    let mut prev: Option<char> = None;
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let at_word_start = prev.is_none_or(char::is_whitespace);
        match c {
            '\u{2014}' | '\u{2013}'
                if at_word_start
                    && chars.peek().is_some_and(|(_, n)| n.is_ascii_alphanumeric()) =>
            {
                let word: String = line
                    .get(i..)
                    .unwrap_or("")
                    .chars()
                    .take_while(|c| !c.is_whitespace())
                    .take(40)
                    .collect();
                let fixed: String = format!("--{}", word.chars().skip(1).collect::<String>());
                notes.once(&format!("read `{word}` as `{fixed}`"));
                out.push_str("--");
            }
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{2033}' => {
                notes.once("read typographic quotes as ASCII quotes");
                out.push('"');
            }
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{2032}' => {
                notes.once("read typographic quotes as ASCII quotes");
                out.push('\'');
            }
            '\u{00A0}' | '\u{2007}' | '\u{202F}' | '\u{2009}' | '\u{200A}' => {
                notes.once("read non-breaking spaces as spaces");
                out.push(' ');
            }
            '\u{200B}' | '\u{FEFF}' => notes.once("dropped zero-width characters"),
            c => out.push(c),
        }
        prev = Some(c);
    }
}

/// A line ending in a backslash and blanks: the blanks were meant to be gone (in bash the
/// backslash escapes a space and the command ends there).
fn continuation<'a>(line: &'a str, notes: &mut Notes) -> &'a str {
    let trimmed = line.trim_end_matches([' ', '\t']);
    if trimmed.len() < line.len() && trimmed.ends_with('\\') && !trimmed.ends_with("\\\\") {
        notes.once("read a backslash followed by spaces at a line's end as a continuation");
        return trimmed;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_repair_is_made_and_noted() {
        let (t, notes) = repair(
            "vllm serve m \u{2014}tp 2 \\  \r\n  \u{2013}port 8000 --served-model-name \u{201C}a\u{00A0}b\u{201D}\r\n",
        );
        assert_eq!(
            t,
            "vllm serve m --tp 2 \\\n  --port 8000 --served-model-name \"a b\"\n"
        );
        assert_eq!(
            notes,
            vec![
                "read CRLF line ends as LF",
                "read a backslash followed by spaces at a line's end as a continuation",
                "read `\u{2014}tp` as `--tp`",
                "read `\u{2013}port` as `--port`",
                "read typographic quotes as ASCII quotes",
                "read non-breaking spaces as spaces",
            ]
        );
    }

    #[test]
    fn clean_text_is_borrowed_and_dashes_in_prose_stay() {
        let (t, notes) = repair("vllm serve m --port 8000\n");
        assert!(matches!(t, Cow::Borrowed(_)));
        assert!(notes.is_empty());
        let (t, notes) = repair("a \u{2014} b");
        assert_eq!(t, "a \u{2014} b");
        assert!(notes.is_empty());
    }
}
