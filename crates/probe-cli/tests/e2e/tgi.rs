//! End-to-end: Hugging Face TGI (issue 32, item 3). `tgi-story`: TGI 3.3.4's
//! `text-generation-launcher` under `tgi.service`; `systemctl edit tgi` wrote a drop-in whose
//! ExecStart= adds `--cuda-graphs 0`. The journal holds two runs of the unit's own launch, each
//! with its `Args { ... }` block (`cuda_graphs: None`, the default sizes 1-32 captured) and a
//! `Success` line per request at 19-21 ms a token; the live run (`cuda_graphs: Some([0])`)
//! takes 28-32 ms. CUDA graphs turned off explain the rise, with the added time per token; the
//! restore text names the drop-in's ExecStart= line.

use probe_model::{Assessment, Conclusion};

use crate::util;

fn story() -> &'static util::Collected {
    util::collected("tgi-story")
}

/// What differs from run to run of the fixture: the live run's times, PID and samples.
fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            r"rose [0-9.]+% \(([0-9.]+) -> [0-9.]+ ms\)",
            "rose [x]% ($1 -> [live] ms)",
        ),
        (
            r"-> [0-9.]+ ms \(\+[0-9.]+ ms a token, x[0-9.]+\)",
            "-> [live] ms (+[live] ms a token, x[live])",
        ),
        (
            r"after     mean [0-9.]+ \(n=[0-9]+, [^)]*\)",
            "after     mean [live] (n=[live], [the live run's samples])",
        ),
        (
            r"20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{5,8} UTC(, running now)",
            "[now]$1",
        ),
        (r"pid:[0-9]+", "pid:[live]"),
    ]
}

/// The journal's runs, each from its `Args { ... }` block (read over one journal entry a line)
/// to systemd's stop lines, with the KV budget the router resolved; the live run's block holds
/// the drop-in's `--cuda-graphs 0`.
#[test]
fn tgi_runs_from_the_launcher_args_of_each_start() {
    let (report, _, snapshot) = story();
    assert_eq!(report.runs.len(), 3, "{:#?}", report.runs);
    let starts: Vec<_> = report.runs[..2].iter().map(|r| r.start.at).collect();
    assert_eq!(starts, vec![Some(1_794_132_131), Some(1_794_982_360)]);
    let ends: Vec<_> = report.runs[..2]
        .iter()
        .map(|r| r.end.as_ref().and_then(|e| e.at))
        .collect();
    assert_eq!(ends, vec![Some(1_794_982_205), Some(1_795_707_603)]);
    assert!(report.runs[2].running, "{:#?}", report.runs[2]);
    for r in &report.runs {
        assert_eq!(
            r.limits.get("max_batch_total_tokens"),
            Some(&153_360.0),
            "{r:#?}"
        );
    }
    let journal = snapshot
        .logs
        .iter()
        .find(|l| l.location == "tgi.service")
        .expect("the unit's journal");
    let blocks: Vec<&str> = journal.startups.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(blocks.len(), 3, "{blocks:#?}");
    for b in &blocks[..2] {
        assert!(
            b.starts_with("Args { model_id: \"meta-llama/Llama-3.1-8B-Instruct\","),
            "{b}"
        );
        assert!(b.contains(" cuda_graphs: None,"), "{b}");
        assert!(b.ends_with(" }"), "{b}");
    }
    assert!(
        blocks[2].contains(" cuda_graphs: Some( [ 0, ], ),"),
        "{}",
        blocks[2]
    );
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["cuda-graphs"], "{:#?}", diff.changes);
}

/// The time per output token rose about half; CUDA graphs turned off explain it with the added
/// milliseconds a token; the restore text edits the drop-in's ExecStart= line.
#[test]
fn tgi_cuda_graphs_off_explain_the_slower_tokens() {
    let (report, text, _) = story();
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.conclusion, Conclusion::Cause, "{verdict:#?}");
    assert_eq!(verdict.cause.as_deref(), Some("cuda-graphs"));
    let symptom = verdict.symptom.as_ref().expect("a symptom");
    assert_eq!(symptom.metric, "request_tpot_ms");
    let graphs = util::verdict_of(diff, "cuda-graphs");
    assert_eq!(graphs.assessment, Assessment::Explains, "{graphs:?}");
    let num = |k: &str| graphs.numbers.get(k).copied().unwrap_or(f64::NAN);
    assert!((19.5..21.5).contains(&num("tpot_before_ms")), "{graphs:?}");
    assert!((28.0..32.5).contains(&num("tpot_after_ms")), "{graphs:?}");
    assert!(
        (7.0..13.0).contains(&num("added_ms_per_token")),
        "{graphs:?}"
    );
    let restore = verdict.restore.as_ref().expect("a restore text");
    assert_eq!(restore.differing, ["drop --cuda-graphs 0"], "{restore:?}");
    assert!(
        restore.steps.iter().any(
            |s| s.contains("/etc/systemd/system/tgi.service.d/override.conf")
                && s.contains("ExecStart=")
        ),
        "{:?}",
        restore.steps
    );
    assert!(
        text.contains("cuda-graphs unset -> [\"0\"] explains it"),
        "{text}"
    );
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("tgi_story_verdict", util::verdict_blocks(text));
    });
}

/// The router asked over the SSH connection (GET /info, /metrics, allow-listed): its version and
/// limits, and the time per token of its lifetime from `tgi_request_mean_time_per_token_duration`.
#[test]
fn tgi_router_answers_info_and_metrics() {
    let (report, _, _) = story();
    let server = report
        .servers
        .iter()
        .map(|s| &s.reading)
        .find(|r| r.engine == probe_model::Engine::Tgi)
        .expect("the TGI router asked");
    assert_eq!(
        server.status,
        probe_model::ServerStatus::Answered,
        "{server:#?}"
    );
    assert_eq!(server.version.as_deref(), Some("3.3.4"), "{server:#?}");
    assert_eq!(
        server.model.as_deref(),
        Some("meta-llama/Llama-3.1-8B-Instruct"),
        "{server:#?}"
    );
    let paths: Vec<&str> = server.requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/info", "/metrics"]);
    assert_eq!(
        server.args.get("max_concurrent_requests"),
        Some(&serde_json::json!(128)),
        "{:?}",
        server.args
    );
}
