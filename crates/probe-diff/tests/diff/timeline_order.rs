//! `timeline_with`: ordering, confidence, running/previous marking and de-duplication.

use probe_diff::timeline_with;
use probe_model::{
    Confidence, Engine, FileText, HistoryEntry, HistoryFile, LaunchConfig, LaunchOption,
    LaunchSource, PackageEvent, ProcessInfo, PythonEnv, PythonPackage, Snapshot, SourceKind,
    Speculative, SystemdUnit, TimeBounds, TimelineEventKind,
};
use serde_json::{Value, json};

const HISTORY: &str = "/root/.bash_history";
const HISTORY_MTIME: i64 = 1_700_050_000;
const PROCESS_START: i64 = 1_700_040_000;

fn launch(
    kind: SourceKind,
    location: &str,
    running: bool,
    options: &[(&str, Value)],
) -> LaunchConfig {
    let mut config = LaunchConfig {
        engine: Engine::Sglang,
        model: Some(String::from("/models/DeepSeek-V3")),
        source: LaunchSource {
            kind,
            location: location.to_string(),
            running,
            ..LaunchSource::default()
        },
        ..LaunchConfig::default()
    };
    for (name, value) in options {
        config.options.insert(
            name.to_string(),
            LaunchOption {
                value: value.clone(),
                written: format!("--{name} {value}"),
            },
        );
    }
    config
}

fn current(kind: SourceKind, location: &str, running: bool) -> LaunchConfig {
    let mut config = launch(kind, location, running, &[("tp-size", json!(4))]);
    config.speculative = Some(Speculative {
        algorithm: Some(String::from("NEXTN")),
        num_steps: Some(json!(3)),
        ..Speculative::default()
    });
    config
}

fn old(kind: SourceKind, location: &str) -> LaunchConfig {
    launch(kind, location, false, &[("tp-size", json!(8))])
}

fn snapshot() -> Snapshot {
    let package = |name: &str, version: &str, at: i64| PythonPackage {
        name: name.to_string(),
        version: version.to_string(),
        installed_at: Some(at),
        direct_url: None,
        installer: None,
    };
    Snapshot {
        target: String::from("gpu7"),
        histories: vec![HistoryFile {
            user: String::from("root"),
            path: HISTORY.to_string(),
            mtime: Some(HISTORY_MTIME),
            entries: (0..20)
                .map(|index| HistoryEntry {
                    index,
                    time: None,
                    command: String::from("..."),
                })
                .collect(),
            ..HistoryFile::default()
        }],
        units: vec![SystemdUnit {
            name: String::from("sglang.service"),
            fragment: FileText {
                path: String::from("/etc/systemd/system/sglang.service"),
                mtime: Some(1_699_000_000),
                ..FileText::default()
            },
            ..SystemdUnit::default()
        }],
        processes: vec![ProcessInfo {
            pid: 200,
            start_time: Some(PROCESS_START),
            ..ProcessInfo::default()
        }],
        python_envs: vec![PythonEnv {
            interpreter: String::from("/opt/venv/bin/python3"),
            packages: vec![
                package("flashinfer-python", "0.4.1", 1_699_500_000),
                package("requests", "2.32.4", 1_700_030_000),
                package("sglang", "0.5.9", 1_700_030_060),
                package("torch", "2.8.0", 1_700_030_100),
            ],
            ..PythonEnv::default()
        }],
        package_events: vec![PackageEvent {
            time: Some(1_699_900_000),
            manager: String::from("apt"),
            action: String::from("upgrade"),
            package: String::from("nvidia-driver-570"),
            from_version: Some(String::from("570.86")),
            to_version: Some(String::from("570.124")),
            source: String::from("/var/log/apt/history.log"),
        }],
        ..Snapshot::default()
    }
}

fn launches() -> Vec<LaunchConfig> {
    let mut log = current(SourceKind::Log, "/var/log/sglang.log", true);
    log.source.time = TimeBounds {
        at: Some(PROCESS_START + 50),
        ..TimeBounds::default()
    };
    vec![
        // Listed out of order on purpose: the timeline sorts.
        log,
        current(SourceKind::Process, "pid:200", true),
        old(SourceKind::History, &format!("{HISTORY}#10")),
        old(SourceKind::History, &format!("{HISTORY}#11")),
        old(SourceKind::History, &format!("{HISTORY}#12")),
        current(SourceKind::History, &format!("{HISTORY}#14"), false),
        old(SourceKind::Unit, "unit:sglang.service"),
    ]
}

#[test]
fn events_are_ordered_oldest_first_with_confidence() {
    let timeline = timeline_with(&snapshot(), &launches());
    let described: Vec<(TimelineEventKind, Confidence, &str)> = timeline
        .events
        .iter()
        .map(|event| (event.kind, event.confidence, event.summary.as_str()))
        .collect();
    let kinds: Vec<TimelineEventKind> = described.iter().map(|(kind, _, _)| *kind).collect();
    use TimelineEventKind::*;
    assert_eq!(
        kinds,
        [
            UnitChange,
            Launch,
            PackageInstall,
            DriverInstall,
            PackageInstall,
            Launch,
            Launch,
            Launch,
            Launch
        ],
        "{described:#?}"
    );
    let confidences: Vec<Confidence> = described
        .iter()
        .map(|(_, confidence, _)| *confidence)
        .collect();
    use Confidence::*;
    assert_eq!(
        confidences,
        [
            Bounded, Bounded, Bounded, Exact, Bounded, Positional, Positional, Exact, Exact
        ]
    );
    assert!(
        described[1].2.contains("unit unit:sglang.service"),
        "{}",
        described[1].2
    );
    assert_eq!(
        described[2].2,
        "installed in /opt/venv/bin/python3: flashinfer-python 0.4.1"
    );
    assert_eq!(
        described[3].2,
        "apt upgrade nvidia-driver-570 (570.86 -> 570.124)"
    );
    // The engine and torch come before a library of no consequence.
    assert_eq!(
        described[4].2,
        "installed in /opt/venv/bin/python3: sglang 0.5.9, torch 2.8.0, requests 2.32.4"
    );
    assert!(
        described[7].2.contains("process pid:200"),
        "{}",
        described[7].2
    );
    assert!(
        described[8].2.contains("log /var/log/sglang.log"),
        "{}",
        described[8].2
    );
}

#[test]
fn repeated_history_commands_collapse_into_one_event() {
    let timeline = timeline_with(&snapshot(), &launches());
    let history: Vec<&str> = timeline
        .events
        .iter()
        .filter(|event| event.confidence == Confidence::Positional)
        .map(|event| event.summary.as_str())
        .collect();
    assert_eq!(history.len(), 2, "{history:#?}");
    assert!(
        history[0].ends_with("[run 3 times, entries #10-#12]"),
        "{}",
        history[0]
    );
    assert!(
        history[1].contains(&format!("{HISTORY}#14")),
        "{}",
        history[1]
    );
    // Only the kept launches are listed; every launch event points at one.
    assert_eq!(timeline.launches.len(), 5);
    for event in &timeline.events {
        if event.kind == TimelineEventKind::Launch {
            let index = event.launch.expect("launch events name their launch");
            assert!(index < timeline.launches.len());
        } else {
            assert!(event.launch.is_none());
        }
    }
}

#[test]
fn running_and_previous_are_marked() {
    let timeline = timeline_with(&snapshot(), &launches());
    let running: Vec<usize> = positions(&timeline.events, |event| event.running);
    let previous: Vec<usize> = positions(&timeline.events, |event| event.previous);
    assert_eq!(running, [7, 8]);
    // The last different configuration of the same server: the tp 8 history entries, not the
    // identical #14 right before the process, and not the older unit.
    assert_eq!(previous, [5]);
    let previous_launch = &timeline.launches[timeline.events[5].launch.unwrap_or(usize::MAX)];
    assert_eq!(previous_launch.options["tp-size"].value, json!(8));
}

#[test]
fn history_is_bounded_by_the_running_process_it_started() {
    let timeline = timeline_with(&snapshot(), &launches());
    let history_bounds: Vec<TimeBounds> = timeline
        .events
        .iter()
        .filter(|event| event.confidence == Confidence::Positional)
        .map(|event| event.time.clone())
        .collect();
    // Entries up to the one that started the running server happened before it started.
    for bounds in &history_bounds {
        assert_eq!(bounds.not_after, Some(PROCESS_START));
        assert_eq!(bounds.at, None);
    }
}

#[test]
fn history_without_a_running_match_is_bounded_by_mtime_only() {
    let launches = vec![
        old(SourceKind::History, &format!("{HISTORY}#3")),
        launch(
            SourceKind::History,
            &format!("{HISTORY}#4"),
            false,
            &[("tp-size", json!(2))],
        ),
        old(SourceKind::History, &format!("{HISTORY}#5")),
    ];
    let timeline = timeline_with(&snapshot(), &launches);
    let history: Vec<(u32, Option<i64>)> = timeline
        .events
        .iter()
        .filter(|event| event.kind == TimelineEventKind::Launch)
        .map(|event| {
            let launch = &timeline.launches[event.launch.unwrap_or(usize::MAX)];
            let position = launch
                .source
                .location
                .rsplit_once('#')
                .and_then(|(_, index)| index.parse().ok())
                .unwrap_or(u32::MAX);
            (position, event.time.not_after)
        })
        .collect();
    // Not consecutive repeats (#4 differs), so nothing collapses; order is by position.
    assert_eq!(
        history,
        [
            (3, Some(HISTORY_MTIME)),
            (4, Some(HISTORY_MTIME)),
            (5, Some(HISTORY_MTIME))
        ]
    );
    assert!(
        timeline
            .events
            .iter()
            .all(|event| !event.running && !event.previous)
    );
}

#[test]
fn empty_snapshot_gives_an_empty_timeline() {
    let timeline = timeline_with(&Snapshot::default(), &[]);
    assert!(timeline.events.is_empty());
    assert_eq!(timeline.schema_version, probe_model::SCHEMA_VERSION);
}

fn positions(
    events: &[probe_model::TimelineEvent],
    predicate: impl Fn(&probe_model::TimelineEvent) -> bool,
) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, event)| predicate(event))
        .map(|(position, _)| position)
        .collect()
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn any_launch() -> impl Strategy<Value = LaunchConfig> {
        (
            prop::sample::select(vec![
                SourceKind::History,
                SourceKind::Process,
                SourceKind::Unit,
                SourceKind::Log,
                SourceKind::Container,
            ]),
            prop_oneof![
                Just(format!("{HISTORY}#")),
                "/root/.bash_history#[0-9]{1,3}",
                "pid:[0-9]{1,4}",
                "unit:[a-z]{1,5}\\.service",
                "\\PC{0,12}",
            ],
            any::<bool>(),
            prop::option::of(0i64..2_000_000_000),
            prop::option::of(1i64..16),
        )
            .prop_map(|(kind, location, running, at, tp)| {
                let mut config = match tp {
                    Some(tp) => launch(kind, &location, running, &[("tp-size", json!(tp))]),
                    None => launch(kind, &location, running, &[]),
                };
                config.source.time.at = at;
                config
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn timeline_never_panics_and_is_ordered(launches in prop::collection::vec(any_launch(), 0..12)) {
            let timeline = timeline_with(&snapshot(), &launches);
            prop_assert!(timeline.launches.len() <= launches.len());
            let times: Vec<Option<i64>> = timeline
                .events
                .iter()
                .map(|event| event.time.at.or(event.time.not_after).or(event.time.not_before))
                .collect();
            // Untimed events first, then timed ones in ascending order.
            let first_timed = times.iter().position(Option::is_some).unwrap_or(times.len());
            prop_assert!(times[first_timed..].iter().all(Option::is_some));
            prop_assert!(times[first_timed..].windows(2).all(|pair| pair[0] <= pair[1]));
            for event in &timeline.events {
                if event.previous {
                    prop_assert!(!event.running);
                }
            }
        }
    }
}

#[test]
fn resolved_log_arguments_do_not_make_a_launch_different() {
    let logged = |tp: i64, at: i64| {
        let mut config = launch(
            SourceKind::Log,
            "/var/log/sglang.log",
            false,
            &[
                ("tp-size", json!(tp)),
                ("mem-fraction-static", json!(0.83)),
                ("chunked-prefill-size", json!(8192)),
            ],
        );
        config.source.time.at = Some(at);
        config
    };
    let mut running = launch(
        SourceKind::Process,
        "pid:200",
        true,
        &[("tp-size", json!(4))],
    );
    running.source.time.at = Some(PROCESS_START);
    let launches = vec![
        logged(8, PROCESS_START - 5000),
        logged(4, PROCESS_START - 1000),
        running,
    ];
    let timeline = timeline_with(&Snapshot::default(), &launches);
    let previous: Vec<usize> = positions(&timeline.events, |event| event.previous);
    // The start-up 1000 s earlier ran the same command line (its extra values are the engine's
    // own); the one before it ran tp 8.
    assert_eq!(previous, [0]);
    assert_eq!(positions(&timeline.events, |event| event.running), [2]);
}

/// A host clock off this machine's by more than five minutes: the events keep the host's times
/// and their order (the evidence), and each carries its time on the collecting machine's clock;
/// within five minutes nothing is corrected. `(host clock - collected_at, offset said)`.
#[test]
fn a_host_clock_far_off_gives_each_event_its_corrected_time() {
    let collected_at = 1_700_100_000;
    let three_years = 3 * 365 * 86_400;
    let cases: [(i64, Option<i64>); 6] = [
        (0, None),
        (300, None),
        (-300, None),
        (301, Some(301)),
        (three_years, Some(three_years)),
        (-collected_at, Some(-collected_at)),
    ];
    let plain = timeline_with(&snapshot(), &launches());
    assert_eq!(plain.host_clock_offset_s, None);
    for (skew, offset) in cases {
        let snapshot = Snapshot {
            collected_at,
            remote_clock: Some(collected_at + skew),
            ..snapshot()
        };
        let timeline = timeline_with(&snapshot, &launches());
        assert_eq!(timeline.host_clock_offset_s, offset, "skew {skew}");
        // The host's times, in the host's order, whatever its clock.
        let times: Vec<&TimeBounds> = timeline.events.iter().map(|e| &e.time).collect();
        let plain_times: Vec<&TimeBounds> = plain.events.iter().map(|e| &e.time).collect();
        assert_eq!(times, plain_times, "skew {skew}");
        for event in &timeline.events {
            match offset {
                None => assert_eq!(event.corrected_time, None, "skew {skew}"),
                Some(offset) => {
                    let shift = |t: Option<i64>| t.map(|t| t - offset);
                    let want = TimeBounds {
                        at: shift(event.time.at),
                        not_before: shift(event.time.not_before),
                        not_after: shift(event.time.not_after),
                    };
                    let want = (want != TimeBounds::default()).then_some(want);
                    assert_eq!(event.corrected_time, want, "skew {skew}: {}", event.summary);
                }
            }
        }
    }
    // The process start, exact on the host's clock, three years back on this machine's.
    let snapshot = Snapshot {
        collected_at,
        remote_clock: Some(collected_at + three_years),
        ..snapshot()
    };
    let timeline = timeline_with(&snapshot, &launches());
    let running = timeline.events.iter().find(|e| e.running).unwrap();
    assert!(running.time.at.is_some(), "{running:?}");
    assert_eq!(
        running.corrected_time.as_ref().and_then(|t| t.at),
        running.time.at.map(|at| at - three_years)
    );
}
