//! Changes as a report shows them: impact and category labels, `key: before -> after`, and the
//! ranked table of changes with why each matters.

use probe_model::{Change, ChangeKind, Impact};

use super::doc::{Doc, Tone};
use super::format_value;

pub(super) fn impact_label(impact: Impact) -> &'static str {
    match impact {
        Impact::High => "HIGH",
        Impact::Medium => "MED",
        Impact::Low => "LOW",
        Impact::None => "-",
    }
}

pub(super) fn impact_tone(impact: Impact) -> Tone {
    match impact {
        Impact::High => Tone::Bad,
        Impact::Medium => Tone::Warn,
        Impact::Low | Impact::None => Tone::Plain,
    }
}

pub(super) fn category_label(change: &Change) -> String {
    serde_json::to_value(change.category)
        .ok()
        .and_then(|v| v.as_str().map(|s| s.replace('_', " ")))
        .unwrap_or_default()
}

/// `key: before -> after` for a change.
pub fn change_summary(change: &Change) -> String {
    // Typed values read best (`3 -> 5`); the written form is the fallback.
    let before = change
        .before
        .as_ref()
        .map(format_value)
        .or_else(|| change.before_written.clone());
    let after = change
        .after
        .as_ref()
        .map(format_value)
        .or_else(|| change.after_written.clone());
    match change.kind {
        // An option set on one side only, with the default the other side had.
        ChangeKind::Added if let Some(default) = change.default_before() => format!(
            "{} added: {default} -> {}",
            change.key,
            after.unwrap_or_default()
        ),
        ChangeKind::Removed if let Some(default) = change.default_after() => format!(
            "{} removed: {} -> {default}",
            change.key,
            before.unwrap_or_default()
        ),
        ChangeKind::Added => format!("{} added: {}", change.key, after.unwrap_or_default()),
        ChangeKind::Removed => format!(
            "{} removed (was {})",
            change.key,
            before.unwrap_or_default()
        ),
        ChangeKind::Changed => format!(
            "{}: {} -> {}",
            change.key,
            before.unwrap_or_else(|| "(unset)".into()),
            after.unwrap_or_else(|| "(unset)".into())
        ),
    }
}

/// Why a consequence moved: what the engine resolved, and the changes it follows from (its
/// note, `configs/impact.toml` `[[consequence]]`).
pub(super) fn consequence_why(change: &Change) -> String {
    match &change.note {
        Some(note) => format!("{}: {note}", change.explanation),
        None => change.explanation.clone(),
    }
}

/// A ranked list of changes as a table: impact, category, what, why.
pub(super) fn changes_table(doc: &mut Doc, changes: &[Change], limit: usize) {
    if changes.is_empty() {
        doc.line(Tone::Good, "  no meaningful changes");
        return;
    }
    let rows = changes
        .iter()
        .take(limit)
        .map(|change| {
            let mut why = change.explanation.clone();
            if let Some(note) = &change.note {
                why = if why.is_empty() {
                    note.clone()
                } else {
                    format!("{why} ({note})")
                };
            }
            // A value the engine resolved from the change above it.
            let (summary, why) = if change.consequence_of.is_empty() {
                (change_summary(change), why)
            } else {
                (
                    format!("-> {}", change_summary(change)),
                    consequence_why(change),
                )
            };
            (
                impact_tone(change.impact),
                vec![
                    impact_label(change.impact).to_string(),
                    category_label(change),
                    summary,
                    why,
                ],
            )
        })
        .collect();
    doc.table(
        vec![
            "impact".into(),
            "area".into(),
            "change".into(),
            "likely effect".into(),
        ],
        rows,
    );
    if changes.len() > limit {
        doc.line(
            Tone::Dim,
            format!(
                "  ... {} (--format json for all)",
                probe_model::text::and_more(changes.len() - limit)
            ),
        );
    }
}
