//! PostgreSQL's table layout and its migrations: `MIGRATIONS[n]` brings the layout from
//! version n to n + 1 (the versions are [`crate::schema`]'s, SQLite's too), run once under an
//! advisory lock, with the walks over stored snapshots that a migration's SQL cannot do alone.

use std::collections::HashMap;
use std::time::Duration;

use deadpool_postgres::{GenericClient, Pool};
use tokio_postgres::Row;

use super::connect::{connection, pg_error};
use super::write::{WriteError, insert_section};
use crate::content::{self, Section, Slot};
use crate::schema::{SECTIONS_VERSION, SLOTS_VERSION, STORE_SCHEMA_VERSION};
use crate::{StoreError, from_json, to_json};

/// Key of the advisory lock migrations hold ("probe" in ASCII).
const MIGRATION_LOCK: i64 = 0x70_72_6f_62_65;

/// `MIGRATIONS[n]` brings the layout from version n to n + 1 (the same versions as SQLite's).
/// The `host_names.kind` constraint of the first migration, as written there (a test holds it
/// to [`crate::host_names::HostNameKind`]).
#[cfg(test)]
pub(crate) const HOST_NAME_KINDS_CHECK: &str =
    "CHECK (kind IN ('hostname', 'target', 'address', 'machine-id'))";

pub(crate) const MIGRATIONS: &[&str] = &[
    // 0 -> 1: hosts, their names, snapshots.
    "
    CREATE TABLE probe.hosts (
        id          bigserial PRIMARY KEY,
        machine_id  text UNIQUE,
        hostname    text,
        first_seen  timestamptz NOT NULL,
        last_seen   timestamptz NOT NULL
    );
    CREATE TABLE probe.host_names (
        host_id     bigint NOT NULL REFERENCES probe.hosts(id) ON DELETE CASCADE,
        name        text NOT NULL,
        kind        text NOT NULL
                    CHECK (kind IN ('hostname', 'target', 'address', 'machine-id')),
        last_seen   timestamptz NOT NULL,
        PRIMARY KEY (host_id, name, kind)
    );
    CREATE INDEX host_names_by_name ON probe.host_names (lower(name));
    CREATE TABLE probe.snapshots (
        id              text PRIMARY KEY,
        host_id         bigint NOT NULL REFERENCES probe.hosts(id),
        target          text NOT NULL,
        address         text,
        hostname        text,
        machine_id      text,
        collected_at    timestamptz NOT NULL,
        collected_by    text NOT NULL,
        schema_version  integer NOT NULL,
        engines         text[] NOT NULL,
        versions        jsonb NOT NULL,
        document        jsonb NOT NULL
                        CHECK ((document->>'redacted')::boolean IS TRUE),
        seq             bigserial NOT NULL
    );
    CREATE INDEX snapshots_by_host_time ON probe.snapshots (host_id, collected_at DESC);
    CREATE INDEX snapshots_by_time ON probe.snapshots (collected_at);
    CREATE INDEX snapshots_by_versions ON probe.snapshots USING gin (versions);
    CREATE INDEX snapshots_by_engines ON probe.snapshots USING gin (engines);
    ",
    // 1 -> 2: audit outcomes per host and run.
    "
    CREATE TABLE probe.audit_records (
        run_id      text NOT NULL,
        host        text NOT NULL,
        shard       text,
        runner      text NOT NULL,
        inventory   text NOT NULL,
        started_at  timestamptz NOT NULL,
        recorded_at timestamptz NOT NULL,
        status      text NOT NULL,
        snapshot_id text,
        record      jsonb NOT NULL,
        seq         bigserial NOT NULL,
        PRIMARY KEY (run_id, host)
    );
    CREATE INDEX audit_records_by_host ON probe.audit_records (host, recorded_at DESC);
    ",
    // 2 -> 3: documents as content-addressed, zstd-compressed sections (bodies are compressed
    // already, so TOAST stores them as they are). A snapshot refers to its sections by an array
    // in document order, indexed by GIN for the garbage collection of `prune`. The documents
    // move in `move_documents_into_sections`, then `SECTIONS_DONE` drops their column.
    "
    CREATE TABLE probe.sections (
        id    bigserial PRIMARY KEY,
        hash  bytea NOT NULL UNIQUE,
        size  bigint NOT NULL,
        body  bytea NOT NULL
    );
    ALTER TABLE probe.sections ALTER COLUMN body SET STORAGE EXTERNAL;
    ALTER TABLE probe.snapshots
        ADD COLUMN layout text,
        ADD COLUMN sections bigint[],
        ADD COLUMN redacted boolean NOT NULL DEFAULT true CHECK (redacted);
    CREATE INDEX snapshots_by_section ON probe.snapshots USING gin (sections);
    ",
    // 3 -> 4: slots, as SQLite's: sections count the slots that need them, a snapshot keeps its
    // slot list and own frame instead of its layout and section array (and its GIN index), and
    // versions are kept once per distinct set. `move_layouts_into_slots`, then `SLOTS_DONE`.
    "
    ALTER TABLE probe.sections ADD COLUMN refs bigint NOT NULL DEFAULT 0;
    ALTER TABLE probe.sections SET (fillfactor = 50);
    ALTER TABLE probe.snapshots ADD COLUMN slots bytea, ADD COLUMN own bytea;
    CREATE TABLE probe.version_sets (
        id        bigserial PRIMARY KEY,
        versions  jsonb NOT NULL UNIQUE
    );
    CREATE INDEX version_sets_by_versions ON probe.version_sets USING gin (versions);
    ALTER TABLE probe.snapshots ADD COLUMN version_set bigint REFERENCES probe.version_sets(id);
    INSERT INTO probe.version_sets (versions)
        SELECT DISTINCT versions FROM probe.snapshots ORDER BY 1;
    UPDATE probe.snapshots s SET version_set = v.id
        FROM probe.version_sets v WHERE v.versions = s.versions;
    UPDATE probe.sections c SET refs = r.n
        FROM (SELECT section, count(*) AS n FROM probe.snapshots, unnest(sections) AS section
              GROUP BY section) r
        WHERE c.id = r.section;
    ",
    // 4 -> 5: each snapshot's configuration fingerprint, as SQLite's.
    "ALTER TABLE probe.snapshots ADD COLUMN fingerprint bytea;",
    // 5 -> 6: fingerprints with identities renamed, as SQLite's.
    "UPDATE probe.snapshots SET fingerprint = NULL;",
];

/// The end of migration 3 -> 4, once every snapshot has its slots.
const SLOTS_DONE: &str = "
    ALTER TABLE probe.snapshots DROP COLUMN layout, DROP COLUMN sections, DROP COLUMN versions;
    ALTER TABLE probe.snapshots ALTER COLUMN slots SET NOT NULL,
                                ALTER COLUMN version_set SET NOT NULL;
";

/// The end of migration 2 -> 3, once every document is in sections.
const SECTIONS_DONE: &str = "
    ALTER TABLE probe.snapshots DROP COLUMN document;
    ALTER TABLE probe.snapshots ALTER COLUMN layout SET NOT NULL,
                                ALTER COLUMN sections SET NOT NULL;
";

async fn schema_version(client: &impl GenericClient) -> Result<u32, tokio_postgres::Error> {
    let exists: bool = client
        .query_one("SELECT to_regclass('probe.schema_meta') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let version: Option<i32> = client
        .query_one("SELECT max(version) FROM probe.schema_meta", &[])
        .await?
        .get(0);
    Ok(version.and_then(|v| u32::try_from(v).ok()).unwrap_or(0))
}

fn newer_store(store: &str, found: u32) -> StoreError {
    StoreError::NewerStore {
        path: store.into(),
        found,
        supported: STORE_SCHEMA_VERSION,
    }
}

/// The store's layout version, read as one plain operation (under the operation's bound): a
/// newer one is refused.
pub(super) async fn stored_version(pool: Pool, store: String) -> Result<u32, StoreError> {
    let client = connection(&pool, &store).await?;
    let current = schema_version(&client)
        .await
        .map_err(|err| pg_error(&store, &err))?;
    if current > STORE_SCHEMA_VERSION {
        return Err(newer_store(&store, current));
    }
    Ok(current)
}

/// Brings the layout up to date in one transaction under the advisory lock. `bound` is the
/// migration's own (it may rewrite every snapshot): the client gives up past it, and the server
/// is told the same for each statement and for the waits between them.
pub(super) async fn migrate(pool: Pool, store: String, bound: Duration) -> Result<(), StoreError> {
    let fail = |err: tokio_postgres::Error| pg_error(&store, &err);
    let mut client = connection(&pool, &store).await?;
    let current = schema_version(&client).await.map_err(fail)?;
    if current > STORE_SCHEMA_VERSION {
        return Err(newer_store(&store, current));
    }
    if current == STORE_SCHEMA_VERSION {
        return Ok(());
    }
    let transaction = client.transaction().await.map_err(fail)?;
    let ms = bound.as_millis().max(1);
    transaction
        .batch_execute(&format!(
            "SET LOCAL statement_timeout = {ms}; SET LOCAL idle_in_transaction_session_timeout = {ms};"
        ))
        .await
        .map_err(fail)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(fail)?;
    transaction
        .batch_execute(
            "CREATE SCHEMA IF NOT EXISTS probe;
             CREATE TABLE IF NOT EXISTS probe.schema_meta (version integer NOT NULL);",
        )
        .await
        .map_err(fail)?;
    // Another runner may have migrated while we waited for the lock.
    let current = schema_version(&transaction).await.map_err(fail)?;
    if current > STORE_SCHEMA_VERSION {
        return Err(newer_store(&store, current));
    }
    for (version, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        transaction.batch_execute(sql).await.map_err(fail)?;
        if version + 1 == SECTIONS_VERSION as usize {
            move_documents_into_sections(&transaction)
                .await
                .map_err(|err| err.into_store(&store))?;
            transaction
                .batch_execute(SECTIONS_DONE)
                .await
                .map_err(fail)?;
        }
        if version + 1 == SLOTS_VERSION as usize {
            move_layouts_into_slots(&transaction)
                .await
                .map_err(|err| err.into_store(&store))?;
            transaction.batch_execute(SLOTS_DONE).await.map_err(fail)?;
        }
    }
    let version = i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX);
    transaction
        .execute("DELETE FROM probe.schema_meta", &[])
        .await
        .map_err(fail)?;
    transaction
        .execute(
            "INSERT INTO probe.schema_meta (version) VALUES ($1)",
            &[&version],
        )
        .await
        .map_err(fail)?;
    transaction.commit().await.map_err(fail)
}

/// The next 256 snapshots (by id) after `after`, their id and `columns`: a migration's walk over
/// the store. Moves `after` on.
async fn next_snapshots(
    client: &impl GenericClient,
    columns: &str,
    after: &mut String,
) -> Result<Vec<Row>, tokio_postgres::Error> {
    let rows = client
        .query(
            &format!(
                "SELECT id, {columns} FROM probe.snapshots WHERE id > $1 ORDER BY id LIMIT 256"
            ),
            &[&*after],
        )
        .await?;
    if let Some(last) = rows.last() {
        *after = last.get(0);
    }
    Ok(rows)
}

/// Migration to [`SECTIONS_VERSION`]: every jsonb document becomes a layout and sections. The
/// document is read as `get` read it (jsonb's text through the snapshot type, so the fields
/// come back in their order); one that does not read is kept whole, as jsonb wrote it.
async fn move_documents_into_sections(client: &impl GenericClient) -> Result<(), WriteError> {
    let mut after = String::new();
    loop {
        let rows = next_snapshots(client, "document::text", &mut after).await?;
        if rows.is_empty() {
            return Ok(());
        }
        for row in &rows {
            let id: String = row.get(0);
            let text: String = row.get(1);
            let document = match from_json(&text, &id) {
                Ok(snapshot) => to_json(&snapshot),
                Err(_) => text,
            };
            let split = content::split(&document);
            let sections = file_sections(client, &split.sections, &HashMap::new()).await?;
            client
                .execute(
                    "UPDATE probe.snapshots SET layout = $2, sections = $3 WHERE id = $1",
                    &[&id, &split.layout, &sections],
                )
                .await?;
        }
    }
}

/// The ids of `sections` in order, storing those the store does not hold yet (migration 2 -> 3,
/// before sections were counted).
async fn file_sections(
    client: &impl GenericClient,
    sections: &[Section],
    compressed: &HashMap<[u8; 32], Vec<u8>>,
) -> Result<Vec<i64>, WriteError> {
    let hashes: Vec<&[u8]> = sections.iter().map(|s| s.hash.as_slice()).collect();
    let mut known: HashMap<Vec<u8>, i64> = client
        .query(
            "SELECT hash, id FROM probe.sections WHERE hash = ANY($1)",
            &[&hashes],
        )
        .await?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let mut ids = Vec::with_capacity(sections.len());
    for section in sections {
        if let Some(id) = known.get(section.hash.as_slice()) {
            ids.push(*id);
            continue;
        }
        let body = match compressed.get(&section.hash) {
            Some(body) => body.clone(),
            None => section.compressed().map_err(WriteError::Content)?,
        };
        let id = insert_section(client, section, &body).await?;
        known.insert(section.hash.to_vec(), id);
        ids.push(id);
    }
    Ok(ids)
}

/// Migration to [`SLOTS_VERSION`]: each snapshot's layout becomes its own slot (compressed alone)
/// and its section array shared slots, in order; the counts were set by the migration's SQL.
async fn move_layouts_into_slots(client: &impl GenericClient) -> Result<(), WriteError> {
    let mut after = String::new();
    let mut rows = next_snapshots(client, "layout, sections", &mut after).await?;
    while !rows.is_empty() {
        for row in &rows {
            let (id, layout, sections): (String, String, Vec<i64>) =
                (row.get(0), row.get(1), row.get(2));
            let (first, frame) = content::layout_alone(&layout).map_err(WriteError::Content)?;
            let slots: Vec<Slot> = std::iter::once(first)
                .chain(sections.into_iter().map(Slot::Shared))
                .collect();
            let own: Option<&[u8]> = (!frame.is_empty()).then_some(frame.as_slice());
            client
                .execute(
                    "UPDATE probe.snapshots SET slots = $2, own = $3 WHERE id = $1",
                    &[&id, &content::encode_slots(&slots), &own],
                )
                .await?;
        }
        rows = next_snapshots(client, "layout, sections", &mut after).await?;
    }
    Ok(())
}
