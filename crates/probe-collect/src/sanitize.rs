//! Terminal-safe text. Every string that came from a remote host goes through here at parse
//! time, so nothing in a [`probe_model::Snapshot`] can move a cursor, change a title or hide
//! text when printed: escape sequences (CSI, OSC, DCS, ...) are removed, other C0/C1 control
//! characters and DEL are dropped; `\n` and `\t` are kept (free text keeps its lines).

/// Removes terminal escape sequences and control characters except `\n` and `\t`.
pub fn sanitize_terminal(s: &str) -> String {
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
            // Bidi overrides can reorder what a terminal shows.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
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

type It<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_escape(it: &mut It<'_>) {
    match it.next() {
        Some('[') => skip_csi(it),
        Some(']') | Some('P') | Some('X') | Some('^') | Some('_') => skip_string(it),
        // ESC ( B and other two-byte designations: one intermediate then a final byte.
        Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%' | ' ') => {
            it.next();
        }
        _ => {}
    }
}

fn skip_csi(it: &mut It<'_>) {
    // Parameter and intermediate bytes 0x20-0x3f, final byte 0x40-0x7e. Bounded by the input.
    for c in it.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return;
        }
        if !('\u{20}'..='\u{3f}').contains(&c) {
            return;
        }
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
    fn strips_escapes_keeps_lines() {
        assert_eq!(sanitize_terminal("a\x1b[31mred\x1b[0m\tb\nc"), "ared\tb\nc");
        assert_eq!(sanitize_terminal("x\x1b]0;evil title\x07y"), "xy");
        assert_eq!(
            sanitize_terminal("x\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\y"),
            "xlinky"
        );
        assert_eq!(sanitize_terminal("a\rb\x08c\x00d\u{7f}"), "abcd");
        assert_eq!(sanitize_terminal("ab\u{202e}cd"), "abcd");
        assert_eq!(sanitize_line("a\nb\tc"), "a b c");
        assert_eq!(sanitize_terminal("\x1b"), "");
        assert_eq!(sanitize_terminal("\u{9b}31mX"), "X");
    }
}
