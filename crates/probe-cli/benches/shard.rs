//! Scale benchmark of the shared store: a fleet of light-weight hosts (one real OpenSSH `sshd`
//! per loopback address 127.0.0.40.., each in its own mount, UTS and PID namespace with its own
//! machine-id and host name, serving this machine's files) audited into one PostgreSQL store
//! (a durable cluster: fsync on) by 1 runner and by 4 sharded runners at once. Reports numbers,
//! asserts nothing about time. Run with `cargo bench -p probe-cli --bench shard`
//! (`PROBE_BENCH_HOSTS`, default 104).
//!
//! What it measures:
//! 1. wall time and hosts/s of `probe audit` (the built binary) for 1 runner (-j 8) and 4
//!    runners (`--shard I/4`, -j 2 each), peak RSS of each runner (`/usr/bin/time -v`);
//! 2. store write latency: `PgStore::put` of a real snapshot of one of these hosts, in process,
//!    from 1 and from 4 writers at once (p50/p90/p99);
//! 3. store size per snapshot (`pg_total_relation_size` of `probe.snapshots`).
#![expect(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use probe_store::{PgEnv, PgStore, SnapshotStore};
use probe_testkit::KeyPair;
use probe_testkit::postgres::{Postgres, PostgresOptions};

mod light;

const PROBE: &str = env!("CARGO_BIN_EXE_probe");
const TIME: &str = "/usr/bin/time";
const FIRST_ADDRESS: u8 = 40;
const LAST_ADDRESS: u8 = 250;
const WRITES: usize = 200;

fn percentile(samples: &[f64], q: f64) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v.get(i).copied().unwrap_or(f64::NAN)
}

struct RunnerResult {
    hosts: usize,
    ok: usize,
    rss_kib: Option<u64>,
}

fn audit(
    config: &Path,
    inventory: &Path,
    store: &str,
    pg: &Postgres,
    shard: Option<&str>,
    jobs: usize,
    home: &Path,
) -> std::process::Child {
    let mut command = Command::new(TIME);
    command.arg("-v").arg(PROBE);
    command
        .arg("-F")
        .arg(config)
        .args(["--store", store, "audit", "--inventory"])
        .arg(inventory)
        .args([
            "-j",
            &jobs.to_string(),
            "--jsonl",
            "--progress",
            "never",
            "--fail-on",
            "never",
        ]);
    if let Some(shard) = shard {
        command.args(["--shard", shard]);
    }
    for (key, value) in pg.client_env() {
        command.env(key, value);
    }
    command
        .env_remove("RUST_LOG")
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run probe")
}

fn finish(child: std::process::Child) -> RunnerResult {
    let out = child.wait_with_output().expect("wait probe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: serde_json::Value = stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or_default();
    let field = |k: &str| {
        summary
            .get(k)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0) as usize
    };
    let rss_kib = String::from_utf8_lossy(&out.stderr)
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse().ok());
    if field("hosts") == 0 {
        println!(
            "   runner output: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        );
    }
    RunnerResult {
        hosts: field("hosts"),
        ok: field("ok") + field("changed"),
        rss_kib,
    }
}

fn main() {
    probe_testkit::require_openssh().unwrap_or_else(|e| panic!("{e}"));
    probe_testkit::fixture::require_namespaces().unwrap_or_else(|e| panic!("{e}"));
    probe_testkit::postgres::require_postgres().unwrap_or_else(|e| panic!("{e}"));
    let count: usize = std::env::var("PROBE_BENCH_HOSTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(104)
        .min(usize::from(LAST_ADDRESS - FIRST_ADDRESS) + 1);
    println!("probe shard benchmark (built binary {PROBE})");
    println!(
        "machine: {} CPUs, load average at start {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().to_path_buf();
    let key = KeyPair::generate(&dir, "id_ed25519", "ed25519", "", None);
    let hosts = light::start_fleet(FIRST_ADDRESS, count, &key, &dir);
    let (config, inventory) = light::write_fleet(&hosts, &dir, "fleet");

    let pg = Postgres::start_with(&PostgresOptions {
        durable: true,
        max_connections: 100,
    });
    let env = PgEnv::from_pairs(pg.client_env(), None);

    println!();
    println!(
        "1. `probe audit` of {count} hosts into one PostgreSQL store (fsync on), fresh database per run"
    );
    println!(
        "{:<22} {:>8} {:>9} {:>10} {:>16} {:>14}",
        "runners", "wall", "hosts/s", "collected", "peak RSS/runner", "RSS per host"
    );
    for (label, shards, jobs) in [
        ("1 runner, -j 8", 1u32, 8usize),
        ("4 shards, -j 2 each", 4, 2),
    ] {
        let url = pg.create_database(&format!("bench{shards}"));
        let t = Instant::now();
        let children: Vec<_> = (0..shards)
            .map(|i| {
                let shard = (shards > 1).then(|| format!("{i}/{shards}"));
                audit(&config, &inventory, &url, &pg, shard.as_deref(), jobs, &dir)
            })
            .collect();
        let results: Vec<RunnerResult> = children.into_iter().map(finish).collect();
        let wall = t.elapsed().as_secs_f64();
        let collected: usize = results.iter().map(|r| r.ok).sum();
        let audited: usize = results.iter().map(|r| r.hosts).sum();
        let peak = results.iter().filter_map(|r| r.rss_kib).max().unwrap_or(0);
        let per_host: Vec<f64> = results
            .iter()
            .filter(|r| r.hosts > 0)
            .filter_map(|r| r.rss_kib.map(|k| k as f64 / r.hosts as f64))
            .collect();
        println!(
            "{label:<22} {wall:>7.1}s {:>9.2} {:>10} {:>12.1} MiB {:>10.0} KiB",
            count as f64 / wall,
            format!("{collected}/{audited}"),
            peak as f64 / 1024.0,
            per_host.iter().copied().fold(0.0, f64::max),
        );
        let name = format!("bench{shards}");
        let size: f64 = pg
            .psql(&name, "SELECT pg_total_relation_size('probe.snapshots') + pg_total_relation_size('probe.audit_records') + pg_total_relation_size('probe.hosts') + pg_total_relation_size('probe.host_names')")
            .trim()
            .parse()
            .unwrap_or(0.0);
        let rows: f64 = pg
            .psql(&name, "SELECT count(*) FROM probe.snapshots")
            .trim()
            .parse()
            .unwrap_or(0.0);
        let doc: f64 = pg
            .psql(
                &name,
                "SELECT coalesce(avg(pg_column_size(document)), 0) FROM probe.snapshots",
            )
            .trim()
            .parse()
            .unwrap_or(0.0);
        println!(
            "{:<22} store: {rows} snapshots, {:.1} KiB per snapshot with indexes and audit records ({:.1} KiB TOAST-compressed document)",
            "",
            size / rows.max(1.0) / 1024.0,
            doc / 1024.0
        );
    }

    // 2. Write latency, in process, with a real snapshot of one light host.
    let url = pg.create_database("latency");
    let store = PgStore::open_with(&url, &env).unwrap();
    let source = pg.url("bench1");
    let sample = PgStore::open_with(&source, &env)
        .unwrap()
        .list(None)
        .unwrap()
        .first()
        .map(|meta| meta.id.clone())
        .and_then(|id| PgStore::open_with(&source, &env).unwrap().get(&id).unwrap());
    let Some(sample) = sample else {
        println!("no snapshot collected; write latency not measured");
        return;
    };
    let document = probe_store::to_json(&sample).len();
    println!();
    println!(
        "2. PgStore::put latency (one transaction per snapshot), real snapshot of {} KiB JSON, n={WRITES} per writer",
        document / 1024
    );
    println!(
        "{:<12} {:>9} {:>9} {:>9} {:>12}",
        "writers", "p50", "p90", "p99", "writes/s"
    );
    for writers in [1usize, 4] {
        let t = Instant::now();
        let samples: Vec<f64> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..writers)
                .map(|w| {
                    let sample = sample.clone();
                    let url = url.clone();
                    let env = env.clone();
                    scope.spawn(move || {
                        let store = PgStore::open_with(&url, &env).unwrap();
                        (0..WRITES)
                            .map(|i| {
                                let mut s = sample.clone();
                                s.id = format!("lat-{writers}-{w}-{i}");
                                s.host.machine_id = Some(format!("lat-machine-{w}-{}", i % 50));
                                let t = Instant::now();
                                store.put(&s).unwrap();
                                t.elapsed().as_secs_f64() * 1e3
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let elapsed = t.elapsed().as_secs_f64();
        println!(
            "{writers:<12} {:>7.1}ms {:>7.1}ms {:>7.1}ms {:>12.0}",
            percentile(&samples, 0.5),
            percentile(&samples, 0.9),
            percentile(&samples, 0.99),
            samples.len() as f64 / elapsed
        );
    }
    drop(store);
    println!(
        "load average at end: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    for host in hosts {
        drop(host.stop);
        let _ = host.thread.join();
    }
}
