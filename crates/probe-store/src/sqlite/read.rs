//! SQLite reads: a snapshot's slots with the sections they need, and rows of snapshot metas.

use std::collections::{BTreeSet, HashMap};

use rusqlite::{Connection, OptionalExtension, params};

use crate::SnapshotMeta;
use crate::content::{self, Slot, Stored};

/// Snapshot `id` as stored, with the sections it needs but `held`.
pub(super) fn read_stored(
    connection: &Connection,
    id: &str,
    held: &BTreeSet<i64>,
) -> rusqlite::Result<Option<Stored>> {
    let Some((slots, frame)) = connection
        .query_row(
            "SELECT slots, own FROM snapshots WHERE id = ?1",
            params![id],
            |row| Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, Option<Vec<u8>>>(1)?)),
        )
        .optional()?
    else {
        return Ok(None);
    };
    let slots = content::decode_slots(&slots).map_err(content_error)?;
    let mut statement =
        connection.prepare_cached("SELECT hash, size, body FROM sections WHERE id = ?1")?;
    let mut sections = HashMap::new();
    for section in slots.iter().filter_map(Slot::section) {
        if held.contains(&section) || sections.contains_key(&section) {
            continue;
        }
        let stored = statement
            .query_row(params![section], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?))
            })
            .optional()?
            .ok_or_else(|| {
                content_error(crate::content::ContentError::Damaged(format!(
                    "snapshot {id} needs section {section}, which is missing"
                )))
            })?;
        sections.insert(section, stored);
    }
    Ok(Some(Stored {
        slots,
        frame: frame.unwrap_or_default(),
        sections,
    }))
}

/// Snapshot metas, with their indexed versions, of the rows `tail` (the SQL after `FROM`)
/// selects.
pub(super) fn query_meta(
    connection: &Connection,
    tail: &str,
    parameters: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<SnapshotMeta>> {
    let sql = format!(
        "SELECT s.id, s.host_id, s.hostname, s.machine_id, s.target, s.address, s.collected_at,
                s.schema_version, s.engines, coalesce(v.versions, '{{}}')
         FROM snapshots s LEFT JOIN version_sets v ON v.id = s.version_set {tail}"
    );
    let mut statement = connection.prepare(&sql)?;
    let rows = statement.query_map(parameters, |row| {
        let engines: String = row.get(8)?;
        let versions: String = row.get(9)?;
        Ok(SnapshotMeta {
            id: row.get(0)?,
            host_id: row.get(1)?,
            hostname: row.get(2)?,
            machine_id: row.get(3)?,
            target: row.get(4)?,
            address: row.get(5)?,
            collected_at: row.get(6)?,
            schema_version: row.get(7)?,
            engines: engines
                .split(',')
                .filter(|engine| !engine.is_empty())
                .map(str::to_string)
                .collect(),
            versions: serde_json::from_str(&versions).unwrap_or_default(),
        })
    })?;
    rows.collect()
}

/// A content error (a damaged slot list, a missing section) as a SQLite error, so that it
/// ends a transaction like one.
pub(super) fn content_error(cause: crate::content::ContentError) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(cause))
}

/// The stored fingerprint columns of `ids` ([`crate::fingerprint::Column`]).
pub(super) fn fingerprint_columns(
    connection: &Connection,
    ids: &[String],
) -> rusqlite::Result<Vec<crate::fingerprint::Column>> {
    let mut statement =
        connection.prepare_cached("SELECT fingerprint FROM snapshots WHERE id = ?1")?;
    ids.iter()
        .map(|id| {
            statement
                .query_row(params![id], |row| row.get::<_, Option<Vec<u8>>>(0))
                .optional()
        })
        .collect()
}
