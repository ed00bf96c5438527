//! A value's number from its text: thousands separators, durations, scale and divisor.

use super::defs::Value;

/// A value from its groups (`group(i)`: the text of group `i`).
pub(super) fn value_of<'t>(group: impl Fn(usize) -> Option<&'t str>, v: &Value) -> Option<f64> {
    let text = group(v.group)?;
    let mut x = if v.duration {
        duration_ms(text)?
    } else {
        number(text)?
    };
    if let Some(d) = v.divide_by {
        let by = number(group(d)?)?;
        if by <= 0.0 {
            return None;
        }
        x /= by;
    }
    Some(x * v.scale).filter(|x| x.is_finite())
}

/// A number, thousands separators allowed.
pub(super) fn number(text: &str) -> Option<f64> {
    let x = if text.contains(',') {
        text.replace(',', "").parse::<f64>()
    } else {
        text.parse::<f64>()
    };
    x.ok().filter(|x| x.is_finite())
}

/// A duration as Rust's `Debug` and Go's `String` write it (`49.697663ms`, `1.2s`, `67.59µs`,
/// `3ns`, `2m`), in milliseconds.
pub fn duration_ms(text: &str) -> Option<f64> {
    let end = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (n, unit) = (text.get(..end)?, text.get(end..)?);
    let per = match unit {
        "ns" => 1e-6,
        "µs" | "us" => 1e-3,
        "ms" => 1.0,
        "s" => 1e3,
        "m" => 60e3,
        "h" => 3600e3,
        _ => return None,
    };
    number(n).map(|x| x * per)
}

/// The number a match ends with, before `suffix`.
pub(super) fn number_before(matched: &str, suffix: &str) -> Option<f64> {
    let body = matched.strip_suffix(suffix)?;
    let start = body
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |i| i + 1);
    number(body.get(start..)?)
}
