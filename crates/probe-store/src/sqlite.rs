//! The embedded store: one SQLite file in WAL mode.
//!
//! Safety rules, in order of importance:
//! * An existing file is first checked read-only (header, schema table, schema version); a file
//!   that fails is reported and never written, let alone "repaired".
//! * Each snapshot is written in one `BEGIN IMMEDIATE` transaction: a killed writer leaves no half
//!   snapshot, and the write lock is taken up front so two writers queue instead of deadlocking.
//! * Writers wait on a busy timeout and retry; readers never block writers (WAL).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use probe_model::{AuditRecord, Snapshot, UnixTime};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::content::{self, Section, Split};
use crate::{
    AuditRun, PrunePolicy, SnapshotMeta, SnapshotStore, StoreError, StoredAudit,
    document::from_stored, to_json,
};

/// Version of the store's own table layout (not of the snapshot documents).
pub const STORE_SCHEMA_VERSION: u32 = 3;

/// The layout version that keeps documents as content-addressed sections: migrating to it moves
/// every stored document into sections (`content::split`) before its column is dropped.
pub(crate) const SECTIONS_VERSION: u32 = 3;

/// How long one statement waits for another writer's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts of a whole write transaction when the lock stays busy past the timeout.
const WRITE_ATTEMPTS: u32 = 4;

/// Migrations by target version: `MIGRATIONS[n]` brings the store from version n to n + 1.
const MIGRATIONS: &[&str] = &[
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
];

/// Packages whose versions are indexed (engines and what they are built on).
const INDEXED_PACKAGES: &[&str] = &[
    "vllm",
    "sglang",
    "sgl-kernel",
    "torch",
    "transformers",
    "flashinfer-python",
    "triton",
    "lmdeploy",
    "tensorrt-llm",
    "text-generation-server",
];

/// A SQLite snapshot store.
pub struct SqliteStore {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteStore {
    /// Opens (creating when missing) the store at `path`.
    ///
    /// An existing file is checked read-only first: not a SQLite file, damaged, not a probe
    /// store, or from a newer probe, each gives an error and leaves the file as it was.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let exists = path.exists();
        if exists {
            check_existing(path)?;
        } else if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|err| StoreError::Io {
                path: path.to_path_buf(),
                cause: format!("cannot create {}: {err}", parent.display()),
            })?;
        }
        let connection = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|err| sql_error(path, err))?;
        connection
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(|err| sql_error(path, err))?;
        let store = SqliteStore {
            path: path.to_path_buf(),
            connection: Mutex::new(connection),
        };
        store.with_retries(|connection| {
            // WAL: readers never block the writer; NORMAL sync is crash-safe in WAL mode.
            connection.pragma_update(None, "journal_mode", "WAL")?;
            connection.pragma_update(None, "synchronous", "NORMAL")?;
            connection.pragma_update(None, "foreign_keys", "ON")?;
            Ok(())
        })?;
        store.migrate()?;
        Ok(store)
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&self) -> Result<(), StoreError> {
        self.with_retries(|connection| {
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            transaction.execute_batch(
                "CREATE TABLE IF NOT EXISTS schema_meta (version INTEGER NOT NULL);",
            )?;
            let current: Option<u32> = transaction
                .query_row("SELECT max(version) FROM schema_meta", [], |row| row.get(0))
                .optional()?
                .flatten();
            let current = current.unwrap_or(0);
            if current as usize > MIGRATIONS.len() {
                // Checked before for existing files; a concurrent newer writer lands here.
                return Ok(());
            }
            for (version, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
                transaction.execute_batch(sql)?;
                if version + 1 == SECTIONS_VERSION as usize {
                    move_documents_into_sections(&transaction)?;
                    transaction.execute_batch("ALTER TABLE snapshots DROP COLUMN document;")?;
                }
                transaction.execute("DELETE FROM schema_meta", [])?;
                transaction.execute(
                    "INSERT INTO schema_meta (version) VALUES (?1)",
                    params![version as u32 + 1],
                )?;
            }
            transaction.commit()
        })
    }

    /// Runs `work` with the connection, retrying the whole closure while the database is busy.
    fn with_retries<T>(
        &self,
        mut work: impl FnMut(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut connection = self
            .connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut attempt = 0;
        loop {
            attempt += 1;
            match work(&mut connection) {
                Ok(value) => return Ok(value),
                Err(err) if is_busy(&err) && attempt < WRITE_ATTEMPTS => {
                    tracing::debug!(path = %self.path.display(), attempt, "store busy, retrying");
                    std::thread::sleep(Duration::from_millis(50 * u64::from(attempt)));
                }
                Err(err) if is_busy(&err) => {
                    return Err(StoreError::Busy {
                        path: self.path.clone(),
                        waited_s: BUSY_TIMEOUT.as_secs() * u64::from(WRITE_ATTEMPTS),
                    });
                }
                Err(err) => return Err(sql_error(&self.path, err)),
            }
        }
    }

    fn meta_by_host(&self, host: &str) -> Result<Vec<SnapshotMeta>, StoreError> {
        self.with_retries(|connection| {
            let Some(host_id) = find_host_by_name(connection, host)? else {
                return Ok(Vec::new());
            };
            query_meta(
                connection,
                "WHERE s.host_id = ?1 ORDER BY s.collected_at ASC, s.seq ASC",
                params![host_id],
            )
        })
    }

    /// The stored document of `id`, put back together from its sections.
    fn document(&self, id: &str) -> Result<Option<String>, StoreError> {
        let stored = self.with_retries(|connection| {
            // One read transaction: the layout and its sections come from the same state.
            let transaction = connection.transaction()?;
            read_stored(&transaction, id)
        })?;
        stored
            .map(|stored| {
                stored.assemble().map_err(|cause| StoreError::BadDocument {
                    what: format!("{id} in {}", self.path.display()),
                    cause,
                })
            })
            .transpose()
    }

    /// Compressed bodies of the sections of `split` that the store does not hold yet, made
    /// before the write lock is taken so that writers queue for as short a time as possible.
    fn compress_missing(&self, split: &Split) -> Result<HashMap<[u8; 32], Vec<u8>>, StoreError> {
        let missing: Vec<&Section> = self.with_retries(|connection| {
            let mut statement =
                connection.prepare_cached("SELECT 1 FROM sections WHERE hash = ?1")?;
            let mut missing = Vec::new();
            for section in &split.sections {
                if !statement.exists(params![section.hash.as_slice()])? {
                    missing.push(section);
                }
            }
            Ok(missing)
        })?;
        let mut bodies = HashMap::new();
        for section in missing {
            if let std::collections::hash_map::Entry::Vacant(entry) = bodies.entry(section.hash) {
                entry.insert(section.compressed().map_err(|cause| StoreError::Io {
                    path: self.path.clone(),
                    cause,
                })?);
            }
        }
        Ok(bodies)
    }
}

impl SnapshotStore for SqliteStore {
    fn put(&self, snapshot: &Snapshot) -> Result<SnapshotMeta, StoreError> {
        let split = content::split(&to_json(snapshot));
        let (engines, versions) = indexed_values(snapshot);
        let engines_text = engines.iter().cloned().collect::<Vec<_>>().join(",");
        let versions_text = serde_json::to_string(&versions).unwrap_or_else(|_| "{}".into());
        let compressed = self.compress_missing(&split)?;
        let host_id = self.with_retries(|connection| {
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let host_id = identify_host(&transaction, snapshot, true)?.unwrap_or_default();
            // A snapshot with the same id is replaced: its rows go, its sections are kept
            // only where another snapshot (or this new one) still refers to them.
            let replaced = delete_snapshot(&transaction, &snapshot.id)?;
            let seq: i64 = transaction.query_row(
                "SELECT coalesce(max(seq), 0) + 1 FROM snapshots",
                [],
                |row| row.get(0),
            )?;
            transaction.execute(
                "INSERT INTO snapshots
                   (id, seq, host_id, target, address, hostname, machine_id, collected_at,
                    schema_version, engines, versions, layout)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
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
                    engines_text,
                    versions_text,
                    split.layout,
                ],
            )?;
            insert_sections(&transaction, seq, &split.sections, &compressed)?;
            for (package, version) in &versions {
                transaction.execute(
                    "INSERT INTO snapshot_versions (snapshot_id, package, version)
                     VALUES (?1, ?2, ?3)",
                    params![snapshot.id, package, version],
                )?;
            }
            collect_garbage(&transaction, &replaced)?;
            transaction.commit()?;
            Ok(host_id)
        })?;
        Ok(SnapshotMeta::stored(snapshot, host_id, engines, versions))
    }

    fn get(&self, id: &str) -> Result<Option<Snapshot>, StoreError> {
        match self.document(id)? {
            Some(text) => from_stored(&text, &format!("{id} in {}", self.path.display())).map(Some),
            None => Ok(None),
        }
    }

    fn get_many(&self, ids: &[String]) -> Result<Vec<Option<Snapshot>>, StoreError> {
        let mut cache = SectionCache::default();
        let mut snapshots = Vec::with_capacity(ids.len());
        // In batches, each one read transaction, so a writer is never held up for long.
        for batch in ids.chunks(256) {
            let stored = self.with_retries(|connection| {
                let transaction = connection.transaction()?;
                batch
                    .iter()
                    .map(|id| read_stored(&transaction, id))
                    .collect::<rusqlite::Result<Vec<_>>>()
            })?;
            for (id, stored) in batch.iter().zip(stored) {
                let what = || format!("{id} in {}", self.path.display());
                let snapshot = match stored {
                    Some(stored) => {
                        let text = stored.assemble_with(&mut cache).map_err(|cause| {
                            StoreError::BadDocument {
                                what: what(),
                                cause,
                            }
                        })?;
                        Some(from_stored(&text, &what())?)
                    }
                    None => None,
                };
                snapshots.push(snapshot);
            }
        }
        Ok(snapshots)
    }

    fn latest(&self, host: &str) -> Result<Option<Snapshot>, StoreError> {
        match self.newest(host)? {
            Some(meta) => self.get(&meta.id),
            None => Ok(None),
        }
    }

    fn newest(&self, host: &str) -> Result<Option<SnapshotMeta>, StoreError> {
        self.with_retries(|connection| {
            let Some(host_id) = find_host_by_name(connection, host)? else {
                return Ok(None);
            };
            Ok(query_meta(
                connection,
                "WHERE s.host_id = ?1 ORDER BY s.collected_at DESC, s.seq DESC LIMIT 1",
                params![host_id],
            )?
            .pop())
        })
    }

    fn export(&self, id: &str) -> Result<String, StoreError> {
        self.document(id)?
            .ok_or_else(|| StoreError::NotFound(format!("id {id}")))
    }

    fn previous(&self, snapshot: &Snapshot) -> Result<Option<Snapshot>, StoreError> {
        let previous_id = self.with_retries(|connection| {
            let transaction = connection.transaction()?;
            let Some(host_id) = identify_host(&transaction, snapshot, false)? else {
                return Ok(None);
            };
            transaction
                .query_row(
                    "SELECT id FROM snapshots
                     WHERE host_id = ?1 AND id != ?2 AND collected_at <= ?3
                     ORDER BY collected_at DESC, seq DESC LIMIT 1",
                    params![host_id, snapshot.id, snapshot.collected_at],
                    |row| row.get::<_, String>(0),
                )
                .optional()
        })?;
        match previous_id {
            Some(id) => self.get(&id),
            None => Ok(None),
        }
    }

    fn list(&self, host: Option<&str>) -> Result<Vec<SnapshotMeta>, StoreError> {
        match host {
            Some(host) => {
                let mut metas = self.meta_by_host(host)?;
                metas.reverse();
                Ok(metas)
            }
            None => self.with_retries(|connection| {
                query_meta(
                    connection,
                    "ORDER BY s.collected_at DESC, s.seq DESC",
                    params![],
                )
            }),
        }
    }

    fn history(&self, host: &str) -> Result<Vec<SnapshotMeta>, StoreError> {
        self.meta_by_host(host)
    }

    fn prune(&self, policy: &PrunePolicy) -> Result<Vec<SnapshotMeta>, StoreError> {
        let doomed = crate::prune_candidates(self.list(policy.host.as_deref())?, policy);
        if policy.dry_run || doomed.is_empty() {
            return Ok(doomed);
        }
        self.with_retries(|connection| {
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut sections = Vec::new();
            for meta in &doomed {
                sections.extend(delete_snapshot(&transaction, &meta.id)?);
            }
            collect_garbage(&transaction, &sections)?;
            transaction.commit()
        })?;
        Ok(doomed)
    }

    fn record_audit(
        &self,
        run: &AuditRun,
        record: &AuditRecord,
        recorded_at: UnixTime,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(record).unwrap_or_else(|_| "{}".into());
        self.with_retries(|connection| {
            connection.execute(
                "INSERT OR REPLACE INTO audit_records
                   (run_id, host, shard, runner, inventory, started_at, recorded_at, status,
                    snapshot_id, record)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    run.run_id,
                    record.host,
                    run.shard,
                    run.runner,
                    run.inventory,
                    run.started_at,
                    recorded_at,
                    record.status.as_str(),
                    record.snapshot_id,
                    text,
                ],
            )?;
            Ok(())
        })
    }

    fn last_audits(&self) -> Result<Vec<StoredAudit>, StoreError> {
        let rows: Vec<(AuditRun, UnixTime, String)> = self.with_retries(|connection| {
            let mut statement = connection.prepare(
                "SELECT run_id, shard, runner, inventory, started_at, recorded_at, record
                 FROM audit_records a
                 WHERE a.rowid = (SELECT b.rowid FROM audit_records b WHERE b.host = a.host
                                  ORDER BY b.recorded_at DESC, b.rowid DESC LIMIT 1)
                 ORDER BY a.host",
            )?;
            let rows = statement.query_map([], |row| {
                Ok((
                    AuditRun {
                        run_id: row.get(0)?,
                        shard: row.get(1)?,
                        runner: row.get(2)?,
                        inventory: row.get(3)?,
                        started_at: row.get(4)?,
                    },
                    row.get(5)?,
                    row.get(6)?,
                ))
            })?;
            rows.collect()
        })?;
        rows.into_iter()
            .map(|(run, recorded_at, text)| {
                let record =
                    serde_json::from_str(&text).map_err(|err| StoreError::BadDocument {
                        what: format!(
                            "audit record of run {} in {}",
                            run.run_id,
                            self.path.display()
                        ),
                        cause: err.to_string(),
                    })?;
                Ok(StoredAudit {
                    run,
                    recorded_at,
                    record,
                })
            })
            .collect()
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}

/// Checks an existing file without writing to it.
fn check_existing(path: &Path) -> Result<(), StoreError> {
    let corrupt = |cause: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        cause,
    };
    let mut header = Vec::with_capacity(16);
    let file = std::fs::File::open(path).map_err(|err| StoreError::Io {
        path: path.to_path_buf(),
        cause: err.to_string(),
    })?;
    file.take(16)
        .read_to_end(&mut header)
        .map_err(|err| StoreError::Io {
            path: path.to_path_buf(),
            cause: err.to_string(),
        })?;
    if header.is_empty() {
        // SQLite treats an empty file as an empty database.
        return Ok(());
    }
    if header.as_slice() != b"SQLite format 3\0" {
        return Err(corrupt("not a SQLite database file".into()));
    }
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|err| corrupt(err.to_string()))?;
    let _ = connection.busy_timeout(BUSY_TIMEOUT);
    let tables: Vec<String> = connection
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|err| classify(path, err))?;
    if tables.is_empty() {
        return Ok(());
    }
    if !tables.iter().any(|name| name == "schema_meta") {
        return Err(corrupt(format!(
            "it has tables ({}) but no probe schema",
            tables.join(", ")
        )));
    }
    let version: Option<u32> = connection
        .query_row("SELECT max(version) FROM schema_meta", [], |row| row.get(0))
        .map_err(|err| classify(path, err))?;
    if let Some(found) = version
        && found > STORE_SCHEMA_VERSION
    {
        return Err(StoreError::NewerStore {
            path: path.to_path_buf(),
            found,
            supported: STORE_SCHEMA_VERSION,
        });
    }
    Ok(())
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Maps a SQLite error, telling corruption apart so the hint is right.
fn classify(path: &Path, err: rusqlite::Error) -> StoreError {
    match err.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path: path.to_path_buf(),
            cause: err.to_string(),
        },
        _ => StoreError::Sqlite {
            path: path.to_path_buf(),
            source: err,
        },
    }
}

fn sql_error(path: &Path, err: rusqlite::Error) -> StoreError {
    if is_busy(&err) {
        return StoreError::Busy {
            path: path.to_path_buf(),
            waited_s: BUSY_TIMEOUT.as_secs(),
        };
    }
    classify(path, err)
}

/// Finds (and with `create`, records) the host identity of a snapshot: machine-id first, then
/// hostname (adopting a host recorded without machine-id), then target and address.
fn identify_host(
    connection: &Connection,
    snapshot: &Snapshot,
    create: bool,
) -> rusqlite::Result<Option<i64>> {
    let machine_id = snapshot
        .host
        .machine_id
        .as_deref()
        .map(str::trim)
        .filter(|id| !id.is_empty());
    let hostname = snapshot
        .host
        .hostname
        .as_deref()
        .map(str::trim)
        .filter(|name| !name.is_empty());
    let now = snapshot.collected_at;

    let mut host_id: Option<i64> = None;
    if let Some(machine_id) = machine_id {
        host_id = connection
            .query_row(
                "SELECT id FROM hosts WHERE machine_id = ?1",
                params![machine_id],
                |row| row.get(0),
            )
            .optional()?;
    }
    if host_id.is_none() {
        // A name match is only taken when it cannot belong to another machine: the recorded host
        // has no machine-id, or the snapshot has none.
        let names: Vec<&str> = hostname
            .into_iter()
            .chain(std::iter::once(snapshot.target.as_str()))
            .filter(|name| !name.is_empty())
            .collect();
        for name in names {
            let candidate: Option<(i64, Option<String>)> = connection
                .query_row(
                    "SELECT h.id, h.machine_id FROM hosts h JOIN host_names n ON n.host_id = h.id
                     WHERE n.name = ?1 ORDER BY h.last_seen DESC LIMIT 1",
                    params![name],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()?;
            if let Some((id, recorded)) = candidate
                && (recorded.is_none() || machine_id.is_none())
            {
                host_id = Some(id);
                break;
            }
        }
    }
    if !create {
        return Ok(host_id);
    }
    let host_id = match host_id {
        Some(id) => {
            connection.execute(
                "UPDATE hosts SET last_seen = max(last_seen, ?2),
                        hostname = coalesce(?3, hostname),
                        machine_id = coalesce(machine_id, ?4)
                 WHERE id = ?1",
                params![id, now, hostname, machine_id],
            )?;
            id
        }
        None => {
            connection.execute(
                "INSERT INTO hosts (machine_id, hostname, first_seen, last_seen)
                 VALUES (?1, ?2, ?3, ?3)",
                params![machine_id, hostname, now],
            )?;
            connection.last_insert_rowid()
        }
    };
    let address_host = snapshot.address.as_deref().map(strip_port);
    for (name, kind) in [
        (hostname, "hostname"),
        (Some(snapshot.target.as_str()), "target"),
        (address_host, "address"),
        (machine_id, "machine-id"),
    ] {
        let Some(name) = name.filter(|name| !name.is_empty()) else {
            continue;
        };
        connection.execute(
            "INSERT INTO host_names (host_id, name, kind, last_seen) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (host_id, name, kind) DO UPDATE SET
               last_seen = max(last_seen, excluded.last_seen)",
            params![host_id, name, kind, now],
        )?;
    }
    Ok(Some(host_id))
}

/// A stored document before it is put back together: its layout and its sections' stored
/// (hash, size, compressed body), in order, with their ids.
pub(crate) struct Stored {
    pub layout: String,
    pub sections: Vec<(Vec<u8>, i64, Vec<u8>)>,
    pub ids: Vec<i64>,
}

impl Stored {
    /// The document, each section checked against its size and address.
    pub fn assemble(&self) -> Result<String, String> {
        self.assemble_with(&mut SectionCache::default())
    }

    /// [`Stored::assemble`], taking each section already read from `cache` and leaving the
    /// ones read here in it.
    pub fn assemble_with(&self, cache: &mut SectionCache) -> Result<String, String> {
        let mut bodies = Vec::with_capacity(self.sections.len());
        for (index, (hash, size, body)) in self.sections.iter().enumerate() {
            let id = self.ids.get(index).copied();
            if let Some(bytes) = id.and_then(|id| cache.bytes.get(&id)) {
                bodies.push(bytes.clone());
                continue;
            }
            let bytes = content::decompress(body, *size, hash)?;
            if let Some(id) = id {
                cache.keep(id, &bytes);
            }
            bodies.push(bytes);
        }
        content::assemble(&self.layout, &bodies)
    }
}

/// Sections already decompressed and checked, by id, while one caller reads many snapshots
/// (hosts of one image share their packages, package events and histories). Bounded: past
/// [`SectionCache::LIMIT`] bytes it starts over.
#[derive(Default)]
pub(crate) struct SectionCache {
    bytes: HashMap<i64, Vec<u8>>,
    held: usize,
}

impl SectionCache {
    const LIMIT: usize = 256 << 20;

    fn keep(&mut self, id: i64, bytes: &[u8]) {
        if self.held + bytes.len() > Self::LIMIT {
            self.bytes.clear();
            self.held = 0;
        }
        self.held += bytes.len();
        self.bytes.insert(id, bytes.to_vec());
    }
}

fn read_stored(connection: &Connection, id: &str) -> rusqlite::Result<Option<Stored>> {
    let Some((seq, layout)) = connection
        .query_row(
            "SELECT seq, layout FROM snapshots WHERE id = ?1",
            params![id],
            |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)),
        )
        .optional()?
    else {
        return Ok(None);
    };
    let mut statement = connection.prepare_cached(
        "SELECT c.hash, c.size, c.body, c.id FROM snapshot_sections r
         JOIN sections c ON c.id = r.section
         WHERE r.snapshot = ?1 ORDER BY r.position",
    )?;
    let rows = statement
        .query_map(params![seq], |row| {
            Ok((
                (row.get(0)?, row.get(1)?, row.get(2)?),
                row.get::<_, i64>(3)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let (sections, ids) = rows.into_iter().unzip();
    Ok(Some(Stored {
        layout,
        sections,
        ids,
    }))
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

/// Deletes snapshot `id` (its row, indexed versions and section references) and returns the
/// sections it referred to, for [`collect_garbage`].
fn delete_snapshot(connection: &Connection, id: &str) -> rusqlite::Result<Vec<i64>> {
    let Some(seq) = connection
        .query_row(
            "SELECT seq FROM snapshots WHERE id = ?1",
            params![id],
            |row| row.get::<_, i64>(0),
        )
        .optional()?
    else {
        return Ok(Vec::new());
    };
    let sections = connection
        .prepare_cached("SELECT section FROM snapshot_sections WHERE snapshot = ?1")?
        .query_map(params![seq], |row| row.get(0))?
        .collect::<rusqlite::Result<Vec<i64>>>()?;
    connection.execute(
        "DELETE FROM snapshot_sections WHERE snapshot = ?1",
        params![seq],
    )?;
    connection.execute(
        "DELETE FROM snapshot_versions WHERE snapshot_id = ?1",
        params![id],
    )?;
    connection.execute("DELETE FROM snapshots WHERE id = ?1", params![id])?;
    Ok(sections)
}

/// Removes those of `candidates` that no snapshot refers to any more.
fn collect_garbage(connection: &Connection, candidates: &[i64]) -> rusqlite::Result<()> {
    let candidates: BTreeSet<i64> = candidates.iter().copied().collect();
    let mut remove = connection.prepare_cached(
        "DELETE FROM sections WHERE id = ?1
         AND NOT EXISTS (SELECT 1 FROM snapshot_sections WHERE section = ?1)",
    )?;
    for id in candidates {
        remove.execute(params![id])?;
    }
    Ok(())
}

/// Migration to [`SECTIONS_VERSION`]: every stored document becomes a layout and sections.
/// `split` keeps any document it could not give back byte for byte whole, so nothing is lost.
fn move_documents_into_sections(connection: &Connection) -> rusqlite::Result<()> {
    let mut after = 0i64;
    loop {
        let batch: Vec<(i64, String)> = connection
            .prepare("SELECT seq, document FROM snapshots WHERE seq > ?1 ORDER BY seq LIMIT 256")?
            .query_map(params![after], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let Some((last, _)) = batch.last() else {
            return Ok(());
        };
        after = *last;
        for (seq, document) in &batch {
            let split = content::split(document);
            connection.execute(
                "UPDATE snapshots SET layout = ?2 WHERE seq = ?1",
                params![seq, split.layout],
            )?;
            insert_sections(connection, *seq, &split.sections, &HashMap::new())?;
        }
    }
}

fn content_error(cause: String) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(cause.into())
}

/// `host:port`, `[v6]:port` -> host.
pub(crate) fn strip_port(address: &str) -> &str {
    if let Some(rest) = address.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(host, _)| host);
    }
    match address.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.parse::<u16>().is_ok() => host,
        _ => address,
    }
}

/// The host a name refers to: any recorded hostname, target, address or machine-id (a prefix of
/// at least 8 characters also matches a machine-id). The most recently seen host wins.
fn find_host_by_name(connection: &Connection, name: &str) -> rusqlite::Result<Option<i64>> {
    let exact = connection
        .query_row(
            "SELECT n.host_id FROM host_names n JOIN hosts h ON h.id = n.host_id
             WHERE n.name = ?1 ORDER BY h.last_seen DESC LIMIT 1",
            params![name],
            |row| row.get(0),
        )
        .optional()?;
    if exact.is_some() || name.len() < 8 {
        return Ok(exact);
    }
    connection
        .query_row(
            "SELECT id FROM hosts WHERE machine_id LIKE ?1 || '%' ORDER BY last_seen DESC LIMIT 1",
            params![name],
            |row| row.get(0),
        )
        .optional()
}

fn query_meta(
    connection: &Connection,
    tail: &str,
    parameters: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<Vec<SnapshotMeta>> {
    let sql = format!(
        "SELECT s.id, s.host_id, s.hostname, s.machine_id, s.target, s.address, s.collected_at,
                s.schema_version, s.engines, s.versions
         FROM snapshots s {tail}"
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

/// Engines and versions that get indexed columns.
pub(crate) fn indexed_values(snapshot: &Snapshot) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let mut engines = BTreeSet::new();
    for process in &snapshot.processes {
        if let Some(engine) = process.engine {
            engines.insert(engine.as_str().to_string());
        }
    }
    for log in &snapshot.logs {
        for startup in &log.startups {
            if startup.engine != probe_model::Engine::Other {
                engines.insert(startup.engine.as_str().to_string());
            }
        }
    }
    let mut versions = BTreeMap::new();
    for environment in &snapshot.python_envs {
        for package in &environment.packages {
            if INDEXED_PACKAGES.contains(&package.name.as_str()) {
                versions
                    .entry(package.name.clone())
                    .or_insert_with(|| package.version.clone());
            }
        }
    }
    if let Some(driver) = &snapshot.gpu.driver_version {
        versions.insert("nvidia-driver".into(), driver.clone());
    }
    if let Some(cuda) = &snapshot.gpu.cuda_version {
        versions.insert("cuda".into(), cuda.clone());
    }
    (engines, versions)
}

#[cfg(test)]
mod tests;
