//! The log reader's tests: every part of it through its public face and a few of its steps.

use super::lines::strip_line_prefixes;
use super::startups::engine_of;
use super::*;
use crate::parse::engine_lines::Place;
use probe_model::{LogOrigin, LogSource, SectionStatus};

/// A missing log file whose name came with U+FFFD (a name that is not UTF-8) says why;
/// a plain missing file stays a plain `not_present`. `(path, message)`.
#[test]
fn a_missing_log_whose_name_was_not_utf8_says_so() {
    const B: &str = "00112233445566778899aabbccddeeff";
    let cases = [("/root/caf\u{fffd}.log", true), ("/root/cafe.log", false)];
    for (path, said) in cases {
        let body = format!("{B} F missing log 0 0 {path}\n");
        let sources = parse_files(body.as_bytes(), B, None, 0);
        assert_eq!(sources.len(), 1, "{path}");
        assert_eq!(sources[0].status, SectionStatus::NotPresent, "{path}");
        assert_eq!(
            sources[0]
                .message
                .as_deref()
                .is_some_and(|m| m.contains("not UTF-8")),
            said,
            "{path}: {:?}",
            sources[0].message
        );
    }
}

/// The definition test: every entry of `configs/log_lines.toml` reads its own sample line (a
/// line as the engine prints it, prefixes included) through the whole reader as it says.
#[test]
fn every_sample_reads_through_the_log_reader() {
    use engine_lines::Reads;
    let samples = engine_lines::samples();
    assert!(samples.len() >= 60, "{}", samples.len());
    for s in samples {
        let what = format!("{} {:?}: {}", s.engine, s.reads, s.line);
        let engine = engine_of(s.engine);
        let mut src = LogSource::default();
        parse_text(s.line, Some(1_800_000_000), 0, &mut src);
        match &s.reads {
            Reads::Prefix { place, time } => {
                let (at, rest) = strip_line_prefixes(s.line, Some(1_800_000_000), 0);
                assert!(at.is_some() || !*time, "{what}: no time");
                if *place != Place::Line {
                    assert!(rest.len() < s.line.len(), "{what}: nothing taken off");
                }
            }
            Reads::Version => {
                assert!(
                    src.versions.iter().any(|v| v.engine == engine),
                    "{what}: {:?}",
                    src.versions
                );
            }
            Reads::Startup => {
                assert!(
                    src.startups.iter().any(|v| v.engine == engine),
                    "{what}: {:?}",
                    src.startups
                );
            }
            Reads::Loaded => {
                assert!(
                    src.loaded
                        .iter()
                        .any(|v| v.engine == engine && !v.model.is_empty()),
                    "{what}: {:?}",
                    src.loaded
                );
            }
            Reads::Metrics(names) => {
                for n in names {
                    assert!(
                        src.metrics.iter().any(|m| m.name == *n),
                        "{what}: no {n} in {:?}",
                        src.metrics
                    );
                }
            }
            Reads::Limits(keys) => {
                for k in keys {
                    assert!(
                        src.limits
                            .iter()
                            .any(|l| l.engine == engine && l.values.contains_key(*k)),
                        "{what}: no {k} in {:?}",
                        src.limits
                    );
                }
            }
        }
    }
}

/// TGI's launcher arguments, as each release and output format logs them: one line
/// (`{:?}`), many lines (`{:#?}`, a line that is not a continuation ends the block and is read
/// as usual), and JSON output with the message escaped.
#[test]
fn tgi_launcher_args() {
    let one = "2024-02-06T16:11:25.163010Z  INFO text_generation_launcher: Args { model_id: \"TheBloke/Llama-2-7B-GPTQ\", num_shard: Some(2), quantize: Some(Gptq), max_input_length: 4095, max_total_tokens: 4096 }\n";
    let many = "2024-08-28T15:18:57.451962Z  INFO text_generation_launcher: Args {\n    model_id: \"meta-llama/Llama-3.1-8B-Instruct\",\n    lora_adapters: Some(\n        \"a,b\",\n    ),\n    max_concurrent_requests: 128,\n}\n\
                2024-08-28T15:19:05.001Z  INFO text_generation_launcher: Starting download process.\n";
    let cut = "2024-08-28T15:18:57.451962Z  INFO text_generation_launcher: Args {\n    model_id: \"x\",\n2024-08-28T15:19:05.001Z  INFO text_generation_router: time_per_token=\"49.697663ms\"\n";
    let json = r#"{"timestamp":"2024-08-28T15:18:57.451962Z","level":"INFO","fields":{"message":"Args {\n    model_id: \"bigscience/bloom-560m\",\n    max_batch_prefill_tokens: Some(\n        4096,\n    ),\n}"},"target":"text_generation_launcher"}"#;
    let read = |t: &str| {
        let mut s = LogSource::default();
        parse_text(t, None, 0, &mut s);
        s
    };
    let s = read(one);
    assert_eq!(s.startups.len(), 1);
    assert_eq!(s.startups[0].engine, probe_model::Engine::Tgi);
    assert!(
        s.startups[0]
            .text
            .starts_with("Args { model_id: \"TheBloke"),
        "{:?}",
        s.startups
    );
    assert_eq!(
        s.startups[0].time,
        crate::parse::parse_rfc3339("2024-02-06T16:11:25.163010Z")
    );
    let s = read(many);
    assert_eq!(
        s.startups[0].text,
        "Args { model_id: \"meta-llama/Llama-3.1-8B-Instruct\", lora_adapters: Some( \"a,b\", ), max_concurrent_requests: 128, }"
    );
    let s = read(cut);
    assert_eq!(s.startups.len(), 1);
    assert!(s.startups[0].text.ends_with("model_id: \"x\","));
    assert!(
        s.metrics.iter().any(|m| m.name == "request_tpot_ms"),
        "the line after an unclosed block is read: {:?}",
        s.metrics
    );
    let s = read(&format!("{json}\n"));
    assert_eq!(s.startups.len(), 1, "{s:?}");
    assert!(
        s.startups[0]
            .text
            .contains("model_id: \"bigscience/bloom-560m\"")
    );
    assert!(!s.startups[0].text.contains('\n'));
    // Args of another program are no TGI start-up.
    assert!(read("Args { x: 1 }\n").startups.is_empty());
    // The same block as the journal holds it (`journalctl -o short-iso`): one entry a line.
    let journal = "2026-11-08T10:02:11+00:00 h text-generation-launcher[2214]: 2026-11-08T10:02:11.200000Z  INFO text_generation_launcher: Args {\n\
                   2026-11-08T10:02:11+00:00 h text-generation-launcher[2214]:     model_id: \"m\",\n\
                   2026-11-08T10:02:11+00:00 h text-generation-launcher[2214]:     cuda_graphs: None,\n\
                   2026-11-08T10:02:11+00:00 h text-generation-launcher[2214]: }\n";
    let s = read(journal);
    assert_eq!(
        s.startups.first().map(|x| x.text.as_str()),
        Some("Args { model_id: \"m\", cuda_graphs: None, }"),
        "{s:?}"
    );
}

#[test]
fn sglang_lines() {
    let t = "[2026-10-30 11:59:00] server_args=ServerArgs(model_path='/models/q', tp_size=2, speculative_algorithm='NEXTN')\n\
             [2026-10-30 12:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 128, full token usage: 0.00, mamba usage: 0.05, #running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 7.34\n\
             [2026-10-30 12:00:05 TP0] Decode batch, #running-req: 9, #full token: 11584, full token usage: 0.01, mamba num: 36, mamba usage: 0.60, accept len: 3.04, accept rate: 0.68, cuda graph: True, gen throughput (token/s): 422.40, #queue-req: 1\n\
             \x1b[32m[2026-10-30 12:00:09 TP0] Decode batch, #running-req: 13, #full token: 8704, full token usage: 0.02, mamba num: 36, mamba usage: 0.62, accept len: 3.20, accept rate: 0.73, cuda graph: True, gen throughput (token/s): 980.50, #queue-req: 2\x1b[0m\n";
    let mut s = LogSource::default();
    parse_text(t, None, 0, &mut s);
    assert_eq!(s.startups.len(), 1);
    assert_eq!(s.startups[0].engine, probe_model::Engine::Sglang);
    assert_eq!(
        s.startups[0].time,
        crate::parse::parse_datetime("2026-10-30 11:59:00")
    );
    assert!(
        s.startups[0]
            .text
            .starts_with("ServerArgs(model_path='/models/q'")
    );
    let m = |n: &str| s.metrics.iter().find(|x| x.name == n).unwrap();
    assert_eq!(m("gen_throughput").summary.count, 2);
    assert_eq!(m("gen_throughput").summary.max, 980.5);
    assert_eq!(m("gen_throughput").summary.last, 980.5);
    assert_eq!(m("accept_len").summary.min, 3.04);
    assert_eq!(m("mamba_usage").summary.count, 2);
    assert_eq!(m("token_usage").summary.count, 2);
    assert_eq!(m("running_reqs").summary.max, 13.0);
    assert_eq!(m("input_throughput").summary.count, 1);
    assert_eq!(
        m("gen_throughput").summary.first_time,
        crate::parse::parse_datetime("2026-10-30 12:00:05")
    );
}

#[test]
fn vllm_lines_and_year() {
    let t = "(APIServer pid=1234) INFO 11-01 09:59:00 [api_server.py:1] vLLM API server version 0.11.0\n\
             (APIServer pid=1234) INFO 11-01 09:59:01 [utils.py:1] non-default args: {'model': '/models/m', 'tensor_parallel_size': 4, 'api_key': 'x'}\n\
             (APIServer pid=1234) INFO 11-01 10:00:00 [loggers.py:336] Engine 000: Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: 1830.5 tokens/s, Running: 24 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 43.1%\n\
             (APIServer pid=1234) INFO 11-01 10:00:00 [metrics.py:121] SpecDecoding metrics: Mean acceptance length: 2.38, Accepted throughput: 123.40 tokens/s, Drafted throughput: 178.30 tokens/s, Accepted: 1234 tokens, Drafted: 1783 tokens, Per-position acceptance rate: 0.812, 0.655, 0.512, Avg Draft acceptance rate: 69.2%\n";
    let reference = crate::parse::parse_datetime("2026-11-02 00:00:00");
    let mut s = LogSource::default();
    parse_text(t, reference, 0, &mut s);
    assert_eq!(s.startups.len(), 1);
    assert_eq!(s.startups[0].version.as_deref(), Some("0.11.0"));
    assert_eq!(
        s.startups[0].time,
        crate::parse::parse_datetime("2026-11-01 09:59:01")
    );
    let m = |n: &str| s.metrics.iter().find(|x| x.name == n).unwrap();
    assert_eq!(m("gen_throughput").summary.last, 1830.5);
    assert!((m("kv_cache_usage").summary.last - 0.125).abs() < 1e-9);
    assert!((m("accept_rate").summary.last - 0.692).abs() < 1e-9);
    assert_eq!(m("accept_len").summary.last, 2.38);
    assert_eq!(m("running_reqs").summary.last, 24.0);
    // A December line read in January belongs to the previous year.
    let mut s = LogSource::default();
    let jan = crate::parse::parse_datetime("2027-01-02 00:00:00");
    parse_text(
        "INFO 12-31 23:00:00 [x.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%\n",
        jan,
        0,
        &mut s,
    );
    assert_eq!(
        s.metrics[0].summary.first_time,
        crate::parse::parse_datetime("2026-12-31 23:00:00")
    );
}

#[test]
fn journal_prefix() {
    let body = "\nB R unit system sglang.service\n2026-10-30T12:00:05+0000 gpu7 python3[4242]: [2026-10-30 12:00:05 TP0] Decode batch, #running-req: 9, #token: 45210, token usage: 0.21, cuda graph: True, gen throughput (token/s): 2150.37, #queue-req: 0\n";
    let s = parse_journal(body.as_bytes(), "B", None, 0, 1 << 22);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].location, "sglang.service");
    assert_eq!(
        s[0].metrics
            .iter()
            .find(|m| m.name == "gen_throughput")
            .unwrap()
            .summary
            .last,
        2150.37
    );
}

#[test]
fn journal_lifecycle_limits_versions_and_blobs() {
    // As vLLM 0.11 writes under systemd (coloured prefix), read with `journalctl -a`, plus
    // one line as journalctl prints it without `-a`.
    let body = "\nB R unit system vllm.service\n\
2026-11-20T16:31:11+00:00 h systemd[1]: Started vllm.service - vLLM.\n\
2026-11-20T16:31:12+00:00 h vllm[1571]: \u{1b}[1;36m(APIServer pid=1571)\u{1b}[0;0m INFO 11-20 16:31:12 [api_server.py:1885] vLLM API server version 0.10.1.1\n\
2026-11-20T16:32:40+00:00 h vllm[1571]: (EngineCore_DP0 pid=1578) INFO 11-20 16:32:40 [kv_cache_utils.py:1087] GPU KV cache size: 1,234,560 tokens\n\
2026-11-20T16:32:40+00:00 h vllm[1571]: (EngineCore_DP0 pid=1578) INFO 11-20 16:32:40 [kv_cache_utils.py:1091] Maximum concurrency for 65,536 tokens per request: 18.84x\n\
2026-11-20T16:40:00+00:00 h vllm[1571]: [253B blob data]\n\
2026-11-20T17:00:00+00:00 h systemd[1]: Stopping vllm.service - vLLM...\n\
2026-11-20T17:00:04+00:00 h systemd[1]: vllm.service: Main process exited, code=killed, status=9/KILL\n\
2026-11-20T17:00:04+00:00 h systemd[1]: vllm.service: Deactivated successfully.\n";
    let s = parse_journal(body.as_bytes(), "B", None, 0, 1 << 22);
    let j = &s[0];
    let kinds: Vec<probe_model::LifecycleKind> = j.lifecycle.iter().map(|e| e.kind).collect();
    use probe_model::LifecycleKind::*;
    assert_eq!(kinds, vec![Started, Stopping, Exited, Stopped]);
    assert_eq!(j.versions.len(), 1);
    assert_eq!(j.versions[0].version, "0.10.1.1");
    assert_eq!(j.limits.len(), 1, "{:?}", j.limits);
    assert_eq!(j.limits[0].values["kv_cache_tokens"], 1_234_560.0);
    assert_eq!(j.limits[0].values["max_concurrency"], 18.84);
    assert_eq!(j.limits[0].values["max_model_len"], 65_536.0);
    assert_eq!(j.unreadable_lines, 1);
    assert_eq!(j.status, SectionStatus::Truncated);
    assert!(j.message.as_deref().unwrap_or("").contains("blob data"));
}

#[test]
fn sglang_limits_line() {
    let cases: &[(&str, &[(&str, f64)])] = &[
        (
            "[2026-11-05 08:01:38 TP0] max_total_num_tokens=1286144, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=131072, available_gpu_mem=12.40 GB",
            &[
                ("max_total_num_tokens", 1_286_144.0),
                ("max_running_requests", 2048.0),
                ("context_len", 131_072.0),
                ("available_gpu_mem_gb", 12.4),
            ],
        ),
        (
            "[2026-11-05 08:01:38] server_args=ServerArgs(max_running_requests=48)",
            &[],
        ),
        (
            "[2026-11-05 08:01:38 TP0] Decode batch, #running-req: 9",
            &[],
        ),
    ];
    for (line, expected) in cases {
        let mut src = LogSource::default();
        parse_text(line, None, 0, &mut src);
        let got = src
            .limits
            .first()
            .map(|l| l.values.clone())
            .unwrap_or_default();
        for (k, v) in *expected {
            assert_eq!(got.get(*k), Some(v), "{line}: {got:?}");
        }
        if expected.is_empty() {
            assert!(src.limits.is_empty(), "{line}: {:?}", src.limits);
        }
    }
}

#[test]
fn docker_json_file() {
    // vLLM lines as docker's json-file driver stores them: the engine's own `MM-DD`
    // timestamp (no year, container time zone) loses to docker's per-line `time`; a
    // start-up line over 16 KiB arrives in parts; stderr interleaves with stdout.
    let long = "x".repeat(20_000);
    let args = format!("{{'model': '/mnt/models/L', 'tensor_parallel_size': 4, 'pad': '{long}'}}");
    let (a, b) = args.split_at(16_384 - 60);
    let j = |log: &str, stream: &str, time: &str| {
        format!(
            "{}\n",
            serde_json::json!({"log": log, "stream": stream, "time": time})
        )
    };
    let mut text = String::from("{\"log\":\"cut off\\n\",\"stre"); // a tail's first line
    text = text.split_at(10).0.to_string() + "\n";
    text += &j(
        "(APIServer pid=7) INFO 11-30 10:00:00 [api_server.py:1] vLLM API server version 0.11.0\n",
        "stdout",
        "2026-11-30T10:00:00.1Z",
    );
    text += &j(
        &format!("(APIServer pid=7) INFO 11-30 10:00:01 [utils.py:233] non-default args: {a}"),
        "stdout",
        "2026-11-30T10:00:01.123456789Z",
    );
    text += &j(
        "(EngineCore_DP0 pid=9) WARNING 11-30 10:00:01 [x.py:1] partial line on stderr\n",
        "stderr",
        "2026-11-30T10:00:01.2Z",
    );
    text += &j(&format!("{b}\n"), "stdout", "2026-11-30T10:00:01.3Z");
    text += "garbage that is not json\n";
    for (i, t) in ["2026-11-30T10:00:05Z", "2026-11-30T10:00:06.5Z"]
        .iter()
        .enumerate()
    {
        text += &j(
            &format!(
                "(APIServer pid=7) INFO 01-01 00:00:0{i} [loggers.py:127] Engine 000: Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: {}.5 tokens/s, Running: 24 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 43.1%\n",
                2100 + i
            ),
            "stdout",
            t,
        );
    }
    let mut budget = MAX_CONTAINER_LINES_TOTAL;
    let (lines, bad) = decode_container_log(text.as_bytes(), "json-file", &mut budget);
    assert_eq!(bad, 2, "the cut first line and the garbage");
    assert_eq!(lines.len(), 5);
    assert_eq!(budget, MAX_CONTAINER_LINES_TOTAL - 5);
    let mut s = LogSource::default();
    parse_timed_lines(
        lines.iter().map(|(t, l)| (*t, l.as_str())),
        None,
        3600,
        &mut s,
    );
    assert_eq!(s.startups.len(), 1);
    assert_eq!(s.startups[0].version.as_deref(), Some("0.11.0"));
    assert_eq!(
        s.startups[0].time,
        crate::parse::parse_rfc3339("2026-11-30T10:00:01Z")
    );
    assert!(
        s.startups[0]
            .text
            .starts_with("{'model': '/mnt/models/L', 'tensor_parallel_size': 4")
    );
    assert!(
        s.startups[0]
            .text
            .ends_with(&format!("{}'}}", "x".repeat(10)))
    );
    let g = &s
        .metrics
        .iter()
        .find(|m| m.name == "gen_throughput")
        .unwrap()
        .summary;
    assert_eq!((g.count, g.last), (2, 2101.5));
    assert_eq!(
        g.first_time,
        crate::parse::parse_rfc3339("2026-11-30T10:00:05Z")
    );
    assert_eq!(
        g.last_time,
        crate::parse::parse_rfc3339("2026-11-30T10:00:06Z")
    );
    // Parse through the section record format.
    let body = format!(
        "\nB R clog json-file\n\nB F ok log 1795000000 {} /var/lib/docker/containers/c/c-json.log\n{text}",
        text.len()
    );
    let l = parse_container_logs(body.as_bytes(), "B", None, 0);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].origin, LogOrigin::Container);
    assert_eq!(l[0].location, "/var/lib/docker/containers/c/c-json.log");
    assert_eq!(l[0].status, SectionStatus::Ok);
    assert_eq!(
        l[0].message.as_deref(),
        Some("2 lines could not be decoded")
    );
    assert_eq!(l[0].startups.len(), 1);
    // A binary (`local` driver) or non-JSON file is recorded, not parsed.
    let body = "\nB R clog local\n\nB F ok log 1 4 /x\n\u{1}\u{2}\u{3}\n\nB R clog json-file\n\nB F ok log 1 4 /y\nabc\n\nB R clog json-file\n\nB F denied log - - /z\n";
    let l = parse_container_logs(body.as_bytes(), "B", None, 0);
    assert_eq!(l.len(), 3);
    assert_eq!(l[0].status, SectionStatus::Failed);
    assert!(
        l[0].message
            .as_deref()
            .unwrap()
            .contains("log driver local")
    );
    assert_eq!(l[1].status, SectionStatus::Failed);
    assert!(
        l[1].message
            .as_deref()
            .unwrap()
            .contains("none of its 1 lines")
    );
    assert_eq!(l[2].status, SectionStatus::PermissionDenied);
}

#[test]
fn podman_k8s_file_and_budget() {
    let text = "2026-11-30T10:00:00.5+01:00 stdout P [2026-11-30 10:00:00 TP0] Decode batch, #running-req: 9, gen thr\n\
                2026-11-30T10:00:00.6+01:00 stderr F some warning\n\
                2026-11-30T10:00:00.7+01:00 stdout F oughput (token/s): 422.40, #queue-req: 1\n\
                not a k8s line\n";
    let mut budget = 10;
    let (lines, bad) = decode_container_log(text.as_bytes(), "k8s-file", &mut budget);
    assert_eq!(bad, 1);
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[1].1,
        "[2026-11-30 10:00:00 TP0] Decode batch, #running-req: 9, gen throughput (token/s): 422.40, #queue-req: 1"
    );
    assert_eq!(
        lines[1].0,
        crate::parse::parse_rfc3339("2026-11-30T09:00:00Z")
    );
    let mut s = LogSource::default();
    parse_timed_lines(lines.iter().map(|(t, l)| (*t, l.as_str())), None, 0, &mut s);
    let g = &s
        .metrics
        .iter()
        .find(|m| m.name == "gen_throughput")
        .unwrap()
        .summary;
    assert_eq!(g.last, 422.4);
    assert_eq!(
        g.last_time,
        crate::parse::parse_rfc3339("2026-11-30T09:00:00Z")
    );
    // The total budget stops decoding.
    let many =
        "{\"log\":\"a\\n\",\"stream\":\"stdout\",\"time\":\"2026-11-30T10:00:00Z\"}\n".repeat(50);
    let mut budget = 7;
    let (lines, _) = decode_container_log(many.as_bytes(), "json-file", &mut budget);
    assert_eq!((lines.len(), budget), (7, 0));
}

#[test]
fn llama_cpp_print_timing_lines() {
    // (log text, series, count, last value)
    let cases: &[(&str, &str, u64, f64)] = &[
        (
            "slot print_timing: id  0 | task 42 | \nprompt eval time =     123.45 ms /    12 tokens (   10.29 ms per token,    97.21 tokens per second)\n       eval time =    1234.56 ms /   100 tokens (   12.35 ms per token,    81.00 tokens per second)\n      total time =    1358.01 ms /   112 tokens\n",
            "request_gen_throughput",
            1,
            81.0,
        ),
        (
            "prompt eval time =     123.45 ms /    12 tokens (   10.29 ms per token,    97.21 tokens per second)\n",
            "request_prompt_ms",
            1,
            123.45,
        ),
        (
            "       eval time =    1234.56 ms /   100 tokens (   12.35 ms per token,    81.00 tokens per second)\n       eval time =    1000.00 ms /   100 tokens (   10.00 ms per token,   100.00 tokens per second)\n",
            "request_tpot_ms",
            2,
            10.0,
        ),
        // Older builds (llama_print_timings) say `runs`.
        (
            "llama_print_timings:        eval time =   500.00 ms /    49 runs   (   10.20 ms per token,    98.00 tokens per second)\n",
            "request_gen_throughput",
            1,
            98.0,
        ),
    ];
    for (text, name, count, last) in cases {
        let mut src = LogSource::default();
        parse_text(text, None, 0, &mut src);
        let m = src.metrics.iter().find(|m| m.name == *name);
        assert_eq!(
            m.map(|m| m.summary.count),
            Some(*count),
            "{name} in {text:?}"
        );
        assert_eq!(m.map(|m| m.summary.last), Some(*last), "{name} in {text:?}");
    }
    // Not timings: a total line, a garbled one.
    let mut src = LogSource::default();
    parse_text(
        "      total time =    1358.01 ms /   112 tokens\neval time = x ms / 3 tokens (\n",
        None,
        0,
        &mut src,
    );
    assert!(src.metrics.is_empty());
}

#[test]
fn bounded_points() {
    let mut t = String::new();
    for i in 0..20_000 {
        t.push_str(&format!("[2026-10-30 12:00:00] Decode batch, #running-req: {i}, gen throughput (token/s): 1.0, #queue-req: 0\n"));
    }
    let mut s = LogSource::default();
    parse_text(&t, None, 0, &mut s);
    let m = s.metrics.iter().find(|m| m.name == "running_reqs").unwrap();
    assert_eq!(m.summary.count, 20_000);
    assert!(
        m.points.len() <= MAX_POINTS + RECENT_POINTS,
        "{}",
        m.points.len()
    );
    // The newest all, the first kept, the older ones evenly spread (one every 16th here).
    let values: Vec<f64> = m.points.iter().map(|p| p.1).collect();
    assert_eq!(values.first(), Some(&0.0));
    let recent: Vec<f64> = (20_000 - RECENT_POINTS..20_000).map(|v| v as f64).collect();
    assert_eq!(values[values.len() - RECENT_POINTS..], recent[..]);
    let older = &values[..values.len() - RECENT_POINTS];
    assert!(older.windows(2).all(|w| w[1] - w[0] == 16.0), "{older:?}");
}
