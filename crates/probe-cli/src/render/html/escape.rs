//! Escaping for the page: every string that is not probe's own markup leaves here as text.
//! Remote text is first put through the one sanitiser (escape sequences, C0/C1 controls, bidi
//! overrides gone), then `& < > " '` become entities, so a hostile host can inject no element,
//! attribute, style or link.

use crate::output::{one_line, sanitize_terminal};

/// One line of text for element content or a quoted attribute value.
pub fn text(value: &str) -> String {
    entities(&one_line(value))
}

/// Text whose lines are kept (the body of a `<pre>`).
pub fn block(value: &str) -> String {
    entities(&sanitize_terminal(value))
}

fn entities(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for character in value.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// JSON for a `<script type="application/json">` block: every string sanitised as in
/// `--format json`, and `<`, `>`, `&`, U+2028 and U+2029 written as `\u` escapes, so the text
/// can hold no `</script>`, `<!--` or line terminator that ends the block early. JSON readers
/// read the same document.
pub fn script_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
    probe_model::text::sanitize_json(&mut value);
    let written = serde_json::to_string(&value).unwrap_or_else(|_| "null".into());
    let mut out = String::with_capacity(written.len());
    for character in written.chars() {
        match character {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            other => out.push(other),
        }
    }
    out
}

/// An element id for any name: ASCII letters and digits kept, everything else as `_XX` hex, so
/// two names never share an id and none can break out of the attribute.
pub fn id(prefix: &str, name: &str) -> String {
    let mut out = String::from(prefix);
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("_{byte:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_becomes_text() {
        let table = [
            (
                "<script>alert(1)</script>",
                "&lt;script&gt;alert(1)&lt;/script&gt;",
            ),
            ("\" onerror=\"x", "&quot; onerror=&quot;x"),
            ("a'b&c", "a&#39;b&amp;c"),
            ("gpu\u{202e}7", "gpu7"),
            ("x\u{1b}[31my", "xy"),
        ];
        for (input, expected) in table {
            assert_eq!(text(input), expected, "{input:?}");
        }
    }

    #[test]
    fn json_cannot_close_its_script_block() {
        let value = serde_json::json!({"name": "</script><script>alert(1)</script>\u{2028}"});
        let written = script_json(&value);
        assert!(!written.contains('<'), "{written}");
        let back: serde_json::Value = serde_json::from_str(&written).unwrap();
        let name = back["name"].as_str().unwrap();
        assert!(
            name.starts_with("</script><script>alert(1)</script>"),
            "{name}"
        );
    }

    #[test]
    fn ids_are_plain_and_distinct() {
        assert_eq!(id("host-", "gpu7"), "host-gpu7");
        assert_eq!(id("host-", "a\"b"), "host-a_22b");
        assert_ne!(id("host-", "a-b"), id("host-", "a_b"));
    }
}
