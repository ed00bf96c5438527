//! End-to-end: a container whose runtime logs to the journal (issue 30). `docker-journald` has
//! one exited container, `vllm-old` (docker's journald log driver: no LogPath), whose ten days
//! of vLLM 0.10.2 output are only in the journal under CONTAINER_NAME. probe reads that journal
//! (`journalctl CONTAINER_NAME=vllm-old`), the run gets its start-up limits and its numbers, and
//! it ends where docker recorded the stop (State.FinishedAt), not "no stop recorded". Nothing
//! serves now, so no run is compared: the log's numbers are the report's metrics.

use std::sync::OnceLock;

use probe_model::{HostReport, SectionStatus, Snapshot};
use probe_testkit::fixture::SharedFleet;

use crate::util;

struct Env {
    fleet: SharedFleet,
    dir: tempfile::TempDir,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| Env {
        fleet: util::fleet(&["docker-journald"]),
        dir: tempfile::tempdir().unwrap(),
    })
}

fn collected() -> &'static (HostReport, Snapshot) {
    static DONE: OnceLock<(HostReport, Snapshot)> = OnceLock::new();
    DONE.get_or_init(|| {
        let env = env();
        util::host_report_and_snapshot(
            env.dir.path(),
            &env.fleet.ssh_config(),
            "fx-docker-journald",
        )
    })
}

#[test]
fn a_journald_containers_output_is_read_from_the_journal() {
    let (_, snap) = collected();
    let log = snap
        .logs
        .iter()
        .find(|l| l.location == "CONTAINER_NAME=vllm-old")
        .unwrap_or_else(|| {
            let all: Vec<_> = snap
                .logs
                .iter()
                .map(|l| (&l.location, l.status, &l.message))
                .collect();
            panic!("the container's journal was not read: {all:?}")
        });
    assert_eq!(log.status, SectionStatus::Ok, "{:?}", log.message);
    assert!(!log.startups.is_empty(), "its start-up block");
    let points: usize = log
        .metrics
        .iter()
        .map(|m| m.points.len())
        .max()
        .unwrap_or(0);
    assert!(points > 100, "{points} points of its stats lines");
    assert!(
        snap.logs.iter().all(|l| !l
            .message
            .as_deref()
            .unwrap_or("")
            .contains("kept in the journal")),
        "a note that the journal is not read"
    );
}

#[test]
fn its_run_has_its_numbers_and_ends_at_the_recorded_stop() {
    let (report, _) = collected();
    let run = report
        .runs
        .iter()
        .find(|r| r.launch == "container:vllm-old")
        .unwrap_or_else(|| panic!("no run of the container: {:#?}", report.runs));
    let end = run.end.as_ref().expect("an end");
    // 2026-11-12T09:00:00Z
    assert_eq!(end.at, Some(1_794_474_000), "{end:?}");
    assert!(end.evidence.contains("FinishedAt"), "{}", end.evidence);
    // Nothing runs now, so no run is compared; the log's own numbers are in the report.
    let numbers: Vec<_> = report
        .metrics
        .iter()
        .filter(|m| m.source == "CONTAINER_NAME=vllm-old")
        .collect();
    assert!(
        numbers
            .iter()
            .any(|m| m.name.contains("gen") && m.summary.count > 100),
        "{:#?}",
        report.metrics
    );
}
