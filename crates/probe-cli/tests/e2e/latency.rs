//! End-to-end: latency as a symptom (issue 30). `vllm-ttft` serves vLLM 0.11.0 under
//! vllm.service; `systemctl edit vllm` wrote a drop-in whose ExecStart adds
//! `--max-num-batched-tokens 512` (the default was 8192). The operator's `vllm bench serve`
//! results before and after, at the same workload (4 req/s, 3000-token prompts), show time to
//! first token up almost five-fold while decode speed held. The verdict's symptom is TTFT with
//! those numbers, the cause the prefill budget, and the restore text names the drop-in.

use std::process::Output;
use std::sync::OnceLock;

use probe_model::{Assessment, Conclusion, HostReport, SymptomKind};
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
    eprintln!("TEXTDUMP\n{text}");
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

fn verdict_block(text: &str) -> String {
    let start = text.find("Verdict").expect("a verdict block");
    let rest = &text[start..];
    let end = rest.find("\n\n").unwrap_or(rest.len());
    rest[..end].to_string()
}
