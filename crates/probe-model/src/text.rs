//! Terminal- and document-safe text: the one sanitiser for every string that reaches a
//! terminal or a document, whatever its source (a remote host, a local launch text, a crafted
//! snapshot file). Escape sequences (CSI, OSC, DCS, SOS, PM, APC, two-byte ESC forms), their
//! 8-bit C1 introducers, every other C0/C1 control character (U+0000-U+001F, U+007F-U+009F)
//! and the bidi embedding, override and isolate characters (U+202A-U+202E, U+2066-U+2069) are
//! removed; `\n` and `\t` are kept (free text keeps its lines).
//!
//! Pure functions, no I/O: `probe-collect` applies them at parse time, `probe-cli` to anything
//! else it prints, and [`sanitize_json`] to every JSON document it writes.

/// Removes terminal escape sequences, control characters except `\n` and `\t`, and bidi
/// controls.
pub fn sanitize_terminal(s: &str) -> String {
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) || b == b'\n' || b == b'\t')
    {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\u{1b}' => skip_escape(&mut it),
            // C1 CSI / OSC / DCS / SOS / PM / APC introducers: skip like their ESC forms.
            '\u{9b}' => skip_csi(&mut it),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut it),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c if is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Like [`sanitize_terminal`], and folds the text onto one line (`\n`, `\t` become spaces):
/// for names, paths and other single-line fields.
pub fn sanitize_line(s: &str) -> String {
    sanitize_terminal(s).replace(['\n', '\t'], " ")
}

/// Lossy UTF-8 then [`sanitize_terminal`].
pub fn text(b: &[u8]) -> String {
    sanitize_terminal(&String::from_utf8_lossy(b))
}

/// Lossy UTF-8 then [`sanitize_line`], trimmed.
pub fn line(b: &[u8]) -> String {
    sanitize_line(&String::from_utf8_lossy(b))
        .trim()
        .to_string()
}

/// Whether `s` is already what [`sanitize_terminal`] makes of it.
/// `s` cut to at most `max` characters, with `...` in place of what was cut.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max.saturating_sub(3)) {
        Some((end, _)) if s.chars().count() > max => format!("{}...", s.get(..end).unwrap_or(s)),
        _ => s.to_string(),
    }
}

/// How a redacted value starts: the whole marker is `<redacted:` + hex digits of a hash of the
/// value + `>` (`configs/redaction.toml`; probe-collect's redactor writes it). The one spelling
/// every crate reads.
pub const REDACTED_PREFIX: &str = "<redacted:";

/// The marker of a redacted value whose hash starts with `hex`: `<redacted:3f2a9c1e>`.
pub fn redacted_marker(hex: &str) -> String {
    format!("{REDACTED_PREFIX}{hex}>")
}

/// Whether a value is (or starts with) a redaction marker.
pub fn is_redacted(value: &str) -> bool {
    value.starts_with(REDACTED_PREFIX)
}

/// What a cut list says for the items it left out: `and 3 more`. The one wording, for every list
/// cut for a person (the JSON keeps them all).
pub fn and_more(left: usize) -> String {
    format!("and {left} more")
}

/// At most `limit` of `items` joined by `separator`, then [`and_more`] for the rest:
/// `a, b, c and 2 more`.
pub fn join_capped<S: AsRef<str>>(items: &[S], limit: usize, separator: &str) -> String {
    let mut text = (items.iter().take(limit))
        .map(AsRef::as_ref)
        .collect::<Vec<&str>>()
        .join(separator);
    if items.len() > limit {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&and_more(items.len() - limit));
    }
    text
}

pub fn is_clean(s: &str) -> bool {
    !s.chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || is_bidi_control(c))
}

/// Sanitises every string of a JSON value, object keys included, in place.
pub fn sanitize_json(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            if !is_clean(s) {
                *s = sanitize_terminal(s);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sanitize_json),
        Value::Object(map) => {
            if map.keys().all(|k| is_clean(k)) {
                map.values_mut().for_each(sanitize_json);
            } else {
                let old = std::mem::take(map);
                for (k, mut x) in old {
                    sanitize_json(&mut x);
                    map.insert(sanitize_terminal(&k), x);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Sanitises every string of any serde value in place, through its JSON form (for values read
/// from local files: a crafted snapshot document). A value that does not read back (only a
/// non-finite float in a non-optional field can do that) is left as it was.
pub fn sanitize_serde<T: serde::Serialize + serde::de::DeserializeOwned>(t: &mut T) {
    if let Ok(mut v) = serde_json::to_value(&*t) {
        sanitize_json(&mut v);
        if let Ok(clean) = serde_json::from_value(v) {
            *t = clean;
        }
    }
}

/// Bidi embeddings/overrides (U+202A-U+202E) and isolates (U+2066-U+2069): they can make a
/// line read differently from what it is.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

type It<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_escape(it: &mut It<'_>) {
    match it.peek().copied() {
        Some('[') => {
            it.next();
            skip_csi(it);
        }
        Some(']' | 'P' | 'X' | '^' | '_') => {
            it.next();
            skip_string(it);
        }
        // ESC ( B and other designations: one intermediate then a final byte.
        Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%' | ' ') => {
            it.next();
            it.next();
        }
        // Two-byte sequences (ESC 7, ESC c, ESC =, ...): a final byte 0x30-0x7e.
        Some('\u{30}'..='\u{7e}') => {
            it.next();
        }
        _ => {}
    }
}

fn skip_csi(it: &mut It<'_>) {
    // Parameter and intermediate bytes 0x20-0x3f, final byte 0x40-0x7e; anything else ends
    // the sequence (and is kept). Bounded by the input.
    while let Some(&c) = it.peek() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            it.next();
            return;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            return;
        }
        it.next();
    }
}

fn skip_string(it: &mut It<'_>) {
    // Until BEL, ST (ESC \) or C1 ST.
    while let Some(c) = it.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if it.peek() == Some(&'\\') {
                    it.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_capped_table() {
        let items = ["a", "b", "c", "d"];
        for (limit, separator, want) in [
            (4, ", ", "a, b, c, d"),
            (9, ", ", "a, b, c, d"),
            (2, ", ", "a, b and 2 more"),
            (3, "; ", "a; b; c and 1 more"),
            (0, ", ", "and 4 more"),
        ] {
            assert_eq!(join_capped(&items, limit, separator), want, "{limit}");
        }
        assert_eq!(join_capped::<&str>(&[], 2, ", "), "");
    }

    #[test]
    fn clip_table() {
        for (s, max, want) in [
            ("vim compose.yaml", 60, "vim compose.yaml"),
            ("abcdefghij", 10, "abcdefghij"),
            ("abcdefghijk", 10, "abcdefg..."),
            ("ééééééééééé", 10, "ééééééé..."),
            ("ab", 2, "ab"),
            ("abc", 2, "..."),
        ] {
            assert_eq!(clip(s, max), want, "{s} {max}");
        }
    }

    #[test]
    fn sanitize_table() {
        let cases: &[(&str, &str)] = &[
            ("a\x1b[31mred\x1b[0m\tb\nc", "ared\tb\nc"),
            ("x\x1b]0;evil title\x07y", "xy"),
            ("x\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\y", "xlinky"),
            ("x\x1b]0;evil title\u{7}y\x1b]8;;http://e\x1b\\z", "xyz"),
            ("a\rb\x08c\x00d\u{7f}", "abcd"),
            ("bell\u{7} cr\r bs\u{8} nul\0", "bell cr bs nul"),
            ("keep\ttab\nnewline", "keep\ttab\nnewline"),
            ("\x1b", ""),
            ("esc at end\u{1b}", "esc at end"),
            ("\x1b(Bcharset", "charset"),
            ("reset\x1bcdone", "resetdone"),
            ("save\x1b7here", "savehere"),
            // 8-bit CSI is an introducer: its parameters and final byte go too.
            ("\u{9b}31mX", "X"),
            ("c1\u{9b}31m", "c1"),
            // 8-bit OSC up to ST.
            ("a\u{9d}0;title\u{9c}b", "ab"),
            // Every other C1 control (U+0080-U+009F) is dropped.
            ("n\u{85}e\u{84}l\u{80}\u{9a}", "nel"),
            // A CSI cut short by a non-parameter character keeps that character.
            ("\x1b[1;\u{e9}t", "\u{e9}t"),
            // Bidi overrides and isolates.
            ("ab\u{202e}cd", "abcd"),
            ("rtl\u{202e}txt", "rtltxt"),
            (
                "\u{202a}\u{202b}\u{202c}\u{202d}x\u{2066}\u{2067}\u{2068}\u{2069}",
                "x",
            ),
            ("ünïcödé ✓ \u{200f}", "ünïcödé ✓ \u{200f}"),
        ];
        for (input, expected) in cases {
            assert_eq!(&sanitize_terminal(input), expected, "{input:?}");
            assert!(is_clean(expected), "{expected:?}");
            assert_eq!(&sanitize_terminal(expected), expected, "idempotent");
        }
    }

    #[test]
    fn one_line_forms() {
        assert_eq!(sanitize_line("a\nb\tc"), "a b c");
        assert_eq!(sanitize_line("a\nb\tc\u{1b}[2J"), "a b c");
        assert_eq!(line(b" x\xff\x1b[1m \n"), "x\u{fffd}");
        assert_eq!(text(b"a\xc2\x85b\n"), "ab\n");
        assert_eq!(text(b"a\x85b"), "a\u{fffd}b");
    }

    #[test]
    fn json_strings_and_keys() {
        let mut v = serde_json::json!({
            "k\u{202e}ey": ["a\u{9b}2Jb", {"n": 1, "s": "x\u{85}\u{2066}y"}],
            "clean": "ok",
        });
        sanitize_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"key": ["ab", {"n": 1, "s": "xy"}], "clean": "ok"})
        );
    }
}
