//! Property tests: every parser and the framing are total on random bytes, and a body
//! containing boundary-like lines cannot create a section or a record.

use probe_collect::{frame, parse, redact::Redactor, sanitize_terminal};
use probe_model::{GpuState, LogSource, ShellKind};
use proptest::prelude::*;

const B: &str = "00112233445566778899aabbccddeeff";

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    // Random bytes mixed with fragments that steer parsers into their interesting paths.
    let frags = prop_oneof![
        any::<Vec<u8>>(),
        Just(format!("\n{B} R p 12 cmdline\n").into_bytes()),
        Just(format!("\n{B} F ok root 1 5 /x\n").into_bytes()),
        Just(format!("\n{B} R meta /sp/x.dist-info/METADATA\nName: torch\nVersion: 2\n").into_bytes()),
        Just(b"#1761811200\n: 1761811200:0;ls\\\n- cmd: x\n  when: 5\n".to_vec()),
        Just(b"[2026-10-30 12:00:05 TP0] Decode batch, #running-req: 9, accept len: 3.0, gen throughput (token/s): 1.5\n".to_vec()),
        Just(b"INFO 11-01 10:00:00 [x.py:1] non-default args: {'a': 1}\nserver_args=X\n".to_vec()),
        Just(b"index, name, uuid\n0, H100, GPU-1\n[N/A], \xff, \n".to_vec()),
        Just(b"[Service]\nExecStart=\nExecStart=a \\\nEnvironment=\"A=1\" 'B\nStart-Date: 2026-01-01  00:00:00\nInstall: nvidia (1, 2)\n".to_vec()),
        Just(b"\x1b[31m\x1b]0;t\x07\x00\xc3".to_vec()),
        Just(format!("\n{B} R clog json-file\n\n{B} F ok log 1 9 /l\n").into_bytes()),
        Just(b"{\"log\":\"INFO 11-01 10:00:00 [x.py:1] non-default args: {}\",\"stream\":\"stdout\",\"time\":\"2026-11-30T10:00:00.5Z\"}\n".to_vec()),
        Just(b"{\"log\":\"\\u001b[2J Avg prompt throughput: 1.0 tokens/s\\n\",\"stream\":\"stderr\",\"time\":\"9999-99-99T\"}\n".to_vec()),
        Just(b"2026-11-30T10:00:00.1+00:00 stdout P Decode batch, #running-req: 9\n".to_vec()),
    ];
    prop::collection::vec(frags, 0..12).prop_map(|v| v.concat())
}

/// Random text mixed with the other engines' lines (`configs/log_lines.toml`), cut anywhere.
fn engine_text() -> impl Strategy<Value = String> {
    let frags = prop_oneof![
        any::<String>(),
        Just("\u{1b}[34m0.05.097.342\u{1b}[0m \u{1b}[32mI \u{1b}[0mload_tensors: offloaded 29/33 layers to GPU\n".to_string()),
        Just("llama_context: n_ctx         = 8192\nllama_context: n_ctx_seq     = 99999999999999999999999\n".to_string()),
        Just("slot   load_model: id  0 | task -1 | new slot, n_ctx = 2048\n".to_string()),
        Just("prompt eval time =     123.45 ms /    12 tokens (   10.29 ms per token,    97.21 tokens per second)\n".to_string()),
        Just("msg=\"offload to cuda\" layers.model=33 layers.offload=20 KvSize:16384 runner.num_ctx=4096 eval rate: 1e309 tokens/s\n".to_string()),
        Just("time_per_token=\"49.6ms\" queue_time=\"67.59µs\" inference_time=\"99999999999999999999h\"\n".to_string()),
        Just("[2026-08-21 10:00:00 DP0] Avg thr (in/out): 512.3 / 1830.5 tokens/s, Engine (running/waiting): 24 / 2, KV cache: 12.5%\n".to_string()),
        Just("iter = 1, host_step_time = 0ms, num_scheduled_requests: 8, 'num_generation_tokens': 8}\n".to_string()),
    ];
    prop::collection::vec(frags, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The other engines' lines never panic the reader and give only finite values.
    #[test]
    fn engine_lines_are_total(text in engine_text(), cut in 0usize..4096) {
        let cut = (0..=cut.min(text.len())).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
        let text = &text[..cut];
        for line in text.lines() {
            for found in parse::engine_lines::read(line) {
                let v = match found {
                    parse::engine_lines::Found::Metric { value, .. } => value,
                    parse::engine_lines::Found::Limit { value, .. } => value,
                };
                prop_assert!(v.is_finite(), "{line}");
            }
        }
        let mut l = LogSource::default();
        parse::logs::parse_text(text, Some(0), 0, &mut l);
        prop_assert!(l.metrics.iter().all(|m| m.summary.mean.is_finite()));
        prop_assert!(l.limits.iter().all(|r| r.values.values().all(|v| v.is_finite())));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn framing_is_total(data in bytes()) {
        let f = frame::parse(&data, B);
        for s in &f.sections {
            let _ = frame::records(&s.body, B);
        }
        let _ = frame::records(&data, B);
    }

    #[test]
    fn forged_lines_cannot_create_sections(body in bytes(), fake in "[0-9a-f]{32}") {
        // A body printing section markers with any other boundary stays one section.
        prop_assume!(fake != B);
        let mut b = body.clone();
        b.extend_from_slice(format!("\n{fake} END s 1 2\n{fake} BEGIN evil\n{fake} DONE\n").as_bytes());
        // The body itself must not contain the real boundary (it is random per run).
        prop_assume!(frame::find(&b, B.as_bytes()).is_none());
        let mut out = format!("\n{B} BEGIN s\n").into_bytes();
        out.extend_from_slice(&b);
        out.extend_from_slice(format!("\n{B} ERR s\n\n{B} rc 0\n\n{B} END s 1 2\n\n{B} DONE\n").as_bytes());
        let f = frame::parse(&out, B);
        prop_assert_eq!(f.sections.len(), 1);
        prop_assert_eq!(&f.sections[0].body, &b);
        prop_assert_eq!(f.sections[0].rc, Some(0));
        prop_assert!(frame::records(&b, B).iter().all(|r| r.kind == '-'));
    }

    /// A file record whose name holds any bytes but the framing's own (NUL, newline), UTF-8
    /// or not, is one record of an untampered section, and the sections around it are whole.
    #[test]
    fn any_file_name_is_a_file_record(
        name in prop::collection::vec(any::<u8>().prop_filter("not a line end", |c| *c != b'\n' && *c != 0), 1..40),
        content in prop::collection::vec(any::<u8>().prop_filter("no line end", |c| *c != b'\n'), 0..40),
    ) {
        let mut path = b"/etc/systemd/system/".to_vec();
        path.extend_from_slice(&name);
        path.extend_from_slice(b".service");
        prop_assume!(frame::find(&path, B.as_bytes()).is_none() && frame::find(&content, B.as_bytes()).is_none());
        let mut body = format!("{B} F ok unit 1700000000 {} ", content.len()).into_bytes();
        body.extend_from_slice(&path);
        body.push(b'\n');
        body.extend_from_slice(&content);
        let mut out = format!("\n{B} BEGIN a\nfirst\n{B} ERR a\n\n{B} rc 0\n\n{B} END a 1 2\n\n{B} BEGIN units\n").into_bytes();
        out.extend_from_slice(&body);
        out.extend_from_slice(format!("\n{B} ERR units\n\n{B} rc 0\n\n{B} END units 1 2\n\n{B} BEGIN c\nlast\n{B} ERR c\n\n{B} rc 0\n\n{B} END c 1 2\n\n{B} DONE\n").as_bytes());
        let f = frame::parse(&out, B);
        prop_assert_eq!(f.sections.len(), 3);
        prop_assert!(f.sections.iter().all(|s| s.tampered.is_none()), "{:?}", f.sections);
        let units = &f.sections[1];
        let records = frame::records(&units.body, B);
        prop_assert_eq!(records.len(), 1);
        prop_assert_eq!(records[0].kind, 'F');
        prop_assert_eq!(records[0].data, &content[..]);
        let header = frame::file_header(&records[0].header);
        prop_assert!(header.path.starts_with("/etc/systemd/system/"), "{}", header.path);
        prop_assert_eq!(header.status, frame::FileStatus::Ok);
        prop_assert_eq!(&f.sections[2].body, b"last");
    }

    #[test]
    fn parsers_are_total(data in bytes()) {
        let mut ctx = parse::Ctx { boundary: B.into(), clk_tck: Some(100), boot_time: Some(1), ..Default::default() };
        let _ = parse::host::parse(&data, &mut ctx);
        let _ = parse::history::parse(&data, B);
        for k in [ShellKind::Bash, ShellKind::Zsh, ShellKind::Fish] {
            let _ = parse::history::parse_entries(k, &data, true);
            let _ = parse::history::parse_entries(k, &data, false);
        }
        let _ = parse::units::parse(&data, B);
        let _ = parse::units::parse_show(&data, 3600);
        let _ = parse::processes::parse(&data, &ctx);
        let _ = parse::containers::parse(&data, B);
        let mut g = GpuState::default();
        parse::gpu::parse_query(&data, &data, &mut g);
        parse::gpu::parse_banner(&data, &mut g);
        let _ = parse::gpu::parse_apps(&data);
        let _ = parse::gpu::parse_topo(&data);
        let _ = parse::pkgs::parse(&data, B, 0);
        let _ = parse::pkgs::not_read(&data, B);
        let _ = parse::bench::parse(&data, B, 3600);
        let _ = parse::python::parse(&data, B);
        let _ = parse::models::parse(&data, B);
        let _ = parse::logs::parse_files(&data, B, Some(1_800_000_000), -18000);
        let _ = parse::logs::parse_journal(&data, B, None, 0, 10);
        let _ = parse::logs::parse_container_logs(&data, B, None, 0);
        for driver in ["json-file", "k8s-file", "local"] {
            let mut budget = 100;
            let (lines, _) = parse::logs::decode_container_log(&data, driver, &mut budget);
            prop_assert!(lines.len() <= 100);
        }
        let mut l = LogSource::default();
        parse::logs::parse_text(&String::from_utf8_lossy(&data), Some(0), 0, &mut l);
    }

    #[test]
    fn sanitized_text_has_no_controls(s in any::<String>()) {
        let t = sanitize_terminal(&s);
        prop_assert!(t.chars().all(|c| c == '\n' || c == '\t' || !c.is_control()));
    }

    #[test]
    fn redaction_is_total_and_idempotent(s in any::<String>(), v in "[A-Za-z0-9]{8,30}") {
        let r = Redactor::builtin();
        let once = r.redact_text(&s).into_owned();
        prop_assert_eq!(r.redact_text(&once).into_owned(), once);
        let t = format!("HF_TOKEN={v} --api-key {v}");
        let red = r.redact_text(&t).into_owned();
        prop_assert!(!red.contains(&v), "{}", red);
        let mut argv = vec!["x".to_string(), "--api-key".to_string(), v.clone()];
        r.redact_argv(&mut argv);
        prop_assert!(!argv.contains(&v));
    }
}

fn metrics_text() -> impl Strategy<Value = String> {
    let frags = prop_oneof![
        any::<String>(),
        Just("# TYPE vllm:num_requests_running gauge\n".to_string()),
        Just("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3\n".to_string()),
        Just("vllm:cache_config_info{block_size=\"16\",a=\"\\\"\\\\\\n\"} 1\n".to_string()),
        Just(
            "sglang:token_usage{tp_rank=\"1\"} NaN\nsglang:token_usage{tp_rank= 0.5\n".to_string()
        ),
        Just(
            "vllm:prompt_tokens_total{le=\"+Inf\"} +Inf 123\nvllm:prompt_tokens_total 1e400\n"
                .to_string()
        ),
        Just("llamacpp:tokens_predicted_total{} -0\n\u{1b}[2J\n".to_string()),
    ];
    prop::collection::vec(frags, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn server_answers_never_panic(text in metrics_text(), bytes in bytes()) {
        use probe_collect::server::{answers, endpoints::{endpoints, Reads}, prom};
        let cfg = endpoints();
        let read = prom::read(&text, &cfg.metrics, cfg.limits.max_line, "/metrics");
        prop_assert!(read.metrics.iter().all(|m| m.value.is_finite()));
        let lossy = String::from_utf8_lossy(&bytes);
        let _ = prom::read(&lossy, &cfg.metrics, cfg.limits.max_line, "/metrics");
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) {
            for reads in [Reads::ServerInfo, Reads::ModelInfo, Reads::Models, Reads::Props, Reads::Info, Reads::Version] {
                let mut r = probe_model::ServerReading::default();
                answers::fold(reads, &v, "/x", cfg, Some(Redactor::builtin()), &mut r);
            }
        }
    }
}
