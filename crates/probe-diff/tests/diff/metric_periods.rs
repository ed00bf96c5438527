//! Metrics by launch period: each point belongs to the run that was up when it was logged, and
//! the running launch is compared with the previous one on what each did.

use probe_diff::{analyze, previous_launch_diff};
use probe_model::{
    HistoryEntry, HistoryFile, LogOrigin, LogSource, MetricSeries, ProcessInfo, ProcessRole,
    Snapshot, StartupRecord,
};

const DAY: i64 = 86_400;
const NOW: i64 = 1_796_033_530;

fn series(name: &str, unit: &str, points: &[(i64, f64)]) -> MetricSeries {
    MetricSeries {
        name: name.into(),
        unit: unit.into(),
        points: points.iter().map(|(t, v)| (Some(*t), *v)).collect(),
        ..MetricSeries::default()
    }
}

const CMD: &str = "python3 -m sglang.launch_server --model-path Q --tp 2 --port 30000";

fn snapshot(previous_has_metrics: bool) -> Snapshot {
    let old_run = NOW - 10 * DAY;
    let previous_run = NOW - 3 * DAY;
    let mut throughput = vec![
        (old_run + 60, 1000.0),
        (old_run + 120, 1050.0),
        (NOW + 5, 430.0),
        (NOW + 10, 446.0),
    ];
    if previous_has_metrics {
        throughput.extend([(previous_run + 60, 700.0), (previous_run + 120, 720.0)]);
    }
    throughput.sort_by_key(|point| point.0);
    Snapshot {
        processes: vec![ProcessInfo {
            pid: 62,
            ppid: Some(1),
            argv: format!("{CMD} --mem-fraction-static 0.85")
                .split(' ')
                .map(String::from)
                .collect(),
            start_time: Some(NOW),
            role: ProcessRole::Launcher,
            engine: Some(probe_model::Engine::Sglang),
            ..ProcessInfo::default()
        }],
        histories: vec![HistoryFile {
            path: "/root/.bash_history".into(),
            entries: vec![
                HistoryEntry {
                    index: 3,
                    time: Some(old_run),
                    command: format!("{CMD} --mem-fraction-static 0.8"),
                },
                HistoryEntry {
                    index: 9,
                    time: Some(previous_run),
                    command: format!("{CMD} --mem-fraction-static 0.9"),
                },
            ],
            ..HistoryFile::default()
        }],
        logs: vec![LogSource {
            origin: LogOrigin::File,
            location: "/root/sglang.log".into(),
            startups: vec![StartupRecord {
                time: Some(NOW + 1),
                engine: probe_model::Engine::Sglang,
                text: "server_args=ServerArgs(model_path='Q', tp_size=2, port=30000, \
                       mem_fraction_static=0.85)"
                    .into(),
                version: None,
            }],
            metrics: vec![
                series("gen_throughput", "tok/s", &throughput),
                series(
                    "running_reqs",
                    "count",
                    &[(old_run + 60, 40.0), (NOW + 5, 9.0)],
                ),
            ],
            ..LogSource::default()
        }],
        ..Snapshot::default()
    }
}

#[test]
fn the_previous_launch_period_is_compared_with_the_running_one() {
    let snapshot = snapshot(true);
    let analysis = analyze(&snapshot);
    let diff = previous_launch_diff(&snapshot, &analysis).expect("a previous launch");
    assert!(diff.before.contains("bash_history#9"), "{}", diff.before);
    let throughput = diff
        .metrics
        .iter()
        .find(|m| m.name == "gen_throughput")
        .expect("gen_throughput compared");
    let (before, after) = (
        throughput.before.clone().unwrap_or_default(),
        throughput.after.clone().unwrap_or_default(),
    );
    // Only the points of each run: 700/720 while #9 ran, 430/446 now.
    assert_eq!((before.count, after.count), (2, 2));
    assert!((before.mean - 710.0).abs() < 1e-9, "{before:?}");
    assert!((after.mean - 438.0).abs() < 1e-9, "{after:?}");
    let change = throughput.change.unwrap_or_default();
    assert!((change - (438.0 / 710.0 - 1.0)).abs() < 1e-9);
    // The symptom apart from the configuration change that explains it (the cause).
    let keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
    assert!(!keys.contains(&"metric:gen_throughput"), "{keys:?}");
    assert!(keys.contains(&"mem-fraction-static"), "{keys:?}");
    let symptoms: Vec<&str> = diff.symptoms.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(symptoms, vec!["metric:gen_throughput"]);
    let metric = diff
        .symptoms
        .iter()
        .find(|c| c.key == "metric:gen_throughput")
        .unwrap_or_else(|| unreachable!());
    assert_eq!(metric.impact, probe_model::Impact::High);
    let note = diff.metrics_note.clone().unwrap_or_default();
    assert!(note.starts_with("means while history:"), "{note}");
    // running_reqs has no point in #9's run: not compared (listed with the side that has it).
    assert!(
        diff.metrics
            .iter()
            .filter(|m| m.name == "running_reqs")
            .all(|m| m.before.is_none() && m.after.is_some() && m.change.is_none())
    );
}

#[test]
fn without_metrics_of_its_own_the_previous_launch_is_stood_in_for_and_named() {
    let snapshot = snapshot(false);
    let analysis = analyze(&snapshot);
    let diff = previous_launch_diff(&snapshot, &analysis).expect("a previous launch");
    let throughput = diff
        .metrics
        .iter()
        .find(|m| m.name == "gen_throughput")
        .expect("gen_throughput compared");
    let before = throughput.before.clone().unwrap_or_default();
    assert!((before.mean - 1025.0).abs() < 1e-9, "{before:?}");
    let note = diff.metrics_note.clone().unwrap_or_default();
    assert!(note.contains("logged no metrics"), "{note}");
    assert!(note.contains("bash_history#3"), "{note}");
    assert!(diff.metrics.iter().any(|m| m.name == "running_reqs"));
}

#[test]
fn metrics_by_run_groups_points_by_the_run_that_logged_them() {
    let snapshot = snapshot(true);
    let analysis = analyze(&snapshot);
    let runs = probe_diff::metrics_by_run(&snapshot, &analysis, 3);
    let labels: Vec<(&str, bool)> = runs
        .iter()
        .map(|run| (run.launch.as_str(), run.running))
        .collect();
    // The running run first, then the earlier ones newest first (all three logged metrics).
    assert_eq!(labels.first(), Some(&("pid:62", true)), "{labels:?}");
    assert!(
        labels.get(1).is_some_and(|(l, r)| l.ends_with("#9") && !r),
        "{labels:?}"
    );
    assert!(
        labels.get(2).is_some_and(|(l, r)| l.ends_with("#3") && !r),
        "{labels:?}"
    );
    assert_eq!(runs.len(), 3);
    let mean = |run: usize, name: &str| {
        runs.get(run)
            .and_then(|r| r.metrics.iter().find(|m| m.name == name))
            .map(|m| (m.summary.mean, m.summary.count, m.source.clone()))
    };
    assert_eq!(
        mean(0, "gen_throughput"),
        Some((438.0, 2, "/root/sglang.log".into()))
    );
    assert_eq!(mean(1, "gen_throughput").map(|m| m.0), Some(710.0));
    assert_eq!(mean(2, "gen_throughput").map(|m| m.0), Some(1025.0));
    assert_eq!(mean(1, "running_reqs"), None);
    assert_eq!(mean(2, "running_reqs").map(|m| m.1), Some(1));
    // Each run ends where the next starts; the running one has no end.
    assert_eq!(runs.first().and_then(|r| r.end), None);
    assert_eq!(
        runs.get(1).and_then(|r| r.end),
        runs.first().and_then(|r| r.start)
    );
    assert_eq!(
        runs.get(2).and_then(|r| r.end),
        runs.get(1).and_then(|r| r.start)
    );
    // At most `earlier` earlier runs.
    assert_eq!(probe_diff::metrics_by_run(&snapshot, &analysis, 1).len(), 2);
}
