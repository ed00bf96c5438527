//! The configuration fingerprint kept with each snapshot: what `probe audit --outliers`
//! compares first, so that only one member of each distinct configuration is read whole, and
//! hosts that differ only in their process ids and GPU UUIDs are compared once.
//!
//! It is the SHA-256 of the `Debug` form of [`FleetView::configuration`] (exactly the fields the
//! fleet comparison reads) with its host-local identities renamed
//! ([`probe_model::for_each_host_id`]: every typed process id and GPU UUID), and beside it the
//! values renamed ([`HostIds`]). `Debug` writes every value exactly (each field, each float to
//! its last bit, `-0.0` apart from `0.0`, an infinity apart from a missing number). An identity
//! is renamed to its place in the snapshot's order of identities (a pid by its numeric and its
//! decimal order, a UUID by its order), and only where its value appears nowhere else in the
//! configuration: a pid whose digits stand anywhere in the text (a log line, a label
//! `pid:1234`, a port, another field), a UUID found anywhere in it (an environment's
//! `CUDA_VISIBLE_DEVICES`), an empty or unusual UUID, or a pid 0 or 1 (which readers tell apart
//! from the others: a unit's main pid must be above 1) stays as it is, in the hash.
//! So equal hashes are two configurations equal but for a renaming of identities that nothing
//! else in either names; equal hashes and equal [`HostIds`] are two configurations equal as
//! values and as serialised bytes: what probe-diff's fleet comparison shares a comparison by.
//! A configuration with a NaN equals nothing, not even itself: it has no hash.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use probe_model::{FleetView, HostIdMut, HostIds, Snapshot, for_each_host_id};
use sha2::{Digest, Sha256};

/// A stored snapshot's configuration fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    /// The hash of the configuration with its identities renamed: `None` where the
    /// configuration is shared with no other (a NaN in it, or a damaged column).
    pub hash: Option<[u8; 32]>,
    /// The values renamed, in order.
    pub ids: HostIds,
}

/// The most GPU UUIDs a snapshot has renamed (a real host has a few to a few dozen GPUs, with
/// their MIG devices).
const MAX_RENAMED_UUIDS: usize = 256;

/// The first byte of a stored fingerprint of this form (layout 5 stored the bare hash of the
/// configuration with its identities as they were).
const FORM: u8 = 2;

impl Fingerprint {
    /// The fingerprint of `view`.
    pub fn of(view: &FleetView) -> Fingerprint {
        Fingerprint::of_view_snapshot(view.snapshot().clone())
    }

    /// The fingerprint of a snapshot's view.
    pub(crate) fn of_snapshot(snapshot: &Snapshot) -> Fingerprint {
        Fingerprint::of_view_snapshot(FleetView::of(snapshot.clone()).into_snapshot())
    }

    /// The fingerprint of a view's snapshot, taken to rename its identities in place (one
    /// copy of a snapshot a fingerprint, made by the caller: this runs at every `put`).
    fn of_view_snapshot(mut renamed: Snapshot) -> Fingerprint {
        let found = blanked(&mut renamed);
        // Blanking takes no NaN away and adds none: the configuration with its identities
        // blanked is whole exactly where the view's is.
        if !equals_itself(&FleetView::configuration_of(&renamed)) {
            return Fingerprint::default();
        }
        let text = format!("{:?}", FleetView::configuration_of(&renamed));
        let names = Names::of(&found, &text);
        let mut hashing = Hashing(Sha256::new());
        hashing.0.update(text.as_bytes());
        let places: Vec<String> = found.iter().map(|id| names.place(id)).collect();
        if write!(hashing, "\n{places:?}").is_err() {
            return Fingerprint::default();
        }
        Fingerprint {
            hash: Some(hashing.0.finalize().into()),
            ids: names.renamed,
        }
    }

    /// As stored: [`FORM`], the hash, the renamed identities as JSON; empty where there is
    /// no hash.
    pub(crate) fn stored(&self) -> Vec<u8> {
        let Some(hash) = self.hash else {
            return Vec::new();
        };
        let mut bytes = vec![FORM];
        bytes.extend_from_slice(&hash);
        bytes.extend(serde_json::to_vec(&self.ids).unwrap_or_default());
        bytes
    }

    /// From a stored column (no hash for an empty, damaged or older one: never shared).
    pub(crate) fn from_stored(bytes: &[u8]) -> Fingerprint {
        let read = || -> Option<Fingerprint> {
            let (form, rest) = bytes.split_first()?;
            let (hash, ids) = (rest.get(..32)?, rest.get(32..)?);
            (*form == FORM).then_some(())?;
            Some(Fingerprint {
                hash: Some(<[u8; 32]>::try_from(hash).ok()?),
                ids: serde_json::from_slice(ids).ok()?,
            })
        };
        read().unwrap_or_default()
    }
}

/// One identity as found in a snapshot, in [`for_each_host_id`]'s order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Found {
    Pid(u32),
    Uuid(String),
}

/// Every identity of `snapshot`, in order, each blanked (pid 0, empty UUID) in place.
fn blanked(snapshot: &mut Snapshot) -> Vec<Found> {
    let mut found = Vec::new();
    for_each_host_id(snapshot, |id| match id {
        HostIdMut::Pid(pid) => found.push(Found::Pid(std::mem::take(pid))),
        HostIdMut::Uuid(uuid) => found.push(Found::Uuid(std::mem::take(uuid))),
    });
    found
}

/// How a fingerprint writes each identity: renamed to its place in the snapshot's orders, or
/// as it is where the rest of the configuration names it.
struct Names {
    /// A pid's place in numeric order and in decimal-text order; a UUID's in byte order.
    order: BTreeMap<Found, (usize, usize)>,
    /// The identities written as they are.
    kept: BTreeSet<Found>,
    renamed: HostIds,
}

impl Names {
    fn of(found: &[Found], text: &str) -> Names {
        let distinct: BTreeSet<&Found> = found.iter().collect();
        let mut decimal: Vec<u32> = (distinct.iter())
            .filter_map(|id| match id {
                Found::Pid(pid) => Some(*pid),
                Found::Uuid(_) => None,
            })
            .collect();
        decimal.sort_by_key(|pid| pid.to_string());
        let decimal: BTreeMap<u32, usize> = (decimal.into_iter().enumerate())
            .map(|(place, pid)| (pid, place))
            .collect();
        let numbers = numbers_in(text, &decimal);
        let uuid_count = (distinct.iter())
            .filter(|id| matches!(id, Found::Uuid(_)))
            .count();
        // Bounded work on a hostile host: each UUID is looked for in the whole text, so past
        // this many none is renamed (each stays as it is).
        let too_many = uuid_count > MAX_RENAMED_UUIDS;
        let lower = if uuid_count > 0 && !too_many {
            text.to_ascii_lowercase()
        } else {
            String::new()
        };
        let mut names = Names {
            order: BTreeMap::new(),
            kept: BTreeSet::new(),
            renamed: HostIds::default(),
        };
        let mut uuids = 0;
        let mut numeric = 0;
        for id in distinct {
            let (place, named) = match id {
                Found::Pid(pid) => {
                    numeric += 1;
                    let text_place = decimal.get(pid).copied().unwrap_or_default();
                    let named = *pid <= 1 || numbers.contains(&u64::from(*pid));
                    ((numeric - 1, text_place), named)
                }
                Found::Uuid(uuid) => {
                    uuids += 1;
                    ((uuids - 1, 0), too_many || uuid_is_named(uuid, &lower))
                }
            };
            names.order.insert(id.clone(), place);
            if named {
                names.kept.insert(id.clone());
            } else {
                match id {
                    Found::Pid(pid) => names.renamed.pids.push(*pid),
                    Found::Uuid(uuid) => names.renamed.uuids.push(uuid.clone()),
                }
            }
        }
        names
    }

    /// How the hash writes `id`.
    fn place(&self, id: &Found) -> String {
        let (first, second) = self.order.get(id).copied().unwrap_or_default();
        match (id, self.kept.contains(id)) {
            (Found::Pid(pid), true) => format!("P{pid}"),
            (Found::Uuid(uuid), true) => format!("U{uuid:?}"),
            (Found::Pid(_), false) => format!("p{first}/{second}"),
            (Found::Uuid(_), false) => format!("u{first}"),
        }
    }
}

/// The pids of `pids` that stand in `text` as a run of ASCII digits, read as a number (leading
/// zeros do not hide one; runs too long for a `u64` are no pid).
fn numbers_in(text: &str, pids: &BTreeMap<u32, usize>) -> BTreeSet<u64> {
    let mut found = BTreeSet::new();
    let mut keep = |number: Option<u64>| {
        if let Some(number) = number
            && u32::try_from(number).is_ok_and(|pid| pids.contains_key(&pid))
        {
            found.insert(number);
        }
    };
    // Byte by byte (a fingerprint is taken at every put): ASCII digits are single bytes in
    // UTF-8, and no other character's bytes are ASCII.
    let mut run: Option<Option<u64>> = None;
    for byte in text.bytes() {
        if byte.is_ascii_digit() {
            let digit = u64::from(byte - b'0');
            let value = run.unwrap_or(Some(0));
            run = Some(value.and_then(|v| v.checked_mul(10)?.checked_add(digit)));
        } else if let Some(number) = run.take() {
            keep(number);
        }
    }
    if let Some(number) = run {
        keep(number);
    }
    found
}

/// Whether a UUID cannot be renamed: empty, with a character outside `[A-Za-z0-9-]` (which
/// `Debug` might escape), or found (whole, or its part after a `GPU-`/`MIG-` prefix) in the
/// lower-cased text `lower`.
fn uuid_is_named(uuid: &str, lower: &str) -> bool {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '-';
    if uuid.is_empty() || !uuid.chars().all(plain) {
        return true;
    }
    let uuid = uuid.to_ascii_lowercase();
    let core = uuid
        .strip_prefix("gpu-")
        .or_else(|| uuid.strip_prefix("mig-"))
        .unwrap_or(&uuid);
    lower.contains(&uuid) || lower.contains(core)
}

/// A stored fingerprint column of a snapshot: `None` where the snapshot is not stored,
/// `Some(None)` where it was stored before fingerprints of this form were kept.
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
        assert!(base.hash.is_some());
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
            Fingerprint::default()
        );
    }

    /// A serving host with a launcher, its worker and two GPUs, its process ids offset by
    /// `shift` and its GPU UUIDs named `tag`.
    fn serving(shift: u32, tag: &str) -> Snapshot {
        let process = |pid: u32, role, launcher: Option<u32>| ProcessInfo {
            pid: pid + shift,
            ppid: launcher.map(|l| l + shift).or(Some(1)),
            launcher_pid: launcher.map(|l| l + shift),
            role,
            argv: vec!["python3".into(), "-m".into(), "server".into()],
            ..ProcessInfo::default()
        };
        let mut snapshot = Snapshot {
            processes: vec![
                process(4242, ProcessRole::Launcher, None),
                process(4243, ProcessRole::Worker, Some(4242)),
            ],
            ..Snapshot::default()
        };
        for index in 0..2u32 {
            snapshot.gpu.gpus.push(Gpu {
                index: Some(index),
                uuid: Some(format!("GPU-{tag}{index}-00aa-bbcc")),
                ..Gpu::default()
            });
        }
        snapshot
    }

    /// Two hosts share a hash when they differ only in process ids and GPU UUIDs renamed in
    /// order, which nothing else names; never where a renaming would erase a difference: an
    /// id some other field names, a relation between ids, their order.
    #[test]
    fn only_identities_nothing_else_names_are_renamed() {
        let print = |snapshot: &Snapshot| Fingerprint::of_snapshot(snapshot);
        let base = serving(0, "1111aaaa");
        // (what, the other host, whether the hashes are equal)
        let edit = |shift: u32, tag: &str, change: &dyn Fn(&mut Snapshot)| {
            let mut other = serving(shift, tag);
            change(&mut other);
            other
        };
        let cases: Vec<(&str, Snapshot, bool)> = vec![
            (
                "ids and UUIDs renamed in order",
                edit(1000, "2222bbbb", &|_| {}),
                true,
            ),
            (
                "a pid named in an argument (kept as it is on both)",
                edit(1000, "2222bbbb", &|s| {
                    s.processes[0].argv.push("4242".into())
                }),
                false,
            ),
            (
                "the worker's launcher no longer its parent",
                edit(1000, "2222bbbb", &|s| {
                    s.processes[1].launcher_pid = Some(9999)
                }),
                false,
            ),
            (
                "the two processes' ids in the other order",
                edit(0, "2222bbbb", &|s| {
                    s.processes[0].pid = 4243;
                    s.processes[1].pid = 4242;
                }),
                false,
            ),
            (
                "a UUID named in a launcher's environment",
                edit(0, "2222bbbb", &|s| {
                    s.processes[0].env.insert(
                        "CUDA_VISIBLE_DEVICES".into(),
                        "GPU-2222bbbb0-00aa-bbcc".into(),
                    );
                }),
                false,
            ),
            (
                "the GPUs' UUIDs in the other order",
                edit(0, "2222bbbb", &|s| s.gpu.gpus.swap(0, 1)),
                false,
            ),
        ];
        for (what, other, same) in cases {
            let (a, b) = (print(&base), print(&other));
            assert!(a.hash.is_some() && b.hash.is_some(), "{what}");
            assert_eq!(a.hash == b.hash, same, "{what}");
            assert_ne!(a, b, "{what}: the identities differ");
        }
        // A unit's main pid 1 is no process of it (readers ask for one above 1): 1 is never
        // renamed like a pid of the same place.
        let main_pid = |pid: u32| {
            let mut snapshot = serving(0, "1111aaaa");
            snapshot.units.push(probe_model::SystemdUnit {
                name: "vllm.service".into(),
                state: Some(probe_model::UnitState {
                    main_pid: Some(pid),
                    ..probe_model::UnitState::default()
                }),
                ..probe_model::SystemdUnit::default()
            });
            print(&snapshot)
        };
        assert_ne!(main_pid(1).hash, main_pid(4000).hash);
        assert_eq!(main_pid(4000).hash, main_pid(4001).hash);
        // Numeric order alike, decimal order not: 99 < 100 but "100" < "99".
        let pids = |a: u32, b: u32| {
            let mut snapshot = serving(0, "1111aaaa");
            snapshot.processes[0].pid = a;
            snapshot.processes[1].pid = b;
            snapshot.processes[1].ppid = Some(1);
            snapshot.processes[1].launcher_pid = None;
            print(&snapshot)
        };
        assert_eq!(pids(98, 99).hash, pids(1098, 1099).hash);
        assert_ne!(pids(99, 100).hash, pids(98, 99).hash);
        // What is renamed, and what stays in the hash (pid 1: a `1` stands in the text).
        let named = edit(0, "1111aaaa", &|s| s.processes[0].argv.push("4242".into()));
        assert_eq!(print(&named).ids.pids, [4243]);
        assert_eq!(print(&base).ids.pids, [4242, 4243]);
        assert_eq!(
            print(&base).ids.uuids,
            ["GPU-1111aaaa0-00aa-bbcc", "GPU-1111aaaa1-00aa-bbcc"]
        );
        // A UUID named in any case, whole or without its `GPU-` prefix, stays as it is.
        for written in [
            "gpu-1111AAAA1-00AA-BBCC",
            "1111aaaa1-00aa-bbcc",
            "device=1111AAAA1-00aa-bbcc,",
        ] {
            let named = edit(0, "1111aaaa", &|s| {
                s.processes[0]
                    .env
                    .insert("CUDA_VISIBLE_DEVICES".into(), written.into());
            });
            assert_eq!(
                print(&named).ids.uuids,
                ["GPU-1111aaaa0-00aa-bbcc"],
                "{written}"
            );
        }
    }

    proptest::proptest! {
        /// The byte scan finds the numbers splitting on every non-digit character would.
        #[test]
        fn numbers_in_is_every_digit_run(
            text in "[0-9a-z. :é٣\u{1f600}-]{0,40}|[0-9]{18,22}( [0-9]{1,6})?",
            pids in proptest::collection::vec(0u32..2000, 0..6),
        ) {
            let pids: BTreeMap<u32, usize> = pids.into_iter().map(|p| (p, 0)).collect();
            let expected: BTreeSet<u64> = text
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|run| run.parse::<u64>().ok())
                .filter(|n| u32::try_from(*n).is_ok_and(|p| pids.contains_key(&p)))
                .collect();
            proptest::prop_assert_eq!(numbers_in(&text, &pids), expected);
        }
    }

    #[test]
    fn numbers_in_table() {
        let pids: BTreeMap<u32, usize> = [7, 42, 4_294_967_295].map(|p| (p, 0)).into();
        let cases: &[(&str, &[u64])] = &[
            ("pid:42 port 8042 0042", &[42]),
            ("7", &[7]),
            ("a7b", &[7]),
            ("4294967295 4294967296", &[4_294_967_295]),
            ("99999999999999999999999 7", &[7]),
            ("x٧y", &[]),
            ("", &[]),
        ];
        for (text, expected) in cases {
            let got: Vec<u64> = numbers_in(text, &pids).into_iter().collect();
            assert_eq!(got, *expected, "{text}");
        }
    }

    #[test]
    fn stored_fingerprints_read_back_and_older_forms_are_never_shared() {
        let print = Fingerprint::of_snapshot(&serving(7, "1111aaaa"));
        assert_eq!(Fingerprint::from_stored(&print.stored()), print);
        for damaged in [
            Vec::new(),
            print.hash.unwrap().to_vec(),
            print.stored()[..40].to_vec(),
            [&[1u8][..], &print.stored()[1..]].concat(),
        ] {
            assert_eq!(Fingerprint::from_stored(&damaged), Fingerprint::default());
        }
        assert!(Fingerprint::default().stored().is_empty());
    }

    /// A host with more GPU UUIDs than are looked for renames none of them (each stays in the
    /// hash), and still has a fingerprint.
    #[test]
    fn past_the_bound_no_uuid_is_renamed() {
        let mut many = serving(0, "1111aaaa");
        many.gpu.gpus = (0..=MAX_RENAMED_UUIDS as u32)
            .map(|index| Gpu {
                index: Some(index),
                uuid: Some(format!("GPU-{index:08x}-00aa-bbcc")),
                ..Gpu::default()
            })
            .collect();
        let print = Fingerprint::of_snapshot(&many);
        assert!(print.hash.is_some());
        assert!(print.ids.uuids.is_empty());
        assert_eq!(print.ids.pids, [4242, 4243]);
        many.gpu.gpus.pop();
        assert_eq!(
            Fingerprint::of_snapshot(&many).ids.uuids.len(),
            MAX_RENAMED_UUIDS
        );
    }
}
