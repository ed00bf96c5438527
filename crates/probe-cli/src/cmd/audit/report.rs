//! The fleet's last audit, read from the store across every runner and shard (`probe audit
//! report`), with the hosts that differ from their group as a section ([`super::outliers`]).

use std::collections::BTreeMap;

use probe_model::{
    FleetHost, FleetReport, FleetStatus, RecordType, SCHEMA_VERSION, UnixTime, exit_codes,
};
use probe_store::{SnapshotStore, StoredAudit};

use super::Ctx;
use super::outliers::{
    FleetMember, group_heading, group_outliers, impact_word, members_of, outlier_line, outliers_doc,
};
use crate::args::AuditReportArgs;
use crate::errors::{ExpectedError, Result};
use crate::inventory;
use crate::render::{self, doc::Doc, doc::Tone, html};

/// As the terminal and the page print a host's status (`never audited`, `host key refused`).
fn status_words(status: FleetStatus) -> String {
    status.as_str().replace('_', " ")
}

/// `probe audit report`.
pub fn run(ctx: &Ctx, args: AuditReportArgs) -> Result<u8> {
    let store = ctx.open_store()?;
    let now = jiff::Timestamp::now().as_second();
    let audits: BTreeMap<String, StoredAudit> = store
        .last_audits()?
        .into_iter()
        .map(|audit| (audit.record.host.clone(), audit))
        .collect();
    let members: Vec<FleetMember> = match &args.inventory {
        Some(path) => {
            let inventory =
                inventory::load(path).map_err(|err| ExpectedError::Config(err.to_string()))?;
            members_of(
                &inventory::select(&inventory.hosts, &args.groups, &args.tags),
                false,
            )
        }
        None => audits
            .values()
            .map(|audit| FleetMember {
                name: audit.record.host.clone(),
                target: audit.record.target.clone(),
                groups: audit.record.groups.clone(),
                tags: audit.record.tags.clone(),
            })
            .collect(),
    };
    let mut hosts = Vec::new();
    for member in &members {
        hosts.push(fleet_host(&*store, member, audits.get(&member.name), now)?);
    }
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    for host in &hosts {
        *statuses
            .entry(host.status.as_str().to_string())
            .or_default() += 1;
    }
    let mut shards: Vec<String> = hosts.iter().filter_map(|h| h.shard.clone()).collect();
    shards.sort();
    shards.dedup();
    let outliers = if args.no_outliers {
        Vec::new()
    } else {
        group_outliers(&*store, &members, &BTreeMap::new(), &args.groups)?
    };
    let report = FleetReport {
        schema_version: SCHEMA_VERSION,
        record_type: RecordType::FleetReport,
        store: store.location(),
        generated_at: now,
        hosts,
        statuses,
        shards,
        outliers,
    };
    ctx.emit_report(
        &report,
        args.output.as_deref(),
        || fleet_page(&report, !args.no_outliers),
        |printer| render::text(&report_doc(&report, !args.no_outliers), printer),
    )?;
    Ok(exit_codes::OK)
}

/// The fleet report as a page (`--format html`): the same rows as the table, each host's name
/// linked to its differences from its group.
fn fleet_page(report: &FleetReport, with_outliers: bool) -> String {
    let rows: Vec<html::FleetRow> = report
        .hosts
        .iter()
        .map(|host| html::FleetRow {
            host: host.host.clone(),
            status: status_words(host.status),
            shard: host.shard.clone().unwrap_or_else(|| "-".into()),
            audited: host.audited_at.map_or("-".into(), |at| {
                format!("{} ago", age(report.generated_at - at))
            }),
            last_snapshot: host
                .snapshot_age_s
                .map_or("none".into(), |seconds| format!("{} ago", age(seconds))),
            drift: drift_text(host),
        })
        .collect();
    let groups: Vec<html::FleetOutliers> = report
        .outliers
        .iter()
        .map(|group| html::FleetOutliers {
            heading: group_heading(group),
            baseline: group.baseline.clone(),
            hosts: group
                .outliers
                .iter()
                .map(|host| {
                    let lines = host
                        .changes
                        .iter()
                        .map(|change| {
                            format!("{} {}", impact_word(change.impact), outlier_line(change))
                        })
                        .collect();
                    (host.host.clone(), lines)
                })
                .collect(),
        })
        .collect();
    let mut header = report_doc(report, false);
    // The table is drawn by the page itself, with links.
    header
        .blocks
        .retain(|block| !matches!(block, render::doc::Block::Table { .. }));
    let title = format!("probe fleet report: {}", report.store);
    html::fleet_page(html::FleetPage {
        title: &title,
        header,
        rows: &rows,
        outliers: with_outliers.then_some(groups.as_slice()),
        json: html::escape::script_json(report),
    })
}

/// A host's drift column: its failure, or its changes.
fn drift_text(host: &FleetHost) -> String {
    let lost = (!host.lost_sections.is_empty())
        .then(|| format!("lost to the connection: {}", host.lost_sections.join(", ")));
    let drift = match (&host.error, host.changes) {
        (Some(error), _) => Some(error.clone()),
        (None, 0) => None,
        (None, n) => Some(format!("{n} change(s): {}", host.top_changes.join("; "))),
    };
    lost.into_iter().chain(drift).collect::<Vec<_>>().join("; ")
}

fn fleet_host(
    store: &dyn SnapshotStore,
    member: &FleetMember,
    audit: Option<&StoredAudit>,
    now: UnixTime,
) -> Result<FleetHost> {
    let target = audit.map_or(member.target.clone(), |a| a.record.target.clone());
    let newest = store.newest(&target)?;
    Ok(FleetHost {
        host: member.name.clone(),
        target,
        status: audit.map_or(FleetStatus::NeverAudited, |a| {
            FleetStatus::from(a.record.status)
        }),
        shard: audit.and_then(|a| a.run.shard.clone()),
        runner: audit.map(|a| a.run.runner.clone()),
        audited_at: audit.map(|a| a.recorded_at),
        snapshot_id: newest.as_ref().map(|meta| meta.id.clone()),
        snapshot_at: newest.as_ref().map(|meta| meta.collected_at),
        snapshot_age_s: newest.as_ref().map(|meta| now - meta.collected_at),
        changes: audit.map_or(0, |a| a.record.changes),
        top_changes: audit.map_or_else(Vec::new, |a| a.record.top_changes.clone()),
        error: audit.and_then(|a| a.record.error.clone()),
        lost_sections: audit.map_or_else(Vec::new, |a| a.record.lost_sections.clone()),
        groups: member.groups.clone(),
    })
}

/// `42s`, `5m`, `3h`, `2d`.
fn age(seconds: i64) -> String {
    let seconds = seconds.max(0);
    match seconds {
        0..=119 => format!("{seconds}s"),
        120..=7199 => format!("{}m", seconds / 60),
        7200..=172_799 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}

fn report_doc(report: &FleetReport, with_outliers: bool) -> Doc {
    let mut doc = Doc::default();
    doc.heading(1, format!("probe fleet report: {}", report.store));
    let statuses: Vec<String> = report
        .statuses
        .iter()
        .map(|(status, count)| format!("{count} {}", status.replace('_', " ")))
        .collect();
    doc.fields(vec![
        (
            "hosts".into(),
            format!("{}: {}", report.hosts.len(), statuses.join(", ")),
        ),
        (
            "shards".into(),
            if report.shards.is_empty() {
                "not sharded".into()
            } else {
                report.shards.join(", ")
            },
        ),
    ]);
    let rows = report
        .hosts
        .iter()
        .map(|host| {
            let tone = match host.status {
                FleetStatus::Ok => Tone::Good,
                FleetStatus::Changed | FleetStatus::Partial => Tone::Warn,
                _ => Tone::Bad,
            };
            let drift = drift_text(host);
            (
                tone,
                vec![
                    host.host.clone(),
                    status_words(host.status),
                    host.shard.clone().unwrap_or_else(|| "-".into()),
                    host.audited_at.map_or("-".into(), |at| {
                        format!("{} ago", age(report.generated_at - at))
                    }),
                    host.snapshot_age_s
                        .map_or("none".into(), |seconds| format!("{} ago", age(seconds))),
                    drift,
                ],
            )
        })
        .collect();
    doc.table(
        [
            "host",
            "status",
            "shard",
            "audited",
            "last snapshot",
            "drift",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    );
    if with_outliers {
        doc.append(outliers_doc(&report.outliers));
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages() {
        for (seconds, expected) in [
            (-5, "0s"),
            (42, "42s"),
            (600, "10m"),
            (7200, "2h"),
            (3 * 86_400, "3d"),
        ] {
            assert_eq!(age(seconds), expected);
        }
    }
}
