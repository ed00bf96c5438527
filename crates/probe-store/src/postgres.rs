//! The shared store: PostgreSQL, for teams and fleets whose audits run from many machines.
//!
//! * tokio-postgres with a deadpool pool on a small runtime owned by the store, behind the
//!   synchronous [`SnapshotStore`] trait (a call waits for its query; inside a multi-threaded
//!   tokio runtime it waits in `block_in_place`, so the caller's other tasks keep running).
//! * Connection settings follow libpq ([`conninfo`]): URL or `key=value`, `PGSERVICE`, `PG*`
//!   variables, `PGPASSWORD`, `~/.pgpass`; TLS by `sslmode` ([`tls`]). Locations are printed
//!   without their password.
//! * Everything lives in the schema `probe`; `probe.schema_meta` holds the layout version and
//!   [`MIGRATIONS`] bring it up to date in one transaction under an advisory lock, so runners
//!   starting together migrate once. A newer layout is refused.
//! * Each snapshot is one transaction. Writers of the same host identity queue on an advisory
//!   lock of that identity; new machines are filed with `INSERT ... ON CONFLICT (machine_id)`, so
//!   two runners never split one machine into two hosts. Serialization failures and deadlocks
//!   are retried.

pub mod conninfo;
mod tls;

use std::future::Future;
use std::time::{Duration, Instant};

use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use probe_model::{AuditRecord, FleetView, Snapshot, UnixTime};
use tokio_postgres::Row;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::content::{self, Plan, Planned, Previous, Section, SectionCache, Slot, Stored};
use crate::sqlite::{SECTIONS_VERSION, SLOTS_VERSION, indexed_values, strip_port};
use crate::{
    AuditRun, PrunePolicy, STORE_SCHEMA_VERSION, SnapshotMeta, SnapshotStore, StoreError,
    StoredAudit, from_json, to_json,
};
use conninfo::{PasswordSource, PgEnv, Resolved, SslMode};

/// The PostgreSQL schema that holds the store's tables.
pub const PG_SCHEMA: &str = "probe";

/// Connections one store (one probe process) keeps at most.
const POOL_SIZE: usize = 4;
/// How long a statement waits for a free connection before the store counts as busy.
const POOL_WAIT: Duration = Duration::from_secs(30);
/// Default `connect_timeout`: TCP connect, TLS and start-up together, as in libpq.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default bound on one store operation (a read, or a snapshot's whole transaction with its
/// commit): past it the operation is given up with [`StoreError::TimedOut`] instead of waiting
/// on a server or a network path that stopped answering.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(60);
/// Migrations may rewrite every stored snapshot: they get this many operation bounds.
const MIGRATION_BOUNDS: u32 = 10;
/// TCP keepalive: first probe after this much silence, then every `KEEPALIVE_INTERVAL`, given up
/// after `KEEPALIVE_RETRIES` unanswered probes (a peer that vanished, not one that stalls).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(15);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_RETRIES: u32 = 3;
/// Attempts of a write transaction that failed on a serialization failure or deadlock.
const WRITE_ATTEMPTS: u32 = 4;
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

/// Key of the advisory lock between writers (shared) and the removal of unreferenced sections
/// (exclusive): a writer that found a section keeps it alive until it has committed its
/// reference.
const SECTIONS_LOCK: i64 = 0x70_72_6f_62_65_73;

const META_COLUMNS: &str = "s.id, s.host_id, s.hostname, s.machine_id, s.target, s.address,
    extract(epoch from s.collected_at)::bigint, s.schema_version, s.engines,
    (SELECT v.versions::text FROM probe.version_sets v WHERE v.id = s.version_set)";

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
    /// and start-up.
    pub fn open_within(
        location: &str,
        env: &PgEnv,
        timeout: Duration,
    ) -> Result<PgStore, StoreError> {
        let timeout = timeout.max(Duration::from_secs(1));
        let redacted = conninfo::redact(location);
        let bad = |cause: String| StoreError::BadLocation {
            store: redacted.clone(),
            cause,
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
            .map_err(|err| bad(format!("cannot start the store's runtime: {err}")))?;
        let manager = Manager::from_config(
            config,
            connector,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = {
            let _entered = runtime.enter();
            Pool::builder(manager)
                .max_size(POOL_SIZE)
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(POOL_WAIT))
                // tokio-postgres bounds only the socket's connect; libpq's connect_timeout is
                // the whole connection (a server or proxy that accepts and then says nothing).
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
                .map_err(|err| bad(err.to_string()))?
        };
        let store = PgStore {
            location: redacted,
            pool,
            runner: crate::runner_name(),
            runtime: Some(runtime),
            timeout,
            deadline: std::sync::Mutex::new(None),
        };
        store.run_within(timeout * MIGRATION_BOUNDS, migrate)?;
        Ok(store)
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
                    .map_err(|cause| StoreError::BadDocument { what, cause })
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

/// tokio-postgres settings from the resolved libpq keywords; `timeout` is TCP_USER_TIMEOUT.
fn pg_config(resolved: &Resolved, timeout: Duration) -> Result<tokio_postgres::Config, String> {
    let mut config = tokio_postgres::Config::new();
    for (host, port) in resolved.hosts.iter().zip(&resolved.ports) {
        config.host(host);
        config.port(*port);
    }
    if let Some(address) = resolved.get("hostaddr") {
        for address in address.split(',') {
            config.hostaddr(
                address
                    .parse()
                    .map_err(|_| format!("hostaddr {address:?} is not an IP address"))?,
            );
        }
    }
    if let Some(user) = resolved.get("user") {
        config.user(user);
    }
    if let Some(password) = resolved.get("password") {
        config.password(password);
    }
    if let Some(dbname) = resolved.get("dbname") {
        config.dbname(dbname);
    }
    config.application_name(
        resolved
            .get("application_name")
            .or(resolved.get("fallback_application_name"))
            .unwrap_or("probe"),
    );
    if let Some(options) = resolved.get("options") {
        config.options(options);
    }
    config
        .keepalives(true)
        .keepalives_idle(KEEPALIVE_IDLE)
        .keepalives_interval(KEEPALIVE_INTERVAL)
        .keepalives_retries(KEEPALIVE_RETRIES)
        .tcp_user_timeout(timeout);
    let timeout = match resolved.get("connect_timeout") {
        Some(seconds) => Duration::from_secs(
            seconds
                .parse::<u64>()
                .map_err(|_| format!("connect_timeout {seconds:?} is not a number of seconds"))?
                .max(2),
        ),
        None => CONNECT_TIMEOUT,
    };
    config.connect_timeout(timeout);
    match resolved.get("target_session_attrs") {
        None | Some("any") => {}
        Some("read-write") => {
            config.target_session_attrs(tokio_postgres::config::TargetSessionAttrs::ReadWrite);
        }
        Some(other) => return Err(format!("target_session_attrs {other:?} is not supported")),
    }
    config.ssl_mode(match resolved.sslmode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Allow | SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            tokio_postgres::config::SslMode::Require
        }
    });
    Ok(config)
}

/// What each new connection sets: `timeout` as the server's bound on each statement and on each
/// idle transaction (a client that stalled or vanished mid-transaction does not keep its locks),
/// unless the location's `options` set them. A `SET`, not a start-up option: PgBouncer refuses
/// start-up options it does not know.
fn session_bounds(timeout: Duration, options: Option<&str>) -> String {
    let ms = timeout.as_millis();
    ["statement_timeout", "idle_in_transaction_session_timeout"]
        .into_iter()
        .filter(|name| !options.is_some_and(|o| o.contains(name)))
        .map(|name| format!("SET {name} = {ms};"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One line for a PostgreSQL error: the server's message and SQLSTATE, or the client's cause.
fn pg_error(store: &str, err: &tokio_postgres::Error) -> StoreError {
    let cause = match err.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut cause = err.to_string();
            let mut source = std::error::Error::source(err);
            while let Some(inner) = source {
                let text = inner.to_string();
                if !cause.contains(&text) {
                    cause = format!("{cause}: {text}");
                }
                source = inner.source();
            }
            cause
        }
    };
    StoreError::Postgres {
        store: store.to_string(),
        cause,
    }
}

/// Whether a failed transaction may succeed when retried.
fn retryable(err: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    err.code().is_some_and(|code| {
        *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED
    })
}

async fn connection(pool: &Pool, store: &str) -> Result<deadpool_postgres::Object, StoreError> {
    pool.get().await.map_err(|err| match err {
        deadpool_postgres::PoolError::Timeout(
            deadpool_postgres::TimeoutType::Create | deadpool_postgres::TimeoutType::Recycle,
        ) => StoreError::TimedOut {
            store: store.into(),
            waited_s: pool.timeouts().create.unwrap_or(CONNECT_TIMEOUT).as_secs(),
        },
        deadpool_postgres::PoolError::Timeout(_) => StoreError::Busy {
            path: store.into(),
            waited_s: POOL_WAIT.as_secs(),
        },
        deadpool_postgres::PoolError::Backend(err) => pg_error(store, &err),
        other => StoreError::Postgres {
            store: store.to_string(),
            cause: other.to_string(),
        },
    })
}

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

async fn migrate(pool: Pool, store: String) -> Result<(), StoreError> {
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
    // A migration may rewrite every snapshot: its own, longer bound is the client's.
    transaction
        .batch_execute("SET LOCAL statement_timeout = 0")
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

/// PostgreSQL text cannot hold NUL; remote bytes might. They become U+FFFD.
fn clean(text: &str) -> String {
    text.replace('\0', "\u{fffd}")
}

fn clean_opt(text: Option<&str>) -> Option<String> {
    text.map(clean)
}

/// What `put` needs of a snapshot, owned (the work runs on the store's runtime).
struct PutRow {
    id: String,
    identity: HostKey,
    address: Option<String>,
    collected_at: UnixTime,
    schema_version: i32,
    engines: Vec<String>,
    versions: String,
    slots: Vec<Section>,
    collected_by: String,
}

/// The names a snapshot files its host under.
struct HostKey {
    machine_id: Option<String>,
    hostname: Option<String>,
    target: String,
    address_host: Option<String>,
    at: UnixTime,
}

impl HostKey {
    fn of(snapshot: &Snapshot) -> HostKey {
        let trimmed = |value: &Option<String>| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|value| !value.is_empty())
                .map(clean)
        };
        HostKey {
            machine_id: trimmed(&snapshot.host.machine_id),
            hostname: trimmed(&snapshot.host.hostname),
            target: clean(&snapshot.target),
            address_host: snapshot.address.as_deref().map(strip_port).map(clean),
            at: snapshot.collected_at,
        }
    }

    /// The advisory lock writers of this host queue on.
    fn lock_key(&self) -> String {
        match &self.machine_id {
            Some(id) => format!("machine-id:{id}"),
            None => format!(
                "name:{}",
                self.hostname
                    .as_deref()
                    .unwrap_or(&self.target)
                    .to_lowercase()
            ),
        }
    }
}

/// Finds (and with `create`, records) the host identity: machine-id first, then a name whose
/// host cannot be another machine (the same rules as the SQLite store).
async fn identify_host(
    client: &impl GenericClient,
    key: &HostKey,
    create: bool,
) -> Result<Option<i64>, tokio_postgres::Error> {
    let mut host_id: Option<i64> = None;
    if let Some(machine_id) = &key.machine_id {
        host_id = client
            .query_opt(
                "SELECT id FROM probe.hosts WHERE machine_id = $1",
                &[machine_id],
            )
            .await?
            .map(|row| row.get(0));
    }
    if host_id.is_none() {
        let names = key
            .hostname
            .iter()
            .chain(std::iter::once(&key.target))
            .filter(|name| !name.is_empty());
        for name in names {
            let candidate = client
                .query_opt(
                    "SELECT h.id, h.machine_id FROM probe.hosts h
                     JOIN probe.host_names n ON n.host_id = h.id
                     WHERE lower(n.name) = lower($1) ORDER BY h.last_seen DESC LIMIT 1",
                    &[name],
                )
                .await?;
            if let Some(row) = candidate {
                let recorded: Option<String> = row.get(1);
                if recorded.is_none() || key.machine_id.is_none() {
                    host_id = Some(row.get(0));
                    break;
                }
            }
        }
    }
    if !create {
        return Ok(host_id);
    }
    let host_id: i64 = match host_id {
        Some(id) => {
            client
                .execute(
                    "UPDATE probe.hosts SET last_seen = greatest(last_seen, to_timestamp($2)),
                            hostname = coalesce($3, hostname),
                            machine_id = coalesce(machine_id, $4)
                     WHERE id = $1",
                    &[&id, &(key.at as f64), &key.hostname, &key.machine_id],
                )
                .await?;
            id
        }
        None => client
            .query_one(
                "INSERT INTO probe.hosts (machine_id, hostname, first_seen, last_seen)
                 VALUES ($1, $2, to_timestamp($3), to_timestamp($3))
                 ON CONFLICT (machine_id) DO UPDATE SET
                   last_seen = greatest(probe.hosts.last_seen, excluded.last_seen),
                   hostname = coalesce(excluded.hostname, probe.hosts.hostname)
                 RETURNING id",
                &[&key.machine_id, &key.hostname, &(key.at as f64)],
            )
            .await?
            .get(0),
    };
    let names = crate::host_names::host_names(
        key.hostname.as_deref(),
        &key.target,
        key.address_host.as_deref(),
        key.machine_id.as_deref(),
    );
    for (name, kind) in names {
        let kind = kind.as_str();
        client
            .execute(
                "INSERT INTO probe.host_names (host_id, name, kind, last_seen)
                 VALUES ($1, $2, $3, to_timestamp($4))
                 ON CONFLICT (host_id, name, kind) DO UPDATE SET
                   last_seen = greatest(probe.host_names.last_seen, excluded.last_seen)",
                &[&host_id, &name, &kind, &(key.at as f64)],
            )
            .await?;
    }
    Ok(Some(host_id))
}

/// The host a name refers to (any recorded name, or a machine-id prefix of 8+ characters).
async fn find_host_by_name(
    client: &impl GenericClient,
    name: &str,
) -> Result<Option<i64>, tokio_postgres::Error> {
    let exact = client
        .query_opt(
            "SELECT n.host_id FROM probe.host_names n JOIN probe.hosts h ON h.id = n.host_id
             WHERE lower(n.name) = lower($1) ORDER BY h.last_seen DESC LIMIT 1",
            &[&name],
        )
        .await?
        .map(|row| row.get(0));
    if exact.is_some() || name.len() < 8 {
        return Ok(exact);
    }
    Ok(client
        .query_opt(
            "SELECT id FROM probe.hosts WHERE lower(left(machine_id, length($1))) = lower($1)
             ORDER BY last_seen DESC LIMIT 1",
            &[&name],
        )
        .await?
        .map(|row| row.get(0)))
}

async fn query_meta(
    client: &impl GenericClient,
    tail: &str,
    parameters: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<SnapshotMeta>, tokio_postgres::Error> {
    let sql = format!("SELECT {META_COLUMNS} FROM probe.snapshots s {tail}");
    let rows = client.query(&sql, parameters).await?;
    Ok(rows.iter().map(meta_of).collect())
}

fn meta_of(row: &Row) -> SnapshotMeta {
    let schema_version: i32 = row.get(7);
    let versions: String = row.get(9);
    SnapshotMeta {
        id: row.get(0),
        host_id: row.get(1),
        hostname: row.get(2),
        machine_id: row.get(3),
        target: row.get(4),
        address: row.get(5),
        collected_at: row.get(6),
        schema_version: u32::try_from(schema_version).unwrap_or_default(),
        engines: row.get(8),
        versions: serde_json::from_str(&versions).unwrap_or_default(),
    }
}

/// A write that failed: in the database, or making a section's body.
enum WriteError {
    Pg(tokio_postgres::Error),
    Content(String),
    Store(StoreError),
}

impl From<tokio_postgres::Error> for WriteError {
    fn from(err: tokio_postgres::Error) -> WriteError {
        WriteError::Pg(err)
    }
}

impl WriteError {
    fn into_store(self, store: &str) -> StoreError {
        match self {
            WriteError::Pg(err) => pg_error(store, &err),
            WriteError::Content(cause) => StoreError::Postgres {
                store: store.to_string(),
                cause,
            },
            WriteError::Store(err) => err,
        }
    }
}

async fn put_row(pool: Pool, store: String, row: PutRow) -> Result<i64, StoreError> {
    let mut client = connection(&pool, &store).await?;
    let planned = plan_put(&client, &store, &row).await?;
    let mut attempt = 0;
    let (host_id, replaced) = loop {
        attempt += 1;
        match put_once(&mut client, &store, &row, &planned).await {
            Ok(done) => break done,
            Err(WriteError::Pg(err)) if retryable(&err) && attempt < WRITE_ATTEMPTS => {
                tracing::debug!(store = %store, attempt, "write conflict, retrying");
                tokio::time::sleep(Duration::from_millis(20 * u64::from(attempt))).await;
            }
            Err(err) => return Err(err.into_store(&store)),
        }
    };
    if !replaced.is_empty() {
        // The replaced snapshot's sections that nothing needs any more. The snapshot is
        // committed: a failure here leaves unreferenced sections (space, not data) for the next
        // prune, so it is logged, not returned.
        if let Err(err) = collect_garbage_now(&mut client, &replaced).await {
            tracing::warn!(store = %store, "{}", pg_error(&store, &err));
        }
    }
    Ok(host_id)
}

/// How the slots of `row` will be stored, against its host's newest snapshot. `put` plans
/// (and compresses) before its write transaction so that it stays short, and again inside it
/// only when a section the plan uses went meanwhile.
async fn plan_put(
    client: &impl GenericClient,
    store: &str,
    row: &PutRow,
) -> Result<Plan, StoreError> {
    let fail = |err: tokio_postgres::Error| pg_error(store, &err);
    let hashes: Vec<&[u8]> = row.slots.iter().map(|s| s.hash.as_slice()).collect();
    let known: HashMap<[u8; 32], i64> = client
        .query(
            "SELECT hash, id FROM probe.sections WHERE hash = ANY($1)",
            &[&hashes],
        )
        .await
        .map_err(fail)?
        .iter()
        .filter_map(|found| {
            let hash: Vec<u8> = found.get(0);
            Some((<[u8; 32]>::try_from(hash.as_slice()).ok()?, found.get(1)))
        })
        .collect();
    let newest: Option<String> = match identify_host(client, &row.identity, false)
        .await
        .map_err(fail)?
    {
        Some(host_id) => client
            .query_opt(
                "SELECT id FROM probe.snapshots WHERE host_id = $1
                 ORDER BY collected_at DESC, seq DESC LIMIT 1",
                &[&host_id],
            )
            .await
            .map_err(fail)?
            .map(|found| found.get(0)),
        None => None,
    };
    let previous: Option<Previous> = match newest {
        // A previous snapshot that cannot be read (pruned meanwhile) is no base: the new one is
        // stored whole.
        Some(id) => read_stored_in(client, (&[id], &BTreeSet::new()), store)
            .await
            .ok()
            .and_then(|mut stored| stored.pop().flatten())
            .and_then(|stored| stored.into_previous().ok()),
        None => None,
    };
    content::plan(&row.slots, &known, previous.as_ref()).map_err(|cause| StoreError::Postgres {
        store: store.to_string(),
        cause,
    })
}

/// Stores the new sections of `plan` (or finds them, stored by another writer) and gives the
/// slots. The caller holds [`SECTIONS_LOCK`] (shared). They are inserted in hash order, so two
/// writers storing the same new sections wait for each other in one order, never in a cycle.
async fn file_new_sections(
    client: &impl GenericClient,
    plan: &Plan,
) -> Result<Vec<Slot>, WriteError> {
    let mut new: Vec<(&Section, &Vec<u8>)> = plan
        .slots
        .iter()
        .filter_map(|slot| match slot {
            Planned::New { section, body } => Some((section, body)),
            _ => None,
        })
        .collect();
    let in_order: Vec<[u8; 32]> = new.iter().map(|(section, _)| section.hash).collect();
    new.sort_by_key(|(section, _)| section.hash);
    new.dedup_by_key(|(section, _)| section.hash);
    let mut filed: HashMap<[u8; 32], i64> = HashMap::new();
    for (section, body) in new {
        filed.insert(section.hash, insert_section(client, section, body).await?);
    }
    let ids: Vec<i64> = in_order
        .iter()
        .filter_map(|hash| filed.get(hash).copied())
        .collect();
    plan.slots_with(&ids).map_err(WriteError::Content)
}

/// Stores `section` with its compressed `body` (its count 0 until the caller raises it), or
/// finds it, stored by another writer; its id.
async fn insert_section(
    client: &impl GenericClient,
    section: &Section,
    body: &[u8],
) -> Result<i64, tokio_postgres::Error> {
    let size = i64::try_from(section.bytes.len()).unwrap_or(i64::MAX);
    let inserted = client
        .query_opt(
            "INSERT INTO probe.sections (hash, size, body) VALUES ($1, $2, $3)
             ON CONFLICT (hash) DO NOTHING RETURNING id",
            &[&section.hash.as_slice(), &size, &body],
        )
        .await?;
    Ok(match inserted {
        Some(row) => row.get(0),
        // Another writer stored it first (and has committed: the insert waited for it).
        None => client
            .query_one(
                "SELECT id FROM probe.sections WHERE hash = $1",
                &[&section.hash.as_slice()],
            )
            .await?
            .get(0),
    })
}

/// Adds `counts` to the reference counts of their sections. The rows are locked in id order
/// first, so writers sharing sections never deadlock.
async fn adjust_refs(
    client: &impl GenericClient,
    counts: &BTreeMap<i64, i64>,
) -> Result<(), tokio_postgres::Error> {
    let (ids, deltas): (Vec<i64>, Vec<i64>) = counts
        .iter()
        .filter(|(_, delta)| **delta != 0)
        .map(|(id, delta)| (*id, *delta))
        .unzip();
    if ids.is_empty() {
        return Ok(());
    }
    client
        .query(
            "SELECT id FROM probe.sections WHERE id = ANY($1) ORDER BY id FOR UPDATE",
            &[&ids],
        )
        .await?;
    client
        .execute(
            "UPDATE probe.sections c SET refs = c.refs + d.n
             FROM unnest($1::bigint[], $2::bigint[]) AS d(id, n) WHERE c.id = d.id",
            &[&ids, &deltas],
        )
        .await?;
    Ok(())
}

/// The id of the set of indexed versions `versions` (JSON text), recorded when new.
async fn version_set(client: &impl GenericClient, versions: &str) -> Result<i64, WriteError> {
    let inserted = client
        .query_opt(
            "INSERT INTO probe.version_sets (versions) VALUES ($1::text::jsonb)
             ON CONFLICT (versions) DO NOTHING RETURNING id",
            &[&versions],
        )
        .await?;
    Ok(match inserted {
        Some(found) => found.get(0),
        None => client
            .query_one(
                "SELECT id FROM probe.version_sets WHERE versions = $1::text::jsonb",
                &[&versions],
            )
            .await?
            .get(0),
    })
}

/// One write: returns the host id and the sections a snapshot it replaced needed.
async fn put_once(
    client: &mut deadpool_postgres::Object,
    store: &str,
    row: &PutRow,
    planned: &Plan,
) -> Result<(i64, Vec<i64>), WriteError> {
    let transaction = client.transaction().await?;
    transaction
        .execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&row.identity.lock_key()],
        )
        .await?;
    transaction
        .execute("SELECT pg_advisory_xact_lock_shared($1)", &[&SECTIONS_LOCK])
        .await?;
    let host_id = identify_host(&transaction, &row.identity, true)
        .await?
        .unwrap_or_default();
    let replaced: Vec<i64> = match transaction
        .query_opt(
            "SELECT slots FROM probe.snapshots WHERE id = $1 FOR UPDATE",
            &[&row.id],
        )
        .await?
    {
        Some(old) => content::decode_slots(&old.get::<_, Vec<u8>>(0))
            .map_err(WriteError::Content)?
            .iter()
            .filter_map(Slot::section)
            .collect(),
        None => Vec::new(),
    };
    // Planned before the locks: the sections it uses must still be there (they cannot go
    // now, while the shared lock is held).
    let uses = planned.uses();
    let present: i64 = transaction
        .query_one(
            "SELECT count(*) FROM probe.sections WHERE id = ANY($1)",
            &[&uses],
        )
        .await?
        .get(0);
    let replanned;
    let plan = if present == uses.len() as i64 {
        planned
    } else {
        replanned = plan_put(&transaction, store, row)
            .await
            .map_err(WriteError::Store)?;
        &replanned
    };
    let slots = file_new_sections(&transaction, plan).await?;
    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for id in slots.iter().filter_map(Slot::section) {
        *counts.entry(id).or_default() += 1;
    }
    for id in &replaced {
        *counts.entry(*id).or_default() -= 1;
    }
    adjust_refs(&transaction, &counts).await?;
    let version_set = version_set(&transaction, &row.versions).await?;
    let encoded = content::encode_slots(&slots);
    let own: Option<&[u8]> = (!plan.frame.is_empty()).then_some(plan.frame.as_slice());
    transaction
        .execute(
            "INSERT INTO probe.snapshots
               (id, host_id, target, address, hostname, machine_id, collected_at, collected_by,
                schema_version, engines, version_set, slots, own, redacted)
             VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7), $8, $9, $10, $11, $12, $13, true)
             ON CONFLICT (id) DO UPDATE SET
               host_id = excluded.host_id, target = excluded.target,
               address = excluded.address, hostname = excluded.hostname,
               machine_id = excluded.machine_id, collected_at = excluded.collected_at,
               collected_by = excluded.collected_by,
               schema_version = excluded.schema_version, engines = excluded.engines,
               version_set = excluded.version_set, slots = excluded.slots,
               own = excluded.own, redacted = excluded.redacted, seq = DEFAULT",
            &[
                &row.id,
                &host_id,
                &row.identity.target,
                &row.address,
                &row.identity.hostname,
                &row.identity.machine_id,
                &(row.collected_at as f64),
                &row.collected_by,
                &row.schema_version,
                &row.engines,
                &version_set,
                &encoded,
                &own,
            ],
        )
        .await?;
    transaction.commit().await?;
    Ok((host_id, replaced))
}

/// Removes those of `candidates` that no snapshot refers to, in a transaction of its own that
/// holds [`SECTIONS_LOCK`] exclusively.
async fn collect_garbage_now(
    client: &mut deadpool_postgres::Object,
    candidates: &[i64],
) -> Result<(), tokio_postgres::Error> {
    let transaction = client.transaction().await?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&SECTIONS_LOCK])
        .await?;
    collect_garbage(&transaction, candidates).await?;
    transaction.commit().await
}

/// Deletes those of `candidates` that no snapshot refers to. The caller holds
/// [`SECTIONS_LOCK`] exclusively.
async fn collect_garbage(
    client: &impl GenericClient,
    candidates: &[i64],
) -> Result<u64, tokio_postgres::Error> {
    let candidates: Vec<i64> = candidates
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if candidates.is_empty() {
        return Ok(0);
    }
    client
        .execute(
            "DELETE FROM probe.sections WHERE id = ANY($1) AND refs <= 0",
            &[&candidates],
        )
        .await
}

/// Snapshots `ids` as stored (`None` where one is not), with the sections they need but
/// `held`, read in one repeatable-read transaction (one consistent view).
async fn read_stored(
    client: &mut deadpool_postgres::Object,
    store: &str,
    ids: &[String],
    held: &BTreeSet<i64>,
) -> Result<Vec<Option<Stored>>, StoreError> {
    let fail = |err: tokio_postgres::Error| pg_error(store, &err);
    let transaction = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(fail)?;
    let stored = read_stored_in(&transaction, (ids, held), store).await?;
    transaction.commit().await.map_err(fail)?;
    Ok(stored)
}

/// [`read_stored`]'s statements, in the caller's transaction.
async fn read_stored_in(
    client: &impl GenericClient,
    (ids, held): (&[String], &BTreeSet<i64>),
    store: &str,
) -> Result<Vec<Option<Stored>>, StoreError> {
    let fail = |err: tokio_postgres::Error| pg_error(store, &err);
    let rows = client
        .query(
            "SELECT id, slots, own FROM probe.snapshots WHERE id = ANY($1)",
            &[&ids],
        )
        .await
        .map_err(fail)?;
    let bad = |cause: String| StoreError::Postgres {
        store: store.to_string(),
        cause,
    };
    let mut found: HashMap<String, Stored> = HashMap::with_capacity(rows.len());
    let mut wanted: BTreeSet<i64> = BTreeSet::new();
    for row in &rows {
        let id: String = row.get(0);
        let slots = content::decode_slots(&row.get::<_, Vec<u8>>(1))
            .map_err(|cause| bad(format!("snapshot {id}: {cause}")))?;
        wanted.extend(
            slots
                .iter()
                .filter_map(Slot::section)
                .filter(|section| !held.contains(section)),
        );
        let frame: Option<Vec<u8>> = row.get(2);
        found.insert(
            id,
            Stored {
                slots,
                frame: frame.unwrap_or_default(),
                sections: HashMap::new(),
            },
        );
    }
    let wanted: Vec<i64> = wanted.into_iter().collect();
    let mut sections: HashMap<i64, (Vec<u8>, i64, Vec<u8>)> = HashMap::new();
    if !wanted.is_empty() {
        for row in client
            .query(
                "SELECT id, hash, size, body FROM probe.sections WHERE id = ANY($1)",
                &[&wanted],
            )
            .await
            .map_err(fail)?
        {
            sections.insert(row.get(0), (row.get(1), row.get(2), row.get(3)));
        }
    }
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(mut stored) = found.get(id).cloned() else {
            out.push(None);
            continue;
        };
        for section in stored.slots.iter().filter_map(Slot::section) {
            if held.contains(&section) || stored.sections.contains_key(&section) {
                continue;
            }
            let Some(body) = sections.get(&section) else {
                return Err(bad(format!(
                    "snapshot {id} needs section {section}, which is missing"
                )));
            };
            stored.sections.insert(section, body.clone());
        }
        out.push(Some(stored));
    }
    Ok(out)
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
            identity: HostKey::of(snapshot),
            address: clean_opt(snapshot.address.as_deref()),
            collected_at: snapshot.collected_at,
            schema_version: i32::try_from(snapshot.schema_version).unwrap_or(i32::MAX),
            engines: engines.iter().map(|engine| clean(engine)).collect(),
            versions: clean(&serde_json::to_string(&versions).unwrap_or_else(|_| "{}".into())),
            slots: content::slots_of(&content::split(&to_json(snapshot))),
            collected_by: self.runner.clone(),
        };
        let host_id = self.run(|pool, store| put_row(pool, store, row))?;
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
        let key = HostKey::of(snapshot);
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
        self.run(|pool, store| async move {
            let fail = |err: tokio_postgres::Error| pg_error(&store, &err);
            let mut client = connection(&pool, &store).await?;
            let transaction = client.transaction().await.map_err(fail)?;
            // Exclusive: no writer is between finding a section and committing its reference.
            transaction
                .execute("SELECT pg_advisory_xact_lock($1)", &[&SECTIONS_LOCK])
                .await
                .map_err(fail)?;
            let mut referenced: Vec<i64> = Vec::new();
            for row in transaction
                .query(
                    "DELETE FROM probe.snapshots WHERE id = ANY($1) RETURNING slots",
                    &[&ids],
                )
                .await
                .map_err(fail)?
            {
                let slots = content::decode_slots(&row.get::<_, Vec<u8>>(0)).map_err(|cause| {
                    StoreError::Postgres {
                        store: store.clone(),
                        cause,
                    }
                })?;
                referenced.extend(slots.iter().filter_map(Slot::section));
            }
            let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
            for id in &referenced {
                *counts.entry(*id).or_default() -= 1;
            }
            adjust_refs(&transaction, &counts).await.map_err(fail)?;
            collect_garbage(&transaction, &referenced)
                .await
                .map_err(fail)?;
            transaction.commit().await.map_err(fail)
        })?;
        Ok(doomed)
    }

    fn record_audit(
        &self,
        run: &AuditRun,
        record: &AuditRecord,
        recorded_at: UnixTime,
    ) -> Result<(), StoreError> {
        let run = run.clone();
        let host = clean(&record.host);
        let status = record.status.as_str();
        let snapshot_id = record.snapshot_id.clone();
        let text = serde_json::to_string(record)
            .unwrap_or_else(|_| "{}".into())
            .replace("\\u0000", "\u{fffd}");
        self.run(|pool, store| async move {
            let client = connection(&pool, &store).await?;
            client
                .execute(
                    "INSERT INTO probe.audit_records
                       (run_id, host, shard, runner, inventory, started_at, recorded_at, status,
                        snapshot_id, record)
                     VALUES ($1, $2, $3, $4, $5, to_timestamp($6), to_timestamp($7), $8, $9,
                             $10::text::jsonb)
                     ON CONFLICT (run_id, host) DO UPDATE SET
                       shard = excluded.shard, runner = excluded.runner,
                       inventory = excluded.inventory, recorded_at = excluded.recorded_at,
                       status = excluded.status, snapshot_id = excluded.snapshot_id,
                       record = excluded.record, seq = DEFAULT",
                    &[
                        &clean(&run.run_id),
                        &host,
                        &clean_opt(run.shard.as_deref()),
                        &clean(&run.runner),
                        &clean(&run.inventory),
                        &(run.started_at as f64),
                        &(recorded_at as f64),
                        &status,
                        &snapshot_id,
                        &text,
                    ],
                )
                .await
                .map(|_| ())
                .map_err(|err| pg_error(&store, &err))
        })
    }

    fn last_audits(&self) -> Result<Vec<StoredAudit>, StoreError> {
        let rows: Vec<(AuditRun, UnixTime, String)> = self.run(|pool, store| async move {
            let client = connection(&pool, &store).await?;
            let rows = client
                .query(
                    "SELECT DISTINCT ON (host) run_id, shard, runner, inventory,
                            extract(epoch from started_at)::bigint,
                            extract(epoch from recorded_at)::bigint, record::text
                     FROM probe.audit_records ORDER BY host, recorded_at DESC, seq DESC",
                    &[],
                )
                .await
                .map_err(|err| pg_error(&store, &err))?;
            Ok(rows
                .iter()
                .map(|row| {
                    (
                        AuditRun {
                            run_id: row.get(0),
                            shard: row.get(1),
                            runner: row.get(2),
                            inventory: row.get(3),
                            started_at: row.get(4),
                        },
                        row.get(5),
                        row.get(6),
                    )
                })
                .collect())
        })?;
        rows.into_iter()
            .map(|(run, recorded_at, text)| {
                let record =
                    serde_json::from_str(&text).map_err(|err| StoreError::BadDocument {
                        what: format!("audit record of run {} in {}", run.run_id, self.location),
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
        self.location.clone()
    }
}

#[cfg(test)]
mod bounds_tests {
    use super::*;

    #[test]
    fn each_connection_sets_the_bounds_the_location_leaves_open() {
        let both = "SET statement_timeout = 3000; SET idle_in_transaction_session_timeout = 3000;";
        // (the location's options, what a new connection sets)
        let cases = [
            (None, both),
            (Some("-c search_path=x"), both),
            (
                Some("-c statement_timeout=0"),
                "SET idle_in_transaction_session_timeout = 3000;",
            ),
            (
                Some("-c statement_timeout=0 -c idle_in_transaction_session_timeout=0"),
                "",
            ),
        ];
        for (options, expected) in cases {
            assert_eq!(
                session_bounds(Duration::from_secs(3), options),
                expected,
                "{options:?}"
            );
        }
    }
}
