//! SQLite writes: a snapshot's slots planned against its host's newest snapshot and filed in
//! one transaction, counted sections, version sets, and deletions with their garbage.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use probe_model::Snapshot;
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::hosts::identify_host;
use super::read::{content_error, read_stored};
use crate::content::{self, Plan, Planned, Previous, Section, Slot};
use crate::identity::HostKey;

/// What `put` writes of a snapshot besides its slots: the indexed engines (comma-separated)
/// and versions (as JSON text, and as a map).
pub(super) struct Indexed<'a> {
    pub(super) engines: String,
    pub(super) versions_text: String,
    pub(super) versions: &'a BTreeMap<String, String>,
    /// The configuration fingerprint, as stored (empty: none).
    pub(super) fingerprint: Vec<u8>,
}

/// `put` in `transaction` (which holds the write lock): files the host, replaces a snapshot
/// of the same id, stores `slots` as `planned` (planned again when a section it uses went
/// meanwhile) and the snapshot's row. Gives the host id.
pub(super) fn put_in(
    transaction: &Transaction<'_>,
    snapshot: &Snapshot,
    slots: &[Section],
    planned: &Plan,
    indexed: &Indexed<'_>,
) -> rusqlite::Result<i64> {
    let host_id = identify_host(transaction, &HostKey::of(snapshot), true)?.unwrap_or_default();
    // A snapshot with the same id is replaced: its row goes, its sections are kept only where
    // another snapshot (or this new one) still needs them.
    let replaced = delete_snapshot(transaction, &snapshot.id)?;
    // Planned outside the lock: the sections it uses must still be there.
    let plan = if all_exist(transaction, &planned.uses())? {
        planned.clone()
    } else {
        plan_put(transaction, snapshot, slots)?
    };
    let stored_slots = file_new_sections(transaction, &plan)?;
    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for id in stored_slots.iter().filter_map(Slot::section) {
        *counts.entry(id).or_default() += 1;
    }
    for id in &replaced {
        *counts.entry(*id).or_default() -= 1;
    }
    adjust_refs(transaction, &counts)?;
    let version_set = version_set(transaction, &indexed.versions_text, indexed.versions)?;
    let seq: i64 = transaction.query_row(
        "SELECT coalesce(max(seq), 0) + 1 FROM snapshots",
        [],
        |row| row.get(0),
    )?;
    transaction.execute(
        "INSERT INTO snapshots
           (id, seq, host_id, target, address, hostname, machine_id, collected_at,
            schema_version, engines, version_set, slots, own, fingerprint)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            snapshot.id,
            seq,
            host_id,
            snapshot.target,
            snapshot.address,
            snapshot.host.hostname,
            snapshot.host.machine_id,
            snapshot.collected_at,
            snapshot.schema_version,
            indexed.engines,
            version_set,
            content::encode_slots(&stored_slots),
            plan.frame,
            indexed.fingerprint,
        ],
    )?;
    collect_garbage(transaction, &replaced)?;
    Ok(host_id)
}

/// Deletes snapshots `ids` in `transaction`, with the sections nothing needs any more.
pub(super) fn delete_in(transaction: &Transaction<'_>, ids: &[&str]) -> rusqlite::Result<()> {
    let mut sections = Vec::new();
    for id in ids {
        sections.extend(delete_snapshot(transaction, id)?);
    }
    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for id in &sections {
        *counts.entry(*id).or_default() -= 1;
    }
    adjust_refs(transaction, &counts)?;
    collect_garbage(transaction, &sections)
}

/// Plans how to store `slots` of `snapshot`, against its host's newest stored snapshot.
pub(super) fn plan_put(
    connection: &Connection,
    snapshot: &Snapshot,
    slots: &[Section],
) -> rusqlite::Result<Plan> {
    let mut find = connection.prepare_cached("SELECT id FROM sections WHERE hash = ?1")?;
    let mut known = HashMap::new();
    for slot in slots {
        if let Some(id) = find
            .query_row(params![slot.hash.as_slice()], |row| row.get::<_, i64>(0))
            .optional()?
        {
            known.insert(slot.hash, id);
        }
    }
    let previous = match identify_host(connection, &HostKey::of(snapshot), false)? {
        Some(host_id) => {
            let newest: Option<String> = connection
                .query_row(
                    "SELECT id FROM snapshots WHERE host_id = ?1
                     ORDER BY collected_at DESC, seq DESC LIMIT 1",
                    params![host_id],
                    |row| row.get(0),
                )
                .optional()?;
            match newest {
                Some(id) => read_stored(connection, &id, &BTreeSet::new())?,
                None => None,
            }
        }
        None => None,
    };
    // A previous snapshot that cannot be read is no base: the new one is stored whole.
    let previous: Option<Previous> = previous.and_then(|stored| stored.into_previous().ok());
    content::plan(slots, &known, previous.as_ref()).map_err(content_error)
}

/// Whether every section of `ids` is stored.
fn all_exist(connection: &Connection, ids: &[i64]) -> rusqlite::Result<bool> {
    let mut statement = connection.prepare_cached("SELECT 1 FROM sections WHERE id = ?1")?;
    for id in ids {
        if !statement.exists(params![id])? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Stores the new sections of `plan` (or finds them, stored meanwhile) and gives the slots.
fn file_new_sections(connection: &Connection, plan: &Plan) -> rusqlite::Result<Vec<Slot>> {
    let mut find = connection.prepare_cached("SELECT id FROM sections WHERE hash = ?1")?;
    let mut add = connection
        .prepare_cached("INSERT INTO sections (hash, size, body, refs) VALUES (?1, ?2, ?3, 0)")?;
    let mut ids = Vec::new();
    for slot in &plan.slots {
        let Planned::New { section, body } = slot else {
            continue;
        };
        let hash = section.hash.as_slice();
        let id = match find.query_row(params![hash], |row| row.get(0)).optional()? {
            Some(id) => id,
            None => {
                add.execute(params![hash, section.bytes.len() as i64, body])?;
                connection.last_insert_rowid()
            }
        };
        ids.push(id);
    }
    plan.slots_with(&ids).map_err(content_error)
}

/// Adds `counts` to the reference counts of their sections, in id order.
fn adjust_refs(connection: &Connection, counts: &BTreeMap<i64, i64>) -> rusqlite::Result<()> {
    let mut update =
        connection.prepare_cached("UPDATE sections SET refs = refs + ?2 WHERE id = ?1")?;
    for (id, count) in counts {
        if *count != 0 {
            update.execute(params![id, count])?;
        }
    }
    Ok(())
}

/// The id of the set of indexed versions `text` (its JSON), recorded when new.
fn version_set(
    connection: &Connection,
    text: &str,
    versions: &BTreeMap<String, String>,
) -> rusqlite::Result<i64> {
    if let Some(id) = connection
        .prepare_cached("SELECT id FROM version_sets WHERE versions = ?1")?
        .query_row(params![text], |row| row.get(0))
        .optional()?
    {
        return Ok(id);
    }
    connection.execute(
        "INSERT INTO version_sets (versions) VALUES (?1)",
        params![text],
    )?;
    let id = connection.last_insert_rowid();
    for (package, version) in versions {
        connection.execute(
            "INSERT INTO set_versions (set_id, package, version) VALUES (?1, ?2, ?3)",
            params![id, package, version],
        )?;
    }
    Ok(id)
}

/// Deletes snapshot `id` and returns the sections its slots needed (once per slot), whose
/// counts the caller lowers before [`collect_garbage`].
fn delete_snapshot(connection: &Connection, id: &str) -> rusqlite::Result<Vec<i64>> {
    let Some(slots) = connection
        .query_row(
            "SELECT slots FROM snapshots WHERE id = ?1",
            params![id],
            |row| row.get::<_, Vec<u8>>(0),
        )
        .optional()?
    else {
        return Ok(Vec::new());
    };
    let slots = content::decode_slots(&slots).map_err(content_error)?;
    connection.execute("DELETE FROM snapshots WHERE id = ?1", params![id])?;
    Ok(slots.iter().filter_map(Slot::section).collect())
}

/// Removes those of `candidates` that no slot needs any more.
fn collect_garbage(connection: &Connection, candidates: &[i64]) -> rusqlite::Result<()> {
    let candidates: BTreeSet<i64> = candidates.iter().copied().collect();
    let mut remove =
        connection.prepare_cached("DELETE FROM sections WHERE id = ?1 AND refs <= 0")?;
    for id in candidates {
        remove.execute(params![id])?;
    }
    Ok(())
}
