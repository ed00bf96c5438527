use super::*;
use crate::{HostPoint, Selector};
use probe_model::{HostFacts, ProcessInfo, PythonEnv, PythonPackage, SCHEMA_VERSION};

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
fn put_get_latest_history_and_indexed_columns() {
    let (_dir, store) = temp_store();
    let mut first = snapshot("a1", "gpu7", "gpu7", "m-0001", 100);
    first.processes.push(ProcessInfo {
        pid: 1,
        engine: Some("sglang".into()),
        ..ProcessInfo::default()
    });
    first.python_envs.push(PythonEnv {
        packages: vec![
            PythonPackage {
                name: "sglang".into(),
                version: "0.5.4".into(),
                ..PythonPackage::default()
            },
            PythonPackage {
                name: "numpy".into(),
                version: "2.0".into(),
                ..PythonPackage::default()
            },
        ],
        ..PythonEnv::default()
    });
    let meta = store.put(&first).unwrap();
    assert_eq!(meta.engines, vec!["sglang".to_string()]);
    assert_eq!(
        meta.versions.get("sglang").map(String::as_str),
        Some("0.5.4")
    );
    assert!(!meta.versions.contains_key("numpy"));
    store
        .put(&snapshot("a2", "gpu7", "gpu7", "m-0001", 200))
        .unwrap();
    store
        .put(&snapshot("b1", "gpu8", "gpu8", "m-0002", 150))
        .unwrap();

    assert_eq!(store.get("a1").unwrap().unwrap(), first);
    assert_eq!(store.latest("gpu7").unwrap().unwrap().id, "a2");
    let history: Vec<_> = store
        .history("gpu7")
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(history, ["a1", "a2"]);
    let all: Vec<_> = store
        .list(None)
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(all, ["a2", "b1", "a1"]);
    let listed = store.list(None).unwrap();
    assert_eq!(listed.last().unwrap().engines, ["sglang"]);
    assert!(store.get("nope").unwrap().is_none());
    assert!(store.latest("unknown-host").unwrap().is_none());
}

#[test]
fn identity_survives_rename_and_readdress() {
    let (_dir, store) = temp_store();
    store
        .put(&snapshot("s1", "10.0.0.5", "gpu-old", "mid-abcdef123", 100))
        .unwrap();
    // Renamed and re-addressed, same machine-id.
    let renamed = snapshot("s2", "gpu-new.example", "gpu-new", "mid-abcdef123", 200);
    assert_eq!(store.previous(&renamed).unwrap().unwrap().id, "s1");
    store.put(&renamed).unwrap();
    for name in [
        "gpu-old",
        "gpu-new",
        "10.0.0.5",
        "gpu-new.example",
        "mid-abcdef",
    ] {
        let history: Vec<_> = store
            .history(name)
            .unwrap()
            .into_iter()
            .map(|m| m.id)
            .collect();
        assert_eq!(history, ["s1", "s2"], "by {name}");
    }
    // Same name, different machine-id: another machine, its own history.
    store
        .put(&snapshot("t1", "gpu-new", "gpu-new", "mid-other-999", 300))
        .unwrap();
    let other = store.list(None).unwrap();
    let host_of = |id: &str| other.iter().find(|m| m.id == id).unwrap().host_id;
    assert_ne!(host_of("t1"), host_of("s2"));
    assert_eq!(host_of("s1"), host_of("s2"));
    // A host first seen without machine-id is adopted when the id shows up.
    store.put(&snapshot("u1", "box", "box", "", 100)).unwrap();
    store
        .put(&snapshot("u2", "box", "box", "mid-box-1234", 200))
        .unwrap();
    let ids: Vec<_> = store
        .history("mid-box-1234")
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids, ["u1", "u2"]);
}

#[test]
fn references_resolve() {
    let (_dir, store) = temp_store();
    // 2026-11-20T10:00Z, 2026-11-21T10:00Z, 2026-11-22T10:00Z
    for (id, at) in [
        ("d1", 1_795_168_800),
        ("d2", 1_795_255_200),
        ("d3", 1_795_341_600),
    ] {
        store.put(&snapshot(id, "gpu7", "gpu7", "m-7", at)).unwrap();
    }
    let resolve = |text: &str| {
        let selector = crate::parse_host_reference(text).unwrap().unwrap();
        store.resolve(&selector).map(|s| s.id)
    };
    assert_eq!(resolve("gpu7@latest").unwrap(), "d3");
    assert_eq!(resolve("gpu7@~1").unwrap(), "d2");
    assert_eq!(resolve("gpu7@~2").unwrap(), "d1");
    assert!(matches!(resolve("gpu7@~3"), Err(StoreError::NotFound(_))));
    assert_eq!(resolve("gpu7@2026-11-21").unwrap(), "d2");
    assert_eq!(resolve("gpu7@2026-12-31").unwrap(), "d3");
    assert!(resolve("gpu7@2026-11-19").is_err());
    assert!(resolve("nohost@latest").is_err());
    assert_eq!(store.resolve(&Selector::Id("d1".into())).unwrap().id, "d1");
    let _ = HostPoint::Latest;
}

#[test]
fn prune_keeps_newest_per_host() {
    let (_dir, store) = temp_store();
    for i in 0..5 {
        store
            .put(&snapshot(&format!("a{i}"), "a", "a", "ma", 100 + i))
            .unwrap();
        store
            .put(&snapshot(&format!("b{i}"), "b", "b", "mb", 100 + i))
            .unwrap();
    }
    let dry = store
        .prune(&PrunePolicy {
            keep_last: 2,
            dry_run: true,
            ..PrunePolicy::default()
        })
        .unwrap();
    assert_eq!(dry.len(), 6);
    assert_eq!(store.list(None).unwrap().len(), 10);
    let deleted = store
        .prune(&PrunePolicy {
            keep_last: 2,
            older_than: Some(102),
            host: Some("a".into()),
            dry_run: false,
        })
        .unwrap();
    let ids: Vec<_> = deleted.into_iter().map(|m| m.id).collect();
    assert_eq!(ids, ["a1", "a0"]);
    let left: Vec<_> = store
        .history("a")
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(left, ["a2", "a3", "a4"]);
    assert_eq!(store.history("b").unwrap().len(), 5);
}

#[test]
fn export_import_round_trip_and_newer_refused() {
    let (_dir, store) = temp_store();
    let original = snapshot("x1", "gpu7", "gpu7", "m", 5);
    store.put(&original).unwrap();
    let text = store.export("x1").unwrap();
    let (_dir2, other) = temp_store();
    other.import(&text, "x1.json").unwrap();
    assert_eq!(other.get("x1").unwrap().unwrap(), original);
    let newer = text.replacen(
        &format!("\"schema_version\": {SCHEMA_VERSION}"),
        &format!("\"schema_version\": {}", SCHEMA_VERSION + 1),
        1,
    );
    let err = other.import(&newer, "x1.json").unwrap_err();
    assert!(matches!(err, StoreError::NewerSnapshot { .. }), "{err}");
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

#[test]
fn two_threads_write_concurrently_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.db");
    let writers: Vec<_> = (0..2)
        .map(|writer| {
            let path = path.clone();
            std::thread::spawn(move || {
                // Each thread has its own connection, like two audits.
                let store = SqliteStore::open(&path).unwrap();
                for i in 0..40 {
                    let mut s = snapshot(
                        &format!("w{writer}-{i}"),
                        &format!("host{writer}"),
                        &format!("host{writer}"),
                        &format!("machine-{writer}"),
                        i,
                    );
                    s.host.os_pretty = Some("x".repeat(20_000));
                    store.put(&s).unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.list(None).unwrap().len(), 80);
    assert_eq!(store.history("host0").unwrap().len(), 40);
    assert_eq!(store.history("host1").unwrap().len(), 40);
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
fn strip_port_forms() {
    assert_eq!(strip_port("10.0.0.1:22"), "10.0.0.1");
    assert_eq!(strip_port("[::1]:2222"), "::1");
    assert_eq!(strip_port("gpu7"), "gpu7");
    assert_eq!(strip_port("::1"), "::1");
}
