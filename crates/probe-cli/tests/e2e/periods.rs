//! End-to-end: periods, not only runs (issue 30). `vllm-growth` has one vLLM run of three weeks,
//! never restarted, whose load grew on 2026-11-24 09:00 (a second client's batch jobs). With no
//! earlier run to compare with, the report finds the change point inside the run, compares the
//! period before it with the period since, and concludes that the load changed, not the server.
//! `--baseline` names the period instead; an invalid one is one usage line.

use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;

use probe_model::{Conclusion, HostReport, LaunchDiff, Lead, SnapshotDiff, VerdictConfidence};
use probe_testkit::fixture::SharedFleet;

use crate::util;

struct Env {
    fleet: SharedFleet,
    dir: tempfile::TempDir,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| Env {
        fleet: util::fleet(&["vllm-growth"]),
        dir: tempfile::tempdir().unwrap(),
    })
}

fn probe(args: &[&str]) -> Output {
    let env = env();
    let store: PathBuf = env.dir.path().join("growth.db");
    util::probe_on(env.dir.path(), &env.fleet.ssh_config(), &store).run(args)
}

const ALIAS: &str = "fx-vllm-growth";
/// 2026-11-12 09:00 UTC: the run's start; 2026-11-24 09:00 UTC: the load grew.
const RUN_START: i64 = 1_794_474_000;
const GROWTH: i64 = 1_795_510_800;
/// 2026-11-14 00:00 .. 2026-11-19 00:00 UTC: the period the tests name as good.
const NAMED: (i64, i64) = (1_794_614_400, 1_795_046_400);
/// 2026-11-29 00:00 UTC: the end of a baseline inside the heavier period.
const HEAVY_END: i64 = 1_795_910_400;

/// The report (JSON, checked against the schema) and the human text of one collection.
fn host(extra: &[&str]) -> (HostReport, String) {
    let mut args = vec!["host", ALIAS, "--format", "json"];
    args.extend_from_slice(extra);
    let out = probe(&args);
    util::assert_output_schema(&args, &out);
    let report = util::one_host_report(&out);
    let mut args = vec!["host", ALIAS, "--no-store"];
    args.extend_from_slice(extra);
    let text = probe(&args);
    assert_eq!(text.status.code(), Some(0), "{}", util::text(&text.stderr));
    (report, util::text(&text.stdout))
}

fn plain() -> &'static (HostReport, String) {
    static DONE: OnceLock<(HostReport, String)> = OnceLock::new();
    DONE.get_or_init(|| host(&[]))
}

/// From `heading` to the next blank line.
fn block(text: &str, heading: &str) -> String {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("{heading}:\n{text}"));
    let rest = &text[start..];
    let end = rest.find("\n\n").unwrap_or(rest.len());
    rest[..end].to_string()
}

fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"pid:[0-9]+", "pid:[live]"),
        (r"snapshot +fixture-vllm-growth-[0-9a-z-]+", "snapshot [id]"),
    ]
}

fn period_diff(report: &HostReport) -> &LaunchDiff {
    report.vs_period.as_ref().expect("a period comparison")
}

#[test]
fn one_long_run_whose_load_grew_is_split_at_the_change_point() {
    let (report, text) = plain();
    assert_eq!(report.runs.len(), 1, "{:#?}", report.runs);
    assert_eq!(
        report.runs[0].start.at,
        Some(RUN_START),
        "{:#?}",
        report.runs
    );
    assert!(report.vs_previous_launch.is_none(), "no earlier run");
    assert_eq!(report.lead, Some(Lead::Period));

    let diff = period_diff(report);
    let [before, after] = diff.periods.as_slice() else {
        panic!("two periods: {:#?}", diff.periods);
    };
    assert_eq!((before.start, before.end), (RUN_START, Some(GROWTH)));
    assert_eq!((after.start, after.end), (GROWTH, None));
    assert_eq!(before.run_start, Some(RUN_START));
    assert_eq!(after.run_start, Some(RUN_START));
    assert!(
        before.why.starts_with("before the change point in "),
        "{}",
        before.why
    );
    assert!(before.why.contains("at 2026-11-24 09:00"), "{}", before.why);
    assert!(
        after.why.starts_with("now: since the change point in "),
        "{}",
        after.why
    );
    assert!(
        diff.changes.is_empty(),
        "one run: no cause {:#?}",
        diff.changes
    );

    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::LoadChanged, "{verdict:#?}");
    assert_eq!(verdict.confidence, VerdictConfidence::High, "{verdict:#?}");
    assert_eq!(verdict.field, "vs_period.verdict");
    assert!(verdict.restore.is_none());
    assert!(
        verdict
            .headline
            .starts_with("the load changed, not the server"),
        "{}",
        verdict.headline
    );
    let symptom = verdict.symptom.as_ref().expect("a symptom");
    let (b, a) = (
        symptom.before.as_ref().unwrap(),
        symptom.after.as_ref().unwrap(),
    );
    assert!((600.0..800.0).contains(&b.mean), "{b:?}");
    assert!((1_200.0..1_600.0).contains(&a.mean), "{a:?}");
    let per = verdict
        .load
        .measures
        .iter()
        .find(|m| m.name == "throughput per request")
        .expect("per-request speed");
    assert!(per.after < per.before.map(|b| b * 0.85), "{per:?}");
    let (band_before, band_after) = verdict.load.band_throughput.expect("a same-load band");
    assert!(
        (band_after / band_before - 1.0).abs() < 0.05,
        "{band_before} {band_after}"
    );

    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("growth_verdict", block(text, "Verdict"));
        insta::assert_snapshot!("growth_periods", block(text, "Periods compared"));
    });
}

#[test]
fn baseline_picks_the_period_the_user_named() {
    let (report, text) = host(&["--baseline", "2026-11-14..2026-11-18"]);
    assert_eq!(report.lead, Some(Lead::Period));
    let diff = period_diff(&report);
    let [before, after] = diff.periods.as_slice() else {
        panic!("two periods: {:#?}", diff.periods);
    };
    assert_eq!((before.start, before.end), (NAMED.0, Some(NAMED.1)));
    assert_eq!(before.why, "named by --baseline 2026-11-14..2026-11-18");
    // Now is still the period since the change point: the baseline ended before it.
    assert_eq!((after.start, after.end), (GROWTH, None));
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::LoadChanged, "{verdict:#?}");
    let b = verdict
        .symptom
        .as_ref()
        .and_then(|s| s.before.as_ref())
        .unwrap();
    assert!(
        b.first_time
            .is_some_and(|t| t >= NAMED.0 && t < NAMED.0 + 3_600),
        "{b:?}"
    );
    assert!(
        b.last_time
            .is_some_and(|t| t < NAMED.1 && t >= NAMED.1 - 3_600),
        "{b:?}"
    );

    // A baseline inside the heavier period: now starts after it; like for like, no slowdown.
    let (same, _) = host(&["--baseline", "2026-11-26..2026-11-28"]);
    let diff = period_diff(&same);
    assert_eq!(diff.periods[1].start, HEAVY_END, "{:#?}", diff.periods);
    assert!(
        diff.periods[1]
            .why
            .starts_with("now: the running run after the baseline")
    );
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::NoSlowdown, "{verdict:#?}");
    assert_eq!(verdict.load.like_for_like, Some(true), "{verdict:#?}");

    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("growth_baseline_verdict", block(&text, "Verdict"));
        insta::assert_snapshot!("growth_baseline_periods", block(&text, "Periods compared"));
    });
}

#[test]
fn diff_with_a_baseline_compares_it_with_the_after_side_now() {
    let (report, _) = plain();
    let id = report.snapshot_id.clone();
    let out = probe(&[
        "diff",
        &id,
        &id,
        "--baseline",
        "2026-11-14..2026-11-18",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
    let diff: SnapshotDiff = serde_json::from_slice(&out.stdout).expect("a diff");
    let [before, after] = diff.periods.as_slice() else {
        panic!("two periods: {:#?}", diff.periods);
    };
    assert_eq!((before.start, before.end), (NAMED.0, Some(NAMED.1)));
    assert_eq!(before.why, "named by --baseline 2026-11-14..2026-11-18");
    assert_eq!(after.start, GROWTH, "{after:?}");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::LoadChanged, "{verdict:#?}");

    // Without one: both snapshots saw the one run, so its change point is found, as `probe
    // host` finds it: the before snapshot's period before it against the after snapshot's since.
    let out = probe(&["diff", &id, &id, "--format", "json"]);
    let diff: SnapshotDiff = serde_json::from_slice(&out.stdout).expect("a diff");
    let [before, after] = diff.periods.as_slice() else {
        panic!("two periods: {:#?}", diff.periods);
    };
    assert_eq!((before.start, before.end), (RUN_START, Some(GROWTH)));
    assert!(
        before.why.starts_with("before the change point in ")
            && before.why.ends_with(&format!("(in snapshot {id})")),
        "{before:?}"
    );
    assert_eq!(after.start, GROWTH, "{after:?}");
    assert!(
        after.why.starts_with("now: since the change point in "),
        "{after:?}"
    );
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::LoadChanged, "{verdict:#?}");
}

#[test]
fn an_invalid_baseline_is_one_usage_line() {
    // (arguments, what the line says)
    let cases: [(&[&str], &str); 3] = [
        (
            &["host", ALIAS, "--baseline", "last tuesday"],
            "--baseline \"last tuesday\"",
        ),
        (
            &["host", ALIAS, "--baseline", "2026-11-25..2026-11-20"],
            "ends before it starts",
        ),
        (
            &["diff", "a", "b", "--baseline", "7y"],
            "a count and a unit",
        ),
    ];
    for (args, says) in cases {
        let out = probe(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = util::text(&out.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: {stderr}");
        assert!(lines[0].contains(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}
