//! The hosts that differ from their group (`probe audit --outliers`, and a section of `probe
//! audit report`): each member's latest snapshot or view from the store, grouped, with the
//! modal configuration computed by `probe_diff::fleet`.

use std::collections::BTreeMap;

use probe_diff::{Fingerprinted, Member};
use probe_model::{FleetView, GroupOutliers, OutliersLine, RecordType, SCHEMA_VERSION};
use probe_store::{Fingerprint, SnapshotStore, StoredAudit};

use crate::errors::Result;
use crate::inventory::InventoryHost;
use crate::render::{self, doc::Doc, doc::Tone};

/// A host as the report and the outliers know it.
#[derive(Debug, Clone)]
pub struct FleetMember {
    pub name: String,
    pub target: String,
    pub groups: Vec<String>,
    pub tags: Vec<String>,
}

/// Inventory hosts as members; `by_name` when the audit connects by inventory name (a
/// generated ssh_config for jump hosts).
pub fn members_of(hosts: &[InventoryHost], by_name: bool) -> Vec<FleetMember> {
    hosts
        .iter()
        .map(|host| FleetMember {
            name: host.name.clone(),
            target: if by_name {
                host.name.clone()
            } else {
                host.target()
            },
            groups: host.groups.clone(),
            tags: host.tags.clone(),
        })
        .collect()
}

/// One line of `--jsonl` output per group.
pub fn outliers_line(group: &GroupOutliers) -> OutliersLine {
    OutliersLine {
        schema_version: SCHEMA_VERSION,
        record_type: RecordType::Outliers,
        group: group.clone(),
    }
}

/// The newest snapshot of every member, as the fleet comparison reads it: this run's, else the
/// one its last audit stored, else the newest stored under its target. The stored ones are
/// read in one `get_many_views` per kind (the store reads a section that hosts share once, and
/// parses nothing a view leaves out).
fn latest_views(
    store: &dyn SnapshotStore,
    members: &[FleetMember],
    fresh: &BTreeMap<String, FleetView>,
    audits: &BTreeMap<String, StoredAudit>,
) -> Result<BTreeMap<String, FleetView>> {
    newest_of(
        store,
        members,
        audits,
        |member| fresh.get(&member.name).cloned(),
        |ids| Ok(store.get_many_views(ids)?),
    )
}

/// Each member's newest snapshot, as `fresh` (this run's) or `read` (a batch of stored ids,
/// `None` where one is gone) gives it: this run's, else the snapshot its stored audit record
/// names, else the newest stored for its target (also where the record's snapshot is gone).
fn newest_of<T>(
    store: &dyn SnapshotStore,
    members: &[FleetMember],
    audits: &BTreeMap<String, StoredAudit>,
    fresh: impl Fn(&FleetMember) -> Option<T>,
    mut read: impl FnMut(&[String]) -> Result<Vec<Option<T>>>,
) -> Result<BTreeMap<String, T>> {
    let mut out = BTreeMap::new();
    let mut by_record: Vec<(&FleetMember, String)> = Vec::new();
    let mut by_target: Vec<&FleetMember> = Vec::new();
    for member in members {
        if let Some(value) = fresh(member) {
            out.insert(member.name.clone(), value);
            continue;
        }
        match audits
            .get(&member.name)
            .and_then(|audit| audit.record.snapshot_id.clone())
        {
            Some(id) => by_record.push((member, id)),
            None => by_target.push(member),
        }
    }
    let ids: Vec<String> = by_record.iter().map(|(_, id)| id.clone()).collect();
    for ((member, _), value) in by_record.iter().zip(read(&ids)?) {
        match value {
            Some(value) => {
                out.insert(member.name.clone(), value);
            }
            None => by_target.push(member),
        }
    }
    let mut newest: Vec<(&FleetMember, String)> = Vec::new();
    for member in by_target {
        if let Some(meta) = store.newest(&member.target)? {
            newest.push((member, meta.id));
        }
    }
    let ids: Vec<String> = newest.iter().map(|(_, id)| id.clone()).collect();
    for ((member, _), value) in newest.iter().zip(read(&ids)?) {
        if let Some(value) = value {
            out.insert(member.name.clone(), value);
        }
    }
    Ok(out)
}

/// Where a member's newest snapshot is: this run's view, or a stored snapshot.
#[derive(Debug, Clone)]
enum Latest<'a> {
    Fresh(&'a FleetView),
    Stored(String),
}

/// A group member with a newest snapshot: its name, where that snapshot is, its fingerprint.
type Present<'a> = (&'a str, &'a (Latest<'a>, Fingerprint));

/// The newest snapshot of every member (as [`latest_views`] chooses it) with its configuration
/// fingerprint: the stored ones read as fingerprints only, in one `fingerprints` per kind.
fn latest_fingerprints<'a>(
    store: &dyn SnapshotStore,
    members: &[FleetMember],
    fresh: &'a BTreeMap<String, FleetView>,
    audits: &BTreeMap<String, StoredAudit>,
) -> Result<BTreeMap<String, (Latest<'a>, Fingerprint)>> {
    newest_of(
        store,
        members,
        audits,
        |member| {
            fresh
                .get(&member.name)
                .map(|view| (Latest::Fresh(view), Fingerprint::of(view)))
        },
        |ids| {
            Ok(store
                .fingerprints(ids)?
                .into_iter()
                .zip(ids)
                .map(|(print, id)| print.map(|print| (Latest::Stored(id.clone()), print)))
                .collect())
        },
    )
}

/// The groups to compare: every inventory group and tag (`tag:NAME`), only `only_groups` when
/// given; members in inventory order.
fn groups_of<'a>(
    members: &'a [FleetMember],
    only_groups: &[String],
) -> BTreeMap<String, Vec<&'a FleetMember>> {
    let mut groups: BTreeMap<String, Vec<&FleetMember>> = BTreeMap::new();
    for member in members {
        for group in &member.groups {
            if only_groups.is_empty() || only_groups.contains(group) {
                groups.entry(group.clone()).or_default().push(member);
            }
        }
        if only_groups.is_empty() {
            for tag in &member.tags {
                groups.entry(format!("tag:{tag}")).or_default().push(member);
            }
        }
    }
    groups
}

/// Each host's last stored audit record.
fn last_audits_by_host(store: &dyn SnapshotStore) -> Result<BTreeMap<String, StoredAudit>> {
    Ok(store
        .last_audits()?
        .into_iter()
        .map(|audit| (audit.record.host.clone(), audit))
        .collect())
}

/// Outliers of every inventory group and tag (`tag:NAME`) with at least two hosts that have a
/// snapshot; only `only_groups` when given. Members are compared by their configuration
/// fingerprints first: only the members whose comparison is not shared with another's
/// (`probe_diff::outliers_by_fingerprint`) are read (`get_many_views`, group by group) and
/// compared, the same answer as [`group_outliers_by_views`].
pub fn group_outliers(
    store: &dyn SnapshotStore,
    members: &[FleetMember],
    fresh: &BTreeMap<String, FleetView>,
    only_groups: &[String],
) -> Result<Vec<GroupOutliers>> {
    let audits = last_audits_by_host(store)?;
    let latest = latest_fingerprints(store, members, fresh, &audits)?;
    let groups: Vec<(String, Vec<Present<'_>>)> = groups_of(members, only_groups)
        .into_iter()
        .map(|(group, hosts)| {
            let present = (hosts.iter())
                .filter_map(|m| latest.get(&m.name).map(|l| (m.name.as_str(), l)))
                .collect();
            (group, present)
        })
        .filter(|(_, present): &(String, Vec<_>)| present.len() >= 2)
        .collect();
    let mut reports = Vec::new();
    for (group, present) in &groups {
        let fingerprinted: Vec<Fingerprinted<'_>> = (present.iter())
            .map(|(host, (where_, print))| Fingerprinted {
                host,
                hash: print.hash.as_ref().map(|hash| hash.as_slice()),
                ids: &print.ids,
                view: match where_ {
                    Latest::Fresh(view) => Some(*view),
                    Latest::Stored(_) => None,
                },
            })
            .collect();
        let mut failed = None;
        let report = {
            let mut read = |wanted: &[usize]| -> Option<Vec<FleetView>> {
                read_members(store, present, wanted)
                    .map_err(|error| failed = Some(error))
                    .ok()?
            };
            probe_diff::outliers_by_fingerprint(group, &fingerprinted, &mut read)
        };
        match (report, failed) {
            (_, Some(error)) => return Err(error),
            (Some(report), None) => reports.push(report),
            // A snapshot pruned between the two reads: every member read whole.
            (None, None) => return group_outliers_by_views(store, members, fresh, only_groups),
        }
    }
    Ok(reports)
}

/// The views of group members `wanted` (by index in `present`), stored ones in one
/// `get_many_views`; `None` where one is gone.
fn read_members(
    store: &dyn SnapshotStore,
    present: &[Present<'_>],
    wanted: &[usize],
) -> Result<Option<Vec<FleetView>>> {
    let ids: Vec<String> = (wanted.iter())
        .filter_map(|&index| match &present.get(index)?.1.0 {
            Latest::Stored(id) => Some(id.clone()),
            Latest::Fresh(_) => None,
        })
        .collect();
    let mut stored = store.get_many_views(&ids)?.into_iter();
    Ok(wanted
        .iter()
        .map(|&index| match &present.get(index)?.1.0 {
            Latest::Fresh(view) => Some((*view).clone()),
            Latest::Stored(_) => stored.next().flatten(),
        })
        .collect())
}

/// [`group_outliers`] with every member's view read and compared: the answer the fingerprints
/// must give (tests hold them to it), and the way when a snapshot goes between two reads.
pub fn group_outliers_by_views(
    store: &dyn SnapshotStore,
    members: &[FleetMember],
    fresh: &BTreeMap<String, FleetView>,
    only_groups: &[String],
) -> Result<Vec<GroupOutliers>> {
    let audits = last_audits_by_host(store)?;
    let views = latest_views(store, members, fresh, &audits)?;
    let mut reports = Vec::new();
    for (group, hosts) in groups_of(members, only_groups) {
        let group_members: Vec<Member<'_>> = hosts
            .iter()
            .filter_map(|member| {
                views.get(&member.name).map(|view| Member {
                    host: &member.name,
                    view,
                })
            })
            .collect();
        if group_members.len() >= 2 {
            reports.push(probe_diff::outliers(&group, &group_members));
        }
    }
    Ok(reports)
}

/// The outliers section of a report.
pub fn outliers_doc(groups: &[GroupOutliers]) -> Doc {
    let mut doc = Doc::default();
    doc.heading(2, "Hosts that differ from their group");
    if groups.is_empty() {
        doc.line(
            Tone::Dim,
            "no group or tag has two hosts with stored snapshots",
        );
    }
    for group in groups {
        doc.heading(3, group_heading(group));
        let mut items: Vec<(u8, Tone, String)> = group
            .baseline
            .iter()
            .map(|line| (0, Tone::Dim, line.clone()))
            .collect();
        for host in &group.outliers {
            items.push((
                0,
                Tone::Warn,
                format!(
                    "{}: {} difference{}",
                    host.host,
                    host.changes.len(),
                    if host.changes.len() == 1 { "" } else { "s" }
                ),
            ));
            for change in &host.changes {
                items.push((
                    1,
                    Tone::Plain,
                    format!("{} {}", impact_word(change.impact), outlier_line(change)),
                ));
            }
        }
        doc.items(items);
    }
    doc
}

pub(super) fn group_heading(group: &GroupOutliers) -> String {
    format!(
        "{}: {} hosts, {} differ (modal configuration as on {})",
        group.group,
        group.hosts,
        group.outliers.len(),
        group.reference.as_deref().unwrap_or("-")
    )
}

/// One difference of an outlier, naming which value is the host's and which the group's:
/// `KEY: this host X, the group Y (group -> this host: EXPLANATION)`. The change is read from
/// the group's modal value (`before`) to the host's (`after`), and so is its explanation.
pub fn outlier_line(change: &probe_model::Change) -> String {
    let value = |typed: Option<&serde_json::Value>, written: Option<&String>| {
        typed
            .map(render::format_value)
            .or_else(|| written.cloned())
            .unwrap_or_else(|| "(unset)".into())
    };
    let host = match change.kind {
        probe_model::ChangeKind::Removed => "(unset)".to_string(),
        _ => value(change.after.as_ref(), change.after_written.as_ref()),
    };
    let group = match change.kind {
        probe_model::ChangeKind::Added => "(unset)".to_string(),
        _ => value(change.before.as_ref(), change.before_written.as_ref()),
    };
    let mut line = format!("{}: this host {host}, the group {group}", change.key);
    if !change.explanation.is_empty() {
        line.push_str(&format!(" (group -> this host: {})", change.explanation));
    }
    line
}

pub(super) fn impact_word(impact: probe_model::Impact) -> &'static str {
    match impact {
        probe_model::Impact::High => "HIGH",
        probe_model::Impact::Medium => "MED",
        probe_model::Impact::Low => "LOW",
        probe_model::Impact::None => "-",
    }
}

#[cfg(test)]
mod tests;
