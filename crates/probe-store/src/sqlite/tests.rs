use super::*;
use probe_model::{HostFacts, SCHEMA_VERSION};

fn snapshot(id: &str, target: &str, hostname: &str, machine_id: &str, at: i64) -> Snapshot {
    Snapshot {
        schema_version: SCHEMA_VERSION,
        id: id.into(),
        target: target.into(),
        address: Some(format!("{target}:22")),
        collected_at: at,
        host: HostFacts {
            hostname: Some(hostname.into()).filter(|h: &String| !h.is_empty()),
            machine_id: Some(machine_id.into()).filter(|m: &String| !m.is_empty()),
            ..HostFacts::default()
        },
        ..Snapshot::default()
    }
}

fn temp_store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("sub").join("snapshots.db")).unwrap();
    (dir, store)
}

#[test]
fn fresh_store_is_migrated_and_in_wal_mode() {
    let (_dir, store) = temp_store();
    let connection = store.connection.lock().unwrap();
    let version: u32 = connection
        .query_row("SELECT max(version) FROM schema_meta", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, STORE_SCHEMA_VERSION);
    let mode: String = connection
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn corrupt_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.db");
    let junk: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &junk).unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("untouched"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), junk);
    assert!(!dir.path().join("snapshots.db-wal").exists());

    // A real SQLite file that is somebody else's database.
    let foreign = dir.path().join("foreign.db");
    {
        let connection = Connection::open(&foreign).unwrap();
        connection
            .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
    let before = std::fs::read(&foreign).unwrap();
    let err = SqliteStore::open(&foreign).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert_eq!(std::fs::read(&foreign).unwrap(), before);

    // A store whose page 1 was damaged after the header.
    let damaged = dir.path().join("damaged.db");
    {
        let store = SqliteStore::open(&damaged).unwrap();
        store.put(&snapshot("a", "h", "h", "m", 1)).unwrap();
    }
    // Checkpointed on close; damage the b-tree page header of page 1.
    let mut bytes = std::fs::read(&damaged).unwrap();
    for byte in bytes.iter_mut().skip(100).take(12) {
        *byte = 0xff;
    }
    std::fs::write(&damaged, &bytes).unwrap();
    let _ = std::fs::remove_file(dir.path().join("damaged.db-wal"));
    let _ = std::fs::remove_file(dir.path().join("damaged.db-shm"));
    let err = SqliteStore::open(&damaged).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert_eq!(std::fs::read(&damaged).unwrap(), bytes);
}

#[test]
fn newer_store_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        let connection = store.connection.lock().unwrap();
        connection
            .execute(
                "UPDATE schema_meta SET version = ?1",
                params![STORE_SCHEMA_VERSION + 1],
            )
            .unwrap();
    }
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NewerStore { .. }), "{err}");
    assert!(err.to_string().contains("upgrade probe"));
}

#[test]
fn migrates_an_empty_version_zero_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.db");
    {
        let connection = Connection::open(&path).unwrap();
        connection
            .execute_batch("CREATE TABLE schema_meta (version INTEGER NOT NULL);")
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    store.put(&snapshot("a", "h", "h", "m", 1)).unwrap();
    drop(store);
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.list(None).unwrap().len(), 1);
}

/// The child half of [`two_processes_write_concurrently`].
#[test]
fn child_writer() {
    let Ok(path) = std::env::var("PROBE_STORE_CHILD_PATH") else {
        return;
    };
    let writer = std::env::var("PROBE_STORE_CHILD_ID").unwrap();
    let store = SqliteStore::open(Path::new(&path)).unwrap();
    for i in 0..30 {
        store
            .put(&snapshot(
                &format!("p{writer}-{i}"),
                &format!("proc{writer}"),
                &format!("proc{writer}"),
                &format!("pm-{writer}"),
                i,
            ))
            .unwrap();
    }
}

#[test]
fn two_processes_write_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.db");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|writer| {
            std::process::Command::new(&exe)
                .args(["--exact", "sqlite::tests::child_writer", "--nocapture"])
                .env("PROBE_STORE_CHILD_PATH", &path)
                .env("PROBE_STORE_CHILD_ID", writer.to_string())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.list(None).unwrap().len(), 60);
}

#[test]
fn migrates_a_version_one_store_keeping_its_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.db");
    {
        // A store as probe with layout version 1 left it.
        let connection = Connection::open(&path).unwrap();
        connection
            .execute_batch("CREATE TABLE schema_meta (version INTEGER NOT NULL);")
            .unwrap();
        connection.execute_batch(MIGRATIONS[0]).unwrap();
        connection
            .execute("INSERT INTO schema_meta (version) VALUES (1)", [])
            .unwrap();
    }
    {
        let store = SqliteStore::open(&path).unwrap();
        store.put(&snapshot("a", "h", "h", "m", 1)).unwrap();
        let connection = store.connection.lock().unwrap();
        let version: u32 = connection
            .query_row("SELECT max(version) FROM schema_meta", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, STORE_SCHEMA_VERSION);
        let audit_table: u32 = connection
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'audit_records'",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(audit_table, 1);
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.list(None).unwrap().len(), 1);
}

#[test]
fn strip_port_forms() {
    assert_eq!(strip_port("10.0.0.1:22"), "10.0.0.1");
    assert_eq!(strip_port("[::1]:2222"), "::1");
    assert_eq!(strip_port("gpu7"), "gpu7");
    assert_eq!(strip_port("::1"), "::1");
}
