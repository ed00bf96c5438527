//! End-to-end: llama.cpp (issue 32, item 3). `llamacpp-story`: `llama-server` build 7310 on one
//! L40S, launched by hand by root with `--log-prefix --log-timestamps` (its lines show only the
//! time since start, dated back from each file's mtime). The 2026-11-10 launch (`-c 16384 -np 2
//! -ngl 99`: 65 of 65 layers on the GPU) logged ~22 generated tokens a second per request for 17
//! days (`/root/llama-server.log.1`, moved aside); the launch running now (`-c 65536 -np 4 -ngl
//! 40`: 40 of 65) logs ~4.3. The lowered `-ngl` explains the drop, and the restore text is the
//! earlier command.

use probe_model::{Assessment, Conclusion};

use crate::util;

fn story() -> &'static util::Collected {
    util::collected("llamacpp-story")
}

/// What differs from run to run of the fixture: the live run's times, PID and samples (the
/// fake draws each task's rate at random within its range).
fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            r"fell [0-9.]+% \(([0-9.]+) -> [0-9.]+ tok/s\)",
            "fell [x]% ($1 -> [live] tok/s)",
        ),
        (
            r"after     mean [0-9.]+ \(n=[0-9]+, [^)]*\)",
            "after     mean [live] (n=[live], [the live run's samples])",
        ),
        (r"throughput x[0-9.]+", "throughput x[live]"),
        (
            r"20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{5,8} UTC(, running now)",
            "[now]$1",
        ),
        (r"pid:[0-9]+", "pid:[live]"),
    ]
}

/// Each run's start-up limits from its own log (the earlier one moved aside to `.1`), dated by
/// the elapsed clock within the minute the history says it started; the build line's version.
#[test]
fn llamacpp_runs_limits_and_version_per_run() {
    let (report, _, snapshot) = story();
    let earlier = report
        .runs
        .iter()
        .find(|r| r.start.at == Some(1_794_302_060))
        .unwrap_or_else(|| panic!("the 2026-11-10 09:14:20 run: {:#?}", report.runs));
    for (key, value) in [
        ("gpu_layers", 65.0),
        ("model_layers", 65.0),
        ("n_ctx", 16_384.0),
        ("n_seq_max", 2.0),
    ] {
        assert_eq!(earlier.limits.get(key), Some(&value), "{key}: {earlier:#?}");
    }
    let live = report.runs.iter().find(|r| r.running).expect("a live run");
    for (key, value) in [
        ("gpu_layers", 40.0),
        ("model_layers", 65.0),
        ("n_ctx", 65_536.0),
        ("n_seq_max", 4.0),
    ] {
        assert_eq!(live.limits.get(key), Some(&value), "{key}: {live:#?}");
    }
    for r in [earlier, live] {
        assert_eq!(r.engine_version.version.as_deref(), Some("7310"), "{r:#?}");
    }
    // The moved-aside log's lines show only `M.SS.mmm.uuu` since its start: dated back from its
    // mtime (2026-11-27 14:03:10; its last kept line was written 5 s before), its start-up
    // limits (logged 10 s after the launch) land within 20 s of them.
    let old = snapshot
        .logs
        .iter()
        .find(|l| l.location == "/root/llama-server.log.1")
        .expect("the earlier run's log");
    let at = old
        .limits
        .first()
        .and_then(|l| l.time)
        .expect("dated limits");
    assert!(
        (1_794_302_060..1_794_302_060 + 30).contains(&at),
        "{at}: {:?}",
        old.limits
    );
    let speed = old
        .metrics
        .iter()
        .find(|m| m.name == "request_gen_throughput")
        .expect("the earlier run's speed");
    assert!(
        speed
            .summary
            .first_time
            .is_some_and(|t| t < 1_794_302_060 + 3_600),
        "{:?}",
        speed.summary
    );
    assert!(
        speed.summary.last_time.is_some_and(|t| t <= 1_795_788_190),
        "{:?}",
        speed.summary
    );
}

/// The generation speed per request fell about five times; the lowered `-ngl` (65 -> 40 of 65
/// layers on the GPU, as each run logged it) explains it, with the arithmetic; the restore text
/// is the earlier command and names what differs.
#[test]
fn llamacpp_fewer_layers_on_the_gpu_explain_the_drop() {
    let (report, text, _) = story();
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::Cause, "{verdict:#?}");
    assert_eq!(verdict.cause.as_deref(), Some("n-gpu-layers"));
    let symptom = verdict.symptom.as_ref().expect("a symptom");
    assert_eq!(symptom.metric, "request_gen_throughput");
    let before = symptom.before.as_ref().expect("the earlier run's");
    let after = symptom.after.as_ref().expect("the live run's");
    assert!((21.0..23.0).contains(&before.mean), "{before:?}");
    assert!(before.count > 1000, "{before:?}");
    assert!((4.0..4.7).contains(&after.mean), "{after:?}");
    let layers = util::verdict_of(diff, "n-gpu-layers");
    assert_eq!(layers.assessment, Assessment::Explains, "{layers:?}");
    assert_eq!(layers.numbers.get("gpu_layers_before"), Some(&65.0));
    assert_eq!(layers.numbers.get("gpu_layers_after"), Some(&40.0));
    assert_eq!(layers.numbers.get("model_layers"), Some(&65.0));
    let restore = verdict.restore.as_ref().expect("a restore text");
    for d in ["-ngl 99", "-c 16384", "-np 2"] {
        assert!(restore.differing.iter().any(|x| x == d), "{d}: {restore:?}");
    }
    let command = restore.launch_text.as_deref().unwrap_or_default();
    assert!(
        command.starts_with("nohup /usr/local/bin/llama-server ")
            && command.contains(" -ngl 99 ")
            && command.contains(" -c 16384 "),
        "{restore:?}"
    );
    assert!(text.contains("n-gpu-layers 99 -> 40 explains it"), "{text}");
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("llamacpp_story_verdict", util::verdict_blocks(text));
    });
}
