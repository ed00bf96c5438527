//! End-to-end: the built `probe` binary against the fixture hosts over real SSH (OpenSSH sshd in
//! namespaces on 127.0.0.N). Every test uses a temporary `--store` and the fleet's own `-F`
//! client config; the real ~/.ssh is never read or written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use probe_model::{AuditRecord, AuditStatus, AuditSummary, HostReport, Snapshot, Timeline};
use probe_testkit::fixture::{self, SharedFleet};

use crate::util::{self, PROBE, assert_schema, schema_errors, store, text};

struct Env {
    fleet: SharedFleet,
    /// ssh_config with the fleet plus `fx-wrongkey` (a fixture host whose known_hosts entry holds
    /// another host's key).
    config: PathBuf,
    dir: tempfile::TempDir,
}

/// Fixture hosts that take their section limits to answer (`hostile` waits out its hanging stub,
/// about 10 s, `attacks` its hung docker); the quick audit leaves them out.
const SLOW_HOSTS: &[&str] = &["hostile", "attacks"];

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let fleet = util::fleet(fixture::ALL);
        let dir = tempfile::tempdir().unwrap();
        // The wrong-key host: bare's address, but a known_hosts that lists sglang-hybrid's keys
        // under bare's name.
        let bare = fleet.host("bare");
        let other = fleet.host("sglang-hybrid");
        let bare_name = format!("[{}]:{}", bare.addr, bare.port);
        let wrong: String = other
            .known_hosts_lines()
            .lines()
            .filter_map(|line| {
                line.split_once(' ')
                    .map(|(_, key)| format!("{bare_name} {key}\n"))
            })
            .collect();
        let wrong_known_hosts = dir.path().join("known_hosts.wrong");
        std::fs::write(&wrong_known_hosts, wrong).unwrap();
        let mut config = std::fs::read_to_string(fleet.ssh_config()).unwrap();
        config.push_str(
            &bare
                .ssh_config_block(&fleet.client_key().private, &wrong_known_hosts)
                .replacen(&format!("Host {}", bare.alias), "Host fx-wrongkey", 1),
        );
        let config_path = dir.path().join("ssh_config");
        std::fs::write(&config_path, config).unwrap();
        Env {
            fleet,
            config: config_path,
            dir,
        }
    })
}

/// probe with the fleet's config (and `fx-wrongkey`) and the store at `store`.
fn probe(args: &[&str], store: &Path) -> Output {
    prober(store).run(args)
}

fn prober(store: &Path) -> util::Probe {
    let env = env();
    util::probe_on(env.dir.path(), &env.config, store)
}

#[test]
fn host_report_per_fixture_host() {
    let env = env();
    let (_dir, store) = store();
    for host in &env.fleet.hosts {
        let (out, elapsed) = prober(&store).run_timed(&["host", &host.alias]);
        eprintln!("probe host {}: {elapsed:?}", host.alias);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}{stdout}",
            host.alias,
            text(&out.stderr)
        );
        assert!(stdout.starts_with("probe report: "), "{stdout}");
        assert!(
            !stdout.contains('\u{1b}'),
            "escape sequence in report of {}",
            host.alias
        );
        assert!(
            elapsed < Duration::from_secs(60),
            "{}: {elapsed:?}",
            host.alias
        );
    }
}

#[test]
fn sglang_report_content() {
    let (_dir, store) = store();
    let out = probe(&["host", "fx-sglang-hybrid"], &store);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}{stdout}", text(&out.stderr));
    for expected in [
        "fixture-sglang-hybrid",
        "2 x NVIDIA H200",
        "driver 570.172.08",
        "CUDA 12.8",
        "power limit 700 W",
        "Running now",
        "sglang 0.5.9",
        "Qwen/Qwen3-Next-80B-A3B-Instruct-FP8",
        "--mem-fraction-static 0.85",
        "Earlier launches",
        "What changed vs the previous launch",
        "Log metrics",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
    assert!(!stdout.contains("hf_"), "HF token leaked:\n{stdout}");
    // A second collection compares with the first.
    let out = probe(&["host", "fx-sglang-hybrid"], &store);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("What changed since the last snapshot ("),
        "{stdout}"
    );
}

#[test]
fn json_matches_the_model_schema() {
    let (_dir, store) = store();
    let out = probe(&["host", "fx-vllm-systemd", "--format", "json"], &store);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&value, "host-report");
    let reports: Vec<HostReport> = serde_json::from_value(value.clone()).unwrap();
    // Round trip: nothing in the output is outside the documented types.
    assert_eq!(serde_json::to_value(&reports).unwrap(), value);
    let report = &reports[0];
    for key in [
        "schema_version",
        "target",
        "snapshot_id",
        "collected_at",
        "host",
        "gpu",
        "running",
        "earlier",
        "vs_previous_launch",
        "vs_last_snapshot",
        "metrics",
        "problems",
    ] {
        assert!(value[0].get(key).is_some(), "missing key {key}");
    }
    assert_eq!(report.schema_version, probe_model::SCHEMA_VERSION);
    let running = report.running.first().expect("a running launch");
    assert_eq!(running.engine, probe_model::Engine::Vllm);
    assert_eq!(
        running.model.as_deref(),
        Some("/mnt/models/GLM-4.5-Air-FP8")
    );
    assert!(!report.gpu.gpus.is_empty());
    // Again: now with a comparison against the stored snapshot in the document.
    let out = probe(&["host", "fx-vllm-systemd", "--format", "json"], &store);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&value, "host-report");
    assert!(value[0]["vs_last_snapshot"].is_object(), "{value:#}");
}

#[test]
fn markdown_output() {
    let (_dir, store) = store();
    let out = probe(&["host", "fx-docker-vllm", "--format", "markdown"], &store);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.starts_with("# probe report: "), "{stdout}");
    assert!(stdout.contains("\n## Running now\n"), "{stdout}");
    assert!(stdout.contains("- **GPUs**: "), "{stdout}");
}

#[test]
fn diff_exit_codes_and_timeline_order() {
    let (dir, store) = store();
    for alias in ["fx-sglang-hybrid", "fx-bare"] {
        let out = probe(&["host", alias], &store);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    // The same snapshot twice: nothing differs.
    let out = probe(&["diff", "fx-bare@latest", "fx-bare@latest"], &store);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // A stored snapshot against its exported file: the same.
    let file = dir.path().join("bare.json");
    let out = probe(
        &[
            "snapshots",
            "export",
            "fx-bare@latest",
            "-o",
            file.to_str().unwrap(),
        ],
        &store,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_schema(&exported, "snapshot");
    let exported: Snapshot = serde_json::from_value(exported).unwrap();
    assert_eq!(exported.target, "fx-bare");
    let out = probe(&["diff", file.to_str().unwrap(), "fx-bare@latest"], &store);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // Two different hosts: exit 1, the server is named.
    let out = probe(
        &["diff", "fx-bare@latest", "fx-sglang-hybrid@latest"],
        &store,
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).contains("sglang"),
        "{}",
        text(&out.stdout)
    );
    // The rollback checklist example stops on the high-impact differences between them.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/rollback-checklist.sh");
    let out = Command::new("sh")
        .arg(&script)
        .args(["fx-bare@latest", "fx-sglang-hybrid@latest"])
        .env("PROBE", PROBE)
        .env("PROBE_STORE", &store)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("STOP: "), "{stdout}");
    let out = Command::new("sh")
        .arg(&script)
        .args(["fx-bare@latest", "fx-bare@latest"])
        .env("PROBE", PROBE)
        .env("PROBE_STORE", &store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // A live side against a stored one.
    let out = probe(
        &["diff", "fx-bare@latest", "fx-bare", "--format", "json"],
        &store,
    );
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        text(&out.stderr)
    );
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&value, "snapshot-diff");
    let diff: probe_model::SnapshotDiff = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(serde_json::to_value(&diff).unwrap(), value);
    assert_ne!(diff.before.id, diff.after.id);

    // Timeline: oldest first, the running launch marked.
    let out = probe(
        &["timeline", "fx-sglang-hybrid@latest", "--format", "json"],
        &store,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&value, "timeline");
    let timeline: Timeline = serde_json::from_value(value.clone()).unwrap();
    assert_eq!(serde_json::to_value(&timeline).unwrap(), value);
    let times: Vec<i64> = timeline
        .events
        .iter()
        .filter_map(|e| e.time.at.or(e.time.not_after))
        .collect();
    assert!(times.len() >= 3, "{timeline:?}");
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "not oldest first: {times:?}"
    );
    assert!(
        timeline.events.iter().any(|e| e.running),
        "no running launch"
    );
    let human = probe(&["timeline", "fx-sglang-hybrid@latest"], &store);
    assert!(
        text(&human.stdout).contains("running"),
        "{}",
        text(&human.stdout)
    );
}

#[test]
fn audit_all_hosts_with_unreachable_and_wrong_key() {
    let env = env();
    let (dir, store) = store();
    // A refused port: bind, note the port, close.
    let refused_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut inventory = String::new();
    for host in &env.fleet.hosts {
        // `hostile` waits out its hanging stub (about 10 s), `attacks` its hung docker; the
        // second audit leaves them out.
        let tags = if SLOW_HOSTS.contains(&host.name.as_str()) {
            "[\"fixture\"]"
        } else {
            "[\"fixture\", \"quick\"]"
        };
        inventory.push_str(&format!(
            "[hosts.{}]\naddress = \"{}\"\ntags = {tags}\n\n",
            host.name, host.alias
        ));
    }
    inventory.push_str(&format!(
        "[hosts.unreachable]\naddress = \"127.0.0.1\"\nport = {refused_port}\nuser = \"root\"\ntags = [\"quick\"]\n\n[hosts.wrongkey]\naddress = \"fx-wrongkey\"\ntags = [\"quick\"]\n"
    ));
    let inventory_path = dir.path().join("fleet.toml");
    std::fs::write(&inventory_path, inventory).unwrap();
    let prometheus = dir.path().join("probe.prom");

    let started = Instant::now();
    let out = probe(
        &[
            "audit",
            "--inventory",
            inventory_path.to_str().unwrap(),
            "--jsonl",
            "--prometheus",
            prometheus.to_str().unwrap(),
        ],
        &store,
    );
    eprintln!(
        "audit of {} hosts: {:?}",
        env.fleet.hosts.len() + 2,
        started.elapsed()
    );
    let stdout = text(&out.stdout);
    // No drift on a first audit; a refused host key decides the code.
    assert_eq!(out.status.code(), Some(4), "{stdout}{}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), env.fleet.hosts.len() + 3, "{stdout}");
    let records: Vec<AuditRecord> = lines[..lines.len() - 1]
        .iter()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_schema(&value, "audit-record");
            let record: AuditRecord = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(serde_json::to_value(&record).unwrap(), value);
            record
        })
        .collect();
    let summary: serde_json::Value = serde_json::from_str(lines[lines.len() - 1]).unwrap();
    assert_schema(&summary, "audit-summary");
    let summary: AuditSummary = serde_json::from_value(summary).unwrap();
    assert_eq!(summary.record_type, probe_model::RecordType::Summary);
    let status_of = |name: &str| records.iter().find(|r| r.host == name).unwrap().status;
    for host in &env.fleet.hosts {
        assert_eq!(status_of(&host.name), AuditStatus::Ok, "{stdout}");
    }
    assert_eq!(status_of("unreachable"), AuditStatus::Unreachable);
    assert_eq!(status_of("wrongkey"), AuditStatus::HostKeyRefused);
    let sglang = records.iter().find(|r| r.host == "sglang-hybrid").unwrap();
    assert!(
        sglang
            .engines
            .iter()
            .any(|e| e.engine == probe_model::Engine::Sglang),
        "{sglang:?}"
    );
    assert_eq!((summary.ok, summary.failed), (env.fleet.hosts.len(), 2));
    // Progress bar off: stderr is not a terminal.
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("ETA") && !stderr.contains('\r') && !stderr.contains('\u{1b}'),
        "{stderr}"
    );

    let metrics = std::fs::read_to_string(&prometheus).unwrap();
    assert!(
        metrics.contains("probe_host_status{host=\"unreachable\",status=\"unreachable\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("probe_host_status{host=\"wrongkey\",status=\"host_key_refused\"} 1"));
    assert!(metrics.contains("probe_host_up{host=\"bare\"} 1"));
    assert!(
        metrics.contains("probe_host_engine_info{host=\"sglang-hybrid\",engine=\"sglang\""),
        "{metrics}"
    );

    // Second audit: drift is measured against the first; the human table names every host.
    let out = probe(
        &[
            "audit",
            "--inventory",
            inventory_path.to_str().unwrap(),
            "--fail-on",
            "error",
            "-j",
            "3",
            "--tag",
            "quick",
        ],
        &store,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{stdout}{}", text(&out.stderr));
    // Every fixture host but the slow ones, plus `unreachable` and `wrongkey`.
    let quick = env
        .fleet
        .hosts
        .iter()
        .filter(|host| !SLOW_HOSTS.contains(&host.name.as_str()))
        .count();
    let count = format!("{} hosts:", quick + 2);
    for needle in [
        "unreachable",
        "host key refused",
        "bare",
        "sglang-hybrid",
        count.as_str(),
    ] {
        assert!(stdout.contains(needle), "missing {needle}: {stdout}");
    }
    assert!(!stdout.contains("hostile"), "{stdout}");
    // Every collected host had a previous snapshot this time.
    assert!(!stdout.contains("first snapshot (baseline)"), "{stdout}");
    let out = probe(
        &[
            "audit",
            "--inventory",
            inventory_path.to_str().unwrap(),
            "--fail-on",
            "never",
            "--group",
            "nope",
        ],
        &store,
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_input_gives_one_line_and_exit_code() {
    let (dir, store) = store();
    // Unknown alias: resolves to a name that does not exist.
    let out = probe(&["host", "no-such-alias.invalid"], &store);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("probe: no-such-alias.invalid"),
        "{stderr}"
    );
    assert!(
        stderr.contains("probe resolve no-such-alias.invalid"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Corrupt store: refused, untouched.
    let corrupt = dir.path().join("corrupt.db");
    std::fs::write(&corrupt, b"this is not sqlite at all, just text").unwrap();
    let out = probe(&["snapshots", "list"], &corrupt);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("untouched"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read(&corrupt).unwrap(),
        b"this is not sqlite at all, just text"
    );
    // Malformed inventory: file and line.
    let inventory = dir.path().join("bad.toml");
    std::fs::write(&inventory, "[hosts.a]\naddress = \"x\"\nbogus = 1\n").unwrap();
    let out = probe(
        &["audit", "--inventory", inventory.to_str().unwrap()],
        &store,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("bad.toml:3:"),
        "{}",
        text(&out.stderr)
    );
    // A snapshot file from a newer schema.
    let newer = dir.path().join("newer.json");
    std::fs::write(
        &newer,
        r#"{"schema_version": 999, "id": "x", "target": "t"}"#,
    )
    .unwrap();
    let out = probe(
        &["diff", newer.to_str().unwrap(), newer.to_str().unwrap()],
        &store,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("newer"), "{}", text(&out.stderr));
    let out = probe(&["snapshots", "import", newer.to_str().unwrap()], &store);
    assert_eq!(out.status.code(), Some(2));
    // Unknown stored reference.
    let out = probe(&["diff", "ghost@latest", "ghost@~1"], &store);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("ghost@latest"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn host_local_works_without_ssh() {
    let (_dir, store) = store();
    // No `-F`: nothing of the fleet is needed.
    let home = tempfile::tempdir().unwrap();
    let out = util::probe(home.path())
        .store(&store)
        .run(&["host", "local"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("probe report: local"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn concurrent_hosts_and_resolve() {
    let (_dir, store) = store();
    let started = Instant::now();
    let out = probe(
        &["host", "fx-bare", "fx-docker-vllm", "fx-vllm-systemd"],
        &store,
    );
    eprintln!("probe host with 3 targets: {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).matches("probe report: ").count(), 3);
    let out = probe(&["snapshots", "list", "--format", "json"], &store);
    let metas: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(metas.len(), 3);
    // Two probes writing the same store at once: both succeed, nothing is lost.
    let args = ["host", "fx-bare", "fx-docker-vllm", "--format", "json"];
    let busy = util::busy();
    let spawn = || prober(&store).spawn(&args);
    let (first, second) = (spawn(), spawn());
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        util::assert_output_schema(&args, &out);
    }
    drop(busy);
    let out = probe(&["snapshots", "list", "--format", "json"], &store);
    let metas: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(metas.len(), 7);
    let out = probe(&["resolve", "fx-bare"], &store);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("hostname 127.0.0.14\n"), "{stdout}");
    assert!(stdout.contains("user root\n"), "{stdout}");
}

#[test]
fn launch_and_audit_json_match_the_schema() {
    let (dir, store) = store();
    // A shell line continued over two lines: one launch.
    let launch = dir.path().join("launch.txt");
    std::fs::write(
        &launch,
        "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 \\\n  \
         --speculative-algorithm NEXTN --mem-fraction-static 0.85 --port 30000\n",
    )
    .unwrap();
    let out = probe(&["launch", launch.to_str().unwrap(), "--json"], &store);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&value, "launch-output");
    let items = value.as_array().expect("an array");
    assert_eq!(items.len(), 1, "{value:#}");
    let config: probe_model::LaunchConfig =
        serde_json::from_value(items[0]["launch"].clone()).unwrap();
    assert_eq!(serde_json::to_value(&config).unwrap(), items[0]["launch"]);
    assert_eq!(config.engine, probe_model::Engine::Sglang);
    assert_eq!(items[0]["common"]["engine"], "sglang");

    // `probe audit --format json`: the records and the summary in one document.
    let inventory = dir.path().join("one.toml");
    std::fs::write(&inventory, "[hosts.bare]\naddress = \"fx-bare\"\n").unwrap();
    let out = probe(
        &[
            "audit",
            "--inventory",
            inventory.to_str().unwrap(),
            "--format",
            "json",
        ],
        &store,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_schema(&value, "audit-report");
    assert_eq!(value["hosts"][0]["status"], "ok", "{value:#}");
    assert_eq!(value["summary"]["type"], "summary");
    // The schema is not a formality: a record without its status, or a summary where a host
    // record belongs, is refused.
    let mut broken = value.clone();
    broken["hosts"][0].as_object_mut().unwrap().remove("status");
    assert!(!schema_errors("audit-report", &broken).is_empty());
    assert!(!schema_errors("audit-record", &value["summary"]).is_empty());
}
