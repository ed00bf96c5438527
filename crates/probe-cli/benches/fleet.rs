//! Fleet benchmark: the built `probe` binary (`CARGO_BIN_EXE_probe`, i.e. the release binary
//! that `cargo bench` builds next to this bench) against fixture hosts over real SSH. Reports
//! numbers, asserts nothing about time. Run with `cargo bench -p probe-cli --bench fleet`.
//!
//! What it measures:
//! 1. `probe host <alias>` per fixture host, as a process (start, connect, collect, store,
//!    render), n=10 each after one untimed warm-up; `hostile` (its hanging `nvidia-smi` stub
//!    costs the section's 10 s limit) separately with n=2;
//! 2. `probe audit` over 20 hosts (the 4 fast fixture hosts, 5 instances of each on their own
//!    ports) at `-j 1`, `-j 4` and `-j 8`, n=3 each, a fresh store per run;
//! 3. peak RSS of the `probe` process (`/usr/bin/time -v`, "Maximum resident set size");
//! 4. bytes of collection output per host (`probe_collect::collect_with_stats`, in process,
//!    over `probe_transport::connect`): the round-1 script sent, stdout received per round;
//! 5. growth of the SQLite store per stored snapshot, and the size of an exported snapshot.
//!
//! Exported snapshots (one per fixture host) are left in `$PROBE_BENCH_SNAPSHOTS` (default
//! `$TMPDIR/probe-bench-snapshots`) for `cargo bench -p probe-diff --bench launch`.
#![expect(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use probe_testkit::fixture::{self, Fleet};

const PROBE: &str = env!("CARGO_BIN_EXE_probe");
const TIME: &str = "/usr/bin/time";
/// The fixture hosts that collect in well under a second.
const FAST: &[&str] = &["sglang-hybrid", "vllm-systemd", "docker-vllm", "bare"];
/// Instances of each fast host in the audit fleet (4 x 5 = 20 hosts).
const COPIES: usize = 5;
const HOST_RUNS: usize = 10;
const HOSTILE_RUNS: usize = 2;
const AUDIT_RUNS: usize = 3;
const AUDIT_JOBS: &[usize] = &[1, 4, 8];
const WIRE_RUNS: usize = 3;

/// Summary of samples: (median, p90, min, max), nearest-rank.
fn summary(v: &[f64]) -> (f64, f64, f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let i = ((v.len() as f64 - 1.0) * q).round() as usize;
        v.get(i).copied().unwrap_or(f64::NAN)
    };
    (
        at(0.5),
        at(0.9),
        v.first().copied().unwrap_or(f64::NAN),
        v.last().copied().unwrap_or(f64::NAN),
    )
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn kib(bytes: f64) -> String {
    format!("{:.1} KiB", bytes / 1024.0)
}

/// One `probe` run: wall time, peak RSS in KiB (when `/usr/bin/time` exists) and the output.
struct Run {
    wall: Duration,
    rss_kib: Option<u64>,
    out: Output,
}

struct Bench {
    config: PathBuf,
    home: tempfile::TempDir,
    time_v: bool,
}

impl Bench {
    fn probe(&self, store: &Path, args: &[&str]) -> Run {
        let mut cmd = if self.time_v {
            let mut c = Command::new(TIME);
            c.arg("-v").arg(PROBE);
            c
        } else {
            Command::new(PROBE)
        };
        cmd.arg("-F")
            .arg(&self.config)
            .arg("--store")
            .arg(store)
            .args(args)
            .env_remove("RUST_LOG")
            .env("NO_COLOR", "1")
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("XDG_DATA_HOME", self.home.path().join("data"))
            .stdin(Stdio::null());
        let t = Instant::now();
        let out = cmd.output().expect("run probe");
        let wall = t.elapsed();
        let rss_kib = String::from_utf8_lossy(&out.stderr)
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
            .and_then(|v| v.trim().parse().ok());
        Run { wall, rss_kib, out }
    }
}

/// Size of a SQLite store with its WAL and shared-memory files.
fn store_bytes(db: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", db.display())).ok())
        .map(|m| m.len())
        .sum()
}

fn first_line(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string()
}

fn main() {
    probe_testkit::require_openssh().unwrap_or_else(|e| panic!("{e}"));
    fixture::require_namespaces().unwrap_or_else(|e| panic!("{e}"));
    let load_start = load_average();
    println!("probe fleet benchmark (built binary {PROBE})");
    println!(
        "machine: {} CPUs, load average at start {load_start}",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    // The fleet: COPIES instances of every fast host, plus hostile.
    let mut names: Vec<&str> = Vec::new();
    for _ in 0..COPIES {
        names.extend_from_slice(FAST);
    }
    names.push("hostile");
    let t = Instant::now();
    let fleet = Fleet::start(&names);
    println!(
        "fleet: {} fixture hosts started in {:.1} s",
        fleet.hosts.len(),
        t.elapsed().as_secs_f64()
    );

    // One ssh_config with a unique alias per instance: `fx-<name>` for the first of each
    // definition, `fx-<name>-<i>` for the others (Fleet's own config repeats aliases).
    let home = tempfile::tempdir().expect("tempdir");
    let mut config = String::new();
    let mut aliases: Vec<(String, String)> = Vec::new(); // (definition, alias)
    for h in &fleet.hosts {
        let seen = aliases.iter().filter(|(n, _)| *n == h.name).count();
        let alias = if seen == 0 {
            h.alias.clone()
        } else {
            format!("{}-{}", h.alias, seen + 1)
        };
        config.push_str(
            &h.ssh_config_block(&fleet.client_key().private, &fleet.known_hosts())
                .replacen(
                    &format!("Host {}\n", h.alias),
                    &format!("Host {alias}\n"),
                    1,
                ),
        );
        aliases.push((h.name.clone(), alias));
    }
    let config_path = home.path().join("ssh_config");
    std::fs::write(&config_path, &config).expect("write ssh_config");
    let time_v = Path::new(TIME).exists();
    let bench = Bench {
        config: config_path.clone(),
        home,
        time_v,
    };
    if !time_v {
        println!("note: {TIME} missing, peak RSS not measured");
    }
    let export_dir = std::env::var_os("PROBE_BENCH_SNAPSHOTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("probe-bench-snapshots"));
    std::fs::create_dir_all(&export_dir).expect("mkdir export dir");

    // 1 + 3 + 5: `probe host` per fixture host.
    println!();
    println!(
        "1. `probe host ALIAS` (whole process; one untimed warm-up, then n runs; store per host)"
    );
    println!(
        "{:<16} {:>3} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11}",
        "host", "n", "median", "p90", "min", "max", "peak RSS", "store/snap", "export"
    );
    let stores = tempfile::tempdir().expect("tempdir");
    let mut per_host_rss: Vec<u64> = Vec::new();
    for name in fixture::ALL {
        let alias = format!("fx-{name}");
        let store = stores.path().join(format!("{name}.db"));
        let n = if *name == "hostile" {
            HOSTILE_RUNS
        } else {
            HOST_RUNS
        };
        let warm = bench.probe(&store, &["host", &alias]);
        if !warm.out.status.success() {
            println!(
                "{name:<16} failed: {} {}",
                warm.out.status,
                first_line(&warm.out.stderr)
            );
            continue;
        }
        let size_after_one = store_bytes(&store);
        let mut secs = Vec::new();
        let mut rss = Vec::new();
        let mut failures = 0;
        for _ in 0..n {
            let r = bench.probe(&store, &["host", &alias]);
            if r.out.status.success() {
                secs.push(r.wall.as_secs_f64());
            } else {
                failures += 1;
            }
            rss.extend(r.rss_kib);
        }
        let growth = (store_bytes(&store) as f64 - size_after_one as f64) / n as f64;
        let export = bench.probe(&store, &["snapshots", "export", &format!("{alias}@latest")]);
        let export_len = export.out.stdout.len();
        if export.out.status.success() {
            let _ = std::fs::write(export_dir.join(format!("{name}.json")), &export.out.stdout);
        }
        let (med, p90, min, max) = summary(&secs);
        let peak = rss.iter().copied().max();
        per_host_rss.extend(peak);
        println!(
            "{name:<16} {:>3} {:>7.0}ms {:>7.0}ms {:>7.0}ms {:>7.0}ms {:>9} {:>11} {:>11}{}",
            secs.len(),
            med * 1e3,
            p90 * 1e3,
            min * 1e3,
            max * 1e3,
            peak.map_or("-".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
            kib(growth),
            kib(export_len as f64),
            if failures > 0 {
                format!("  ({failures} failed)")
            } else {
                String::new()
            }
        );
    }
    println!("   exported snapshots: {}", export_dir.display());

    // 2 + 3: audit over the 20 fast instances.
    let inventory = bench.home.path().join("fleet.toml");
    let mut inv = String::new();
    let audited: Vec<&(String, String)> = aliases
        .iter()
        .filter(|(n, _)| n.as_str() != "hostile")
        .collect();
    for (i, (_, alias)) in audited.iter().enumerate() {
        inv.push_str(&format!("[hosts.h{i:02}]\naddress = \"{alias}\"\n\n"));
    }
    std::fs::write(&inventory, inv).expect("write inventory");
    let inventory = inventory.display().to_string();
    println!();
    println!(
        "2. `probe audit` over {} hosts ({} fast fixture hosts x {COPIES}), fresh store per run, n={AUDIT_RUNS}",
        audited.len(),
        FAST.len()
    );
    println!(
        "{:<6} {:>9} {:>9} {:>9} {:>10} {:>9}  collected per run",
        "-j", "median", "min", "max", "hosts/s", "peak RSS"
    );
    for &j in AUDIT_JOBS {
        let mut secs = Vec::new();
        let mut rss = Vec::new();
        let mut ok = Vec::new();
        for _ in 0..AUDIT_RUNS {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = dir.path().join("audit.db");
            let r = bench.probe(
                &store,
                &[
                    "audit",
                    "--inventory",
                    &inventory,
                    "-j",
                    &j.to_string(),
                    "--fail-on",
                    "never",
                    "--progress",
                    "never",
                    "--jsonl",
                ],
            );
            secs.push(r.wall.as_secs_f64());
            rss.extend(r.rss_kib);
            let stdout = String::from_utf8_lossy(&r.out.stdout);
            // The last JSON line is the summary: hosts collected (`ok` or `changed`) of all.
            let summary_line = stdout
                .lines()
                .rev()
                .find_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
            let field = |k: &str| {
                summary_line
                    .as_ref()
                    .and_then(|v| v.get(k))
                    .and_then(serde_json::Value::as_u64)
                    .unwrap_or(0)
            };
            ok.push(format!(
                "{}/{}",
                field("ok") + field("changed"),
                field("hosts")
            ));
            if !r.out.status.success() {
                println!(
                    "   -j {j}: exit {} {}",
                    r.out.status,
                    first_line(&r.out.stderr)
                );
            }
        }
        let (med, _, min, max) = summary(&secs);
        println!(
            "{:<6} {:>8.2}s {:>8.2}s {:>8.2}s {:>10.1} {:>9}  {}",
            j,
            med,
            min,
            max,
            audited.len() as f64 / med,
            rss.iter()
                .max()
                .map_or("-".into(), |k| format!("{:.1} MiB", *k as f64 / 1024.0)),
            ok.join(" ")
        );
    }

    // 4: bytes per host, in process.
    println!();
    println!(
        "4. collection bytes per host (probe_collect::collect_with_stats over probe_transport, in process; n={WIRE_RUNS}, hostile n=1)"
    );
    println!(
        "{:<16} {:>12} {:>12} {:>12} {:>10} {:>10}",
        "host", "script sent", "round 1 out", "round 2 out", "round 1", "round 2"
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async {
        let copts = probe_transport::ConnectOptions {
            config_file: Some(config_path.clone()),
            batch_mode: true,
            ..Default::default()
        };
        for name in fixture::ALL {
            let alias = format!("fx-{name}");
            let opts = probe_collect::CollectOptions {
                target: alias.clone(),
                ..Default::default()
            };
            let script_len =
                probe_collect::script::build(&opts, &probe_collect::script::new_boundary()).len();
            let runs = if *name == "hostile" { 1 } else { WIRE_RUNS };
            let mut r1b = Vec::new();
            let mut r2b = Vec::new();
            let mut r1ms = Vec::new();
            let mut r2ms = Vec::new();
            for _ in 0..runs {
                let conn = match probe_transport::connect(&alias, &copts).await {
                    Ok(c) => c,
                    Err(e) => {
                        println!("{name:<16} connect failed: {e}");
                        break;
                    }
                };
                match probe_collect::collect_with_stats(&conn, &opts).await {
                    Ok((_, s)) => {
                        r1b.push(s.round1_bytes as f64);
                        r2b.push(s.round2_bytes as f64);
                        r1ms.push(s.round1_ms as f64);
                        r2ms.push(s.round2_ms as f64);
                    }
                    Err(e) => println!("{name:<16} collect failed: {e}"),
                }
                conn.close().await;
            }
            if r1b.is_empty() {
                continue;
            }
            println!(
                "{name:<16} {:>12} {:>12} {:>12} {:>8.0}ms {:>8.0}ms",
                kib(script_len as f64),
                kib(summary(&r1b).0),
                kib(summary(&r2b).0),
                summary(&r1ms).0,
                summary(&r2ms).0,
            );
        }
    });

    println!();
    println!(
        "peak RSS of `probe host` over all hosts: {}",
        per_host_rss
            .iter()
            .max()
            .map_or("-".into(), |k| format!("{:.1} MiB", *k as f64 / 1024.0))
    );
    println!("load average at end: {}", load_average());
    drop(fleet);
}
