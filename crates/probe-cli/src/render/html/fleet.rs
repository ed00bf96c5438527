//! The page of `probe audit report`: one row per host with its status and drift, then the
//! outliers of each group; each host's name links to its section (its differences from its
//! group, or its row).

use std::fmt::Write;

use super::{doc, escape, page};
use crate::render::doc::Doc;

/// One host's row.
#[derive(Debug, Clone)]
pub struct FleetRow {
    pub host: String,
    /// `ok`, `changed`, `unreachable`, ..., `never audited`.
    pub status: String,
    pub shard: String,
    pub audited: String,
    pub last_snapshot: String,
    /// What drifted, or the failure.
    pub drift: String,
}

/// One group's outliers, each host with its difference lines (already worded).
#[derive(Debug, Clone)]
pub struct FleetOutliers {
    pub heading: String,
    /// The reference's configuration, one line each.
    pub baseline: Vec<String>,
    pub hosts: Vec<(String, Vec<String>)>,
}

/// What the fleet page is drawn from.
pub struct FleetPage<'a> {
    pub title: &'a str,
    /// The header fields (hosts by status, shards) as the text report has them.
    pub header: Doc,
    pub rows: &'a [FleetRow],
    /// `None`: the outliers section was not asked for.
    pub outliers: Option<&'a [FleetOutliers]>,
    /// The `--format json` document, already written by [`escape::script_json`].
    pub json: String,
}

/// The whole page.
pub fn fleet_page(fleet: FleetPage<'_>) -> String {
    let with_differences: Vec<&str> = fleet
        .outliers
        .unwrap_or_default()
        .iter()
        .flat_map(|group| group.hosts.iter().map(|(host, _)| host.as_str()))
        .collect();
    let mut body = String::from("<section class=\"report\" id=\"fleet\">\n");
    body.push_str(&doc::render(&fleet.header, 0));
    body.push_str(
        "<h2>Hosts</h2>\n<div class=\"scroll\"><table class=\"fleet\"><thead><tr><th>host</th>\
         <th>status</th><th>shard</th><th>audited</th><th>last snapshot</th><th>drift</th>\
         </tr></thead><tbody>",
    );
    for row in fleet.rows {
        let tone = match row.status.as_str() {
            "ok" => "good",
            "changed" => "warn",
            _ => "bad",
        };
        let name = if with_differences.contains(&row.host.as_str()) {
            format!(
                "<a href=\"#{}\">{}</a>",
                escape::id("outliers-", &row.host),
                escape::text(&row.host)
            )
        } else {
            escape::text(&row.host)
        };
        let _ = write!(
            body,
            "<tr id=\"{}\"><td>{name}</td><td class=\"{tone}\">{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            escape::id("host-", &row.host),
            escape::text(&row.status),
            escape::text(&row.shard),
            escape::text(&row.audited),
            escape::text(&row.last_snapshot),
            escape::text(&row.drift)
        );
    }
    body.push_str("</tbody></table></div>\n");
    if let Some(groups) = fleet.outliers {
        outliers(&mut body, groups);
    }
    body.push_str("</section>\n");
    page::render(&page::Page {
        title: fleet.title,
        kind: "fleet-report",
        json: fleet.json,
        body,
    })
}

fn outliers(body: &mut String, groups: &[FleetOutliers]) {
    body.push_str("<h2>Hosts that differ from their group</h2>\n");
    if groups.is_empty() {
        body.push_str("<p class=\"dim\">no group or tag has two hosts with stored snapshots</p>\n");
    }
    // A host in several groups: its first section carries the id the table links to.
    let mut anchored: Vec<&str> = Vec::new();
    for group in groups {
        let _ = writeln!(body, "<h3>{}</h3>", escape::text(&group.heading));
        if !group.baseline.is_empty() {
            body.push_str("<ul class=\"items\">");
            for line in &group.baseline {
                let _ = write!(body, "<li class=\"i0 dim\">{}</li>", escape::text(line));
            }
            body.push_str("</ul>\n");
        }
        for (host, lines) in &group.hosts {
            let id = if anchored.contains(&host.as_str()) {
                String::new()
            } else {
                anchored.push(host);
                format!(" id=\"{}\"", escape::id("outliers-", host))
            };
            let _ = write!(
                body,
                "<div class=\"outlier\"{id}><p class=\"warn\"><a href=\"#{}\">{}</a>: {} \
                 difference{}</p><ul class=\"items\">",
                escape::id("host-", host),
                escape::text(host),
                lines.len(),
                if lines.len() == 1 { "" } else { "s" }
            );
            for line in lines {
                let _ = write!(body, "<li class=\"i1\">{}</li>", escape::text(line));
            }
            body.push_str("</ul></div>\n");
        }
    }
}
