//! The collector against its peers on fixture hosts over real OpenSSH, paired (each round runs
//! every contender once, in turn). Reports numbers and writes JSON; asserts nothing about time.
//! Run with `cargo bench -p probe-collect --bench collect` (`PROBE_BENCH_RUNS`, default 5;
//! `PROBE_BENCH_JSON`, default `target/bench-collect.json`).
//!
//! Contenders on `sglang-hybrid` (stand-ins with recorded latencies: nvidia-smi 0.3 s a call,
//! journalctl 0.2 s, docker 0.1 s, systemctl 0.05 s):
//! * `ssh true`: OpenSSH, connect + auth + `true`;
//! * `probe`: `probe_transport::connect` + `collect_with_stats` in this process (both rounds,
//!   groups concurrent on one connection);
//! * `one ssh, combined script`: OpenSSH running the round-1 script with every section one
//!   after another (`script::build`), the naive one-`ssh` collector;
//! * `manual`: the investigation a person does, 8 separate `ssh` calls.
//!
//! Scaling rows on `attacks` (2,000 server-like decoy processes): remote time of the
//! `processes` section and whether the real server was found.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::process::Command;
use std::time::{Duration, Instant};

use probe_collect::{CollectOptions, collect_with_stats, script};
use probe_model::ProcessRole;
use probe_testkit::fixture::FixtureHost;
use probe_transport::{ConnectOptions, connect};

const MANUAL: &[&str] = &[
    "ps -eo pid,ppid,user,lstart,args",
    "cat ~/.bash_history | tail -n 200",
    "ls /etc/systemd/system; cat /etc/systemd/system/*.service",
    "nvidia-smi",
    "nvidia-smi --query-gpu=index,name,memory.used,utilization.gpu --format=csv",
    "docker ps -a 2>&1 || true",
    "for p in $(pgrep -f launch_server); do tr '\\0' ' ' </proc/$p/cmdline; echo; done",
    "tail -n 200 /root/sglang.log",
];

fn ssh(host: &FixtureHost, cmd: &str, stdin: Option<&[u8]>) -> Duration {
    let t = Instant::now();
    let mut c = Command::new("ssh");
    c.arg("-F")
        .arg(host.ssh_config())
        .arg(&host.alias)
        .arg(cmd)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if stdin.is_some() {
        c.stdin(std::process::Stdio::piped());
    }
    let mut child = c.spawn().expect("ssh");
    if let (Some(data), Some(mut w)) = (stdin, child.stdin.take()) {
        use std::io::Write as _;
        let _ = w.write_all(data);
    }
    let st = child.wait().expect("ssh wait");
    assert!(st.success() || cmd == "sh -s", "ssh {cmd}: {st}");
    t.elapsed()
}

async fn probe_once(host: &FixtureHost) -> (Duration, probe_model::Snapshot, u32, u64) {
    let copts = ConnectOptions {
        config_file: Some(host.ssh_config()),
        batch_mode: true,
        ..Default::default()
    };
    let t = Instant::now();
    let conn = connect(&host.alias, &copts).await.expect("connect");
    let opts = CollectOptions {
        target: host.alias.clone(),
        ..Default::default()
    };
    let (snap, stats) = collect_with_stats(&conn, &opts).await.expect("collect");
    let wall = t.elapsed();
    conn.close().await;
    (wall, snap, stats.channels, stats.group_ms_sum)
}

fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    (
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN),
        v.first().copied().unwrap_or(f64::NAN),
        v.last().copied().unwrap_or(f64::NAN),
    )
}

fn main() {
    let runs: usize = std::env::var("PROBE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let host = FixtureHost::start("sglang-hybrid");
    let combined = script::build(&CollectOptions::default(), &script::new_boundary());
    let mut rows: Vec<(&str, Vec<f64>)> = vec![
        ("ssh true", Vec::new()),
        ("probe (both rounds, concurrent groups)", Vec::new()),
        ("one ssh, combined round-1 script (sequential)", Vec::new()),
        ("manual investigation (8 ssh calls)", Vec::new()),
    ];
    let mut channels = 0;
    let mut group_sum = Vec::new();
    // One untimed warm-up of each.
    let _ = ssh(&host, "true", None);
    let _ = rt.block_on(probe_once(&host));
    for _ in 0..runs {
        rows[0].1.push(ssh(&host, "true", None).as_secs_f64());
        let (w, _, ch, gs) = rt.block_on(probe_once(&host));
        channels = ch;
        group_sum.push(gs as f64 / 1000.0);
        rows[1].1.push(w.as_secs_f64());
        rows[2]
            .1
            .push(ssh(&host, "sh -s", Some(combined.as_bytes())).as_secs_f64());
        rows[3].1.push(
            MANUAL
                .iter()
                .map(|c| ssh(&host, c, None).as_secs_f64())
                .sum(),
        );
    }
    drop(host);
    let base = stats(&rows[0].1).0;
    let probe_med = stats(&rows[1].1).0;
    println!("collect benchmark, sglang-hybrid, n={runs} paired rounds (seconds)");
    println!(
        "{:48} {:>8} {:>8} {:>8} {:>10} {:>10}",
        "contender", "median", "min", "max", "/ssh true", "/probe"
    );
    let mut json = Vec::new();
    for (name, v) in &rows {
        let (m, lo, hi) = stats(v);
        println!(
            "{name:48} {m:8.3} {lo:8.3} {hi:8.3} {:10.2} {:10.2}",
            m / base,
            m / probe_med
        );
        json.push(format!(
            "{{\"contender\":\"{name}\",\"median_s\":{m:.4},\"min_s\":{lo:.4},\"max_s\":{hi:.4},\"runs\":{runs}}}"
        ));
    }
    let (gm, _, _) = stats(&group_sum);
    println!("probe: {channels} exec channels, sum of group times {gm:.3} s (median)");

    // Scaling: 2,000 decoys.
    let att = FixtureHost::start("attacks");
    let done = att.dir.join("root/home/mallory/decoys.done");
    let t0 = Instant::now();
    while std::fs::read_to_string(&done).unwrap_or_default().trim() != "2000"
        && t0.elapsed() < Duration::from_secs(120)
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut proc_ms = Vec::new();
    let mut found = true;
    for _ in 0..runs.min(3) {
        let (_, snap, _, _) = rt.block_on(probe_once(&att));
        let sec = snap.sections.iter().find(|s| s.name == "processes");
        proc_ms.push(sec.and_then(|s| s.duration_ms).unwrap_or(0) as f64 / 1000.0);
        found &= snap.processes.iter().any(|p| {
            p.role == ProcessRole::Launcher && p.engine == Some(probe_model::Engine::Sglang)
        });
    }
    let (pm, plo, phi) = stats(&proc_ms);
    println!(
        "2,000 decoys: processes section remote time median {pm:.3} s (min {plo:.3}, max {phi:.3}), real server found: {found}"
    );
    json.push(format!(
        "{{\"scaling\":\"2000 decoy processes\",\"processes_section_median_s\":{pm:.4},\"min_s\":{plo:.4},\"max_s\":{phi:.4},\"real_server_found\":{found}}}"
    ));
    let out = std::env::var("PROBE_BENCH_JSON").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../target/bench-collect.json"
        )
        .to_string()
    });
    let _ = std::fs::write(&out, format!("[\n{}\n]\n", json.join(",\n")));
    println!("JSON: {out}");
}
