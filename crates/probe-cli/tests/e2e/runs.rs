//! End-to-end: runs and "why it got slower" on the fixture hosts, over real SSH with the built
//! binary. `vllm-upgrade`: an engine upgrade under an unchanged unit; `sglang-hybrid`: a hand
//! launch that replaced a unit stopped days before, with an upgrade in between; `sglang-story`:
//! the project's story (speculative steps 3 -> 1, limits that never bound); `sglang-load`: the
//! same launch with more load; `redteam`: strings that attack the pages and terminals probe
//! renders.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use probe_model::{
    Assessment, Certainty, Conclusion, HostReport, SnapshotDiff, VerdictConfidence, VersionSource,
};
use probe_testkit::fixture::SharedFleet;

use crate::util;

struct Env {
    fleet: SharedFleet,
    dir: tempfile::TempDir,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| Env {
        fleet: util::fleet(&[
            "sglang-hybrid",
            "vllm-upgrade",
            "sglang-story",
            "sglang-load",
            "vllm-bench",
            "redteam",
        ]),
        dir: tempfile::tempdir().unwrap(),
    })
}

/// probe on the fleet with a store of its own for each command line (kept across calls).
fn probe(args: &[&str]) -> Output {
    let store: PathBuf = env()
        .dir
        .path()
        .join(format!("{}.db", args.join("_").replace('/', "_")));
    probe_with_store(&store, args)
}

/// `probe` on the fleet with the store at `store` (kept across calls).
fn probe_with_store(store: &std::path::Path, args: &[&str]) -> Output {
    let env = env();
    util::probe_on(env.dir.path(), &env.fleet.ssh_config(), store).run(args)
}

fn report(alias: &str) -> HostReport {
    util::one_host_report(&probe(&["host", alias, "--format", "json", "--no-store"]))
}

fn human(alias: &str) -> String {
    let out = probe(&["host", alias, "--no-store"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn engine_upgrade_under_an_unchanged_unit() {
    let report = report("fx-vllm-upgrade");
    // Per-run versions and periods: three journal runs on 0.10.1.1, each ended by the journal's
    // own stop line, then the running run on 0.11.0.
    let runs = &report.runs;
    assert_eq!(runs.len(), 4, "{runs:#?}");
    for run in runs.iter().take(3) {
        assert_eq!(
            run.engine_version.version.as_deref(),
            Some("0.10.1.1"),
            "{run:#?}"
        );
        assert_eq!(run.engine_version.source, VersionSource::StartupLine);
        let end = run.end.as_ref().expect("an end");
        assert_eq!(end.certainty, Certainty::Exact, "{run:#?}");
        assert!(
            end.evidence.starts_with("journal of vllm.service"),
            "{end:?}"
        );
        assert_eq!(
            run.limits.get("kv_cache_tokens"),
            Some(&1_154_496.0),
            "{run:#?}"
        );
    }
    // The first run ended an hour after it started, not at the next start a week later.
    let first = &runs[0];
    let length = first.end.as_ref().and_then(|e| e.at).unwrap() - first.start.at.unwrap();
    assert!((3_600..3_700).contains(&length), "{length}");
    // The third was killed for the upgrade.
    assert!(
        runs[2]
            .end
            .as_ref()
            .unwrap()
            .evidence
            .contains("code=killed"),
        "{:?}",
        runs[2].end
    );
    let live = &runs[3];
    assert!(live.running);
    assert_eq!(live.engine_version.version.as_deref(), Some("0.11.0"));
    assert_eq!(live.limits.get("kv_cache_tokens"), Some(&384_832.0));

    // A comparison is built although no flag changed, with the upgrade among the causes.
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
    assert!(keys.contains(&"engine_version"), "{keys:?}");
    assert!(keys.contains(&"limit:kv_cache_tokens"), "{keys:?}");
    // No flag change invented (a start-up log against the process's argv): besides the run's
    // version, limits and packages, only defaults the new version changed (set by neither).
    for change in &diff.changes {
        let default_changed = change
            .note
            .as_deref()
            .is_some_and(|n| n.starts_with("set by neither launch"));
        assert!(
            change.key == "engine_version"
                || change.key.starts_with("limit:")
                || change.key.starts_with("package:")
                || default_changed,
            "invented change {change:#?}"
        );
    }
    assert!(
        diff.changes
            .iter()
            .all(|c| c.key != "gpu-memory-utilization")
    );
    // Symptoms apart from causes, idle samples left out of the means.
    assert!(diff.changes.iter().all(|c| !c.key.starts_with("metric:")));
    let symptom = diff
        .symptoms
        .iter()
        .find(|c| c.key == "metric:gen_throughput")
        .expect("throughput fell");
    assert!(symptom.explanation.contains("fell"), "{symptom:?}");
    let throughput = diff
        .metrics
        .iter()
        .find(|m| m.name == "gen_throughput")
        .unwrap();
    let (before, after) = (
        throughput.before.clone().unwrap(),
        throughput.after.clone().unwrap(),
    );
    assert!(before.min >= 2_000.0, "idle lines in the mean: {before:?}");
    assert!(after.min >= 1_200.0, "idle lines in the mean: {after:?}");
    let load = diff.load_note.clone().unwrap_or_default();
    assert!(load.contains("running requests"), "{load}");
    assert!(load.contains("idle samples left out"), "{load}");
    // Nothing lost: the coloured journal lines were read (no blob placeholders).
    let journal = report.problems.iter().find(|p| {
        p.name.contains("journal") && p.message.as_deref().unwrap_or("").contains("blob")
    });
    assert!(journal.is_none(), "{:?}", report.problems);

    let text = human("fx-vllm-upgrade");
    for expected in [
        "Runs (oldest first)",
        "engine: vllm 0.10.1.1",
        "engine: vllm 0.11.0",
        "KV capacity 1154496 tokens",
        "KV capacity 384832 tokens",
        "Symptoms (run against run, idle samples left out):",
        "Candidate causes, tested against the symptoms (explains, consistent, ruled out):",
        "Serving packages",
        "GPU memory",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    let symptoms_at = text.find("Symptoms (").unwrap();
    let causes_at = text.find("Candidate causes").unwrap();
    assert!(symptoms_at < causes_at);
}

#[test]
fn hand_launch_after_a_stopped_unit_and_an_upgrade() {
    let report = report("fx-sglang-hybrid");
    let unit_runs: Vec<_> = report
        .runs
        .iter()
        .filter(|r| r.launch.contains("sglang-qwen.service"))
        .collect();
    assert!(!unit_runs.is_empty(), "{:#?}", report.runs);
    for run in &unit_runs {
        // Ran before sglang 0.5.9 was installed (2026-11-21): never credited with it, but
        // with the 0.5.8 root pinned on 2026-11-03 (`pip install 'sglang[all]==0.5.8'`).
        assert_eq!(
            run.engine_version.version.as_deref(),
            Some("0.5.8"),
            "{run:#?}"
        );
        assert_eq!(run.engine_version.source, VersionSource::HistoryPin);
        let note = run.engine_version.note.as_deref().unwrap_or("");
        assert!(
            note.starts_with(
                "pinned by pip install sglang==0.5.8 (/root/.bash_history#2 at 2026-11-03"
            ) && note.contains("older than 0.5.9"),
            "{note}"
        );
        let end = run.end.as_ref().expect("stopped");
        assert_eq!(end.certainty, Certainty::Exact, "{run:#?}");
        assert_eq!(run.limits.get("max_total_num_tokens"), Some(&1_286_144.0));
    }
    // The last unit run stopped days before the hand launch started.
    let last_unit = unit_runs.last().unwrap();
    let live = report
        .runs
        .iter()
        .find(|r| r.running)
        .expect("the hand launch runs");
    let stopped = last_unit.end.as_ref().and_then(|e| e.at).unwrap();
    assert!(
        live.start.at.unwrap() - stopped > 2 * 86_400,
        "{last_unit:#?} {live:#?}"
    );
    assert_eq!(live.engine_version.version.as_deref(), Some("0.5.9"));
    assert_eq!(live.limits.get("max_total_num_tokens"), Some(&428_714.0));
    assert!(
        live.packages.iter().any(|p| p.name == "sgl-kernel"),
        "{:?}",
        live.packages
    );
    let model = report.models.first().expect("model summary");
    assert_eq!(model.full_attention_layers, Some(12));
    assert_eq!(model.mtp_layers, Some(1));
    // Installs near the runs include the upgrade; the timeline shows the pip line.
    assert!(
        report
            .install_events
            .iter()
            .any(|e| e.summary.contains("sglang 0.5.9")),
        "{:#?}",
        report.install_events
    );
    let out = probe(&["timeline", "fx-sglang-hybrid"]);
    let timeline = String::from_utf8_lossy(&out.stdout);
    assert!(
        timeline.contains("pip install -U sglang==0.5.9"),
        "{timeline}"
    );
    assert!(
        timeline.contains("systemctl stop sglang-qwen"),
        "{timeline}"
    );
    // Start-up limits compared where both runs logged them.
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    assert!(diff.changes.iter().all(|c| !c.key.starts_with("metric:")));
    let text = human("fx-sglang-hybrid");
    assert!(
        text.contains("older than 0.5.9, installed 2026-11-21")
            && text.contains("pinned by pip install sglang==0.5.8"),
        "{text}"
    );
    assert!(text.contains("Model config"), "{text}");
}

#[test]
fn timeline_places_host_changes_by_their_timestamps() {
    let out = probe(&["timeline", "fx-vllm-upgrade"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let timeline = String::from_utf8_lossy(&out.stdout);
    // The history's host changes, oldest first, between the launches they came with.
    let order = [
        "vllm==0.10.1.1",
        "systemctl daemon-reload",
        "systemctl enable --now vllm",
        "docker pull vllm/vllm-openai:v0.11.0",
        "vllm==0.11.0",
        "systemctl restart vllm",
    ];
    let positions: Vec<Option<usize>> = order.iter().map(|n| timeline.find(n)).collect();
    assert!(
        positions.iter().all(Option::is_some),
        "{positions:?}\n{timeline}"
    );
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "{positions:?}\n{timeline}"
    );
    // Each is placed at its own timestamp (2026-11-15 14:02 UTC for the first install).
    let first = timeline
        .lines()
        .find(|l| l.contains("vllm==0.10.1.1"))
        .unwrap_or_default();
    assert!(first.contains("2026-11-15"), "{first}");
}

fn verdict_of<'a>(diff: &'a probe_model::LaunchDiff, key: &str) -> &'a probe_model::CauseVerdict {
    diff.changes
        .iter()
        .find(|c| c.key == key)
        .and_then(|c| c.verdict.as_ref())
        .unwrap_or_else(|| panic!("{key}: {:#?}", diff.changes))
}

#[test]
fn the_story_concludes_the_speculative_change_and_rules_out_the_limits() {
    let report = report("fx-sglang-story");
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::Cause, "{verdict:#?}");
    assert_eq!(verdict.cause.as_deref(), Some("speculative.num_steps"));
    assert_eq!(verdict.confidence, VerdictConfidence::High, "{verdict:#?}");
    assert_eq!(verdict.load.like_for_like, Some(true), "{:?}", verdict.load);
    let symptom = verdict.symptom.as_ref().unwrap();
    let (before, after) = (
        symptom.before.as_ref().unwrap(),
        symptom.after.as_ref().unwrap(),
    );
    assert!((68.0..72.0).contains(&before.mean), "{before:?}");
    assert!((35.0..39.0).contains(&after.mean), "{after:?}");
    assert_eq!(before.count, 120);
    // The mechanism first; the limits that never bound ruled out, with the numbers.
    assert!(
        !diff
            .changes
            .iter()
            .any(|c| c.key == "limit:max_running_requests"),
        "the flag and its limit are one row: {:#?}",
        diff.changes
    );
    assert_eq!(
        diff.changes[0].key, "speculative.num_steps",
        "{:#?}",
        diff.changes
    );
    let steps = verdict_of(diff, "speculative.num_steps");
    assert_eq!(steps.assessment, Assessment::Explains);
    assert!(steps.reason.contains("caps it at 2"), "{}", steps.reason);
    // `--max-running-requests` and the limit it set at start-up are one change.
    for key in ["max-running-requests", "limit:max_total_num_tokens"] {
        let v = verdict_of(diff, key);
        assert_eq!(v.assessment, Assessment::RuledOut, "{key}: {v:?}");
        assert!(v.reason.starts_with("never bound"), "{key}: {}", v.reason);
    }
    assert_eq!(
        verdict_of(diff, "max-running-requests")
            .numbers
            .get("running_before_max"),
        Some(&1.0)
    );
    // What restores it: the 2026-11-20 history line, the differing flags named.
    let restore = verdict.restore.as_ref().expect("a restore text");
    assert_eq!(restore.source, "history:/root/.bash_history#1");
    let text = restore.launch_text.as_deref().unwrap();
    assert!(
        text.contains("--speculative-num-steps 3") && text.contains("--max-running-requests 4"),
        "{text}"
    );
    for flag in ["--speculative-num-steps 3", "--max-running-requests 4"] {
        assert!(
            restore.differing.iter().any(|d| d == flag),
            "{:?}",
            restore.differing
        );
    }
    // Said first, before any table, in the terminal and in Markdown.
    let text = human("fx-sglang-story");
    let verdict_at = text.find("Verdict").unwrap();
    assert!(verdict_at < text.find("Running now").unwrap(), "{text}");
    assert!(
        text.contains("speculative.num_steps 3 -> 1 explains it"),
        "{text}"
    );
    assert!(
        text.contains("ruled out: max-running-requests 4 -> 1 (never bound)"),
        "{text}"
    );
    assert!(text.contains("confidence  high"), "{text}");
    let out = probe(&[
        "host",
        "fx-sglang-story",
        "--no-store",
        "--format",
        "markdown",
    ]);
    let markdown = String::from_utf8_lossy(&out.stdout);
    assert!(
        markdown.find("## Verdict").unwrap() < markdown.find("## Running now").unwrap(),
        "{markdown}"
    );
}

#[test]
fn more_load_on_an_unchanged_server_is_the_load_not_the_server() {
    let report = report("fx-sglang-load");
    let diff = report
        .vs_previous_launch
        .as_ref()
        .expect("a comparison of equal launches");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::LoadChanged, "{verdict:#?}");
    assert_eq!(verdict.load.like_for_like, Some(false));
    assert!(
        verdict
            .headline
            .starts_with("the load changed, not the server"),
        "{}",
        verdict.headline
    );
    let per_request = verdict
        .load
        .measures
        .iter()
        .find(|m| m.name == "throughput per request")
        .unwrap();
    assert!(
        per_request.after.unwrap() < per_request.before.unwrap() * 0.7,
        "{per_request:?}"
    );
    let symptom = verdict.symptom.as_ref().unwrap();
    assert!(symptom.after.as_ref().unwrap().mean > symptom.before.as_ref().unwrap().mean);
    // The band both runs share: one running request, as fast as before.
    let band = verdict.load.band.as_deref().expect("a band");
    assert!(band.starts_with("samples with 1 running request"), "{band}");
    let (b, a) = verdict.load.band_throughput.unwrap();
    assert!((a / b - 1.0).abs() < 0.1, "{b} {a}");
    assert_eq!(verdict.confidence, VerdictConfidence::High);
    assert!(
        diff.changes
            .iter()
            .filter_map(|c| c.verdict.as_ref())
            .all(|v| v.assessment == Assessment::RuledOut)
    );
}

#[test]
fn diff_rollback_is_a_checklist() {
    let out = probe(&[
        "diff",
        "fx-sglang-load",
        "fx-sglang-story",
        "--rollback",
        "--format",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // As JSON, `--rollback` is the typed plan: a process started by hand, stopped first.
    let plan: probe_model::RollbackPlan = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        matches!(
            plan.launcher,
            probe_model::Launcher::Process { pid: Some(_) }
        ),
        "{plan:#?}"
    );
    assert!(
        matches!(
            plan.steps.first().map(|s| &s.action),
            Some(probe_model::RollbackAction::Stop { .. })
        ),
        "{plan:#?}"
    );
    // The checklist: the diff's `rollback`, the plan's text.
    let out = probe(&[
        "diff",
        "fx-sglang-load",
        "fx-sglang-story",
        "--format",
        "json",
    ]);
    let diff: SnapshotDiff = serde_json::from_slice(&out.stdout).unwrap();
    let steps = diff.rollback.clone();
    for want in [
        "flag: restore --speculative-num-steps 3",
        "flag: restore --speculative-num-draft-tokens 4",
        "flag: drop --max-running-requests 1",
    ] {
        assert!(steps.iter().any(|s| s == want), "{want}: {steps:#?}");
    }
    let launch = steps
        .iter()
        .find(|s| s.starts_with("launch: "))
        .expect("the launch");
    assert!(launch.contains("--speculative-num-steps 3"), "{launch}");
    // Started by hand: the running one is stopped first (nothing else stops it, and the
    // earlier one needs its port), then the earlier command runs in the background with its
    // log; the plan ends with what to check, where probe runs.
    let at = |prefix: &str| {
        steps
            .iter()
            .position(|s| s.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {steps:#?}"))
    };
    assert!(
        at("stop: kill ") < at("launch: nohup sh -c 'cd /root && "),
        "{steps:#?}"
    );
    assert!(
        at("launch: ")
            < at("verify where probe runs: probe diff fixture-sglang-load fixture-sglang-story")
    );
    let out = probe(&["diff", "fx-sglang-load", "fx-sglang-story"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.find("Verdict").unwrap() < text.find("Changes, most likely").unwrap(),
        "{text}"
    );
    let verdict = diff.verdict.expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::Cause, "{verdict:#?}");
}

/// `vllm-bench`: the vllm-upgrade host with the operator's `vllm bench serve` result of
/// 2026-11-20 16:50 in `/home/vllm/bench`. The snapshot holds it (read as `vllm`, dated by its
/// own `date`, workload and latencies), the files that are no results are left out, and the
/// timeline places it inside the 11-20 run of vLLM 0.10.1.1, which it measured.
#[test]
fn a_benchmark_result_is_attributed_to_the_run_it_measured() {
    let env = env();
    let store = env.dir.path().join("bench.db");
    let run = |args: &[&str]| {
        let out = probe_with_store(&store, args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    run(&["host", "fx-vllm-bench", "--format", "json"]);
    let file = env.dir.path().join("bench-snapshot.json");
    run(&[
        "snapshots",
        "export",
        "fx-vllm-bench@latest",
        "-o",
        file.to_str().unwrap(),
    ]);
    let snap: probe_model::Snapshot =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(snap.benchmarks.len(), 1, "{:#?}", snap.benchmarks);
    let b = &snap.benchmarks[0];
    assert_eq!(
        b.file,
        "/home/vllm/bench/vllm-infqps-concurrency8-glm-4.5-air-20261120-165000.json"
    );
    assert_eq!(b.tool, probe_model::BenchmarkTool::VllmBenchServe);
    assert_eq!(b.owner.as_deref(), Some("vllm"));
    // 2026-11-20 16:50:00 UTC, from the result's own `date`.
    assert_eq!(b.date, Some(1_795_193_400));
    assert_eq!(b.date_source, probe_model::BenchmarkDateSource::Content);
    assert_eq!(b.workload.max_concurrency, Some(8.0));
    assert_eq!(b.workload.input_len, Some(1024.0));
    assert_eq!(b.workload.output_len, Some(256.0));
    assert_eq!(b.measured.output_throughput, Some(2485.4));
    assert_eq!(b.measured.ttft_ms.p50, Some(131.9));
    let section = snap
        .sections
        .iter()
        .find(|s| s.name == "benchmarks")
        .unwrap();
    assert_eq!(
        section.status,
        probe_model::SectionStatus::Ok,
        "{section:?}"
    );

    let out = run(&["timeline", file.to_str().unwrap(), "--format", "json"]);
    let timeline: probe_model::Timeline = serde_json::from_slice(&out.stdout).unwrap();
    let event = timeline
        .events
        .iter()
        .find(|e| e.kind == probe_model::TimelineEventKind::Benchmark)
        .unwrap_or_else(|| panic!("{:#?}", timeline.events));
    assert_eq!(event.time.at, Some(1_795_193_400));
    assert_eq!(event.benchmark, Some(0));
    assert!(
        event
            .summary
            .contains("2485.4 output tok/s at concurrency 8"),
        "{}",
        event.summary
    );
    // The 11-20 run (its start-up line 16:31:12 to its Stopped line 17:31:21 UTC) measured it,
    // not the live one.
    let analysis = probe_diff::analyze(&snap);
    let attributed = probe_diff::attribute_benchmarks(&snap.benchmarks, &analysis.runs);
    let run_index = attributed[0]
        .run
        .unwrap_or_else(|| panic!("{:?}", attributed[0]));
    let measured = &analysis.runs[run_index];
    assert_eq!(measured.start.at, Some(1_795_192_272), "{measured:#?}");
    assert!(!measured.running);
    assert_eq!(measured.engine_version.version.as_deref(), Some("0.10.1.1"));
    assert_eq!(
        event.measured_run.as_deref(),
        Some(measured.launch.as_str())
    );
}

/// The benchmark of the earlier run stands beside the verdict's load comparison.
#[test]
fn the_verdict_names_the_benchmark_of_the_run_it_compares() {
    let report = report("fx-vllm-bench");
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    let lines = &verdict.load.benchmarks;
    // It measured the run of 2026-11-20, not the 11-24 run compared: named by its start.
    assert!(
        lines.iter().any(|l| l.starts_with(
            "the run from 2026-11-20 16:31 UTC (not the one compared): benchmark (vllm bench serve)"
        )),
        "{lines:#?}\n{:?}",
        diff.metrics_note
    );
}

/// Headless Chromium as `.ci/run` installs it: no sandbox (root), no network of its own, a
/// throw-away profile.
fn chromium(args: &[&str]) -> Output {
    let _busy = util::busy();
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|err| panic!("chromium: {err} (.ci/run installs Debian's chromium)"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The page loads with no console error or blocked resource, and its DOM as the browser
/// built it.
fn rendered_dom(page: &std::path::Path) -> String {
    let url = format!("file://{}", page.display());
    let out = chromium(&["--dump-dom", &url]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for needle in ["CONSOLE", "Refused to", "Uncaught"] {
        assert!(!stderr.contains(needle), "{needle}: {stderr}");
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Screenshots at a desktop and a phone width, kept under target/ as artefacts.
fn screenshots(page: &std::path::Path, name: &str) {
    let url = format!("file://{}", page.display());
    for width in [1280, 390] {
        let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{width}.png"));
        chromium(&[
            &format!("--screenshot={}", shot.display()),
            &format!("--window-size={width},2400"),
            &url,
        ]);
        let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(size > 20_000, "{}: {size} bytes", shot.display());
    }
}

#[test]
fn html_pages_render_in_a_real_browser_and_hostile_strings_stay_text() {
    let env = env();
    let artefacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let page = artefacts.join("sglang-hybrid.html");
    let out = probe(&[
        "host",
        "fx-sglang-hybrid",
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.len() < 2 << 20, "{} bytes", html.len());
    let dom = rendered_dom(&page);
    for needle in [
        "probe report:",
        "class=\"timeline\"",
        "class=\"run running\"",
        "mark mark-launch",
        "Launches side by side",
        "id=\"probe-data\"",
        "id=\"verdict\"",
        "the load changed, not the server",
    ] {
        assert!(dom.contains(needle), "missing {needle}");
    }
    // The verdict comes first, before the timeline.
    assert!(dom.find("id=\"verdict\"").unwrap() < dom.find("class=\"timeline\"").unwrap());
    screenshots(&page, "sglang-hybrid");

    // A snapshot file whose strings are attacks: they appear as text, never as markup.
    let store = env.dir.path().join("html-red-team.db");
    let run = |args: &[&str]| probe_with_store(&store, args);
    let out = run(&["snapshots", "export", "fx-sglang-hybrid@latest"]);
    let before = if out.status.success() {
        out.stdout
    } else {
        assert!(run(&["host", "fx-sglang-hybrid"]).status.success());
        run(&["snapshots", "export", "fx-sglang-hybrid@latest"]).stdout
    };
    let mut snapshot: serde_json::Value = serde_json::from_slice(&before).unwrap();
    let payloads = [
        "<script>document.title='owned'</script>",
        "<img src=x onerror=\"document.title='owned'\">",
        "<a href=\"javascript:alert(1)\">click</a>",
        "<style>body{background:url(http://127.0.0.1:9/x)}</style>",
        "gpu\u{202e}lam\u{2066}",
    ];
    snapshot["host"]["hostname"] = serde_json::Value::from(payloads.join(" "));
    snapshot["id"] = serde_json::Value::from("red-team");
    if let Some(process) = snapshot["processes"].get_mut(0) {
        process["argv"]
            .as_array_mut()
            .unwrap()
            .extend(payloads.iter().map(|p| serde_json::Value::from(*p)));
    }
    let before_path = artefacts.join("red-team-before.json");
    let after_path = artefacts.join("red-team-after.json");
    std::fs::write(&before_path, &before).unwrap();
    std::fs::write(&after_path, serde_json::to_vec(&snapshot).unwrap()).unwrap();
    let hostile = artefacts.join("red-team.html");
    for (args, name) in [
        (
            vec![
                "diff",
                before_path.to_str().unwrap(),
                after_path.to_str().unwrap(),
            ],
            "diff",
        ),
        (vec!["timeline", after_path.to_str().unwrap()], "timeline"),
    ] {
        let mut args = args.clone();
        args.extend(["--format", "html", "-o", hostile.to_str().unwrap()]);
        let out = run(&args);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dom = rendered_dom(&hostile);
        assert!(!dom.contains("owned</title>"), "{name}: a payload ran");
        assert!(!dom.contains("<img"), "{name}");
        assert!(!dom.contains("<a href=\"javascript:"), "{name}");
        assert!(!dom.contains("<style>body{background:url"), "{name}");
        assert!(!dom.contains('\u{202e}'), "{name}");
        if name == "diff" {
            assert!(
                dom.contains("&lt;script&gt;"),
                "{name}: the payload is not shown as text"
            );
        }
    }
}

/// What a page built by the browser must never hold when the host's strings are attacks: a
/// payload that ran (it retitles the page), markup made of them, or a raw bidi control.
fn assert_inert(dom: &str, name: &str) {
    assert!(!dom.contains("owned</title>"), "{name}: a payload ran");
    for markup in [
        "<img",
        "<svg onload",
        "<svg/onload",
        "<a href=\"javascript:",
        "<style>body{background:url",
        "<script>document",
    ] {
        assert!(!dom.contains(markup), "{name}: {markup} became markup");
    }
    for control in ['\u{202e}', '\u{2066}', '\u{1b}'] {
        assert!(!dom.contains(control), "{name}: raw {control:?}");
    }
}

/// The red-team host: its hostname, a served model name, history lines, a log line and a model
/// path are markup, and a name holds bidi controls. Collected over SSH like any host, every one
/// is text on the host page, the fleet page, in Markdown and in the terminal.
#[test]
fn a_red_team_host_is_text_on_every_page() {
    let artefacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let page = artefacts.join("redteam.html");
    let out = probe(&[
        "host",
        "fx-redteam",
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = rendered_dom(&page);
    assert_inert(&dom, "host page");
    // The payloads were collected and are shown, as text.
    for shown in [
        "&lt;script&gt;document.title='owned'&lt;/script&gt;",
        "onerror=",
        "&lt;svg/onload=document.title=",
        "class=\"run running\"",
    ] {
        assert!(dom.contains(shown), "host page: {shown} is not shown");
    }
    screenshots(&page, "redteam");

    let markdown = probe(&["host", "fx-redteam", "--format", "markdown", "--no-store"]);
    let markdown = String::from_utf8_lossy(&markdown.stdout);
    assert!(markdown.contains("document.title"), "{markdown}");
    // Markdown escapes markup with backslashes (`\<script\>`), which CommonMark shows as text.
    for markup in ["<script>", "<img", "<svg", "<a href=\"javascript:"] {
        for (at, _) in markdown.match_indices(markup) {
            assert!(
                markdown[..at].ends_with('\\'),
                "markdown: {markup} is raw\n{markdown}"
            );
        }
    }
    let text = probe(&["host", "fx-redteam", "--no-store"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("document.title"), "{text}");
    assert!(
        !text.contains('\u{202e}') && !text.contains('\u{1b}'),
        "{text}"
    );

    // The fleet page of an audit of it.
    let dir = tempfile::tempdir().unwrap();
    let inventory = dir.path().join("fleet.toml");
    std::fs::write(
        &inventory,
        "[hosts.redteam]\naddress = \"fx-redteam\"\ntags = [\"red team\"]\n",
    )
    .unwrap();
    let store = dir.path().join("audit.db");
    let audit = |args: &[&str]| probe_with_store(&store, args);
    let out = audit(&["audit", "--inventory", inventory.to_str().unwrap()]);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fleet_page = artefacts.join("redteam-fleet.html");
    let out = audit(&[
        "audit",
        "report",
        "--format",
        "html",
        "-o",
        fleet_page.to_str().unwrap(),
    ]);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = rendered_dom(&fleet_page);
    assert_inert(&dom, "fleet page");
    assert!(dom.contains("redteam"), "fleet page: the host is missing");
}
