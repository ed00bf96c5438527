//! End-to-end: latency as a symptom (issue 30). `vllm-ttft` serves vLLM 0.11.0 under
//! vllm.service; `systemctl edit vllm` wrote a drop-in whose ExecStart adds
//! `--max-num-batched-tokens 512` (the default was 8192). The operator's `vllm bench serve`
//! results before and after, at the same workload (4 req/s, 3000-token prompts), show time to
//! first token up almost five-fold while decode speed held. The verdict's symptom is TTFT with
//! those numbers, the cause the prefill budget, and the restore text names the drop-in. The
//! running launch lists the files that define it (the unit file, the drop-in, the
//! `EnvironmentFile=`); the flag and the start-up limit it set are one change, its earlier value
//! the default the earlier run's engine resolved; the restore text names the drop-in's line as
//! the least undo and what `systemctl revert` would also drop (the drop-in's
//! `TimeoutStartSec=`).

use std::process::Output;
use std::sync::OnceLock;

use probe_model::{Assessment, Conclusion, DefaultFrom, DefiningFileRole, HostReport, SymptomKind};
use probe_testkit::fixture::SharedFleet;

use crate::util;

struct Env {
    fleet: SharedFleet,
    dir: tempfile::TempDir,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| Env {
        fleet: util::fleet(&["vllm-ttft"]),
        dir: tempfile::tempdir().unwrap(),
    })
}

fn probe(args: &[&str]) -> Output {
    let env = env();
    let store = env.dir.path().join("store.db");
    util::probe_on(env.dir.path(), &env.fleet.ssh_config(), &store).run(args)
}

/// The report (JSON) and the human text of one collection each.
fn collected() -> &'static (HostReport, String) {
    static DONE: OnceLock<(HostReport, String)> = OnceLock::new();
    DONE.get_or_init(|| {
        let out = probe(&["host", "fx-vllm-ttft", "--format", "json", "--no-store"]);
        let report = util::one_host_report(&out);
        let text = probe(&["host", "fx-vllm-ttft", "--no-store"]);
        assert_eq!(text.status.code(), Some(0), "{}", util::text(&text.stderr));
        (report, util::text(&text.stdout))
    })
}

#[test]
fn a_ttft_regression_from_a_drop_in_is_the_symptom_and_the_budget_its_cause() {
    let (report, text) = collected();
    let diff = report
        .vs_previous_launch
        .as_ref()
        .expect("a previous launch");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    let symptom = verdict.symptom.as_ref().expect("a symptom");
    assert_eq!(symptom.kind, SymptomKind::Ttft, "{verdict:#?}");
    assert_eq!(symptom.metric, "ttft_p90 (bench)");
    let means = |s: &probe_model::Symptom| {
        (
            s.before.as_ref().map(|b| b.mean),
            s.after.as_ref().map(|a| a.mean),
        )
    };
    assert_eq!(means(symptom), (Some(402.6), Some(1903.5)));
    let itl = verdict
        .symptoms
        .iter()
        .find(|s| s.kind == SymptomKind::Itl)
        .expect("decode speed compared");
    assert_eq!(means(itl), (Some(21.0), Some(21.8)));
    assert_eq!(
        verdict.conclusion,
        Conclusion::Cause,
        "{}",
        verdict.headline
    );
    let cause = verdict.cause.as_deref().unwrap_or_default();
    assert!(
        cause.contains("max-num-batched-tokens") || cause.contains("max_num_batched_tokens"),
        "{cause}"
    );
    for change in &diff.changes {
        let Some(v) = change.verdict.as_ref() else {
            continue;
        };
        if change.key.starts_with("speculative") {
            assert_eq!(v.assessment, Assessment::RuledOut, "{}", v.reason);
        }
    }
    assert!(
        verdict
            .headline
            .contains("at the same request rate and prompt length (4 req/s, 3000 tokens)"),
        "{}",
        verdict.headline
    );
    assert!(
        verdict
            .load
            .benchmarks
            .iter()
            .any(|b| b.starts_with("earlier run: ")),
        "{:?}",
        verdict.load.benchmarks
    );
    assert!(
        verdict
            .load
            .benchmarks
            .iter()
            .any(|b| b.starts_with("this run: ")),
        "{:?}",
        verdict.load.benchmarks
    );
    let restore = verdict.restore.as_ref().expect("a restore text");
    let steps = restore.steps.join("\n");
    assert!(
        steps.contains("/etc/systemd/system/vllm.service.d/override.conf"),
        "{steps}"
    );
    // The benchmark results are each run's metrics too, in the report and the JSON.
    for (running, ttft) in [(false, 402.6), (true, 1903.5)] {
        let run = report
            .metrics_by_run
            .iter()
            .find(|r| r.running == running)
            .expect("both runs' metrics");
        let m = run
            .metrics
            .iter()
            .find(|m| m.name == "ttft_p90 (bench)")
            .unwrap_or_else(|| panic!("{:#?}", run.metrics));
        assert_eq!(m.summary.mean, ttft);
        assert!(
            m.source
                .starts_with("/home/vllm/bench/vllm-4.0qps-glm-4.5-air-"),
            "{}",
            m.source
        );
    }
    assert!(text.contains("ttft_p90 (bench)"), "{text}");
    let block = verdict_block(text);
    insta::with_settings!({filters => vec![
        (r"up from 20[0-9-]+ [0-9:]+ UTC, running now", "up from [now], running now"),
        (r"\.\. 20[0-9-]+ [0-9:]+ UTC\) while pid", ".. [at start]) while pid"),
        (r"\(n=1, 1903\.5 \.\. 1903\.5, 20[0-9-]+ [0-9:]+ UTC", "(n=1, 1903.5 .. 1903.5, [at start]"),
        (r"gen_throughput [0-9.]+ -> [0-9.]+ tok/s", "gen_throughput [both runs] tok/s"),
        (r"waiting_reqs ([0-9.]+) -> [0-9.]+ count", "waiting_reqs $1 -> [live] count"),
        (r"queued requests ([0-9.]+) -> [0-9.]+;", "queued requests $1 -> [live];"),
        (r"  same load   .*", "  same load   [live band]"),
        (r"this run: (.*) 20[0-9-]+ [0-9:]+ UTC", "this run: $1 [at start]"),
        (r"-20[0-9]{6}-[0-9]{6}\.json", "-[stamp].json"),
        (r"  load        .*", "  load        [both runs' load]"),
        (r"pid:[0-9]+", "pid:[live]"),
    ]}, {
        insta::assert_snapshot!("vllm_ttft_verdict", block);
    });
}

#[test]
fn the_launch_names_its_files_and_the_flag_and_its_limit_are_one_change() {
    let (report, text) = collected();
    let [running] = report.running.as_slice() else {
        panic!("one running launch: {:#?}", report.running);
    };
    let files: Vec<(DefiningFileRole, &str, Vec<&str>)> = running
        .files
        .iter()
        .map(|f| {
            (
                f.role,
                f.path.as_str(),
                f.sets.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        files,
        [
            (
                DefiningFileRole::Unit,
                "/etc/systemd/system/vllm.service",
                vec![
                    "User=",
                    "Group=",
                    "WorkingDirectory=",
                    "EnvironmentFile=",
                    "Environment=",
                    "ExecStart="
                ]
            ),
            (
                DefiningFileRole::DropIn,
                "/etc/systemd/system/vllm.service.d/override.conf",
                vec!["ExecStart="]
            ),
            (
                DefiningFileRole::EnvironmentFile,
                "/etc/default/vllm",
                vec!["HF_HUB_OFFLINE", "HF_TOKEN", "VLLM_WORKER_MULTIPROC_METHOD"]
            ),
        ]
    );
    let diff = report
        .vs_previous_launch
        .as_ref()
        .expect("a previous launch");
    let budget: Vec<&probe_model::Change> = diff
        .changes
        .iter()
        .filter(|c| c.key.contains("batched"))
        .collect();
    let [one] = budget.as_slice() else {
        panic!("one change for the budget: {budget:#?}");
    };
    assert_eq!(one.key, "max-num-batched-tokens");
    assert_eq!(one.startup_limit.as_deref(), Some("max_num_batched_tokens"));
    let default = one.unset_default.as_ref().expect("the earlier value");
    assert_eq!(
        (default.value.as_f64(), default.from),
        (Some(8192.0), DefaultFrom::Resolved)
    );
    assert_eq!(
        one.verdict.as_ref().map(|v| v.assessment),
        Some(Assessment::Explains)
    );
    let steps = diff
        .verdict
        .as_ref()
        .and_then(|v| v.restore.as_ref())
        .map(|r| r.steps.join("\n"))
        .unwrap_or_default();
    // The rollback plan's lines: the drop-in's ExecStart= line changed (never the unit
    // file's), saying what `systemctl revert` would also drop.
    assert!(
        steps.contains(
            "edit: drop-in /etc/systemd/system/vllm.service.d/override.conf: change `ExecStart="
        ) && steps.contains("drop --max-num-batched-tokens 512")
            && steps.contains("also TimeoutStartSec=1800")
            && steps.contains("restart: systemctl restart vllm.service"),
        "{steps}"
    );
    let launch = block(text, "Running now");
    let causes = block(text, "What changed vs the previous launch");
    insta::with_settings!({filters => vec![
        (r"after   20[0-9-]+ [0-9:]+ UTC \.\. now", "after   [start] .. now"),
        (r"pid:[0-9]+, 20[0-9-]+ [0-9:]+ UTC", "pid:[live], [start]"),
        (r"queued requests ([0-9.]+) -> [0-9.]+;", "queued requests $1 -> [live];"),
        (r"  (gen_throughput|kv_cache_usage|running_reqs|waiting_reqs|prompt_throughput) .*", "  $1 [both runs]"),
        (r"load: .*", "load: [both runs]"),
        (r"pid:[0-9]+", "pid:[live]"),
        (r"up from 20[0-9-]+ [0-9:]+ UTC, running now", "up from [now], running now"),
    ]}, {
        insta::assert_snapshot!("vllm_ttft_running_launch", launch);
        insta::assert_snapshot!("vllm_ttft_causes", causes);
    });
}

/// The block of the human report that starts with the line `title`.
fn block(text: &str, title: &str) -> String {
    let start = text
        .find(&format!("\n{title}"))
        .unwrap_or_else(|| panic!("{title} in {text}"));
    let rest = text.get(start + 1..).unwrap_or_default();
    let end = rest.find("\n\n").unwrap_or(rest.len());
    rest.get(..end).unwrap_or_default().to_string()
}

fn verdict_block(text: &str) -> String {
    let start = text.find("Verdict").expect("a verdict block");
    let rest = &text[start..];
    let end = rest.find("\n\n").unwrap_or(rest.len());
    rest[..end].to_string()
}
