//! JSON output: the probe-model types as pretty JSON, one document per command (or one line per
//! record for JSON Lines).

use serde::Serialize;

/// Pretty JSON with a trailing newline.
pub fn pretty<T: Serialize + ?Sized>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
    text.push('\n');
    text
}

/// One JSON Lines record with its newline.
pub fn line<T: Serialize + ?Sized>(value: &T) -> String {
    let mut text = serde_json::to_string(value).unwrap_or_else(|_| "null".into());
    text.push('\n');
    text
}
