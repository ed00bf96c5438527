//! `--format html`: one self-contained page per command (`host`, `diff`, `timeline`,
//! `audit report`). The page embeds the very document `--format json` writes (so the page is
//! also the evidence), draws the timeline and the metrics as inline SVG, and shows the same
//! sections as the text report, built from the same [`Doc`](super::doc::Doc). No script, no
//! external resource, a Content-Security-Policy that allows neither; every remote string is
//! escaped as text ([`escape`]).
//!
//! Files: [`page`] (skeleton, policy, style sheet), [`escape`], [`doc`] (a `Doc` in HTML),
//! [`timeline`] and [`charts`] (the SVG), [`launches`] (side by side), [`sections`] (what each
//! page holds), [`fleet`] (the audit report's page).

mod charts;
mod doc;
pub mod escape;
pub mod fleet;
mod launches;
pub mod page;
mod sections;
mod timeline;

use probe_model::{HostReport, SnapshotDiff, Timeline};

pub use fleet::{FleetOutliers, FleetPage, FleetRow, fleet_page};

/// The page of `probe host` (one section per host).
pub fn host_page(reports: &[HostReport]) -> String {
    let title = match reports {
        [one] => format!(
            "probe report: {}",
            one.host.hostname.as_deref().unwrap_or(&one.target)
        ),
        many => format!("probe report: {} hosts", many.len()),
    };
    let body: String = reports.iter().map(sections::host_section).collect();
    page::render(&page::Page {
        title: &title,
        kind: "host-report",
        json: escape::script_json(reports),
        body,
    })
}

/// The page of `probe diff`.
pub fn diff_page(diff: &SnapshotDiff) -> String {
    let title = format!(
        "probe diff: {} ({}) -> {} ({})",
        diff.before.host, diff.before.id, diff.after.host, diff.after.id
    );
    page::render(&page::Page {
        title: &title,
        kind: "snapshot-diff",
        json: escape::script_json(diff),
        body: sections::diff_section(diff),
    })
}

/// The page of `probe timeline`.
pub fn timeline_page(timeline: &Timeline) -> String {
    let title = format!("probe timeline: {}", timeline.host);
    page::render(&page::Page {
        title: &title,
        kind: "timeline",
        json: escape::script_json(timeline),
        body: sections::timeline_section(timeline),
    })
}

#[cfg(test)]
mod tests;
