//! The store's file: an existing one checked read-only before it is opened for writing, and
//! SQLite's errors about it told apart (busy, corrupt, not writable).

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::StoreError;
use crate::schema::STORE_SCHEMA_VERSION;

/// How long one statement waits for another writer's lock.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Checks an existing file without writing to it.
pub(super) fn check_existing(path: &Path) -> Result<(), StoreError> {
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

pub(super) fn is_busy(err: &rusqlite::Error) -> bool {
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
pub(super) fn not_writable(path: &Path, err: StoreError) -> StoreError {
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

pub(super) fn sql_error(path: &Path, err: rusqlite::Error) -> StoreError {
    if is_busy(&err) {
        return StoreError::Busy {
            path: path.to_path_buf(),
            waited_s: BUSY_TIMEOUT.as_secs(),
        };
    }
    classify(path, err)
}
