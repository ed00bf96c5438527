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
//! Members are [`probe_model::FleetView`]s: a snapshot without what the comparison never reads (section
//! reports, the environments of processes that are not launchers), so that the store can read
//! ten thousand of them without parsing those (`get_many_views`). A test holds the outliers of
//! views to those of whole snapshots.
//!
//! Ten thousand members are compared without holding ten thousand analyses: only the medoid's
//! candidates' analyses are kept, every other member is read, compared with the reference and
//! dropped, leaving its change map. Members whose snapshots differ only in fields that feed no
//! change kept here (names, ids, uptime: [`probe_model::FleetView::configuration`]) share one configuration,
//! read and compared once for all of them; the distinct configurations are compared on every
//! core.
//! Tests hold the shared comparisons to the comparison of every member. A store keeps a
//! fingerprint of each snapshot's configuration with its process ids and GPU UUIDs renamed,
//! so that [`outliers_by_fingerprint`] shares them before any view is read: configurations
//! equal but for identities the reference cannot tell apart share their comparison with it
//! where it keeps no change (`sharing`), and only the members whose comparisons are made are
//! read.

mod comparisons;
mod configurations;
mod member;
mod modes;
mod parallel;
mod report;
mod sharing;
#[cfg(test)]
mod tests;
mod views;

use std::collections::{BTreeMap, BTreeSet};

use probe_model::{Change, GroupOutliers, HostIds, ModalValue, Snapshot};

use comparisons::{
    HolderComparisons, Known, candidate_analyses, candidate_configs, compared, keyed, medoid, read,
};
use configurations::Configurations;
pub use member::{Fingerprinted, Member};
use modes::{
    difference_from_mode, differs_from_mode, holder_of, modal_value, reference_written, written,
};
use parallel::in_parallel;
use report::{baseline, ranked};
use sharing::{Reference, Seen};
pub use views::ReadViews;
use views::{Source, Views};

/// The modal configuration of `members` and each host's differences from it.
pub fn outliers(group: &str, members: &[Member<'_>]) -> GroupOutliers {
    let configs = Configurations::of(members);
    let mut source = Source::given(members, &configs);
    let hosts: Vec<&str> = members.iter().map(|member| member.host).collect();
    // Every view is at hand: nothing is left unread.
    outliers_of(group, &hosts, &configs, &mut source, None).unwrap_or_else(|| no_outliers(group))
}

/// [`outliers`] of members known by their fingerprints: equal hashes and ids are one
/// configuration, read and compared once; configurations with one hash that the reference
/// sees alike (`sharing`) share a comparison with it where it keeps no change. `read` gives
/// the views of members (by index) whose comparisons are not shared, only those; the answer is
/// [`outliers`] of every member's view. `None` when `read` cannot give one.
pub fn outliers_by_fingerprint(
    group: &str,
    members: &[Fingerprinted<'_>],
    read: &mut ReadViews<'_>,
) -> Option<GroupOutliers> {
    let keys: Vec<Option<(&[u8], &HostIds)>> = (members.iter())
        .map(|member| member.hash.map(|hash| (hash, member.ids)))
        .collect();
    let configs = Configurations::of_fingerprints(&keys);
    let given: Vec<_> = members.iter().map(|member| member.view).collect();
    let mut source = Source::to_read(&configs, &given, read);
    let first = |config: usize| &members[configs.first[config]];
    let prints: Vec<(Option<&[u8]>, &HostIds)> = (0..configs.len())
        .map(|config| (first(config).hash, first(config).ids))
        .collect();
    let hosts: Vec<&str> = members.iter().map(|member| member.host).collect();
    outliers_of(group, &hosts, &configs, &mut source, Some(&prints))
}

/// Each configuration's hash and renamed ids, where members are known by fingerprint.
type Prints<'p> = [(Option<&'p [u8]>, &'p HostIds)];

/// [`outliers`] with each distinct configuration of `configs` read and compared once, for all
/// the members that share it; `None` when a view cannot be read.
fn outliers_of(
    group: &str,
    hosts: &[&str],
    configs: &Configurations,
    source: &mut Source<'_, '_>,
    prints: Option<&Prints<'_>>,
) -> Option<GroupOutliers> {
    // The analyses of the medoid's candidates, kept until every comparison is made; any other
    // member's analysis lives only while its configuration is compared.
    if !source.ensure(candidate_configs(configs)) {
        return None;
    }
    let mut known = candidate_analyses(&source.views, configs);
    let Some(reference) = medoid(&source.views, configs, &known) else {
        return Some(no_outliers(group));
    };
    let reference_config = configs.of_member[reference];
    let changed = reference_changes(source, configs, &known, reference_config, prints)?;
    let none = BTreeMap::new();
    let diffs: Vec<&BTreeMap<String, Change>> = (0..hosts.len())
        .map(|index| {
            if index == reference {
                &none
            } else {
                &changed[configs.of_member[index]]
            }
        })
        .collect();
    let keys = keys_of(&diffs);
    let modes: Vec<Mode> = keys.iter().map(|key| Mode::of(&diffs, key)).collect();
    let pairs = holder_pairs(&keys, &modes, &diffs, configs);
    if !source.ensure(pairs.iter().flat_map(|(holder, to)| [*holder, *to])) {
        return None;
    }
    let views = &source.views;
    let from_holder = HolderComparisons::of(views, &mut known, &pairs);
    let disputed = (keys.iter().zip(&modes))
        .map(|(key, mode)| disputed_value(&diffs, key, mode))
        .collect();
    let per_host = differences(&keys, modes, &diffs, configs, &from_holder);
    let reference_analysis = read(views, &known, reference_config);
    Some(GroupOutliers {
        group: group.to_string(),
        hosts: hosts.len(),
        reference: Some(hosts[reference].to_string()),
        baseline: baseline(
            views.snapshot(reference_config),
            &reference_analysis.launches,
        ),
        disputed,
        outliers: ranked(per_host, hosts),
    })
}

/// The report of a group without members.
fn no_outliers(group: &str) -> GroupOutliers {
    GroupOutliers {
        group: group.to_string(),
        hosts: 0,
        reference: None,
        baseline: Vec::new(),
        disputed: Vec::new(),
        outliers: Vec::new(),
    }
}

/// Each configuration's changes from the reference's, keyed, compared on every core; with
/// `prints`, once for each group of configurations the reference sees alike where that
/// comparison keeps no change. `None` when a view cannot be read.
fn reference_changes(
    source: &mut Source<'_, '_>,
    configs: &Configurations,
    known: &Known,
    reference_config: usize,
    prints: Option<&Prints<'_>>,
) -> Option<Vec<BTreeMap<String, Change>>> {
    let mut changed: Vec<Option<BTreeMap<String, Change>>> = vec![None; configs.len()];
    if let Some(prints) = prints {
        let groups = seen_alike(source.views.snapshot(reference_config), prints);
        let firsts: Vec<usize> = groups.iter().map(|group| group[0]).collect();
        if !source.ensure(firsts.iter().copied()) {
            return None;
        }
        let views: &Views<'_> = &source.views;
        let compared_first = in_parallel(&firsts, |&config| {
            keyed(compared(views, known, reference_config, config))
        });
        for (group, first) in groups.iter().zip(compared_first) {
            let shared = first.is_empty();
            changed[group[0]] = Some(first);
            for &config in group.iter().skip(1).filter(|_| shared) {
                changed[config] = Some(BTreeMap::new());
            }
        }
    }
    let rest: Vec<usize> = (0..configs.len())
        .filter(|&config| changed[config].is_none())
        .collect();
    if !source.ensure(rest.iter().copied()) {
        return None;
    }
    let views: &Views<'_> = &source.views;
    let compared_rest = in_parallel(&rest, |&config| {
        keyed(compared(views, known, reference_config, config))
    });
    for (config, diff) in rest.into_iter().zip(compared_rest) {
        changed[config] = Some(diff);
    }
    changed.into_iter().collect()
}

/// The configurations (in order) in groups the reference sees alike: one hash, and the same
/// [`Seen`] of their renamed ids; a configuration without a hash is a group of its own.
fn seen_alike(reference: &Snapshot, prints: &Prints<'_>) -> Vec<Vec<usize>> {
    let seer = Reference::of(reference, prints.iter().map(|(_, ids)| *ids));
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of: BTreeMap<(&[u8], Vec<Seen>), usize> = BTreeMap::new();
    for (config, (hash, ids)) in prints.iter().enumerate() {
        let Some(hash) = hash else {
            groups.push(vec![config]);
            continue;
        };
        let seen = seer.seen(ids);
        match group_of.get(&(*hash, seen.clone())) {
            Some(&group) => groups[group].push(config),
            None => {
                group_of.insert((*hash, seen), groups.len());
                groups.push(vec![config]);
            }
        }
    }
    groups
}

/// Every change key of the members' comparisons, sorted, each once.
fn keys_of(diffs: &[&BTreeMap<String, Change>]) -> Vec<String> {
    let mut keys: Vec<String> = diffs.iter().flat_map(|diff| diff.keys().cloned()).collect();
    keys.sort();
    keys.dedup();
    keys
}

/// A key's modal value among the members, how many have it, and the first member that has it
/// when it is not the reference's.
struct Mode {
    modal: Option<Change>,
    count: usize,
    holder: Option<usize>,
}

impl Mode {
    fn of(diffs: &[&BTreeMap<String, Change>], key: &str) -> Mode {
        let (modal, count) = modal_value(diffs, key);
        let holder = modal
            .as_ref()
            .and_then(|modal| holder_of(diffs, key, modal));
        Mode {
            modal,
            count,
            holder,
        }
    }
}

/// When the mode is not the reference's value, the change was read in the reference's
/// direction: a host that has the mode is compared with each host that differs from it
/// instead, so the impact and the explanation's `before -> after` read group -> host. The
/// (holder, member) configuration pairs to compare.
fn holder_pairs(
    keys: &[String],
    modes: &[Mode],
    diffs: &[&BTreeMap<String, Change>],
    configs: &Configurations,
) -> BTreeSet<(usize, usize)> {
    let mut pairs: BTreeSet<(usize, usize)> = BTreeSet::new();
    for (key, mode) in keys.iter().zip(modes) {
        let Some(holder) = mode.holder else { continue };
        for (index, diff) in diffs.iter().enumerate() {
            if differs_from_mode(diff.get(key.as_str()), mode.modal.as_ref()) {
                pairs.insert((configs.of_member[holder], configs.of_member[index]));
            }
        }
    }
    pairs
}

/// A key's modal value as the report shows it, with how many hosts have it.
fn disputed_value(diffs: &[&BTreeMap<String, Change>], key: &str, mode: &Mode) -> ModalValue {
    ModalValue {
        key: key.to_string(),
        value: match &mode.modal {
            None => reference_written(diffs, key),
            Some(change) => written(change.after.as_ref(), change.after_written.as_deref()),
        },
        hosts: mode.count,
    }
}

/// Each member's differences from the modes, key by key: from a holder's comparison where the
/// mode is not the reference's value.
fn differences(
    keys: &[String],
    modes: Vec<Mode>,
    diffs: &[&BTreeMap<String, Change>],
    configs: &Configurations,
    from_holder: &HolderComparisons,
) -> Vec<Vec<Change>> {
    let mut per_host: Vec<Vec<Change>> = vec![Vec::new(); diffs.len()];
    for (key, mode) in keys.iter().zip(modes) {
        for (index, diff) in diffs.iter().enumerate() {
            let Some(change) = difference_from_mode(diff.get(key.as_str()), mode.modal.as_ref())
            else {
                continue;
            };
            let change = mode
                .holder
                .and_then(|holder| {
                    let (holder, to) = (configs.of_member[holder], configs.of_member[index]);
                    from_holder.change(holder, to, key)
                })
                .unwrap_or(change);
            per_host[index].push(change);
        }
    }
    per_host
}
