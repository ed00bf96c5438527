//! Store size and read times with content-addressed sections (issue 22, item 3). Prints
//! numbers; asserts nothing about time.
//!
//! `cargo bench -p probe-store --bench store --profile dev` (`PROBE_BENCH_HOSTS`, default
//! 10000; `PROBE_BENCH_HOURS`, default 2: snapshots per host in the fleet part;
//! `PROBE_BENCH_PG=0` skips PostgreSQL; `PROBE_BENCH_READ_HOSTS`, default 1000: hosts of the
//! fleet read back; `PROBE_BENCH_FLEET=PATH` keeps the fleet's store there, and reads an
//! existing one instead of writing it again; `PROBE_BENCH_ONE_IMAGE=1` gives every host the same
//! process ids and GPU UUIDs). Snapshots are synthetic but shaped like a serving host's
//! (~190 KB of JSON: 2 environments of 150 packages, 60 processes, 8 GPUs, 3 logs with metric
//! series, 70 section reports, shell histories, package events). Hourly drift: what changes on
//! an unchanged host every hour (uptime, free memory, section times and sizes, GPU memory,
//! utilisation, temperature and power, the last points of the log metrics); hosts of the fleet
//! share their image (packages, package events) and differ in names, ids and processes.
#![allow(clippy::print_stderr, clippy::print_stdout)]

use std::collections::BTreeMap;
use std::time::Instant;

use probe_model::{
    AuditRecord, AuditStatus, Gpu, HistoryEntry, HistoryFile, HostFacts, LogSource, MetricSeries,
    PackageEvent, ProcessInfo, PythonEnv, PythonPackage, SCHEMA_VERSION, SectionReport, Snapshot,
};
use probe_store::{AuditRun, PgEnv, PgStore, SnapshotStore, SqliteStore};

/// Host `host`'s snapshot at `hour`; `drift` makes the hourly measurements move.
fn snapshot(host: usize, hour: i64, drift: bool) -> Snapshot {
    let at = 1_795_000_000 + hour * 3600;
    let t = if drift { hour as u64 } else { 0 };
    // Process ids and GPU UUIDs: each host's own, or (`PROBE_BENCH_ONE_IMAGE`) the same on
    // every host, so that hosts differ only in what the fleet comparison does not read.
    let image = if std::env::var_os("PROBE_BENCH_ONE_IMAGE").is_some() {
        0
    } else {
        host
    };
    let packages: Vec<PythonPackage> = (0..150)
        .map(|i| PythonPackage {
            name: format!("package-{i:03}"),
            version: format!("{}.{}.{}", i % 7, i % 13, i % 3),
            installed_at: Some(1_790_000_000 + i as i64 * 60),
            direct_url: (i % 10 == 0).then(|| format!("https://files.example/p{i}.whl")),
            installer: Some(if i % 4 == 0 { "uv" } else { "pip" }.into()),
        })
        .collect();
    Snapshot {
        schema_version: SCHEMA_VERSION,
        id: format!("gpu{host}-{at}-abcd"),
        target: format!("gpu{host}"),
        address: Some(format!(
            "10.{}.{}.{}:22",
            host / 65536,
            host / 256 % 256,
            host % 256
        )),
        collected_at: at,
        remote_clock: Some(at - 1),
        collector_version: "0.1.0".into(),
        redacted: true,
        duration_ms: 700 + t % 50,
        host: HostFacts {
            hostname: Some(format!("gpu{host}")),
            machine_id: Some(format!("{host:032x}")),
            os_pretty: Some("Ubuntu 22.04.5 LTS".into()),
            kernel: Some("6.8.0-60-generic".into()),
            uptime_s: Some(86_400 + t * 3600),
            mem_total_kib: Some(2_113_000_000),
            mem_available_kib: Some(1_500_000_000 - t * 1000),
            cpu_count: Some(224),
            ..HostFacts::default()
        },
        sections: (0..70)
            .map(|i| SectionReport {
                name: format!("section-{i}"),
                bytes: 1000 + i * 37 + t % 17,
                duration_ms: Some(10 + (i + t) % 90),
                ..SectionReport::default()
            })
            .collect(),
        histories: vec![HistoryFile {
            user: "ubuntu".into(),
            path: "/home/ubuntu/.bash_history".into(),
            entries: (0..100)
                .map(|i| HistoryEntry {
                    index: i,
                    time: None,
                    command: format!(
                        "python -m vllm.entrypoints.openai.api_server --port {}",
                        8000 + i % 4
                    ),
                })
                .collect(),
            ..HistoryFile::default()
        }],
        processes: (0..60)
            .map(|i| ProcessInfo {
                pid: 1000 + i + image as u32 % 1000,
                ppid: Some(1),
                user: Some("ubuntu".into()),
                argv: vec![
                    "python3".into(),
                    "-m".into(),
                    format!("worker.{i}"),
                    "--tp".into(),
                    "8".into(),
                ],
                env: (0..10)
                    .map(|e| (format!("VAR_{e}"), format!("value-{e}-{i}")))
                    .collect::<BTreeMap<_, _>>(),
                start_time: Some(1_794_900_000 + i64::from(i)),
                ..ProcessInfo::default()
            })
            .collect(),
        python_envs: vec![
            PythonEnv {
                interpreter: "/opt/vllm/bin/python".into(),
                packages: packages.clone(),
                ..PythonEnv::default()
            },
            PythonEnv {
                interpreter: "/opt/sglang/bin/python".into(),
                packages,
                ..PythonEnv::default()
            },
        ],
        gpu: probe_model::GpuState {
            driver_version: Some("570.172.08".into()),
            cuda_version: Some("12.8".into()),
            gpus: (0..8)
                .map(|g| Gpu {
                    index: Some(g),
                    name: Some("NVIDIA H200".into()),
                    uuid: Some(format!("GPU-{image:08x}-{g:04x}")),
                    memory_total_mib: Some(143_771),
                    memory_used_mib: Some(120_000 + (t * 97 + u64::from(g)) % 5000),
                    utilization_gpu_pct: Some(((t * 7 + u64::from(g)) % 100) as u32),
                    temperature_c: Some(40 + ((t + u64::from(g)) % 30) as u32),
                    power_draw_w: Some(300.0 + ((t * 13 + u64::from(g)) % 400) as f64 / 3.0),
                    ..Gpu::default()
                })
                .collect(),
            ..probe_model::GpuState::default()
        },
        logs: (0..3)
            .map(|l| LogSource {
                location: format!("/var/log/vllm-{l}.log"),
                bytes_read: 1_000_000 + t * 5000,
                metrics: (0..3)
                    .map(|m| MetricSeries {
                        name: format!("metric-{m}"),
                        unit: "tok/s".into(),
                        points: (0..100)
                            .map(|p| {
                                (
                                    Some(at - 6000 + p * 60),
                                    ((p as u64 + t) * 31 % 1000) as f64 / 10.0,
                                )
                            })
                            .collect(),
                        ..MetricSeries::default()
                    })
                    .collect(),
                ..LogSource::default()
            })
            .collect(),
        package_events: (0..150)
            .map(|i| PackageEvent {
                time: Some(1_780_000_000 + i * 600),
                manager: "dpkg".into(),
                action: "upgrade".into(),
                package: format!("lib{i}"),
                from_version: Some("1.0".into()),
                to_version: Some("1.1".into()),
                source: "/var/log/dpkg.log".into(),
            })
            .collect(),
        ..Snapshot::default()
    }
}

fn sqlite_bytes(path: &std::path::Path) -> u64 {
    let connection = rusqlite::Connection::open(path).unwrap();
    let _: (i64, i64, i64) = connection
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .unwrap();
    let pages: i64 = connection
        .query_row("PRAGMA page_count", [], |row| row.get(0))
        .unwrap();
    let free: i64 = connection
        .query_row("PRAGMA freelist_count", [], |row| row.get(0))
        .unwrap();
    let size: i64 = connection
        .query_row("PRAGMA page_size", [], |row| row.get(0))
        .unwrap();
    ((pages - free) * size) as u64
}

/// Bytes one more hourly snapshot of one host costs, over `hours` snapshots.
fn per_hour(store: &dyn SnapshotStore, bytes: &dyn Fn() -> u64, drift: bool, hours: i64) -> f64 {
    store.put(&snapshot(0, 0, drift)).unwrap();
    let before = bytes();
    for hour in 1..=hours {
        store.put(&snapshot(0, hour, drift)).unwrap();
    }
    (bytes() - before) as f64 / hours as f64
}

/// CPU seconds this process has used (user + system, all threads), from `/proc/self/stat`:
/// what a read costs whatever else the machine is doing.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |index: usize| fields.get(index).and_then(|v| v.parse::<f64>().ok());
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name; 100 Hz.
    (ticks(11).unwrap_or(0.0) + ticks(12).unwrap_or(0.0)) / 100.0
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let hosts = env_or("PROBE_BENCH_HOSTS", 10_000);
    let hours = env_or("PROBE_BENCH_HOURS", 2) as i64;
    let document = probe_store::to_json(&snapshot(0, 0, true));
    println!("document: {} bytes of JSON", document.len());

    // Per hourly snapshot of one host, SQLite.
    for (label, drift) in [
        ("static host (only ids and times change)", false),
        ("unchanged host, hourly drift", true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path).unwrap();
        let cpu = cpu_seconds();
        let cost = per_hour(&store, &|| sqlite_bytes(&path), drift, 200);
        println!(
            "sqlite  {label}: {cost:.0} bytes per snapshot (200 snapshots; {:.1} ms of CPU per put)",
            (cpu_seconds() - cpu) * 1000.0 / 201.0
        );
        if std::env::var_os("PROBE_BENCH_DETAIL").is_some() {
            // Where the bytes are: each table and index (`dbstat`), after the 201 snapshots.
            let connection = rusqlite::Connection::open(&path).unwrap();
            let mut statement = connection
                .prepare(
                    "SELECT name, sum(pgsize - unused) FROM dbstat GROUP BY name ORDER BY 2 DESC",
                )
                .unwrap();
            let rows = statement
                .query_map([], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
                })
                .unwrap();
            for row in rows {
                let (name, bytes) = row.unwrap();
                println!("  {name}: {bytes}");
            }
        }
        if let Ok(keep) = std::env::var("PROBE_BENCH_KEEP") {
            std::fs::copy(&path, format!("{keep}-{drift}.db")).unwrap();
        }
    }
    if std::env::var("PROBE_BENCH_PG").as_deref() != Ok("0") {
        let cluster = probe_testkit::postgres::Postgres::start();
        for (n, (label, drift)) in [
            ("static host (only ids and times change)", false),
            ("unchanged host, hourly drift", true),
        ]
        .into_iter()
        .enumerate()
        {
            let name = format!("bench{n}");
            let url = cluster.create_database(&name);
            let store =
                PgStore::open_with(&url, &PgEnv::from_pairs(cluster.client_env(), None)).unwrap();
            let bytes = || -> u64 {
                cluster.psql(&name, "VACUUM");
                cluster
                    .psql(&name, "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'probe' AND c.relkind IN ('r','m')")
                    .trim()
                    .parse()
                    .unwrap()
            };
            let cost = per_hour(&store, &bytes, drift, 200);
            println!(
                "postgres {label}: {cost:.0} bytes per snapshot (200 snapshots, tables + indexes + TOAST)"
            );
            if std::env::var_os("PROBE_BENCH_DETAIL").is_some() {
                // Where the bytes are: each relation of the store (tables with their TOAST,
                // indexes alone), after the 201 snapshots.
                print!(
                    "{}",
                    cluster.psql(
                        &name,
                        "SELECT c.relname, pg_relation_size(c.oid) + coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'probe' AND c.relkind IN ('r', 'i') ORDER BY 2 DESC"
                    )
                );
            }
        }
    }

    // A fleet: `hosts` hosts x `hours` snapshots, SQLite; kept at `PROBE_BENCH_FLEET` when
    // set, and read from there (not written again) when that file exists.
    let dir = tempfile::tempdir().unwrap();
    let kept = std::env::var_os("PROBE_BENCH_FLEET").map(std::path::PathBuf::from);
    let reuse = kept.as_ref().is_some_and(|path| path.exists());
    let path = kept.unwrap_or_else(|| dir.path().join("fleet.db"));
    let store = SqliteStore::open(&path).unwrap();
    let started = Instant::now();
    for hour in (0..hours).filter(|_| !reuse) {
        for host in 0..hosts {
            store.put(&snapshot(host, hour, true)).unwrap();
        }
    }
    let put_s = started.elapsed().as_secs_f64();
    let run = AuditRun {
        run_id: "r1".into(),
        inventory: "fleet.toml".into(),
        shard: None,
        runner: "bench@here".into(),
        started_at: 1,
    };
    for host in (0..hosts).filter(|_| !reuse) {
        let record = AuditRecord {
            schema_version: SCHEMA_VERSION,
            record_type: probe_model::RecordType::Host,
            host: format!("gpu{host}"),
            target: format!("gpu{host}"),
            status: AuditStatus::Ok,
            ..AuditRecord::default()
        };
        store.record_audit(&run, &record, 2).unwrap();
    }
    let total = sqlite_bytes(&path);
    println!(
        "sqlite fleet: {hosts} hosts x {hours} snapshots: {put_s:.1} s to store ({:.2} ms per put), {:.1} MiB, {:.0} bytes per snapshot",
        put_s * 1000.0 / (hosts as f64 * hours as f64),
        total as f64 / 1048576.0,
        total as f64 / (hosts as f64 * hours as f64)
    );
    let started = Instant::now();
    let audits = store.last_audits().unwrap();
    let mut newest = 0;
    for audit in &audits {
        newest += usize::from(store.newest(&audit.record.target).unwrap().is_some());
    }
    println!(
        "audit report reads ({} records, newest snapshot of each): {:.2} s",
        newest,
        started.elapsed().as_secs_f64()
    );
    let mut list_ms: Vec<f64> = (0..200)
        .map(|i| {
            let started = Instant::now();
            let metas = store.list(Some(&format!("gpu{}", i * 37 % hosts))).unwrap();
            assert_eq!(metas.len(), hours as usize);
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    list_ms.sort_by(f64::total_cmp);
    println!(
        "snapshots list HOST: median {:.2} ms, max {:.2} ms",
        list_ms[100], list_ms[199]
    );
    // Hosts read (`PROBE_BENCH_READ_HOSTS`, default 1000; times scaled to 10,000).
    let sample = env_or("PROBE_BENCH_READ_HOSTS", 1000).min(hosts);
    let started = Instant::now();
    let cpu = cpu_seconds();
    for host in 0..sample {
        store.latest(&format!("gpu{host}")).unwrap().unwrap();
    }
    let latest_ms = started.elapsed().as_secs_f64() * 1000.0 / sample as f64;
    println!(
        "latest (whole snapshot, decompressed and parsed), as --outliers reads each host: {latest_ms:.2} ms per host, {:.1} s for 10,000 (CPU {:.2} ms per host)",
        latest_ms * 10.0,
        (cpu_seconds() - cpu) * 1000.0 / sample as f64
    );
    // As `--outliers` read them: the newest snapshot's id of every host, then all of them in
    // one `get_many` (a section hosts share is read once).
    timed_many_read(
        &store,
        sample,
        "PROBE_BENCH_READS",
        "newest + get_many (shared sections read and parsed once, snapshots on every core)",
        |ids| store.get_many(ids).unwrap().iter().all(Option::is_some),
    );
    // As `--outliers` reads them now: the same, but only what the fleet comparison reads
    // (`FleetView`: no section reports, no environments of processes that are not launchers).
    timed_many_read(
        &store,
        sample,
        "PROBE_BENCH_VIEW_READS",
        "newest + get_many_views (the same, parsing only what the fleet comparison reads), as --outliers reads now",
        |ids| {
            store
                .get_many_views(ids)
                .unwrap()
                .iter()
                .all(Option::is_some)
        },
    );
    // What `--outliers` reads first now: each host's stored configuration fingerprint (views
    // are then read only for the comparisons it makes: one per distinct fingerprint, fewer
    // where hosts share a hash, identities renamed).
    let distinct = std::cell::Cell::new(0);
    let hashes = std::cell::Cell::new(0);
    timed_many_read(
        &store,
        sample,
        "PROBE_BENCH_PRINT_READS",
        "newest + fingerprints (the stored column), as --outliers reads first now",
        |ids| {
            let prints = store.fingerprints(ids).unwrap();
            let set: std::collections::HashSet<_> = prints.iter().collect();
            distinct.set(set.len());
            let hashed: std::collections::HashSet<_> =
                (prints.iter().flatten()).map(|print| print.hash).collect();
            hashes.set(hashed.len());
            prints.iter().all(Option::is_some)
        },
    );
    println!(
        "distinct configuration fingerprints among {sample} hosts: {}; distinct hashes (identities renamed): {}",
        distinct.get(),
        hashes.get()
    );
}

/// `sample` hosts' newest ids, then `read` of all of them, timed (wall and CPU of all threads);
/// `repeat_var` more reads of the same for a profiler (default none).
fn timed_many_read(
    store: &dyn SnapshotStore,
    sample: usize,
    repeat_var: &str,
    what: &str,
    read: impl Fn(&[String]) -> bool,
) {
    let started = Instant::now();
    let cpu = cpu_seconds();
    let ids: Vec<String> = (0..sample)
        .map(|host| store.newest(&format!("gpu{host}")).unwrap().unwrap().id)
        .collect();
    let newest_s = started.elapsed().as_secs_f64();
    assert!(read(&ids), "every host read back");
    let elapsed = started.elapsed();
    let cpu = cpu_seconds() - cpu;
    for _ in 0..env_or(repeat_var, 0) {
        read(&ids);
    }
    println!(
        "{what}: {:.2} ms per host over {sample} ({newest_s:.2} s of it newest), {:.1} s for 10,000 (CPU {:.2} ms per host, all threads)",
        elapsed.as_secs_f64() * 1000.0 / sample as f64,
        elapsed.as_secs_f64() * 10_000.0 / sample as f64,
        cpu * 1000.0 / sample as f64
    );
}
