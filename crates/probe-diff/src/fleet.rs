//! The host that differs from its peers: for a group of hosts (an inventory group or tag), the
//! modal configuration and each host's differences from it, ranked like a launch diff.
//!
//! Nothing here reads a launch or a package list itself: every difference is a [`Change`] of
//! [`compare_snapshots_with`] between a reference host (the group's medoid, the host closest to
//! all others) and each member, so engines, versions, launch options (default-aware), packages,
//! the driver, GPU model and count and model configuration are compared exactly as `probe diff`
//! compares them. For every change key the modal value is the one most hosts have (ties go to the
//! reference); a host differs where its value is not the modal one, and the change reported is
//! `modal -> host's value`. Host facts that always differ between machines (host name, memory,
//! uptime) and log metrics are not configuration and are left out.
//!
//! Members are [`FleetView`]s: a snapshot without what the comparison never reads (section
//! reports, the environments of processes that are not launchers), so that the store can read
//! ten thousand of them without parsing those (`get_many_views`). A test holds the outliers of
//! views to those of whole snapshots.
//!
//! Ten thousand members are compared without holding ten thousand analyses: only the medoid's
//! candidates' analyses are kept, every other member is read, compared with the reference and
//! dropped, leaving its change map. Members whose snapshots differ only in fields that feed no
//! change kept here (names, ids, uptime: [`FleetView::configuration`]) share one configuration,
//! read and compared once for all of them; the distinct configurations are compared on every
//! core.
//! Tests hold the shared comparisons to the comparison of every member. A store keeps a
//! fingerprint of each snapshot's configuration, so that [`outliers_by_fingerprint`] shares
//! them before any view is read: only the first member of each fingerprint is read.

use std::borrow::Cow;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::Hasher;
use std::sync::atomic::{AtomicUsize, Ordering};

use probe_model::KeyArea;
use probe_model::{
    Change, ChangeKind, FleetView, GroupOutliers, HostDifferences, Impact, LaunchConfig,
    ModalValue, Snapshot,
};
use serde_json::Value;

use crate::analysis::Analysis;
use crate::compare::{CompareOptions, rank};
use crate::conclusion::compare_analyses;

/// One member of a group: its name (inventory name) and its latest snapshot, as the comparison
/// reads it.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    pub host: &'a str,
    pub view: &'a FleetView,
}

impl Member<'_> {
    fn snapshot(&self) -> &Snapshot {
        self.view.snapshot()
    }
}

/// Groups larger than this pick their reference among the first members only (the medoid costs
/// one comparison per pair).
const MEDOID_CANDIDATES: usize = 12;
/// Fewer comparisons (or readings) than this are made on the calling thread.
const PARALLEL_FROM: usize = 8;
/// Packages named in the baseline.
const KEY_PACKAGES: &[&str] = &[
    "vllm",
    "sglang",
    "sgl-kernel",
    "torch",
    "transformers",
    "flashinfer-python",
    "triton",
    "xformers",
];

/// The modal configuration of `members` and each host's differences from it.
pub fn outliers(group: &str, members: &[Member<'_>]) -> GroupOutliers {
    outliers_of(group, members, &Configurations::of(members))
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

/// The members of a group (in group order) whose views [`outliers_by_fingerprint`] reads:
/// the first of each fingerprint, and each member without one.
pub fn members_to_read(fingerprints: &[Option<&[u8]>]) -> Vec<usize> {
    let configs = Configurations::of_fingerprints(fingerprints);
    configs.first
}

/// [`outliers`] of members that share a configuration when their fingerprints are equal:
/// only the views of [`members_to_read`] are read and compared, the same answer as [`outliers`] of
/// every member's view. `None` when a member [`members_to_read`] names has no view.
pub fn outliers_by_fingerprint(
    group: &str,
    members: &[Fingerprinted<'_>],
) -> Option<GroupOutliers> {
    let fingerprints: Vec<Option<&[u8]>> = members.iter().map(|m| m.fingerprint).collect();
    let configs = Configurations::of_fingerprints(&fingerprints);
    // A member reads as its configuration's first member, whose view is the one compared.
    let views: Vec<&FleetView> = (configs.first.iter())
        .map(|&first| members[first].view)
        .collect::<Option<_>>()?;
    let members: Vec<Member<'_>> = (members.iter().zip(&configs.of_member))
        .map(|(member, &config)| Member {
            host: member.host,
            view: views[config],
        })
        .collect();
    Some(outliers_of(group, &members, &configs))
}

/// [`outliers`] with each distinct configuration of `configs` read and compared once, for all
/// the members that share it.
fn outliers_of(group: &str, members: &[Member<'_>], configs: &Configurations) -> GroupOutliers {
    // The analyses of the medoid's candidates, kept until every comparison is made; any other
    // member's analysis lives only while its configuration is compared.
    let mut known = candidate_analyses(members, configs);
    let Some(reference) = medoid(members, configs, &known) else {
        return GroupOutliers {
            group: group.to_string(),
            hosts: 0,
            reference: None,
            baseline: Vec::new(),
            disputed: Vec::new(),
            outliers: Vec::new(),
        };
    };
    let reference_config = configs.of_member[reference];
    let changed: Vec<BTreeMap<String, Change>> = {
        let all: Vec<usize> = (0..configs.len()).collect();
        in_parallel(&all, |&config| {
            keyed(compared(members, configs, &known, reference_config, config))
        })
    };
    let none = BTreeMap::new();
    let diffs: Vec<&BTreeMap<String, Change>> = (0..members.len())
        .map(|index| {
            if index == reference {
                &none
            } else {
                &changed[configs.of_member[index]]
            }
        })
        .collect();
    let keys: Vec<String> = {
        let mut keys: Vec<String> = diffs.iter().flat_map(|diff| diff.keys().cloned()).collect();
        keys.sort();
        keys.dedup();
        keys
    };
    let modes: Vec<(Option<Change>, usize, Option<usize>)> = keys
        .iter()
        .map(|key| {
            let (modal, count) = modal_value(&diffs, key);
            let holder = modal
                .as_ref()
                .and_then(|modal| holder_of(&diffs, key, modal));
            (modal, count, holder)
        })
        .collect();
    // When the mode is not the reference's value, the change was read in the reference's
    // direction: a host that has the mode is compared with each host that differs from it
    // instead, so the impact and the explanation's `before -> after` read group -> host.
    let mut pairs: BTreeSet<(usize, usize)> = BTreeSet::new();
    for (key, (modal, _, holder)) in keys.iter().zip(&modes) {
        let Some(holder) = holder else { continue };
        for (index, diff) in diffs.iter().enumerate() {
            if differs_from_mode(diff.get(key.as_str()), modal.as_ref()) {
                pairs.insert((configs.of_member[*holder], configs.of_member[index]));
            }
        }
    }
    let from_holder = HolderComparisons::of(members, configs, &mut known, &pairs);
    let mut per_host: Vec<Vec<Change>> = vec![Vec::new(); members.len()];
    let mut disputed = Vec::new();
    for (key, (modal, count, holder)) in keys.iter().zip(modes) {
        disputed.push(ModalValue {
            key: key.clone(),
            value: match &modal {
                None => reference_written(&diffs, key),
                Some(change) => written(change.after.as_ref(), change.after_written.as_deref()),
            },
            hosts: count,
        });
        for (index, diff) in diffs.iter().enumerate() {
            let Some(change) = difference_from_mode(diff.get(key.as_str()), modal.as_ref()) else {
                continue;
            };
            let change = holder
                .and_then(|holder| {
                    let (holder, to) = (configs.of_member[holder], configs.of_member[index]);
                    from_holder.change(holder, to, key)
                })
                .unwrap_or(change);
            per_host[index].push(change);
        }
    }
    let outliers = ranked(per_host, members);
    let reference_analysis = read(members, configs, &known, reference_config);
    GroupOutliers {
        group: group.to_string(),
        hosts: members.len(),
        reference: Some(members[reference].host.to_string()),
        baseline: baseline(members[reference].snapshot(), &reference_analysis.launches),
        disputed,
        outliers,
    }
}

/// The hosts with differences, each one's ranked like a launch diff, the most severe first.
fn ranked(per_host: Vec<Vec<Change>>, members: &[Member<'_>]) -> Vec<HostDifferences> {
    let mut outliers: Vec<HostDifferences> = per_host
        .into_iter()
        .zip(members)
        .filter(|(changes, _)| !changes.is_empty())
        .map(|(mut changes, member)| {
            rank(&mut changes);
            HostDifferences {
                host: member.host.to_string(),
                changes,
            }
        })
        .collect();
    outliers.sort_by(|a, b| {
        severity(&b.changes)
            .cmp(&severity(&a.changes))
            .then_with(|| a.host.cmp(&b.host))
    });
    outliers
}

/// (high, medium, low, count): more high-impact differences rank a host first.
fn severity(changes: &[Change]) -> (usize, usize, usize, usize) {
    // A consequence ranks with its cause and is not counted apart from it.
    let causes = || changes.iter().filter(|c| c.consequence_of.is_empty());
    let count = |impact: Impact| causes().filter(|c| c.impact == impact).count();
    (
        count(Impact::High),
        count(Impact::Medium),
        count(Impact::Low),
        causes().count(),
    )
}

/// A snapshot with its analysis: one side of a comparison.
#[derive(Clone, Copy)]
struct Side<'a> {
    snapshot: &'a Snapshot,
    analysis: &'a Analysis,
}

/// The changes between two snapshots that are configuration (not identity, not metrics).
fn configuration_changes(from: Side<'_>, to: Side<'_>) -> Vec<Change> {
    let diff = compare_analyses(
        from.snapshot,
        from.analysis,
        to.snapshot,
        to.analysis,
        &CompareOptions::default(),
    );
    diff.changes
        .into_iter()
        .filter(|change| change.impact != Impact::None)
        .filter(|change| !matches!(change.key_area(), KeyArea::Host | KeyArea::Metric))
        .collect()
}

/// The configuration changes from configuration `from` to configuration `to` (each read from
/// its first member, with its kept analysis or one read for this comparison).
fn compared(
    members: &[Member<'_>],
    configs: &Configurations,
    known: &Known,
    from: usize,
    to: usize,
) -> Vec<Change> {
    let (before, after) = (
        read(members, configs, known, from),
        read(members, configs, known, to),
    );
    configuration_changes(
        Side {
            snapshot: configs.snapshot(members, from),
            analysis: &before,
        },
        Side {
            snapshot: configs.snapshot(members, to),
            analysis: &after,
        },
    )
}

fn keyed(changes: Vec<Change>) -> BTreeMap<String, Change> {
    changes
        .into_iter()
        .map(|change| (change.key.clone(), change))
        .collect()
}

/// Analyses kept by configuration.
type Known = BTreeMap<usize, Analysis>;

/// The analysis of configuration `config`: the one kept, else read now (and dropped by the
/// caller when done).
fn read<'a>(
    members: &[Member<'_>],
    configs: &Configurations,
    known: &'a Known,
    config: usize,
) -> Cow<'a, Analysis> {
    known.get(&config).map_or_else(
        || Cow::Owned(crate::analysis::analyze(configs.snapshot(members, config))),
        Cow::Borrowed,
    )
}

/// The analyses of the configurations of the medoid's candidates (the first members).
fn candidate_analyses(members: &[Member<'_>], configs: &Configurations) -> Known {
    let candidates = members.len().min(MEDOID_CANDIDATES);
    let wanted: Vec<usize> = (configs.of_member[..candidates].iter().copied())
        .collect::<BTreeSet<usize>>()
        .into_iter()
        .collect();
    let analyses = in_parallel(&wanted, |&config| {
        crate::analysis::analyze(configs.snapshot(members, config))
    });
    wanted.into_iter().zip(analyses).collect()
}

/// The member with the fewest differences from the others (among the first candidates); each
/// pair of configurations compared once.
fn medoid(members: &[Member<'_>], configs: &Configurations, known: &Known) -> Option<usize> {
    let candidates = members.len().min(MEDOID_CANDIDATES);
    let config = |member: usize| configs.of_member[member];
    let pairs: Vec<(usize, usize)> = (0..candidates)
        .flat_map(|candidate| {
            (0..candidates)
                .filter(move |&other| other != candidate)
                .map(move |other| (config(candidate), config(other)))
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let counts = in_parallel(&pairs, |&(from, to)| {
        compared(members, configs, known, from, to).len()
    });
    let counts: BTreeMap<(usize, usize), usize> = pairs.into_iter().zip(counts).collect();
    (0..candidates).min_by_key(|&candidate| {
        (0..candidates)
            .filter(|&other| other != candidate)
            .map(|other| {
                (counts.get(&(config(candidate), config(other)))).map_or(0, |count| *count)
            })
            .sum::<usize>()
    })
}

/// The first member whose value of `key` is the modal one (the mode is not the reference's).
fn holder_of(diffs: &[&BTreeMap<String, Change>], key: &str, modal: &Change) -> Option<usize> {
    diffs.iter().position(|diff| {
        diff.get(key)
            .is_some_and(|own| value_key(Some(own)) == value_key(Some(modal)))
    })
}

/// Comparisons from a configuration holding a modal value to another, each pair made once.
struct HolderComparisons {
    done: BTreeMap<(usize, usize), BTreeMap<String, Change>>,
}

impl HolderComparisons {
    /// The comparisons of `pairs` (holder's configuration, host's configuration): the holders'
    /// analyses are read once and kept in `known` (one holder per disputed key at most), each
    /// host's is read again for the comparison and dropped.
    fn of(
        members: &[Member<'_>],
        configs: &Configurations,
        known: &mut Known,
        pairs: &BTreeSet<(usize, usize)>,
    ) -> HolderComparisons {
        let holders: Vec<usize> = (pairs.iter().map(|(holder, _)| *holder))
            .filter(|holder| !known.contains_key(holder))
            .collect::<BTreeSet<usize>>()
            .into_iter()
            .collect();
        let analyses = in_parallel(&holders, |&holder| {
            crate::analysis::analyze(configs.snapshot(members, holder))
        });
        known.extend(holders.into_iter().zip(analyses));
        let known: &Known = known;
        let pairs: Vec<(usize, usize)> = pairs.iter().copied().collect();
        let changes = in_parallel(&pairs, |&(holder, to)| {
            keyed(compared(members, configs, known, holder, to))
        });
        HolderComparisons {
            done: pairs.into_iter().zip(changes).collect(),
        }
    }

    /// The change of `key` from configuration `holder` to configuration `to`, as `probe diff`
    /// reads it.
    fn change(&self, holder: usize, to: usize, key: &str) -> Option<Change> {
        self.done.get(&(holder, to))?.get(key).cloned()
    }
}

/// Members that the comparison cannot tell apart, compared once for all of them.
///
/// Two members share a configuration when their snapshots are equal in everything but the
/// fields [`FleetView::configuration`] leaves out: equal as serialised bytes (which also tells
/// `0.0` from `-0.0`) and equal as values (which tells a NaN, never equal, or an infinity from
/// a `null`, all of which serialise as `null`). A hash of the bytes only proposes the candidate.
#[derive(Debug, Clone, PartialEq)]
struct Configurations {
    /// Each member's configuration.
    of_member: Vec<usize>,
    /// The first member of each configuration: the one read for all of its members.
    first: Vec<usize>,
}

impl Configurations {
    fn of(members: &[Member<'_>]) -> Configurations {
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
    fn of_fingerprints(fingerprints: &[Option<&[u8]>]) -> Configurations {
        let mut config_of: HashMap<&[u8], usize> = HashMap::new();
        let mut configs = Configurations {
            of_member: Vec::with_capacity(fingerprints.len()),
            first: Vec::new(),
        };
        for (index, fingerprint) in fingerprints.iter().enumerate() {
            let known = fingerprint.and_then(|f| config_of.get(f).copied());
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

    fn len(&self) -> usize {
        self.first.len()
    }

    /// The snapshot read for configuration `config`.
    fn snapshot<'a>(&self, members: &[Member<'a>], config: usize) -> &'a Snapshot {
        members[self.first[config]].view.snapshot()
    }

    /// Each member a configuration of its own: the comparison of every member, which tests
    /// hold the shared comparisons to.
    #[cfg(test)]
    fn each(members: usize) -> Configurations {
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
fn configuration_bytes(snapshot: &Snapshot) -> Option<Vec<u8>> {
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

/// `work` over `items`, in their order; on every core when there are enough items.
fn in_parallel<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(items.len());
    if threads < 2 || items.len() < PARALLEL_FROM {
        return items.iter().map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let (work, next) = (&work, &next);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(move || {
                    let mut own = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(index) else { break };
                        own.push((index, work(item)));
                    }
                    own
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    done.sort_by_key(|(index, _)| *index);
    done.into_iter().map(|(_, result)| result).collect()
}

/// Identity of a host's value for a key: the change's `after` (or the reference's value).
fn value_key(change: Option<&Change>) -> Option<String> {
    change.map(|change| {
        format!(
            "{}|{}",
            change
                .after
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default(),
            change.after_written.as_deref().unwrap_or("")
        )
    })
}

/// The modal value of `key`: `None` for the reference's value, else a change that leads to it;
/// and how many hosts have it. Ties go to the reference.
fn modal_value(diffs: &[&BTreeMap<String, Change>], key: &str) -> (Option<Change>, usize) {
    let mut counts: BTreeMap<Option<String>, (usize, Option<&Change>)> = BTreeMap::new();
    for diff in diffs {
        let change = diff.get(key);
        let entry = counts.entry(value_key(change)).or_insert((0, change));
        entry.0 += 1;
    }
    let reference_count = counts.get(&None).map_or(0, |(count, _)| *count);
    let best = counts
        .iter()
        .filter(|(value, _)| value.is_some())
        .max_by(|a, b| a.1.0.cmp(&b.1.0).then_with(|| b.0.cmp(a.0)));
    match best {
        Some((_, (count, change))) if *count > reference_count => {
            (change.map(|change| (*change).clone()), *count)
        }
        _ => (None, reference_count),
    }
}

/// Whether a host's value of a key is not the modal one ([`difference_from_mode`] is `Some`).
fn differs_from_mode(own: Option<&Change>, modal: Option<&Change>) -> bool {
    match modal {
        None => own.is_some(),
        Some(modal) => value_key(own) != value_key(Some(modal)),
    }
}

/// What one host differs in on a key, as `modal -> host's value`; `None` when it has the mode.
fn difference_from_mode(own: Option<&Change>, modal: Option<&Change>) -> Option<Change> {
    match (modal, own) {
        // The reference's value is the mode: the comparison already says `mode -> host`.
        (None, own) => own.cloned(),
        (Some(modal), Some(own)) if value_key(Some(own)) == value_key(Some(modal)) => None,
        // The host has the reference's value, which is not the mode: the reverse change.
        (Some(modal), None) => Some(reversed(modal)),
        // A third value: from the mode to this host's value.
        (Some(modal), Some(own)) => {
            let mut change = own.clone();
            change.before = modal.after.clone();
            change.before_written = modal.after_written.clone();
            change.kind = match (&change.before, &change.after) {
                (None, Some(_)) => ChangeKind::Added,
                (Some(_), None) => ChangeKind::Removed,
                _ => ChangeKind::Changed,
            };
            Some(change)
        }
    }
}

fn reversed(change: &Change) -> Change {
    let mut reversed = change.clone();
    std::mem::swap(&mut reversed.before, &mut reversed.after);
    std::mem::swap(&mut reversed.before_written, &mut reversed.after_written);
    reversed.kind = match change.kind {
        ChangeKind::Added => ChangeKind::Removed,
        ChangeKind::Removed => ChangeKind::Added,
        ChangeKind::Changed => ChangeKind::Changed,
    };
    reversed
}

fn written(value: Option<&Value>, written: Option<&str>) -> String {
    match (value, written) {
        (Some(Value::String(text)), _) => text.clone(),
        (Some(Value::Null) | None, None) => String::from("(absent)"),
        (Some(value), _) => value.to_string(),
        (None, Some(text)) => text.to_string(),
    }
}

/// The reference's own value of a key, from any comparison that names it.
fn reference_written(diffs: &[&BTreeMap<String, Change>], key: &str) -> String {
    diffs.iter().find_map(|diff| diff.get(key)).map_or_else(
        || String::from("(absent)"),
        |change| written(change.before.as_ref(), change.before_written.as_deref()),
    )
}

/// One line per running launch, then key packages, then driver and GPUs.
fn baseline(snapshot: &Snapshot, launches: &[LaunchConfig]) -> Vec<String> {
    let mut lines = Vec::new();
    for launch in launches.iter().filter(|launch| launch.source.running) {
        let mut line = launch.engine.as_str().to_string();
        if let Some(version) = &launch.engine_version {
            line.push_str(&format!(" {version}"));
        }
        if let Some(model) = &launch.model {
            line.push_str(&format!(", model {model}"));
        }
        let options: Vec<String> = launch
            .options
            .iter()
            .map(|(name, option)| format!("{name} {}", option.written))
            .collect();
        if !options.is_empty() {
            line.push_str(&format!(": {}", options.join(" ")));
        }
        lines.push(line);
    }
    let mut packages: Vec<String> = Vec::new();
    for environment in &snapshot.python_envs {
        for package in &environment.packages {
            let entry = format!("{} {}", package.name, package.version);
            if KEY_PACKAGES.contains(&package.name.as_str()) && !packages.contains(&entry) {
                packages.push(entry);
            }
        }
    }
    if !packages.is_empty() {
        lines.push(format!("packages: {}", packages.join(", ")));
    }
    let gpu = &snapshot.gpu;
    if let Some(driver) = &gpu.driver_version {
        lines.push(format!("driver {driver}"));
    }
    if let Some(name) = gpu.gpus.first().and_then(|first| first.name.as_deref()) {
        lines.push(format!("{} x {name}", gpu.gpus.len()));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::{Gpu, GpuState, GpuStatus, ProcessInfo, PythonEnv, PythonPackage};

    /// A vLLM host, as a fleet comparison reads it.
    fn host(name: &str, driver: &str, extra_flag: Option<&str>, torch: &str) -> FleetView {
        FleetView::of(whole_host(name, driver, extra_flag, torch))
    }

    /// A vLLM host: the server process, its venv's packages, two GPUs.
    fn whole_host(name: &str, driver: &str, extra_flag: Option<&str>, torch: &str) -> Snapshot {
        let mut cmdline = vec![
            "/opt/venvs/vllm/bin/python3".to_string(),
            "-m".into(),
            "vllm.entrypoints.openai.api_server".into(),
            "--model".into(),
            "/mnt/models/GLM-4.5-Air-FP8".into(),
            "--tensor-parallel-size".into(),
            "2".into(),
            "--max-model-len".into(),
            "32768".into(),
        ];
        if let Some(flag) = extra_flag {
            cmdline.extend(flag.split(' ').map(str::to_string));
        }
        let package = |name: &str, version: &str| PythonPackage {
            name: name.into(),
            version: version.into(),
            ..PythonPackage::default()
        };
        let gpu = |index: u32| Gpu {
            index: Some(index),
            name: Some("NVIDIA H200".into()),
            driver_version: Some(driver.into()),
            uuid: Some(format!("GPU-{name}-{index}")),
            ..Gpu::default()
        };
        Snapshot {
            schema_version: probe_model::SCHEMA_VERSION,
            id: format!("{name}-1"),
            target: name.into(),
            collected_at: 1_795_000_000,
            redacted: true,
            host: probe_model::HostFacts {
                hostname: Some(name.into()),
                machine_id: Some(format!("machine-{name}")),
                uptime_s: Some(1000 + name.len() as u64 * 77),
                ..probe_model::HostFacts::default()
            },
            processes: vec![ProcessInfo {
                pid: 4242,
                engine: Some(probe_model::Engine::Vllm),
                argv: cmdline,
                role: probe_model::ProcessRole::Launcher,
                exe: Some("/opt/venvs/vllm/bin/python3.11".into()),
                ..ProcessInfo::default()
            }],
            python_envs: vec![PythonEnv {
                interpreter: "/opt/venvs/vllm/bin/python3".into(),
                packages: vec![
                    package("vllm", "0.11.0"),
                    package("torch", torch),
                    package("transformers", "4.57.1"),
                ],
                ..PythonEnv::default()
            }],
            gpu: GpuState {
                status: GpuStatus::Present,
                driver_version: Some(driver.into()),
                cuda_version: Some("12.8".into()),
                gpus: vec![gpu(0), gpu(1)],
                ..GpuState::default()
            },
            ..Snapshot::default()
        }
    }

    fn keys(changes: &[Change]) -> Vec<String> {
        let mut keys: Vec<String> = changes.iter().map(|change| change.key.clone()).collect();
        keys.sort();
        keys
    }

    #[test]
    fn one_host_differs_in_driver_flag_and_package() {
        let snapshots = [
            host("gpu1", "570.172.08", None, "2.8.0+cu128"),
            host("gpu2", "570.172.08", None, "2.8.0+cu128"),
            host(
                "gpu3",
                "575.57.08",
                Some("--enable-expert-parallel"),
                "2.9.0+cu128",
            ),
            host("gpu4", "570.172.08", None, "2.8.0+cu128"),
        ];
        let members: Vec<Member<'_>> = snapshots
            .iter()
            .map(|view| Member {
                host: &view.snapshot().target,
                view,
            })
            .collect();
        let report = outliers("prod", &members);
        assert_eq!(report.hosts, 4);
        assert_ne!(report.reference.as_deref(), Some("gpu3"));
        assert_eq!(report.outliers.len(), 1, "{:#?}", report.outliers);
        let odd = &report.outliers[0];
        assert_eq!(odd.host, "gpu3");
        let found = keys(&odd.changes);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found.iter().any(|k| k == "gpu.driver_version"), "{found:?}");
        assert!(
            found.iter().any(|k| k.starts_with("package:torch")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|k| k.ends_with("enable_expert_parallel")
                    || k.ends_with("enable-expert-parallel")),
            "{found:?}"
        );
        let driver = odd
            .changes
            .iter()
            .find(|c| c.key == "gpu.driver_version")
            .unwrap();
        assert_eq!(driver.before, Some(Value::from("570.172.08")));
        assert_eq!(driver.after, Some(Value::from("575.57.08")));
        // Ranked like a launch diff: highest impact first.
        assert!(
            odd.changes
                .windows(2)
                .all(|pair| pair[0].impact <= pair[1].impact),
            "{:?}",
            odd.changes.iter().map(|c| c.impact).collect::<Vec<_>>()
        );
        assert_eq!(report.disputed.len(), 3);
        assert!(report.disputed.iter().all(|modal| modal.hosts == 3));
        let baseline = report.baseline.join("\n");
        assert!(baseline.contains("vllm 0.11.0"), "{baseline}");
        assert!(baseline.contains("driver 570.172.08"), "{baseline}");
        assert!(baseline.contains("2 x NVIDIA H200"), "{baseline}");
    }

    #[test]
    fn identical_hosts_have_no_outliers_and_the_mode_wins_over_the_reference() {
        let same = [
            host("a", "570.172.08", None, "2.8.0"),
            host("b", "570.172.08", None, "2.8.0"),
        ];
        let members: Vec<Member<'_>> = same
            .iter()
            .map(|view| Member {
                host: &view.snapshot().target,
                view,
            })
            .collect();
        let report = outliers("g", &members);
        assert!(report.outliers.is_empty(), "{:#?}", report.outliers);
        assert!(report.disputed.is_empty());
        assert_eq!(outliers("empty", &[]).hosts, 0);

        // Two camps of 2 and 3: the 2 are the outliers, whichever host is the reference.
        let camps = [
            host("p", "570", None, "2.8.0"),
            host("q", "575", None, "2.8.0"),
            host("r", "575", None, "2.8.0"),
            host("s", "570", None, "2.8.0"),
            host("t", "575", None, "2.8.0"),
        ];
        let members: Vec<Member<'_>> = camps
            .iter()
            .map(|view| Member {
                host: &view.snapshot().target,
                view,
            })
            .collect();
        let report = outliers("g", &members);
        let odd: Vec<&str> = report.outliers.iter().map(|o| o.host.as_str()).collect();
        assert_eq!(odd, ["p", "s"], "{:#?}", report.outliers);
        let change = &report.outliers[0].changes[0];
        assert_eq!(change.key, "gpu.driver_version");
        assert_eq!(change.before, Some(Value::from("575")));
        assert_eq!(change.after, Some(Value::from("570")));
        assert_eq!(report.disputed[0].value, "575");
        assert_eq!(report.disputed[0].hosts, 3);
    }

    /// The view leaves out only what the comparison never reads: hosts whose section reports
    /// and workers' environments all differ have the outliers their whole snapshots have, and a
    /// launcher's environment (kept) still makes an outlier.
    #[test]
    fn views_have_the_outliers_of_whole_snapshots() {
        let whole: Vec<Snapshot> = (0..5)
            .map(|n| {
                let mut snapshot = whole_host(&format!("gpu{n}"), "570.172.08", None, "2.8.0");
                snapshot.sections = (0..3)
                    .map(|i| probe_model::SectionReport {
                        name: format!("section-{i}"),
                        bytes: 100 * n + i,
                        duration_ms: Some(n),
                        ..probe_model::SectionReport::default()
                    })
                    .collect();
                let visible = if n == 3 { "2,3" } else { "0,1" };
                snapshot.processes[0].env =
                    [("CUDA_VISIBLE_DEVICES".to_string(), visible.to_string())].into();
                snapshot.processes.push(ProcessInfo {
                    pid: 4243,
                    ppid: Some(4242),
                    role: probe_model::ProcessRole::Worker,
                    engine: Some(probe_model::Engine::Vllm),
                    argv: vec!["VLLM::Worker_TP0".into()],
                    env: [
                        ("CUDA_VISIBLE_DEVICES".to_string(), format!("{n}")),
                        ("VLLM_ATTENTION_BACKEND".to_string(), format!("B{n}")),
                    ]
                    .into(),
                    ..ProcessInfo::default()
                });
                snapshot
            })
            .collect();
        let report = |views: &[FleetView]| {
            let members: Vec<Member<'_>> = views
                .iter()
                .map(|view| Member {
                    host: &view.snapshot().target,
                    view,
                })
                .collect();
            outliers("g", &members)
        };
        let views: Vec<FleetView> = whole.iter().cloned().map(FleetView::of).collect();
        let unprojected: Vec<FleetView> = whole.into_iter().map(FleetView::unprojected).collect();
        assert!(views[0].snapshot().sections.is_empty());
        assert!(views[0].snapshot().processes[1].env.is_empty());
        let (from_views, from_whole) = (report(&views), report(&unprojected));
        assert_eq!(from_views, from_whole);
        let odd: Vec<&str> = from_views
            .outliers
            .iter()
            .map(|o| o.host.as_str())
            .collect();
        assert_eq!(odd, ["gpu3"], "{:#?}", from_views.outliers);
        let found = keys(&from_views.outliers[0].changes);
        assert!(
            found.iter().any(|key| key.contains("CUDA_VISIBLE_DEVICES")),
            "{found:?}"
        );
    }

    /// Whether the reference holds the mode or not, an outlier's change and its explanation read
    /// from the group's value to the host's.
    #[test]
    fn outlier_explanations_read_from_the_group_to_the_host() {
        // The 575 hosts disagree on torch, so the medoid (the reference) is a 570 host while
        // the driver's mode is 575: the comparisons were made in the other direction.
        let camps = [
            host("p", "570", None, "2.8.0"),
            host("q", "575", None, "2.7.0"),
            host("r", "575", None, "2.7.1"),
            host("s", "570", None, "2.8.0"),
            host("t", "575", None, "2.6.0"),
        ];
        let members: Vec<Member<'_>> = camps
            .iter()
            .map(|view| Member {
                host: &view.snapshot().target,
                view,
            })
            .collect();
        let report = outliers("g", &members);
        assert_eq!(report.reference.as_deref(), Some("p"));
        for host_name in ["p", "s"] {
            let outlier = report
                .outliers
                .iter()
                .find(|outlier| outlier.host == host_name)
                .unwrap();
            let change = outlier
                .changes
                .iter()
                .find(|change| change.key == "gpu.driver_version")
                .unwrap();
            assert_eq!(change.before, Some(Value::from("575")), "{change:?}");
            assert_eq!(change.after, Some(Value::from("570")), "{change:?}");
            assert!(
                change.explanation.contains("575 -> 570"),
                "{}: {}",
                outlier.host,
                change.explanation
            );
        }
    }

    /// The comparison as it was made before configurations were shared: every member analysed
    /// up front and held, one comparison per member, the holders' comparisons per member.
    fn per_member_outliers(group: &str, members: &[Member<'_>]) -> GroupOutliers {
        let analyses: Vec<Analysis> = members
            .iter()
            .map(|member| crate::analysis::analyze(member.snapshot()))
            .collect();
        let side = |index: usize| Side {
            snapshot: members[index].snapshot(),
            analysis: &analyses[index],
        };
        let candidates = members.len().min(MEDOID_CANDIDATES);
        let Some(reference) = (0..candidates).min_by_key(|&candidate| {
            (0..candidates)
                .filter(|&other| other != candidate)
                .map(|other| configuration_changes(side(candidate), side(other)).len())
                .sum::<usize>()
        }) else {
            return outliers(group, &[]);
        };
        let diffs: Vec<BTreeMap<String, Change>> = (0..members.len())
            .map(|index| {
                if index == reference {
                    BTreeMap::new()
                } else {
                    keyed(configuration_changes(side(reference), side(index)))
                }
            })
            .collect();
        let diffs: Vec<&BTreeMap<String, Change>> = diffs.iter().collect();
        let mut keys: Vec<String> = diffs.iter().flat_map(|diff| diff.keys().cloned()).collect();
        keys.sort();
        keys.dedup();
        let mut per_host: Vec<Vec<Change>> = vec![Vec::new(); members.len()];
        let mut disputed = Vec::new();
        for key in &keys {
            let (modal, count) = modal_value(&diffs, key);
            disputed.push(ModalValue {
                key: key.clone(),
                value: match &modal {
                    None => reference_written(&diffs, key),
                    Some(change) => written(change.after.as_ref(), change.after_written.as_deref()),
                },
                hosts: count,
            });
            let holder = modal
                .as_ref()
                .and_then(|modal| holder_of(&diffs, key, modal));
            for (index, diff) in diffs.iter().enumerate() {
                let Some(change) = difference_from_mode(diff.get(key), modal.as_ref()) else {
                    continue;
                };
                let change = holder
                    .and_then(|holder| {
                        keyed(configuration_changes(side(holder), side(index))).remove(key)
                    })
                    .unwrap_or(change);
                per_host[index].push(change);
            }
        }
        let outliers = ranked(per_host, members);
        GroupOutliers {
            group: group.to_string(),
            hosts: members.len(),
            reference: Some(members[reference].host.to_string()),
            baseline: baseline(members[reference].snapshot(), &analyses[reference].launches),
            disputed,
            outliers,
        }
    }

    /// `snapshot` renamed (`node-N.example`) in every field a configuration leaves out.
    fn renamed(mut snapshot: Snapshot, n: u64) -> Snapshot {
        let name = format!("node-{n}.example");
        snapshot.id = format!("{name}-{}", 1_795_000_000 + n);
        snapshot.target = format!("root@{name}:22");
        snapshot.address = Some(format!("10.0.{n}.1:22"));
        snapshot.remote_clock = Some(1_795_000_000 - n as i64);
        snapshot.collector_version = format!("0.{n}.0");
        snapshot.duration_ms = 700 + n;
        snapshot.host.hostname = Some(name);
        snapshot.host.machine_id = Some(format!("{n:032x}"));
        snapshot.host.uptime_s = Some(86_400 + n * 61);
        snapshot.host.boot_time = Some(1_790_000_000 + n as i64);
        snapshot.host.mem_available_kib = Some(1_500_000_000 - n * 999);
        snapshot
    }

    fn members_of(views: &[FleetView]) -> Vec<Member<'_>> {
        views
            .iter()
            .map(|view| Member {
                host: &view.snapshot().target,
                view,
            })
            .collect()
    }

    /// Hosts identical but for their identity share one configuration, compared once, and the
    /// outliers are those of comparing every member: also where the mode is not the
    /// reference's value (the holders' comparisons), with drifted hosts among them.
    #[test]
    fn shared_configurations_have_the_outliers_of_every_member_compared() {
        let mut views = Vec::new();
        for n in 0..40u64 {
            let (driver, flag, torch) = match n {
                // The first 12: the 570 hosts agree, the 575 hosts disagree on torch, so the
                // medoid is a 570 host while most of the group runs 575.
                0..12 if n % 2 == 0 => ("570.172.08", None, "2.8.0".to_string()),
                0..12 => ("575.57.08", None, format!("2.7.{n}")),
                20 | 30 => (
                    "575.57.08",
                    Some("--enable-expert-parallel"),
                    "2.8.0".into(),
                ),
                25 => ("570.172.08", Some("--max-num-seqs 64"), "2.8.0".into()),
                33 => ("575.57.08", None, "2.9.0".into()),
                _ => ("575.57.08", None, "2.8.0".into()),
            };
            // All of them built as one host, then each renamed in every field a
            // configuration leaves out.
            let snapshot = whole_host("gpu", driver, flag, &torch);
            views.push(FleetView::of(renamed(snapshot, n)));
        }
        let members = members_of(&views);
        let configs = Configurations::of(&members);
        // 570 (6 of the first 12), 6 distinct 575 of them, the 575 image, two
        // flags, another torch.
        assert_eq!(configs.len(), 11, "{configs:?}");
        assert_eq!(configs.of_member[0], configs.of_member[2]);
        assert_eq!(configs.of_member[14], configs.of_member[15]);
        let shared = outliers("g", &members);
        assert_eq!(
            shared,
            outliers_of("g", &members, &Configurations::each(40))
        );
        assert_eq!(shared, per_member_outliers("g", &members));
        // Fingerprints (here each configuration's bytes): only the first member of each is
        // read, and the outliers are the same.
        let bytes: Vec<Option<Vec<u8>>> = (views.iter())
            .map(|view| configuration_bytes(view.snapshot()))
            .collect();
        let prints: Vec<Option<&[u8]>> = bytes.iter().map(Option::as_deref).collect();
        let read = members_to_read(&prints);
        assert_eq!(read, configs.first);
        let fingerprinted: Vec<Fingerprinted<'_>> = (views.iter().enumerate())
            .map(|(index, view)| Fingerprinted {
                host: &view.snapshot().target,
                fingerprint: prints[index],
                view: read.contains(&index).then_some(view),
            })
            .collect();
        assert_eq!(
            outliers_by_fingerprint("g", &fingerprinted).as_ref(),
            Some(&shared)
        );
        // A member to read without its view: no answer rather than a wrong one.
        let mut missing = fingerprinted.clone();
        missing[read[1]].view = None;
        assert_eq!(outliers_by_fingerprint("g", &missing), None);
        assert_eq!(shared.reference.as_deref(), Some("root@node-0.example:22"));
        // The mode is 575: each 570 host's driver change reads from the group to the host.
        let odd: Vec<&str> = shared.outliers.iter().map(|o| o.host.as_str()).collect();
        for n in [0, 2, 20, 25, 30, 33] {
            let expected = format!("root@node-{n}.example:22");
            assert!(
                odd.contains(&expected.as_str()),
                "{expected} not in {odd:?}"
            );
        }
        assert!(!odd.contains(&"root@node-14.example:22"), "{odd:?}");
        let gpu2 = (shared.outliers.iter())
            .find(|o| o.host == "root@node-2.example:22")
            .unwrap();
        let driver = gpu2
            .changes
            .iter()
            .find(|change| change.key == "gpu.driver_version")
            .unwrap();
        assert_eq!(driver.before, Some(Value::from("575.57.08")), "{driver:?}");
        assert!(
            driver.explanation.contains("575.57.08 -> 570.172.08"),
            "{}",
            driver.explanation
        );
    }

    /// What serialises alike but is not the same value is not one configuration: a NaN (never
    /// equal) or an infinity against an absent number (all `null`), `-0.0` against `0.0`; nor
    /// are hosts that differ in a field the comparison reads (the collection time).
    #[test]
    fn configurations_tell_apart_what_serialises_alike() {
        let with_power = |power: Option<f64>| {
            let mut snapshot = whole_host("gpu1", "570", None, "2.8.0");
            snapshot.gpu.gpus[0].power_draw_w = power;
            FleetView::of(snapshot)
        };
        for (a, b) in [
            (Some(f64::NAN), Some(f64::NAN)),
            (Some(f64::NAN), None),
            (Some(f64::INFINITY), None),
            (Some(f64::INFINITY), Some(f64::NEG_INFINITY)),
            (Some(0.0), Some(-0.0)),
        ] {
            let views = [with_power(a), with_power(b)];
            let configs = Configurations::of(&members_of(&views));
            assert_eq!(configs.first, [0, 1], "{a:?} and {b:?}");
        }
        let views = [with_power(Some(300.5)), with_power(Some(300.5))];
        assert_eq!(Configurations::of(&members_of(&views)).first, [0]);
        let mut later = whole_host("gpu1", "570", None, "2.8.0");
        later.collected_at += 1;
        let views = [
            FleetView::of(whole_host("gpu1", "570", None, "2.8.0")),
            FleetView::of(renamed(whole_host("gpu1", "570", None, "2.8.0"), 7)),
            FleetView::of(later),
        ];
        let configs = Configurations::of(&members_of(&views));
        assert_eq!(configs.of_member, [0, 0, 1]);
    }
}
