//! Page benchmark: `probe host --format html` of a host with 2,000 launch lines in root's
//! history that make 100 runs (each run launched 20 times in a row to its own log, as people
//! retry), each with its metrics, as the report builder and the page renderer see it. Prints the time of each step and the page's size; asserts nothing about time. Run
//! with `cargo bench -p probe-cli --bench html`.
#![expect(
    clippy::print_stdout,
    reason = "a benchmark prints its numbers and its progress"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use probe_model::{
    Engine, HistoryEntry, HistoryFile, LogSource, MetricSeries, ProcessInfo, ProcessRole, Snapshot,
};

const T0: i64 = 1_790_000_000;
const LINES: usize = 2_000;
const RUNS: usize = 100;

/// Launch lines per run.
const REPEATS: usize = LINES / RUNS;

/// Launch line `i`: run `i / REPEATS`, writing that run's log; consecutive runs differ.
fn command(i: usize) -> String {
    let run = i / REPEATS;
    let steps = 1 + run % 3;
    let log = format!(" > /root/run{run}.log 2>&1 &");
    format!(
        "/opt/venv/bin/python3 -m sglang.launch_server --model-path /models/m --port 30000 \
         --speculative-algorithm EAGLE --speculative-num-steps {steps}{log}"
    )
}

/// Line `i` was typed at this time: a run's retries a minute apart, runs a day apart.
fn at(i: usize) -> i64 {
    T0 + (i / REPEATS) as i64 * 86_400 + (i % REPEATS) as i64 * 60
}

/// The log of run `run`, written after its last launch line.
fn log(run: usize) -> LogSource {
    let started = at(run * REPEATS + REPEATS - 1);
    let series = |name: &str, base: f64| MetricSeries {
        name: name.into(),
        points: (0..120)
            .map(|k| (Some(started + 60 + k * 20), base + (k % 5) as f64))
            .collect(),
        ..MetricSeries::default()
    };
    LogSource {
        location: format!("/root/run{run}.log"),
        metrics: vec![
            series("gen_throughput", 60.0),
            series("running_reqs", 1.0),
            series("accept_len", 2.0),
        ],
        ..LogSource::default()
    }
}

fn snapshot() -> Snapshot {
    let last = LINES - 1;
    Snapshot {
        id: "bench-html".into(),
        collected_at: at(LINES) + 86_400,
        histories: vec![HistoryFile {
            user: "root".into(),
            path: "/root/.bash_history".into(),
            entries: (0..LINES)
                .map(|i| HistoryEntry {
                    index: i as u32,
                    time: Some(at(i)),
                    command: command(i),
                })
                .collect(),
            ..HistoryFile::default()
        }],
        processes: vec![ProcessInfo {
            pid: 4242,
            argv: command(last)
                .split(" >")
                .next()
                .unwrap_or_default()
                .split(' ')
                .map(String::from)
                .collect(),
            start_time: Some(at(last)),
            role: ProcessRole::Launcher,
            engine: Some(Engine::Sglang),
            ..ProcessInfo::default()
        }],
        logs: (0..RUNS).map(log).collect(),
        ..Snapshot::default()
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn main() {
    let s = snapshot();
    let mut build = Vec::new();
    let mut render = Vec::new();
    let mut size = 0;
    let mut runs = 0;
    for _ in 0..3 {
        let t = Instant::now();
        let report = probe_cli::testing::host_report(black_box(&s), None, false, Vec::new());
        build.push(t.elapsed());
        runs = report.runs.len();
        let t = Instant::now();
        let page = probe_cli::testing::host_page(std::slice::from_ref(&report));
        render.push(t.elapsed());
        size = page.len();
    }
    println!(
        "html: {LINES} launch lines, {runs} runs: report {:.2?}, page {:.2?} (median of 3), \
         page {size} bytes ({:.2} MB)",
        median(build),
        median(render),
        size as f64 / 1_048_576.0
    );
}
