//! JSON output: the probe-model types as pretty JSON, one document per command (or one line per
//! record for JSON Lines). Every string, whatever its source, passes the one sanitiser
//! ([`probe_model::text::sanitize_json`]) on the way out.

use serde::Serialize;

/// Pretty JSON with a trailing newline.
pub fn pretty<T: Serialize + ?Sized>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(&clean(value)).unwrap_or_else(|_| "null".into());
    text.push('\n');
    text
}

/// One JSON Lines record with its newline.
pub fn line<T: Serialize + ?Sized>(value: &T) -> String {
    let mut text = serde_json::to_string(&clean(value)).unwrap_or_else(|_| "null".into());
    text.push('\n');
    text
}

/// The value as JSON with every string sanitised.
fn clean<T: Serialize + ?Sized>(value: &T) -> serde_json::Value {
    let mut v = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
    probe_model::text::sanitize_json(&mut v);
    v
}
