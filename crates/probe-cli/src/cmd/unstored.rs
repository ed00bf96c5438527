//! A snapshot the store did not take: a store that could not be opened stands in as one whose
//! every call gives back the opening error ([`Unopened`]), so a collecting command goes on and
//! reports; and the snapshot is kept as a JSON file in the spool directory ([`spool`]) for a later
//! `probe snapshots import`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use probe_model::{AuditRecord, Snapshot};
use probe_store::{AuditRun, PrunePolicy, SnapshotMeta, SnapshotStore, StoreError, StoredAudit};

/// Files the spool holds at most: a store that stays broken for days must not fill the disk of
/// the machine that audits (1,000 files of a few MiB each).
pub const MAX_SPOOLED: usize = 1000;

/// A store that could not be opened: every call fails with the error that opening gave.
#[derive(Debug)]
pub struct Unopened {
    location: String,
    error: Arc<StoreError>,
}

impl Unopened {
    pub fn new(location: &str, error: StoreError) -> Unopened {
        Unopened {
            location: probe_store::redact_location(location),
            error: Arc::new(error),
        }
    }

    fn fail<T>(&self) -> Result<T, StoreError> {
        Err(StoreError::Unopened(Arc::clone(&self.error)))
    }
}

impl SnapshotStore for Unopened {
    fn put(&self, _: &Snapshot) -> Result<SnapshotMeta, StoreError> {
        self.fail()
    }
    fn get(&self, _: &str) -> Result<Option<Snapshot>, StoreError> {
        self.fail()
    }
    fn latest(&self, _: &str) -> Result<Option<Snapshot>, StoreError> {
        self.fail()
    }
    fn previous(&self, _: &Snapshot) -> Result<Option<Snapshot>, StoreError> {
        self.fail()
    }
    fn list(&self, _: Option<&str>) -> Result<Vec<SnapshotMeta>, StoreError> {
        self.fail()
    }
    fn history(&self, _: &str) -> Result<Vec<SnapshotMeta>, StoreError> {
        self.fail()
    }
    fn prune(&self, _: &PrunePolicy) -> Result<Vec<SnapshotMeta>, StoreError> {
        self.fail()
    }
    fn record_audit(&self, _: &AuditRun, _: &AuditRecord, _: i64) -> Result<(), StoreError> {
        self.fail()
    }
    fn last_audits(&self) -> Result<Vec<StoredAudit>, StoreError> {
        self.fail()
    }
    fn location(&self) -> String {
        self.location.clone()
    }
}

/// The spool file of a snapshot: its id, with anything but `[A-Za-z0-9._-]` as `_`.
fn file_name(snapshot: &Snapshot) -> String {
    let id: String = snapshot
        .id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let id = id.trim_start_matches('.');
    format!("{}.json", if id.is_empty() { "snapshot" } else { id })
}

/// Why a snapshot could not be kept in the spool: one line, the cause kept.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    #[error("cannot create the spool {}: {source}", dir.display())]
    Create {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the spool {}: {source}", dir.display())]
    Read {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the spool {} already holds {held} snapshots (at most {MAX_SPOOLED}): import or remove them",
        dir.display()
    )]
    Full { dir: PathBuf, held: usize },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Keeps `snapshot` as `DIR/ID.json` (the document the store would have held; the directory
/// made private to the user when it is created), written atomically.
pub fn spool(dir: &Path, snapshot: &Snapshot) -> Result<PathBuf, SpoolError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| SpoolError::Create {
            dir: dir.to_path_buf(),
            source,
        })?;
    let held = std::fs::read_dir(dir)
        .map_err(|source| SpoolError::Read {
            dir: dir.to_path_buf(),
            source,
        })?
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".json"))
        .count();
    let path = dir.join(file_name(snapshot));
    if held >= MAX_SPOOLED && !path.exists() {
        return Err(SpoolError::Full {
            dir: dir.to_path_buf(),
            held,
        });
    }
    crate::prometheus::write_atomic(&path, probe_store::to_json(snapshot).as_bytes()).map_err(
        |source| SpoolError::Write {
            path: path.clone(),
            source,
        },
    )?;
    Ok(path)
}

/// The one line that says a snapshot was not stored, why, and where it is.
pub fn not_stored_line(
    target: &str,
    snapshot: &Snapshot,
    error: &StoreError,
    spool_dir: Option<&Path>,
) -> String {
    let kept = match spool_dir {
        None => "not kept: no spool directory (pass --spool DIR)".to_string(),
        Some(dir) => match spool(dir, snapshot) {
            Ok(path) => format!(
                "kept in {} (`probe snapshots import {}` stores it)",
                path.display(),
                path.display()
            ),
            Err(why) => format!("not kept: {why}"),
        },
    };
    crate::output::one_line(&format!(
        "{target}: snapshot {} not stored: {error}; {kept}",
        snapshot.id
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spool_file_names_stay_in_the_directory() {
        // (id, file)
        let cases = [
            ("gpu7-1700000000-ab12", "gpu7-1700000000-ab12.json"),
            ("../../etc/passwd", "_.._etc_passwd.json"),
            ("a/b c", "a_b_c.json"),
            ("", "snapshot.json"),
            ("...", "snapshot.json"),
        ];
        for (id, file) in cases {
            let snapshot = Snapshot {
                id: id.into(),
                ..Snapshot::default()
            };
            assert_eq!(file_name(&snapshot), file, "{id}");
        }
    }
}
