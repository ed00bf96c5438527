//! Each kind of verdict on inputs whose answer is known.

use probe_model::{
    Assessment, Category, Change, Conclusion, Impact, MetricComparison, MetricSummary,
    VerdictConfidence,
};
use serde_json::{Value, json};

use super::{Band, Evidence, judge};

fn summary(mean: f64, max: f64, count: u64) -> MetricSummary {
    MetricSummary {
        count,
        mean,
        min: mean.min(max),
        max,
        ..MetricSummary::default()
    }
}

/// (name, before mean, before max, after mean, after max), 20 samples a side.
fn metric(name: &str, b: (f64, f64), a: (f64, f64)) -> MetricComparison {
    MetricComparison {
        name: name.to_string(),
        unit: String::from("x"),
        before: Some(summary(b.0, b.1, 20)),
        after: Some(summary(a.0, a.1, 20)),
        change: Some(a.0 / b.0 - 1.0),
    }
}

fn cause(key: &str, category: Category, impact: Impact, b: Value, a: Value) -> Change {
    Change {
        key: key.to_string(),
        category,
        impact,
        before: Some(b),
        after: Some(a),
        explanation: format!("{key} changed"),
        ..Change::default()
    }
}

/// The project's story: num_steps 3 -> 1 caps the accept length at 2 (2.81 -> 1.74), 70 -> 37
/// tok/s, one running request in both runs, KV usage 1-2 %.
fn story() -> (Vec<Change>, Vec<MetricComparison>) {
    let mut steps = cause(
        "speculative.num_steps",
        Category::SpeculativeDecoding,
        Impact::Medium,
        json!(3),
        json!(1),
    );
    steps.mechanism = Some(String::from(
        "with EAGLE/NEXTN chains and topk 1 the accept length is at most num_steps + 1",
    ));
    let changes = vec![
        cause(
            "limit:max_running_requests",
            Category::BatchingScheduling,
            Impact::High,
            json!(4),
            json!(1),
        ),
        cause(
            "limit:max_total_num_tokens",
            Category::MemoryKvCache,
            Impact::High,
            json!(61440),
            json!(19456),
        ),
        steps,
        cause(
            "package:flashinfer-python",
            Category::EngineVersions,
            Impact::Medium,
            json!("0.5.2"),
            json!("0.5.3"),
        ),
        cause(
            "attention-backend",
            Category::KernelsBackends,
            Impact::Medium,
            json!("fa3"),
            json!("flashinfer"),
        ),
    ];
    let metrics = vec![
        metric("gen_throughput", (70.0, 74.0), (37.0, 40.0)),
        metric("accept_len", (2.81, 2.95), (1.74, 1.8)),
        metric("running_reqs", (1.0, 1.0), (1.0, 1.0)),
        metric("queue_reqs", (0.0, 0.0), (0.0, 0.0)),
        metric("token_usage", (0.01, 0.02), (0.02, 0.02)),
    ];
    (changes, metrics)
}

fn evidence(metrics: &[MetricComparison]) -> Evidence<'_> {
    Evidence {
        metrics,
        capacity: (Some(61_440.0), Some(19_456.0)),
        field: String::from("vs_previous_launch.verdict"),
        ..Evidence::default()
    }
}

fn verdict_of<'a>(changes: &'a [Change], key: &str) -> &'a probe_model::CauseVerdict {
    changes
        .iter()
        .find(|c| c.key == key)
        .and_then(|c| c.verdict.as_ref())
        .unwrap_or_else(|| panic!("{key}: {changes:#?}"))
}

#[test]
fn the_story_the_mechanism_first_limits_that_never_bound_ruled_out() {
    let (mut changes, metrics) = story();
    let verdict = judge(&mut changes, &evidence(&metrics));
    assert_eq!(verdict.conclusion, Conclusion::Cause);
    assert_eq!(verdict.cause.as_deref(), Some("speculative.num_steps"));
    assert_eq!(changes[0].key, "speculative.num_steps", "{changes:#?}");
    // (key, assessment, reason contains)
    let cases = [
        (
            "speculative.num_steps",
            Assessment::Explains,
            "accept length",
        ),
        (
            "limit:max_running_requests",
            Assessment::RuledOut,
            "never bound: the earlier run peaked at 1 running requests, within the new cap of 1",
        ),
        (
            "limit:max_total_num_tokens",
            Assessment::RuledOut,
            "never bound: KV usage peaked at 2% before and 2% after (at most 1229 of 61440 tokens before",
        ),
        (
            "package:flashinfer-python",
            Assessment::Consistent,
            "not needed",
        ),
        (
            "attention-backend",
            Assessment::Consistent,
            "no logged number",
        ),
    ];
    for (key, assessment, reason) in cases {
        let v = verdict_of(&changes, key);
        assert_eq!(v.assessment, assessment, "{key}: {v:?}");
        assert!(v.reason.contains(reason), "{key}: {}", v.reason);
    }
    let caps = verdict_of(&changes, "limit:max_running_requests");
    assert_eq!(caps.numbers.get("running_before_max"), Some(&1.0));
    assert_eq!(caps.numbers.get("cap_after"), Some(&1.0));
    assert_eq!(verdict.load.like_for_like, Some(true));
    assert_eq!(verdict.confidence, VerdictConfidence::High);
    assert!(
        verdict
            .headline
            .starts_with("gen_throughput fell 47.14% (70 -> 37 x)"),
        "{}",
        verdict.headline
    );
    assert!(
        verdict
            .ruled_out
            .contains("limit:max_running_requests 4 -> 1 (never bound"),
        "{}",
        verdict.ruled_out
    );
    assert_eq!(
        (
            verdict.explains,
            verdict.consistent,
            verdict.ruled_out_count
        ),
        (1, 2, 2)
    );
}

#[test]
fn the_load_changed_not_the_server() {
    let metrics = vec![
        metric("gen_throughput", (70.0, 72.0), (120.0, 130.0)),
        metric("running_reqs", (1.0, 1.0), (4.0, 4.0)),
        metric("queue_reqs", (0.0, 0.0), (0.0, 0.0)),
    ];
    let mut ev = evidence(&metrics);
    ev.bands = vec![Band {
        running: 1,
        before: vec![70.0; 10],
        after: vec![68.0; 4],
    }];
    let mut changes: Vec<Change> = Vec::new();
    let verdict = judge(&mut changes, &ev);
    assert_eq!(verdict.conclusion, Conclusion::LoadChanged, "{verdict:#?}");
    assert_eq!(verdict.load.like_for_like, Some(false));
    assert_eq!(verdict.confidence, VerdictConfidence::High);
    assert!(
        verdict.headline.starts_with(
            "the load changed, not the server: x4 as many requests run at once (1 -> 4), so \
             per-request speed went 70 -> 30 tok/s while the aggregate rose 70 -> 120 x"
        ),
        "{}",
        verdict.headline
    );
    assert!(
        verdict
            .headline
            .contains("samples with 1 running request: 10 before, 4 after")
    );
}

#[test]
fn no_slowdown_rules_every_cause_out() {
    let metrics = vec![metric("gen_throughput", (70.0, 72.0), (69.0, 71.0))];
    let mut changes = vec![cause(
        "engine_version",
        Category::EngineVersions,
        Impact::High,
        json!("0.5.8"),
        json!("0.5.9"),
    )];
    let verdict = judge(&mut changes, &evidence(&metrics));
    assert_eq!(verdict.conclusion, Conclusion::NoSlowdown);
    let v = verdict_of(&changes, "engine_version");
    assert_eq!(v.assessment, Assessment::RuledOut);
    assert!(
        v.reason
            .starts_with("throughput did not fall (70 -> 69 tok/s)"),
        "{}",
        v.reason
    );
}

#[test]
fn a_version_is_consistent_when_nothing_explains_and_ruled_out_when_runs_around_it_held() {
    let metrics = vec![
        metric("gen_throughput", (1000.0, 1100.0), (600.0, 700.0)),
        metric("running_reqs", (30.0, 40.0), (31.0, 40.0)),
    ];
    let version = || {
        cause(
            "engine_version",
            Category::EngineVersions,
            Impact::High,
            json!("0.10.2"),
            json!("0.11.0"),
        )
    };
    let mut changes = vec![version()];
    let verdict = judge(&mut changes, &evidence(&metrics));
    assert_eq!(verdict.conclusion, Conclusion::Unexplained);
    assert_eq!(verdict.confidence, VerdictConfidence::Low);
    let v = verdict_of(&changes, "engine_version");
    assert_eq!(v.assessment, Assessment::Consistent);
    assert!(!v.missing.is_empty());

    let mut changes = vec![version()];
    let mut ev = evidence(&metrics);
    ev.held_across = vec![String::from("engine_version")];
    let verdict = judge(&mut changes, &ev);
    assert_eq!(
        verdict_of(&changes, "engine_version").assessment,
        Assessment::RuledOut
    );
    assert_eq!(verdict.conclusion, Conclusion::Unexplained);
}

#[test]
fn a_cap_that_binds_explains() {
    // 32 running requests before; the cap fell to 8; the runs sit at the cap with a queue.
    let metrics = vec![
        metric("gen_throughput", (1000.0, 1100.0), (260.0, 300.0)),
        metric("running_reqs", (32.0, 40.0), (8.0, 8.0)),
        metric("queue_reqs", (0.0, 0.0), (24.0, 30.0)),
    ];
    let mut changes = vec![cause(
        "limit:max_running_requests",
        Category::BatchingScheduling,
        Impact::High,
        json!(64),
        json!(8),
    )];
    let verdict = judge(&mut changes, &evidence(&metrics));
    let v = verdict_of(&changes, "limit:max_running_requests");
    assert_eq!(v.assessment, Assessment::Explains, "{v:?}");
    assert_eq!(v.numbers.get("predicted_ratio"), Some(&0.25));
    assert_eq!(verdict.conclusion, Conclusion::Cause);
    // The load differs (the cap is what changed it): medium, not high.
    assert_eq!(verdict.confidence, VerdictConfidence::Medium);
}

#[test]
fn a_full_cache_explains_and_accept_length_that_held_rules_speculation_out() {
    let metrics = vec![
        metric("gen_throughput", (1000.0, 1100.0), (520.0, 600.0)),
        metric("running_reqs", (40.0, 48.0), (20.0, 24.0)),
        metric("kv_cache_usage", (0.6, 0.7), (0.97, 0.99)),
        metric("waiting_reqs", (0.0, 0.0), (12.0, 20.0)),
        metric("accept_len", (2.9, 3.1), (2.85, 3.0)),
    ];
    let mut changes = vec![
        cause(
            "gpu-memory-utilization",
            Category::MemoryKvCache,
            Impact::High,
            json!(0.9),
            json!(0.6),
        ),
        cause(
            "speculative.num_draft_tokens",
            Category::SpeculativeDecoding,
            Impact::Medium,
            json!(4),
            json!(5),
        ),
    ];
    let verdict = judge(&mut changes, &evidence(&metrics));
    assert_eq!(
        verdict_of(&changes, "gpu-memory-utilization").assessment,
        Assessment::Explains
    );
    let spec = verdict_of(&changes, "speculative.num_draft_tokens");
    assert_eq!(spec.assessment, Assessment::RuledOut);
    assert!(
        spec.reason.contains("accept length held (2.9 -> 2.85)"),
        "{}",
        spec.reason
    );
    assert_eq!(verdict.cause.as_deref(), Some("gpu-memory-utilization"));
}

#[test]
fn without_throughput_on_both_sides_nothing_is_concluded() {
    let metrics = vec![metric("running_reqs", (1.0, 1.0), (1.0, 1.0))];
    let mut changes = vec![cause(
        "attention-backend",
        Category::KernelsBackends,
        Impact::Medium,
        json!("fa3"),
        json!("triton"),
    )];
    let verdict = judge(&mut changes, &evidence(&metrics));
    assert_eq!(verdict.conclusion, Conclusion::NotEnoughEvidence);
    assert_eq!(verdict.confidence, VerdictConfidence::Low);
    assert_eq!(
        verdict_of(&changes, "attention-backend").assessment,
        Assessment::Consistent
    );
}

#[test]
fn fewer_requests_each_as_fast_is_the_load_not_a_cause() {
    // sglang-hybrid: 38.65 -> 8.99 running requests, 1021 -> 427 tok/s aggregate, per request
    // 26 -> 47 tok/s; a speculative change nobody measured on the earlier side.
    let metrics = vec![
        metric("gen_throughput", (1021.1, 1149.7), (426.6, 469.9)),
        metric("running_reqs", (38.65, 48.0), (8.99, 12.0)),
        metric("queue_reqs", (1.59, 3.0), (0.95, 2.0)),
    ];
    let mut changes = vec![cause(
        "speculative.num_steps",
        Category::SpeculativeDecoding,
        Impact::Medium,
        json!(2),
        json!(3),
    )];
    let verdict = judge(&mut changes, &evidence(&metrics));
    assert_eq!(verdict.conclusion, Conclusion::LoadChanged, "{verdict:#?}");
    assert_eq!(verdict.confidence, VerdictConfidence::Medium);
    assert!(
        verdict
            .headline
            .contains("x0.23 as many requests run at once (38.65 -> 8.99)"),
        "{}",
        verdict.headline
    );
    assert_eq!(
        verdict_of(&changes, "speculative.num_steps").assessment,
        Assessment::Consistent
    );
}

/// (layers before, after, throughput before, after, expected assessment, reason contains).
type LayersCase = (Option<f64>, Option<f64>, f64, f64, Assessment, &'static str);

/// GPU layers held against the offloaded-layers lines.
#[test]
fn gpu_layers_are_held_against_the_offloaded_layers_lines() {
    use super::Layers;
    let cases: &[LayersCase] = &[
        (
            Some(33.0),
            Some(20.0),
            80.0,
            31.0,
            Assessment::Explains,
            "fewer layers on the GPU (33 -> 20 of 33",
        ),
        (
            Some(33.0),
            Some(33.0),
            80.0,
            31.0,
            Assessment::RuledOut,
            "same 33 of 33 layers",
        ),
        (
            Some(20.0),
            Some(33.0),
            80.0,
            31.0,
            Assessment::RuledOut,
            "more layers on the GPU",
        ),
        (
            None,
            Some(20.0),
            80.0,
            31.0,
            Assessment::Consistent,
            "no offloaded-layers line",
        ),
        (
            Some(33.0),
            Some(20.0),
            80.0,
            79.0,
            Assessment::RuledOut,
            "throughput did not fall",
        ),
    ];
    for (before, after, tb, ta, want, text) in cases {
        let mut changes = vec![cause(
            "n-gpu-layers",
            Category::Offload,
            Impact::High,
            json!(99),
            json!(20),
        )];
        let metrics = [metric("request_gen_throughput", (*tb, *tb), (*ta, *ta))];
        let evidence = Evidence {
            metrics: &metrics,
            layers: Layers {
                gpu: (*before, *after),
                model: Some(33.0),
                kv: (None, None),
            },
            ..Evidence::default()
        };
        judge(&mut changes, &evidence);
        let v = verdict_of(&changes, "n-gpu-layers");
        assert_eq!(v.test, probe_model::Test::GpuLayers);
        assert_eq!(v.assessment, *want, "{before:?} -> {after:?}: {v:#?}");
        assert!(
            v.reason.contains(text),
            "{before:?} -> {after:?}: {}",
            v.reason
        );
    }
    // CPU offload is a cause of its own test, never ruled out by the layer count.
    let mut changes = vec![cause(
        "cpu-offload-gb",
        Category::Offload,
        Impact::High,
        json!(0),
        json!(16),
    )];
    let metrics = [metric("gen_throughput", (80.0, 80.0), (40.0, 40.0))];
    judge(
        &mut changes,
        &Evidence {
            metrics: &metrics,
            layers: Layers {
                gpu: (Some(33.0), Some(33.0)),
                model: None,
                kv: (None, None),
            },
            ..Evidence::default()
        },
    );
    let v = verdict_of(&changes, "cpu-offload-gb");
    assert_eq!(
        (v.test.as_str(), v.assessment),
        ("offload", Assessment::Consistent)
    );
}

/// A benchmark metric: one result a side.
fn bench(name: &str, unit: &str, b: f64, a: f64) -> MetricComparison {
    MetricComparison {
        name: format!("{name} (bench)"),
        unit: unit.to_string(),
        before: Some(summary(b, b, 1)),
        after: Some(summary(a, a, 1)),
        change: Some(a / b - 1.0),
    }
}

/// The latency story: `--max-num-batched-tokens 512` added by a drop-in; benchmarks at the same
/// workload (4 req/s, 3000-token prompts) before and after: TTFT p90 400 -> 1900 ms, TPOT
/// 21 -> 22 ms, throughput of decoding held, the queue grew.
fn latency_story(ttft_after: f64, prompt_after: f64) -> (Vec<Change>, Vec<MetricComparison>) {
    let mut budget = cause(
        "max-num-batched-tokens",
        Category::BatchingScheduling,
        Impact::Medium,
        json!(8192),
        json!(512),
    );
    budget.before = Some(json!(8192));
    let changes = vec![
        budget,
        cause(
            "speculative.num_steps",
            Category::SpeculativeDecoding,
            Impact::Medium,
            json!(3),
            json!(2),
        ),
        cause(
            "limit:max_num_seqs",
            Category::BatchingScheduling,
            Impact::High,
            json!(256),
            json!(128),
        ),
        cause(
            "package:torch",
            Category::EngineVersions,
            Impact::Medium,
            json!("2.8.0"),
            json!("2.8.0.post1"),
        ),
    ];
    let metrics = vec![
        metric("generation_throughput", (410.0, 600.0), (402.0, 590.0)),
        metric("running_reqs", (9.0, 14.0), (9.5, 15.0)),
        metric("waiting_reqs", (0.2, 2.0), (6.5, 19.0)),
        bench("ttft_p90", "ms", 400.0, ttft_after),
        bench("tpot_p50", "ms", 21.0, 22.0),
        bench("request_rate", "req/s", 4.0, 4.0),
        bench("input_len", "tokens", 3000.0, prompt_after),
    ];
    (changes, metrics)
}

fn assessed(key: &str, changes: &[Change]) -> (Assessment, String) {
    let change = changes.iter().find(|c| c.key == key).expect(key);
    let v = change.verdict.as_ref().expect("a verdict");
    (v.assessment, v.reason.clone())
}

#[test]
fn a_smaller_prefill_budget_explains_a_ttft_rise_at_the_same_workload() {
    let (mut changes, metrics) = latency_story(1900.0, 3000.0);
    let verdict = judge(
        &mut changes,
        &Evidence {
            metrics: &metrics,
            ..Evidence::default()
        },
    );
    let symptom = verdict.symptom.as_ref().expect("a symptom");
    assert_eq!(symptom.kind, probe_model::SymptomKind::Ttft);
    assert_eq!(verdict.conclusion, Conclusion::Cause);
    assert_eq!(verdict.cause.as_deref(), Some("max-num-batched-tokens"));
    assert_eq!(verdict.confidence, VerdictConfidence::Medium);
    assert!(
        verdict.headline.starts_with(
            "TTFT p90 rose 375% (400 -> 1900 ms) at the same request rate and prompt length \
             (4 req/s, 3000 tokens)"
        ),
        "{}",
        verdict.headline
    );
    assert!(
        verdict
            .headline
            .contains("decode speed (time per output token) unchanged (TPOT p50 21 -> 22 ms)"),
        "{}",
        verdict.headline
    );
    let (spec, reason) = assessed("speculative.num_steps", &changes);
    assert_eq!(spec, Assessment::RuledOut, "{reason}");
    assert!(reason.contains("not on time to first token"), "{reason}");
    let (budget, reason) = assessed("max-num-batched-tokens", &changes);
    assert_eq!(budget, Assessment::Explains, "{reason}");
    assert!(
        reason.contains("takes 6 prefill step(s) instead of 1"),
        "{reason}"
    );
    let kinds: Vec<_> = verdict.symptoms.iter().map(|s| s.kind).collect();
    assert!(kinds.contains(&probe_model::SymptomKind::Throughput));
    assert!(kinds.contains(&probe_model::SymptomKind::Itl));
}

#[test]
fn latency_verdicts_by_case() {
    // (TTFT after, prompt length after, conclusion, budget's assessment)
    let cases = [
        // Held: no slowdown, every cause ruled out.
        (410.0, 3000.0, Conclusion::NoSlowdown, Assessment::RuledOut),
        // Rose at another workload (prompts 3000 -> 6000 tokens): the budget still explains the
        // steps, so it is the cause; the headline says the workload differed.
        (1900.0, 6000.0, Conclusion::Cause, Assessment::Explains),
    ];
    for (ttft, prompt, conclusion, budget) in cases {
        let (mut changes, metrics) = latency_story(ttft, prompt);
        let verdict = judge(
            &mut changes,
            &Evidence {
                metrics: &metrics,
                ..Evidence::default()
            },
        );
        assert_eq!(verdict.conclusion, conclusion, "{ttft} {prompt}");
        assert_eq!(
            assessed("max-num-batched-tokens", &changes).0,
            budget,
            "{ttft} {prompt}"
        );
    }
    let (mut changes, metrics) = latency_story(1900.0, 6000.0);
    let verdict = judge(
        &mut changes,
        &Evidence {
            metrics: &metrics,
            ..Evidence::default()
        },
    );
    assert!(
        verdict
            .headline
            .contains("at another workload (prompt length 3000 -> 6000 tokens)"),
        "{}",
        verdict.headline
    );
}

#[test]
fn a_budget_that_rose_or_prompts_that_fit_do_not_explain_a_ttft_rise() {
    let (mut changes, metrics) = latency_story(1900.0, 300.0);
    // Prompts of 300 tokens fit a budget of 512 in one step, but the queue grew: still possible.
    judge(
        &mut changes,
        &Evidence {
            metrics: &metrics,
            ..Evidence::default()
        },
    );
    assert_eq!(
        assessed("max-num-batched-tokens", &changes).0,
        Assessment::Explains
    );
    let (mut changes, mut metrics) = latency_story(1900.0, 300.0);
    metrics.retain(|m| m.name != "waiting_reqs");
    judge(
        &mut changes,
        &Evidence {
            metrics: &metrics,
            ..Evidence::default()
        },
    );
    let (assessment, reason) = assessed("max-num-batched-tokens", &changes);
    assert_eq!(assessment, Assessment::RuledOut, "{reason}");
    assert!(
        reason.contains("fit the new budget of 512 in one step"),
        "{reason}"
    );
    let (mut changes, metrics) = latency_story(1900.0, 3000.0);
    if let Some(c) = changes
        .iter_mut()
        .find(|c| c.key == "max-num-batched-tokens")
    {
        c.before = Some(json!(256));
    }
    judge(
        &mut changes,
        &Evidence {
            metrics: &metrics,
            ..Evidence::default()
        },
    );
    assert_eq!(
        assessed("max-num-batched-tokens", &changes).0,
        Assessment::RuledOut
    );
}

#[test]
fn prefix_caching_is_held_against_the_hit_rate() {
    let (_, mut metrics) = latency_story(1900.0, 3000.0);
    let off = || {
        vec![cause(
            "enable-prefix-caching",
            Category::MemoryKvCache,
            Impact::Medium,
            json!(true),
            json!(false),
        )]
    };
    metrics.push(metric("prefix_cache_hit_rate", (0.62, 0.8), (0.03, 0.1)));
    let mut changes = off();
    let verdict = judge(
        &mut changes,
        &Evidence {
            metrics: &metrics,
            ..Evidence::default()
        },
    );
    assert_eq!(verdict.conclusion, Conclusion::Cause);
    let (a, reason) = assessed("enable-prefix-caching", &changes);
    assert_eq!(a, Assessment::Explains, "{reason}");
    assert!(reason.contains("62% -> 3%"), "{reason}");
    metrics.retain(|m| m.name != "prefix_cache_hit_rate");
    metrics.push(metric("prefix_cache_hit_rate", (0.62, 0.8), (0.6, 0.8)));
    let mut changes = off();
    let verdict = judge(
        &mut changes,
        &Evidence {
            metrics: &metrics,
            ..Evidence::default()
        },
    );
    assert_eq!(
        assessed("enable-prefix-caching", &changes).0,
        Assessment::RuledOut
    );
    assert_eq!(verdict.conclusion, Conclusion::Unexplained);
    assert_eq!(verdict.confidence, VerdictConfidence::Low);
}

/// Without benchmark results, the servers' own histograms (the seconds between two scrapes,
/// else the lifetime quantiles, named as `probe diff` names them when it compares two
/// snapshots) and llama.cpp's per-request timings give the latency symptoms.
#[test]
fn latency_symptoms_from_histograms_and_log_lines() {
    let cases = [
        (
            "ttft_p90_now (server /metrics, now, server:127.0.0.1:30000)",
            probe_model::SymptomKind::Ttft,
        ),
        (
            "ttft_p90 (server /metrics, lifetime, server:127.0.0.1:30000)",
            probe_model::SymptomKind::Ttft,
        ),
        (
            "itl_p50 (server /metrics, lifetime, server:127.0.0.1:30000)",
            probe_model::SymptomKind::Itl,
        ),
        (
            "tpot_p50_now (server /metrics, now, server:127.0.0.1:8000)",
            probe_model::SymptomKind::Itl,
        ),
        (
            "e2e_latency_p90 (server /metrics, lifetime, server:127.0.0.1:8000)",
            probe_model::SymptomKind::E2e,
        ),
        ("request_prompt_ms", probe_model::SymptomKind::Ttft),
        ("request_tpot_ms", probe_model::SymptomKind::Itl),
    ];
    for (name, kind) in cases {
        let metrics = vec![metric(name, (0.4, 0.6), (1.9, 2.5))];
        let verdict = judge(
            &mut [],
            &Evidence {
                metrics: &metrics,
                ..Evidence::default()
            },
        );
        let symptom = verdict.symptom.as_ref().expect(name);
        assert_eq!((symptom.kind, symptom.metric.as_str()), (kind, name));
        assert_eq!(verdict.conclusion, Conclusion::Unexplained, "{name}");
    }
    // Both: the seconds between the scrapes, not the lifetime that averages every week.
    let metrics = vec![
        metric(
            "ttft_p90 (server /metrics, lifetime, server:127.0.0.1:8000)",
            (0.4, 0.6),
            (0.5, 0.7),
        ),
        metric(
            "ttft_p90_now (server /metrics, now, server:127.0.0.1:8000)",
            (0.4, 0.6),
            (1.9, 2.5),
        ),
    ];
    let verdict = judge(
        &mut [],
        &Evidence {
            metrics: &metrics,
            ..Evidence::default()
        },
    );
    let symptom = verdict.symptom.as_ref().expect("a symptom");
    assert!(symptom.metric.starts_with("ttft_p90_now"), "{symptom:?}");
}

/// A budget flag added where the earlier run had none: the earlier run's start-up line says
/// what the default stood for, and the steps are compared with it.
#[test]
fn an_added_budget_is_held_against_the_default_the_earlier_run_resolved() {
    let (mut changes, metrics) = latency_story(1900.0, 3000.0);
    if let Some(c) = changes
        .iter_mut()
        .find(|c| c.key == "max-num-batched-tokens")
    {
        c.before = None;
        c.kind = probe_model::ChangeKind::Added;
    }
    judge(
        &mut changes,
        &Evidence {
            metrics: &metrics,
            prefill_budget: (Some(8192.0), None),
            ..Evidence::default()
        },
    );
    let (assessment, reason) = assessed("max-num-batched-tokens", &changes);
    assert_eq!(assessment, Assessment::Explains, "{reason}");
    assert!(
        reason.contains(
            "the prefill budget fell (the default, 8192 as the earlier run resolved it, -> 512 \
             tokens): a 3000-token prompt takes 6 prefill step(s) instead of 1"
        ),
        "{reason}"
    );
}

/// (cause, before, after, layers before/after of 81, KV size before/after, expected, reason contains).
type KvCase = (
    &'static str,
    serde_json::Value,
    serde_json::Value,
    (Option<f64>, Option<f64>),
    (Option<f64>, Option<f64>),
    Assessment,
    &'static str,
);

/// A KV cache sized at load (context x parallel) and models kept resident, held against the
/// KV size and the layers each run put on the GPU.
#[test]
fn kv_size_and_resident_models_are_held_against_the_layers() {
    use super::Layers;
    let cases: &[KvCase] = &[
        (
            "context-length",
            json!(8192),
            json!(32768),
            (Some(81.0), Some(43.0)),
            (Some(8192.0), Some(131_072.0)),
            Assessment::Explains,
            "went 8192 -> 131072 tokens (x16; context-length 8192 -> 32768 is x4 of it); its memory was the GPU's: 38 layers left it (81 -> 43 of 81)",
        ),
        (
            "num-parallel",
            json!(1),
            json!(4),
            (Some(81.0), Some(81.0)),
            (Some(8192.0), Some(32768.0)),
            Assessment::RuledOut,
            "it moved none off the GPU",
        ),
        (
            "context-length",
            json!(8192),
            json!(32768),
            (None, None),
            (None, None),
            Assessment::Consistent,
            "no logged number isolates its effect",
        ),
        (
            "max-loaded-models",
            json!(0),
            json!(2),
            (Some(81.0), Some(81.0)),
            (None, None),
            Assessment::RuledOut,
            "every layer of the model stays on the GPU (81 -> 81 of 81",
        ),
        (
            "max-loaded-models",
            json!(0),
            json!(2),
            (Some(65.0), Some(65.0)),
            (None, None),
            Assessment::RuledOut,
            "no fewer layers on the GPU (65 -> 65",
        ),
        (
            "keep-alive",
            json!("5m"),
            json!("30m"),
            (Some(81.0), Some(43.0)),
            (None, None),
            Assessment::Consistent,
            "may hold the memory they needed",
        ),
        (
            "keep-alive",
            json!("5m"),
            json!("-1"),
            (None, Some(43.0)),
            (None, None),
            Assessment::Consistent,
            "no offloaded-layers line",
        ),
    ];
    for (key, before, after, gpu, kv, want, text) in cases {
        let mut changes = vec![cause(
            key,
            Category::MemoryKvCache,
            Impact::Medium,
            before.clone(),
            after.clone(),
        )];
        let metrics = [metric("request_gen_throughput", (17.9, 17.9), (2.7, 2.7))];
        let evidence = Evidence {
            metrics: &metrics,
            layers: Layers {
                gpu: *gpu,
                model: Some(81.0),
                kv: *kv,
            },
            ..Evidence::default()
        };
        judge(&mut changes, &evidence);
        let v = verdict_of(&changes, key);
        assert_eq!(v.assessment, *want, "{key} {gpu:?} {kv:?}: {v:#?}");
        assert!(v.reason.contains(text), "{key}: {}", v.reason);
    }
}
