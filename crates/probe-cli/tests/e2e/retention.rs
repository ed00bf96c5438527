//! End-to-end: the whole history of a host's logs (issue 30). `vllm-weeks` has served for weeks:
//! its journal holds ~490,000 entries; the run with a different launch ended two weeks before
//! the one up now, and the newest 20,000 lines all belong to a later run of the launch up now.
//! `sglang-rotated` logs to a file logrotate compresses daily: the earlier run survives only in
//! `server.log.1` and `server.log.N.gz`. Read over the whole retention (thinned on the host), the
//! earlier run has its numbers and the verdict names the cause with them.

use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;

use probe_model::{Assessment, Conclusion, HostReport, Snapshot, VerdictConfidence};
use probe_testkit::fixture::SharedFleet;

use crate::util;

struct Env {
    fleet: SharedFleet,
    dir: tempfile::TempDir,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| Env {
        fleet: util::fleet(&["vllm-weeks", "sglang-rotated", "compose-archive"]),
        dir: tempfile::tempdir().unwrap(),
    })
}

fn probe(store: &str, args: &[&str]) -> Output {
    let env = env();
    let store: PathBuf = env.dir.path().join(store);
    util::probe_on(env.dir.path(), &env.fleet.ssh_config(), &store).run(args)
}

type Collected = (HostReport, String, Snapshot);

/// The report (JSON), the human text, and the snapshot stored by the same collection.
fn collect(alias: &str) -> Collected {
    let store = format!("{alias}.db");
    let out = probe(&store, &["host", alias, "--format", "json"]);
    let report = util::one_host_report(&out);
    let text = probe("text.db", &["host", alias, "--no-store"]);
    assert_eq!(text.status.code(), Some(0), "{}", util::text(&text.stderr));
    let export = probe(&store, &["snapshots", "export", &report.snapshot_id]);
    assert_eq!(
        export.status.code(),
        Some(0),
        "{}",
        util::text(&export.stderr)
    );
    let snapshot: Snapshot = serde_json::from_slice(&export.stdout).expect("a snapshot");
    (report, util::text(&text.stdout), snapshot)
}

fn collected() -> &'static Collected {
    static DONE: OnceLock<Collected> = OnceLock::new();
    DONE.get_or_init(|| collect("fx-vllm-weeks"))
}

fn rotated() -> &'static Collected {
    static DONE: OnceLock<Collected> = OnceLock::new();
    DONE.get_or_init(|| collect("fx-sglang-rotated"))
}

/// 2026-10-27 09:00:05 UTC, 2026-11-20 13:58:13 UTC: run A, as its journal lines say.
const RUN_A: (i64, i64) = (1_793_091_605, 1_795_183_093);

#[test]
fn the_journal_is_read_over_its_whole_retention() {
    let (_, _, snapshot) = collected();
    let journal = snapshot
        .logs
        .iter()
        .find(|l| l.location == "vllm.service")
        .expect("the unit's journal");
    let t = journal
        .thinning
        .as_ref()
        .expect("read through the host's thinning");
    assert!(t.lines_seen > 480_000, "{t:?}");
    assert!(!t.stopped_early && t.dropped_over_size == 0, "{t:?}");
    // What crossed the wire: a few MB for five weeks, not the 150 MB logged.
    assert!(journal.bytes_read < 16 << 20, "{}", journal.bytes_read);
    assert!(t.metric_lines_kept * 10 < t.metric_lines_seen, "{t:?}");
    assert!(t.first_time.is_some_and(|f| f < RUN_A.0 + 3_600), "{t:?}");
    // Both earlier runs start, stop and start-up lines, every one of them.
    let starts = journal
        .lifecycle
        .iter()
        .filter(|e| e.kind == probe_model::LifecycleKind::Started)
        .count();
    assert_eq!(starts, 2, "{:?}", journal.lifecycle);
    // Runs A and B, and the run up now (its output is in the unit's journal too).
    assert_eq!(journal.startups.len(), 3, "{:?}", journal.startups);
}

#[test]
fn a_run_weeks_old_is_compared_with_its_numbers_and_the_cause_named() {
    let (report, text, _) = collected();
    assert_eq!(report.runs.len(), 3, "{:#?}", report.runs);
    let a = &report.runs[0];
    assert_eq!(a.start.at, Some(RUN_A.0));
    assert_eq!(a.end.as_ref().and_then(|e| e.at), Some(RUN_A.1));

    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::Cause, "{verdict:#?}");
    assert_eq!(verdict.cause.as_deref(), Some("speculative.algorithm"));
    // High once the running run has logged enough to hold its load against the earlier one's;
    // medium while it has a few samples only (never more than its evidence).
    assert!(
        matches!(
            verdict.confidence,
            VerdictConfidence::High | VerdictConfidence::Medium
        ),
        "{verdict:#?}"
    );
    let symptom = verdict.symptom.as_ref().expect("a symptom");
    let before = symptom.before.as_ref().expect("the earlier run's numbers");
    let after = symptom.after.as_ref().expect("the running run's numbers");
    assert!((2_250.0..2_350.0).contains(&before.mean), "{before:?}");
    assert!((1_300.0..1_500.0).contains(&after.mean), "{after:?}");
    // Hundreds of samples spread over the whole run, three weeks before now.
    assert!(before.count > 500, "{before:?}");
    assert!(
        before.first_time.is_some_and(|t| t < RUN_A.0 + 3_600),
        "{before:?}"
    );
    assert!(
        before.last_time.is_some_and(|t| t > RUN_A.1 - 3_600),
        "{before:?}"
    );

    let spec = util::verdict_of(diff, "speculative.algorithm");
    assert_eq!(spec.assessment, Assessment::Explains, "{spec:?}");
    assert!(
        spec.reason.contains("each step yielded 2.4 tokens"),
        "{}",
        spec.reason
    );
    let restore = verdict.restore.as_ref().expect("a restore text");
    assert!(
        restore
            .differing
            .iter()
            .any(|d| d.contains("--speculative-config")),
        "{:?}",
        restore.differing
    );

    let block = verdict_block(text);
    insta::with_settings!({filters => vec![
        (r"after     mean [0-9.]+ \(n=[0-9]+, [0-9.]+ \.\. [0-9.]+, [^)]*\)", "after     mean [live run]"),
        (r"up from 20[0-9-]+ [0-9:]+ UTC, running now", "up from [now], running now"),
        (r"fell [0-9.]+% \(([0-9.]+) -> [0-9.]+ tok/s\)", "fell [%] ($1 -> [live] tok/s)"),
        (r"observed x[0-9.]+", "observed x[live]"),
        (r"confidence  (high|medium) \(.*\)", "confidence  [high or medium, by the running run's samples]"),
        (r"  load        .*", "  load        [both runs' load]"),
        (r"pid:[0-9]+", "pid:[live]"),
    ]}, {
        insta::assert_snapshot!("vllm_weeks_verdict", block);
    });
}

/// 2026-11-14 08:59:58 UTC, 2026-11-24 16:10:00 UTC: the earlier run of `sglang-rotated`, from
/// its history line to its last logged line.
const ROTATED_A: (i64, i64) = (1_794_646_798, 1_795_536_600);

#[test]
fn compressed_rotated_copies_are_read_and_hold_the_earlier_run() {
    let (report, text, snapshot) = rotated();
    let copies: Vec<_> = snapshot
        .logs
        .iter()
        .filter(|l| l.location.starts_with("/var/log/sglang/server.log."))
        .collect();
    // `.1` plain and `.2.gz` .. `.11.gz`, each read whole through the thinning.
    assert_eq!(
        copies.len(),
        11,
        "{:?}",
        copies.iter().map(|l| &l.location).collect::<Vec<_>>()
    );
    for copy in &copies {
        let t = copy.thinning.as_ref().expect("thinned");
        assert!(t.lines_seen > 10_000, "{}: {t:?}", copy.location);
        assert!(
            t.metric_lines_kept * 4 < t.metric_lines_seen,
            "{}: {t:?}",
            copy.location
        );
        assert_eq!(
            copy.status,
            probe_model::SectionStatus::Ok,
            "{:?}",
            copy.message
        );
    }
    let oldest = snapshot
        .logs
        .iter()
        .find(|l| l.location.ends_with("server.log.11.gz"))
        .expect("the oldest copy");
    assert_eq!(oldest.startups.len(), 1, "run A's server_args line");

    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::Cause, "{verdict:#?}");
    // The flag and the limit it set at start-up are one change, named by the flag.
    assert_eq!(verdict.cause.as_deref(), Some("max-running-requests"));
    let before = verdict
        .symptom
        .as_ref()
        .and_then(|s| s.before.as_ref())
        .expect("the earlier run's numbers");
    assert!((2_350.0..2_450.0).contains(&before.mean), "{before:?}");
    // Samples from its first day (only in server.log.11.gz) to its last (server.log.1).
    assert!(
        before.first_time.is_some_and(|t| t < ROTATED_A.0 + 3_600),
        "{before:?}"
    );
    assert!(
        before.last_time.is_some_and(|t| t > ROTATED_A.1 - 3_600),
        "{before:?}"
    );
    assert!(before.count > 1_000, "{before:?}");
    let cap = util::verdict_of(diff, "max-running-requests");
    assert_eq!(cap.assessment, Assessment::Explains, "{cap:?}");
    let restore = verdict.restore.as_ref().expect("a restore text");
    assert!(
        restore
            .differing
            .iter()
            .any(|d| d == "--max-running-requests 64"),
        "{:?}",
        restore.differing
    );
    insta::with_settings!({filters => vec![
        (r"after     mean [0-9.]+ \(n=[0-9]+, [0-9.]+ \.\. [0-9.]+, [^)]*\)", "after     mean [live run]"),
        (r"up from 20[0-9-]+ [0-9:]+ UTC, running now", "up from [now], running now"),
        (r"fell [0-9.]+% \(([0-9.]+) -> [0-9.]+ tok/s\)", "fell [%] ($1 -> [live] tok/s)"),
        (r"observed x[0-9.]+", "observed x[live]"),
        (r"queued on average after", "queued on average after"),
        (r"; [0-9.]+ queued on average", "; [live] queued on average"),
        (r"  load        .*", "  load        [both runs' load]"),
        (r"pid:[0-9]+", "pid:[live]"),
        (r"kill [0-9]+ && while kill -0 [0-9]+", "kill [live] && while kill -0 [live]"),
    ]}, {
        insta::assert_snapshot!("sglang_rotated_verdict", verdict_block(text));
    });
}

/// The verdict block of the human report: from `Verdict` to the blank line after it.
fn verdict_block(text: &str) -> String {
    let start = text.find("Verdict").expect("a verdict block");
    let rest = &text[start..];
    let end = rest.find("\n\n").unwrap_or(rest.len());
    rest[..end].to_string()
}

fn archived() -> &'static Collected {
    static DONE: OnceLock<Collected> = OnceLock::new();
    DONE.get_or_init(|| collect("fx-compose-archive"))
}

/// 2026-11-09 09:04:18 UTC: the old container's start, from its `vLLM API server version` line
/// in the first dated file; 2026-12-01 00:05:00 UTC: the cron job's last run before Compose
/// recreated the container.
const ARCHIVED: (i64, i64) = (1_794_215_058, 1_796_083_500);

/// `compose-archive`: Compose recreated the container; the old one's output is only in the
/// dated files root's cron job wrote. They are found from the cron line, read whole (thinned),
/// each saying why; the old run's start-up lines and speed come from them and the verdict
/// compares it with the live run.
#[test]
fn a_cron_jobs_dated_files_hold_the_recreated_containers_run() {
    let (report, text, snapshot) = archived();
    let dated: Vec<_> = snapshot
        .logs
        .iter()
        .filter(|l| l.location.starts_with("/var/log/llm-archive/vllm-"))
        .collect();
    assert_eq!(
        dated.len(),
        22,
        "{:?}",
        dated.iter().map(|l| &l.location).collect::<Vec<_>>()
    );
    // The script the cron line runs names the files (its own values in place), and the history
    // lines that read them say they matter.
    let why = "script:/usr/local/bin/llm-save-logs.sh line 8 writes docker logs of llm-vllm-1 to /var/log/llm-archive/vllm-$(date +%F).log (run by cron:/etc/cron.d/llm-logs line 5); read by 2 history lines, the newest root's /root/.bash_history entry 9: `grep -c 'Running: 1[0-9][0-9] reqs' /var/log/llm-archive/vllm-2026-11-2*.log`";
    for l in &dated {
        assert_eq!(l.found_by.as_deref(), Some(why), "{}", l.location);
        assert_eq!(l.status, probe_model::SectionStatus::Ok, "{:?}", l.message);
        let t = l
            .thinning
            .as_ref()
            .expect("read whole, thinned on the host");
        assert!(t.lines_seen > 1_000, "{}: {t:?}", l.location);
    }
    let first = dated
        .iter()
        .find(|l| l.location.ends_with("vllm-2026-11-10.log"))
        .expect("the first dated file");
    assert_eq!(
        first.startups.len(),
        1,
        "the old container's non-default args line"
    );
    assert!(
        first.startups[0].text.contains("'max_num_seqs': 128"),
        "{:?}",
        first.startups[0].text
    );
    // The report's JSON says which files were read and why.
    assert_eq!(report.found_logs.len(), 22, "{:#?}", report.found_logs);
    assert!(report.found_logs.iter().all(|f| f.found_by == why));
    assert_eq!(
        report.found_logs.iter().map(|f| f.startups).sum::<usize>(),
        1
    );

    // The runs compared: the old container's (from the dated files), the live one's.
    assert_eq!(report.runs.len(), 2, "{:#?}", report.runs);
    assert_eq!(report.runs[0].start.at, Some(ARCHIVED.0));
    assert_eq!(
        report.runs[0].launch,
        "log:/var/log/llm-archive/vllm-2026-11-10.log"
    );
    assert!(report.runs[1].running, "{:#?}", report.runs[1]);

    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::Cause, "{verdict:#?}");
    assert_eq!(verdict.cause.as_deref(), Some("max-num-seqs"));
    let symptom = verdict.symptom.as_ref().expect("a symptom");
    let before = symptom
        .before
        .as_ref()
        .expect("the old container's numbers");
    let after = symptom
        .after
        .as_ref()
        .expect("the live container's numbers");
    assert!((2_550.0..2_650.0).contains(&before.mean), "{before:?}");
    assert!((900.0..1_100.0).contains(&after.mean), "{after:?}");
    // Samples over the whole old run: from its first hour to the cron job's last run.
    assert!(before.count > 5_000, "{before:?}");
    assert!(
        before.first_time.is_some_and(|t| t < ARCHIVED.0 + 3_600),
        "{before:?}"
    );
    assert!(
        before.last_time.is_some_and(|t| t > ARCHIVED.1 - 3_600),
        "{before:?}"
    );
    let cap = util::verdict_of(diff, "max-num-seqs");
    assert_eq!(cap.assessment, Assessment::Explains, "{cap:?}");
    let restore = verdict.restore.as_ref().expect("a restore text");
    assert!(
        restore.differing.iter().any(|d| d == "--max-num-seqs 128"),
        "{:?}",
        restore.differing
    );

    let filters = vec![
        (
            r"after     mean [0-9.]+ \(n=[0-9]+, [0-9.]+ \.\. [0-9.]+, [^)]*\)",
            "after     mean [live run]",
        ),
        (
            r"up from 20[0-9-]+ [0-9:]+ UTC, running now",
            "up from [now], running now",
        ),
        (r"to 20[0-9-]+ [0-9:]+ UTC\)", "to [now])"),
        (
            r"fell [0-9.]+% \(([0-9.]+) -> [0-9.]+ tok/s\)",
            "fell [%] ($1 -> [live] tok/s)",
        ),
        (r"observed x[0-9.]+", "observed x[live]"),
        (r"; [0-9.]+ queued on average", "; [live] queued on average"),
        (r"  load        .*", "  load        [both runs' load]"),
        (
            r"confidence  (high|medium) \(.*\)",
            "confidence  [high or medium, by the running run's samples]",
        ),
        (r"pid:[0-9]+", "pid:[live]"),
        (r"<= 20[0-9-]+ [0-9:]+ UTC", "<= [now]"),
        (
            r"-> 20[0-9-]+ [0-9:]+ UTC -> running now",
            "-> [now] -> running now",
        ),
        (r"pid:\[live\]: 20[0-9-]+ [0-9:]+ UTC", "pid:[live]: [now]"),
    ];
    insta::with_settings!({filters => filters.clone()}, {
        insta::assert_snapshot!("compose_archive_verdict", verdict_block(text));
    });
    insta::with_settings!({filters => filters.clone()}, {
        insta::assert_snapshot!("compose_archive_runs", section_of(text, "Runs (oldest first)"));
    });
    insta::with_settings!({filters => filters}, {
        insta::assert_snapshot!("compose_archive_found", section_of(text, "Logs found where they were put"));
    });
}

/// One section of the human report: from its heading to the blank line after it.
fn section_of(text: &str, heading: &str) -> String {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading}: {text}"));
    let rest = &text[start..];
    let end = rest.find("\n\n").unwrap_or(rest.len());
    rest[..end].to_string()
}
