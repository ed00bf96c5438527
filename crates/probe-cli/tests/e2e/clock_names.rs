//! End-to-end: a host whose clock is three years ahead and whose locale is ISO-8859-1 (issue
//! 31). `clock-latin1` runs vLLM 0.11.0 by hand with its output in `/root/logs/café.log` (a
//! Latin-1 name), keeps an old unit file with a Latin-1 name, and root's history holds a
//! `#100000` stamp. probe says the clock's offset, reads the log under its exact name, lists
//! the unit (its section not "tampered"), keeps the bad stamp as a stamp, and every name that
//! is not UTF-8 comes out with U+FFFD, never as raw bytes.

use probe_model::SectionStatus;

use crate::util;

/// The report (JSON), the human text and the stored snapshot of one host.
fn collected() -> &'static util::Collected {
    util::collected("clock-latin1")
}

#[test]
fn a_clock_three_years_ahead_is_said_with_its_offset() {
    let (report, text, snap) = collected();
    let skew = snap.remote_clock.unwrap() - snap.collected_at;
    assert!(
        (94_694_400 - 120..=94_694_400 + 120).contains(&skew),
        "host clock minus ours: {skew} s"
    );
    let notice = report
        .notices
        .iter()
        .find(|n| n.contains("clock"))
        .unwrap_or_else(|| panic!("no clock notice: {:?}", report.notices));
    assert!(notice.contains("ahead of"), "{notice}");
    assert!(text.contains("clock is"), "{text}");
}

#[test]
fn a_stamp_no_clock_wrote_is_kept_as_a_stamp() {
    let (report, _, snap) = collected();
    let h = snap
        .histories
        .iter()
        .find(|h| h.path == "/root/.bash_history")
        .expect("root's history");
    assert_eq!(h.implausible_stamps, 1, "{h:#?}");
    assert!(
        report
            .notices
            .iter()
            .any(|n| n.contains("no plausible time")),
        "{:?}",
        report.notices
    );
}

#[test]
fn a_log_with_a_latin1_name_is_read() {
    let (report, _, snap) = collected();
    let log = snap
        .logs
        .iter()
        .find(|l| l.location == "/root/logs/caf\u{fffd}.log")
        .unwrap_or_else(|| {
            let all: Vec<_> = snap.logs.iter().map(|l| (&l.location, l.status)).collect();
            panic!("no record of the Latin-1 log: {all:?}")
        });
    assert_eq!(log.status, SectionStatus::Ok, "{:?}", log.message);
    assert!(
        log.metrics.iter().any(|m| !m.points.is_empty()),
        "its stats lines were not read"
    );
    assert!(!report.running.is_empty(), "the running launch");
}

#[test]
fn a_unit_with_a_latin1_name_is_listed_and_its_section_holds() {
    let (_, _, snap) = collected();
    let units = snap
        .sections
        .iter()
        .find(|s| s.name == "units")
        .expect("units");
    assert_eq!(units.status, SectionStatus::Ok, "{:?}", units.message);
    assert!(
        snap.units
            .iter()
            .any(|u| u.name == "llm-caf\u{fffd}.service"),
        "{:?}",
        snap.units.iter().map(|u| &u.name).collect::<Vec<_>>()
    );
}

/// The running launch names `--config vllm-config.yaml` (relative to its working directory):
/// round 2 reads the file, and its keys are the launch's options, each saying its file, the
/// file listed among what defines the launch.
#[test]
fn the_config_file_a_launch_names_is_read_into_it() {
    let (report, _, _) = collected();
    let l = report.running.first().expect("the running launch");
    let seqs = l
        .options
        .get("max-num-seqs")
        .expect("max-num-seqs from the file");
    assert_eq!(seqs.value, serde_json::json!(64));
    assert!(
        seqs.written.ends_with("(in /root/vllm-config.yaml)"),
        "{}",
        seqs.written
    );
    let f = l
        .files
        .iter()
        .find(|f| f.role == probe_model::DefiningFileRole::EngineConfig)
        .expect("the config file among the defining files");
    assert_eq!(f.path, "/root/vllm-config.yaml");
    assert!(
        l.warnings.iter().all(|w| !w.contains("not visible here")),
        "{:?}",
        l.warnings
    );
}
