//! One set of store cases, run against both implementations: the SQLite file store and the
//! PostgreSQL store on a real server (a cluster of Debian's `postgresql` package, started in a
//! temporary directory by `probe_testkit::postgres`; each case gets its own database).
//! PostgreSQL-only behaviour (libpq conventions, refusals) is at the end.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use probe_model::{
    AuditRecord, AuditStatus, FleetView, HostFacts, ProcessInfo, ProcessRole, PythonEnv,
    PythonPackage, SCHEMA_VERSION, Snapshot,
};
use probe_store::Fingerprint;
use probe_store::{
    AuditRun, HostPoint, PgEnv, PgStore, PrunePolicy, Selector, SnapshotStore, SqliteStore,
    StoreError,
};
use probe_testkit::postgres::Postgres;
use probe_testkit::stall::{Stall, StallingProxy};

/// Where a case's store lives; `open` gives another connection to the same store.
struct Backend {
    location: String,
    env: PgEnv,
    postgres: bool,
    _dir: Option<tempfile::TempDir>,
}

impl Backend {
    fn open(&self) -> Box<dyn SnapshotStore> {
        if self.postgres {
            Box::new(PgStore::open_with(&self.location, &self.env).unwrap())
        } else {
            Box::new(SqliteStore::open(std::path::Path::new(&self.location)).unwrap())
        }
    }
}

fn sqlite() -> Backend {
    let dir = tempfile::tempdir().unwrap();
    Backend {
        location: dir
            .path()
            .join("sub")
            .join("snapshots.db")
            .display()
            .to_string(),
        env: PgEnv::default(),
        postgres: false,
        _dir: Some(dir),
    }
}

fn cluster() -> &'static Postgres {
    static CLUSTER: OnceLock<Postgres> = OnceLock::new();
    CLUSTER.get_or_init(Postgres::start)
}

fn database_name() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("case{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn postgres() -> Backend {
    let cluster = cluster();
    Backend {
        location: cluster.create_database(&database_name()),
        env: PgEnv::from_pairs(cluster.client_env(), None),
        postgres: true,
        _dir: None,
    }
}

macro_rules! cases {
    ($($case:ident),* $(,)?) => {
        mod sqlite {
            $(#[test] fn $case() { super::$case(&super::sqlite()) })*
        }
        mod postgres {
            $(#[test] fn $case() { super::$case(&super::postgres()) })*
        }
    };
}

cases!(
    put_get_latest_history_and_indexed_columns,
    identity_survives_rename_and_readdress,
    references_resolve,
    prune_keeps_newest_per_host,
    export_import_round_trip_and_newer_refused,
    concurrent_writers_lose_nothing,
    concurrent_writers_of_one_new_machine_agree_on_its_host,
    audit_records_newest_per_host_across_shards,
    replacing_a_snapshot_keeps_one_copy,
    pruning_a_base_keeps_what_later_snapshots_need,
    writers_and_a_pruner_at_once_keep_every_kept_snapshot_exact,
    fingerprints_are_kept_and_computed_for_older_snapshots,
    engine_packages_indexed_are_the_definitions,
);

fn snapshot(id: &str, target: &str, hostname: &str, machine_id: &str, at: i64) -> Snapshot {
    Snapshot {
        schema_version: SCHEMA_VERSION,
        id: id.into(),
        target: target.into(),
        address: Some(format!("{target}:22")),
        collected_at: at,
        redacted: true,
        host: HostFacts {
            hostname: Some(hostname.into()).filter(|h: &String| !h.is_empty()),
            machine_id: Some(machine_id.into()).filter(|m: &String| !m.is_empty()),
            ..HostFacts::default()
        },
        ..Snapshot::default()
    }
}

fn ids(metas: Vec<probe_store::SnapshotMeta>) -> Vec<String> {
    metas.into_iter().map(|m| m.id).collect()
}

fn put_get_latest_history_and_indexed_columns(backend: &Backend) {
    let store = backend.open();
    let mut first = snapshot("a1", "gpu7", "gpu7", "m-0001", 100);
    first.processes.push(ProcessInfo {
        pid: 1,
        engine: Some(probe_model::Engine::Sglang),
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
    first.host.os_pretty = Some("Debian \"12\" \\ ünïcode \u{1F600} 0.1 1e300".into());
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
    assert_eq!(ids(store.history("gpu7").unwrap()), ["a1", "a2"]);
    assert_eq!(ids(store.list(None).unwrap()), ["a2", "b1", "a1"]);
    let listed = store.list(None).unwrap();
    assert_eq!(listed.last().unwrap().engines, ["sglang"]);
    assert_eq!(listed.last().unwrap().versions, meta.versions);
    assert_eq!(listed.last().unwrap().collected_at, 100);
    assert_eq!(listed.last().unwrap().host_id, meta.host_id);
    assert!(store.get("nope").unwrap().is_none());
    assert!(store.latest("unknown-host").unwrap().is_none());
    // Names match case-insensitively.
    assert_eq!(store.latest("GPU8").unwrap().unwrap().id, "b1");
}

/// The store recognises an engine's packages exactly by the engine definitions' `packages`
/// (`configs/engines/*.toml`, read through `Engine::packages`): every one is indexed, and a
/// package that is neither an engine's nor one engines are built on is not.
fn engine_packages_indexed_are_the_definitions(backend: &Backend) {
    let store = backend.open();
    let definitions: BTreeSet<String> = probe_model::Engine::ALL
        .into_iter()
        .flat_map(|e| e.packages().iter().cloned())
        .collect();
    // Every engine with a Python package has its definition's; TGI's two, TensorRT-LLM's one
    // (its `tensorrt_llm` spelling is the same distribution, PEP 503).
    for name in [
        "vllm",
        "sglang",
        "lmdeploy",
        "tensorrt-llm",
        "text-generation-server",
    ] {
        assert!(definitions.contains(name), "{name} in {definitions:?}");
    }
    let mut s = snapshot("e1", "gpu9", "gpu9", "m-0009", 100);
    s.python_envs.push(PythonEnv {
        packages: definitions
            .iter()
            .chain(&["numpy".to_string(), "requests".to_string()])
            .map(|name| PythonPackage {
                name: name.clone(),
                version: "1.2.3".into(),
                ..PythonPackage::default()
            })
            .collect(),
        ..PythonEnv::default()
    });
    let meta = store.put(&s).unwrap();
    let indexed: BTreeSet<String> = meta.versions.keys().cloned().collect();
    assert_eq!(indexed, definitions);
    assert_eq!(store.list(None).unwrap()[0].versions, meta.versions);
}

fn identity_survives_rename_and_readdress(backend: &Backend) {
    let store = backend.open();
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
        assert_eq!(ids(store.history(name).unwrap()), ["s1", "s2"], "by {name}");
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
    assert_eq!(ids(store.history("mid-box-1234").unwrap()), ["u1", "u2"]);
}

fn references_resolve(backend: &Backend) {
    let store = backend.open();
    // 2026-11-20T10:00Z, 2026-11-21T10:00Z, 2026-11-22T10:00Z
    for (id, at) in [
        ("d1", 1_795_168_800),
        ("d2", 1_795_255_200),
        ("d3", 1_795_341_600),
    ] {
        store.put(&snapshot(id, "gpu7", "gpu7", "m-7", at)).unwrap();
    }
    let resolve = |text: &str| {
        let selector = probe_store::parse_host_reference(text).unwrap().unwrap();
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
    let latest = Selector::Host {
        host: "gpu7".into(),
        point: HostPoint::Latest,
    };
    assert_eq!(store.resolve(&latest).unwrap().id, "d3");
}

fn prune_keeps_newest_per_host(backend: &Backend) {
    let store = backend.open();
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
    assert_eq!(ids(deleted), ["a1", "a0"]);
    assert_eq!(ids(store.history("a").unwrap()), ["a2", "a3", "a4"]);
    assert_eq!(store.history("b").unwrap().len(), 5);
}

fn export_import_round_trip_and_newer_refused(backend: &Backend) {
    let store = backend.open();
    let original = snapshot("x1", "gpu7", "gpu7", "m", 5);
    store.put(&original).unwrap();
    let text = store.export("x1").unwrap();
    // Into a store of the other kind, and back: the same snapshot.
    let other_backend = if backend.postgres {
        sqlite()
    } else {
        postgres()
    };
    let other = other_backend.open();
    other.import(&text, "x1.json").unwrap();
    assert_eq!(other.get("x1").unwrap().unwrap(), original);
    let back = sqlite().open();
    back.import(&other.export("x1").unwrap(), "x1.json")
        .unwrap();
    assert_eq!(back.get("x1").unwrap().unwrap(), original);
    let newer = text.replacen(
        &format!("\"schema_version\": {SCHEMA_VERSION}"),
        &format!("\"schema_version\": {}", SCHEMA_VERSION + 1),
        1,
    );
    let err = store.import(&newer, "x1.json").unwrap_err();
    assert!(matches!(err, StoreError::NewerSnapshot { .. }), "{err}");
}

/// Several writers (each its own connection, like runners), big documents: every row arrives.
fn concurrent_writers_lose_nothing(backend: &Backend) {
    const WRITERS: usize = 4;
    const EACH: i64 = 25;
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            scope.spawn(move || {
                let store = backend.open();
                for i in 0..EACH {
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
            });
        }
    });
    let store = backend.open();
    assert_eq!(store.list(None).unwrap().len(), WRITERS * EACH as usize);
    for writer in 0..WRITERS {
        assert_eq!(
            store.history(&format!("host{writer}")).unwrap().len(),
            EACH as usize
        );
    }
}

/// Runners that meet one new machine at the same moment file it under one host.
fn concurrent_writers_of_one_new_machine_agree_on_its_host(backend: &Backend) {
    const WRITERS: usize = 4;
    let host_ids: Vec<i64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|writer| {
                scope.spawn(move || {
                    let store = backend.open();
                    (0..10)
                        .map(|i| {
                            let s = snapshot(
                                &format!("same-{writer}-{i}"),
                                &format!("alias-{writer}"),
                                "shared-box",
                                "machine-shared-0001",
                                i,
                            );
                            store.put(&s).unwrap().host_id
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().unwrap())
            .collect()
    });
    let distinct: BTreeSet<i64> = host_ids.iter().copied().collect();
    assert_eq!(distinct.len(), 1, "{host_ids:?}");
    let store = backend.open();
    assert_eq!(store.history("shared-box").unwrap().len(), WRITERS * 10);
    assert_eq!(store.history("alias-3").unwrap().len(), WRITERS * 10);
}

fn audit_records_newest_per_host_across_shards(backend: &Backend) {
    let store = backend.open();
    let run = |id: &str, shard: &str, at: i64| AuditRun {
        run_id: id.into(),
        inventory: "fleet.toml".into(),
        shard: Some(shard.into()),
        runner: format!("ci@runner-{shard}"),
        started_at: at,
    };
    let record = |host: &str, status: AuditStatus, changes: usize| AuditRecord {
        schema_version: SCHEMA_VERSION,
        record_type: probe_model::RecordType::Host,
        host: host.into(),
        target: format!("{host}.example"),
        status,
        changes,
        groups: vec!["prod".into()],
        ..AuditRecord::default()
    };
    let (old, shard0, shard1) = (
        run("r0", "0/2", 100),
        run("r1", "0/2", 200),
        run("r2", "1/2", 210),
    );
    store
        .record_audit(&old, &record("gpu1", AuditStatus::Ok, 0), 101)
        .unwrap();
    store
        .record_audit(&old, &record("gpu2", AuditStatus::Ok, 0), 102)
        .unwrap();
    store
        .record_audit(&shard0, &record("gpu1", AuditStatus::Changed, 2), 201)
        .unwrap();
    store
        .record_audit(&shard1, &record("gpu2", AuditStatus::Unreachable, 0), 211)
        .unwrap();
    store
        .record_audit(&shard1, &record("gpu3", AuditStatus::Ok, 0), 212)
        .unwrap();
    // The same run and host again replaces its record.
    store
        .record_audit(&shard1, &record("gpu3", AuditStatus::TimedOut, 0), 213)
        .unwrap();
    // A host that lost sections to the connection: `partial`, with the sections it lost.
    let partial = AuditRecord {
        lost_sections: vec!["gpu_query".into(), "gpu_topo".into()],
        ..record("gpu4", AuditStatus::Partial, 1)
    };
    store.record_audit(&shard1, &partial, 214).unwrap();
    let last = store.last_audits().unwrap();
    let summary: Vec<(String, AuditStatus, Option<String>, i64)> = last
        .iter()
        .map(|a| {
            (
                a.record.host.clone(),
                a.record.status,
                a.run.shard.clone(),
                a.recorded_at,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("gpu1".into(), AuditStatus::Changed, Some("0/2".into()), 201),
            (
                "gpu2".into(),
                AuditStatus::Unreachable,
                Some("1/2".into()),
                211
            ),
            (
                "gpu3".into(),
                AuditStatus::TimedOut,
                Some("1/2".into()),
                213
            ),
            ("gpu4".into(), AuditStatus::Partial, Some("1/2".into()), 214),
        ]
    );
    assert_eq!(last[3].record, partial);
    assert_eq!(last[0].record.changes, 2);
    assert_eq!(last[0].run.runner, "ci@runner-0/2");
    assert_eq!(last[0].run.started_at, 200);
    assert_eq!(last[0].record.groups, ["prod"]);
}

fn replacing_a_snapshot_keeps_one_copy(backend: &Backend) {
    let store = backend.open();
    store.put(&snapshot("r1", "h", "h", "m-r", 10)).unwrap();
    let mut again = snapshot("r1", "h", "h", "m-r", 10);
    again.host.kernel = Some("6.1".into());
    store.put(&again).unwrap();
    assert_eq!(ids(store.list(None).unwrap()), ["r1"]);
    assert_eq!(store.get("r1").unwrap().unwrap(), again);
}

/// Host `gpu7`'s snapshot at `hour`, with what moves every hour moved (uptime, GPU memory and
/// utilisation, section timings) and a process list that changes once.
fn drifting(hour: i64) -> Snapshot {
    let mut s = snapshot(
        &format!("gpu7-{hour}"),
        "gpu7",
        "gpu7",
        "m-drift-0001",
        1_795_000_000 + hour * 3600,
    );
    s.duration_ms = 700 + hour as u64 % 50;
    s.host.uptime_s = Some(86_400 + hour as u64 * 3600);
    s.host.mem_available_kib = Some(1_500_000_000 - hour as u64 * 1000);
    s.sections = (0..20)
        .map(|i| probe_model::SectionReport {
            name: format!("section-{i}"),
            bytes: 1000 + i * 37 + hour as u64 % 17,
            duration_ms: Some(10 + (i + hour as u64) % 90),
            ..probe_model::SectionReport::default()
        })
        .collect();
    s.processes = (0..10)
        .map(|i| ProcessInfo {
            pid: 1000 + i + if hour >= 12 { 500 } else { 0 },
            argv: vec!["python3".into(), format!("worker.{i}")],
            // A launcher's environment is in a fleet view, the others' are not.
            role: if i == 0 {
                ProcessRole::Launcher
            } else {
                ProcessRole::Worker
            },
            env: [("CUDA_VISIBLE_DEVICES".to_string(), format!("{i}"))].into(),
            ..ProcessInfo::default()
        })
        .collect();
    s.gpu.gpus = (0..4)
        .map(|g| probe_model::Gpu {
            index: Some(g),
            memory_used_mib: Some(120_000 + (hour as u64 * 97 + u64::from(g)) % 5000),
            utilization_gpu_pct: Some(((hour as u64 * 7 + u64::from(g)) % 100) as u32),
            ..probe_model::Gpu::default()
        })
        .collect();
    s
}

/// Later snapshots keep only their difference from the sections of earlier ones: pruning (or
/// replacing) the snapshots those sections came from leaves every later one intact.
fn pruning_a_base_keeps_what_later_snapshots_need(backend: &Backend) {
    let store = backend.open();
    let mut kept: Vec<Snapshot> = (0..30).map(drifting).collect();
    for s in &kept {
        store.put(s).unwrap();
    }
    // Replace the very first one (whose sections are the first bases) with something else.
    let mut replaced = kept[0].clone();
    replaced.host.kernel = Some("6.12".into());
    replaced.processes.clear();
    store.put(&replaced).unwrap();
    kept[0] = replaced;
    let check = |kept: &[Snapshot]| {
        assert_eq!(store.list(None).unwrap().len(), kept.len());
        for s in kept {
            assert_eq!(
                store.export(&s.id).unwrap(),
                probe_store::to_json(s),
                "{}",
                s.id
            );
        }
        let ids: Vec<String> = kept.iter().map(|s| s.id.clone()).collect();
        let many: Vec<Snapshot> = store
            .get_many(&ids)
            .unwrap()
            .into_iter()
            .flatten()
            .collect();
        assert_eq!(many, kept);
        let views: Vec<FleetView> = store
            .get_many_views(&ids)
            .unwrap()
            .into_iter()
            .flatten()
            .collect();
        let expected: Vec<FleetView> = kept.iter().cloned().map(FleetView::of).collect();
        assert_eq!(views, expected);
    };
    check(&kept);
    for (hour, keep_last) in [(30, 20), (31, 3), (32, 1)] {
        let pruned = store
            .prune(&PrunePolicy {
                keep_last,
                ..PrunePolicy::default()
            })
            .unwrap();
        assert_eq!(pruned.len(), kept.len() - keep_last);
        kept.drain(..kept.len() - keep_last);
        check(&kept);
        // And the next snapshot is stored against what is left.
        let next = drifting(hour);
        store.put(&next).unwrap();
        kept.push(next);
        check(&kept);
    }
}

/// Writers of hosts that share sections (the same packages) store drifting snapshots while a
/// pruner keeps deleting all but the newest few of each: whatever is left is exact.
fn writers_and_a_pruner_at_once_keep_every_kept_snapshot_exact(backend: &Backend) {
    const WRITERS: usize = 3;
    const EACH: i64 = 30;
    let done = std::sync::atomic::AtomicBool::new(false);
    let written: Vec<Vec<Snapshot>> = std::thread::scope(|scope| {
        let pruner = scope.spawn(|| {
            let store = backend.open();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                store
                    .prune(&PrunePolicy {
                        keep_last: 3,
                        ..PrunePolicy::default()
                    })
                    .unwrap();
            }
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|writer| {
                scope.spawn(move || {
                    let store = backend.open();
                    (0..EACH)
                        .map(|hour| {
                            let mut s = drifting(hour);
                            s.id = format!("w{writer}-{hour}");
                            s.target = format!("host{writer}");
                            s.host.hostname = Some(format!("host{writer}"));
                            s.host.machine_id = Some(format!("m-writer-{writer}"));
                            s.python_envs.push(PythonEnv {
                                interpreter: "/opt/venv/bin/python".into(),
                                packages: (0..30)
                                    .map(|i| PythonPackage {
                                        name: format!("package-{i}"),
                                        version: format!("1.{}.0", i + usize::from(hour >= 20)),
                                        ..PythonPackage::default()
                                    })
                                    .collect(),
                                ..PythonEnv::default()
                            });
                            store.put(&s).unwrap();
                            s
                        })
                        .collect::<Vec<Snapshot>>()
                })
            })
            .collect();
        let written = writers.into_iter().map(|w| w.join().unwrap()).collect();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        pruner.join().unwrap();
        written
    });
    let store = backend.open();
    store
        .prune(&PrunePolicy {
            keep_last: 3,
            ..PrunePolicy::default()
        })
        .unwrap();
    let left = store.list(None).unwrap();
    assert_eq!(left.len(), WRITERS * 3);
    for meta in &left {
        let expected = written.iter().flatten().find(|s| s.id == meta.id).unwrap();
        assert_eq!(
            store.export(&meta.id).unwrap(),
            probe_store::to_json(expected)
        );
    }
    let ids: Vec<String> = left.iter().map(|meta| meta.id.clone()).collect();
    assert!(store.get_many(&ids).unwrap().iter().all(Option::is_some));
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL only.

#[test]
fn postgres_password_from_pgpass_and_never_printed() {
    let cluster = cluster();
    let url = cluster.create_database(&database_name());
    // No password anywhere: the server asks for one (SCRAM over TCP), the client has none.
    let err = PgStore::open_with(
        &url,
        &PgEnv::from_pairs(Vec::<(String, String)>::new(), None),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("password"), "{err}");
    // PGPASSWORD works, and a wrong password in the URL is not printed.
    let env = PgEnv::from_pairs([("PGPASSWORD", cluster.password.as_str())], None);
    PgStore::open_with(&url, &env).unwrap();
    let wrong = url.replacen("probe@", "probe:hunter2-wrong@", 1);
    let err = PgStore::open_with(&wrong, &PgEnv::default())
        .unwrap_err()
        .to_string();
    assert!(!err.contains("hunter2"), "{err}");
    assert!(err.contains("probe:***@"), "{err}");
    assert!(err.contains("password authentication failed"), "{err}");
    // ~/.pgpass of the home directory.
    let home = tempfile::tempdir().unwrap();
    std::fs::copy(&cluster.pgpass, home.path().join(".pgpass")).unwrap();
    let store = PgStore::open_with(
        &url,
        &PgEnv::from_pairs(Vec::<(String, String)>::new(), Some(home.path().into())),
    )
    .unwrap();
    assert_eq!(store.location(), url);
    // A service file names the server; the password still comes from PGPASSFILE.
    let services = home.path().join("pg_service.conf");
    std::fs::write(
        &services,
        format!(
            "[fleet]\nhost=127.0.0.1\nport={}\ndbname=postgres\nuser=probe\nsslmode=disable\n",
            cluster.port
        ),
    )
    .unwrap();
    let mut pairs = cluster.client_env();
    pairs.push(("PGSERVICEFILE".into(), services.display().to_string()));
    pairs.push(("PGSERVICE".into(), "fleet".into()));
    PgStore::open_with("postgres://", &PgEnv::from_pairs(pairs, None)).unwrap();
    // Nobody listening: one line naming the store.
    let refused = format!(
        "postgres://probe@127.0.0.1:{}/x?sslmode=disable&connect_timeout=2",
        probe_testkit::sshd::free_port(std::net::Ipv4Addr::LOCALHOST)
    );
    let err = PgStore::open_with(&refused, &PgEnv::default())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with(&format!("store {refused}: ")), "{err}");
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn postgres_newer_schema_is_refused_and_runners_migrate_once() {
    let cluster = cluster();
    let name = database_name();
    let url = cluster.create_database(&name);
    let env = PgEnv::from_pairs(cluster.client_env(), None);
    // Four runners open a fresh database at once: one migrates, all succeed.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| PgStore::open_with(&url, &env).unwrap());
        }
    });
    assert_eq!(
        cluster
            .psql(
                &name,
                "SELECT count(*), max(version) FROM probe.schema_meta"
            )
            .trim(),
        format!("1|{}", probe_store::STORE_SCHEMA_VERSION)
    );
    cluster.psql(&name, "UPDATE probe.schema_meta SET version = version + 1");
    let err = PgStore::open_with(&url, &env).unwrap_err();
    assert!(matches!(err, StoreError::NewerStore { .. }), "{err}");
    assert!(err.to_string().contains("upgrade probe"), "{err}");
}

#[test]
fn postgres_stores_sections_and_refuses_unredacted_snapshots() {
    let cluster = cluster();
    let name = database_name();
    let url = cluster.create_database(&name);
    let store = PgStore::open_with(&url, &PgEnv::from_pairs(cluster.client_env(), None)).unwrap();
    let mut unredacted = snapshot("u1", "h", "h", "m-u", 1);
    unredacted.redacted = false;
    let err = store.put(&unredacted).unwrap_err();
    assert!(matches!(err, StoreError::Unredacted { .. }), "{err}");
    let mut hostile = snapshot("n1", "h", "h\0x", "m-n", 2);
    hostile.host.os_pretty = Some("nul \0 inside".into());
    hostile.processes.push(ProcessInfo {
        pid: 1,
        engine: Some(probe_model::Engine::Vllm),
        ..ProcessInfo::default()
    });
    store.put(&hostile).unwrap();
    // Sections are bytes: a NUL in the document comes back as it went in.
    let back = store.get("n1").unwrap().unwrap();
    assert_eq!(back.host.os_pretty.as_deref(), Some("nul \0 inside"));
    assert_eq!(store.export("n1").unwrap(), probe_store::to_json(&hostile));
    // Fleet queries need no document: the indexed columns are there.
    assert_eq!(
        cluster
            .psql(
                &name,
                "SELECT machine_id, engines[1], collected_by <> '', redacted \
                 FROM probe.snapshots WHERE id = 'n1'"
            )
            .trim(),
        "m-n|vllm|t|t"
    );
    // The same host again, unchanged but for its id and time: only new references.
    let sections_before = cluster.psql(&name, "SELECT count(*) FROM probe.sections");
    let mut again = hostile.clone();
    again.id = "n2".into();
    again.collected_at = 3;
    store.put(&again).unwrap();
    assert_eq!(
        cluster.psql(&name, "SELECT count(*) FROM probe.sections"),
        sections_before
    );
}

/// A store of layout version 2 (its schema is the fixture, its rows written as that release's
/// `put` wrote them: jsonb documents) opens with every snapshot intact.
#[test]
fn postgres_a_version_two_store_opens_with_every_snapshot_intact() {
    let cluster = cluster();
    let name = database_name();
    let url = cluster.create_database(&name);
    let schema = include_str!("fixtures/store-v2-postgres.sql");
    cluster.psql(&name, &format!("SET ROLE probe;\n{schema}"));
    let snapshots: Vec<Snapshot> = (0..4)
        .map(|i| {
            let mut s = snapshot(&format!("old{i}"), "gpu7", "gpu7", "m-old-0001", 100 + i);
            s.host.os_pretty = Some(format!("Debian \"12\" ü \u{1F600} {i}"));
            s.gpu.driver_version = Some("570.172.08".into());
            s
        })
        .collect();
    let mut rows = String::from(
        "SET ROLE probe;
         INSERT INTO probe.hosts (machine_id, hostname, first_seen, last_seen)
         VALUES ('m-old-0001', 'gpu7', to_timestamp(100), to_timestamp(103));
         INSERT INTO probe.host_names (host_id, name, kind, last_seen)
         VALUES (1, 'gpu7', 'hostname', to_timestamp(103)), (1, 'gpu7', 'target', to_timestamp(103));",
    );
    for s in &snapshots {
        rows.push_str(&format!(
            "INSERT INTO probe.snapshots (id, host_id, target, address, hostname, machine_id,
               collected_at, collected_by, schema_version, engines, versions, document)
             VALUES ('{}', 1, 'gpu7', 'gpu7:22', 'gpu7', 'm-old-0001', to_timestamp({}),
               'ci@old', {}, '{{}}', '{{\"nvidia-driver\": \"570.172.08\"}}',
               $doc${}$doc$::jsonb);\n",
            s.id,
            s.collected_at,
            s.schema_version,
            probe_store::to_json(s)
        ));
    }
    cluster.psql(&name, &rows);
    let store = PgStore::open_with(&url, &PgEnv::from_pairs(cluster.client_env(), None)).unwrap();
    for s in &snapshots {
        assert_eq!(store.get(&s.id).unwrap().as_ref(), Some(s));
        assert_eq!(store.export(&s.id).unwrap(), probe_store::to_json(s));
    }
    assert_eq!(
        ids(store.history("gpu7").unwrap()),
        ["old0", "old1", "old2", "old3"]
    );
    assert_eq!(
        store.list(None).unwrap()[0].versions["nvidia-driver"],
        "570.172.08"
    );
    assert_eq!(
        cluster
            .psql(
                &name,
                "SELECT (SELECT max(version) FROM probe.schema_meta),
                        (SELECT count(*) FROM information_schema.columns
                         WHERE table_schema = 'probe' AND table_name = 'snapshots'
                           AND column_name = 'document')"
            )
            .trim(),
        format!("{}|0", probe_store::STORE_SCHEMA_VERSION)
    );
    // The old snapshots share every section (each migrated layout is its snapshot's own slot).
    let (sections, needed) = section_counts(cluster, &name);
    let per_snapshot = needed / snapshots.len();
    assert_eq!(needed % snapshots.len(), 0);
    assert!(sections < per_snapshot + 2, "{sections} {per_snapshot}");
}

/// (sections stored, slots that need one: the sum of their counts).
fn section_counts(cluster: &Postgres, database: &str) -> (usize, usize) {
    let out = cluster.psql(
        database,
        "SELECT (SELECT count(*) FROM probe.sections),
                (SELECT coalesce(sum(refs), 0) FROM probe.sections)",
    );
    let (a, b) = out.trim().split_once('|').unwrap();
    (a.parse().unwrap(), b.parse().unwrap())
}

#[test]
fn postgres_prune_keeps_shared_sections() {
    let cluster = cluster();
    let name = database_name();
    let url = cluster.create_database(&name);
    let store = PgStore::open_with(&url, &PgEnv::from_pairs(cluster.client_env(), None)).unwrap();
    let mut snapshots = Vec::new();
    for i in 0..4 {
        let mut s = snapshot(&format!("p{i}"), "gpu7", "gpu7", "m-p", i);
        s.host.kernel = Some(if i < 3 { "6.1" } else { "6.12" }.into());
        store.put(&s).unwrap();
        snapshots.push(s);
    }
    // p0's sections are shared by all; p1..p3 keep their layouts (and p3 its `host`) as their
    // own, against p0's.
    let (sections, needed) = section_counts(cluster, &name);
    let per_snapshot = needed / 4;
    store
        .prune(&PrunePolicy {
            keep_last: 2,
            ..PrunePolicy::default()
        })
        .unwrap();
    assert_eq!(section_counts(cluster, &name), (sections, per_snapshot * 2));
    for s in &snapshots[2..] {
        assert_eq!(store.export(&s.id).unwrap(), probe_store::to_json(s));
    }
    store
        .prune(&PrunePolicy {
            keep_last: 1,
            ..PrunePolicy::default()
        })
        .unwrap();
    // p0's sections stay: p3 needs them, as they are or as its bases.
    assert_eq!(section_counts(cluster, &name), (sections, per_snapshot));
    assert_eq!(store.get("p3").unwrap().as_ref(), Some(&snapshots[3]));
    // Replaced, p3's counts are released: one snapshot's worth remains.
    let mut other = snapshots[3].clone();
    other.host.kernel = Some("7.0".into());
    other.target = "gpu8".into();
    store.put(&other).unwrap();
    assert_eq!(store.export("p3").unwrap(), probe_store::to_json(&other));
    assert_eq!(section_counts(cluster, &name).1, per_snapshot);
}

mod round_trip {
    //! Store, then export, gives back the input byte for byte (both stores).
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z0-9._-]{0,12}",
            any::<String>(),
            "[\\x00-\\x1f\"\\\\\u{7f}-\u{9f}\u{202e}\u{1F600}]{0,8}",
        ]
    }

    prop_compose! {
        fn snapshots()(
            hostname in text(),
            os in proptest::option::of(text()),
            argv in proptest::collection::vec(text(), 0..4),
            env in proptest::collection::btree_map(text(), text(), 0..3),
            launcher in any::<bool>(),
            section in text(),
            packages in proptest::collection::vec((text(), text()), 0..4),
            power in proptest::option::of(any::<f64>().prop_filter("finite", |f| f.is_finite())),
            uptime in any::<Option<u64>>(),
            at in any::<i32>(),
        ) -> Snapshot {
            let mut s = snapshot("", "target", &hostname, "m-prop-0001", i64::from(at));
            s.host.os_pretty = os;
            s.host.uptime_s = uptime;
            let role = if launcher { ProcessRole::Launcher } else { ProcessRole::Worker };
            s.processes.push(ProcessInfo { pid: 7, argv: argv.clone(), env: env.clone(), role, ..ProcessInfo::default() });
            s.processes.push(ProcessInfo { pid: 8, argv, env, ..ProcessInfo::default() });
            s.sections.push(probe_model::SectionReport { name: section, ..probe_model::SectionReport::default() });
            s.python_envs.push(PythonEnv {
                packages: packages
                    .into_iter()
                    .map(|(name, version)| PythonPackage { name, version, ..PythonPackage::default() })
                    .collect(),
                ..PythonEnv::default()
            });
            s.gpu.gpus.push(probe_model::Gpu { power_draw_w: power, ..probe_model::Gpu::default() });
            s
        }
    }

    /// Sections stored.
    fn sections(backend: &Backend) -> String {
        if backend.postgres {
            let database = backend.location.rsplit('/').next().unwrap();
            let database = database.split('?').next().unwrap();
            cluster().psql(database, "SELECT count(*) FROM probe.sections")
        } else {
            rusqlite::Connection::open(&backend.location)
                .unwrap()
                .query_row("SELECT count(*) FROM sections", [], |row| {
                    row.get::<_, i64>(0)
                })
                .unwrap()
                .to_string()
        }
    }

    fn check(backend: &Backend, store: &dyn SnapshotStore, mut snapshot: Snapshot, n: usize) {
        snapshot.id = format!("prop-{n}");
        // A host of its own, so that the next snapshot is planned against this one.
        snapshot.host.machine_id = Some(format!("m-prop-{n:04}"));
        let input = probe_store::to_json(&snapshot);
        store.put(&snapshot).unwrap();
        assert_eq!(store.export(&snapshot.id).unwrap(), input);
        // And it reads back as the input document reads.
        assert_eq!(
            store.get(&snapshot.id).unwrap().unwrap(),
            probe_store::from_json(&input, "input").unwrap()
        );
        // The next hour: `host` and `gpu` moved, so they (and the layout) are kept as their
        // difference from this snapshot's sections, and no section is added.
        let before = sections(backend);
        let mut next = snapshot.clone();
        next.id = format!("prop-{n}-next");
        next.host.uptime_s = Some(next.host.uptime_s.map_or(1, |u| u.wrapping_add(3600)));
        next.gpu.gpus[0].memory_used_mib = Some(n as u64);
        let next_input = probe_store::to_json(&next);
        store.put(&next).unwrap();
        assert_eq!(sections(backend), before);
        assert_eq!(store.export(&next.id).unwrap(), next_input);
        assert_eq!(store.export(&snapshot.id).unwrap(), input);
        assert_eq!(
            store
                .get_many(&[next.id.clone(), snapshot.id.clone()])
                .unwrap(),
            [
                Some(probe_store::from_json(&next_input, "input").unwrap()),
                Some(probe_store::from_json(&input, "input").unwrap())
            ]
        );
        // As a fleet comparison reads them: the view of what `get_many` reads, with what the
        // view leaves out left out (the section reports, a non-launcher's environment).
        let views = store
            .get_many_views(&[next.id.clone(), snapshot.id.clone(), "absent".into()])
            .unwrap();
        assert_eq!(
            views,
            [
                Some(FleetView::of(
                    probe_store::from_json(&next_input, "input").unwrap()
                )),
                Some(FleetView::of(
                    probe_store::from_json(&input, "input").unwrap()
                )),
                None
            ]
        );
        let view = views[1].as_ref().unwrap().snapshot();
        assert!(view.sections.is_empty());
        assert!(view.processes[1].env.is_empty());
        assert_eq!(
            view.processes[0].env,
            snapshot.processes[0]
                .env
                .clone()
                .into_iter()
                .filter(|_| snapshot.processes[0].role == ProcessRole::Launcher)
                .collect()
        );
        assert_eq!(view.processes[0].argv, snapshot.processes[0].argv);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        #[test]
        fn sqlite_store_then_export_is_the_input(snapshot in snapshots()) {
            static STORE: OnceLock<(Backend, Box<dyn SnapshotStore>)> = OnceLock::new();
            let (backend, store) = STORE.get_or_init(|| { let b = sqlite(); let s = b.open(); (b, s) });
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            check(backend, &**store, snapshot, N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        }

        #[test]
        fn postgres_store_then_export_is_the_input(snapshot in snapshots()) {
            static STORE: OnceLock<(Backend, Box<dyn SnapshotStore>)> = OnceLock::new();
            let (backend, store) = STORE.get_or_init(|| { let b = postgres(); let s = b.open(); (b, s) });
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            check(backend, &**store, snapshot, N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        }
    }
}

/// The snapshots of the layout-version-3 fixtures (`tests/fixtures/store-v3.sqlite`, the file,
/// and `store-v3.pgdump`, a `pg_dump --format=custom`, of stores written by
/// the layout-3 store's `put`): three hosts of one image, four hourly snapshots each, with drift
/// (uptime, GPU memory), hostile text, a NUL, and one snapshot replaced and one pruned.
fn v3_fixture_snapshots() -> Vec<Snapshot> {
    let mut all = Vec::new();
    for host in 0..3u32 {
        for hour in 0..4i64 {
            let at = 1_795_000_000 + hour * 3600;
            let mut s = snapshot(
                &format!("gpu{host}-{at}-v3"),
                &format!("gpu{host}"),
                &format!("gpu{host}"),
                &format!("m-v3-{host:04}"),
                at,
            );
            s.duration_ms = 700 + hour as u64;
            s.host.uptime_s = Some(86_400 + hour as u64 * 3600);
            s.host.os_pretty = Some("Debian \"12\" \\ ünïcode \u{1F600} \u{1b}[31m \0".into());
            s.processes.push(ProcessInfo {
                pid: 4000 + host,
                argv: vec!["python3".into(), "-m".into(), "vllm.entrypoints".into()],
                engine: Some(probe_model::Engine::Vllm),
                ..ProcessInfo::default()
            });
            s.python_envs.push(PythonEnv {
                interpreter: "/opt/venv/bin/python".into(),
                packages: (0..20)
                    .map(|i| PythonPackage {
                        name: if i == 0 {
                            "vllm".into()
                        } else {
                            format!("package-{i}")
                        },
                        version: format!("0.{i}.0"),
                        ..PythonPackage::default()
                    })
                    .collect(),
                ..PythonEnv::default()
            });
            s.gpu.driver_version = Some("570.172.08".into());
            s.gpu.gpus = (0..2)
                .map(|g| probe_model::Gpu {
                    index: Some(g),
                    name: Some("NVIDIA H200".into()),
                    memory_used_mib: Some(120_000 + hour as u64 * 97 + u64::from(g)),
                    ..probe_model::Gpu::default()
                })
                .collect();
            all.push(s);
        }
    }
    all
}

/// What a layout-3 fixture holds must come back exactly: every snapshot, its export, each
/// host's history, the indexed versions; the pruned snapshot stays gone.
fn check_v3_fixture(store: &dyn SnapshotStore) {
    let expected = v3_fixture_snapshots();
    for s in &expected {
        assert_eq!(
            store.export(&s.id).unwrap(),
            probe_store::to_json(s),
            "{}",
            s.id
        );
        assert_eq!(store.get(&s.id).unwrap().as_ref(), Some(s));
    }
    assert!(store.get("doomed").unwrap().is_none());
    assert_eq!(store.list(None).unwrap().len(), expected.len());
    for host in 0..3 {
        let history = ids(store.history(&format!("gpu{host}")).unwrap());
        let want: Vec<String> = expected
            .iter()
            .filter(|s| s.target == format!("gpu{host}"))
            .map(|s| s.id.clone())
            .collect();
        assert_eq!(history, want);
    }
    assert_eq!(store.list(None).unwrap()[0].versions["vllm"], "0.0.0");
    assert_eq!(
        store.list(Some("gpu1")).unwrap()[0].versions["nvidia-driver"],
        "570.172.08"
    );
    // And it takes new snapshots, which share what the old ones stored.
    let mut next = expected[11].clone();
    next.id = "after-migration".into();
    next.collected_at += 3600;
    store.put(&next).unwrap();
    assert_eq!(
        store.export("after-migration").unwrap(),
        probe_store::to_json(&next)
    );
    store
        .prune(&PrunePolicy {
            keep_last: 1,
            ..PrunePolicy::default()
        })
        .unwrap();
    assert_eq!(
        store.export("after-migration").unwrap(),
        probe_store::to_json(&next)
    );
    assert_eq!(store.list(None).unwrap().len(), 3);
}

/// A SQLite store written by the layout-3 release opens with every snapshot intact.
#[test]
fn sqlite_a_version_three_store_opens_with_every_snapshot_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.db");
    // The file that store wrote, as it was when it was closed.
    std::fs::write(&path, include_bytes!("fixtures/store-v3.sqlite")).unwrap();
    let store = SqliteStore::open(&path).unwrap();
    check_v3_fixture(&store);
    drop(store);
    let version: u32 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("SELECT max(version) FROM schema_meta", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, probe_store::STORE_SCHEMA_VERSION);
}

/// A PostgreSQL store written by the layout-3 release opens with every snapshot intact.
#[test]
fn postgres_a_version_three_store_opens_with_every_snapshot_intact() {
    let cluster = cluster();
    let name = database_name();
    let url = restore_v3(cluster, &name);
    let store = PgStore::open_with(&url, &PgEnv::from_pairs(cluster.client_env(), None)).unwrap();
    check_v3_fixture(&store);
    assert_eq!(
        cluster
            .psql(&name, "SELECT max(version) FROM probe.schema_meta")
            .trim(),
        probe_store::STORE_SCHEMA_VERSION.to_string()
    );
}

/// The database `name`, holding the layout-3 release's store as it was; its URL.
fn restore_v3(cluster: &Postgres, name: &str) -> String {
    let url = cluster.create_database(name);
    let dump = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(dump.path(), include_bytes!("fixtures/store-v3.pgdump")).unwrap();
    let bin = probe_testkit::postgres::require_postgres().unwrap();
    let restored = std::process::Command::new(bin.join("pg_restore"))
        .args(["--no-owner", "--no-privileges", "-d", &url])
        .arg(dump.path())
        .envs(cluster.client_env())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&restored.stderr);
    assert!(restored.status.success(), "pg_restore: {stderr}");
    url
}

// ---------------------------------------------------------------------------------------------
// A PostgreSQL store behind a network path that stops answering (`probe_testkit::stall`: a
// loopback proxy that accepts, forwards until told not to, then holds its sockets open).

/// The URL of `database` through `proxy` (the password comes from `PGPASSWORD`).
fn through(proxy: &StallingProxy, database: &str) -> String {
    format!(
        "postgres://{}@127.0.0.1:{}/{database}?sslmode=disable&connect_timeout=2",
        probe_testkit::postgres::SUPERUSER,
        proxy.port
    )
}

/// Runs `work` on its own thread and returns what it returns. A store operation that never
/// returns fails the test here, after a wait far beyond any bound under test, instead of
/// hanging the test run; how long the operation took is not asserted.
fn returns<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(work());
    });
    receiver
        .recv_timeout(std::time::Duration::from_secs(300))
        .unwrap_or_else(|_| panic!("{what} never returned: the store hangs on a stalled network"))
}

fn assert_timed_out(err: &StoreError, store: &str) {
    let text = err.to_string();
    assert!(matches!(err, StoreError::TimedOut { .. }), "{text}");
    assert!(text.starts_with(&format!("store {store}: ")), "{text}");
    assert!(text.contains("no answer within"), "{text}");
    assert!(!text.contains('\n'), "{text}");
}

#[test]
fn postgres_behind_a_path_that_stalls_at_once_fails_instead_of_hanging() {
    let cluster = cluster();
    let name = database_name();
    cluster.create_database(&name);
    // Accepted, then silence: TCP connects, the start-up message is never answered.
    let proxy = StallingProxy::start((cluster.addr, cluster.port).into(), Stall::AtOnce);
    let url = through(&proxy, &name);
    let env = PgEnv::from_pairs([("PGPASSWORD", cluster.password.clone())], None);
    let (location, environment) = (url.clone(), env.clone());
    let err = returns("opening the store", move || {
        PgStore::open_within(&location, &environment, std::time::Duration::from_secs(3)).map(|_| ())
    })
    .unwrap_err();
    assert_timed_out(&err, &url);
    // The same through the CLI's entry point, with the process environment's libpq defaults.
    let location = url.clone();
    let err = returns("probe_store::open_within", move || {
        probe_store::open_within(&location, std::time::Duration::from_secs(3)).map(|_| ())
    })
    .unwrap_err();
    assert_timed_out(&err, &url);
}

#[test]
fn postgres_behind_a_path_that_stalls_once_connected_fails_each_operation_and_recovers() {
    let cluster = cluster();
    let name = database_name();
    cluster.create_database(&name);
    let proxy = StallingProxy::start((cluster.addr, cluster.port).into(), Stall::OnSwitch);
    let url = through(&proxy, &name);
    let env = PgEnv::from_pairs([("PGPASSWORD", cluster.password.clone())], None);
    let store = std::sync::Arc::new(
        PgStore::open_within(&url, &env, std::time::Duration::from_secs(3)).unwrap(),
    );
    let first = snapshot("gpu7-1", "gpu7", "gpu7", "m-7", 1_700_000_000);
    store.put(&first).unwrap();
    // The path stops forwarding under connections the pool holds: each operation gives up.
    proxy.stall();
    let second = snapshot("gpu7-2", "gpu7", "gpu7", "m-7", 1_700_000_100);
    let (writer, doc) = (store.clone(), second.clone());
    let err = returns("a put", move || writer.put(&doc)).unwrap_err();
    assert_timed_out(&err, &url);
    let reader = store.clone();
    let err = returns("a read", move || reader.latest("gpu7")).unwrap_err();
    assert_timed_out(&err, &url);
    let recorder = store.clone();
    let err = returns("an audit record", move || {
        recorder.record_audit(
            &AuditRun {
                run_id: "r1".into(),
                inventory: "fleet.toml".into(),
                shard: None,
                runner: "runner-a".into(),
                started_at: 1_700_000_000,
            },
            &AuditRecord {
                host: "gpu7".into(),
                status: AuditStatus::Ok,
                ..AuditRecord::default()
            },
            1_700_000_200,
        )
    })
    .unwrap_err();
    assert_timed_out(&err, &url);
    // The path comes back: the stalled connections were dropped, new ones work.
    proxy.resume();
    store.put(&second).unwrap();
    assert_eq!(store.latest("gpu7").unwrap().unwrap().id, "gpu7-2");
}

/// Opening reads which layout the store has as one plain operation: a path that stalls on that
/// read gives up after the operation's bound, not the migration's.
#[test]
fn postgres_reading_the_layout_is_bounded_like_any_operation() {
    let cluster = cluster();
    let name = database_name();
    cluster.create_database(&name);
    // Connects and sets up the session, then stalls on the first look at the layout.
    let proxy = StallingProxy::start(
        (cluster.addr, cluster.port).into(),
        Stall::OnClientBytes(b"probe.schema_meta".to_vec()),
    );
    let url = through(&proxy, &name);
    let env = PgEnv::from_pairs([("PGPASSWORD", cluster.password.clone())], None);
    let location = url.clone();
    let err = returns("opening the store", move || {
        PgStore::open_within(&location, &env, std::time::Duration::from_secs(3)).map(|_| ())
    })
    .unwrap_err();
    assert!(
        proxy.is_stalled(),
        "the layout was never read through the proxy"
    );
    assert_timed_out(&err, &url);
    assert!(err.to_string().contains("no answer within 3s"), "{err}");
}

/// A migration is bounded by its own bound (`MIGRATION_TIMEOUT`, or the one the store is opened
/// with), not by a multiple of the operation bound: a layout-3 store behind a path that stalls
/// once the migration has begun gives up after it, says which store, from which layout and
/// why, and leaves the store as it was (it migrates, whole, when the path is good).
#[test]
fn postgres_a_stalled_migration_gives_up_at_its_own_bound_and_leaves_the_store_as_it_was() {
    let cluster = cluster();
    let name = database_name();
    restore_v3(cluster, &name);
    // The layout is read, the migration's transaction begins; its lock is never answered.
    let proxy = StallingProxy::start(
        (cluster.addr, cluster.port).into(),
        Stall::OnClientBytes(b"pg_advisory_xact_lock".to_vec()),
    );
    let url = through(&proxy, &name);
    let env = PgEnv::from_pairs([("PGPASSWORD", cluster.password.clone())], None);
    let location = url.clone();
    let err = returns("opening the store", move || {
        PgStore::open_bounded(
            &location,
            &env,
            std::time::Duration::from_secs(2),
            std::time::Duration::from_secs(5),
        )
        .map(|_| ())
    })
    .unwrap_err();
    assert!(
        proxy.is_stalled(),
        "the migration never began through the proxy"
    );
    let text = err.to_string();
    assert!(
        matches!(
            err,
            StoreError::MigrationTimedOut {
                from: 3,
                waited_s: 5,
                ..
            }
        ),
        "{text}"
    );
    assert!(
        text.starts_with(&format!(
            "store {url}: migrating its layout from version 3 to {} did not finish within 5s",
            probe_store::STORE_SCHEMA_VERSION
        )),
        "{text}"
    );
    assert!(
        text.contains("rolled back, the store is unchanged"),
        "{text}"
    );
    assert!(!text.contains('\n'), "{text}");
    assert_eq!(
        cluster
            .psql(&name, "SELECT max(version) FROM probe.schema_meta")
            .trim(),
        "3"
    );
    assert!(probe_store::MIGRATION_TIMEOUT >= probe_store::OPERATION_TIMEOUT);
    // Straight to the server, the same store migrates with every snapshot intact.
    let store = PgStore::open_with(
        &cluster.url(&name),
        &PgEnv::from_pairs(cluster.client_env(), None),
    )
    .unwrap();
    check_v3_fixture(&store);
}

/// Forgets every stored fingerprint, as a store migrated from layout 4 holds them.
fn forget_fingerprints(backend: &Backend) {
    if backend.postgres {
        let database = backend.location.rsplit('/').next().unwrap();
        let database = database.split('?').next().unwrap();
        cluster().psql(database, "UPDATE probe.snapshots SET fingerprint = NULL");
    } else {
        let connection = rusqlite::Connection::open(&backend.location).unwrap();
        connection
            .execute("UPDATE snapshots SET fingerprint = NULL", [])
            .unwrap();
    }
}

/// Each snapshot's fingerprint is its view's: equal for hosts whose configurations are equal
/// (names, ids and uptime apart), apart where one differs; snapshots stored
/// before fingerprints were kept have the same ones, computed when read.
fn fingerprints_are_kept_and_computed_for_older_snapshots(backend: &Backend) {
    let store = backend.open();
    let mut snapshots = Vec::new();
    for n in 0..6i64 {
        let name = format!("gpu{n}");
        let mut s = snapshot(&format!("{name}-1"), &name, &name, &format!("m{n}"), 100);
        s.host.uptime_s = Some(1000 + n as u64);
        s.host.kernel = Some(if n == 4 { "6.12" } else { "6.8" }.into());
        if n == 5 {
            s.gpu.gpus.push(probe_model::Gpu {
                power_draw_w: Some(412.5),
                ..probe_model::Gpu::default()
            });
        }
        store.put(&s).unwrap();
        snapshots.push(s);
    }
    let mut ids: Vec<String> = snapshots.iter().map(|s| s.id.clone()).collect();
    ids.push("missing".into());
    let expected: Vec<Option<Fingerprint>> = snapshots
        .iter()
        .map(|s| Some(Fingerprint::of(&FleetView::of(s.clone()))))
        .chain([None])
        .collect();
    let kept = store.fingerprints(&ids).unwrap();
    assert_eq!(kept, expected);
    assert!(kept[0].as_ref().unwrap().hash.is_some());
    assert!((1..4).all(|n| kept[n] == kept[0]), "{kept:?}");
    assert_ne!(kept[4], kept[0]);
    assert_ne!(kept[5], kept[0]);
    forget_fingerprints(backend);
    assert_eq!(store.fingerprints(&ids).unwrap(), expected);
}
