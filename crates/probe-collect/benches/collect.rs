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
//! * `manual`: the investigation a person does, 8 separate `ssh` calls;
//! * `ansible -m setup`: Ansible fact gathering over OpenSSH with the same key and ssh_config
//!   (pipelining on, no ControlPersist), when `ansible` is on the PATH (or
//!   `PROBE_BENCH_ANSIBLE`); otherwise one line says it was skipped.
//!
//! Where probe's time goes: round 1's and round 2's wall time, when round 2 started, and the
//! slowest sections (their remote time), medians over the runs.
//!
//! Scaling rows on `attacks` (2,000 server-like decoy processes): remote time of the
//! `processes` section and whether the real server was found. Then, on a fresh `sglang-hybrid`
//! whose files are grown in its temporary copy (nothing is committed): root's history by
//! 1,000,000 entries, the running server's log to 1 GiB (sparse, with real lines at its end),
//! 3,000 more unit files; after each step one collection in a fresh process (this bench run as
//! a child, `PROBE_BENCH_CHILD`) for its wall time and its peak RSS (VmHWM).
#![expect(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::process::Command;
use std::time::{Duration, Instant};

use probe_collect::{CollectOptions, collect_with_stats, script};
use probe_model::ProcessRole;
use probe_testkit::bench::median_min_max;
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

/// OpenSSH running `cmd` on the host with `stdin` fed to it, stdout dropped.
fn ssh_output(
    host: &FixtureHost,
    cmd: &str,
    stdin: Option<&[u8]>,
    stderr: std::process::Stdio,
) -> std::io::Result<std::process::Output> {
    use std::io::Write as _;
    let mut c = Command::new("ssh");
    c.arg("-F")
        .arg(host.ssh_config())
        .arg(&host.alias)
        .arg(cmd)
        .stdout(std::process::Stdio::null())
        .stderr(stderr);
    if stdin.is_some() {
        c.stdin(std::process::Stdio::piped());
    }
    let mut child = c.spawn()?;
    if let (Some(data), Some(mut w)) = (stdin, child.stdin.take()) {
        let _ = w.write_all(data);
    }
    child.wait_with_output()
}

fn ssh(host: &FixtureHost, cmd: &str, stdin: Option<&[u8]>) -> Duration {
    let t = Instant::now();
    let out = ssh_output(host, cmd, stdin, std::process::Stdio::null()).expect("ssh");
    assert!(
        out.status.success() || cmd == "sh -s",
        "ssh {cmd}: {}",
        out.status
    );
    t.elapsed()
}

/// Peak RSS (KiB) of the largest process of the round-1 script run by one `ssh` under GNU
/// `time` on the host (`ru_maxrss` of the shell and every program it waited for).
fn remote_peak_rss(host: &FixtureHost) -> Option<u64> {
    let script = script::build(&CollectOptions::default(), &script::new_boundary());
    let out = ssh_output(
        host,
        "/usr/bin/time -f @rss=%M@ sh -s >/dev/null",
        Some(script.as_bytes()),
        std::process::Stdio::piped(),
    )
    .ok()?;
    let err = String::from_utf8_lossy(&out.stderr);
    err.rsplit("@rss=")
        .next()
        .and_then(|t| t.split('@').next())
        .and_then(|n| n.trim().parse().ok())
}

/// `ansible all -i ALIAS, -m setup` through the host's ssh_config; `None` when it failed.
fn ansible(bin: &str, host: &FixtureHost, home: &std::path::Path) -> Option<Duration> {
    let t = Instant::now();
    let st = Command::new(bin)
        .args([
            "all",
            "-i",
            &format!("{},", host.alias),
            "-m",
            "setup",
            "-o",
        ])
        .env(
            "ANSIBLE_SSH_COMMON_ARGS",
            format!("-F {}", host.ssh_config().display()),
        )
        .env("ANSIBLE_SSH_ARGS", "-o ControlMaster=no")
        .env("ANSIBLE_PIPELINING", "True")
        .env("ANSIBLE_PYTHON_INTERPRETER", "/usr/bin/python3")
        .env("ANSIBLE_HOME", home.join("ansible"))
        .env("ANSIBLE_LOCAL_TEMP", home.join("ansible/tmp"))
        .env("HOME", home)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    st.success().then(|| t.elapsed())
}

/// Where one probe run's time went.
#[derive(Default)]
struct Profile {
    round1: Vec<f64>,
    round2: Vec<f64>,
    round2_start: Vec<f64>,
    sections: std::collections::BTreeMap<String, Vec<f64>>,
    /// Per group (round, name): its start and end from the collection's start, seconds.
    groups: std::collections::BTreeMap<(u8, String), (Vec<f64>, Vec<f64>)>,
}

async fn probe_once(host: &FixtureHost) -> (Duration, probe_model::Snapshot, u32, u64) {
    let (w, s, st) = probe_stats(host).await;
    (w, s, st.channels, st.group_ms_sum)
}

async fn probe_stats(
    host: &FixtureHost,
) -> (Duration, probe_model::Snapshot, probe_collect::CollectStats) {
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
    (wall, snap, stats)
}

/// The child mode: one collection of `ALIAS` through `CONFIG` (`CONFIG\tALIAS`), then
/// `wall_s peak_rss_kib sections_ok sections` on stdout.
fn child(spec: &str) {
    let Some((config, alias)) = spec.split_once('\t') else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let t = Instant::now();
    let (snap, st) = rt.block_on(async {
        let copts = ConnectOptions {
            config_file: Some(config.into()),
            batch_mode: true,
            ..Default::default()
        };
        let conn = connect(alias, &copts).await.expect("connect");
        let opts = CollectOptions {
            target: alias.to_string(),
            ..Default::default()
        };
        let r = collect_with_stats(&conn, &opts).await.expect("collect");
        conn.close().await;
        r
    });
    let wall = t.elapsed().as_secs_f64();
    let hwm = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| {
            v.split_whitespace()
                .next()
                .and_then(|x| x.parse::<u64>().ok())
        })
        .unwrap_or(0);
    let ok = snap
        .sections
        .iter()
        .filter(|s| s.status == probe_model::SectionStatus::Ok)
        .count();
    let hist = snap
        .histories
        .iter()
        .map(|h| h.entries.len())
        .max()
        .unwrap_or(0);
    let channels_done = st.groups.iter().map(|g| g.end_ms).max().unwrap_or(0);
    let mut slow: Vec<(u64, &str)> = snap
        .sections
        .iter()
        .filter_map(|s| Some((s.duration_ms?, s.name.as_str())))
        .collect();
    slow.sort_unstable_by(|a, b| b.cmp(a));
    let slow: Vec<String> = slow
        .iter()
        .take(3)
        .map(|(ms, n)| format!("{n}={:.2}", *ms as f64 / 1000.0))
        .collect();
    println!(
        "{wall:.3} {hwm} {ok} {} {} {hist} {:.3} {}",
        snap.sections.len(),
        snap.units.len(),
        channels_done as f64 / 1000.0,
        slow.join(",")
    );
}

/// One collection in a fresh process: (wall s, peak RSS KiB, summary).
fn in_child(host: &FixtureHost) -> (f64, u64, String) {
    let exe = std::env::current_exe().expect("bench executable");
    let out = Command::new(exe)
        .env(
            "PROBE_BENCH_CHILD",
            format!("{}\t{}", host.ssh_config().display(), host.alias),
        )
        .output()
        .expect("child");
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut w = line.split_whitespace();
    let wall = w.next().and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
    let rss = w.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let v: Vec<&str> = w.collect();
    let summary = format!(
        "{}/{} sections ok, {} units, longest history {} entries; last channel done at {} s, slowest sections {}",
        v.first().unwrap_or(&"?"),
        v.get(1).unwrap_or(&"?"),
        v.get(2).unwrap_or(&"?"),
        v.get(3).unwrap_or(&"?"),
        v.get(4).unwrap_or(&"?"),
        v.get(5).unwrap_or(&"?")
    );
    (wall, rss, summary)
}

/// Grows the files of a running `sglang-hybrid` host in its copy, one step at a time.
fn grow(root: &std::path::Path, step: &str) {
    use std::io::Write as _;
    match step {
        "1M-line history" => {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(root.join("root/.bash_history"))
                .expect("history");
            let mut buf = String::with_capacity(1 << 20);
            for i in 0..1_000_000u32 {
                buf.push_str(&format!(
                    "#{}\ncd /srv/run{i} && python3 bench.py --n {i}\n",
                    1_790_000_000 + i
                ));
                if buf.len() > (1 << 20) {
                    f.write_all(buf.as_bytes()).expect("write");
                    buf.clear();
                }
            }
            f.write_all(buf.as_bytes()).expect("write");
        }
        "1 GiB log" => {
            let p = root.join("root/sglang.log");
            let tail = std::fs::read(&p).unwrap_or_default();
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&p)
                .expect("log");
            f.set_len(1 << 30).expect("sparse");
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&p)
                .expect("log");
            f.write_all(
                tail.get(tail.len().saturating_sub(256 << 10)..)
                    .unwrap_or(&[]),
            )
            .expect("write");
        }
        _ => {
            for i in 0..3000 {
                let _ = std::fs::write(
                    root.join(format!("etc/systemd/system/bench-{i:04}.service")),
                    format!(
                        "[Unit]\nDescription=bench {i}\n\n[Service]\nExecStart=/opt/venvs/vllm/bin/vllm serve org/m{i} --port {}\n\n[Install]\nWantedBy=multi-user.target\n",
                        20000 + i
                    ),
                );
            }
        }
    }
}

fn main() {
    if let Ok(spec) = std::env::var("PROBE_BENCH_CHILD") {
        return child(&spec);
    }
    let runs: usize = std::env::var("PROBE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let parts =
        std::env::var("PROBE_BENCH_PARTS").unwrap_or_else(|_| "peers,decoys,scaling".into());
    let wanted = |p: &str| parts.split(',').any(|x| x.trim() == p);
    let mut json = Vec::new();
    if wanted("peers") {
        peers(&rt, runs, &mut json);
    }
    if wanted("decoys") {
        decoys(&rt, runs, &mut json);
    }
    if wanted("scaling") {
        scaling(&mut json);
    }
    if wanted("footprint") {
        footprint(&rt, runs, &mut json);
    }
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

/// `ssh true`, probe, the combined script, the manual investigation and Ansible, paired rounds
/// on `sglang-hybrid`, and where probe's time goes.
fn peers(rt: &tokio::runtime::Runtime, runs: usize, json: &mut Vec<String>) {
    let host = FixtureHost::start("sglang-hybrid");
    let combined = script::build(&CollectOptions::default(), &script::new_boundary());
    let mut rows: Vec<(&str, Vec<f64>)> = vec![
        ("ssh true", Vec::new()),
        ("probe (both rounds, concurrent groups)", Vec::new()),
        ("one ssh, combined round-1 script (sequential)", Vec::new()),
        ("manual investigation (8 ssh calls)", Vec::new()),
        ("ansible -m setup", Vec::new()),
    ];
    let ansible_bin = probe_testkit::bench::ansible();
    let home = tempfile::tempdir().expect("temp dir");
    if ansible_bin.is_none() {
        println!("Ansible: skipped (no `ansible` on the PATH and no PROBE_BENCH_ANSIBLE)");
    }
    let mut profile = Profile::default();
    let mut channels = 0;
    let mut group_sum = Vec::new();
    // One untimed warm-up of each.
    let _ = ssh(&host, "true", None);
    let _ = rt.block_on(probe_once(&host));
    if let Some(bin) = &ansible_bin
        && ansible(bin, &host, home.path()).is_none()
    {
        println!("Ansible: its warm-up run failed; its row is left out");
    }
    for _ in 0..runs {
        rows[0].1.push(ssh(&host, "true", None).as_secs_f64());
        let (w, snap, st) = rt.block_on(probe_stats(&host));
        channels = st.channels;
        for g in &st.groups {
            let e = profile.groups.entry((g.round, g.name.clone())).or_default();
            e.0.push(g.start_ms as f64 / 1000.0);
            e.1.push(g.end_ms as f64 / 1000.0);
        }
        group_sum.push(st.group_ms_sum as f64 / 1000.0);
        profile.round1.push(st.round1_ms as f64 / 1000.0);
        profile.round2.push(st.round2_ms as f64 / 1000.0);
        profile
            .round2_start
            .push(st.round2_started_ms as f64 / 1000.0);
        for sec in &snap.sections {
            if let Some(ms) = sec.duration_ms {
                profile
                    .sections
                    .entry(sec.name.clone())
                    .or_default()
                    .push(ms as f64 / 1000.0);
            }
        }
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
        if let Some(t) = ansible_bin
            .as_deref()
            .and_then(|b| ansible(b, &host, home.path()))
        {
            rows[4].1.push(t.as_secs_f64());
        }
    }
    drop(host);
    rows.retain(|(_, v)| !v.is_empty());
    let base = median_min_max(&rows[0].1).0;
    let probe_med = median_min_max(&rows[1].1).0;
    println!("collect benchmark, sglang-hybrid, n={runs} paired rounds (seconds)");
    println!(
        "{:48} {:>8} {:>8} {:>8} {:>10} {:>10}",
        "contender", "median", "min", "max", "/ssh true", "/probe"
    );
    for (name, v) in &rows {
        let (m, lo, hi) = median_min_max(v);
        println!(
            "{name:48} {m:8.3} {lo:8.3} {hi:8.3} {:10.2} {:10.2}",
            m / base,
            m / probe_med
        );
        json.push(format!(
            "{{\"contender\":\"{name}\",\"median_s\":{m:.4},\"min_s\":{lo:.4},\"max_s\":{hi:.4},\"runs\":{runs}}}"
        ));
    }
    let (gm, _, _) = median_min_max(&group_sum);
    println!("probe: {channels} exec channels, sum of group times {gm:.3} s (median)");
    let (r1, _, _) = median_min_max(&profile.round1);
    let (r2, _, _) = median_min_max(&profile.round2);
    let (r2s, _, _) = median_min_max(&profile.round2_start);
    println!(
        "probe: round 1 {r1:.3} s; round 2 started at {r2s:.3} s and took {r2:.3} s (the rest of the wall time: connect, parse, close)"
    );
    let mut slow: Vec<(f64, &String)> = profile
        .sections
        .iter()
        .map(|(k, v)| (median_min_max(v).0, k))
        .collect();
    slow.sort_by(|a, b| b.0.total_cmp(&a.0));
    let top: Vec<String> = slow
        .iter()
        .take(8)
        .map(|(t, k)| format!("{k} {t:.3}"))
        .collect();
    println!(
        "probe: slowest sections (remote s, median): {}",
        top.join(", ")
    );
    for ((round, name), (start, end)) in &profile.groups {
        let (a, _, _) = median_min_max(start);
        let (b, _, _) = median_min_max(end);
        println!("probe: round {round} group {name:14} {a:6.3} .. {b:6.3} s (median)");
    }
    json.push(format!(
        "{{\"profile\":\"probe\",\"round1_s\":{r1:.4},\"round2_s\":{r2:.4},\"slowest\":\"{}\"}}",
        top.join(", ")
    ));
}

/// The `processes` section on `attacks` (2,000 server-like decoys).
fn decoys(rt: &tokio::runtime::Runtime, runs: usize, json: &mut Vec<String>) {
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
    let (pm, plo, phi) = median_min_max(&proc_ms);
    println!(
        "2,000 decoys: processes section remote time median {pm:.3} s (min {plo:.3}, max {phi:.3}), real server found: {found}"
    );
    json.push(format!(
        "{{\"scaling\":\"2000 decoy processes\",\"processes_section_median_s\":{pm:.4},\"min_s\":{plo:.4},\"max_s\":{phi:.4},\"real_server_found\":{found}}}"
    ));
    drop(att);
}

/// History, log and unit files grown step by step on a fresh host, one child process per row.
fn scaling(json: &mut Vec<String>) {
    // Scaling: history, log, unit files, grown step by step on a fresh host.
    let big = FixtureHost::start("sglang-hybrid");
    let root = big.dir.join("root");
    let (w, rss, sum) = in_child(&big);
    println!(
        "scaling, fresh process per row: baseline {w:.3} s, peak RSS {} MiB ({sum})",
        rss / 1024
    );
    for step in ["1M-line history", "1 GiB log", "3,000 unit files"] {
        grow(&root, step);
        let (w, rss, sum) = in_child(&big);
        let remote = remote_peak_rss(&big).unwrap_or(0);
        println!(
            "scaling: + {step:18} {w:.3} s, peak RSS {} MiB, remote round-1 script's largest process {} MiB ({sum})",
            rss / 1024,
            remote / 1024
        );
        json.push(format!(
            "{{\"scaling\":\"{step} (cumulative)\",\"wall_s\":{w:.4},\"peak_rss_kib\":{rss},\"remote_peak_rss_kib\":{remote}}}"
        ));
    }
    drop(big);
}

/// The remote side of a fixture host, measured from this machine (nothing on the host's side
/// runs for it but one `cat` per reading): the host's sshd listener is its namespace's PID 1,
/// so once a session's processes have ended their CPU is in its `cutime`/`cstime` (every
/// shell waits for its programs, orphans are reaped by PID 1); the namespace's last PID counts
/// the forks; `strace -f` on the listener names every program started; the stand-ins add their
/// own CPU to `run/standin-cpu.log` while that file exists.
struct Remote {
    listener: u32,
    run: std::path::PathBuf,
    /// The host's own processes (the listener and what start.sh left running).
    idle: Vec<u32>,
}

/// What one measured action cost the host.
#[derive(Default, Clone, Copy)]
struct Foot {
    /// CPU seconds of everything the action ran on the host (sshd, shells, programs, stand-ins).
    cpu_s: f64,
    forks: f64,
    /// CPU seconds of the Python stand-ins among them, and how many started.
    standin_cpu_s: f64,
    standins: f64,
}

impl std::ops::Sub for Foot {
    type Output = Foot;
    fn sub(self, o: Foot) -> Foot {
        Foot {
            cpu_s: self.cpu_s - o.cpu_s,
            forks: self.forks - o.forks,
            standin_cpu_s: self.standin_cpu_s - o.standin_cpu_s,
            standins: self.standins - o.standins,
        }
    }
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

impl Remote {
    fn of(host: &FixtureHost) -> Remote {
        let listener = probe_testkit::fixture::descendants(host.sshd().pid())
            .into_iter()
            .find(|p| comm(*p) == "sshd")
            .expect("the host's sshd");
        let run = host.dir.join("root/usr/local/share/fixture/run");
        std::fs::create_dir_all(&run).expect("run dir");
        std::fs::write(run.join("standin-cpu.log"), "").expect("stand-in log");
        let idle = probe_testkit::fixture::descendants(listener);
        Remote {
            listener,
            run,
            idle,
        }
    }

    /// utime + stime + cutime + cstime of the listener, seconds (USER_HZ is 100 on Linux).
    fn cpu(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.listener)).unwrap();
        let rest = stat.rsplit_once(')').unwrap().1;
        let f: Vec<u64> = rest
            .split_whitespace()
            .skip(11)
            .take(4)
            .map(|x| x.parse().unwrap())
            .collect();
        f.iter().sum::<u64>() as f64 / 100.0
    }

    /// The namespace's last PID, read by one `cat` inside it (which takes a PID itself).
    fn last_pid(&self) -> f64 {
        let out = Command::new("nsenter")
            .args(["-t", &self.listener.to_string(), "-p", "-m"])
            .args(["cat", "/proc/sys/kernel/ns_last_pid"])
            .output()
            .expect("nsenter");
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    fn standins(&self) -> (f64, f64) {
        let log = std::fs::read_to_string(self.run.join("standin-cpu.log")).unwrap_or_default();
        let cpu: Vec<f64> = log
            .lines()
            .filter_map(|l| l.rsplit_once(' ')?.1.parse().ok())
            .collect();
        (cpu.iter().sum(), cpu.len() as f64)
    }

    fn now(&self) -> Foot {
        let (standin_cpu_s, standins) = self.standins();
        Foot {
            cpu_s: self.cpu(),
            forks: self.last_pid(),
            standin_cpu_s,
            standins,
        }
    }

    /// Waits until every process a session started has ended and been reaped (only the
    /// host's own are left).
    fn settle(&self) {
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            let now = probe_testkit::fixture::descendants(self.listener);
            if now.iter().all(|p| self.idle.contains(p)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn measure(&self, f: impl FnOnce()) -> Foot {
        self.settle();
        let a = self.now();
        f();
        self.settle();
        let mut d = self.now() - a;
        d.forks -= 1.0; // the second reading's own `cat`
        d
    }

    /// Programs started on the host by `f`, by name (`strace -f -z -e execve` on the listener).
    fn execs(&self, f: impl FnOnce()) -> std::collections::BTreeMap<String, u32> {
        self.settle();
        let out = tempfile::NamedTempFile::new().expect("temp file");
        let mut st = Command::new("strace")
            .args([
                "-f",
                "-qq",
                "-z",
                "-e",
                "trace=execve",
                "-e",
                "signal=none",
                "-o",
            ])
            .arg(out.path())
            .args(["-p", &self.listener.to_string()])
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("strace");
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            let status =
                std::fs::read_to_string(format!("/proc/{}/status", self.listener)).unwrap();
            if status
                .lines()
                .any(|l| l.starts_with("TracerPid:") && l.trim_end() != "TracerPid:\t0")
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        f();
        self.settle();
        let _ = Command::new("kill")
            .args(["-INT", &st.id().to_string()])
            .status();
        let _ = st.wait();
        let text = std::fs::read_to_string(out.path()).unwrap_or_default();
        let mut by = std::collections::BTreeMap::new();
        for l in text.lines() {
            let Some(p) = l
                .split("execve(\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
            else {
                continue;
            };
            let name = if p.starts_with("/usr/local/") {
                format!("{} (stand-in)", p.rsplit('/').next().unwrap_or(p))
            } else {
                p.rsplit('/').next().unwrap_or(p).to_string()
            };
            *by.entry(name).or_insert(0) += 1;
        }
        by
    }
}

/// Keeps the script of every exec channel a collection opens.
struct Scripts<'a, E: probe_transport::Exec> {
    inner: &'a E,
    log: std::sync::Mutex<Vec<Vec<u8>>>,
}

impl<E: probe_transport::Exec> probe_transport::Exec for Scripts<'_, E> {
    async fn exec(
        &self,
        req: &probe_transport::ExecRequest,
    ) -> Result<probe_transport::ExecOutput, probe_transport::TransportError> {
        if let Some(s) = req.stdin.as_deref() {
            self.log.lock().unwrap().push(s.to_vec());
        }
        self.inner.exec(req).await
    }
    fn host(&self) -> &str {
        self.inner.host()
    }
}

/// One collection in this process; with `keep`, every channel's script.
async fn collect_keeping(
    host: &FixtureHost,
    keep: bool,
) -> (probe_collect::CollectStats, Vec<Vec<u8>>) {
    let copts = ConnectOptions {
        config_file: Some(host.ssh_config()),
        batch_mode: true,
        ..Default::default()
    };
    let conn = connect(&host.alias, &copts).await.expect("connect");
    let opts = CollectOptions {
        target: host.alias.clone(),
        ..Default::default()
    };
    let rec = Scripts {
        inner: &conn,
        log: std::sync::Mutex::new(Vec::new()),
    };
    let (_, st) = collect_with_stats(&rec, &opts).await.expect("collect");
    let scripts = if keep {
        rec.log.into_inner().unwrap()
    } else {
        Vec::new()
    };
    conn.close().await;
    (st, scripts)
}

/// One queued section on lane 0 (its `sec NAME LIMIT CAP SUDO DEPENDS_ON LANE COMMAND` line
/// with the lane replaced), so that `go 1` runs it alone.
fn on_lane0(call: &str) -> String {
    let w: Vec<&str> = call.splitn(8, ' ').collect();
    match w.as_slice() {
        [sec, name, l, c, s, dep, _lane, cmd] => format!("{sec} {name} {l} {c} {s} {dep} 0 {cmd}"),
        _ => call.to_string(),
    }
}

/// The script's header, its `sec` calls (one a line, as `script.rs` writes them) and the
/// `go` line after them.
fn split_script(s: &[u8]) -> (String, Vec<(String, String)>, String) {
    let text = String::from_utf8_lossy(s).to_string();
    let Some(at) = text.find("\nsec ") else {
        return (text, Vec::new(), String::new());
    };
    let head = text[..=at].to_string();
    let mut calls = Vec::new();
    let mut rest = &text[at + 1..];
    while let Some(body) = rest.strip_prefix("sec ") {
        // The call ends at the first newline outside single quotes (`sq` quoting: `\'` outside
        // them is a quote character).
        let (mut quoted, mut escaped) = (false, false);
        let mut end = body.len();
        for (i, c) in body.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' if !quoted => escaped = true,
                '\'' => quoted = !quoted,
                '\n' if !quoted => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let name = body.split(' ').next().unwrap_or("").to_string();
        calls.push((name, format!("sec {}\n", &body[..end])));
        rest = body.get(end + 1..).unwrap_or("");
    }
    let go = rest
        .lines()
        .next()
        .filter(|l| l.starts_with("go "))
        .unwrap_or("");
    (head, calls, format!("{go}\n"))
}

const DONE: &str = "printf '\\n%s DONE\\n' \"$B\"\n";

fn foot_json(what: &str, f: &Foot, execs: u32) -> String {
    format!(
        "{{\"footprint\":\"{what}\",\"cpu_s\":{:.4},\"standin_cpu_s\":{:.4},\"standins\":{},\"forks\":{},\"program_starts\":{execs}}}",
        f.cpu_s, f.standin_cpu_s, f.standins, f.forks
    )
}

/// Means, not medians: the kernel gives the CPU times in 10 ms ticks.
fn mean_foot(v: &[Foot]) -> Foot {
    let m = |g: fn(&Foot) -> f64| v.iter().map(g).sum::<f64>() / v.len().max(1) as f64;
    Foot {
        cpu_s: m(|f| f.cpu_s),
        forks: m(|f| f.forks),
        standin_cpu_s: m(|f| f.standin_cpu_s),
        standins: m(|f| f.standins),
    }
}

/// What one collection costs the host: CPU (all of it, and the stand-ins' share), forks and
/// program starts, for `ssh true`, probe and the combined script; then each channel's script
/// replayed alone by one `ssh` (less `ssh true`), and each section alone (less the same
/// script with no section: the channel's own cost).
fn footprint(rt: &tokio::runtime::Runtime, runs: usize, json: &mut Vec<String>) {
    let host = FixtureHost::start("sglang-hybrid");
    let remote = Remote::of(&host);
    let combined = script::build(&CollectOptions::default(), &script::new_boundary());
    let _ = ssh(&host, "true", None);
    let (_, scripts) = rt.block_on(collect_keeping(&host, true));
    let mut feet: [Vec<Foot>; 3] = Default::default();
    let mut walls: [Vec<f64>; 3] = Default::default();
    let mut channels = 0;
    for _ in 0..runs {
        let t = Instant::now();
        feet[0].push(remote.measure(|| {
            ssh(&host, "true", None);
        }));
        walls[0].push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        feet[1].push(remote.measure(|| {
            channels = rt.block_on(collect_keeping(&host, false)).0.channels;
        }));
        walls[1].push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        feet[2].push(remote.measure(|| {
            ssh(&host, "sh -s", Some(combined.as_bytes()));
        }));
        walls[2].push(t.elapsed().as_secs_f64());
    }
    let execs = [
        remote.execs(|| {
            ssh(&host, "true", None);
        }),
        remote.execs(|| {
            rt.block_on(collect_keeping(&host, false));
        }),
        remote.execs(|| {
            ssh(&host, "sh -s", Some(combined.as_bytes()));
        }),
    ];
    let la = load_average();
    println!(
        "footprint on sglang-hybrid, n={runs} (means; wall: medians; remote side only; load average {la} at the end)"
    );
    println!(
        "{:34} {:>7} {:>9} {:>9} {:>7} {:>8} {:>9} {:>7}",
        "what", "wall s", "remote s", "stand-in", "starts", "forks", "programs", "chan."
    );
    for (i, name) in ["ssh true", "probe (both rounds)", "combined round-1 script"]
        .iter()
        .enumerate()
    {
        let f = mean_foot(&feet[i]);
        let w = median_min_max(&walls[i]).0;
        let n: u32 = execs[i].values().sum();
        let ch = if i == 1 {
            channels.to_string()
        } else {
            "1".into()
        };
        println!(
            "{name:34} {w:7.3} {:9.3} {:9.3} {:7} {:8} {n:9} {ch:>7}",
            f.cpu_s, f.standin_cpu_s, f.standins, f.forks
        );
        json.push(foot_json(name, &f, n));
    }
    // The same host with tools that answer at once (every stand-in's modelled latency 0).
    let fast = remote.run.join("standin-latency-s");
    std::fs::write(&fast, "0").expect("latency knob");
    let mut fw: [Vec<f64>; 3] = Default::default();
    for _ in 0..runs {
        fw[0].push(ssh(&host, "true", None).as_secs_f64());
        let t = Instant::now();
        rt.block_on(collect_keeping(&host, false));
        fw[1].push(t.elapsed().as_secs_f64());
        fw[2].push(ssh(&host, "sh -s", Some(combined.as_bytes())).as_secs_f64());
    }
    let _ = std::fs::remove_file(&fast);
    let [a, b, c] = fw.map(|v| median_min_max(&v).0);
    println!(
        "fast tools (stand-ins' latency 0), wall medians: ssh true {a:.3} s, probe {b:.3} s ({:.2}x ssh true), combined script {c:.3} s",
        b / a
    );
    json.push(format!(
        "{{\"fast_tools\":\"wall\",\"ssh_true_s\":{a:.4},\"probe_s\":{b:.4},\"combined_s\":{c:.4}}}"
    ));
    let top = |m: &std::collections::BTreeMap<String, u32>| {
        let mut v: Vec<(&String, &u32)> = m.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1));
        v.iter()
            .take(14)
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("probe's program starts by name: {}", top(&execs[1]));
    println!("combined script's: {}", top(&execs[2]));

    // Each channel alone, then each section alone.
    let base = mean_foot(&feet[0]);
    let base_execs: u32 = execs[0].values().sum();
    println!(
        "per channel, its script replayed alone by one ssh, less `ssh true` (n={runs}, means):"
    );
    let mut empty_done = false;
    for s in &scripts {
        let (head, calls, go) = split_script(s);
        if calls.is_empty() {
            continue;
        }
        // (The `go` line: a script from before lanes has none.)
        let go1 = if go.trim().is_empty() { "" } else { "go 1\n" };
        let mut variants: Vec<(String, String)> = Vec::new();
        if !empty_done {
            variants.push(("(channel, no section)".into(), format!("{head}{go1}{DONE}")));
            empty_done = true;
        }
        let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
        variants.push((
            format!("channel {}", names.join("+")),
            format!(
                "{head}{}{go}{DONE}",
                calls.iter().map(|(_, c)| c.as_str()).collect::<String>()
            ),
        ));
        if calls.len() > 1 {
            for (n, c) in &calls {
                let c = if go1.is_empty() {
                    c.clone()
                } else {
                    on_lane0(c)
                };
                variants.push((format!("  section {n}"), format!("{head}{c}{go1}{DONE}")));
            }
        }
        for (label, text) in variants {
            let v: Vec<Foot> = (0..runs)
                .map(|_| {
                    remote.measure(|| {
                        ssh(&host, "sh -s", Some(text.as_bytes()));
                    }) - base
                })
                .collect();
            let f = mean_foot(&v);
            let e: u32 = remote
                .execs(|| {
                    ssh(&host, "sh -s", Some(text.as_bytes()));
                })
                .values()
                .sum::<u32>()
                .saturating_sub(base_execs);
            println!(
                "  {label:44} cpu {:6.3} s (stand-ins {:5.3} s, {} starts)  forks {:5}  programs {e:4}",
                f.cpu_s, f.standin_cpu_s, f.standins, f.forks
            );
            json.push(foot_json(&label, &f, e));
        }
    }
    drop(host);
}

/// The 1-, 5- and 15-minute load averages as /proc/loadavg gives them.
fn load_average() -> String {
    let l = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}
