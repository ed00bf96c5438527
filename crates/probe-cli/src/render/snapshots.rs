//! The document of `probe snapshots`: the stored snapshots, newest first.

use probe_store::SnapshotMeta;

use super::doc::{Doc, Tone};
use super::format_time;

/// `probe snapshots list`.
pub fn snapshots_doc(metas: &[SnapshotMeta]) -> Doc {
    let mut doc = Doc::default();
    if metas.is_empty() {
        doc.line(Tone::Dim, "no snapshots stored");
        return doc;
    }
    let rows = metas
        .iter()
        .map(|meta| {
            let versions = meta
                .versions
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ");
            (
                Tone::Plain,
                vec![
                    meta.id.clone(),
                    meta.hostname.clone().unwrap_or_else(|| "?".into()),
                    meta.target.clone(),
                    format_time(meta.collected_at),
                    meta.engines.join(","),
                    versions,
                ],
            )
        })
        .collect();
    doc.table(
        [
            "id",
            "hostname",
            "target",
            "collected",
            "engines",
            "versions",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    );
    doc
}
