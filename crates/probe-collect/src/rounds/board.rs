//! What a round has received so far: the board its groups post their sections to, which round
//! 2's planner waits on, and the view of them round 2 is planned from, which the collection's
//! hook waits on.

use std::sync::{Mutex, OnceLock};

use probe_model::Snapshot;

use crate::frame::{Framed, RawSection};
use crate::script::Group;

/// Sections received so far by a round, shared by its groups and round 2's planner.
#[derive(Default)]
pub(super) struct Board {
    sections: Mutex<Vec<RawSection>>,
    /// Round 1's sections that round 2 is planned from, parsed (set once, by round 2).
    view: OnceLock<Snapshot>,
    changed: tokio::sync::Notify,
}

impl Board {
    pub(super) fn add(&self, f: Option<&Framed>, group: &Group) {
        if let Ok(mut v) = self.sections.lock() {
            for p in &group.probes {
                let got = f.and_then(|f| f.sections.iter().find(|s| s.name == p.name));
                // A section the group did not return counts as ended, without a status.
                v.push(got.cloned().unwrap_or_else(|| RawSection {
                    name: p.name.clone(),
                    ..Default::default()
                }));
            }
        }
        self.changed.notify_waiters();
    }

    pub(super) fn get(&self, names: &[&str]) -> Option<Vec<RawSection>> {
        let v = self.sections.lock().ok()?;
        let mut out = Vec::new();
        for n in names {
            out.push(v.iter().find(|s| s.name == *n)?.clone());
        }
        Some(out)
    }

    /// The named sections that have ended.
    pub(super) fn present(&self, names: &[&str]) -> Vec<RawSection> {
        let Ok(v) = self.sections.lock() else {
            return Vec::new();
        };
        names
            .iter()
            .filter_map(|n| v.iter().find(|s| s.name == *n).cloned())
            .collect()
    }

    /// Waits until every named section has ended.
    pub(super) async fn wait(&self, names: &[&str]) -> Vec<RawSection> {
        loop {
            let changed = self.changed.notified();
            if let Some(v) = self.get(names) {
                return v;
            }
            changed.await;
        }
    }

    /// Posts the view round 2 was planned from.
    pub(super) fn set_view(&self, view: Snapshot) {
        let _ = self.view.set(view);
        self.changed.notify_waiters();
    }

    /// Waits for the view round 2 is planned from.
    pub(super) async fn view(&self) -> Snapshot {
        loop {
            let changed = self.changed.notified();
            if let Some(v) = self.view.get() {
                return v.clone();
            }
            changed.await;
        }
    }
}
