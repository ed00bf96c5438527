//! A group's members as the comparison knows them: by their view, or first by their stored
//! configuration fingerprint.

use probe_model::{FleetView, HostIds};

/// One member of a group: its name (inventory name) and its latest snapshot, as the comparison
/// reads it.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    pub host: &'a str,
    pub view: &'a FleetView,
}

impl Member<'_> {
    #[cfg(test)]
    pub(super) fn snapshot(&self) -> &probe_model::Snapshot {
        self.view.snapshot()
    }
}

/// One member of a group known first by its stored configuration fingerprint (probe-store's
/// hash of [`FleetView::configuration`] with process ids and GPU UUIDs renamed, and the values
/// renamed): equal hashes and equal ids are equal configurations, as values and as serialised
/// bytes; equal hashes alone, configurations equal but for those identities. Its view is read
/// only when its comparison is not shared with another's.
#[derive(Debug, Clone, Copy)]
pub struct Fingerprinted<'a> {
    pub host: &'a str,
    /// The hash; `None`: its configuration is shared with no other member's.
    pub hash: Option<&'a [u8]>,
    pub ids: &'a HostIds,
    /// Its view where it is at hand (this run's snapshot); else it is read when needed.
    pub view: Option<&'a FleetView>,
}
