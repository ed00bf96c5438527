//! Configurations that differ only in identities the reference cannot tell apart, compared
//! with the reference once.
//!
//! Members known by fingerprint carry the hash of their configuration with its process ids and
//! GPU UUIDs renamed by their order (only those that nothing else in the configuration names),
//! and the values renamed ([`HostIds`]). Two configurations with one hash are one configuration
//! but for a renaming of such identities. Whether the comparison with the reference tells them
//! apart depends on the reference alone: where the reference names one of the values (its own
//! process ids and UUIDs, or any digits or text of its snapshot), the value is written as it
//! is; every other value by its place among the reference's own ids (the order the comparison
//! could see). Configurations equal in hash and in what the reference sees of their values are
//! one group: the comparison stands on equality and order of ids only, so where the reference's
//! comparison with one of them keeps no change, it keeps none with any (a change, which could
//! carry a value, is never shared: each member of that group is compared itself).

use std::collections::HashSet;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use probe_model::{HostIdMut, HostIds, Snapshot, for_each_host_id};

/// The longest UUID looked for in the reference's text, and how many lengths at most.
const MAX_UUID_LENGTH: usize = 96;
const MAX_UUID_LENGTHS: usize = 8;

/// One renamed value as the reference sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Seen {
    /// The reference names it: the value itself.
    Named(String),
    /// Its place among the reference's own ids (numeric and decimal order for a pid).
    Placed(usize, usize),
}

/// What the reference's snapshot names, for [`Reference::seen`].
pub(super) struct Reference {
    numbers: HashSet<u64>,
    /// Hashes of the lower-cased text's windows, by window length.
    windows: HashSet<(usize, u64)>,
    /// The window lengths hashed.
    lengths: Vec<usize>,
    pids: Vec<u32>,
    decimal: Vec<String>,
    uuids: Vec<String>,
}

impl Reference {
    /// What `snapshot` names of the values in `ids` (the lengths of their UUIDs decide which
    /// windows of its text are kept).
    pub(super) fn of<'a>(snapshot: &Snapshot, ids: impl Iterator<Item = &'a HostIds>) -> Reference {
        let text = format!("{snapshot:?}").to_ascii_lowercase();
        let mut lengths: Vec<usize> = ids
            .flat_map(|ids| ids.uuids.iter())
            .flat_map(|uuid| {
                let lower = uuid.to_ascii_lowercase();
                [lower.len(), core(&lower).len()]
            })
            .collect();
        lengths.sort_unstable();
        lengths.dedup();
        // Bounded work on hostile ids: a UUID of another length is not looked for, so it reads
        // as named (as it is), and shares nothing.
        lengths.retain(|length| *length <= MAX_UUID_LENGTH);
        lengths.truncate(MAX_UUID_LENGTHS);
        let bytes = text.as_bytes();
        let windows = (lengths.iter().filter(|length| **length > 0))
            .flat_map(|&length| bytes.windows(length).map(move |w| (length, hashed(w))))
            .collect();
        let (mut pids, mut uuids) = (Vec::new(), Vec::new());
        for_each_host_id(&mut snapshot.clone(), |id| match id {
            HostIdMut::Pid(pid) => pids.push(*pid),
            HostIdMut::Uuid(uuid) => uuids.push(uuid.clone()),
        });
        pids.sort_unstable();
        pids.dedup();
        uuids.sort();
        uuids.dedup();
        let mut decimal: Vec<String> = pids.iter().map(u32::to_string).collect();
        decimal.sort();
        Reference {
            numbers: numbers_in(&text),
            windows,
            lengths,
            pids,
            decimal,
            uuids,
        }
    }

    /// What the reference sees of `ids`: each pid, then each UUID.
    pub(super) fn seen(&self, ids: &HostIds) -> Vec<Seen> {
        let pids = ids.pids.iter().map(|&pid| {
            if self.numbers.contains(&u64::from(pid)) {
                Seen::Named(pid.to_string())
            } else {
                let text = pid.to_string();
                Seen::Placed(
                    self.pids.partition_point(|own| *own < pid),
                    self.decimal.partition_point(|own| *own < text),
                )
            }
        });
        let uuids = ids.uuids.iter().map(|uuid| {
            let lower = uuid.to_ascii_lowercase();
            let found = |part: &str| {
                !part.is_empty()
                    && self
                        .windows
                        .contains(&(part.len(), hashed(part.as_bytes())))
            };
            let unsearched = |part: &str| !self.lengths.contains(&part.len());
            if unsearched(&lower)
                || unsearched(core(&lower))
                || found(&lower)
                || found(core(&lower))
            {
                Seen::Named(uuid.clone())
            } else {
                Seen::Placed(self.uuids.partition_point(|own| own < uuid), usize::MAX)
            }
        });
        pids.chain(uuids).collect()
    }
}

/// A lower-cased UUID without its `gpu-`/`mig-` prefix.
fn core(lower: &str) -> &str {
    (lower.strip_prefix("gpu-"))
        .or_else(|| lower.strip_prefix("mig-"))
        .unwrap_or(lower)
}

fn hashed(bytes: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

/// Every run of ASCII digits in `text`, as a number.
fn numbers_in(text: &str) -> HashSet<u64> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|run| !run.is_empty())
        .filter_map(|run| run.parse::<u64>().ok())
        .collect()
}
