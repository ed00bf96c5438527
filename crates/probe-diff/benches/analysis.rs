//! Analysis benchmark: one snapshot read into launches, runs and timeline (`analyze`) and the
//! running run judged against the one before it (`previous_launch_diff`, the verdict included),
//! as the number of log lines and of launches grows. Prints numbers, asserts nothing about
//! time. Run with `cargo bench -p probe-diff --bench analysis`.
//!
//! The snapshot: a root history of L launches of one SGLang server (two configurations in
//! turn, each to its own log, a day apart), each log holding N / L decode lines (throughput,
//! running requests, accept length, token usage), and the last launch running.
#![expect(
    clippy::print_stdout,
    reason = "a benchmark prints its numbers and its progress"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use probe_diff::{analyze, previous_launch_diff};
use probe_model::{
    Engine, HistoryEntry, HistoryFile, LogSource, MetricSeries, ProcessInfo, ProcessRole, Snapshot,
};

const T0: i64 = 1_795_000_000;
const DAY: i64 = 86_400;

fn command(i: usize) -> String {
    let steps = if i.is_multiple_of(2) { 3 } else { 1 };
    format!(
        "nohup /opt/venv/bin/python3 -m sglang.launch_server --model-path /models/m --port 30000 \
         --speculative-algorithm EAGLE --speculative-num-steps {steps} --speculative-eagle-topk 1 \
         > /root/log{i}.log 2>&1 &"
    )
}

fn log(i: usize, lines: usize) -> LogSource {
    let start = T0 + i as i64 * DAY;
    let series = |name: &str, value: &dyn Fn(usize) -> f64| MetricSeries {
        name: name.into(),
        unit: String::new(),
        points: (0..lines)
            .map(|k| (Some(start + 60 + k as i64 * 20), value(k)))
            .collect(),
        ..MetricSeries::default()
    };
    LogSource {
        location: format!("/root/log{i}.log"),
        metrics: vec![
            series("gen_throughput", &|k| 60.0 + (k % 7) as f64),
            series("running_reqs", &|k| 1.0 + (k % 3) as f64),
            series("accept_len", &|k| 2.0 + (k % 5) as f64 / 10.0),
            series("token_usage", &|k| 0.01 + (k % 4) as f64 / 100.0),
        ],
        ..LogSource::default()
    }
}

fn snapshot(launches: usize, lines: usize) -> Snapshot {
    let per_log = lines / launches.max(1);
    let last = launches - 1;
    Snapshot {
        collected_at: T0 + launches as i64 * DAY,
        histories: vec![HistoryFile {
            user: "root".into(),
            path: "/root/.bash_history".into(),
            entries: (0..launches)
                .map(|i| HistoryEntry {
                    index: i as u32,
                    time: Some(T0 + i as i64 * DAY),
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
                .trim_start_matches("nohup ")
                .split(' ')
                .map(String::from)
                .collect(),
            start_time: Some(T0 + last as i64 * DAY),
            role: ProcessRole::Launcher,
            engine: Some(Engine::Sglang),
            ..ProcessInfo::default()
        }],
        logs: (0..launches).map(|i| log(i, per_log)).collect(),
        ..Snapshot::default()
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn measure(launches: usize, lines: usize) {
    let s = snapshot(launches, lines);
    let runs = 5;
    let times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let analysis = analyze(black_box(&s));
            let diff = previous_launch_diff(&s, &analysis);
            black_box((analysis.runs.len(), diff.map(|d| d.verdict.is_some())));
            t.elapsed()
        })
        .collect();
    let m = median(times);
    let total_lines = lines * 4;
    println!(
        "launches {launches:>4}  log lines {lines:>7} ({total_lines:>7} points)  median {:>9.2?}  \
         {:>7.0} ns per point  {:>9.0} us per launch",
        m,
        m.as_nanos() as f64 / total_lines as f64,
        m.as_micros() as f64 / launches as f64
    );
}

fn main() {
    println!("analysis: analyze + previous_launch_diff (verdict), median of 5");
    println!("-- log lines grow, 20 launches");
    for lines in [10_000, 20_000, 40_000, 80_000] {
        measure(20, lines);
    }
    println!("-- launches grow, 20,000 log lines");
    for launches in [10, 20, 40, 80] {
        measure(launches, 20_000);
    }
}
