//! End-to-end: `probe host` asks the running servers of fixture hosts about themselves over the
//! SSH connection (direct-tcpip to the launch's loopback address), and the fake servers' own
//! request logs show what arrived: only allow-listed GETs, no body, no credentials.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use probe_model::{EffectiveKind, HostReport, ServerStatus, ServerView};
use probe_testkit::fixture::SharedFleet;

use crate::util;

const HOSTS: &[&str] = &[
    "serve-sglang",
    "serve-vllm",
    "serve-llamacpp",
    "serve-noforward",
];

/// The log line of each fake whose counters feed its /metrics: (host, log, text).
const METRIC_LINES: &[(&str, &str, &str)] = &[
    ("serve-sglang", "root/root/sglang.log", "Decode batch"),
    ("serve-vllm", "root/root/vllm.log", "Avg prompt throughput"),
    ("serve-llamacpp", "root/root/llama.log", "eval time"),
];

/// Waits (at most a minute) until `path` holds `count` lines containing `text`.
fn wait_for_lines(path: &Path, text: &str, count: usize) {
    let what = format!("{}: {count} {text:?} lines", path.display());
    util::wait_until(&what, Duration::from_secs(60), || {
        let content = std::fs::read_to_string(path).unwrap_or_default();
        content.lines().filter(|l| l.contains(text)).count() >= count
    });
}

/// Waits (at most a minute) until every server of the fixture host copy at `dir` started at
/// least `seconds` ago, by the epoch its start.sh recorded (`run/LABEL.start`).
fn wait_for_uptime(dir: &Path, seconds: u64) {
    let run = dir.join("root/usr/local/share/fixture/run");
    let starts: Vec<u64> = std::fs::read_dir(&run)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "start"))
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .filter_map(|text| text.trim().parse().ok())
        .collect();
    assert!(
        !starts.is_empty(),
        "{}: no server start recorded",
        run.display()
    );
    let latest = starts.into_iter().max().unwrap_or_default();
    let what = format!("{}: servers up {seconds} s by the clock", run.display());
    util::wait_until(&what, Duration::from_secs(60), || {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        now >= latest + seconds
    });
}

struct Env {
    fleet: SharedFleet,
    dir: tempfile::TempDir,
}

/// The module's fleet (only this module uses the `serve-*` hosts); tests that read a request
/// log take the lock so their requests do not mix.
fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let fleet = util::fleet(HOSTS);
        // Let the servers run, so uptimes and counters are not zero: until each logged three
        // metric lines (a loaded machine starves the fakes) and every server started at least
        // 3 s ago by its own record.
        for (host, log, line) in METRIC_LINES {
            wait_for_lines(&fleet.host(host).dir.join(log), line, 3);
        }
        for host in HOSTS {
            wait_for_uptime(&fleet.host(host).dir, 3);
        }
        Env {
            fleet,
            dir: tempfile::tempdir().unwrap(),
        }
    })
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// probe with the fleet's config and the module's store.
fn probe(args: &[&str]) -> Output {
    let env = env();
    let store = env.dir.path().join("snapshots.db");
    util::probe_on(env.dir.path(), &env.fleet.ssh_config(), store).run(args)
}

fn report(alias: &str) -> HostReport {
    util::one_host_report(&probe(&["host", alias, "--format", "json"]))
}

fn request_log(name: &str) -> PathBuf {
    env()
        .fleet
        .host(name)
        .dir
        .join("root/usr/local/share/fixture/run/http-requests.log")
}

/// The requests a fake server logged, as (method, path, headers, body length).
fn requests(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every logged request is an allowed GET without body or credentials.
fn assert_only_allowed(log: &[serde_json::Value], allowed: &[&str]) {
    assert!(!log.is_empty(), "no request arrived");
    for r in log {
        assert_eq!(r["method"], "GET", "{r}");
        assert!(allowed.contains(&r["path"].as_str().unwrap()), "{r}");
        assert_eq!(r["body_len"], 0, "{r}");
        let headers: Vec<String> = r["headers"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.to_ascii_lowercase())
            .collect();
        let mut sorted = headers.clone();
        sorted.sort();
        assert_eq!(sorted, ["accept", "host", "user-agent"], "{r}");
    }
}

fn server<'a>(report: &'a HostReport, address: &str) -> &'a ServerView {
    report
        .servers
        .iter()
        .find(|s| s.reading.address == address)
        .unwrap_or_else(|| {
            panic!(
                "no server {address} in {:#?}\nrunning: {:#?}\nproblems: {:#?}",
                report.servers, report.running, report.problems
            )
        })
}

fn lifetime(view: &ServerView, name: &str) -> f64 {
    view.reading
        .lifetime
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no lifetime {name} in {:#?}", view.reading))
        .value
}

#[test]
fn sglang_says_what_it_resolved() {
    let _guard = lock();
    let log = request_log("serve-sglang");
    let before = requests(&log).len();
    let report = report("fx-serve-sglang");
    let view = server(&report, "127.0.0.31:30000");
    let r = &view.reading;
    assert_eq!(r.status, ServerStatus::Answered, "{r:#?}");
    assert_eq!(r.version.as_deref(), Some("0.5.9"));
    assert_eq!(r.model.as_deref(), Some("Qwen/Qwen3-32B"));
    assert!(r.uptime_s.is_some_and(|u| u >= 2), "{r:#?}");
    // Declared against effective: defaults the engine resolved, with their source.
    let kind = |key: &str| {
        view.effective
            .iter()
            .find(|e| e.key == key)
            .map(|e| (e.kind, e.effective.clone()))
    };
    assert_eq!(
        kind("max-running-requests"),
        Some((EffectiveKind::Resolved, serde_json::json!(2048)))
    );
    assert_eq!(
        kind("max_total_num_tokens"),
        Some((EffectiveKind::Resolved, serde_json::json!(1286144)))
    );
    assert_eq!(
        kind("chunked-prefill-size"),
        Some((EffectiveKind::Resolved, serde_json::json!(8192)))
    );
    assert_eq!(
        kind("mem-fraction-static"),
        None,
        "declared and effective agree"
    );
    // Its time-to-first-token histogram (3 of 5 requests under 0.1 s, 0.9 s in all): p50
    // interpolated in the first bucket, p90 past the last finite bound, the mean from _sum.
    let ttft = r
        .histograms
        .iter()
        .find(|h| h.name == "ttft_seconds")
        .unwrap_or_else(|| panic!("{:#?}", r.histograms));
    assert_eq!(
        ttft.source,
        "GET /metrics sglang:time_to_first_token_seconds"
    );
    assert_eq!(
        (ttft.buckets.len(), ttft.count, ttft.sum),
        (1, 5.0, Some(0.9))
    );
    assert!((lifetime(view, "ttft_p50") - 0.1 * 2.5 / 3.0).abs() < 1e-9);
    assert_eq!(lifetime(view, "ttft_p90"), 0.1);
    assert!((lifetime(view, "ttft_mean") - 0.18).abs() < 1e-9);
    let p90 = r.lifetime.iter().find(|v| v.name == "ttft_p90").unwrap();
    assert!(p90.source.contains("at least"), "{}", p90.source);
    // Lifetime throughput from the counters, consistent with the log's 900-1150 token/s.
    let generation = lifetime(view, "generation_throughput");
    assert!((100.0..1300.0).contains(&generation), "{generation}");
    assert!(
        r.metrics
            .iter()
            .any(|m| m.name == "kv_cache_usage" && m.source == "GET /metrics sglang:token_usage")
    );
    // Only the allow-listed GETs arrived: the histograms' first scrape while the collection
    // ran (the launch has --enable-metrics), then the reading's three.
    let log = requests(&log);
    assert_only_allowed(
        &log[before..],
        &["/get_server_info", "/get_model_info", "/metrics"],
    );
    let paths: Vec<&str> = log[before..]
        .iter()
        .filter_map(|r| r.get("path").and_then(|p| p.as_str()))
        .collect();
    assert_eq!(
        paths,
        [
            "/metrics",
            "/get_server_info",
            "/get_model_info",
            "/metrics"
        ],
        "{log:#?}"
    );
    // And the human report has the section.
    let out = probe(&["host", "fx-serve-sglang"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Server says"), "{text}");
    assert!(
        text.contains("max-running-requests: 2048, resolved by the engine"),
        "{text}"
    );
}

#[test]
fn vllm_differs_and_findings() {
    let _guard = lock();
    let log = request_log("serve-vllm");
    let before = requests(&log).len();
    let report = report("fx-serve-vllm");
    let view = server(&report, "127.0.0.32:8000");
    let r = &view.reading;
    assert_eq!(r.status, ServerStatus::Answered, "{r:#?}");
    assert_eq!(r.model.as_deref(), Some("dsv2-lite"));
    let block = view
        .effective
        .iter()
        .find(|e| e.key == "block-size")
        .expect("block-size");
    assert_eq!(block.kind, EffectiveKind::Differs);
    assert_eq!(block.effective, serde_json::json!("64"));
    let blocks = view
        .effective
        .iter()
        .find(|e| e.key == "cache_config.num_gpu_blocks")
        .expect("num_gpu_blocks");
    assert_eq!(blocks.kind, EffectiveKind::Resolved);
    // Accept length from the counters: the log's mean acceptance length is 1.78-1.90.
    let accept = lifetime(view, "accept_length");
    assert!((1.7..1.95).contains(&accept), "{accept}");
    assert!(lifetime(view, "generation_throughput") > 100.0);
    let rules: Vec<&str> = view.findings.iter().map(|f| f.rule.as_str()).collect();
    assert!(rules.contains(&"preemptions-climbing"), "{rules:?}");
    let log = requests(&log);
    assert_only_allowed(&log[before..], &["/version", "/v1/models", "/metrics"]);
}

#[test]
fn llamacpp_answers_and_a_closed_port_costs_only_itself() {
    let _guard = lock();
    let report = report("fx-serve-llamacpp");
    let open = server(&report, "127.0.0.33:8080");
    assert_eq!(
        open.reading.status,
        ServerStatus::Answered,
        "{:#?}",
        open.reading
    );
    assert_eq!(open.reading.version.as_deref(), Some("b6123-3f4ae8ad"));
    assert!(lifetime(open, "prompt_throughput") > 0.0);
    // `-c 8192 -np 4`: /props says one slot's 2048, which is the launch's context split over its
    // slots, not a different one.
    assert_eq!(
        open.reading.args.get("n_ctx"),
        Some(&serde_json::json!(2048))
    );
    assert!(
        open.effective.iter().all(|e| e.key != "ctx-size"),
        "{:#?}",
        open.effective
    );
    // The start-up lines (coloured, untimed) are the running run's limits: 20 of 29 layers on
    // the GPU (`-ngl 20`), the whole context and each slot's.
    let run = report
        .runs
        .iter()
        .find(|r| r.running && r.limits.contains_key("gpu_layers"))
        .unwrap_or_else(|| panic!("no run with the offloaded-layers line: {:#?}", report.runs));
    for (key, value) in [
        ("gpu_layers", 20.0),
        ("model_layers", 29.0),
        ("n_ctx", 8192.0),
        ("n_ctx_seq", 2048.0),
        ("n_slots", 4.0),
        ("n_ctx_slot", 2048.0),
    ] {
        assert_eq!(run.limits.get(key), Some(&value), "{key}: {:?}", run.limits);
    }
    // logrotate's `llama.log.1` beside the log is read too; its older start-up (29 of 29 layers)
    // is not the running run's.
    assert!(
        report
            .metrics
            .iter()
            .any(|m| m.source == "/root/llama.log.1" && m.name == "request_gen_throughput"),
        "{:#?}",
        report
            .metrics
            .iter()
            .map(|m| (&m.name, &m.source))
            .collect::<Vec<_>>()
    );
    let closed = server(&report, "127.0.0.33:8081");
    assert_eq!(
        closed.reading.status,
        ServerStatus::PortClosed,
        "{:#?}",
        closed.reading
    );
    assert_eq!(closed.reading.requests.len(), 1);
    assert!(!report.running.is_empty());
    assert_only_allowed(
        &requests(&request_log("serve-llamacpp")),
        &["/props", "/metrics"],
    );
}

#[test]
fn forwarding_refused_is_one_line_and_nothing_else() {
    let _guard = lock();
    let report = report("fx-serve-noforward");
    let view = server(&report, "127.0.0.34:8080");
    assert_eq!(
        view.reading.status,
        ServerStatus::ForwardingRefused,
        "{:#?}",
        view.reading
    );
    assert!(
        view.reading
            .message
            .as_deref()
            .unwrap_or("")
            .contains("administratively prohibited"),
        "{:#?}",
        view.reading
    );
    assert!(
        !report.running.is_empty(),
        "the rest of the collection is there"
    );
    assert!(requests(&request_log("serve-noforward")).is_empty());
}

#[test]
fn no_ask_server_sends_nothing() {
    let _guard = lock();
    let log = request_log("serve-sglang");
    let before = requests(&log).len();
    let out = probe(&[
        "host",
        "fx-serve-sglang",
        "--format",
        "json",
        "--no-ask-server",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let reports: Vec<HostReport> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(reports.iter().all(|r| r.servers.is_empty()));
    assert_eq!(requests(&log).len(), before);
}

/// The server's TTFT histogram scraped twice in one collection (while round 2 ran, then with its
/// other answers): the running run's latency of the seconds between, beside its lifetime's.
#[test]
fn the_servers_latency_now_from_two_scrapes() {
    let _guard = lock();
    let report = report("fx-serve-vllm");
    let run = report
        .runs
        .iter()
        .find(|r| r.running)
        .expect("a running run");
    let server = run.server.as_ref().expect("the server was asked");
    let value = |name: &str| {
        server
            .lifetime
            .iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("{name}: {:#?}", server.lifetime))
    };
    assert_eq!(value("ttft_p90").window_s, None);
    let now = value("ttft_p90_now");
    let window = now.window_s.expect("a window");
    assert!(window > 0.0 && window < 120.0, "{now:?}");
    // Log-normal around 0.35 s (p90 0.55 s), a few dozen requests between the scrapes: within
    // vLLM's buckets from 0.25 to 1 s.
    assert!(now.value > 0.25 && now.value <= 1.0, "{now:?}");
    assert!(
        now.source.contains("s between two scrapes of GET /metrics"),
        "{now:?}"
    );
    let metric = report
        .metrics_by_run
        .iter()
        .find(|m| m.running)
        .and_then(|m| m.metrics.iter().find(|m| m.name == "ttft_p90_now"))
        .expect("the run's metric");
    assert!(
        metric.source.starts_with("server /metrics, now ("),
        "{metric:?}"
    );
    let out = probe(&["host", "fx-serve-vllm"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(" s between two scrapes): ttft_p50_now "),
        "{text}"
    );
}

/// The server's own view is evidence of the run it was asked during: its effective config and
/// lifetime values are on the running run, and the lifetime values join the run's metrics with
/// their source named.
#[test]
fn the_running_run_carries_what_its_server_said() {
    let _guard = lock();
    let report = report("fx-serve-vllm");
    let run = report
        .runs
        .iter()
        .find(|r| r.running)
        .unwrap_or_else(|| panic!("{:#?}", report.runs));
    let server = run.server.as_ref().expect("the run's server view");
    assert_eq!(server.evidence, "server:127.0.0.32:8000");
    assert_eq!(server.status, ServerStatus::Answered);
    let block = server
        .effective
        .iter()
        .find(|e| e.key == "block-size")
        .unwrap_or_else(|| panic!("{server:#?}"));
    assert_eq!(block.kind, EffectiveKind::Differs);
    let generation = server
        .lifetime
        .iter()
        .find(|v| v.name == "generation_throughput")
        .unwrap_or_else(|| panic!("{server:#?}"));
    assert!(generation.value > 100.0, "{generation:#?}");
    let metrics = report
        .metrics_by_run
        .iter()
        .find(|m| m.running && m.launch == run.launch)
        .unwrap_or_else(|| panic!("{:#?}", report.metrics_by_run));
    let joined = metrics
        .metrics
        .iter()
        .find(|m| m.name == "generation_throughput")
        .unwrap_or_else(|| panic!("{metrics:#?}"));
    assert!(
        joined.source.starts_with(
            "server /metrics, lifetime (server:127.0.0.32:8000: generation_tokens_total "
        ),
        "{joined:#?}"
    );
    assert_eq!(joined.summary.mean, generation.value);
    // The log's own metrics are still there beside it.
    assert!(
        metrics
            .metrics
            .iter()
            .any(|m| m.name == "gen_throughput" && !m.source.starts_with("server ")),
        "{metrics:#?}"
    );
    let out = probe(&["host", "fx-serve-vllm"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let at = text.find("Runs (oldest first)").expect("runs section");
    let runs = &text[at..];
    assert!(
        runs.contains("server says (server:127.0.0.32:8000, answered"),
        "{runs}"
    );
    assert!(
        runs.contains("lifetime (server /metrics, lifetime): generation_throughput "),
        "{runs}"
    );
    assert!(
        runs.contains("effective: block-size 64 (launch 16)"),
        "{runs}"
    );
}

/// `probe diff` compares what the server said in two snapshots: an earlier export with another
/// KV block count and twice the lifetime throughput against now.
#[test]
fn probe_diff_compares_server_readings() {
    let _guard = lock();
    let _ = report("fx-serve-vllm");
    let dir = &env().dir;
    let after = dir.path().join("vllm-now.json");
    let path = after.to_str().unwrap();
    let out = probe(&["snapshots", "export", "fx-serve-vllm@latest", "-o", path]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Lifetime averages count only for a settled server (an hour up): both sides say so.
    let mut now: probe_model::Snapshot =
        serde_json::from_str(&std::fs::read_to_string(&after).unwrap()).unwrap();
    for s in &mut now.servers {
        s.uptime_s = Some(7200);
    }
    std::fs::write(&after, serde_json::to_string(&now).unwrap()).unwrap();
    let mut earlier = now.clone();
    let reading = earlier
        .servers
        .iter_mut()
        .find(|s| s.address == "127.0.0.32:8000")
        .expect("the vLLM reading");
    reading.args.insert(
        "cache_config.num_gpu_blocks".into(),
        serde_json::json!("99999"),
    );
    // Twice the tokens over the same uptime: twice the lifetime throughput (the analysis derives
    // it from the counters; the snapshot stores only those).
    for m in reading
        .metrics
        .iter_mut()
        .filter(|m| m.name == "generation_tokens_total")
    {
        m.value *= 2.0;
    }
    earlier.collected_at -= 3600;
    let before = dir.path().join("vllm-earlier.json");
    std::fs::write(&before, serde_json::to_string(&earlier).unwrap()).unwrap();
    let out = probe(&["diff", before.to_str().unwrap(), path, "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diff: probe_model::SnapshotDiff = serde_json::from_slice(&out.stdout).unwrap();
    let change = |key: &str| {
        diff.changes
            .iter()
            .find(|c| c.key == key)
            .unwrap_or_else(|| panic!("{key} not among {:#?}", diff.changes))
    };
    let blocks = change("server:127.0.0.32:8000.cache_config.num_gpu_blocks");
    assert_eq!(blocks.impact, probe_model::Impact::High);
    assert_eq!(blocks.category, probe_model::Category::MemoryKvCache);
    assert_eq!(blocks.before, Some(serde_json::json!("99999")));
    let throughput = change("server:127.0.0.32:8000.lifetime:generation_throughput");
    assert_eq!(throughput.impact, probe_model::Impact::High);
    assert!(
        throughput.explanation.contains("fell 50%"),
        "{throughput:#?}"
    );
    let metric = diff
        .metrics
        .iter()
        .find(|m| {
            m.name
                .starts_with("generation_throughput (server /metrics, lifetime")
        })
        .unwrap_or_else(|| panic!("{:#?}", diff.metrics));
    assert!(
        metric.change.is_some_and(|c| (c + 0.5).abs() < 1e-6),
        "{metric:#?}"
    );
}
