//! The configuration fingerprint kept with each snapshot: what `probe audit --outliers`
//! compares first, so that only one member of each distinct configuration is read whole.
//!
//! It is the SHA-256 of the `Debug` form of [`FleetView::configuration`] (exactly the fields the
//! fleet comparison reads). `Debug` writes every value exactly (each field, each float to its
//! last bit, `-0.0` apart from `0.0`, an infinity apart from a missing number), so two equal
//! fingerprints are two configurations equal as values and as serialised bytes: what probe-diff's
//! fleet comparison shares a comparison by. A configuration with a NaN equals nothing, not even
//! itself: it has no fingerprint.

use std::fmt::Write;

use probe_model::FleetView;
use sha2::{Digest, Sha256};

/// A stored snapshot's configuration fingerprint: `None` where its configuration is shared
/// with no other (a NaN in it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint(pub Option<[u8; 32]>);

impl Fingerprint {
    /// The fingerprint of `view`.
    pub fn of(view: &FleetView) -> Fingerprint {
        let configuration = view.configuration();
        if !equals_itself(&configuration) {
            return Fingerprint(None);
        }
        let mut hashing = Hashing(Sha256::new());
        if write!(hashing, "{configuration:?}").is_err() {
            return Fingerprint(None);
        }
        Fingerprint(Some(hashing.0.finalize().into()))
    }

    /// The fingerprint of a snapshot's view.
    pub(crate) fn of_snapshot(snapshot: &probe_model::Snapshot) -> Fingerprint {
        Fingerprint::of(&FleetView::of(snapshot.clone()))
    }

    /// As stored: the hash's bytes, or `None`.
    pub(crate) fn stored(&self) -> Option<&[u8]> {
        self.0.as_ref().map(|hash| hash.as_slice())
    }

    /// From a stored column (`None` for a damaged one: never shared).
    pub(crate) fn from_stored(bytes: &[u8]) -> Fingerprint {
        Fingerprint(<[u8; 32]>::try_from(bytes).ok())
    }
}

/// A stored fingerprint column of a snapshot: `None` where the snapshot is not stored,
/// `Some(None)` where it was stored before fingerprints were kept.
pub(crate) type Column = Option<Option<Vec<u8>>>;

/// The fingerprints of `ids` from their `columns` (in the same order); those stored before
/// fingerprints were kept are computed from the views `read` gives of them (all at once: the
/// caller's own bound, as a read of as many views).
pub(crate) fn completed(
    ids: &[String],
    columns: Vec<Column>,
    read: impl FnOnce(&[String]) -> Result<Vec<Option<FleetView>>, crate::StoreError>,
) -> Result<Vec<Option<Fingerprint>>, crate::StoreError> {
    let missing: Vec<usize> = (columns.iter().enumerate())
        .filter(|(_, column)| matches!(column, Some(None)))
        .map(|(index, _)| index)
        .collect();
    let mut out: Vec<Option<Fingerprint>> = columns
        .into_iter()
        .map(|column| {
            column
                .flatten()
                .map(|bytes| Fingerprint::from_stored(&bytes))
        })
        .collect();
    if missing.is_empty() {
        return Ok(out);
    }
    let wanted: Vec<String> = missing.iter().map(|&index| ids[index].clone()).collect();
    for (index, view) in missing.into_iter().zip(read(&wanted)?) {
        out[index] = view.as_ref().map(Fingerprint::of);
    }
    Ok(out)
}

/// Whether `value` equals itself: not when a NaN is in it.
#[expect(
    clippy::eq_op,
    reason = "a NaN is the one value that is not equal to itself"
)]
fn equals_itself<T: PartialEq>(value: &T) -> bool {
    value == value
}

/// `fmt::Write` into a hash, so that a large configuration is never held as text.
struct Hashing(Sha256);

impl Write for Hashing {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0.update(text.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::{Gpu, ProcessInfo, ProcessRole, SectionReport, Snapshot};

    fn with(edit: impl FnOnce(&mut Snapshot)) -> Fingerprint {
        let mut snapshot = Snapshot {
            id: "a-1".into(),
            target: "a".into(),
            processes: vec![ProcessInfo {
                pid: 7,
                role: ProcessRole::Worker,
                ..ProcessInfo::default()
            }],
            ..Snapshot::default()
        };
        snapshot.gpu.gpus.push(Gpu {
            power_limit_w: Some(700.0),
            ..Gpu::default()
        });
        edit(&mut snapshot);
        Fingerprint::of_snapshot(&snapshot)
    }

    #[test]
    fn equal_configurations_and_only_those_share_a_fingerprint() {
        let base = with(|_| {});
        assert!(base.0.is_some());
        // (what changes, whether the fingerprint stays)
        let cases: Vec<(&str, Fingerprint, bool)> = vec![
            ("nothing", with(|_| {}), true),
            (
                "the id and target (labels)",
                with(|s| {
                    s.id = "b-1".into();
                    s.target = "b".into();
                }),
                true,
            ),
            ("uptime", with(|s| s.host.uptime_s = Some(5)), true),
            (
                "a section report (not in a view)",
                with(|s| s.sections.push(SectionReport::default())),
                true,
            ),
            (
                "a worker's environment (not in a view)",
                with(|s| {
                    s.processes[0].env.insert("A".into(), "1".into());
                }),
                true,
            ),
            ("a process id", with(|s| s.processes[0].pid = 8), false),
            (
                "a launcher's environment",
                with(|s| {
                    s.processes[0].role = ProcessRole::Launcher;
                    s.processes[0].env.insert("A".into(), "1".into());
                }),
                false,
            ),
            ("the collection time", with(|s| s.collected_at = 1), false),
            (
                "-0.0 for 0.0",
                with(|s| s.gpu.gpus[0].power_limit_w = Some(-0.0)),
                false,
            ),
            (
                "infinity for a number",
                with(|s| s.gpu.gpus[0].power_limit_w = Some(f64::INFINITY)),
                false,
            ),
            (
                "no number",
                with(|s| s.gpu.gpus[0].power_limit_w = None),
                false,
            ),
        ];
        for (what, fingerprint, same) in cases {
            assert_eq!(fingerprint == base, same, "{what}");
        }
        assert_ne!(
            with(|s| s.gpu.gpus[0].power_limit_w = Some(f64::INFINITY)),
            with(|s| s.gpu.gpus[0].power_limit_w = None)
        );
        assert_eq!(
            with(|s| s.gpu.gpus[0].power_limit_w = Some(f64::NAN)),
            Fingerprint(None)
        );
    }
}
