//! Snapshot store: where `probe` keeps every snapshot it collects, so that a host can be compared
//! with its own past.
//!
//! The store is a trait, [`SnapshotStore`], with two implementations: the embedded default,
//! [`SqliteStore`] (one SQLite file, WAL mode, a busy timeout, one transaction per snapshot), and
//! the shared [`PgStore`] for teams and fleets whose audits run from many machines (PostgreSQL,
//! libpq's connection conventions). [`open`] picks one from a location. Both hold each
//! snapshot as content-addressed, zstd-compressed sections of its JSON document (a section that
//! did not change is a reference, not a copy; one that changed is kept as its difference from
//! the host's base copy of it) plus indexed columns for history queries, and the
//! outcome of every audited host ([`SnapshotStore::record_audit`]) for fleet reports across
//! audit shards. Schemas in `docs/STORE.md`.
//!
//! Hosts are identified by machine-id first, then by name: a renamed or re-addressed machine keeps
//! its history.
//!
//! ```
//! use probe_store::{SnapshotStore, SqliteStore};
//! let dir = tempfile::tempdir().unwrap();
//! let store = SqliteStore::open(&dir.path().join("snapshots.db")).unwrap();
//! let mut snapshot = probe_model::Snapshot::default();
//! snapshot.schema_version = probe_model::SCHEMA_VERSION;
//! snapshot.id = "gpu7-1".into();
//! snapshot.target = "gpu7".into();
//! store.put(&snapshot).unwrap();
//! assert_eq!(store.latest("gpu7").unwrap().unwrap().id, "gpu7-1");
//! ```

mod audit;
mod content;
mod document;
mod errors;
mod fingerprint;
mod host_names;
mod identity;
mod postgres;
mod schema;
mod selector;
mod sqlite;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use probe_model::{AuditRecord, FleetView, Snapshot, UnixTime};

pub use audit::{AuditRun, StoredAudit, runner_name};
pub use document::{from_json, to_json};
pub use errors::StoreError;
pub use fingerprint::Fingerprint;
pub use postgres::conninfo::{LocationError, PgEnv, is_postgres, redact as redact_location};
pub use postgres::{MIGRATION_TIMEOUT, OPERATION_TIMEOUT, PG_SCHEMA, POOL_SIZE, PgStore};
pub use schema::STORE_SCHEMA_VERSION;
pub use selector::{HostPoint, Selector, parse_host_reference};
pub use sqlite::SqliteStore;

/// Opens the store at `location`: a PostgreSQL URL or `key=value` connection string
/// ([`is_postgres`]), else a SQLite file path.
///
/// ```
/// use probe_model::{SCHEMA_VERSION, Snapshot};
///
/// let dir = tempfile::tempdir().unwrap();
/// let location = dir.path().join("snapshots.db");
/// let store = probe_store::open(location.to_str().unwrap()).unwrap();
/// let snapshot = Snapshot {
///     schema_version: SCHEMA_VERSION,
///     id: "gpu7-1700000000-ab12".into(),
///     target: "gpu7".into(),
///     collected_at: 1_700_000_000,
///     ..Snapshot::default()
/// };
/// let meta = store.put(&snapshot).unwrap();
/// assert_eq!(meta.id, snapshot.id);
/// assert_eq!(store.get(&meta.id).unwrap(), Some(snapshot));
/// assert_eq!(store.list(None).unwrap().len(), 1);
/// ```
pub fn open(location: &str) -> Result<Box<dyn SnapshotStore>, StoreError> {
    open_within(location, OPERATION_TIMEOUT)
}

/// [`open`], each operation of a PostgreSQL store bounded by `timeout` (connecting by its
/// `connect_timeout`): a server or network path that stops answering fails the operation with
/// [`StoreError::TimedOut`] instead of waiting forever. A SQLite store is a local file; its
/// waits are its busy timeout.
pub fn open_within(
    location: &str,
    timeout: std::time::Duration,
) -> Result<Box<dyn SnapshotStore>, StoreError> {
    open_bounded(location, timeout, MIGRATION_TIMEOUT)
}

/// [`open_within`], a PostgreSQL store's migration (when its layout is older) bounded by
/// `migration` (a run's deadline) instead of [`MIGRATION_TIMEOUT`].
pub fn open_bounded(
    location: &str,
    timeout: std::time::Duration,
    migration: std::time::Duration,
) -> Result<Box<dyn SnapshotStore>, StoreError> {
    if is_postgres(location) {
        Ok(Box::new(PgStore::open_bounded(
            location,
            &PgEnv::from_process(),
            timeout,
            migration,
        )?))
    } else {
        Ok(Box::new(SqliteStore::open(Path::new(location))?))
    }
}

/// One stored snapshot, without its document.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SnapshotMeta {
    pub id: String,
    /// The store's id of the host identity (stable across renames).
    pub host_id: i64,
    pub hostname: Option<String>,
    pub machine_id: Option<String>,
    pub target: String,
    pub address: Option<String>,
    pub collected_at: UnixTime,
    pub schema_version: u32,
    /// Engines seen running or configured (`sglang`, `vllm`).
    pub engines: Vec<String>,
    /// Versions of serving packages (`vllm` -> `0.11.0`, `torch` -> `2.8.0+cu128`) and the driver.
    pub versions: BTreeMap<String, String>,
}

impl SnapshotMeta {
    /// The meta of `snapshot` as stored under `host_id`, with the indexed values both stores
    /// derive from it.
    pub(crate) fn stored(
        snapshot: &Snapshot,
        host_id: i64,
        engines: std::collections::BTreeSet<String>,
        versions: BTreeMap<String, String>,
    ) -> SnapshotMeta {
        SnapshotMeta {
            id: snapshot.id.clone(),
            host_id,
            hostname: snapshot.host.hostname.clone(),
            machine_id: snapshot.host.machine_id.clone(),
            target: snapshot.target.clone(),
            address: snapshot.address.clone(),
            collected_at: snapshot.collected_at,
            schema_version: snapshot.schema_version,
            engines: engines.into_iter().collect(),
            versions,
        }
    }
}

/// What `prune` deletes: snapshots older than `older_than`, except the newest `keep_last` of
/// each host (which are always kept).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrunePolicy {
    /// Keep at least this many newest snapshots per host (default 1: a host never loses its
    /// baseline).
    pub keep_last: usize,
    /// Delete only snapshots taken before this time.
    pub older_than: Option<UnixTime>,
    /// Restrict to one host.
    pub host: Option<String>,
    /// Report what would be deleted without deleting.
    pub dry_run: bool,
}

/// What `policy` deletes of `all` (newest first): all but the newest `keep_last` of each host,
/// and of those only the ones taken before `older_than`.
pub(crate) fn prune_candidates(all: Vec<SnapshotMeta>, policy: &PrunePolicy) -> Vec<SnapshotMeta> {
    let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
    let mut doomed = Vec::new();
    for meta in all {
        let count = seen.entry(meta.host_id).or_default();
        *count += 1;
        if *count <= policy.keep_last {
            continue;
        }
        if policy
            .older_than
            .is_some_and(|limit| meta.collected_at >= limit)
        {
            continue;
        }
        doomed.push(meta);
    }
    doomed
}

/// A place snapshots are kept. Implementations must make each `put` atomic (a killed writer leaves
/// no half snapshot) and must not lose a snapshot when two writers run at once.
pub trait SnapshotStore: Send + Sync {
    /// Stores a snapshot; a snapshot with the same id replaces the stored one.
    fn put(&self, snapshot: &Snapshot) -> Result<SnapshotMeta, StoreError>;
    /// A snapshot by id.
    fn get(&self, id: &str) -> Result<Option<Snapshot>, StoreError>;
    /// Snapshots by id, in the order asked (`None` where an id is not stored): what a fleet
    /// report reads of every host. Implementations read each section shared by several of them
    /// once.
    fn get_many(&self, ids: &[String]) -> Result<Vec<Option<Snapshot>>, StoreError> {
        ids.iter().map(|id| self.get(id)).collect()
    }
    /// [`SnapshotStore::get_many`] as a fleet comparison reads them ([`FleetView`]: what
    /// `--outliers` reads of every host). Implementations do not parse what a view leaves out.
    fn get_many_views(&self, ids: &[String]) -> Result<Vec<Option<FleetView>>, StoreError> {
        let snapshots = self.get_many(ids)?;
        Ok(snapshots
            .into_iter()
            .map(|s| s.map(FleetView::of))
            .collect())
    }
    /// The configuration fingerprints of snapshots `ids` ([`Fingerprint`]), in the order asked
    /// (`None` where an id is not stored): what `--outliers` compares before it reads any view,
    /// so that it reads one view per distinct configuration. Snapshots stored before
    /// fingerprints were kept have theirs computed from their views.
    fn fingerprints(&self, ids: &[String]) -> Result<Vec<Option<Fingerprint>>, StoreError> {
        Ok(self
            .get_many_views(ids)?
            .iter()
            .map(|view| view.as_ref().map(Fingerprint::of))
            .collect())
    }
    /// The newest snapshot of a host (name, target, address or machine-id).
    fn latest(&self, host: &str) -> Result<Option<Snapshot>, StoreError>;
    /// The newest stored snapshot of the same host identity taken before `snapshot` (other than
    /// `snapshot` itself): the baseline for drift.
    fn previous(&self, snapshot: &Snapshot) -> Result<Option<Snapshot>, StoreError>;
    /// The newest stored snapshot of a host, without its document (what a fleet report needs
    /// of each host).
    fn newest(&self, host: &str) -> Result<Option<SnapshotMeta>, StoreError> {
        Ok(self.list(Some(host))?.into_iter().next())
    }
    /// Stored snapshots, newest first, optionally of one host.
    fn list(&self, host: Option<&str>) -> Result<Vec<SnapshotMeta>, StoreError>;
    /// The snapshots of one host, oldest first.
    fn history(&self, host: &str) -> Result<Vec<SnapshotMeta>, StoreError>;
    /// Deletes by policy; returns the deleted (or, dry run, deletable) snapshots.
    fn prune(&self, policy: &PrunePolicy) -> Result<Vec<SnapshotMeta>, StoreError>;
    /// Records the outcome of one audited host (replacing an earlier record of the same run and
    /// host), so that a fleet report can be read across every runner and shard.
    fn record_audit(
        &self,
        run: &AuditRun,
        record: &AuditRecord,
        recorded_at: UnixTime,
    ) -> Result<(), StoreError>;
    /// The newest audit record of every host (by inventory name), across runs and shards, sorted
    /// by host.
    fn last_audits(&self) -> Result<Vec<StoredAudit>, StoreError>;
    /// Where the store is, safe to print (a URL without its password).
    fn location(&self) -> String;

    /// The run's overall deadline (`probe audit`'s): from now on, each wait for a shared store
    /// (connecting, TLS, each query, the commit) is bounded by what is left of it as well as by
    /// the store's own bound, and an operation asked for after it gives back
    /// [`StoreError::DeadlinePassed`] at once. A SQLite store is a local file; its waits are its
    /// busy timeout, and this does nothing.
    fn set_deadline(&self, _deadline: std::time::Instant) {}

    /// The snapshot a reference selects.
    fn resolve(&self, selector: &Selector) -> Result<Snapshot, StoreError> {
        match selector {
            Selector::Id(id) => self
                .get(id)?
                .ok_or_else(|| StoreError::NotFound(selector.to_string())),
            Selector::Host { host, point } => {
                let history = self.history(host)?;
                let chosen = match point {
                    HostPoint::Latest => history.last(),
                    HostPoint::Back(n) => usize::try_from(*n)
                        .ok()
                        .and_then(|n| history.len().checked_sub(n + 1))
                        .and_then(|index| history.get(index)),
                    HostPoint::Before { end, .. } => {
                        history.iter().rev().find(|meta| meta.collected_at < *end)
                    }
                };
                let Some(meta) = chosen else {
                    return Err(StoreError::NotFound(selector.to_string()));
                };
                self.get(&meta.id)?
                    .ok_or_else(|| StoreError::NotFound(selector.to_string()))
            }
        }
    }

    /// Imports a snapshot document (refusing one from a newer schema).
    fn import(&self, text: &str, what: &str) -> Result<SnapshotMeta, StoreError> {
        let snapshot = from_json(text, what)?;
        self.put(&snapshot)
    }

    /// Exports a snapshot as its JSON document: byte for byte the document `put` stored
    /// ([`to_json`] of the snapshot).
    fn export(&self, id: &str) -> Result<String, StoreError> {
        let snapshot = self
            .get(id)?
            .ok_or_else(|| StoreError::NotFound(format!("id {id}")))?;
        Ok(to_json(&snapshot))
    }
}

/// The default store path: `$XDG_DATA_HOME/probe/snapshots.db`, else
/// `~/.local/share/probe/snapshots.db`; `None` when neither variable is set.
pub fn default_store_path() -> Option<PathBuf> {
    let data_home = std::env::var_os("XDG_DATA_HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|value| !value.is_empty())
                .map(|home| PathBuf::from(home).join(".local").join("share"))
        })?;
    Some(data_home.join("probe").join("snapshots.db"))
}
