//! The embedded store: one SQLite file in WAL mode.
//!
//! Safety rules, in order of importance:
//! * An existing file is first checked read-only (header, schema table, schema version); a file
//!   that fails is reported and never written, let alone "repaired".
//! * Each snapshot is written in one `BEGIN IMMEDIATE` transaction: a killed writer leaves no half
//!   snapshot, and the write lock is taken up front so two writers queue instead of deadlocking.
//! * Writers wait on a busy timeout and retry; readers never block writers (WAL).

mod audit;
mod file;
mod hosts;
pub(crate) mod migrate;
mod read;
mod write;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use probe_model::{AuditRecord, FleetView, Snapshot, UnixTime};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};

use crate::Fingerprint;
use crate::content::{self, Plan, Section, SectionCache};
use crate::document::{ManyReader, Reading, from_stored};
use crate::identity::HostKey;
use crate::schema::indexed_values;
use crate::{AuditRun, PrunePolicy, SnapshotMeta, SnapshotStore, StoreError, StoredAudit, to_json};
use file::{BUSY_TIMEOUT, check_existing, is_busy, not_writable, sql_error};
use hosts::{find_host_by_name, identify_host};
use read::{query_meta, read_stored};
use write::plan_put;

/// The page size of a new store: a snapshot's row, with its own frame, fits in one page instead
/// of spilling into an overflow page that it leaves mostly empty.
const PAGE_SIZE: u32 = 16384;

/// Attempts of a whole write transaction when the lock stays busy past the timeout.
const WRITE_ATTEMPTS: u32 = 4;

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
            migrate::migrate(&transaction)?;
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
                        cause: cause.to_string(),
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
        let indexed = write::Indexed {
            engines: engines.iter().cloned().collect::<Vec<_>>().join(","),
            versions_text: serde_json::to_string(&versions).unwrap_or_else(|_| "{}".into()),
            versions: &versions,
            fingerprint: Fingerprint::of_snapshot(snapshot).stored(),
        };
        let planned = self.plan(snapshot, &slots)?;
        let host_id = self.with_retries(|connection| {
            let transaction =
                connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let host_id = write::put_in(&transaction, snapshot, &slots, &planned, &indexed)?;
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

    fn fingerprints(&self, ids: &[String]) -> Result<Vec<Option<Fingerprint>>, StoreError> {
        let mut columns = Vec::with_capacity(ids.len());
        for batch in ids.chunks(256) {
            columns.extend(self.with_retries(|connection| {
                let transaction = connection.transaction()?;
                read::fingerprint_columns(&transaction, batch)
            })?);
        }
        crate::fingerprint::completed(ids, columns, |ids| self.get_many_views(ids))
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
            let Some(host_id) = identify_host(&transaction, &HostKey::of(snapshot), false)? else {
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
            let ids: Vec<&str> = doomed.iter().map(|meta| meta.id.as_str()).collect();
            write::delete_in(&transaction, &ids)?;
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
        self.with_retries(|connection| audit::record(connection, run, record, recorded_at))
    }

    fn last_audits(&self) -> Result<Vec<StoredAudit>, StoreError> {
        let rows = self.with_retries(audit::last_rows)?;
        crate::audit::parsed(rows, &self.path.display().to_string())
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}

#[cfg(test)]
mod tests;
