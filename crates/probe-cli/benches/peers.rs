//! `probe audit` against its peers on fleets of light hosts (real OpenSSH sshd in namespaces on
//! 127.0.0.150.., see `light/mod.rs`), at equal concurrency, paired (each round runs every
//! contender once, in turn, on the same hosts):
//! * `probe audit -j 10` (the built binary, a fresh SQLite store per run, under `/usr/bin/time -v`
//!   for its peak RSS);
//! * `xargs -P 10` running one OpenSSH `ssh HOST sh -s` per host with the combined round-1
//!   script (`probe_collect::script::build`: every section, one after another);
//! * `xargs -P 10` running, through one OpenSSH `ssh HOST sh -s` per host, exactly what probe
//!   sent: every exec channel's command and script, captured from `probe host` by a light host
//!   whose sshd has a `ForceCommand` that keeps them (`light::start_capture_host`), replayed
//!   round by round (a round's channels at once, as probe runs them; issue 35);
//! * Ansible fact gathering, `ansible all -f 10 -m setup` (pipelining on, no ControlPersist, so
//!   no run reuses an earlier run's connection), when `ansible` is on the PATH (or
//!   `PROBE_BENCH_ANSIBLE`); otherwise one line says it was skipped.
//!
//! Each run is measured by its wall time, the CPU of the contender's own process tree (the
//! client: `/usr/bin/time -v`, user + system) and the whole machine's CPU over the run
//! (`/proc/stat`: the hosts' sshd, shells and programs run here too, so machine minus client is
//! the hosts' side). Reports numbers, asserts nothing about time.
//! `cargo bench -p probe-cli --bench peers` (`PROBE_BENCH_FLEET`, default `10,30,100`;
//! `PROBE_BENCH_RUNS`, default 3). Writes
//! `docs/bench/fleet.svg` (median time against N) and `docs/bench/fleet.json`.
//!
//! `PROBE_BENCH_SERVING=DEFINITION` (`sglang-story`): the fleet is N copies of that serving
//! fixture host instead of light hosts (`copies/mod.rs`, 127.0.2.1..), the capture host one
//! more copy (127.0.2.251), Ansible left out; writes `docs/bench/fleet-serving.{svg,json}`.
//! Each run also reports the CPU of the hosts' processes by kind (sshd, shells, the programs the
//! scripts start), from the `/proc/PID/stat` of everything in the copies' namespaces, read
//! before and after the run (processes that end during the run are counted by their parents'
//! `cutime`/`cstime`, charged to the parent's kind: a session's shells and programs to its sshd).
#![expect(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use probe_collect::{CollectOptions, script};
use probe_testkit::KeyPair;
use probe_testkit::bench::median_min_max;

mod copies;
mod light;
use light::Named;

const PROBE: &str = env!("CARGO_BIN_EXE_probe");
const FIRST_ADDRESS: u8 = 150;
const LAST_ADDRESS: u8 = 249;
/// The host whose sshd keeps what probe sends.
const CAPTURE_ADDRESS: u8 = 250;
const JOBS: usize = 10;
const CONTENDERS: [&str; 4] = [
    "probe audit -j 10",
    "xargs -P 10 ssh, probe's own scripts",
    "xargs -P 10 ssh, combined script",
    "ansible -f 10 -m setup",
];

/// One contender's run: wall seconds, hosts that succeeded, peak RSS (KiB) of the process, CPU
/// seconds of its process tree and of the whole machine.
struct Run {
    secs: f64,
    ok: usize,
    rss_kib: Option<u64>,
    client_cpu: f64,
    machine_cpu: f64,
    /// CPU seconds of the serving copies' sessions (sshd, shells, programs; `/proc`), when the
    /// fleet is copies.
    host_cpu: Option<f64>,
}

/// CPU seconds the machine has spent busy since boot (`/proc/stat`: every state but idle and
/// iowait, in clock ticks of 1/100 s).
fn machine_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: u64 = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .take(7)
        .filter_map(|(_, v)| v.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}

/// User + system seconds `/usr/bin/time -v` reports for the process tree it ran.
fn client_cpu_of(stderr: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(stderr);
    ["User time (seconds):", "System time (seconds):"]
        .iter()
        .filter_map(|k| {
            text.lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix(k))
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .sum()
}

fn rss_of(stderr: &[u8]) -> Option<u64> {
    String::from_utf8_lossy(stderr)
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("Maximum resident set size (kbytes):"))
        .and_then(|v| v.trim().parse().ok())
}

/// Runs `cmd`: (wall seconds, machine CPU seconds over the run, its output).
fn timed(mut cmd: Command) -> (f64, f64, std::process::Output) {
    let cpu = machine_cpu();
    let t = Instant::now();
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("run contender");
    (t.elapsed().as_secs_f64(), machine_cpu() - cpu, out)
}

struct Fleet {
    dir: PathBuf,
    config: PathBuf,
    aliases: Vec<String>,
    script: PathBuf,
    replay: PathBuf,
    ansible: Option<String>,
    /// The serving copies' sshd (their namespaces' roots); empty for light hosts.
    roots: Vec<u32>,
}

impl Fleet {
    /// CPU ticks of the copies' trees so far (0 for light hosts).
    fn host_ticks(&self) -> u64 {
        if self.roots.is_empty() {
            0
        } else {
            copies::tree_ticks(&self.roots)
        }
    }

    fn host_cpu_since(&self, ticks: u64) -> Option<f64> {
        (!self.roots.is_empty()).then(|| self.host_ticks().saturating_sub(ticks) as f64 / 100.0)
    }

    fn probe(&self, n: usize, run: usize) -> Run {
        let inventory = self.dir.join(format!("fleet-{n}.toml"));
        let store = self.dir.join(format!("store-{n}-{run}.db"));
        let mut cmd = Command::new("/usr/bin/time");
        cmd.arg("-v")
            .arg(PROBE)
            .arg("-F")
            .arg(&self.config)
            .arg("--store")
            .arg(&store)
            .args(["audit", "--inventory"])
            .arg(&inventory)
            .args(["-j", &JOBS.to_string(), "--jsonl", "--progress", "never"])
            .args(["--fail-on", "never"])
            .env_remove("RUST_LOG")
            .env("NO_COLOR", "1")
            .env("HOME", &self.dir)
            .env("XDG_CONFIG_HOME", self.dir.join("config"))
            .env("XDG_DATA_HOME", self.dir.join("data"));
        let ticks = self.host_ticks();
        let (secs, machine_cpu, out) = timed(cmd);
        let host_cpu = self.host_cpu_since(ticks);
        let summary: serde_json::Value = String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_default();
        let field = |k: &str| summary.get(k).and_then(serde_json::Value::as_u64);
        let ok = field("ok").unwrap_or(0) + field("changed").unwrap_or(0);
        Run {
            secs,
            ok: usize::try_from(ok).unwrap_or(0),
            rss_kib: rss_of(&out.stderr),
            client_cpu: client_cpu_of(&out.stderr),
            machine_cpu,
            host_cpu,
        }
    }

    /// `xargs -P 10`, one `ssh HOST sh -s` per host fed `script`.
    fn xargs(&self, n: usize) -> Run {
        self.xargs_with(n, &self.script)
    }

    /// `xargs -P 10`, one `ssh HOST sh -s` per host fed what probe sent (the replay).
    fn replayed(&self, n: usize) -> Run {
        self.xargs_with(n, &self.replay)
    }

    fn xargs_with(&self, n: usize, script: &Path) -> Run {
        let list = self.dir.join(format!("hosts-{n}.txt"));
        let mut cmd = Command::new("/usr/bin/time");
        cmd.arg("-v")
            .arg("xargs")
            .args(["-a"])
            .arg(&list)
            .args(["-P", &JOBS.to_string(), "-n", "1", "sh", "-c"])
            .arg("ssh -F \"$1\" -o BatchMode=yes \"$3\" sh -s <\"$2\" >/dev/null 2>&1 && echo ok")
            .arg("sh")
            .arg(&self.config)
            .arg(script);
        let ticks = self.host_ticks();
        let (secs, machine_cpu, out) = timed(cmd);
        let host_cpu = self.host_cpu_since(ticks);
        Run {
            secs,
            ok: String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| *l == "ok")
                .count(),
            rss_kib: rss_of(&out.stderr),
            client_cpu: client_cpu_of(&out.stderr),
            machine_cpu,
            host_cpu,
        }
    }

    fn ansible(&self, n: usize) -> Option<Run> {
        let bin = self.ansible.as_ref()?;
        let mut cmd = Command::new("/usr/bin/time");
        cmd.arg("-v")
            .arg(bin)
            .arg("all")
            .arg("-i")
            .arg(self.dir.join(format!("ansible-{n}.ini")))
            .args(["-f", &JOBS.to_string(), "-m", "setup", "-o"])
            .env(
                "ANSIBLE_SSH_COMMON_ARGS",
                format!("-F {}", self.config.display()),
            )
            .env("ANSIBLE_SSH_ARGS", "-o ControlMaster=no")
            .env("ANSIBLE_PIPELINING", "True")
            .env("ANSIBLE_PYTHON_INTERPRETER", "/usr/bin/python3")
            .env("ANSIBLE_HOME", self.dir.join("ansible"))
            .env("ANSIBLE_LOCAL_TEMP", self.dir.join("ansible/tmp"))
            .env("ANSIBLE_NOCOLOR", "1")
            .env("HOME", &self.dir);
        let (secs, machine_cpu, out) = timed(cmd);
        let ok = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(" | SUCCESS"))
            .count();
        Some(Run {
            secs,
            ok,
            rss_kib: rss_of(&out.stderr),
            client_cpu: client_cpu_of(&out.stderr),
            machine_cpu,
            host_cpu: None,
        })
    }
}

/// Runs `probe host` once against a light host whose sshd keeps every exec channel's command
/// and input, and writes them as one script for `sh -s` (`DIR/replay.sh`): each round's
/// channels (those started within 150 ms of its first) at once in the background, each fed its
/// own input by a here-document; the next round once they have ended. Returns its path.
fn capture_replay(dir: &Path, key: &KeyPair, serving: Option<&str>) -> PathBuf {
    let capture = dir.join("capture");
    std::fs::create_dir_all(&capture).unwrap();
    let force = force_command(&capture);
    let (block, stop): (String, Box<dyn FnOnce()>) = match serving {
        Some(definition) => {
            let copy = copies::start_capture_copy(definition, key, dir, &force);
            (copy.sshd_block.clone(), Box::new(move || drop(copy)))
        }
        None => {
            let host = start_capture_host(CAPTURE_ADDRESS, key, dir, &force);
            (
                host.sshd_block.clone(),
                Box::new(move || {
                    drop(host.stop);
                    let _ = host.thread.join();
                }),
            )
        }
    };
    let config = dir.join("capture_config");
    std::fs::write(&config, &block).unwrap();
    let out = Command::new(PROBE)
        .arg("-F")
        .arg(&config)
        .args(["host", "light-capture", "--no-store", "--format", "json"])
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .output()
        .expect("run probe host");
    assert!(
        out.status.success(),
        "probe host light-capture: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stop();
    let mut channels: Vec<(u128, String, Vec<u8>)> = std::fs::read_dir(&capture)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n: u128 = name.strip_suffix(".cmd")?.parse().ok()?;
            let cmd = std::fs::read_to_string(e.path()).ok()?;
            let input = std::fs::read(capture.join(format!("{n}.in"))).unwrap_or_default();
            Some((n, cmd, input))
        })
        .collect();
    channels.sort_by_key(|c| c.0);
    let path = dir.join("replay.sh");
    std::fs::write(&path, replay_script(&channels)).unwrap();
    println!(
        "captured {} exec channels of `probe host` ({} bytes of scripts) -> {}",
        channels.len(),
        channels.iter().map(|c| c.2.len()).sum::<usize>(),
        path.display()
    );
    path
}

/// The replay of captured channels `(start ns, command, input)`, in start order.
fn replay_script(channels: &[(u128, String, Vec<u8>)]) -> Vec<u8> {
    let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
    let mut out: Vec<u8> = Vec::new();
    let mut round_start: Option<u128> = None;
    for (i, (start, cmd, input)) in channels.iter().enumerate() {
        if round_start.is_some_and(|r| start.saturating_sub(r) > 150_000_000) {
            out.extend_from_slice(b"wait\n");
            round_start = None;
        }
        round_start.get_or_insert(*start);
        let end = format!("__PROBE_REPLAY_{i}__");
        out.extend_from_slice(
            format!("sh -c {} >/dev/null 2>&1 <<'{end}' &\n", quote(cmd)).as_bytes(),
        );
        out.extend_from_slice(input);
        if !input.ends_with(b"\n") {
            out.push(b'\n');
        }
        out.extend_from_slice(format!("{end}\n").as_bytes());
    }
    out.extend_from_slice(b"wait\n");
    out
}

/// Writes the per-size inventories: probe's TOML, a host list for xargs, Ansible's INI.
fn write_inventories<H: Named>(hosts: &[H], dir: &Path, sizes: &[usize]) {
    for &n in sizes {
        let some = hosts.get(..n).unwrap_or(hosts);
        let (_, inventory) = light::write_fleet(some, dir, &format!("fleet-{n}"));
        assert!(inventory.exists());
        let names: String = some.iter().map(|h| format!("{}\n", h.alias())).collect();
        std::fs::write(dir.join(format!("hosts-{n}.txt")), &names).unwrap();
        std::fs::write(
            dir.join(format!("ansible-{n}.ini")),
            format!("[bench]\n{names}"),
        )
        .unwrap();
    }
    // The ssh_config of every host (write_fleet of the last size wrote only its own).
    light::write_fleet(hosts, dir, "fleet-all");
}

/// A line plot of median seconds against fleet size, one line per contender.
fn svg(series: &[(&str, Vec<(usize, f64)>)]) -> String {
    let (w, h, left, bottom, top, right) = (640.0, 400.0, 60.0, 50.0, 20.0, 200.0);
    let max_n = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(n, _)| *n))
        .max()
        .unwrap_or(1) as f64;
    let max_t = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(_, t)| *t))
        .fold(1.0_f64, f64::max)
        * 1.1;
    let x = |n: f64| left + n / max_n * (w - left - right);
    let y = |t: f64| h - bottom - t / max_t * (h - bottom - top);
    let colours = ["#1f77b4", "#ff7f0e", "#d62728", "#2ca02c"];
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/><line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{}\" stroke=\"black\"/>",
        h - bottom,
        w - right,
        h - bottom,
        h - bottom
    );
    for i in 0..=4 {
        let t = max_t * f64::from(i) / 4.0;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{t:.1} s</text>",
            left - 5.0,
            y(t) + 4.0
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">hosts in the fleet (N), -j / -P / -f 10</text>",
        (left + w - right) / 2.0,
        h - 10.0
    );
    for (i, (name, points)) in series.iter().enumerate() {
        let c = colours.get(i).copied().unwrap_or("black");
        let path: Vec<String> = points
            .iter()
            .map(|(n, t)| format!("{:.1},{:.1}", x(*n as f64), y(*t)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for (n, t) in points {
            let _ = writeln!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{c}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{n}</text>",
                x(*n as f64),
                y(*t),
                x(*n as f64),
                h - bottom + 15.0
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" fill=\"{c}\">{name}</text>",
            w - right + 10.0,
            top + 20.0 * (i as f64 + 1.0)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn main() {
    probe_testkit::require_openssh().unwrap_or_else(|e| panic!("{e}"));
    probe_testkit::fixture::require_namespaces().unwrap_or_else(|e| panic!("{e}"));
    let max_hosts = usize::from(LAST_ADDRESS - FIRST_ADDRESS) + 1;
    let mut sizes: Vec<usize> = std::env::var("PROBE_BENCH_FLEET")
        .unwrap_or_else(|_| "10,30,100".into())
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .map(|n: usize| n.clamp(1, max_hosts))
        .collect();
    sizes.sort_unstable();
    let runs: usize = std::env::var("PROBE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let count = sizes.last().copied().unwrap_or(10);
    let serving = std::env::var("PROBE_BENCH_SERVING")
        .ok()
        .filter(|v| !v.is_empty());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "peers benchmark: {} CPUs, load average at start {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.trim()
    );
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().to_path_buf();
    let key = KeyPair::generate(&dir, "id_ed25519", "ed25519", "", None);
    let (light_hosts, copied) = match &serving {
        Some(definition) => (
            Vec::new(),
            copies::start_copies(definition, count, &key, &dir),
        ),
        None => (
            light::start_fleet(FIRST_ADDRESS, count, &key, &dir),
            Vec::new(),
        ),
    };
    let aliases: Vec<String> = if serving.is_some() {
        write_inventories(&copied, &dir, &sizes);
        copied.iter().map(|h| h.alias.clone()).collect()
    } else {
        write_inventories(&light_hosts, &dir, &sizes);
        light_hosts.iter().map(|h| h.alias.clone()).collect()
    };
    let script_path = dir.join("combined.sh");
    let combined = script::build(&CollectOptions::default(), &script::new_boundary());
    std::fs::write(&script_path, combined).unwrap();
    let replay = capture_replay(&dir, &key, serving.as_deref());
    let fleet = Fleet {
        config: dir.join("ssh_config"),
        aliases,
        script: script_path,
        replay,
        ansible: probe_testkit::bench::ansible().filter(|_| serving.is_none()),
        dir: dir.clone(),
        roots: copied.iter().map(|c| c.host.sshd().pid()).collect(),
    };
    if fleet.ansible.is_none() {
        println!(
            "Ansible: skipped (serving copies, or no `ansible` on the PATH and no PROBE_BENCH_ANSIBLE)"
        );
    }
    // Untimed warm-up of each on the smallest fleet.
    let warm = sizes.first().copied().unwrap_or(10);
    let _ = (
        fleet.probe(warm, 999),
        fleet.replayed(warm),
        fleet.xargs(warm),
        fleet.ansible(warm),
    );
    if serving.is_some() && std::env::var_os("PROBE_BENCH_SPLIT").is_some() {
        host_split(&fleet, &sizes);
    }
    let mut json = Vec::new();
    let mut plot: Vec<(&str, Vec<(usize, f64)>)> =
        CONTENDERS.iter().map(|c| (*c, Vec::new())).collect();
    println!(
        "{:>4} {:38} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>7} {:>7} {:>8} {:>9}",
        "N",
        "contender",
        "median",
        "min",
        "max",
        "ok/N",
        "/probe",
        "mach CPU",
        "client",
        "hosts",
        "sessions",
        "peak RSS"
    );
    for &n in &sizes {
        let mut times: [Vec<f64>; 4] = Default::default();
        let mut cpus: [Vec<(f64, f64, f64)>; 4] = Default::default();
        let mut oks = [usize::MAX; 4];
        let mut rss = [0u64; 4];
        for r in 0..runs {
            let got = [
                Some(fleet.probe(n, r)),
                Some(fleet.replayed(n)),
                Some(fleet.xargs(n)),
                fleet.ansible(n),
            ];
            for (i, run) in got.into_iter().enumerate() {
                let Some(run) = run else { continue };
                if let Some(t) = times.get_mut(i) {
                    t.push(run.secs);
                }
                if let Some(c) = cpus.get_mut(i) {
                    c.push((
                        run.machine_cpu,
                        run.client_cpu,
                        run.host_cpu.unwrap_or(f64::NAN),
                    ));
                }
                if let Some(o) = oks.get_mut(i) {
                    *o = (*o).min(run.ok);
                }
                if let Some(m) = rss.get_mut(i) {
                    *m = (*m).max(run.rss_kib.unwrap_or(0));
                }
            }
        }
        let probe_median = median_min_max(times.first().map_or(&[][..], |v| v)).0;
        for (i, name) in CONTENDERS.iter().enumerate() {
            let v = times.get(i).map_or(&[][..], |v| v);
            if v.is_empty() {
                continue;
            }
            let (m, lo, hi) = median_min_max(v);
            let ok = oks.get(i).copied().unwrap_or(0);
            let kib = rss.get(i).copied().unwrap_or(0);
            let c = cpus.get(i).map_or(&[][..], |v| v);
            let machine = median_min_max(&c.iter().map(|x| x.0).collect::<Vec<_>>()).0;
            let client = median_min_max(&c.iter().map(|x| x.1).collect::<Vec<_>>()).0;
            let sessions = median_min_max(&c.iter().map(|x| x.2).collect::<Vec<_>>()).0;
            println!(
                "{n:>4} {name:38} {m:7.2} {lo:7.2} {hi:7.2} {:>7} {:7.2} {machine:8.2} {client:7.2} {:7.2} {sessions:8.2} {:>5} MiB",
                format!("{ok}/{n}"),
                m / probe_median,
                machine - client,
                kib / 1024
            );
            if let Some((_, p)) = plot.get_mut(i) {
                p.push((n, m));
            }
            json.push(format!(
                "{{\"hosts\":{n},\"contender\":\"{name}\",\"median_s\":{m:.3},\"min_s\":{lo:.3},\"max_s\":{hi:.3},\"runs\":{},\"ok_min\":{ok},\"peak_rss_kib\":{kib},\"machine_cpu_s\":{machine:.2},\"client_cpu_s\":{client:.2},\"sessions_cpu_s\":{}}}",
                v.len(),
                if sessions.is_nan() {
                    "null".to_string()
                } else {
                    format!("{sessions:.2}")
                }
            ));
        }
    }
    if runs == 0 {
        // Only the split (and perf) runs: nothing written to docs/bench.
        return;
    }
    let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bench");
    let _ = std::fs::create_dir_all(docs);
    plot.retain(|(_, p)| !p.is_empty());
    let stem = if serving.is_some() {
        "fleet-serving"
    } else {
        "fleet"
    };
    let _ = std::fs::write(format!("{docs}/{stem}.svg"), svg(&plot));
    let _ = std::fs::write(
        format!("{docs}/{stem}.json"),
        format!(
            "{{\"load_average_at_start\":\"{}\",\"hosts\":{},\"results\":[\n{}\n]}}\n",
            load.trim(),
            fleet.aliases.len(),
            json.join(",\n")
        ),
    );
    println!("wrote {docs}/{stem}.svg and {docs}/{stem}.json");
    for h in light_hosts {
        drop(h.stop);
        let _ = h.thread.join();
    }
    drop(copied);
}

/// Processes the machine has forked since boot (`/proc/stat` `processes`; others' included).
fn forks() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("processes "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Where the copies' CPU goes, by kind of process, for probe and for the replay of its own
/// scripts: one run each per fleet size, the copies' processes sampled every 20 ms
/// (`copies::sample`) while it runs (these runs are apart from the paired, timed ones: the
/// sampling costs CPU). "unsampled" is the sessions' total (`copies::tree_ticks`) less what
/// the samples saw: processes that lived under 20 ms (most of the programs the scripts start).
fn host_split(fleet: &Fleet, sizes: &[usize]) {
    use std::sync::atomic::{AtomicBool, Ordering};
    println!(
        "host side, by kind of process (CPU-s; one sampled run each; load {}):",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    for &n in sizes {
        for (name, which) in [
            ("probe audit -j 10", 0),
            ("xargs ssh, probe's own scripts", 1),
        ] {
            let stop = AtomicBool::new(false);
            let acct = fleet.dir.join(format!("acct-{n}-{which}"));
            let _ = std::fs::write(&acct, b"");
            let accounting = copies::accounting(Some(&acct));
            let ticks = fleet.host_ticks();
            let forked = forks();
            let (run, (kinds, born, pids)) = std::thread::scope(|s| {
                let sampler = s.spawn(|| copies::sample(&fleet.roots, &stop));
                let run = if which == 0 {
                    fleet.probe(n, 500 + n)
                } else {
                    fleet.replayed(n)
                };
                stop.store(true, Ordering::Relaxed);
                (run, sampler.join().expect("sampler"))
            });
            let total = fleet.host_ticks().saturating_sub(ticks) as f64 / 100.0;
            let forked = forks().saturating_sub(forked);
            if accounting {
                copies::accounting(None);
            }
            let starts = copies::starts_by_command(
                &copies::acct_records(&std::fs::read(&acct).unwrap_or_default()),
                &pids,
            );
            let engine = "the fixture's engine (not collection)";
            let seen: f64 = kinds
                .iter()
                .filter(|(k, _)| **k != engine)
                .map(|(_, t)| *t as f64 / 100.0)
                .sum();
            let mut line = format!(
                "  N={n:<3} {name:32} wall {:.2} s, client {:.2}, sessions {total:.2} CPU-s, {born} processes seen, {forked} forks on the machine:",
                run.secs, run.client_cpu
            );
            for (k, t) in &kinds {
                let _ = write!(line, " {k} {:.2};", *t as f64 / 100.0);
            }
            let _ = write!(line, " short-lived (not sampled) {:.2}", total - seen);
            let mut starts: Vec<(String, usize)> = starts.into_iter().collect();
            starts.sort_by_key(|s| std::cmp::Reverse(s.1));
            let all: usize = starts.iter().map(|s| s.1).sum();
            let _ = write!(
                line,
                "\n      process starts (acct, {}): {all} in all, {:.0} per host:",
                if accounting { "on" } else { "unavailable" },
                all as f64 / n as f64
            );
            for (comm, count) in starts.iter().take(14) {
                let _ = write!(line, " {comm} {count};");
            }
            println!("{line}");
        }
    }
    // The client's side: one more audit of the largest fleet under `perf record` (DWARF call
    // graphs), kept for `perf report` (`PROBE_BENCH_PERF=FILE`).
    if let (Ok(out), Some(&n)) = (std::env::var("PROBE_BENCH_PERF"), sizes.last()) {
        let inventory = fleet.dir.join(format!("fleet-{n}.toml"));
        let store = fleet.dir.join(format!("store-perf-{n}.db"));
        let status = Command::new("perf")
            .args([
                "record",
                "-q",
                "-F",
                "300",
                "--call-graph",
                "dwarf,16384",
                "-o",
            ])
            .arg(&out)
            .arg(PROBE)
            .arg("-F")
            .arg(&fleet.config)
            .arg("--store")
            .arg(&store)
            .args(["audit", "--inventory"])
            .arg(&inventory)
            .args(["-j", &JOBS.to_string(), "--jsonl", "--progress", "never"])
            .args(["--fail-on", "never"])
            .env("HOME", &fleet.dir)
            .env("XDG_CONFIG_HOME", fleet.dir.join("config"))
            .env("XDG_DATA_HOME", fleet.dir.join("data"))
            .stdout(Stdio::null())
            .status();
        println!("perf record of `probe audit` over {n} copies -> {out}: {status:?}");
    }
}

/// The sshd line that keeps what every exec channel runs: a `ForceCommand` writes the channel's
/// command (`N.cmd`) and standard input (`N.in`, through `tee` while the command reads it) into
/// `capture`, N the channel's start in nanoseconds, then runs the command as asked. What probe
/// sent is then run again by OpenSSH (`peers` bench).
fn force_command(capture: &Path) -> String {
    format!(
        "ForceCommand /bin/sh -c 'n=$(date +%s%N); printf %s \"$SSH_ORIGINAL_COMMAND\" >{c}/$n.cmd; tee {c}/$n.in | /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"'\n",
        c = capture.display()
    )
}

/// One light host on 127.0.0.`address` whose sshd runs `force` (`force_command`).
fn start_capture_host(address: u8, key: &KeyPair, dir: &Path, force: &str) -> light::LightHost {
    let pending = light::start_light_host(address, 0, key, dir, force);
    let mut host = light::wait_light_host(pending, dir);
    host.alias = "light-capture".into();
    host.sshd_block = host
        .sshd_block
        .replacen("Host light-000", "Host light-capture", 1);
    host
}
