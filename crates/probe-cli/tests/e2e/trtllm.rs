//! End-to-end: TensorRT-LLM (issue 32, item 3). `trtllm-story`: TensorRT-LLM 1.1.0rc3's
//! `trtllm-serve meta-llama/Llama-3.1-8B-Instruct --backend pytorch --extra_llm_api_options FILE`,
//! hand-launched with nohup. Root's history writes `/root/trtllm/llm-api-bs128.yml` with a heredoc
//! (max_batch_size 128, print_iter_log on) and launches with it on 2026-11-16; on 2026-11-26 a copy
//! edited to max_batch_size 16 (`llm-api-bs16.yml`) is launched and runs now. A nightly benchmark
//! at concurrency 64 keeps its results in /root/bench; the iteration lines give the decode
//! throughput and the running requests of each run.

use probe_model::{Assessment, Conclusion};

use crate::util;

fn story() -> &'static util::Collected {
    util::collected("trtllm-story")
}

/// The verdict block of the human report (without the benchmark results' `measured` lines, which
/// the JSON test reads) and the candidate causes' table.
fn blocks(text: &str) -> String {
    let block = |from: &str| {
        let start = text
            .find(from)
            .unwrap_or_else(|| panic!("{from} in\n{text}"));
        let rest = &text[start..];
        let end = rest.find("\n\n").unwrap_or(rest.len());
        rest[..end]
            .lines()
            .filter(|l| !l.starts_with("  measured "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!("{}\n\n{}", block("Verdict"), block("  Candidate causes"))
}

fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            r"(after     mean [0-9.]+ \(n=40, [0-9.]+ \.\. [0-9.]+), [^)]*\)",
            "$1, [the live run's times])",
        ),
        (
            r"up from 20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{5} UTC, running now",
            "up from [now], running now",
        ),
        (r"pid:[0-9]+", "pid:[live]"),
    ]
}

/// The version line of each run, the resolved limits (`max_batch_size=128` then 16), the options
/// files read for both launches (the earlier one's file was last written before it started),
/// and the nightly benchmark results attributed to the runs.
#[test]
fn trtllm_versions_limits_option_files_and_benchmarks() {
    let (report, _, snapshot) = story();
    for r in &report.runs {
        assert_eq!(
            r.engine_version.version.as_deref(),
            Some("1.1.0rc3"),
            "{r:#?}"
        );
    }
    let earlier = report
        .runs
        .iter()
        .find(|r| r.launch == "history:/root/.bash_history#3")
        .expect("the earlier run");
    assert_eq!(earlier.limits.get("max_batch_size"), Some(&128.0));
    assert_eq!(earlier.limits.get("max_num_tokens"), Some(&8192.0));
    let live = report.runs.iter().find(|r| r.running).expect("a live run");
    assert_eq!(live.limits.get("max_batch_size"), Some(&16.0), "{live:#?}");
    let launch = report
        .earlier
        .iter()
        .find(|l| l.source.origin().label() == "history:/root/.bash_history#3")
        .expect("the earlier launch");
    assert_eq!(
        launch.options.get("max_batch_size").map(|o| &o.value),
        Some(&serde_json::json!(128)),
        "{:#?}",
        launch.options
    );
    assert!(
        launch
            .files
            .iter()
            .any(|f| f.path == "/root/trtllm/llm-api-bs128.yml"),
        "{:#?}",
        launch.files
    );
    let results: Vec<f64> = snapshot
        .benchmarks
        .iter()
        .filter_map(|b| b.measured.output_throughput)
        .collect();
    assert_eq!(results.len(), 16, "{:#?}", snapshot.benchmarks);
    assert!(
        results.iter().filter(|t| **t > 1800.0).count() == 10
            && results.iter().filter(|t| **t < 650.0).count() == 6,
        "{results:?}"
    );
}

/// 16 slots where ~50-64 requests ran at once: the cap binds, and it predicts the fall (x0.32
/// against x0.29 observed). The restore text is the earlier command, naming its options file and
/// the keys in it that differ.
#[test]
fn trtllm_a_smaller_batch_cap_explains_the_drop() {
    let (report, text, _) = story();
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    assert_eq!(diff.before, "trtllm (/root/.bash_history#3)");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::Cause, "{verdict:#?}");
    assert_eq!(verdict.cause.as_deref(), Some("max_batch_size"));
    let symptom = verdict.symptom.as_ref().expect("a symptom");
    assert_eq!(symptom.metric, "gen_throughput");
    let after = symptom.after.as_ref().expect("after");
    assert_eq!(after.count, 40);
    assert!((560.0..605.0).contains(&after.mean), "{after:?}");
    let cause = diff
        .changes
        .iter()
        .find(|c| c.key == "max_batch_size")
        .and_then(|c| c.verdict.as_ref())
        .expect("the cause's test");
    assert_eq!(cause.assessment, Assessment::Explains, "{cause:?}");
    assert_eq!(cause.test, "running-cap");
    assert_eq!(cause.numbers.get("cap_before"), Some(&128.0));
    assert_eq!(cause.numbers.get("cap_after"), Some(&16.0));
    // The start-up line's limit follows from the option: its consequence, not a cause of its own.
    let limit = diff
        .changes
        .iter()
        .find(|c| c.key == "limit:max_batch_size")
        .expect("the start-up limit's change");
    assert_eq!(limit.consequence_of, ["max_batch_size"], "{limit:#?}");
    let restore = verdict.restore.as_ref().expect("a restore text");
    assert!(
        restore
            .differing
            .iter()
            .any(|d| d == "max_batch_size: 128 (in /root/trtllm/llm-api-bs128.yml)"),
        "{restore:?}"
    );
    assert!(
        restore
            .launch_text
            .as_deref()
            .is_some_and(|t| t.contains("--extra_llm_api_options /root/trtllm/llm-api-bs128.yml")),
        "{restore:?}"
    );
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("trtllm_story_verdict", blocks(text));
    });
}
