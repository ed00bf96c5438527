//! End-to-end: LMDeploy (issue 32, item 3). `lmdeploy-story`: LMDeploy 0.16.0's `lmdeploy serve
//! api_server --backend turbomind --tp 2`, hand-launched with nohup; root's history holds the
//! 2026-11-13 launch with `--cache-max-entry-count 0.8` (its log, `/root/lmdeploy-nov13.log`,
//! eleven nights of a nightly evaluation: ~92 running, KV cache ~81 %, ~2410 tok/s out) and the
//! one running now with 0.4 (half the KV cache, which fills: ~58 running, ~34 waiting, ~1580
//! tok/s). Each start logs its `updated backend_config=TurbomindEngineConfig(...)`; the speed is
//! the stats logger's `Avg thr (in/out)` lines.

use probe_model::{Assessment, Conclusion, SourceKind};

use crate::util;

fn story() -> &'static util::Collected {
    util::collected("lmdeploy-story")
}

/// What differs from run to run of the fixture: the live run's times and PID.
fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            r"(after     mean [0-9.]+ \(n=8, [0-9.]+ \.\. [0-9.]+), [^)]*\)",
            "$1, [the live run's times])",
        ),
        (
            r"up from 20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{5} UTC, running now",
            "up from [now], running now",
        ),
        (r"pid:[0-9]+", "pid:[live]"),
    ]
}

/// The earlier launch is the history line with the start-up record of its log merged in (the
/// engine config, read through the LMDeploy catalog: `cache_max_entry_count=0.8` is
/// `--cache-max-entry-count`); the live one is the process with its own record; both runs'
/// stats lines are theirs.
#[test]
fn lmdeploy_runs_engine_config_records_and_stats() {
    let (report, _, snapshot) = story();
    let earlier = snapshot
        .logs
        .iter()
        .find(|l| l.location == "/root/lmdeploy-nov13.log")
        .expect("the earlier run's log");
    assert_eq!(earlier.startups.len(), 1, "{:#?}", earlier.startups);
    assert!(
        earlier.startups[0]
            .text
            .starts_with("TurbomindEngineConfig(dtype='auto'"),
        "{}",
        earlier.startups[0].text
    );
    let record = probe_launch::from_startup_log(&earlier.startups[0], &Default::default())
        .expect("the record read into a launch");
    assert_eq!(
        record
            .options
            .get("cache-max-entry-count")
            .map(|o| &o.value),
        Some(&serde_json::json!(0.8))
    );
    assert_eq!(
        record.options.get("quant-policy").map(|o| &o.value),
        Some(&serde_json::json!(0))
    );
    assert_eq!(
        record
            .options
            .get("max-prefill-token-num")
            .map(|o| &o.value),
        Some(&serde_json::json!(8192)),
        "not a secret"
    );
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    assert_eq!(diff.before, "lmdeploy (/root/.bash_history#3)");
    let before = report
        .earlier
        .iter()
        .find(|l| l.source.origin().label() == "history:/root/.bash_history#3")
        .expect("the earlier launch");
    assert_eq!(before.source.kind, SourceKind::History, "{before:#?}");
    assert!(
        before
            .source
            .also_seen_in
            .iter()
            .any(|s| s == "log:/root/lmdeploy-nov13.log"),
        "{:?}",
        before.source.also_seen_in
    );
    let keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
    assert!(keys.contains(&"cache-max-entry-count"), "{keys:?}");
    for key in [
        "model",
        "backend",
        "log-level",
        "tp",
        "session-len",
        "quant-policy",
    ] {
        assert!(!keys.contains(&key), "{key}: {keys:?}");
    }
    for r in &report.runs {
        assert_eq!(
            r.engine_version.version.as_deref(),
            Some("0.16.0"),
            "{r:#?}"
        );
    }
}

/// Half the KV cache: the cache fills (99.8 % at most), requests queue, ~58 run at once instead
/// of ~92: the throughput fell about as much (x0.66 observed, x0.63 predicted). The restore text
/// is the earlier command with the one flag that differs.
#[test]
fn lmdeploy_a_smaller_kv_cache_explains_the_drop() {
    let (report, text, _) = story();
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::Cause, "{verdict:#?}");
    assert_eq!(verdict.cause.as_deref(), Some("cache-max-entry-count"));
    let symptom = verdict.symptom.as_ref().expect("a symptom");
    assert_eq!(symptom.metric, "gen_throughput");
    let (before, after) = (
        symptom.before.as_ref().expect("before"),
        symptom.after.as_ref().expect("after"),
    );
    assert!((2350.0..2470.0).contains(&before.mean), "{before:?}");
    assert_eq!(before.count, 264);
    assert!((1500.0..1670.0).contains(&after.mean), "{after:?}");
    assert_eq!(after.count, 8);
    let cause = diff
        .changes
        .iter()
        .find(|c| c.key == "cache-max-entry-count")
        .and_then(|c| c.verdict.as_ref())
        .expect("the cause's test");
    assert_eq!(cause.assessment, Assessment::Explains, "{cause:?}");
    assert_eq!(cause.test, probe_model::Test::KvCapacity);
    let n = |k: &str| cause.numbers.get(k).copied().unwrap_or(f64::NAN);
    assert_eq!(n("before"), 0.8);
    assert_eq!(n("after"), 0.4);
    assert!(n("usage_after_max") >= 0.965, "{cause:?}");
    assert!(n("usage_before_max") < 0.9, "{cause:?}");
    assert!((0.58..0.68).contains(&n("predicted_ratio")), "{cause:?}");
    let restore = verdict.restore.as_ref().expect("a restore text");
    assert_eq!(restore.differing, ["--cache-max-entry-count 0.8"]);
    let launch = restore.launch_text.as_deref().expect("the earlier command");
    assert!(
        launch.contains("lmdeploy serve api_server /models/Qwen2.5-14B-Instruct")
            && launch.contains("--cache-max-entry-count 0.8"),
        "{launch}"
    );
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("lmdeploy_story_verdict", util::verdict_blocks(text));
    });
}
