//! The shared store: PostgreSQL, for teams and fleets whose audits run from many machines.
//!
//! * tokio-postgres with a deadpool pool on a small runtime owned by the store, behind the
//!   synchronous [`SnapshotStore`] trait (a call waits for its query; inside a multi-threaded
//!   tokio runtime it waits in `block_in_place`, so the caller's other tasks keep running).
//! * Connection settings follow libpq ([`conninfo`]): URL or `key=value`, `PGSERVICE`, `PG*`
//!   variables, `PGPASSWORD`, `~/.pgpass`; TLS by `sslmode` ([`tls`]). Locations are printed
//!   without their password.
//! * Everything lives in the schema `probe`; `probe.schema_meta` holds the layout version and
//!   `migrate::MIGRATIONS` bring it up to date in one transaction under an advisory lock, so
//!   runners starting together migrate once. A newer layout is refused.
//! * Host identity is [`crate::identity`]'s rule; [`hosts`] holds only its SQL. Each snapshot
//!   is one transaction ([`write`]). Writers of the same host identity queue on an advisory
//!   lock of that identity; new machines are filed with `INSERT ... ON CONFLICT (machine_id)`, so
//!   two runners never split one machine into two hosts. Serialization failures and deadlocks
//!   are retried.

mod audit;
mod connect;
pub mod conninfo;
mod hosts;
pub(crate) mod migrate;
mod read;
mod tls;
mod write;

use std::collections::BTreeSet;
use std::future::Future;
use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use probe_model::{AuditRecord, FleetView, Snapshot, UnixTime};

use crate::Fingerprint;
use crate::content::{self, SectionCache};
use crate::identity::HostKey;
use crate::schema::{STORE_SCHEMA_VERSION, indexed_values};
use crate::{AuditRun, PrunePolicy, SnapshotMeta, SnapshotStore, StoreError, StoredAudit, to_json};
use connect::{CONNECT_TIMEOUT, POOL_WAIT, clean, connection, pg_config, pg_error, session_bounds};
use conninfo::{PasswordSource, PgEnv};
use hosts::{find_host_by_name, identify_host};
use read::{query_meta, read_stored};
use write::PutRow;

/// The PostgreSQL schema that holds the store's tables.
pub const PG_SCHEMA: &str = "probe";

/// Connections one store (one probe process) keeps at most: the most calls a store serves at
/// once (a SQLite store serves one at a time).
pub const POOL_SIZE: usize = 4;
/// Default bound on one store operation (a read, or a snapshot's whole transaction with its
/// commit): past it the operation is given up with [`StoreError::TimedOut`] instead of waiting
/// on a server or a network path that stopped answering.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(60);
/// Default bound on a schema migration, whatever the operation bound: one transaction that may
/// rewrite every stored snapshot (layout 2 to 3 moves each document into sections). Only an
/// open that finds an older layout runs one; reading which layout the store has is a plain
/// operation. Past it the migration is given up and rolled back
/// ([`StoreError::MigrationTimedOut`]), the store left as it was.
pub const MIGRATION_TIMEOUT: Duration = Duration::from_secs(600);

/// A PostgreSQL snapshot store.
pub struct PgStore {
    /// The location as given, password redacted.
    location: String,
    pool: Pool,
    runner: String,
    runtime: Option<tokio::runtime::Runtime>,
    /// Bound on each operation ([`OPERATION_TIMEOUT`] unless opened with another).
    timeout: Duration,
    /// The run's overall deadline, when one was set ([`SnapshotStore::set_deadline`]).
    deadline: std::sync::Mutex<Option<Instant>>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location)
            .finish()
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Dropping a runtime may block; inside another runtime that would panic.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl PgStore {
    /// Opens the store `location` (URL or `key=value`) with the process environment, connecting
    /// and migrating the schema.
    pub fn open(location: &str) -> Result<PgStore, StoreError> {
        Self::open_with(location, &PgEnv::from_process())
    }

    /// Opens with an explicit libpq environment (tests).
    pub fn open_with(location: &str, env: &PgEnv) -> Result<PgStore, StoreError> {
        Self::open_within(location, env, OPERATION_TIMEOUT)
    }

    /// Opens with an explicit libpq environment, every operation bounded by `timeout`
    /// (client-side, and `statement_timeout` and `idle_in_transaction_session_timeout` on the
    /// server); connecting is bounded by `connect_timeout` (default 10 s) as a whole: TCP, TLS
    /// and start-up. A migration is bounded by [`MIGRATION_TIMEOUT`].
    pub fn open_within(
        location: &str,
        env: &PgEnv,
        timeout: Duration,
    ) -> Result<PgStore, StoreError> {
        Self::open_bounded(location, env, timeout, MIGRATION_TIMEOUT)
    }

    /// [`Self::open_within`], a migration (when the store has an older layout) bounded by
    /// `migration` instead of [`MIGRATION_TIMEOUT`].
    pub fn open_bounded(
        location: &str,
        env: &PgEnv,
        timeout: Duration,
        migration: Duration,
    ) -> Result<PgStore, StoreError> {
        let timeout = timeout.max(Duration::from_secs(1));
        let migration = migration.max(Duration::from_secs(1));
        let redacted = conninfo::redact(location);
        let bad = |source: conninfo::LocationError| StoreError::BadLocation {
            store: redacted.clone(),
            source,
        };
        let resolved = conninfo::resolve(location, env).map_err(bad)?;
        for note in &resolved.notes {
            tracing::warn!(store = %redacted, "{note}");
        }
        if resolved.password_source == PasswordSource::ConnectionString {
            tracing::warn!(
                store = %redacted,
                "the store URL holds a password, visible to other users in ps and in shell \
                 history: use PGPASSWORD, ~/.pgpass or PGSERVICE instead"
            );
        }
        tracing::debug!(store = %redacted, password = ?resolved.password_source, sslmode = ?resolved.sslmode, "connecting");
        let config = pg_config(&resolved, timeout).map_err(bad)?;
        let connect_timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        let session = std::sync::Arc::new(session_bounds(timeout, resolved.get("options")));
        let tls =
            tls::client_config(resolved.sslmode, resolved.root_cert.as_deref()).map_err(bad)?;
        let connector = tokio_postgres_rustls::MakeRustlsConnect::new(tls);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("probe-store-pg")
            .enable_all()
            .build()
            .map_err(|err| bad(format!("cannot start the store's runtime: {err}").into()))?;
        let manager = Manager::from_config(
            config,
            connector,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = {
            let _entered = runtime.enter();
            pool(manager, connect_timeout, session).map_err(|cause| bad(cause.into()))?
        };
        let store = PgStore {
            location: redacted,
            pool,
            runner: crate::runner_name(),
            runtime: Some(runtime),
            timeout,
            deadline: std::sync::Mutex::new(None),
        };
        store.migrate(migration)?;
        Ok(store)
    }

    /// Reads the store's layout (one operation, under the operation bound) and, when it is
    /// older, migrates it under `bound`, the migration's own.
    fn migrate(&self, bound: Duration) -> Result<(), StoreError> {
        let from = self.run(migrate::stored_version)?;
        if from >= STORE_SCHEMA_VERSION {
            return Ok(());
        }
        self.run_within(bound, move |pool, store| {
            migrate::migrate(pool, store, bound)
        })
        .map_err(|err| match err {
            StoreError::TimedOut { store, waited_s } => StoreError::MigrationTimedOut {
                store,
                from,
                to: STORE_SCHEMA_VERSION,
                waited_s,
            },
            other => other,
        })
    }

    /// The bound on each operation.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs `work` (given the pool and the printable location) on the store's runtime and waits,
    /// at most the store's operation bound.
    fn run<T, F, Fut>(&self, work: F) -> Result<T, StoreError>
    where
        F: FnOnce(Pool, String) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        self.run_within(self.timeout, work)
    }

    /// [`Self::run`] with its own bound. Every await of every operation (taking or making a
    /// connection, TLS, each query, the commit) is inside it: one that does not finish in time is
    /// dropped, and the pool's idle connections with it (one of them may be the stalled one).
    fn run_within<T, F, Fut>(&self, bound: Duration, work: F) -> Result<T, StoreError>
    where
        F: FnOnce(Pool, String) -> Fut,
        Fut: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        // What is left of the run's deadline, when it is shorter than the bound.
        let left = self
            .deadline
            .lock()
            .ok()
            .and_then(|deadline| *deadline)
            .map(|deadline| deadline.saturating_duration_since(Instant::now()));
        if left.is_some_and(|left| left.is_zero()) {
            return Err(StoreError::DeadlinePassed {
                store: self.location.clone(),
                waited_s: 0,
            });
        }
        let cut = left.filter(|left| *left < bound);
        let bound = cut.unwrap_or(bound);
        let future = work(self.pool.clone(), self.location.clone());
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        let Some(runtime) = &self.runtime else {
            return Err(self.failure("the store was closed"));
        };
        let (pool, store) = (self.pool.clone(), self.location.clone());
        runtime.spawn(async move {
            let result = match tokio::time::timeout(bound, future).await {
                Ok(result) => result,
                Err(_) => {
                    pool.retain(|_, _| false);
                    tracing::warn!(store = %store, bound_s = bound.as_secs(), "store operation given up");
                    if cut.is_some() {
                        Err(StoreError::DeadlinePassed {
                            store,
                            waited_s: bound.as_secs(),
                        })
                    } else {
                        Err(StoreError::TimedOut {
                            store,
                            waited_s: bound.as_secs(),
                        })
                    }
                }
            };
            let _ = sender.send(result);
        });
        let wait = || {
            receiver
                .recv()
                .unwrap_or_else(|_| Err(self.failure("the store's task ended")))
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(wait)
            }
            _ => wait(),
        }
    }

    fn failure(&self, cause: &str) -> StoreError {
        StoreError::Postgres {
            store: self.location.clone(),
            cause: cause.to_string(),
        }
    }

    /// The stored document of `id`, put back together from its sections.
    fn document(&self, id: &str) -> Result<Option<String>, StoreError> {
        let id = id.to_string();
        let what = format!("{id} in {}", self.location);
        let stored = self.run(|pool, store| async move {
            let mut client = connection(&pool, &store).await?;
            let mut stored = read_stored(&mut client, &store, &[id], &BTreeSet::new()).await?;
            Ok(stored.pop().flatten())
        })?;
        stored
            .map(|stored| {
                stored
                    .assemble(&mut SectionCache::default())
                    .map_err(|cause| StoreError::BadDocument {
                        what,
                        cause: cause.to_string(),
                    })
            })
            .transpose()
    }

    fn meta_by_host(&self, host: &str) -> Result<Vec<SnapshotMeta>, StoreError> {
        let host = host.to_string();
        self.run(|pool, store| async move {
            let client = connection(&pool, &store).await?;
            let Some(host_id) = find_host_by_name(&client, &host)
                .await
                .map_err(|err| pg_error(&store, &err))?
            else {
                return Ok(Vec::new());
            };
            query_meta(
                &client,
                "WHERE s.host_id = $1 ORDER BY s.collected_at ASC, s.seq ASC",
                &[&host_id],
            )
            .await
            .map_err(|err| pg_error(&store, &err))
        })
    }
}

impl PgStore {
    /// `get_many` and `get_many_views`: each snapshot read as `reading` says.
    fn read_many(
        &self,
        ids: &[String],
        reading: crate::document::Reading,
    ) -> Result<Vec<Option<Snapshot>>, StoreError> {
        let mut reader = crate::document::ManyReader::new(reading);
        let mut snapshots = Vec::with_capacity(ids.len());
        // In batches of one statement for the snapshots and one for the sections they need
        // (but those read for an earlier batch), in one read-only transaction each.
        for batch in ids.chunks(256) {
            let held = reader.held();
            let wanted = batch.to_vec();
            let stored = self.run(|pool, store| async move {
                let mut client = connection(&pool, &store).await?;
                read_stored(&mut client, &store, &wanted, &held).await
            })?;
            snapshots.extend(reader.read_batch(stored, |index| {
                format!("{} in {}", batch[index], self.location)
            })?);
        }
        Ok(snapshots)
    }
}

/// The pool of a store (inside its runtime): at most [`POOL_SIZE`] connections, each set up
/// with `session` (its bounds) once made.
fn pool(
    manager: Manager,
    connect_timeout: Duration,
    session: std::sync::Arc<String>,
) -> Result<Pool, String> {
    Pool::builder(manager)
        .max_size(POOL_SIZE)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(POOL_WAIT))
        // tokio-postgres bounds only the socket's connect; libpq's connect_timeout is the whole
        // connection (a server or proxy that accepts and then says nothing).
        .create_timeout(Some(connect_timeout))
        .recycle_timeout(Some(connect_timeout))
        .post_create(deadpool_postgres::Hook::async_fn(move |client, _| {
            let session = std::sync::Arc::clone(&session);
            Box::pin(async move {
                if !session.is_empty() {
                    client
                        .batch_execute(&session)
                        .await
                        .map_err(deadpool_postgres::HookError::Backend)?;
                }
                Ok(())
            })
        }))
        .build()
        .map_err(|err| err.to_string())
}

impl SnapshotStore for PgStore {
    fn set_deadline(&self, deadline: Instant) {
        if let Ok(mut slot) = self.deadline.lock() {
            *slot = Some(deadline);
        }
    }

    fn put(&self, snapshot: &Snapshot) -> Result<SnapshotMeta, StoreError> {
        if !snapshot.redacted {
            return Err(StoreError::Unredacted {
                store: self.location.clone(),
                id: snapshot.id.clone(),
            });
        }
        let (engines, versions) = indexed_values(snapshot);
        let row = PutRow {
            id: clean(&snapshot.id),
            identity: HostKey::of(snapshot).cleaned(clean),
            address: snapshot.address.as_deref().map(clean),
            collected_at: snapshot.collected_at,
            schema_version: i32::try_from(snapshot.schema_version).unwrap_or(i32::MAX),
            engines: engines.iter().map(|engine| clean(engine)).collect(),
            versions: clean(&serde_json::to_string(&versions).unwrap_or_else(|_| "{}".into())),
            slots: content::slots_of(&content::split(&to_json(snapshot))),
            collected_by: self.runner.clone(),
            fingerprint: Fingerprint::of_snapshot(snapshot).stored(),
        };
        let host_id = self.run(|pool, store| write::put_row(pool, store, row))?;
        Ok(SnapshotMeta::stored(snapshot, host_id, engines, versions))
    }

    fn get(&self, id: &str) -> Result<Option<Snapshot>, StoreError> {
        let what = format!("{id} in {}", self.location);
        self.document(id)?
            .map(|text| crate::document::from_stored(&text, &what))
            .transpose()
    }

    fn get_many(&self, ids: &[String]) -> Result<Vec<Option<Snapshot>>, StoreError> {
        self.read_many(ids, crate::document::Reading::Whole)
    }

    fn get_many_views(&self, ids: &[String]) -> Result<Vec<Option<FleetView>>, StoreError> {
        let snapshots = self.read_many(ids, crate::document::Reading::Fleet)?;
        Ok(snapshots
            .into_iter()
            .map(|s| s.map(FleetView::of))
            .collect())
    }

    fn fingerprints(&self, ids: &[String]) -> Result<Vec<Option<Fingerprint>>, StoreError> {
        let mut columns = Vec::with_capacity(ids.len());
        for batch in ids.chunks(4096) {
            let wanted = batch.to_vec();
            columns.extend(self.run(|pool, store| async move {
                let client = connection(&pool, &store).await?;
                read::fingerprint_columns(&client, &wanted)
                    .await
                    .map_err(|err| pg_error(&store, &err))
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
        let host = host.to_string();
        self.run(|pool, store| async move {
            let client = connection(&pool, &store).await?;
            let Some(host_id) = find_host_by_name(&client, &host)
                .await
                .map_err(|err| pg_error(&store, &err))?
            else {
                return Ok(None);
            };
            query_meta(
                &client,
                "WHERE s.host_id = $1 ORDER BY s.collected_at DESC, s.seq DESC LIMIT 1",
                &[&host_id],
            )
            .await
            .map(|mut metas| metas.pop())
            .map_err(|err| pg_error(&store, &err))
        })
    }

    fn export(&self, id: &str) -> Result<String, StoreError> {
        self.document(id)?
            .ok_or_else(|| StoreError::NotFound(format!("id {id}")))
    }

    fn previous(&self, snapshot: &Snapshot) -> Result<Option<Snapshot>, StoreError> {
        let key = HostKey::of(snapshot).cleaned(clean);
        let id = snapshot.id.clone();
        let previous_id: Option<String> = self.run(|pool, store| async move {
            let fail = |err: tokio_postgres::Error| pg_error(&store, &err);
            let client = connection(&pool, &store).await?;
            let Some(host_id) = identify_host(&client, &key, false).await.map_err(fail)? else {
                return Ok(None);
            };
            client
                .query_opt(
                    "SELECT id FROM probe.snapshots
                     WHERE host_id = $1 AND id != $2 AND collected_at <= to_timestamp($3)
                     ORDER BY collected_at DESC, seq DESC LIMIT 1",
                    &[&host_id, &id, &(key.at as f64)],
                )
                .await
                .map(|row| row.map(|row| row.get(0)))
                .map_err(fail)
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
            None => self.run(|pool, store| async move {
                let client = connection(&pool, &store).await?;
                query_meta(&client, "ORDER BY s.collected_at DESC, s.seq DESC", &[])
                    .await
                    .map_err(|err| pg_error(&store, &err))
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
        let ids: Vec<String> = doomed.iter().map(|meta| meta.id.clone()).collect();
        self.run(|pool, store| write::delete(pool, store, ids))?;
        Ok(doomed)
    }

    fn record_audit(
        &self,
        run: &AuditRun,
        record: &AuditRecord,
        recorded_at: UnixTime,
    ) -> Result<(), StoreError> {
        let write = audit::AuditWrite {
            run: run.clone(),
            host: clean(&record.host),
            status: record.status.as_str(),
            snapshot_id: record.snapshot_id.clone(),
            text: serde_json::to_string(record)
                .unwrap_or_else(|_| "{}".into())
                .replace("\\u0000", "\u{fffd}"),
            recorded_at,
        };
        self.run(|pool, store| audit::record(pool, store, write))
    }

    fn last_audits(&self) -> Result<Vec<StoredAudit>, StoreError> {
        let rows = self.run(audit::last_rows)?;
        crate::audit::parsed(rows, &self.location)
    }

    fn location(&self) -> String {
        self.location.clone()
    }
}
