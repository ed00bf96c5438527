//! The changes one snapshot comparison gathers, volatile ones kept apart.

use probe_model::{Change, ChangeKind, Impact};

use crate::impact::{Subject, change_for};

#[derive(Default)]
pub(super) struct Collector {
    pub(super) changes: Vec<Change>,
    pub(super) volatile: Vec<Change>,
}

impl Collector {
    pub(super) fn push(&mut self, subject: &Subject<'_>, key: String, note: Option<String>) {
        if let Some((mut change, volatile)) = change_for(subject, key) {
            change.note = note;
            self.add(change, volatile);
        }
    }

    pub(super) fn add(&mut self, mut change: Change, volatile: bool) {
        if volatile {
            change.impact = Impact::None;
            self.volatile.push(change);
        } else {
            self.changes.push(change);
        }
    }
}

pub(super) fn kind_of<T>(before: &Option<T>, after: &Option<T>) -> ChangeKind {
    match (before, after) {
        (None, Some(_)) => ChangeKind::Added,
        (Some(_), None) => ChangeKind::Removed,
        _ => ChangeKind::Changed,
    }
}
