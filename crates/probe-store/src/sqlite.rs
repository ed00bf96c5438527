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

use probe_model::{AuditRecord, FleetView, Snapshot, UnixTime};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::content::{self, Plan, Planned, Previous, Section, SectionCache, Slot, Stored};
use crate::document::{ManyReader, Reading, from_stored};
use crate::{AuditRun, PrunePolicy, SnapshotMeta, SnapshotStore, StoreError, StoredAudit, to_json};

/// Version of the store's own table layout (not of the snapshot documents).
pub const STORE_SCHEMA_VERSION: u32 = 4;

/// The layout version that keeps documents as content-addressed sections: migrating to it moves
/// every stored document into sections (`content::split`) before its column is dropped.
pub(crate) const SECTIONS_VERSION: u32 = 3;

/// The layout version that keeps a snapshot as slots (`content::Slot`): its layout and what
/// changed since its host's bases in a frame of its own, the rest as counted references to
/// shared sections, and its indexed versions as a reference to a set of versions.
pub(crate) const SLOTS_VERSION: u32 = 4;

/// The page size of a new store: a snapshot's row, with its own frame, fits in one page instead
/// of spilling into an overflow page that it leaves mostly empty.
const PAGE_SIZE: u32 = 16384;

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
];

/// The end of migration 3 -> 4, once every snapshot has its slots.
const SLOTS_DONE: &str = "
    DROP TABLE snapshot_sections;
    DROP TABLE snapshot_versions;
    ALTER TABLE snapshots DROP COLUMN layout;
    ALTER TABLE snapshots DROP COLUMN versions;
";

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
        Self::open_here(path).map_err(|err| not_writable(path, err))
    }

    fn open_here(path: &Path) -> Result<SqliteStore, StoreError> {
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
            // Only a new, empty file takes it; an existing store keeps its page size.
            connection.pragma_update(None, "page_size", PAGE_SIZE)?;
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
                if version + 1 == SLOTS_VERSION as usize {
                    move_layouts_into_slots(&transaction)?;
                    transaction.execute_batch(SLOTS_DONE)?;
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
            // One read transaction: the slots and their sections come from the same state.
            let transaction = connection.transaction()?;
            read_stored(&transaction, id, &BTreeSet::new())
        })?;
        stored
            .map(|stored| {
                stored
                    .assemble(&mut SectionCache::default())
                    .map_err(|cause| StoreError::BadDocument {
                        what: format!("{id} in {}", self.path.display()),
                        cause,
                    })
            })
            .transpose()
    }

    /// How `slots` will be stored, planned (and compressed) before the write lock is taken so
    /// that writers queue for as short a time as possible.
    fn plan(&self, snapshot: &Snapshot, slots: &[Section]) -> Result<Plan, StoreError> {
        self.with_retries(|connection| {
            let transaction = connection.transaction()?;
            plan_put(&transaction, snapshot, slots)
        })
    }

    /// `get_many` and `get_many_views`: each snapshot read as `reading` says.
    fn read_many(
        &self,
        ids: &[String],
        reading: Reading,
    ) -> Result<Vec<Option<Snapshot>>, StoreError> {
        let mut reader = ManyReader::new(reading);
        let mut snapshots = Vec::with_capacity(ids.len());
        // In batches, each one read transaction, so a writer is never held up for long. A
        // section already read for an earlier batch is not read again.
        for batch in ids.chunks(256) {
            let held = reader.held();
            let stored = self.with_retries(|connection| {
                let transaction = connection.transaction()?;
                batch
                    .iter()
                    .map(|id| read_stored(&transaction, id, &held))
                    .collect::<rusqlite::Result<Vec<_>>>()
            })?;
            snapshots.extend(reader.read_batch(stored, |index| {
                format!("{} in {}", batch[index], self.path.display())
            })?);
        }
        Ok(snapshots)
    }
}

impl SnapshotStore for SqliteStore {
    fn put(&self, snapshot: &Snapshot) -> Result<SnapshotMeta, StoreError> {
        let slots = content::slots_of(&content::split(&to_json(snapshot)));
        let (engines, versions) = indexed_values(snapshot);
        let engines_text = engines.iter().cloned().collect::<Vec<_>>().join(",");
        let versions_text = serde_json::to_string(&versions).unwrap_or_else(|_| "{}".into());
        let planned = self.plan(snapshot, &slots)?;
        let host_id = self.with_retries(|connection| {
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let host_id = identify_host(&transaction, snapshot, true)?.unwrap_or_default();
            // A snapshot with the same id is replaced: its row goes, its sections are kept
            // only where another snapshot (or this new one) still needs them.
            let replaced = delete_snapshot(&transaction, &snapshot.id)?;
            // Planned outside the lock: the sections it uses must still be there.
            let plan = if all_exist(&transaction, &planned.uses())? {
                planned.clone()
            } else {
                plan_put(&transaction, snapshot, &slots)?
            };
            let stored_slots = file_new_sections(&transaction, &plan)?;
            let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
            for id in stored_slots.iter().filter_map(Slot::section) {
                *counts.entry(id).or_default() += 1;
            }
            for id in &replaced {
                *counts.entry(*id).or_default() -= 1;
            }
            adjust_refs(&transaction, &counts)?;
            let version_set = version_set(&transaction, &versions_text, &versions)?;
            let seq: i64 = transaction.query_row(
                "SELECT coalesce(max(seq), 0) + 1 FROM snapshots",
                [],
                |row| row.get(0),
            )?;
            transaction.execute(
                "INSERT INTO snapshots
                   (id, seq, host_id, target, address, hostname, machine_id, collected_at,
                    schema_version, engines, version_set, slots, own)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
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
                    version_set,
                    content::encode_slots(&stored_slots),
                    plan.frame,
                ],
            )?;
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
        self.read_many(ids, Reading::Whole)
    }

    fn get_many_views(&self, ids: &[String]) -> Result<Vec<Option<FleetView>>, StoreError> {
        let snapshots = self.read_many(ids, Reading::Fleet)?;
        Ok(snapshots
            .into_iter()
            .map(|s| s.map(FleetView::of))
            .collect())
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
            let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
            for id in &sections {
                *counts.entry(*id).or_default() -= 1;
            }
            adjust_refs(&transaction, &counts)?;
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

/// A SQLite error opening an existing store, with the reason the file cannot be written when
/// there is one (SQLite says only `unable to open database file` or `attempt to write a readonly
/// database` for a read-only mount or a file the user may not write).
fn not_writable(path: &Path, err: StoreError) -> StoreError {
    let StoreError::Sqlite { path: at, source } = err else {
        return err;
    };
    match std::fs::OpenOptions::new().write(true).open(path) {
        Err(why) if path.exists() => StoreError::NotWritable {
            path: at,
            why: why.to_string(),
            source,
        },
        _ => StoreError::Sqlite { path: at, source },
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
    let names = crate::host_names::host_names(hostname, &snapshot.target, address_host, machine_id);
    for (name, kind) in names {
        let kind = kind.as_str();
        connection.execute(
            "INSERT INTO host_names (host_id, name, kind, last_seen) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (host_id, name, kind) DO UPDATE SET
               last_seen = max(last_seen, excluded.last_seen)",
            params![host_id, name, kind, now],
        )?;
    }
    Ok(Some(host_id))
}

/// Snapshot `id` as stored, with the sections it needs but `held`.
fn read_stored(
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
                content_error(format!(
                    "snapshot {id} needs section {section}, which is missing"
                ))
            })?;
        sections.insert(section, stored);
    }
    Ok(Some(Stored {
        slots,
        frame: frame.unwrap_or_default(),
        sections,
    }))
}

/// Plans how to store `slots` of `snapshot`, against its host's newest stored snapshot.
fn plan_put(
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
    let previous = match identify_host(connection, snapshot, false)? {
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
