//! Errors of the snapshot store: one line each, naming the store file and the cause.

use std::path::PathBuf;

/// Everything that can go wrong opening, reading or writing a store or a snapshot document.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file exists but is not a SQLite database (or its header is damaged). Never repaired.
    #[error(
        "store {path} is not a probe snapshot store or is damaged ({cause}); the file was left \
         untouched: move it aside or pass another --store PATH"
    )]
    Corrupt { path: PathBuf, cause: String },
    /// The store was written by a newer probe.
    #[error(
        "store {path} has schema version {found}, newer than this probe supports ({supported}); \
         upgrade probe or pass another --store PATH"
    )]
    NewerStore {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    /// A snapshot document from a newer schema.
    #[error(
        "snapshot {what} has schema version {found}, newer than this probe reads ({supported}); \
         upgrade probe"
    )]
    NewerSnapshot {
        what: String,
        found: u32,
        supported: u32,
    },
    /// A snapshot document that is not valid JSON of a snapshot.
    #[error("snapshot {what} is not a valid snapshot document: {cause}")]
    BadDocument { what: String, cause: String },
    /// Another writer kept the store locked past the busy timeout and all retries.
    #[error(
        "store {path} is busy: another probe kept it locked for more than {waited_s}s; nothing was \
         written, retry when it is done"
    )]
    Busy { path: PathBuf, waited_s: u64 },
    /// A snapshot reference did not match anything.
    #[error("no stored snapshot matches {0}")]
    NotFound(String),
    /// A snapshot reference that cannot be parsed.
    #[error("bad snapshot reference {reference}: {cause}")]
    BadReference { reference: String, cause: String },
    #[error("store {path}: {cause}")]
    Io { path: PathBuf, cause: String },
    /// A PostgreSQL store (its location printed without password) could not be reached, or a
    /// statement failed.
    #[error("store {store}: {cause}")]
    Postgres { store: String, cause: String },
    /// A PostgreSQL store that gave no answer within the bound of one operation (connecting, a
    /// query, a commit): the server or the network path to it stalled. The operation was given
    /// up; a write whose commit was in flight may or may not have been applied.
    #[error(
        "store {store}: no answer within {waited_s}s (the server or the network to it stalled); \
         gave up waiting"
    )]
    TimedOut { store: String, waited_s: u64 },
    /// A PostgreSQL store whose schema migration did not finish within the migration's bound
    /// ([`crate::MIGRATION_TIMEOUT`] unless opened with another): given up, its one
    /// transaction rolled back, the store left at its older layout.
    #[error(
        "store {store}: migrating its layout from version {from} to {to} did not finish within \
         {waited_s}s, the migration's bound (the server or the network to it stalled, or the \
         store is too large for it); given up and rolled back, the store is unchanged"
    )]
    MigrationTimedOut {
        store: String,
        from: u32,
        to: u32,
        waited_s: u64,
    },
    /// The run's overall deadline ([`crate::SnapshotStore::set_deadline`]) passed before or
    /// while the operation waited for a PostgreSQL store: not waited for (any more). A write
    /// whose commit was in flight may or may not have been applied.
    #[error(
        "store {store}: not waited for: the run's overall deadline passed{}",
        if *.waited_s > 0 { format!(" after {}s of waiting", .waited_s) } else { String::new() }
    )]
    DeadlinePassed { store: String, waited_s: u64 },
    /// A store location or connection setting that cannot be used (`--store`, `PROBE_STORE`,
    /// the config file, `PGSERVICE`, ...).
    #[error("store {store}: {source}")]
    BadLocation {
        store: String,
        #[source]
        source: crate::LocationError,
    },
    /// The shared store refuses a snapshot collected with `--no-redact`.
    #[error(
        "store {store}: snapshot {id} was collected with --no-redact; a shared store accepts \
         only redacted snapshots"
    )]
    Unredacted { store: String, id: String },
    /// The store could not be opened; every later call on it gives back that error (a command
    /// that collects goes on without a store: its results are reported, not lost).
    #[error(transparent)]
    Unopened(std::sync::Arc<StoreError>),
    /// A store file that exists and cannot be written (a read-only mount, a file the user may
    /// not write): SQLite's error, and the file system's reason.
    #[error("store {path}: {source} ({why})")]
    NotWritable {
        path: PathBuf,
        why: String,
        #[source]
        source: rusqlite::Error,
    },
    #[error("store {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
}

impl StoreError {
    /// Whether retrying later may succeed (the store was locked).
    pub fn is_busy(&self) -> bool {
        matches!(self, StoreError::Busy { .. })
    }

    /// Whether the run's overall deadline ended the operation ([`StoreError::DeadlinePassed`]).
    pub fn is_deadline(&self) -> bool {
        match self {
            StoreError::DeadlinePassed { .. } => true,
            StoreError::Unopened(inner) => inner.is_deadline(),
            _ => false,
        }
    }
}
