//! The host's side of reading a server's logs over their whole retention (issue 30), against
//! the newest-tail reads it replaced, on a synthetic 1 GB journal and a 1 GB rotated log set.
//! Reports numbers; asserts nothing about time. Run with
//! `cargo bench -p probe-collect --bench retention` (`PROBE_BENCH_GB`, default 1.0: the size of
//! each input; `PROBE_BENCH_AWK`, default every awk installed of mawk, gawk and busybox awk).
//!
//! The inputs are what the programs on the host hand the pipeline: `journalctl -o short-iso -u
//! vllm.service` of five weeks of vLLM 0.11 (two runs: the earlier one with speculative decoding,
//! a stats line every 10 s, uvicorn access lines, idle lines at night), and the same server's
//! `server.log` rotated by logrotate (`server.log`, `.1`, `.2.gz` ... `.N.gz`). `journalctl`
//! itself is not run (there is no journald here) and costs the same in both reads but for the
//! seek a `-n 20000` makes. For each contender: the CPU seconds of the pipeline's processes (the
//! shell's `times`), its wall time, the bytes it sends, and the metric samples of each run the
//! reader then holds.
#![expect(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::io::BufWriter;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use probe_collect::parse::logs::{parse_files, parse_journal};
use probe_collect::thin;
use probe_model::LogSource;

const B: &str = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0";
/// Run A (with speculative decoding), then run B, as in the `vllm-weeks` fixture host.
const START: i64 = 1_791_795_600; // 2026-10-12 09:00 UTC
const SWITCH: i64 = START + 24 * 86_400;
/// The collection's clock: after the last line (the year of vLLM's `MM-DD` stamps comes from it).
const NOW: i64 = START + 60 * 86_400;

fn iso(secs: i64) -> String {
    probe_model::civil::utc_second(secs)
        .trim_end_matches(" UTC")
        .replacen(' ', "T", 1)
}

/// Writes journal-shaped lines from `START` until `bytes` are written; returns the lines.
fn write_lines(out: &mut impl std::io::Write, bytes: u64, journal: bool) -> u64 {
    let (mut t, mut written, mut lines) = (START, 0u64, 0u64);
    let mut emit = |t: i64, msg: &str, written: &mut u64| {
        let stamp = iso(t);
        let line = if journal {
            format!("{stamp}+00:00 gpu7 vllm[2214]: {msg}\n")
        } else {
            format!("{msg}\n")
        };
        *written += line.len() as u64;
        let _ = out.write_all(line.as_bytes());
    };
    let starts = |t: i64| {
        format!(
            "(APIServer pid=2214) INFO {} [api_server.py:1885] vLLM API server version 0.11.0",
            vllm_stamp(t)
        )
    };
    emit(t, &starts(t), &mut written);
    let mut switched = false;
    while written < bytes {
        t += 10;
        if !switched && t >= SWITCH {
            switched = true;
            emit(t, &starts(t), &mut written);
        }
        let hour = (t / 3600) % 24;
        let rate = if switched { 1400.0 } else { 2300.0 } + (t % 97) as f64;
        let idle = (1..5).contains(&hour);
        let (rate, running) = if idle { (0.0, 0) } else { (rate, 30) };
        emit(
            t,
            &format!(
                "(APIServer pid=2214) INFO {} [loggers.py:127] Engine 000: Avg prompt throughput: 512.0 tokens/s, Avg generation throughput: {rate:.1} tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: 21.0%, Prefix cache hit rate: 40.1%",
                vllm_stamp(t)
            ),
            &mut written,
        );
        if !switched && !idle {
            emit(
                t,
                &format!(
                    "(APIServer pid=2214) INFO {} [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.40, Accepted throughput: 1350.00 tokens/s, Drafted throughput: 3833.33 tokens/s, Accepted: 13500 tokens, Drafted: 38333 tokens, Per-position acceptance rate: 0.875, 0.700, 0.560, 0.448, Avg Draft acceptance rate: 35.2%",
                    vllm_stamp(t)
                ),
                &mut written,
            );
        }
        // A busy server's uvicorn access lines: about two requests a second.
        let requests = if idle { 0 } else { 20 };
        for j in 0..requests {
            emit(
                t,
                &format!(
                    "(APIServer pid=2214) INFO:     10.20.4.{}:{} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
                    j % 200,
                    40000 + (t + j) % 20000
                ),
                &mut written,
            );
        }
        lines += 2 + requests.unsigned_abs();
    }
    lines
}

fn vllm_stamp(t: i64) -> String {
    let s = iso(t);
    format!("{}-{} {}", &s[5..7], &s[8..10], &s[11..19])
}

/// CPU seconds (children, user + system) and wall seconds of `script` run by `sh`, with its
/// stdout written to `out`.
fn run(script: &str, out: &Path) -> (f64, f64) {
    let started = Instant::now();
    let full = format!("{{ {script} ; }} > '{}'; times >&2", out.display());
    let o = Command::new("sh")
        .args(["-c", &full])
        .output()
        .expect("sh runs");
    let wall = started.elapsed().as_secs_f64();
    let times = String::from_utf8_lossy(&o.stderr);
    let cpu = times
        .lines()
        .last()
        .map(|l| l.split_whitespace().map(seconds).sum())
        .unwrap_or(0.0);
    (cpu, wall)
}

/// `1m2.345s` (the `times` builtin's form) in seconds.
fn seconds(s: &str) -> f64 {
    let s = s.trim_end_matches('s');
    match s.split_once('m') {
        Some((m, rest)) => {
            m.parse::<f64>().unwrap_or(0.0) * 60.0 + rest.parse::<f64>().unwrap_or(0.0)
        }
        None => s.parse().unwrap_or(0.0),
    }
}

/// Samples of `gen_throughput` (busy ones) the reader holds for run A and run B.
fn samples(sources: &[LogSource]) -> (u64, u64) {
    let mut a = 0;
    let mut b = 0;
    for s in sources {
        for m in s.metrics.iter().filter(|m| m.name == "gen_throughput") {
            // The summary counts every sample read; split them by the points' times in the
            // same proportion (points are spread evenly over what was read).
            let timed: Vec<i64> = m.points.iter().filter_map(|p| p.0).collect();
            if timed.is_empty() {
                continue;
            }
            let in_a = timed.iter().filter(|t| **t < SWITCH).count() as f64 / timed.len() as f64;
            a += (m.summary.count as f64 * in_a).round() as u64;
            b += (m.summary.count as f64 * (1.0 - in_a)).round() as u64;
        }
    }
    (a, b)
}

fn row(name: &str, cpu: f64, wall: f64, sent: u64, (a, b): (u64, u64)) {
    println!(
        "{name:<44} {cpu:>8.2} {wall:>8.2} {:>12} {a:>10} {b:>10}",
        sent
    );
}

fn awks() -> Vec<String> {
    if let Ok(a) = std::env::var("PROBE_BENCH_AWK") {
        return vec![a];
    }
    ["mawk", "gawk", "busybox awk"]
        .into_iter()
        .filter(|a| {
            let first = a.split(' ').next().unwrap_or(a);
            Command::new("sh")
                .args(["-c", &format!("command -v {first}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(String::from)
        .collect()
}

fn main() {
    let gb: f64 = std::env::var("PROBE_BENCH_GB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    let bytes = (gb * 1e9) as u64;
    let dir = tempfile::tempdir().expect("temp dir");
    let journal = dir.path().join("journal.txt");
    let program = dir.path().join("thin.awk");
    std::fs::write(&program, thin::program()).expect("program");
    let made = Instant::now();
    let lines: u64 = {
        let mut w = BufWriter::new(std::fs::File::create(&journal).expect("journal"));
        write_lines(&mut w, bytes, true)
    };
    println!(
        "retention bench: {:.2} GB journal ({lines} lines, vLLM, a stats line every 10 s, 20 requests logged a stats line) written in {:.1} s",
        gb,
        made.elapsed().as_secs_f64()
    );
    println!(
        "{:<44} {:>8} {:>8} {:>12} {:>10} {:>10}",
        "journal: contender", "CPU-s", "wall s", "bytes sent", "run A", "run B"
    );
    let out = dir.path().join("out");
    let j = journal.display();
    let journal_row = |name: &str, script: &str| {
        let (cpu, wall) = run(script, &out);
        let body = [
            format!("\n{B} R unit system vllm.service\n").into_bytes(),
            std::fs::read(&out).unwrap_or_default(),
        ]
        .concat();
        let sources = parse_journal(&body, B, Some(NOW), 0, 4 << 20);
        row(name, cpu, wall, body.len() as u64, samples(&sources));
    };
    journal_row(
        "before: newest 20,000 lines, 4 MiB",
        &format!("tail -n 20000 '{j}' | tail -c 4194304"),
    );
    for awk in awks() {
        journal_row(
            &format!("whole retention, thinned ({awk})"),
            &format!(
                "{{ printf '%s\\n' {B}; cat '{j}'; printf '\\n%s @end@ 0\\n' {B}; }} | {awk} -f '{}'",
                program.display()
            ),
        );
    }

    // The same server's log, rotated: server.log (1/20), .1 (1/20), .2.gz ... .9.gz.
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).expect("logs dir");
    let plain = dir.path().join("plain.log");
    {
        let mut w = BufWriter::new(std::fs::File::create(&plain).expect("plain"));
        write_lines(&mut w, bytes, false);
    }
    let split = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cd '{}' && split -n l/10 -d -a 1 '{}' part. && mv part.9 server.log && mv part.8 server.log.1 && \
             for i in 7 6 5 4 3 2 1 0; do n=$((9 - i)); gzip -c part.$i > server.log.$n.gz && rm part.$i; done && du -b -c server.log* | tail -1",
            logs.display(),
            plain.display()
        ))
        .output()
        .expect("split");
    let _ = std::fs::remove_file(&plain);
    println!(
        "rotated log set: server.log, .1, .2.gz .. .9.gz, {} bytes on disk",
        String::from_utf8_lossy(&split.stdout)
            .split_whitespace()
            .next()
            .unwrap_or("?")
    );
    println!(
        "{:<44} {:>8} {:>8} {:>12} {:>10} {:>10}",
        "log files: contender", "CPU-s", "wall s", "bytes sent", "run A", "run B"
    );
    let l = logs.display();
    let before = format!(
        "printf '\\n{B} F ok log - - {l}/server.log\\n'; tail -c 4194304 '{l}/server.log'; printf '\\n{B} F ok log - - {l}/server.log.1\\n'; tail -c 1048576 '{l}/server.log.1'"
    );
    let (cpu, wall) = run(&before, &out);
    let body = std::fs::read(&out).unwrap_or_default();
    row(
        "before: 4 MiB tail + 1 MiB of .1, no .gz",
        cpu,
        wall,
        body.len() as u64,
        samples(&parse_files(&body, B, Some(NOW), 0)),
    );
    for awk in awks() {
        let prog = program.display();
        let script = format!(
            "for f in '{l}'/server.log '{l}'/server.log.[0-9]*; do printf '\\n{B} F ok log - - %s\\n' \"$f\"; \
             case $f in *.gz) d='gzip -dc';; *) d=cat;; esac; \
             {{ printf '%s\\n' {B}; head -c 268435456 \"$f\" | $d | head -c 1073741824; printf '\\n%s @end@ 0\\n' {B}; }} | {awk} -f '{prog}'; done"
        );
        let (cpu, wall) = run(&script, &out);
        let body = std::fs::read(&out).unwrap_or_default();
        row(
            &format!("every file whole, thinned ({awk})"),
            cpu,
            wall,
            body.len() as u64,
            samples(&parse_files(&body, B, Some(NOW), 0)),
        );
    }
}
