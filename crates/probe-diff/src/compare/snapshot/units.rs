//! Unit files (fragment and drop-ins, as unified diffs) and containers' images.

use std::collections::{BTreeMap, BTreeSet};

use probe_model::{ChangeKind, Snapshot};
use serde_json::Value;

use super::collector::Collector;
use crate::compare::text::unified_diff;
use crate::impact::{Area, Subject};

pub(super) fn compare_units(
    before: &Snapshot,
    after: &Snapshot,
    collector: &mut Collector,
) -> Vec<probe_model::TextDiff> {
    let mut texts = Vec::new();
    let names: BTreeSet<&String> = before
        .units
        .iter()
        .chain(after.units.iter())
        .map(|unit| &unit.name)
        .collect();
    for name in names {
        let left = before.units.iter().find(|unit| &unit.name == name);
        let right = after.units.iter().find(|unit| &unit.name == name);
        // Every file of the unit on either side: the fragment, then the drop-ins by path.
        let mut files: BTreeMap<String, (Option<&str>, Option<&str>)> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        for (unit, is_before) in [(left, true), (right, false)] {
            let Some(unit) = unit else { continue };
            let fragment_label = if unit.fragment.path.is_empty() {
                name.clone()
            } else {
                unit.fragment.path.clone()
            };
            for (label, content) in
                std::iter::once((fragment_label, unit.fragment.content.as_str())).chain(
                    unit.drop_ins
                        .iter()
                        .map(|d| (d.path.clone(), d.content.as_str())),
                )
            {
                if !files.contains_key(&label) {
                    order.push(label.clone());
                }
                let entry = files.entry(label).or_default();
                if is_before {
                    entry.0 = Some(content);
                } else {
                    entry.1 = Some(content);
                }
            }
        }
        let mut changed = false;
        for label in order {
            let Some((before_text, after_text)) = files.get(&label) else {
                continue;
            };
            if before_text == after_text {
                continue;
            }
            let text_diff =
                unified_diff(&label, before_text.unwrap_or(""), after_text.unwrap_or(""));
            if !text_diff.unified.is_empty() {
                changed = true;
                texts.push(text_diff);
            }
        }
        let kind = match (left, right) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            _ => ChangeKind::Changed,
        };
        if changed || kind != ChangeKind::Changed {
            let subject = Subject::new(Area::Unit, name, kind);
            collector.push(&subject, format!("unit:{name}"), None);
        }
    }
    texts
}

pub(super) fn compare_containers(before: &Snapshot, after: &Snapshot, collector: &mut Collector) {
    for left in &before.containers {
        let right = after
            .containers
            .iter()
            .find(|right| match (&left.name, &right.name) {
                (Some(a), Some(b)) => a == b,
                _ => left.id == right.id,
            });
        let Some(right) = right else { continue };
        if left.image.trim() != right.image.trim() {
            let before_value = Value::from(left.image.trim());
            let after_value = Value::from(right.image.trim());
            let subject = Subject::new(Area::Launch, "image", ChangeKind::Changed)
                .values(Some(&before_value), Some(&after_value));
            let label = left.name.clone().unwrap_or_else(|| left.id.clone());
            collector.push(&subject, format!("container:{label}.image"), None);
        }
    }
}
