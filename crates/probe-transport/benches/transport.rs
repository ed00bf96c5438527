//! Transport benchmark against a real OpenSSH sshd on loopback. Reports numbers, asserts
//! nothing about time. Run with `cargo bench -p probe-transport`.
//!
//! It starts with accept-new over the fleet simulator (`probe_testkit::sim`): a first
//! connection to each of N new hosts with an empty known_hosts file, each recording its key,
//! against the same N connections with the file complete (strict checking). Knobs:
//! `PROBE_BENCH_ACCEPT_NEW` (host counts, comma-separated, default `1000`; `0` skips),
//! `PROBE_BENCH_ACCEPT_NEW_ONLY=1` (skip the sshd part).
//!
//! The sshd runs in a private mount namespace with an empty file bind-mounted over
//! `/root/.bashrc` (a `.bashrc` that runs pyenv adds 100+ ms to every exec on this machine and
//! would measure the remote shell's startup, not the transport).
#![expect(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use probe_testkit::{KeyPair, Sshd, SshdOptions};
use probe_transport::{ConnectOptions, Connection, Exec, ExecRequest};

const CONNECTS: usize = 20;
const SEQ_EXECS: usize = 50;
const CONCURRENT_CHANNELS: usize = 50;
const CONCURRENT_CONNECTIONS: usize = 32;
const STREAM_BYTES: usize = 50_000_000;
const STREAM_CAP: usize = 16 << 20;

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let counts = std::env::var("PROBE_BENCH_ACCEPT_NEW").unwrap_or_else(|_| "1000".into());
    for n in counts
        .split(',')
        .filter_map(|n| n.trim().parse::<usize>().ok())
    {
        if n > 0 {
            rt.block_on(accept_new(n));
        }
    }
    if std::env::var("PROBE_BENCH_ACCEPT_NEW_ONLY").as_deref() != Ok("1") {
        rt.block_on(run());
    }
}

/// Connections at once in the accept-new runs.
const ACCEPT_NEW_J: usize = 16;

/// CPU time of this process so far (user + system), from `/proc/self/stat` (clock ticks of
/// 10 ms). The simulator runs in this process too: its handshakes are counted.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // Fields 14 and 15 of stat(5) are the 12th and 13th after the command name.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// Connects to every host once, `ACCEPT_NEW_J` at a time; the time of each connection in
/// host order, and the failures.
async fn connect_all(
    fleet: &probe_testkit::sim::SimFleet,
    opts: &ConnectOptions,
) -> (Vec<Duration>, Vec<String>) {
    let gate = Arc::new(tokio::sync::Semaphore::new(ACCEPT_NEW_J));
    let mut set = tokio::task::JoinSet::new();
    for (i, h) in fleet.hosts.iter().enumerate() {
        let permit = Arc::clone(&gate).acquire_owned().await.expect("semaphore");
        let target = format!("root@{}", h.addr);
        let opts = opts.clone();
        set.spawn(async move {
            let t = Instant::now();
            let r = probe_transport::connect(&target, &opts).await;
            let took = t.elapsed();
            drop(permit);
            match r {
                Ok(c) => {
                    c.close().await;
                    (i, took, None)
                }
                Err(e) => (i, took, Some(e.to_string())),
            }
        });
    }
    let mut times = vec![Duration::ZERO; fleet.hosts.len()];
    let mut failed = Vec::new();
    while let Some(r) = set.join_next().await {
        let (i, took, err) = r.expect("join");
        times[i] = took;
        failed.extend(err);
    }
    (times, failed)
}

/// accept-new into an empty known_hosts over `n` simulated hosts, then strict over the file
/// it wrote.
async fn accept_new(n: usize) {
    let rec = probe_testkit::sim::Recording::load(&probe_testkit::sim::default_recording_path())
        .expect("sim recording");
    let fleet = probe_testkit::sim::SimFleet::start(
        rec,
        &probe_testkit::sim::SimOptions {
            hosts: n,
            latency: Duration::ZERO,
            jitter: Duration::ZERO,
            ..Default::default()
        },
    );
    let kh = fleet.dir().join("known_hosts.accept-new");
    let mut opts = ConnectOptions {
        config_file: Some(fleet.ssh_config()),
        known_hosts_file: Some(kh.clone()),
        accept_new: true,
        ..Default::default()
    };
    println!(
        "accept-new over {n} simulated hosts (first connection to each, empty known_hosts, {ACCEPT_NEW_J} at once)"
    );
    let decile = (n / 10).max(1);
    for (what, accept) in [
        ("accept-new, recording", true),
        ("strict, file complete", false),
    ] {
        opts.accept_new = accept;
        let (cpu, t) = (cpu_time(), Instant::now());
        let (times, failed) = connect_all(&fleet, &opts).await;
        let (wall, cpu) = (t.elapsed(), cpu_time().saturating_sub(cpu));
        let (first, _) = median_p90(times[..decile].to_vec());
        let (last, _) = median_p90(times[n - decile..].to_vec());
        println!(
            "  {what}: wall {:.2} s, CPU {:.2} s ({:.2} ms/host, simulator included); per connection median: first {decile} {}, last {decile} {}; {} failed{}",
            wall.as_secs_f64(),
            cpu.as_secs_f64(),
            cpu.as_secs_f64() * 1000.0 / n as f64,
            ms(first),
            ms(last),
            failed.len(),
            failed
                .first()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        );
    }
    let text = std::fs::read_to_string(&kh).unwrap_or_default();
    let names: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    println!(
        "  known_hosts written: {} lines, {} distinct hosts",
        text.lines().count(),
        names.len()
    );
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// (median, p90) of the samples.
fn median_p90(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let at = |q: f64| {
        let i = ((v.len() as f64 - 1.0) * q).round() as usize;
        v.get(i).copied().unwrap_or_default()
    };
    (at(0.5), at(0.9))
}

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Starts sshd under `unshare --mount` with an empty `/root/.bashrc`; falls back to a plain
/// sshd when that is not permitted. Returns the server and how it was started.
fn start_sshd(dir: &Path, key: &KeyPair) -> (Sshd, &'static str) {
    let empty = dir.join("empty-bashrc");
    std::fs::write(&empty, "").expect("write empty bashrc");
    let probe = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c"])
        .arg("mount --bind \"$0\" /root/.bashrc")
        .arg(&empty)
        .status();
    let isolated = matches!(probe, Ok(s) if s.success());
    let wrapper = isolated.then(|| {
        vec![
            "unshare".to_string(),
            "--mount".into(),
            "--propagation".into(),
            "private".into(),
            "sh".into(),
            "-c".into(),
            "mount --bind \"$0\" /root/.bashrc && exec \"$@\"".into(),
            empty.display().to_string(),
        ]
    });
    let sshd = Sshd::start(SshdOptions {
        addr: Ipv4Addr::new(127, 0, 0, 9),
        authorized_keys: vec![key.public.clone()],
        wrapper,
        ..Default::default()
    });
    let how = if isolated {
        "sshd in `unshare --mount` with an empty file bind-mounted over /root/.bashrc"
    } else {
        "plain sshd (unshare not permitted): root's .bashrc runs on every exec"
    };
    (sshd, how)
}

async fn connect(target: &str, opts: &ConnectOptions) -> Connection {
    probe_transport::connect(target, opts)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"))
}

async fn run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = KeyPair::generate(dir.path(), "id_bench", "ed25519", "", None);
    let (sshd, how) = start_sshd(dir.path(), &key);
    let kh = dir.path().join("known_hosts");
    sshd.write_known_hosts(&kh);
    let cfg = dir.path().join("ssh_config");
    std::fs::write(
        &cfg,
        format!(
            "Host *\n  User root\n  IdentityFile {}\n  UserKnownHostsFile {}\n  IdentityAgent none\n  BatchMode yes\n",
            key.private.display(),
            kh.display()
        ),
    )
    .expect("write ssh_config");
    let opts = ConnectOptions {
        config_file: Some(cfg.clone()),
        ..Default::default()
    };
    let target = sshd.target("root");

    println!("probe-transport benchmark (russh client, OpenSSH sshd on {target})");
    println!("server: {how}");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "machine: {} CPUs, load average {}; {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
        String::from_utf8_lossy(
            &Command::new("ssh")
                .arg("-V")
                .output()
                .map(|o| o.stderr)
                .unwrap_or_default()
        )
        .trim()
    );

    // Warm-up (first connection pays for page faults and sshd's first fork).
    let c = connect(&target, &opts).await;
    let warm = c.exec(&ExecRequest::new("true")).await.expect("exec");
    assert_eq!(warm.exit_status, 0);
    c.close().await;

    // 1. connect + auth.
    let mut samples = Vec::new();
    for _ in 0..CONNECTS {
        let t = Instant::now();
        let c = connect(&target, &opts).await;
        samples.push(t.elapsed());
        c.close().await;
    }
    let (med, p90) = median_p90(samples);
    println!(
        "connect+auth (TCP, kex, host key check, ed25519 auth), n={CONNECTS}: median {}, p90 {}",
        ms(med),
        ms(p90)
    );

    // Reference: OpenSSH's own client doing connect + auth + `true`.
    let mut samples = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let st = Command::new("ssh")
            .arg("-F")
            .arg(&cfg)
            .arg("-p")
            .arg(sshd.port.to_string())
            .arg(format!("root@{}", sshd.addr))
            .arg("true")
            .status();
        if matches!(st, Ok(s) if s.success()) {
            samples.push(t.elapsed());
        }
    }
    if !samples.is_empty() {
        let n = samples.len();
        let (med, p90) = median_p90(samples);
        println!(
            "  reference: OpenSSH `ssh HOST true` (process, connect, auth, exec), n={n}: median {}, p90 {}",
            ms(med),
            ms(p90)
        );
    }

    // 2. Sequential exec latency on one connection.
    let c = Arc::new(connect(&target, &opts).await);
    let mut samples = Vec::new();
    for _ in 0..SEQ_EXECS {
        let t = Instant::now();
        let out = c.exec(&ExecRequest::new("true")).await.expect("exec");
        samples.push(t.elapsed());
        assert_eq!(out.exit_status, 0);
    }
    let (med, p90) = median_p90(samples);
    println!(
        "sequential exec(\"true\") on one connection, n={SEQ_EXECS}: median {}, p90 {}",
        ms(med),
        ms(p90)
    );

    // 3. Concurrent channels on one connection (at most MAX_CHANNELS open at once).
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..CONCURRENT_CHANNELS {
        let c = c.clone();
        set.spawn(async move { c.exec(&ExecRequest::new("true")).await });
    }
    let mut ok = 0;
    while let Some(r) = set.join_next().await {
        if matches!(r, Ok(Ok(ref o)) if o.exit_status == 0) {
            ok += 1;
        }
    }
    let wall = t.elapsed();
    println!(
        "{CONCURRENT_CHANNELS} concurrent exec(\"true\") on one connection, {} at a time: wall {} ({ok} ok, {:.1} ms per command)",
        probe_transport::MAX_CHANNELS,
        ms(wall),
        wall.as_secs_f64() * 1000.0 / CONCURRENT_CHANNELS as f64
    );

    // 5. Throughput: 50 MB of stdout, 16 MiB kept.
    let mut samples = Vec::new();
    for _ in 0..3 {
        let req = ExecRequest::new(format!("head -c {STREAM_BYTES} /dev/zero"))
            .with_caps(STREAM_CAP, 1 << 20)
            .with_timeout(Duration::from_secs(120));
        let t = Instant::now();
        let out = c.exec(&req).await.expect("stream");
        samples.push(t.elapsed());
        assert!(out.stdout_truncated && out.stdout.len() == STREAM_CAP);
    }
    let (med, _) = median_p90(samples);
    println!(
        "stream {} MB of stdout (cap 16 MiB, rest read and dropped), n=3: median {} = {:.0} MB/s",
        STREAM_BYTES / 1_000_000,
        ms(med),
        STREAM_BYTES as f64 / 1e6 / med.as_secs_f64()
    );
    if let Ok(c) = Arc::try_unwrap(c) {
        c.close().await;
    }

    // 4. Concurrent connections, each connect + auth + exec("true").
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..CONCURRENT_CONNECTIONS {
        let opts = opts.clone();
        let target = target.clone();
        set.spawn(async move {
            let c = probe_transport::connect(&target, &opts).await?;
            let out = c.exec(&ExecRequest::new("true")).await;
            Ok::<_, probe_transport::TransportError>((c, out?))
        });
    }
    let mut conns = Vec::new();
    let mut failed = Vec::new();
    while let Some(r) = set.join_next().await {
        match r {
            Ok(Ok((c, _))) => conns.push(c),
            Ok(Err(e)) => failed.push(e.to_string()),
            Err(e) => failed.push(e.to_string()),
        }
    }
    let wall = t.elapsed();
    println!(
        "{CONCURRENT_CONNECTIONS} concurrent connections (connect+auth+exec \"true\" each): wall {} ({} ok{})",
        ms(wall),
        conns.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(", failed: {}", failed.join("; "))
        }
    );
    for c in conns {
        c.close().await;
    }

    println!(
        "peak RSS of this process (VmHWM): {:.1} MiB",
        vm_hwm_kb() as f64 / 1024.0
    );
}
