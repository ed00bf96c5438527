use super::*;
use probe_model::{ProcessInfo, Snapshot};

#[test]
fn outlier_lines_name_the_host_and_the_group() {
    let change = |kind, before: Option<i64>, after: Option<i64>| probe_model::Change {
        category: probe_model::Category::MemoryKvCache,
        impact: probe_model::Impact::Medium,
        kind,
        key: "gpu.other_processes_mib".into(),
        before: before.map(serde_json::Value::from),
        after: after.map(serde_json::Value::from),
        before_written: None,
        after_written: None,
        explanation: "other processes hold GPU memory (0 -> 20486)".into(),
        note: None,
        mechanism: None,
        verdict: None,
        unset_default: None,
        startup_limit: None,
        consequence_of: Vec::new(),
    };
    use probe_model::ChangeKind::{Added, Changed, Removed};
    let table = [
        (
            change(Changed, Some(0), Some(20486)),
            "gpu.other_processes_mib: this host 20486, the group 0 (group -> this host: \
             other processes hold GPU memory (0 -> 20486))",
        ),
        (
            change(Added, None, Some(20486)),
            "gpu.other_processes_mib: this host 20486, the group (unset) (group -> this \
             host: other processes hold GPU memory (0 -> 20486))",
        ),
        (
            change(Removed, Some(0), None),
            "gpu.other_processes_mib: this host (unset), the group 0 (group -> this host: \
             other processes hold GPU memory (0 -> 20486))",
        ),
    ];
    for (change, expected) in table {
        assert_eq!(outlier_line(&change), expected);
    }
}

/// The outliers read from the store (`get_many_views`, by audit record and by target) are
/// the outliers of the snapshots as `get` and `latest` read them one by one.
#[test]
fn outliers_from_the_store_are_those_of_each_hosts_snapshot() {
    use probe_model::{Gpu, PythonEnv, PythonPackage};
    let dir = tempfile::tempdir().unwrap();
    let store = probe_store::SqliteStore::open(&dir.path().join("s.db")).unwrap();
    let snapshot = |host: usize, at: i64, driver: &str, torch: &str| Snapshot {
        schema_version: SCHEMA_VERSION,
        id: format!("gpu{host}-{at}"),
        target: format!("gpu{host}"),
        collected_at: at,
        redacted: true,
        host: probe_model::HostFacts {
            hostname: Some(format!("gpu{host}")),
            machine_id: Some(format!("{host:032x}")),
            ..probe_model::HostFacts::default()
        },
        python_envs: vec![PythonEnv {
            interpreter: "/opt/venv/bin/python".into(),
            packages: vec![PythonPackage {
                name: "torch".into(),
                version: torch.into(),
                ..PythonPackage::default()
            }],
            ..PythonEnv::default()
        }],
        gpu: probe_model::GpuState {
            driver_version: Some(driver.into()),
            gpus: vec![Gpu {
                name: Some("NVIDIA H200".into()),
                ..Gpu::default()
            }],
            ..probe_model::GpuState::default()
        },
        ..Snapshot::default()
    };
    let members: Vec<FleetMember> = (0..6)
        .map(|host| FleetMember {
            name: format!("host-{host}"),
            target: format!("gpu{host}"),
            groups: vec!["prod".into()],
            tags: vec![],
        })
        .collect();
    let run = probe_store::AuditRun {
        run_id: "r".into(),
        inventory: "fleet.toml".into(),
        shard: None,
        runner: "t@here".into(),
        started_at: 1,
    };
    for host in 0..6 {
        let driver = if host == 4 { "535.1" } else { "570.172.08" };
        let torch = if host == 5 { "2.7.0" } else { "2.8.0" };
        store.put(&snapshot(host, 100, driver, "2.6.0")).unwrap();
        store.put(&snapshot(host, 200, driver, torch)).unwrap();
        // Half the hosts have an audit record naming their older snapshot, one a
        // snapshot that is not stored (read by target instead).
        if host % 2 == 0 {
            let record = probe_model::AuditRecord {
                host: format!("host-{host}"),
                snapshot_id: Some(if host == 2 {
                    "missing".into()
                } else {
                    format!("gpu{host}-100")
                }),
                ..probe_model::AuditRecord::default()
            };
            store.record_audit(&run, &record, 5).unwrap();
        }
    }
    let groups = group_outliers(&store, &members, &BTreeMap::new(), &[]).unwrap();
    let one_by_one: Vec<FleetView> = (0..6)
        .map(|host| match host {
            0 | 4 => store.get(&format!("gpu{host}-100")).unwrap().unwrap(),
            _ => store.latest(&format!("gpu{host}")).unwrap().unwrap(),
        })
        .map(FleetView::of)
        .collect();
    let expected_members: Vec<Member<'_>> = members
        .iter()
        .zip(&one_by_one)
        .map(|(member, view)| Member {
            host: &member.name,
            view,
        })
        .collect();
    assert_eq!(
        groups,
        vec![probe_diff::outliers("prod", &expected_members)]
    );
    assert!(!groups[0].outliers.is_empty());
    assert_eq!(
        groups,
        group_outliers_by_views(&store, &members, &BTreeMap::new(), &[]).unwrap()
    );
}

/// A vLLM host of a generated fleet: `n` its number (names, ids, uptime), the rest its
/// configuration.
fn fleet_host(n: usize, driver: &str, flag: Option<&str>, torch: &str, pid: u32) -> Snapshot {
    use probe_model::{Gpu, GpuState, ProcessInfo, PythonEnv, PythonPackage};
    let name = format!("gpu{n}");
    let mut argv: Vec<String> = [
        "/opt/venvs/vllm/bin/python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/mnt/models/GLM-4.5-Air-FP8",
        "--tensor-parallel-size",
        "2",
    ]
    .map(str::to_string)
    .to_vec();
    argv.extend(
        flag.into_iter()
            .flat_map(|f| f.split(' '))
            .map(str::to_string),
    );
    let package = |name: &str, version: &str| PythonPackage {
        name: name.into(),
        version: version.into(),
        ..PythonPackage::default()
    };
    let gpu = |index: u32| Gpu {
        index: Some(index),
        name: Some("NVIDIA H200".into()),
        uuid: Some(format!("GPU-{index}")),
        power_limit_w: Some(700.0),
        ..Gpu::default()
    };
    Snapshot {
        schema_version: SCHEMA_VERSION,
        id: format!("{name}-1"),
        target: name.clone(),
        collected_at: 1_795_000_000,
        redacted: true,
        host: probe_model::HostFacts {
            hostname: Some(name),
            machine_id: Some(format!("{n:032x}")),
            uptime_s: Some(1000 + n as u64),
            ..probe_model::HostFacts::default()
        },
        processes: vec![ProcessInfo {
            pid,
            engine: Some(probe_model::Engine::Vllm),
            argv,
            role: probe_model::ProcessRole::Launcher,
            exe: Some("/opt/venvs/vllm/bin/python3.11".into()),
            ..ProcessInfo::default()
        }],
        python_envs: vec![PythonEnv {
            interpreter: "/opt/venvs/vllm/bin/python3".into(),
            packages: vec![package("vllm", "0.11.0"), package("torch", torch)],
            ..PythonEnv::default()
        }],
        gpu: GpuState {
            driver_version: Some(driver.into()),
            gpus: vec![gpu(0), gpu(1)],
            ..GpuState::default()
        },
        ..Snapshot::default()
    }
}

/// A generated fleet of 30 hosts in one group: most share one image, a few differ in the
/// driver, a flag, torch or a process id; the first twelve disagree, so that the medoid
/// is not of the modal image (the holders' comparisons); two hosts stored before
/// fingerprints were kept (`forget` clears theirs), one snapshot of this run.
fn generated_fleet(store: &dyn SnapshotStore, forget: impl Fn(&[&str])) -> Vec<FleetMember> {
    for n in 0..30 {
        let (driver, flag, torch, pid) = match n {
            0..12 if n % 2 == 0 => ("570.172.08", None, "2.8.0".to_string(), 4242),
            0..12 => ("575.57.08", None, format!("2.7.{n}"), 4242),
            14 => ("575.57.08", None, "2.8.0".into(), 4343),
            20 | 21 => (
                "575.57.08",
                Some("--enable-expert-parallel"),
                "2.8.0".into(),
                4242,
            ),
            25 => (
                "570.172.08",
                Some("--max-num-seqs 64"),
                "2.8.0".into(),
                4242,
            ),
            _ => ("575.57.08", None, "2.8.0".into(), 4242),
        };
        store
            .put(&fleet_host(n, driver, flag, &torch, pid))
            .unwrap();
    }
    forget(&["gpu16-1", "gpu21-1"]);
    (0..31)
        .map(|n| FleetMember {
            name: format!("host-{n}"),
            target: format!("gpu{n}"),
            groups: vec!["prod".into()],
            tags: vec![format!("rack{}", n % 2)],
        })
        .collect()
}

/// The outliers by fingerprint are today's, where every member's view is read and
/// compared: on SQLite and on PostgreSQL, fresh and stored snapshots mixed.
#[test]
fn outliers_by_fingerprint_are_those_of_every_view_on_both_stores() {
    let fresh: BTreeMap<String, FleetView> = [(
        "host-30".to_string(),
        FleetView::of(fleet_host(30, "575.57.08", None, "2.8.0", 4242)),
    )]
    .into();
    let check = |store: &dyn SnapshotStore, members: &[FleetMember]| {
        let by_fingerprint = group_outliers(store, members, &fresh, &[]).unwrap();
        let by_views = group_outliers_by_views(store, members, &fresh, &[]).unwrap();
        assert_eq!(by_fingerprint, by_views);
        let prod = by_fingerprint.iter().find(|g| g.group == "prod").unwrap();
        assert_eq!(prod.hosts, 31);
        let odd: Vec<&str> = prod.outliers.iter().map(|o| o.host.as_str()).collect();
        for host in ["host-0", "host-20", "host-21", "host-25"] {
            assert!(odd.contains(&host), "{host} not in {odd:?}");
        }
        assert_eq!(by_fingerprint.len(), 3, "prod, tag:rack0, tag:rack1");
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let sqlite = probe_store::SqliteStore::open(&path).unwrap();
    let members = generated_fleet(&sqlite, |ids| {
        let connection = rusqlite::Connection::open(&path).unwrap();
        for id in ids {
            connection
                .execute(
                    "UPDATE snapshots SET fingerprint = NULL WHERE id = ?1",
                    [id],
                )
                .unwrap();
        }
    });
    check(&sqlite, &members);
    probe_testkit::postgres::require_postgres().unwrap_or_else(|e| panic!("{e}"));
    let cluster = probe_testkit::postgres::Postgres::start();
    let url = cluster.create_database("fleet");
    let env = probe_store::PgEnv::from_pairs(cluster.client_env(), None);
    let pg = probe_store::PgStore::open_with(&url, &env).unwrap();
    let members = generated_fleet(&pg, |ids| {
        cluster.psql(
            "fleet",
            &format!(
                "UPDATE probe.snapshots SET fingerprint = NULL WHERE id IN ('{}')",
                ids.join("', '")
            ),
        );
    });
    check(&pg, &members);
}

/// The shell history every host of a generated fleet was set up with: launches typed one
/// after another, one through a variable carried to an `eval`.
fn typed_history(extra: &str) -> probe_model::HistoryFile {
    let mut commands: Vec<String> = (0..40)
        .map(|i| {
            format!(
                "python -m vllm.entrypoints.openai.api_server --model /mnt/models/GLM-4.5-Air-FP8 --port {} --max-num-seqs {}",
                8000 + i % 4,
                64 << (i % 3)
            )
        })
        .collect();
    commands.push("CMD='vllm serve /mnt/models/GLM-4.5-Air-FP8 --tensor-parallel-size 2'".into());
    commands.push("eval \"$CMD\"".into());
    commands.push(format!("vllm serve /mnt/models/GLM-4.5-Air-FP8 {extra}"));
    probe_model::HistoryFile {
        user: "ubuntu".into(),
        path: "/home/ubuntu/.bash_history".into(),
        mtime: Some(1_794_999_000),
        entries: (commands.into_iter().enumerate())
            .map(|(index, command)| probe_model::HistoryEntry {
                index: index as u32,
                time: Some(1_794_900_000 + index as i64 * 600),
                command,
            })
            .collect(),
        ..probe_model::HistoryFile::default()
    }
}

/// `--outliers` with each history file's launches remembered (probe-launch's memo: most
/// hosts share one history) is byte for byte today's answer, where every member's view is
/// read and analysed afresh: a fleet whose hosts share a history but not their process ids
/// or GPU UUIDs, with planted outliers (a flag, the driver, torch, the engine's version,
/// which completes the shared history's launches differently, and a history of its own).
#[test]
fn outliers_with_remembered_histories_are_todays_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let store = probe_store::SqliteStore::open(&dir.path().join("s.db")).unwrap();
    for n in 0..24 {
        let (driver, flag, torch) = match n {
            5 => ("535.1", None, "2.8.0"),
            9 => ("575.57.08", Some("--enable-expert-parallel"), "2.8.0"),
            13 => ("575.57.08", None, "2.7.1"),
            _ => ("575.57.08", None, "2.8.0"),
        };
        let mut host = fleet_host(n, driver, flag, torch, 4000 + n as u32);
        host.gpu.gpus[0].uuid = Some(format!("GPU-{n}-0"));
        host.histories = vec![typed_history(if n == 17 { "--max-num-seqs 8" } else { "" })];
        // Installed before the history's launches, so that they take its version.
        host.python_envs[0].packages[0].installed_at = Some(1_794_000_000);
        if n == 21 {
            host.python_envs[0].packages[0].version = "0.10.2".into();
        }
        store.put(&host).unwrap();
    }
    let members: Vec<FleetMember> = (0..24)
        .map(|n| FleetMember {
            name: format!("host-{n}"),
            target: format!("gpu{n}"),
            groups: vec!["prod".into()],
            tags: vec![format!("rack{}", n % 3)],
        })
        .collect();
    let none = BTreeMap::new();
    let json = |groups: &[GroupOutliers]| serde_json::to_string(groups).unwrap();
    let today = probe_launch::without_memo(|| {
        group_outliers_by_views(&store, &members, &none, &[]).unwrap()
    });
    // Twice: the memo cold, then warm.
    for _ in 0..2 {
        assert_eq!(
            json(&group_outliers(&store, &members, &none, &[]).unwrap()),
            json(&today)
        );
        assert_eq!(
            json(&group_outliers_by_views(&store, &members, &none, &[]).unwrap()),
            json(&today)
        );
    }
    let prod = today.iter().find(|g| g.group == "prod").unwrap();
    let odd: Vec<&str> = prod.outliers.iter().map(|o| o.host.as_str()).collect();
    for host in ["host-5", "host-9", "host-13", "host-21"] {
        assert!(odd.contains(&host), "{host} not in {odd:?}");
    }
}

/// Hosts set up alike but each with its own process ids and GPU UUIDs, as real hosts are:
/// `--outliers` by fingerprint (identities renamed, comparisons with the reference shared
/// where the reference sees the hosts alike) is byte for byte today's answer, where every
/// member's view is read and compared; also where an id is what differs: a host whose
/// launcher names its own GPU's UUID, a foreign process on a GPU (its change is keyed by
/// its pid), a worker whose launcher is another process, and a host whose ids are the
/// reference's (the reference sees them).
#[test]
fn outliers_with_identities_renamed_are_todays_byte_for_byte() {
    use probe_model::{GpuProcess, ProcessRole};
    let dir = tempfile::tempdir().unwrap();
    let store = probe_store::SqliteStore::open(&dir.path().join("s.db")).unwrap();
    for n in 0..40u32 {
        let own = if n == 33 { 0 } else { n };
        let mut host = fleet_host(n as usize, "575.57.08", None, "2.8.0", 4000 + own * 7);
        for (index, gpu) in host.gpu.gpus.iter_mut().enumerate() {
            gpu.uuid = Some(format!("GPU-{own:08x}-{index:04x}-aaaa-bbbb"));
        }
        host.processes.push(ProcessInfo {
            pid: 4001 + own * 7,
            ppid: Some(4000 + own * 7),
            launcher_pid: Some(if n == 21 { 1 } else { 4000 + own * 7 }),
            role: ProcessRole::Worker,
            argv: vec!["VLLM::Worker_TP0".into()],
            ..ProcessInfo::default()
        });
        if n == 9 {
            host.processes[0].env.insert(
                "CUDA_VISIBLE_DEVICES".into(),
                format!("GPU-{own:08x}-0000-aaaa-bbbb"),
            );
        }
        // Another user's process on a GPU: on the reference (host-0, pid 9000) and the
        // other candidates, and on host-30 with the reference's pid (no new finding) and
        // host-31 with one just below it (a new finding), which only the values tell apart.
        let foreign = match n {
            0 => Some(9000),
            1..12 | 15 => Some(9100 + n),
            30 => Some(9000),
            31 => Some(8999),
            _ => None,
        };
        if let Some(pid) = foreign {
            host.hardware.processes.push(GpuProcess {
                gpu_uuid: host.gpu.gpus[0].uuid.clone(),
                pid: Some(pid),
                process_name: Some("python3".into()),
                used_memory_mib: Some(20 * 1024),
                user: Some("ana".into()),
                ..GpuProcess::default()
            });
        }
        store.put(&host).unwrap();
    }
    let members: Vec<FleetMember> = (0..40)
        .map(|n| FleetMember {
            name: format!("host-{n}"),
            target: format!("gpu{n}"),
            groups: vec!["prod".into()],
            tags: vec![],
        })
        .collect();
    let none = BTreeMap::new();
    let json = |groups: &[GroupOutliers]| serde_json::to_string(groups).unwrap();
    let today = group_outliers_by_views(&store, &members, &none, &[]).unwrap();
    let by_fingerprint = group_outliers(&store, &members, &none, &[]).unwrap();
    assert_eq!(json(&by_fingerprint), json(&today));
    let prod = &today[0];
    let odd: Vec<&str> = prod.outliers.iter().map(|o| o.host.as_str()).collect();
    assert_eq!(prod.reference.as_deref(), Some("host-0"));
    for host in ["host-9", "host-15", "host-31"] {
        assert!(odd.contains(&host), "{host} not in {odd:?}");
    }
    for host in ["host-12", "host-30", "host-33"] {
        assert!(!odd.contains(&host), "{host} in {odd:?}");
    }
    // The fingerprints share: hosts that differ only in ids have one hash.
    let ids: Vec<String> = ["gpu1-1", "gpu2-1", "gpu9-1"].map(String::from).to_vec();
    let prints = store.fingerprints(&ids).unwrap();
    let hash = |i: usize| prints[i].as_ref().unwrap().hash;
    assert_eq!(hash(0), hash(1));
    assert_ne!(prints[0], prints[1]);
    assert_ne!(hash(0), hash(2));
}
