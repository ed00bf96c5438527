//! Client scaling on the fleet simulator (`probe_testkit::sim`, real SSH from russh's server
//! side, replaying the recorded `sglang-story` collection): the built `probe audit` over N
//! simulated hosts at `-j` J, each run under `/usr/bin/time` (wall, the client's user+system
//! CPU from its rusage, peak RSS), a fresh SQLite store per run; beside it OpenSSH
//! (`xargs -P J ssh HOST sh -s < combined-round-1-script`) on the same hosts, and Ansible when it
//! is installed. Reports numbers against issue 22's targets; asserts nothing about time.
//!
//! `cargo bench -p probe-cli --bench sim`. Knobs: `PROBE_BENCH_SIM_HOSTS` (default
//! `1000,10000`), `PROBE_BENCH_SIM_JOBS` (`64,256,1024`), `PROBE_BENCH_SIM_LATENCY_MS` (50, per
//! channel, plus up to half of it per host), `PROBE_BENCH_SIM_SSH_HOSTS` (OpenSSH's fleet size,
//! default 1000; 0 skips it), `PROBE_BENCH_SIM_SKIP` (`N:J` pairs not to run, e.g.
//! `10000:64`).
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its numbers and its progress"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use probe_collect::{CollectOptions, script};
use probe_testkit::sim::{Recording, SimFleet, SimOptions, default_recording_path, fingerprint};

const PROBE: &str = env!("CARGO_BIN_EXE_probe");
const TIME: &str = "/usr/bin/time";

fn list(var: &str, default: &str) -> Vec<usize> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

/// One measured process: wall seconds, user+system CPU seconds, peak RSS in KiB.
#[derive(Debug, Clone, Copy)]
struct Measured {
    wall: f64,
    cpu: f64,
    rss_kib: u64,
}

/// Runs `cmd` under `/usr/bin/time -f`, its stdout to `stdout_to`.
fn measured(cmd: Command, stdout_to: &Path) -> (Measured, String) {
    let out_file = std::fs::File::create(stdout_to).unwrap();
    let mut time = Command::new(TIME);
    time.args(["-f", "@@time %e %U %S %M"])
        .arg(cmd.get_program());
    time.args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => time.env(k, v),
            None => time.env_remove(k),
        };
    }
    let started = Instant::now();
    let out = time
        .stdin(Stdio::null())
        .stdout(out_file)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let wall_here = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let line = stderr
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("@@time "))
        .unwrap_or_default()
        .to_string();
    let f: Vec<f64> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
    let m = Measured {
        wall: f.first().copied().unwrap_or(wall_here),
        cpu: f.get(1).copied().unwrap_or(f64::NAN) + f.get(2).copied().unwrap_or(f64::NAN),
        rss_kib: f.get(3).copied().unwrap_or(0.0) as u64,
    };
    (m, stderr)
}

/// CPU seconds this process (the simulator) has used.
fn own_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(") ").map_or("", |(_, r)| r);
    let f: Vec<f64> = after.split(' ').filter_map(|w| w.parse().ok()).collect();
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the command name.
    (f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0)) / 100.0
}

struct Bench {
    sim: SimFleet,
    dir: PathBuf,
}

impl Bench {
    fn inventory(&self, n: usize) -> PathBuf {
        let path = self.dir.join(format!("fleet-{n}.toml"));
        if !path.exists() {
            std::fs::write(&path, self.sim.inventory_toml(n)).unwrap();
        }
        path
    }

    fn probe_audit(&self, n: usize, jobs: usize, store: &Path) -> (Measured, usize, Vec<u64>) {
        let mut cmd = Command::new(PROBE);
        cmd.arg("-F")
            .arg(self.sim.ssh_config())
            .arg("--store")
            .arg(store)
            .args(["audit", "--inventory"])
            .arg(self.inventory(n))
            .args(["-j", &jobs.to_string(), "--jsonl", "--fail-on", "never"])
            .env_remove("RUST_LOG")
            .env("HOME", self.sim.dir())
            .env("XDG_CONFIG_HOME", self.sim.dir().join("xdg"));
        let out_path = self.dir.join("audit.jsonl");
        let (m, stderr) = measured(cmd, &out_path);
        let text = std::fs::read_to_string(&out_path).unwrap_or_default();
        let mut ok = 0;
        let mut durations = Vec::new();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
            if v["type"] == "host" {
                if v["status"] == "ok" || v["status"] == "changed" {
                    ok += 1;
                }
                durations.push(v["duration_ms"].as_u64().unwrap_or(0));
            }
        }
        if ok < n {
            let errors: Vec<&str> = text
                .lines()
                .filter(|l| l.contains("\"error\":\""))
                .take(3)
                .collect();
            eprintln!(
                "  {} of {n} not collected: {errors:?} {}",
                n - ok,
                stderr.lines().last().unwrap_or("")
            );
        }
        (m, ok, durations)
    }

    fn openssh(&self, n: usize, jobs: usize, script_path: &Path) -> (Measured, usize) {
        let hosts = self.dir.join(format!("hosts-{n}.txt"));
        let addrs: String = self.sim.hosts[..n]
            .iter()
            .map(|h| format!("{}\n", h.addr))
            .collect();
        std::fs::write(&hosts, addrs).unwrap();
        let ok_dir = self.dir.join("ssh-out");
        let _ = std::fs::remove_dir_all(&ok_dir);
        std::fs::create_dir_all(&ok_dir).unwrap();
        let one = format!(
            "ssh -F {} \"$1\" sh -s < {} > {}/\"$1\" 2>/dev/null",
            self.sim.ssh_config().display(),
            script_path.display(),
            ok_dir.display()
        );
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "xargs -P {jobs} -n 1 sh -c '{one}' _ < {}",
            hosts.display()
        ));
        let (m, _) = measured(cmd, &self.dir.join("xargs.out"));
        let ok = std::fs::read_dir(&ok_dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| {
                        std::fs::read(e.path()).is_ok_and(|b| b.windows(5).any(|w| w == b" DONE"))
                    })
                    .count()
            })
            .unwrap_or(0);
        (m, ok)
    }
}

fn store_bytes(db: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .filter_map(|s| std::fs::metadata(format!("{}{s}", db.display())).ok())
        .map(|m| m.len())
        .sum()
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn main() {
    let sizes = list("PROBE_BENCH_SIM_HOSTS", "1000,10000");
    let jobs = list("PROBE_BENCH_SIM_JOBS", "64,256,1024");
    let latency_ms = list("PROBE_BENCH_SIM_LATENCY_MS", "50")
        .first()
        .copied()
        .unwrap_or(50) as u64;
    let ssh_hosts = list("PROBE_BENCH_SIM_SSH_HOSTS", "1000")
        .first()
        .copied()
        .unwrap_or(1000);
    let skip = std::env::var("PROBE_BENCH_SIM_SKIP").unwrap_or_default();
    let max = sizes.iter().copied().max().unwrap_or(1000).max(ssh_hosts);
    let recording = Recording::load(&default_recording_path()).unwrap_or_else(|e| panic!("{e}"));
    recording
        .check_fresh(&fingerprint(&script::commands()))
        .unwrap_or_else(|e| panic!("{e}"));
    let started = Instant::now();
    let sim = SimFleet::start(
        recording,
        &SimOptions {
            hosts: max,
            latency: Duration::from_millis(latency_ms),
            jitter: Duration::from_millis(latency_ms / 2),
            subnet: 79,
            ..SimOptions::default()
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let bench = Bench {
        sim,
        dir: dir.path().to_path_buf(),
    };
    println!(
        "simulator: {max} hosts on 127.79.x.y:{} started in {:.2?}; {latency_ms} ms per channel + \
         0..{} ms per host; {} CPUs, load {}; open files limit {}",
        bench.sim.port,
        started.elapsed(),
        latency_ms / 2,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim(),
        std::fs::read_to_string("/proc/self/limits")
            .unwrap_or_default()
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .unwrap_or("")
            .split_whitespace()
            .nth(3)
            .unwrap_or("?")
    );

    let path = bench.inventory(max);
    let text = std::fs::read_to_string(&path).unwrap();
    let parsing = Instant::now();
    let hosts = probe_cli::testing::parse_inventory(&text, &path)
        .unwrap_or_else(|e| panic!("{e}"))
        .hosts
        .len();
    println!(
        "inventory: {hosts} hosts ({} KiB of TOML) read in {:.1?}",
        text.len() / 1024,
        parsing.elapsed()
    );

    // Per-host latency: one host at a time, the median collection time of 8 hosts.
    let store = bench.dir.join("solo.db");
    let (_, _, mut solo) = bench.probe_audit(8, 1, &store);
    let per_host = median(&mut solo) as f64 / 1000.0;
    println!(
        "per-host latency (8 hosts, -j 1, median of the records' duration_ms): {per_host:.3} s"
    );
    let _ = std::fs::remove_file(&store);

    println!(
        "\n| hosts | -j | wall s | ideal s (hosts/J x per-host) | wall/ideal | client CPU ms/host | peak RSS MiB | RSS target MiB | collected | sim CPU ms/host | store KiB/host |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for &n in &sizes {
        for &j in &jobs {
            if skip.split(',').any(|p| p == format!("{n}:{j}")) {
                println!("| {n} | {j} | skipped (PROBE_BENCH_SIM_SKIP) |||||||||");
                continue;
            }
            let store = bench.dir.join(format!("store-{n}-{j}.db"));
            let sim_cpu0 = own_cpu();
            let (m, ok, _) = bench.probe_audit(n, j, &store);
            let sim_cpu = own_cpu() - sim_cpu0;
            let ideal = (n as f64 / j as f64).ceil() * per_host;
            println!(
                "| {n} | {j} | {:.1} | {ideal:.1} | {:.2} | {:.1} | {:.0} | {:.0} | {ok} | {:.2} | {:.1} |",
                m.wall,
                m.wall / ideal,
                m.cpu * 1000.0 / n as f64,
                m.rss_kib as f64 / 1024.0,
                64.0 + 0.5 * j as f64,
                sim_cpu * 1000.0 / n as f64,
                store_bytes(&store) as f64 / 1024.0 / n as f64,
            );
            let _ = std::fs::remove_file(&store);
            let _ = std::fs::remove_file(format!("{}-wal", store.display()));
        }
    }

    if ssh_hosts > 0 {
        let script_path = bench.dir.join("combined.sh");
        std::fs::write(
            &script_path,
            script::build(&CollectOptions::default(), &script::new_boundary()),
        )
        .unwrap();
        println!(
            "\nOpenSSH: `xargs -P J ssh HOST sh -s < combined round-1 script` over {ssh_hosts} hosts (one \
             ssh process per host, the simulator answers every round-1 section on one channel)"
        );
        println!("\n| hosts | -P | wall s | client CPU ms/host (ssh + sh) | answered |");
        println!("|---|---|---|---|---|");
        for &j in &jobs {
            let (m, ok) = bench.openssh(ssh_hosts, j, &script_path);
            println!(
                "| {ssh_hosts} | {j} | {:.1} | {:.1} | {ok} |",
                m.wall,
                m.cpu * 1000.0 / ssh_hosts as f64
            );
        }
    }
    match probe_testkit::bench::ansible() {
        Some(a) => println!(
            "\nAnsible found at {a}; its run on the simulator is not measured (the simulator has no \
             shell to run its modules)."
        ),
        None => println!("\nAnsible: not installed here (no `ansible` on the PATH), not measured."),
    }
    let s = bench.sim.stats();
    println!(
        "\nsimulator totals: {} connections, {} execs, {} sections, {} stale, {:.1} MiB sent, at most {} sessions at once",
        s.connections,
        s.execs,
        s.sections,
        s.stale,
        s.bytes_out as f64 / (1 << 20) as f64,
        s.peak_sessions
    );
}
