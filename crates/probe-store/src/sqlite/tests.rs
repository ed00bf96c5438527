use super::*;
use crate::schema::STORE_SCHEMA_VERSION;
use migrate::MIGRATIONS;
use probe_model::{HostFacts, SCHEMA_VERSION};
use std::collections::BTreeMap;

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

/// In a child process (the test binary run again with `PROBE_STORE_CHILD_PATH` set): 30 writes
/// to the store there.
fn write_as_child(path: &str) {
    let writer = std::env::var("PROBE_STORE_CHILD_ID").unwrap();
    let store = SqliteStore::open(Path::new(path)).unwrap();
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

/// Two processes write one store at once (this test, run again as each child): no write lost.
#[test]
fn two_processes_write_concurrently() {
    if let Ok(path) = std::env::var("PROBE_STORE_CHILD_PATH") {
        write_as_child(&path);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.db");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|writer| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "sqlite::tests::two_processes_write_concurrently",
                    "--nocapture",
                ])
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

/// A snapshot shaped like a real one: sections of every kind, and text that needs escaping.
fn rich_snapshot(id: &str, at: i64) -> Snapshot {
    let mut snapshot = snapshot(id, "gpu7", "gpu7", "m-rich-0001", at);
    snapshot.host.os_pretty = Some("Debian \"12\" \\ ünïcode \u{1F600} \u{1b}[31m \0".into());
    snapshot.processes.push(probe_model::ProcessInfo {
        pid: 42,
        argv: vec!["python3".into(), "-m".into(), "vllm.entrypoints".into()],
        engine: Some(probe_model::Engine::Vllm),
        ..probe_model::ProcessInfo::default()
    });
    snapshot.python_envs.push(probe_model::PythonEnv {
        interpreter: "/opt/venv/bin/python".into(),
        packages: vec![probe_model::PythonPackage {
            name: "vllm".into(),
            version: "0.11.0".into(),
            ..probe_model::PythonPackage::default()
        }],
        ..probe_model::PythonEnv::default()
    });
    snapshot.gpu.driver_version = Some("570.172.08".into());
    snapshot
}

/// Writes `snapshot` the way the store of layout version 2 did (a copy of its `put`).
fn put_as_version_two(connection: &Connection, snapshot: &Snapshot) {
    let (engines, versions) = indexed_values(snapshot);
    let host_id = identify_host(connection, &HostKey::of(snapshot), true)
        .unwrap()
        .unwrap();
    connection
        .execute(
            "INSERT OR REPLACE INTO snapshots
               (id, host_id, target, address, hostname, machine_id, collected_at,
                schema_version, engines, versions, document)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                snapshot.id,
                host_id,
                snapshot.target,
                snapshot.address,
                snapshot.host.hostname,
                snapshot.host.machine_id,
                snapshot.collected_at,
                snapshot.schema_version,
                engines.into_iter().collect::<Vec<_>>().join(","),
                serde_json::to_string(&versions).unwrap(),
                to_json(snapshot),
            ],
        )
        .unwrap();
    for (package, version) in &versions {
        connection
            .execute(
                "INSERT INTO snapshot_versions (snapshot_id, package, version)
                 VALUES (?1, ?2, ?3)",
                params![snapshot.id, package, version],
            )
            .unwrap();
    }
}

#[test]
fn a_version_two_store_opens_with_every_snapshot_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.db");
    let snapshots: Vec<Snapshot> = (0..5).map(|i| rich_snapshot(&format!("r{i}"), i)).collect();
    {
        let connection = Connection::open(&path).unwrap();
        connection
            .execute_batch(include_str!("../../tests/fixtures/store-v2-sqlite.sql"))
            .unwrap();
        for snapshot in &snapshots {
            put_as_version_two(&connection, snapshot);
        }
        // A document that is not `to_json` output (written by hand into an old store).
        connection
            .execute(
                "UPDATE snapshots SET document = ?1 WHERE id = 'r4'",
                params![serde_json::to_string(&snapshots[4]).unwrap()],
            )
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    for snapshot in &snapshots {
        assert_eq!(store.get(&snapshot.id).unwrap().as_ref(), Some(snapshot));
    }
    for snapshot in &snapshots[..4] {
        assert_eq!(store.export(&snapshot.id).unwrap(), to_json(snapshot));
    }
    assert_eq!(
        store.export("r4").unwrap(),
        serde_json::to_string(&snapshots[4]).unwrap()
    );
    let history: Vec<String> = store
        .history("gpu7")
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(history, ["r0", "r1", "r2", "r3", "r4"]);
    assert_eq!(
        store.list(None).unwrap()[0].versions.get("vllm").unwrap(),
        "0.11.0"
    );
    let connection = store.connection.lock().unwrap();
    let (version, columns, sections): (u32, u32, u32) = connection
        .query_row(
            "SELECT (SELECT max(version) FROM schema_meta),
                    (SELECT count(*) FROM pragma_table_info('snapshots') WHERE name = 'document'),
                    (SELECT count(*) FROM sections)",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!((version, columns), (STORE_SCHEMA_VERSION, 0));
    // r0..r3 differ only in scalars (id, time), so they share every section; r4, which cannot
    // be given back from sections byte for byte, is kept whole (one more section). Each
    // migrated layout is its snapshot's own slot.
    let per_snapshot = shared_slots(&connection, "r0");
    assert!(per_snapshot > 10, "{per_snapshot}");
    assert!(
        sections < per_snapshot as u32 + 2,
        "{sections} sections for {per_snapshot} per snapshot"
    );
    check_counts(&connection);
}

/// The slots of snapshot `id`.
fn slots(connection: &Connection, id: &str) -> Vec<crate::content::Slot> {
    let blob: Vec<u8> = connection
        .query_row(
            "SELECT slots FROM snapshots WHERE id = ?1",
            params![id],
            |row| row.get(0),
        )
        .unwrap();
    crate::content::decode_slots(&blob).unwrap()
}

fn shared_slots(connection: &Connection, id: &str) -> usize {
    slots(connection, id)
        .iter()
        .filter(|slot| matches!(slot, crate::content::Slot::Shared(_)))
        .count()
}

/// Every section's count is the number of slots that need it, and no section is unneeded.
fn check_counts(connection: &Connection) {
    let ids: Vec<String> = connection
        .prepare("SELECT id FROM snapshots")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let mut needed: BTreeMap<i64, i64> = BTreeMap::new();
    for id in &ids {
        for section in slots(connection, id).iter().filter_map(|s| s.section()) {
            *needed.entry(section).or_default() += 1;
        }
    }
    let counted: BTreeMap<i64, i64> = connection
        .prepare("SELECT id, refs FROM sections")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(counted, needed);
}

#[test]
fn unchanged_sections_are_stored_once_and_pruned_last() {
    let (_dir, store) = temp_store();
    for i in 0..4 {
        store.put(&rich_snapshot(&format!("u{i}"), i)).unwrap();
    }
    let sections = |store: &SqliteStore| -> u32 {
        let connection = store.connection.lock().unwrap();
        check_counts(&connection);
        connection
            .query_row("SELECT count(*) FROM sections", [], |row| row.get(0))
            .unwrap()
    };
    let stored = sections(&store);
    {
        let connection = store.connection.lock().unwrap();
        // The first snapshot's slots are all shared (its layout is the base of the next ones'),
        // later ones keep only their layout (id and time changed) as their own.
        let first = slots(&connection, "u0");
        assert!(stored <= first.len() as u32, "{stored} > {}", first.len());
        assert_eq!(shared_slots(&connection, "u0"), first.len());
        assert_eq!(shared_slots(&connection, "u3"), first.len() - 1);
    }
    // A change in one section adds no section: it is the snapshot's own, against its base.
    let mut changed = rich_snapshot("u4", 4);
    changed.host.kernel = Some("6.12".into());
    store.put(&changed).unwrap();
    assert_eq!(sections(&store), stored);
    {
        let connection = store.connection.lock().unwrap();
        let kept = slots(&connection, "u4");
        assert_eq!(shared_slots(&connection, "u4"), kept.len() - 2);
        assert!(kept.iter().any(|slot| matches!(
            slot,
            crate::content::Slot::Own {
                base: Some(_),
                depth: 1,
                ..
            }
        )));
    }
    // Pruning the old snapshots keeps every section the kept ones share or use as a base.
    let pruned = store
        .prune(&PrunePolicy {
            keep_last: 2,
            ..PrunePolicy::default()
        })
        .unwrap();
    assert_eq!(pruned.len(), 3);
    for id in ["u3", "u4"] {
        assert!(store.get(id).unwrap().is_some(), "{id}");
    }
    assert_eq!(store.export("u4").unwrap(), to_json(&changed));
    assert_eq!(sections(&store), stored);
    // Only the last one: u3 needed nothing u4 does not.
    store
        .prune(&PrunePolicy {
            keep_last: 1,
            ..PrunePolicy::default()
        })
        .unwrap();
    assert_eq!(sections(&store), stored);
    assert_eq!(store.get("u4").unwrap().unwrap(), changed);
    // Unchanged in the next snapshot, u4's own `host` has settled: it is stored whole.
    let mut next = changed.clone();
    next.id = "u5".into();
    next.collected_at = 5;
    store.put(&next).unwrap();
    assert_eq!(sections(&store), stored + 1);
    assert_eq!(store.export("u5").unwrap(), to_json(&next));
    assert_eq!(store.export("u4").unwrap(), to_json(&changed));
}
