//! The other engines' log lines (`configs/log_lines.toml`) read through the log reader, as the
//! engines print them (prefixes, colour codes, JSON output included).

use probe_model::LogSource;

use super::engine_lines::{Found, read};
use super::logs::parse_text;

/// (line, metric series expected with their last value, limits expected).
type Case = (
    &'static str,
    &'static [(&'static str, f64)],
    &'static [(&'static str, f64)],
);

const CASES: &[Case] = &[
    // llama.cpp with --log-colors and --log-timestamps (common/log.cpp: blue time, green level).
    (
        "\u{1b}[34m0.05.097.342\u{1b}[0m \u{1b}[32mI \u{1b}[0mload_tensors: offloaded 29/33 layers to GPU",
        &[],
        &[("gpu_layers", 29.0), ("model_layers", 33.0)],
    ),
    (
        "llm_load_tensors: offloaded 33/33 layers to GPU",
        &[],
        &[("gpu_layers", 33.0), ("model_layers", 33.0)],
    ),
    (
        "[12345] load_tensors: offloading 32 repeating layers to GPU",
        &[],
        &[],
    ),
    (
        "0.09.633.001 I llama_context: n_ctx         = 8192",
        &[],
        &[("n_ctx", 8192.0)],
    ),
    (
        "llama_context: n_ctx_seq     = 2048",
        &[],
        &[("n_ctx_seq", 2048.0)],
    ),
    (
        "llama_context: n_ctx_per_seq = 4096",
        &[],
        &[("n_ctx_seq", 4096.0)],
    ),
    (
        "llama_new_context_with_model: n_ctx      = 4096",
        &[],
        &[("n_ctx", 4096.0)],
    ),
    (
        "llama_context: n_seq_max     = 4",
        &[],
        &[("n_seq_max", 4.0)],
    ),
    (
        "0.09.726.159 W llama_context: n_ctx_seq (2048) < n_ctx_train (131072) -- the full capacity of the model will not be utilized",
        &[],
        &[],
    ),
    (
        "srv    load_model: initializing slots, n_slots = 4",
        &[],
        &[("n_slots", 4.0)],
    ),
    (
        "\u{1b}[32mI \u{1b}[0mslot   load_model: id  0 | task -1 | new slot, n_ctx = 2048",
        &[],
        &[("n_ctx_slot", 2048.0)],
    ),
    (
        "slot         init: id  0 | task -1 | new slot n_ctx_slot = 131072",
        &[],
        &[("n_ctx_slot", 131_072.0)],
    ),
    (
        "0.18.447.772 I srv    load_model: initializing, n_slots = 4, n_ctx_slot = 8192, kv_unified = 'true'",
        &[],
        &[("n_slots", 4.0), ("n_ctx_slot", 8192.0)],
    ),
    (
        "slot print_timing: id  0 | task 42 | prompt eval time =     123.45 ms /    12 tokens (   10.29 ms per token,    97.21 tokens per second)",
        &[
            ("request_prompt_ms", 123.45),
            ("request_prompt_throughput", 97.21),
        ],
        &[],
    ),
    // Ollama (slog text): its Go engine's offload line, the llama runner's, the load request.
    (
        "time=2025-09-01T10:00:00.000Z level=INFO source=ggml.go:502 msg=\"offloaded 33/33 layers to GPU\"",
        &[],
        &[("gpu_layers", 33.0), ("model_layers", 33.0)],
    ),
    (
        "time=2024-11-02T08:00:00.000Z level=INFO source=memory.go:343 msg=\"offload to cuda\" layers.requested=-1 layers.model=33 layers.offload=20 layers.split=\"\" memory.available=\"[7.6 GiB]\"",
        &[],
        &[("gpu_layers", 20.0), ("model_layers", 33.0)],
    ),
    (
        "time=2025-03-01T10:00:01.000Z level=INFO source=runner.go:895 msg=load request=\"{Operation:commit LoraPath:[] Parallel:4 BatchSize:512 FlashAttention:false KvSize:16384 KvCacheType: NumThreads:8 GPULayers:33[ID:GPU-1 Layers:33(0..32)] MultiUserCache:false}\"",
        &[],
        &[("kv_size", 16384.0)],
    ),
    (
        "time=2025-03-01T10:00:02.000Z level=INFO source=sched.go:480 msg=\"loaded runners\" runner.name=qwen3:8b runner.parallel=4 runner.num_ctx=4096 predicted_num_ctx=9999",
        &[],
        &[("num_ctx", 4096.0)],
    ),
    (
        "eval rate:            45.24 tokens/s",
        &[("request_gen_throughput", 45.24)],
        &[],
    ),
    (
        "prompt eval rate:     1234.56 tokens/s",
        &[("request_prompt_throughput", 1234.56)],
        &[],
    ),
    // TGI, text and JSON output.
    (
        "2024-05-01T12:00:01.123456Z  INFO text_generation_router_v3: backends/v3/src/lib.rs:137: Setting max batch total tokens to 16000",
        &[],
        &[("max_batch_total_tokens", 16000.0)],
    ),
    (
        "{\"timestamp\":\"2024-05-01T12:00:00.123Z\",\"level\":\"INFO\",\"fields\":{\"message\":\"Maximum input tokens defaulted to 4095\"},\"target\":\"text_generation_router_v3\",\"filename\":\"backends/v3/src/main.rs\",\"line_number\":169}",
        &[],
        &[("max_input_tokens", 4095.0)],
    ),
    (
        "2024-05-01T12:00:00.5Z  INFO text_generation_launcher: Default `max_batch_prefill_tokens` to 4145",
        &[],
        &[("max_batch_prefill_tokens", 4145.0)],
    ),
    (
        "2024-05-01T12:00:05.000000Z  INFO compat_generate{default_return_full_text=true}:generate{parameters=GenerateParameters { best_of: None } total_time=\"1.194364886s\" validation_time=\"1.553ms\" queue_time=\"67.59µs\" inference_time=\"1.192743925s\" time_per_token=\"49.697663ms\" seed=\"None\"}: text_generation_router::server: router/src/server.rs:305: Success",
        &[
            ("request_tpot_ms", 49.697663),
            ("request_queue_ms", 0.06759),
            ("request_inference_ms", 1192.743925),
        ],
        &[],
    ),
    (
        "{\"timestamp\":\"2024-05-01T12:00:05.1Z\",\"level\":\"INFO\",\"message\":\"Success\",\"target\":\"text_generation_router::server\",\"span\":{\"inference_time\":\"2.5s\",\"queue_time\":\"1.2ms\",\"time_per_token\":\"25ms\",\"total_time\":\"2.6s\",\"name\":\"generate\"}}",
        &[
            ("request_tpot_ms", 25.0),
            ("request_queue_ms", 1.2),
            ("request_inference_ms", 2500.0),
        ],
        &[],
    ),
    // LMDeploy's periodic line (the time prefix is SGLang's shape).
    (
        "[2026-08-21 10:00:00 DP0] Avg thr (in/out): 512.3 / 1830.5 tokens/s, Server (succeeded/failed/routed/waiting): 100 / 0 / 24 / 0, Engine (running/waiting): 24 / 2, KV cache: 12.5%, Prefix cache hit rate: 43.1%, SpecDecoding metrics: Draft acceptance rate: 69.20%, Mean acceptance length: 2.38, Accepted: 10 tokens, Drafted: 14 tokens, Per-position acceptance rate: 0.800, 0.500",
        &[
            ("prompt_throughput", 512.3),
            ("gen_throughput", 1830.5),
            ("running_reqs", 24.0),
            ("waiting_reqs", 2.0),
            ("kv_cache_usage", 0.125),
            ("prefix_cache_hit_rate", 0.431),
            ("accept_rate", 0.692),
            ("accept_len", 2.38),
        ],
        &[],
    ),
    // TensorRT-LLM's iteration log, older and newer field order.
    (
        "[TRT-LLM] [I] iter = 100, global_rank = 0, rank = 0, currank_total_requests = 8/8, host_step_time = 25.0ms, prev_device_step_time = 24.1ms, timestamp = 2026-08-04 19:08:13, num_scheduled_requests: 8, states = {'num_ctx_requests': 0, 'num_ctx_tokens': 0, 'num_generation_tokens': 8}",
        &[
            ("step_time_ms", 25.0),
            ("running_reqs", 8.0),
            ("gen_throughput", 320.0),
        ],
        &[],
    ),
    (
        "0: [08/04/2026-19:08:13] [TRT-LLM] [I] [_torch][RANK 0] iter = 5, global_rank = 0, rank = 0, num_scheduled_requests = 4, kv_cache_util = 0.125, currank_total_requests = 1/8, host_step_time = 10ms, prev_device_step_time = 9.5ms, timestamp = 2026-08-04 19:08:13, states = {'num_ctx_requests': 0, 'num_ctx_tokens': 0, 'num_generation_tokens': 4, 'cached_kv_tokens': 63821}",
        &[
            ("step_time_ms", 10.0),
            ("running_reqs", 4.0),
            ("kv_cache_usage", 0.125),
            ("gen_throughput", 400.0),
        ],
        &[],
    ),
    // Not these engines' lines.
    (
        "[2026-10-30 12:00:05 TP0] Prefill batch, #new-seq: 1, #new-token: 8192",
        &[],
        &[],
    ),
    (
        "host_step_time = N/A, eval rate: fast, KvSize:, offloaded x/y layers to GPU",
        &[],
        &[],
    ),
];

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[test]
fn each_engine_line_reads_as_its_values() {
    for (line, metrics, limits) in CASES {
        let mut src = LogSource::default();
        parse_text(line, None, 0, &mut src);
        let got: Vec<(String, f64)> = src
            .metrics
            .iter()
            .map(|m| (m.name.clone(), m.summary.last))
            .collect();
        assert_eq!(got.len(), metrics.len(), "{line}: {got:?}");
        for (name, value) in *metrics {
            let m = got.iter().find(|(n, _)| n == name);
            assert!(
                m.is_some_and(|(_, v)| close(*v, *value)),
                "{line}: {name} = {m:?}, expected {value}"
            );
        }
        let values = src
            .limits
            .first()
            .map(|l| l.values.clone())
            .unwrap_or_default();
        assert_eq!(values.len(), limits.len(), "{line}: {values:?}");
        for (key, value) in *limits {
            assert_eq!(values.get(*key), Some(value), "{line}: {values:?}");
        }
    }
}

/// A llama.cpp start-up as `llama-server -ngl 20 -c 8192 -np 4` logs it: one limit record,
/// the per-slot line repeated once per slot adds nothing.
#[test]
fn one_llama_cpp_startup_is_one_limit_record() {
    let text = "\
build: 6123 (79c1160b) with cc (Ubuntu 13.3.0) 13.3.0 for x86_64-linux-gnu
load_tensors: offloading 20 repeating layers to GPU
load_tensors: offloaded 20/33 layers to GPU
llama_context: n_seq_max     = 4
llama_context: n_ctx         = 8192
llama_context: n_ctx_seq     = 2048
srv    load_model: initializing slots, n_slots = 4
slot   load_model: id  0 | task -1 | new slot, n_ctx = 2048
slot   load_model: id  1 | task -1 | new slot, n_ctx = 2048
slot   load_model: id  2 | task -1 | new slot, n_ctx = 2048
slot   load_model: id  3 | task -1 | new slot, n_ctx = 2048
main: server is listening on http://127.0.0.1:8080 - starting the main loop
";
    let mut src = LogSource::default();
    parse_text(text, None, 0, &mut src);
    assert_eq!(src.limits.len(), 1, "{:?}", src.limits);
    let v = &src.limits[0].values;
    assert_eq!(v.get("gpu_layers"), Some(&20.0));
    assert_eq!(v.get("n_ctx"), Some(&8192.0));
    assert_eq!(v.get("n_ctx_seq"), Some(&2048.0));
    assert_eq!(v.get("n_slots"), Some(&4.0));
    assert_eq!(v.get("n_ctx_slot"), Some(&2048.0));
    assert_eq!(src.limits[0].engine, probe_model::Engine::LlamaCpp);
}

#[test]
fn a_line_with_the_marker_but_not_the_shape_holds_nothing() {
    for line in [
        "offloaded 3/ layers to GPU",
        "KvSize:x",
        "time_per_token=\"fast\"",
        "host_step_time = 0ms, 'num_generation_tokens': 5",
        "Avg thr (in/out): 1 / x tokens/s",
    ] {
        let found = read(line);
        assert!(
            found.iter().all(|f| !matches!(
                f,
                Found::Metric {
                    name: "gen_throughput",
                    ..
                }
            )),
            "{line}: {found:?}"
        );
        assert!(
            found.iter().all(|f| match f {
                Found::Metric { value, .. } | Found::Limit { value, .. } => value.is_finite(),
            }),
            "{line}: {found:?}"
        );
    }
    assert!(read("offloaded 3/ layers to GPU").is_empty());
    assert!(read("KvSize:x").is_empty());
}

/// The times TGI's and Ollama's lines start with are the points' times.
#[test]
fn tgi_and_ollama_line_times() {
    let at = super::parse_rfc3339("2024-05-01T12:00:05Z");
    // (line, series)
    let cases = [
        (
            "2024-05-01T12:00:05.000000Z  INFO generate{time_per_token=\"25ms\"}: text_generation_router::server: router/src/server.rs:305: Success",
            "request_tpot_ms",
        ),
        (
            "{\"timestamp\":\"2024-05-01T12:00:05.5Z\",\"level\":\"INFO\",\"span\":{\"time_per_token\":\"25ms\"}}",
            "request_tpot_ms",
        ),
    ];
    for (line, name) in cases {
        let mut src = LogSource::default();
        parse_text(line, None, 0, &mut src);
        let m = src.metrics.iter().find(|m| m.name == name);
        assert_eq!(
            m.and_then(|m| m.summary.last_time),
            at,
            "{line}: {:?}",
            src.metrics
        );
    }
    let mut src = LogSource::default();
    parse_text(
        "time=2024-05-01T14:00:05.000+02:00 level=INFO source=ggml.go:502 msg=\"offloaded 33/33 layers to GPU\"",
        None,
        0,
        &mut src,
    );
    assert_eq!(
        src.limits.first().and_then(|l| l.time),
        at,
        "{:?}",
        src.limits
    );
}

/// Ollama 0.13.5's `server config` line is a start-up record of the environment it logs, and its
/// `Listening on` line the version: (line, start-up text, version) as read.
#[test]
fn ollama_startup_and_version_lines_table() {
    type TextCase = (&'static str, Option<&'static str>, Option<&'static str>);
    let cases: &[TextCase] = &[
        (
            "time=2026-11-09T10:40:13.400Z level=INFO source=routes.go:1554 msg=\"server config\" env=\"map[CUDA_VISIBLE_DEVICES: OLLAMA_CONTEXT_LENGTH:8192 OLLAMA_HOST:http://127.0.0.53:11434 OLLAMA_ORIGINS:[http://localhost app://*] OLLAMA_NUM_PARALLEL:1]\"",
            Some(
                "map[CUDA_VISIBLE_DEVICES: OLLAMA_CONTEXT_LENGTH:8192 OLLAMA_HOST:http://127.0.0.53:11434 OLLAMA_ORIGINS:[http://localhost app://*] OLLAMA_NUM_PARALLEL:1]",
            ),
            None,
        ),
        // Through the journal's prefix.
        (
            "2026-11-09T10:40:13+00:00 fixture ollama[1187]: time=2026-11-09T10:40:13.410Z level=INFO source=routes.go:1607 msg=\"Listening on 127.0.0.53:11434 (version 0.13.5)\"",
            None,
            Some("0.13.5"),
        ),
        (
            "time=2026-11-09T10:40:13.410Z level=INFO source=routes.go:1607 msg=\"Listening on [::]:11434 (version 0.12.6-rc1)\"",
            None,
            Some("0.12.6-rc1"),
        ),
        // Not the shape: no record.
        ("msg=\"server config\" env=map[A:1]", None, None),
        ("msg=\"Listening on 127.0.0.1:11434\"", None, None),
        ("Listening on 127.0.0.1:11434 (version 0.13.5)", None, None),
    ];
    for (line, startup, version) in cases {
        let mut src = LogSource::default();
        parse_text(line, None, 0, &mut src);
        let got_startup = src.startups.first().map(|s| s.text.as_str());
        assert_eq!(got_startup, *startup, "{line}");
        if startup.is_some() {
            assert_eq!(src.startups[0].engine, probe_model::Engine::Ollama);
            assert!(src.startups[0].time.is_some(), "{line}");
        }
        let got_version = src.versions.first().map(|v| v.version.as_str());
        assert_eq!(got_version, *version, "{line}");
    }
}

/// Ollama's own engine prints llama.cpp's words (`offloaded N/M layers to GPU`) from
/// `source=ggml.go`: one limit record, Ollama's.
#[test]
fn ollama_offload_line_is_ollamas() {
    let mut src = LogSource::default();
    parse_text(
        "time=2026-11-25T14:05:00.500Z level=INFO source=ggml.go:494 msg=\"offloaded 43/81 layers to GPU\"",
        None,
        0,
        &mut src,
    );
    assert_eq!(src.limits.len(), 1, "{:?}", src.limits);
    assert_eq!(src.limits[0].engine, probe_model::Engine::Ollama);
    assert_eq!(src.limits[0].values.get("gpu_layers"), Some(&43.0));
    assert_eq!(src.limits[0].values.get("model_layers"), Some(&81.0));
}

/// A found file with no time of its own and few samples (one `ollama run --verbose` output) is
/// dated by its mtime; a timed one, or a long one, is not: (text, mtime, dated).
#[test]
fn found_output_dated_by_mtime_table() {
    let verbose = "total duration:       25.2s\nprompt eval rate:     212.00 tokens/s\neval count:           456 token(s)\neval rate:            17.80 tokens/s\n";
    let timed = "time=2026-11-20T03:00:00.000Z level=INFO source=x.go:1 msg=\"hi\"\neval rate:            17.80 tokens/s\n[GIN] x\ntime=2026-11-20T03:00:01.000Z level=INFO source=ggml.go:494 msg=\"offloaded 3/3 layers to GPU\"\n";
    let long = "eval rate:            17.80 tokens/s\n".repeat(300);
    let cases: &[(&str, Option<i64>, bool)] = &[
        (verbose, Some(1_795_575_669), true),
        (verbose, None, false),
        (timed, Some(1_795_575_669), false),
        (&long, Some(1_795_575_669), false),
    ];
    for (text, mtime, dated) in cases {
        let mut src = LogSource {
            mtime: *mtime,
            ..LogSource::default()
        };
        parse_text(text, None, 0, &mut src);
        super::logs::date_by_mtime(&mut src);
        let eval = src
            .metrics
            .iter()
            .find(|m| m.name == "request_gen_throughput")
            .expect("the eval rate");
        let all_dated = eval.points.iter().all(|(t, _)| *t == *mtime && t.is_some());
        assert_eq!(all_dated, *dated, "{mtime:?} {:?}", eval.points);
        if *dated {
            assert_eq!(eval.summary.last_time, *mtime);
        }
    }
}

mod props {
    use proptest::prelude::*;

    proptest! {
        /// Any line (with or without the markers) reads without panic, into text no longer
        /// than the line.
        #[test]
        fn text_lines_never_panic(
            head in "(msg=\"server config\" env=\"|msg=\"Listening on |)",
            body in "\\PC{0,200}",
        ) {
            let line = format!("{head}{body}");
            for f in super::super::engine_lines::read_text(&line) {
                prop_assert!(f.text.len() <= line.len());
            }
            let mut src = probe_model::LogSource::default();
            super::super::logs::parse_text(&line, None, 0, &mut src);
            super::super::logs::date_by_mtime(&mut src);
        }
    }
}
