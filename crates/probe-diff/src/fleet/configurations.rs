//! Members that the comparison cannot tell apart: one configuration, read and compared once.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use probe_model::{FleetView, Snapshot};

use super::member::Member;
use super::parallel::in_parallel;

/// Members that the comparison cannot tell apart, compared once for all of them.
///
/// Two members share a configuration when their snapshots are equal in everything but the
/// fields [`FleetView::configuration`] leaves out: equal as serialised bytes (which also tells
/// `0.0` from `-0.0`) and equal as values (which tells a NaN, never equal, or an infinity from
/// a `null`, all of which serialise as `null`). A hash of the bytes only proposes the candidate.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Configurations {
    /// Each member's configuration.
    pub(super) of_member: Vec<usize>,
    /// The first member of each configuration: the one read for all of its members.
    pub(super) first: Vec<usize>,
}

impl Configurations {
    pub(super) fn of(members: &[Member<'_>]) -> Configurations {
        let hashes = in_parallel(members, |member| configuration_hash(member.view.snapshot()));
        let mut first_with: HashMap<u64, usize> = HashMap::new();
        let proposed: Vec<usize> = (hashes.iter().enumerate())
            .map(|(index, hash)| match hash {
                Some(hash) => *first_with.entry(*hash).or_insert(index),
                None => index,
            })
            .collect();
        // The bytes of each first member that others are proposed to share, once.
        let leaders: Vec<usize> = (proposed.iter().enumerate())
            .filter(|(index, first)| *index != **first)
            .map(|(_, first)| *first)
            .collect::<BTreeSet<usize>>()
            .into_iter()
            .collect();
        let leader_bytes = in_parallel(&leaders, |&leader| {
            configuration_bytes(members[leader].view.snapshot())
        });
        let leader_bytes: BTreeMap<usize, Option<Vec<u8>>> =
            leaders.into_iter().zip(leader_bytes).collect();
        let indices: Vec<usize> = (0..members.len()).collect();
        let confirmed = in_parallel(&indices, |&index| {
            let first = proposed[index];
            first == index
                || leader_bytes.get(&first).is_some_and(|bytes| {
                    let (own, theirs) = (members[index].view.snapshot(), members[first].view);
                    bytes.is_some()
                        && configuration_bytes(own) == *bytes
                        && same_configuration(own, theirs.snapshot())
                })
        });
        // A member whose proposal is not confirmed is a configuration of its own.
        let mut config_of_first: Vec<Option<usize>> = vec![None; members.len()];
        let mut configs = Configurations {
            of_member: Vec::with_capacity(members.len()),
            first: Vec::new(),
        };
        for (index, confirmed) in confirmed.into_iter().enumerate() {
            let first = if confirmed { proposed[index] } else { index };
            let config = match config_of_first[first] {
                Some(config) => config,
                None => {
                    configs.first.push(index);
                    config_of_first[index] = Some(configs.first.len() - 1);
                    configs.first.len() - 1
                }
            };
            configs.of_member.push(config);
        }
        configs
    }

    /// Members sharing a configuration where their fingerprints are equal (a member without
    /// one is a configuration of its own), numbered in member order as [`Configurations::of`]
    /// numbers them.
    pub(super) fn of_fingerprints<K: Hash + Eq>(fingerprints: &[Option<K>]) -> Configurations {
        let mut config_of: HashMap<&K, usize> = HashMap::new();
        let mut configs = Configurations {
            of_member: Vec::with_capacity(fingerprints.len()),
            first: Vec::new(),
        };
        for (index, fingerprint) in fingerprints.iter().enumerate() {
            let known = (fingerprint.as_ref()).and_then(|f| config_of.get(f).copied());
            let config = known.unwrap_or_else(|| {
                configs.first.push(index);
                if let Some(f) = fingerprint {
                    config_of.insert(f, configs.first.len() - 1);
                }
                configs.first.len() - 1
            });
            configs.of_member.push(config);
        }
        configs
    }

    pub(super) fn len(&self) -> usize {
        self.first.len()
    }

    /// Each member a configuration of its own: the comparison of every member, which tests
    /// hold the shared comparisons to.
    #[cfg(test)]
    pub(super) fn each(members: usize) -> Configurations {
        Configurations {
            of_member: (0..members).collect(),
            first: (0..members).collect(),
        }
    }
}

fn same_configuration<'a>(a: &'a Snapshot, b: &'a Snapshot) -> bool {
    FleetView::configuration_of(a) == FleetView::configuration_of(b)
}

/// The configuration's bytes, or `None` when it does not serialise (then it is shared with no
/// other member).
pub(super) fn configuration_bytes(snapshot: &Snapshot) -> Option<Vec<u8>> {
    serde_json::to_vec(&FleetView::configuration_of(snapshot)).ok()
}

fn configuration_hash(snapshot: &Snapshot) -> Option<u64> {
    struct Hashing(DefaultHasher);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing(DefaultHasher::new());
    serde_json::to_writer(&mut hashing, &FleetView::configuration_of(snapshot)).ok()?;
    Some(hashing.0.finish())
}
