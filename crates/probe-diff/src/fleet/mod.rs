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

mod comparisons;
mod configurations;
mod member;
mod modes;
mod parallel;
mod report;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use probe_model::{Change, FleetView, GroupOutliers, ModalValue};

use comparisons::{HolderComparisons, Known, candidate_analyses, compared, keyed, medoid, read};
use configurations::Configurations;
pub use member::{Fingerprinted, Member};
use modes::{
    difference_from_mode, differs_from_mode, holder_of, modal_value, reference_written, written,
};
use parallel::in_parallel;
use report::{baseline, ranked};

/// The modal configuration of `members` and each host's differences from it.
pub fn outliers(group: &str, members: &[Member<'_>]) -> GroupOutliers {
    outliers_of(group, members, &Configurations::of(members))
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
        return no_outliers(group);
    };
    let reference_config = configs.of_member[reference];
    let changed = reference_changes(members, configs, &known, reference_config);
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
    let keys = keys_of(&diffs);
    let modes: Vec<Mode> = keys.iter().map(|key| Mode::of(&diffs, key)).collect();
    let pairs = holder_pairs(&keys, &modes, &diffs, configs);
    let from_holder = HolderComparisons::of(members, configs, &mut known, &pairs);
    let disputed = (keys.iter().zip(&modes))
        .map(|(key, mode)| disputed_value(&diffs, key, mode))
        .collect();
    let per_host = differences(&keys, modes, &diffs, configs, &from_holder);
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

/// Each configuration's changes from the reference's, keyed, compared on every core.
fn reference_changes(
    members: &[Member<'_>],
    configs: &Configurations,
    known: &Known,
    reference_config: usize,
) -> Vec<BTreeMap<String, Change>> {
    let all: Vec<usize> = (0..configs.len()).collect();
    in_parallel(&all, |&config| {
        keyed(compared(members, configs, known, reference_config, config))
    })
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
