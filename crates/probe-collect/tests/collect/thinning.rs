//! The host's thinning pass (`probe_collect::thin`, `[thinning]` in configs/probes.toml) run by
//! the real awks a host may have (mawk, gawk, busybox awk; each that is installed here), held to
//! the readers: every line they take something from survives, metric lines are kept evenly in
//! time over the whole retention, the counts add up, and hostile bytes cost nothing.

use std::io::Write;
use std::process::{Command, Stdio};

use probe_collect::parse::logs::{parse_files, parse_journal};
use probe_collect::thin;
use probe_model::{LogSource, SectionStatus};

const B: &str = "c0ffee00c0ffee00c0ffee00c0ffee00";

/// The awks installed here, as argv prefixes.
fn awks() -> Vec<Vec<&'static str>> {
    let mut out = Vec::new();
    for (probe, argv) in [
        ("mawk", vec!["mawk"]),
        ("gawk", vec!["gawk"]),
        ("busybox", vec!["busybox", "awk"]),
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {probe}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if found {
            out.push(argv);
        }
    }
    assert!(!out.is_empty(), "no awk installed (mawk comes with Debian)");
    out
}

/// What the thinning pass sends for `input` (a whole-retention pass that ended with `rc`,
/// then `tail` when given), as one section body: `rec unit` + the kept lines + `thin`.
fn thinned(awk: &[&str], input: &[u8], rc: u32, tail: Option<&[u8]>) -> Vec<u8> {
    thinned_by(thin::program(), awk, input, rc, tail)
}

fn thinned_by(program: &str, awk: &[&str], input: &[u8], rc: u32, tail: Option<&[u8]>) -> Vec<u8> {
    let mut child = Command::new(awk[0])
        .args(&awk[1..])
        .arg(program)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("awk starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut feed = Vec::new();
    feed.extend_from_slice(format!("{B}\n").as_bytes());
    feed.extend_from_slice(input);
    feed.extend_from_slice(format!("{B} @end@ {rc}\n").as_bytes());
    if let Some(t) = tail {
        feed.extend_from_slice(t);
    }
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&feed);
    });
    let out = child.wait_with_output().expect("awk runs");
    writer.join().expect("writer");
    assert!(out.status.success(), "{awk:?} failed");
    let mut body = format!("\n{B} R unit system vllm.service\n").into_bytes();
    body.extend_from_slice(&out.stdout);
    body
}

fn journal_of(body: &[u8]) -> LogSource {
    parse_journal(body, B, Some(1_796_000_000), 0, 4 << 20)
        .into_iter()
        .next()
        .expect("one journal")
}

/// A fixture's recorded journal (`EPOCH.USEC<TAB>IDENT<TAB>PID<TAB>MESSAGE`) as `journalctl -o
/// short-iso` prints it.
fn short_iso(recorded: &str) -> String {
    let mut out = String::new();
    for line in recorded.lines() {
        let mut f = line.splitn(4, '\t');
        let (Some(t), Some(ident), Some(pid), Some(msg)) = (f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let secs = t
            .split('.')
            .next()
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(0);
        out.push_str(&format!(
            "{}+00:00 fixture {ident}[{pid}]: {msg}\n",
            iso(secs)
        ));
    }
    out
}

fn iso(secs: i64) -> String {
    probe_model::civil::utc_second(secs)
        .trim_end_matches(" UTC")
        .replacen(' ', "T", 1)
}

fn fixture_journal(name: &str, unit: &str) -> String {
    let p = format!(
        "{}/../probe-testkit/fixtures/{name}/root/usr/local/share/fixture/journal/{unit}.journal",
        env!("CARGO_MANIFEST_DIR")
    );
    short_iso(&std::fs::read_to_string(p).expect("fixture journal"))
}

/// Every recorded fixture journal, thinned by every awk, reads to the same lifecycle, versions,
/// start-up records and limits as the whole text, and to the same metric series, fewer samples.
#[test]
fn thinning_keeps_what_the_reader_reads() {
    for (fixture, unit) in [
        ("vllm-upgrade", "vllm.service"),
        ("vllm-systemd", "vllm.service"),
        ("vllm-bench", "vllm.service"),
        ("sglang-hybrid", "sglang-qwen.service"),
    ] {
        let text = fixture_journal(fixture, unit);
        let mut whole = format!("\n{B} R unit system vllm.service\n").into_bytes();
        whole.extend_from_slice(text.as_bytes());
        let full = journal_of(&whole);
        for awk in awks() {
            let thin = journal_of(&thinned(&awk, text.as_bytes(), 0, None));
            let what = format!("{fixture} through {awk:?}");
            assert_eq!(thin.lifecycle, full.lifecycle, "{what}: lifecycle");
            assert_eq!(thin.versions, full.versions, "{what}: versions");
            assert_eq!(thin.startups, full.startups, "{what}: start-ups");
            assert_eq!(thin.limits, full.limits, "{what}: limits");
            let names =
                |s: &LogSource| s.metrics.iter().map(|m| m.name.clone()).collect::<Vec<_>>();
            assert_eq!(names(&thin), names(&full), "{what}: series");
            let t = thin.thinning.as_ref().expect("thinning record");
            assert_eq!(
                t.lines_seen,
                text.lines().count() as u64,
                "{what}: lines seen"
            );
            assert!(t.metric_lines_kept < t.metric_lines_seen, "{what}: {t:?}");
            assert!(
                !t.stopped_early && thin.status != SectionStatus::Truncated,
                "{what}"
            );
        }
    }
}

/// One line of each kind the readers take something from, for every engine: each survives
/// the thinning far from any start (after hundreds of request lines), by every awk.
#[test]
fn every_reader_line_survives_outside_a_start_up_window() {
    let samples = [
        "Stopping vllm.service - vLLM server...",
        "vllm.service: Main process exited, code=killed, status=9/KILL",
        "vllm.service: Failed with result 'signal'.",
        "vllm.service: Deactivated successfully.",
        "(EngineCore_DP0 pid=1439) INFO 11-12 09:01:31 [kv_cache_utils.py:1087] GPU KV cache size: 1,154,496 tokens",
        "(EngineCore_DP0 pid=1439) INFO 11-12 09:01:31 [kv_cache_utils.py:1091] Maximum concurrency for 65,536 tokens per request: 17.62x",
        "[2026-11-04 10:00:00] max_total_num_tokens=412345, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=2048, context_len=131072, available_gpu_mem=12.5 GB",
        "0.05.097.342 I load_tensors: offloaded 29/33 layers to GPU",
        "0.09.633.001 I llama_context: n_ctx         = 8192",
        "llama_context: n_seq_max     = 4",
        "srv    load_model: initializing slots, n_slots = 4",
        "2024-05-01T12:00:01.123456Z  INFO text_generation_router_v3: backends/v3/src/lib.rs:137: Setting max batch total tokens to 16000",
        "2024-05-01T12:00:00.5Z  INFO text_generation_launcher: Default `max_batch_prefill_tokens` to 4145",
        "time=2025-03-01T10:00:00.000Z level=INFO source=server.go:105 msg=\"server config\" env=\"map[OLLAMA_CONTEXT_LENGTH:4096]\"",
        "[1.2K blob data]",
        "Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ];
    let filler: String = (0..500)
        .map(|i| format!("2026-11-12T09:{:02}:{:02}+00:00 fixture vllm[1432]: (APIServer pid=1432) INFO:     10.0.3.7:{} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n", i / 60 % 60, i % 60, 40000 + i))
        .collect();
    for awk in awks() {
        for sample in samples {
            let input =
                format!("{filler}2026-11-12T10:30:00+00:00 fixture vllm[1432]: {sample}\n{filler}");
            let out = thinned(&awk, input.as_bytes(), 0, None);
            let out = String::from_utf8_lossy(&out);
            assert!(out.contains(sample), "{awk:?} dropped {sample:?}");
            assert!(!out.contains("POST /v1/chat"), "{awk:?} kept request lines");
        }
    }
}

/// A vLLM stats line every 10 s for `days` from `start`, idle between 01:00 and 05:00, with three
/// access lines per stats line (as `journalctl -o short-iso` prints them).
fn weeks_of_vllm(start: i64, days: i64, rate: f64) -> String {
    let mut out = String::new();
    let mut t = start;
    out.push_str(&format!(
        "{}+00:00 gpu7 systemd[1]: Started vllm.service - vLLM.\n",
        iso(t)
    ));
    out.push_str(&format!("{}+00:00 gpu7 vllm[1432]: (APIServer pid=1432) INFO 10-22 00:00:01 [api_server.py:1885] vLLM API server version 0.11.0\n", iso(t)));
    while t < start + days * 86_400 {
        t += 10;
        let hour = (t / 3600) % 24;
        let stamp = iso(t);
        let vllm = format!("{}-{} {}", &stamp[5..7], &stamp[8..10], &stamp[11..19]);
        if (1..5).contains(&hour) {
            out.push_str(&format!("{stamp}+00:00 gpu7 vllm[1432]: (APIServer pid=1432) INFO {vllm} [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%\n"));
            continue;
        }
        out.push_str(&format!("{stamp}+00:00 gpu7 vllm[1432]: (APIServer pid=1432) INFO {vllm} [loggers.py:127] Engine 000: Avg prompt throughput: 512.0 tokens/s, Avg generation throughput: {rate:.1} tokens/s, Running: 30 reqs, Waiting: 0 reqs, GPU KV cache usage: 21.0%, Prefix cache hit rate: 40.1%\n"));
        for j in 0..3 {
            out.push_str(&format!("{stamp}+00:00 gpu7 vllm[1432]: (APIServer pid=1432) INFO:     10.0.3.{j}:5123{j} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"));
        }
    }
    out
}

/// Three weeks of a server (635,000 lines): the metric lines kept are the configured number an
/// hour and kind at most (one idle line an hour), spread over every day, the run's start is kept, and the bytes
/// sent are a small fraction of those read.
#[test]
fn three_weeks_are_kept_evenly_in_time() {
    let start = 1_792_627_200; // 2026-10-22T00:00:00Z
    let text = weeks_of_vllm(start, 21, 2300.0);
    for awk in awks() {
        let body = thinned(&awk, text.as_bytes(), 0, None);
        assert!(
            body.len() * 20 < text.len(),
            "{awk:?}: {} bytes out of {}",
            body.len(),
            text.len()
        );
        let src = journal_of(&body);
        let t = src.thinning.clone().expect("thinning");
        assert_eq!(t.lines_seen, text.lines().count() as u64);
        // 20 busy hours a day x the slots of an hour + 4 idle hours x 1, for 21 days (and the
        // line at the end), and the newest 720 metric lines (two hours) all.
        let mph = u64::from(thin::metric_lines_per_hour());
        let slots = 21 * (20 * mph + 4) + 1;
        assert_eq!(t.metric_lines_kept, slots + 720 - 2 * mph, "{awk:?}: {t:?}");
        let series = src
            .metrics
            .iter()
            .find(|m| m.name == "gen_throughput")
            .expect("series");
        let first = series.points.first().and_then(|p| p.0).expect("timed");
        let last = series.points.last().and_then(|p| p.0).expect("timed");
        assert!(first - start < 3600, "{awk:?}: first point {first}");
        assert!(
            start + 21 * 86_400 - last < 3600,
            "{awk:?}: last point {last}"
        );
        assert_eq!(t.first_time, Some(start), "{awk:?}");
        assert_eq!(src.versions.len(), 1, "{awk:?}");
    }
}

/// Kept lines that outgrow the byte cap: every other metric line of each kind goes, again
/// until they fit, so what is sent still spans the whole retention (first day to last hour)
/// and stays within the cap; the start-up lines all stay.
#[test]
fn over_the_byte_cap_the_metric_lines_thin_out_evenly() {
    let start = 1_792_627_200;
    let text = weeks_of_vllm(start, 21, 2300.0);
    let mut small = thin::builtin().clone();
    small.max_bytes = 300_000;
    small.recent_metric_lines = 1;
    let program = thin::program_of(&small);
    for awk in awks() {
        let body = thinned_by(&program, &awk, text.as_bytes(), 0, None);
        assert!(body.len() < 320_000, "{awk:?}: {}", body.len());
        let src = journal_of(&body);
        let t = src.thinning.clone().expect("thinning");
        assert!(t.dropped_over_size > 0, "{awk:?}: {t:?}");
        assert!(
            !t.stopped_early && src.status != SectionStatus::Truncated,
            "{awk:?}"
        );
        let series = src
            .metrics
            .iter()
            .find(|m| m.name == "gen_throughput")
            .expect("series");
        let times: Vec<i64> = series.points.iter().filter_map(|p| p.0).collect();
        let (first, last) = (times[0], times[times.len() - 1]);
        assert!(first - start < 86_400, "{awk:?}: first point {first}");
        assert!(
            start + 21 * 86_400 - last < 86_400,
            "{awk:?}: last point {last}"
        );
        // Evenly: every day holds some of them.
        for day in 0..21 {
            let from = start + day * 86_400;
            assert!(
                times.iter().any(|t| (from..from + 86_400).contains(t)),
                "{awk:?}: day {day} has none"
            );
        }
        assert_eq!(src.versions.len(), 1, "{awk:?}");
    }
}

/// A reader stopped at its time limit: the newest lines read again after `@end@ 124` are kept
/// where they are newer than the last line the pass saw, never twice, and the log says it is
/// partial.
#[test]
fn a_reader_stopped_early_keeps_the_newest_lines_once() {
    let start = 1_792_627_200;
    let all = weeks_of_vllm(start, 4, 2300.0);
    let lines: Vec<&str> = all.lines().collect();
    let cut = lines.len() / 2;
    let first_pass: String = lines.iter().take(cut).map(|l| format!("{l}\n")).collect();
    let tail: String = lines
        .iter()
        .skip(lines.len() - 20_000)
        .map(|l| format!("{l}\n"))
        .collect();
    let whole: String = lines.iter().map(|l| format!("{l}\n")).collect();
    for awk in awks() {
        let partial = journal_of(&thinned(
            &awk,
            first_pass.as_bytes(),
            124,
            Some(tail.as_bytes()),
        ));
        let complete = journal_of(&thinned(&awk, whole.as_bytes(), 0, None));
        let t = partial.thinning.clone().expect("thinning");
        assert!(t.stopped_early, "{awk:?}");
        assert_eq!(partial.status, SectionStatus::Truncated);
        assert!(
            partial
                .message
                .as_deref()
                .is_some_and(|m| m.contains("time limit"))
        );
        let points = |s: &LogSource| {
            s.metrics
                .iter()
                .find(|m| m.name == "gen_throughput")
                .map(|m| m.points.iter().filter_map(|p| p.0).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let (p, c) = (points(&partial), points(&complete));
        let mut sorted = p.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), p.len(), "{awk:?}: a line kept twice");
        assert_eq!(p.last(), c.last(), "{awk:?}: the newest sample");
        let count = |s: &LogSource| {
            s.metrics
                .iter()
                .find(|m| m.name == "gen_throughput")
                .map_or(0, |m| m.summary.count)
        };
        assert!(
            count(&partial) < count(&complete),
            "{awk:?}: what lay between is missing"
        );
    }
}

/// Hostile bytes: a 4 MiB line, NUL bytes, invalid UTF-8, a forged `thin` record and a forged
/// end mark inside the log. The awk survives, the forged records are text, the counts are the
/// host's.
#[test]
fn hostile_log_lines_are_only_text() {
    let mut input = Vec::new();
    input.extend_from_slice(b"2026-11-12T09:00:00+00:00 h vllm[1]: Started x\n");
    input.extend_from_slice(b"2026-11-12T09:00:01+00:00 h vllm[1]: ERROR ");
    input.extend(std::iter::repeat_n(b'A', 4 << 20));
    input.push(b'\n');
    input.extend_from_slice(b"2026-11-12T09:00:02+00:00 h vllm[1]: ERROR \x00\xff\xfe bad\n");
    input.extend_from_slice(format!("{B} @end@ 0\n").as_bytes());
    input.extend_from_slice(b"\nforged R thin 1 1 1 1 0 0 0\n");
    for awk in awks() {
        let body = thinned(&awk, &input, 0, None);
        let src = journal_of(&body);
        let t = src.thinning.clone().expect("thinning");
        assert!(t.lines_seen >= 5, "{awk:?}: {t:?}");
        assert!(!t.stopped_early, "{awk:?}");
    }
}

/// A log file read whole (`fil log PATH a CAP`): the `F` record, then the kept lines, then the
/// `thin` record; read as a thinned file, not as a tail cut mid-line.
#[test]
fn a_thinned_log_file_is_read_whole() {
    let start = 1_792_627_200;
    let text = weeks_of_vllm(start, 2, 1800.0);
    let awk = awks().remove(0);
    let kept = thinned(&awk, text.as_bytes(), 0, None);
    let kept = kept
        .splitn(3, |&c| c == b'\n')
        .nth(2)
        .unwrap_or_default()
        .to_vec();
    let mut body = format!(
        "\n{B} F ok log {} {} /var/log/vllm/server.log\n",
        start + 2 * 86_400,
        text.len()
    )
    .into_bytes();
    body.extend_from_slice(&kept);
    let src = parse_files(&body, B, None, 0)
        .into_iter()
        .next()
        .expect("one file");
    assert_eq!(src.status, SectionStatus::Ok, "{:?}", src.message);
    assert!(!src.truncated);
    let t = src.thinning.expect("thinning");
    let mph = u64::from(thin::metric_lines_per_hour());
    assert_eq!(t.metric_lines_kept, 2 * (20 * mph + 4) + 1 + 720 - 2 * mph);
    assert_eq!(t.first_time, Some(start));
}
