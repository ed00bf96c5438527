//! A group's members as the comparison knows them: by their view, or first by their stored
//! configuration fingerprint.

use probe_model::{FleetView, Snapshot};

/// One member of a group: its name (inventory name) and its latest snapshot, as the comparison
/// reads it.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    pub host: &'a str,
    pub view: &'a FleetView,
}

impl Member<'_> {
    pub(super) fn snapshot(&self) -> &Snapshot {
        self.view.snapshot()
    }
}

/// One member of a group known first by its stored configuration fingerprint (probe-store's
/// hash of [`FleetView::configuration`]: equal fingerprints are equal configurations, as values
/// and as serialised bytes); its view is needed only when it is the first member of its
/// fingerprint in the group, or has none ([`members_to_read`]).
#[derive(Debug, Clone, Copy)]
pub struct Fingerprinted<'a> {
    pub host: &'a str,
    pub fingerprint: Option<&'a [u8]>,
    pub view: Option<&'a FleetView>,
}
