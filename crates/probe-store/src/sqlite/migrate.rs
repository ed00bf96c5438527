//! SQLite's table layout and its migrations: `MIGRATIONS[n]` brings a store from version n to
//! n + 1 (the versions are [`crate::schema`]'s), with the walks over stored snapshots that a
//! migration's SQL cannot do alone.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::read::content_error;
use crate::content::{self, Section, Slot};
use crate::schema::{SECTIONS_VERSION, SLOTS_VERSION};

/// Migrations by target version: `MIGRATIONS[n]` brings the store from version n to n + 1.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 0 -> 1: the first layout.
    "
    CREATE TABLE hosts (
        id          INTEGER PRIMARY KEY,
        machine_id  TEXT UNIQUE,
        hostname    TEXT,
        first_seen  INTEGER NOT NULL,
        last_seen   INTEGER NOT NULL
    );
    CREATE TABLE host_names (
        host_id     INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
        name        TEXT NOT NULL COLLATE NOCASE,
        kind        TEXT NOT NULL,
        last_seen   INTEGER NOT NULL,
        PRIMARY KEY (host_id, name, kind)
    );
    CREATE INDEX host_names_by_name ON host_names(name);
    CREATE TABLE snapshots (
        id              TEXT PRIMARY KEY,
        host_id         INTEGER NOT NULL REFERENCES hosts(id),
        target          TEXT NOT NULL,
        address         TEXT,
        hostname        TEXT,
        machine_id      TEXT,
        collected_at    INTEGER NOT NULL,
        schema_version  INTEGER NOT NULL,
        engines         TEXT NOT NULL,
        versions        TEXT NOT NULL,
        document        TEXT NOT NULL
    );
    CREATE INDEX snapshots_by_host_time ON snapshots(host_id, collected_at);
    CREATE INDEX snapshots_by_time ON snapshots(collected_at);
    CREATE TABLE snapshot_versions (
        snapshot_id TEXT NOT NULL REFERENCES snapshots(id) ON DELETE CASCADE,
        package     TEXT NOT NULL,
        version     TEXT NOT NULL,
        PRIMARY KEY (snapshot_id, package)
    );
    CREATE INDEX snapshot_versions_by_package ON snapshot_versions(package, version);
    ",
    // 1 -> 2: audit outcomes per host and run (fleet reports across shards).
    "
    CREATE TABLE audit_records (
        run_id      TEXT NOT NULL,
        host        TEXT NOT NULL,
        shard       TEXT,
        runner      TEXT NOT NULL,
        inventory   TEXT NOT NULL,
        started_at  INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL,
        status      TEXT NOT NULL,
        snapshot_id TEXT,
        record      TEXT NOT NULL,
        PRIMARY KEY (run_id, host)
    );
    CREATE INDEX audit_records_by_host ON audit_records(host, recorded_at);
    ",
    // 2 -> 3: documents as content-addressed, zstd-compressed sections. `seq` is the snapshot's
    // persistent number (a rowid that is not an INTEGER PRIMARY KEY may change on VACUUM), so
    // references can be two integers. The documents move in `move_documents_into_sections`.
    "
    CREATE TABLE sections (
        id    INTEGER PRIMARY KEY,
        hash  BLOB NOT NULL UNIQUE,
        size  INTEGER NOT NULL,
        body  BLOB NOT NULL
    );
    ALTER TABLE snapshots ADD COLUMN seq INTEGER;
    UPDATE snapshots SET seq = rowid;
    CREATE UNIQUE INDEX snapshots_by_seq ON snapshots(seq);
    ALTER TABLE snapshots ADD COLUMN layout TEXT;
    CREATE TABLE snapshot_sections (
        snapshot  INTEGER NOT NULL REFERENCES snapshots(seq) ON DELETE CASCADE,
        position  INTEGER NOT NULL,
        section   INTEGER NOT NULL REFERENCES sections(id),
        PRIMARY KEY (snapshot, position)
    ) WITHOUT ROWID;
    CREATE INDEX snapshot_sections_by_section ON snapshot_sections(section);
    ",
    // 3 -> 4: slots. Each section counts the slots that need it (as itself or as a base); a
    // snapshot's slot list and own frame replace its reference rows and its layout; the indexed
    // versions are kept once per distinct set. The rest is `move_layouts_into_slots` and
    // `SLOTS_DONE`.
    "
    ALTER TABLE sections ADD COLUMN refs INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE snapshots ADD COLUMN slots BLOB;
    ALTER TABLE snapshots ADD COLUMN own BLOB;
    CREATE TABLE version_sets (
        id        INTEGER PRIMARY KEY,
        versions  TEXT NOT NULL UNIQUE
    );
    CREATE TABLE set_versions (
        set_id    INTEGER NOT NULL REFERENCES version_sets(id),
        package   TEXT NOT NULL,
        version   TEXT NOT NULL,
        PRIMARY KEY (set_id, package)
    ) WITHOUT ROWID;
    CREATE INDEX set_versions_by_package ON set_versions(package, version);
    ALTER TABLE snapshots ADD COLUMN version_set INTEGER REFERENCES version_sets(id);
    INSERT INTO version_sets (versions) SELECT DISTINCT versions FROM snapshots ORDER BY 1;
    UPDATE snapshots SET version_set = (SELECT v.id FROM version_sets v
                                        WHERE v.versions = snapshots.versions);
    INSERT OR IGNORE INTO set_versions (set_id, package, version)
        SELECT s.version_set, r.package, r.version
        FROM snapshot_versions r JOIN snapshots s ON s.id = r.snapshot_id;
    UPDATE sections SET refs = (SELECT count(*) FROM snapshot_sections r
                                WHERE r.section = sections.id);
    ",
    // 4 -> 5: each snapshot's configuration fingerprint (`crate::Fingerprint`; an empty blob
    // where it has none). NULL for the snapshots stored before: computed when read.
    "ALTER TABLE snapshots ADD COLUMN fingerprint BLOB;",
    // 5 -> 6: fingerprints with process ids and GPU UUIDs renamed (`crate::Fingerprint`, form
    // 2); those of layout 5 are cleared, and computed when read.
    "UPDATE snapshots SET fingerprint = NULL;",
];

/// The end of migration 3 -> 4, once every snapshot has its slots.
const SLOTS_DONE: &str = "
    DROP TABLE snapshot_sections;
    DROP TABLE snapshot_versions;
    ALTER TABLE snapshots DROP COLUMN layout;
    ALTER TABLE snapshots DROP COLUMN versions;
";

/// Brings the store in `transaction` up to date: creates the version table, then runs the
/// migrations from the recorded version on. A store newer than this probe (a concurrent newer
/// writer; existing files are checked before) is left as it is.
pub(super) fn migrate(transaction: &Transaction<'_>) -> rusqlite::Result<()> {
    transaction
        .execute_batch("CREATE TABLE IF NOT EXISTS schema_meta (version INTEGER NOT NULL);")?;
    let current: Option<u32> = transaction
        .query_row("SELECT max(version) FROM schema_meta", [], |row| row.get(0))
        .optional()?
        .flatten();
    let current = current.unwrap_or(0);
    if current as usize > MIGRATIONS.len() {
        return Ok(());
    }
    for (version, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        transaction.execute_batch(sql)?;
        if version + 1 == SECTIONS_VERSION as usize {
            move_documents_into_sections(transaction)?;
            transaction.execute_batch("ALTER TABLE snapshots DROP COLUMN document;")?;
        }
        if version + 1 == SLOTS_VERSION as usize {
            move_layouts_into_slots(transaction)?;
            transaction.execute_batch(SLOTS_DONE)?;
        }
        transaction.execute("DELETE FROM schema_meta", [])?;
        transaction.execute(
            "INSERT INTO schema_meta (version) VALUES (?1)",
            params![version as u32 + 1],
        )?;
    }
    Ok(())
}

/// Files the sections of snapshot `seq`: a section already held is referenced, a new one is
/// stored (with its body from `compressed`, else compressed now).
fn insert_sections(
    connection: &Connection,
    seq: i64,
    sections: &[Section],
    compressed: &HashMap<[u8; 32], Vec<u8>>,
) -> rusqlite::Result<()> {
    let mut find = connection.prepare_cached("SELECT id FROM sections WHERE hash = ?1")?;
    let mut add =
        connection.prepare_cached("INSERT INTO sections (hash, size, body) VALUES (?1, ?2, ?3)")?;
    let mut refer = connection.prepare_cached(
        "INSERT INTO snapshot_sections (snapshot, position, section) VALUES (?1, ?2, ?3)",
    )?;
    for (position, section) in sections.iter().enumerate() {
        let hash = section.hash.as_slice();
        let found: Option<i64> = find.query_row(params![hash], |row| row.get(0)).optional()?;
        let id = match found {
            Some(id) => id,
            None => {
                let body = match compressed.get(&section.hash) {
                    Some(body) => body.clone(),
                    None => section.compressed().map_err(content_error)?,
                };
                add.execute(params![hash, section.bytes.len() as i64, body])?;
                connection.last_insert_rowid()
            }
        };
        refer.execute(params![seq, position as i64, id])?;
    }
    Ok(())
}

/// Migration to [`SECTIONS_VERSION`]: every stored document becomes a layout and sections.
/// `split` keeps any document it could not give back byte for byte whole, so nothing is lost.
fn move_documents_into_sections(connection: &Connection) -> rusqlite::Result<()> {
    each_snapshot(connection, "document", |seq, document| {
        let split = content::split(&document);
        connection.execute(
            "UPDATE snapshots SET layout = ?2 WHERE seq = ?1",
            params![seq, split.layout],
        )?;
        insert_sections(connection, seq, &split.sections, &HashMap::new())
    })
}

/// Runs `work` with the `seq` and text `column` of every snapshot, in batches of 256 (a
/// migration's walk over the store).
fn each_snapshot(
    connection: &Connection,
    column: &str,
    mut work: impl FnMut(i64, String) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    let sql = format!("SELECT seq, {column} FROM snapshots WHERE seq > ?1 ORDER BY seq LIMIT 256");
    let mut after = 0i64;
    loop {
        let batch: Vec<(i64, String)> = connection
            .prepare(&sql)?
            .query_map(params![after], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let Some((last, _)) = batch.last() else {
            return Ok(());
        };
        after = *last;
        for (seq, text) in batch {
            work(seq, text)?;
        }
    }
}

/// Migration to [`SLOTS_VERSION`]: each snapshot's layout becomes its own slot (compressed
/// alone: it has no base yet) and its section references shared slots, in order. Nothing is
/// recompressed; the counts were set from the references by the migration's SQL.
fn move_layouts_into_slots(connection: &Connection) -> rusqlite::Result<()> {
    let mut references = connection.prepare_cached(
        "SELECT section FROM snapshot_sections WHERE snapshot = ?1 ORDER BY position",
    )?;
    each_snapshot(connection, "layout", |seq, layout| {
        let (first, frame) = content::layout_alone(&layout).map_err(content_error)?;
        let mut slots = vec![first];
        for section in references.query_map(params![seq], |row| row.get::<_, i64>(0))? {
            slots.push(Slot::Shared(section?));
        }
        connection.execute(
            "UPDATE snapshots SET slots = ?2, own = ?3 WHERE seq = ?1",
            params![seq, content::encode_slots(&slots), frame],
        )?;
        Ok(())
    })
}
