//! Reading one line: the version or start-up text it holds, and its metric and limit values.

use super::defs::{Entry, Found, FoundText, Target, Value};
use super::load::log_lines;
use super::values::{number_before, value_of};

/// The version or start-up text one (sanitised, prefix-stripped) log line holds, in file order.
pub fn read_text(line: &str) -> Vec<FoundText> {
    let lines = log_lines();
    let mut out = Vec::new();
    for i in lines.text_markers.matches(line).iter() {
        let Some(e) = lines.texts.get(i) else {
            continue;
        };
        if e.unless.as_deref().is_some_and(|u| line.contains(u)) {
            continue;
        }
        let Some(text) = e.pattern.captures(line).and_then(|c| c.get(e.group)) else {
            continue;
        };
        out.push(FoundText {
            kind: e.kind,
            engine: &e.engine,
            text: text.as_str().to_string(),
            versioned: e.versioned,
        });
    }
    out
}

/// The values one (sanitised, prefix-stripped) log line holds, in file order.
pub fn read(line: &str) -> Vec<Found> {
    let mut out = Vec::new();
    read_into(line, &mut out);
    out
}

/// [`read`] into `out` (cleared first): the log reader keeps one buffer for all its lines.
pub fn read_into(line: &str, out: &mut Vec<Found>) {
    out.clear();
    let lines = log_lines();
    let hits = lines.markers.matches(line);
    if !hits.matched_any() {
        return;
    }
    LOCATIONS.with_borrow_mut(|locs| {
        if locs.len() != lines.entries.len() {
            *locs = lines
                .entries
                .iter()
                .map(|e| e.pattern.capture_locations())
                .collect();
        }
        // By marker, each marker's entries in file order (the values of a line go into maps:
        // their order does not matter).
        for &i in hits.iter().filter_map(|k| lines.marked.get(k)).flatten() {
            let (Some(e), Some(loc)) = (lines.entries.get(i), locs.get_mut(i)) else {
                continue;
            };
            read_entry(e, loc, line, out);
        }
    });
}

thread_local! {
    /// The capture slots of each entry, kept between lines (a metric line is read by several
    /// entries; capturing into fresh slots would allocate for each).
    static LOCATIONS: std::cell::RefCell<Vec<regex::CaptureLocations>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The values entry `e` reads from `line`, pushed to `out`.
pub(super) fn read_entry(
    e: &'static Entry,
    loc: &mut regex::CaptureLocations,
    line: &str,
    out: &mut Vec<Found>,
) {
    if e.unless.as_deref().is_some_and(|u| line.contains(u)) {
        return;
    }
    if let (Some(suffix), [v]) = (&e.suffix, e.values.as_slice()) {
        let Some(x) = e
            .pattern
            .find(line)
            .and_then(|m| number_before(m.as_str(), suffix))
        else {
            return;
        };
        let value = x * v.scale;
        if value.is_finite() {
            out.push(found(e, v, value));
        }
        return;
    }
    if e.pattern.captures_read(loc, line).is_none() {
        return;
    }
    let group = |g: usize| loc.get(g).and_then(|(a, b)| line.get(a..b));
    for v in &e.values {
        let Some(value) = value_of(group, v) else {
            continue;
        };
        out.push(found(e, v, value));
    }
}

/// What the value `v` of entry `e` is.
fn found(e: &'static Entry, v: &'static Value, value: f64) -> Found {
    match e.target {
        Target::Metric => Found::Metric {
            name: &v.name,
            unit: &v.unit,
            value,
        },
        Target::Limit => Found::Limit {
            key: &v.name,
            engine: &e.engine,
            value,
            repeated: e.repeated,
        },
    }
}
