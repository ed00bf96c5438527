//! What the comparisons of two launches share: the two sides with their engines' catalogs, and
//! the collector the changes go into (ranked changes apart from volatile ones).

use probe_launch::catalog::Catalog;
use probe_model::{Change, LaunchConfig};

use crate::impact::{Subject, change_for};

#[derive(Default)]
pub(super) struct Collector {
    pub(super) changes: Vec<Change>,
    pub(super) volatile: Vec<Change>,
}

impl Collector {
    pub(super) fn push(
        &mut self,
        subject: &Subject<'_>,
        key: String,
        before_written: Option<String>,
        after_written: Option<String>,
        note: Option<String>,
    ) {
        let Some((mut change, volatile)) = change_for(subject, key) else {
            return;
        };
        change.before_written = before_written;
        change.after_written = after_written;
        change.note = note;
        if volatile {
            change.impact = probe_model::Impact::None;
            self.volatile.push(change);
        } else {
            self.changes.push(change);
        }
    }
}

pub(super) struct Sides<'a> {
    pub(super) before: &'a LaunchConfig,
    pub(super) after: &'a LaunchConfig,
    pub(super) before_catalog: &'static Catalog,
    pub(super) after_catalog: &'static Catalog,
    pub(super) speculative_handled: bool,
}
