//! Each change key's modal value among a group's comparisons with the reference, and a host's
//! difference from it, read from the group's value to the host's.

use std::collections::BTreeMap;

use probe_model::{Change, ChangeKind};
use serde_json::Value;

/// The first member whose value of `key` is the modal one (the mode is not the reference's).
pub(super) fn holder_of(
    diffs: &[&BTreeMap<String, Change>],
    key: &str,
    modal: &Change,
) -> Option<usize> {
    diffs.iter().position(|diff| {
        diff.get(key)
            .is_some_and(|own| value_key(Some(own)) == value_key(Some(modal)))
    })
}

/// Identity of a host's value for a key: the change's `after` (or the reference's value).
fn value_key(change: Option<&Change>) -> Option<String> {
    change.map(|change| {
        format!(
            "{}|{}",
            change
                .after
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default(),
            change.after_written.as_deref().unwrap_or("")
        )
    })
}

/// The modal value of `key`: `None` for the reference's value, else a change that leads to it;
/// and how many hosts have it. Ties go to the reference.
pub(super) fn modal_value(
    diffs: &[&BTreeMap<String, Change>],
    key: &str,
) -> (Option<Change>, usize) {
    let mut counts: BTreeMap<Option<String>, (usize, Option<&Change>)> = BTreeMap::new();
    for diff in diffs {
        let change = diff.get(key);
        let entry = counts.entry(value_key(change)).or_insert((0, change));
        entry.0 += 1;
    }
    let reference_count = counts.get(&None).map_or(0, |(count, _)| *count);
    let best = counts
        .iter()
        .filter(|(value, _)| value.is_some())
        .max_by(|a, b| a.1.0.cmp(&b.1.0).then_with(|| b.0.cmp(a.0)));
    match best {
        Some((_, (count, change))) if *count > reference_count => {
            (change.map(|change| (*change).clone()), *count)
        }
        _ => (None, reference_count),
    }
}

/// Whether a host's value of a key is not the modal one ([`difference_from_mode`] is `Some`).
pub(super) fn differs_from_mode(own: Option<&Change>, modal: Option<&Change>) -> bool {
    match modal {
        None => own.is_some(),
        Some(modal) => value_key(own) != value_key(Some(modal)),
    }
}

/// What one host differs in on a key, as `modal -> host's value`; `None` when it has the mode.
pub(super) fn difference_from_mode(own: Option<&Change>, modal: Option<&Change>) -> Option<Change> {
    match (modal, own) {
        // The reference's value is the mode: the comparison already says `mode -> host`.
        (None, own) => own.cloned(),
        (Some(modal), Some(own)) if value_key(Some(own)) == value_key(Some(modal)) => None,
        // The host has the reference's value, which is not the mode: the reverse change.
        (Some(modal), None) => Some(reversed(modal)),
        // A third value: from the mode to this host's value.
        (Some(modal), Some(own)) => {
            let mut change = own.clone();
            change.before = modal.after.clone();
            change.before_written = modal.after_written.clone();
            change.kind = match (&change.before, &change.after) {
                (None, Some(_)) => ChangeKind::Added,
                (Some(_), None) => ChangeKind::Removed,
                _ => ChangeKind::Changed,
            };
            Some(change)
        }
    }
}

fn reversed(change: &Change) -> Change {
    let mut reversed = change.clone();
    std::mem::swap(&mut reversed.before, &mut reversed.after);
    std::mem::swap(&mut reversed.before_written, &mut reversed.after_written);
    reversed.kind = match change.kind {
        ChangeKind::Added => ChangeKind::Removed,
        ChangeKind::Removed => ChangeKind::Added,
        ChangeKind::Changed => ChangeKind::Changed,
    };
    reversed
}

pub(super) fn written(value: Option<&Value>, written: Option<&str>) -> String {
    match (value, written) {
        (Some(Value::String(text)), _) => text.clone(),
        (Some(Value::Null) | None, None) => String::from("(absent)"),
        (Some(value), _) => value.to_string(),
        (None, Some(text)) => text.to_string(),
    }
}

/// The reference's own value of a key, from any comparison that names it.
pub(super) fn reference_written(diffs: &[&BTreeMap<String, Change>], key: &str) -> String {
    diffs.iter().find_map(|diff| diff.get(key)).map_or_else(
        || String::from("(absent)"),
        |change| written(change.before.as_ref(), change.before_written.as_deref()),
    )
}
