//! Rendering: every command builds a [`doc::Doc`] (or a serde value for JSON) from model values;
//! [`human`], [`markdown`] and [`json`] turn it into text. Nothing here does I/O.

mod audit;
mod changes;
mod containers;
mod diff;
pub mod doc;
pub mod hardware;
mod host;
pub mod html;
pub mod human;
pub mod json;
mod launch;
pub mod markdown;
mod metrics;
mod runs;
pub mod server;
pub mod sh;
mod snapshots;
mod timeline;
mod verdict;

use probe_model::UnixTime;

use crate::args::Format;
use crate::output::Printer;
use doc::Doc;

pub use audit::audit_doc;
pub use changes::change_summary;
pub use diff::{rollback_doc, snapshot_diff_doc};
pub use host::host_report_doc;
pub use launch::launches_doc;
pub use snapshots::snapshots_doc;
pub use timeline::timeline_doc;

/// Renders a document in the printer's format (JSON callers use [`json`] instead).
pub fn text(doc: &Doc, printer: &Printer) -> String {
    match printer.format {
        Format::Markdown => markdown::render(doc),
        Format::Human | Format::Json | Format::Html | Format::Sh => {
            human::render(doc, printer.styles())
        }
    }
}

/// `2026-11-20 10:00:00 UTC`; `?` for an impossible time.
pub fn format_time(time: UnixTime) -> String {
    jiff::Timestamp::from_second(time)
        .map(|ts| ts.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A JSON value as an operator would write it.
pub fn format_value(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "(unset)".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
