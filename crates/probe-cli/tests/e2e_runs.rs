//! End-to-end: runs and "why it got slower" on the fixture hosts, over real SSH with the built
//! binary. `vllm-upgrade`: an engine upgrade under an unchanged unit; `sglang-hybrid`: a hand
//! launch that replaced a unit stopped days before, with an upgrade in between.

#![allow(clippy::print_stderr)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use probe_model::{Certainty, HostReport, VersionSource};
use probe_testkit::fixture::{self, Fleet};

const PROBE: &str = env!("CARGO_BIN_EXE_probe");

struct Env {
    fleet: Fleet,
    dir: tempfile::TempDir,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        probe_testkit::require_openssh().unwrap_or_else(|e| panic!("{e}"));
        fixture::require_namespaces().unwrap_or_else(|e| panic!("{e}"));
        Env {
            fleet: Fleet::start(&["sglang-hybrid", "vllm-upgrade"]),
            dir: tempfile::tempdir().unwrap(),
        }
    })
}

fn probe(args: &[&str]) -> Output {
    let env = env();
    let store: PathBuf = env
        .dir
        .path()
        .join(format!("{}.db", args.join("_").replace('/', "_")));
    Command::new(PROBE)
        .arg("-F")
        .arg(env.fleet.ssh_config())
        .arg("--store")
        .arg(&store)
        .args(args)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .env("HOME", env.dir.path())
        .env("XDG_CONFIG_HOME", env.dir.path().join("xdg"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn report(alias: &str) -> HostReport {
    let out = probe(&["host", alias, "--format", "json", "--no-store"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut reports: Vec<HostReport> = serde_json::from_slice(&out.stdout).unwrap();
    reports.remove(0)
}

fn human(alias: &str) -> String {
    let out = probe(&["host", alias, "--no-store"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn engine_upgrade_under_an_unchanged_unit() {
    let report = report("fx-vllm-upgrade");
    // Per-run versions and periods: three journal runs on 0.10.1.1, each ended by the journal's
    // own stop line, then the running run on 0.11.0.
    let runs = &report.runs;
    assert_eq!(runs.len(), 4, "{runs:#?}");
    for run in runs.iter().take(3) {
        assert_eq!(
            run.engine_version.version.as_deref(),
            Some("0.10.1.1"),
            "{run:#?}"
        );
        assert_eq!(run.engine_version.source, VersionSource::StartupLine);
        let end = run.end.as_ref().expect("an end");
        assert_eq!(end.certainty, Certainty::Exact, "{run:#?}");
        assert!(
            end.evidence.starts_with("journal of vllm.service"),
            "{end:?}"
        );
        assert_eq!(
            run.limits.get("kv_cache_tokens"),
            Some(&1_154_496.0),
            "{run:#?}"
        );
    }
    // The first run ended an hour after it started, not at the next start a week later.
    let first = &runs[0];
    let length = first.end.as_ref().and_then(|e| e.at).unwrap() - first.start.at.unwrap();
    assert!((3_600..3_700).contains(&length), "{length}");
    // The third was killed for the upgrade.
    assert!(
        runs[2]
            .end
            .as_ref()
            .unwrap()
            .evidence
            .contains("code=killed"),
        "{:?}",
        runs[2].end
    );
    let live = &runs[3];
    assert!(live.running);
    assert_eq!(live.engine_version.version.as_deref(), Some("0.11.0"));
    assert_eq!(live.limits.get("kv_cache_tokens"), Some(&384_832.0));

    // A comparison is built although no flag changed, with the upgrade among the causes.
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    let keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
    assert!(keys.contains(&"engine_version"), "{keys:?}");
    assert!(keys.contains(&"limit:kv_cache_tokens"), "{keys:?}");
    // No flag change invented (a start-up log against the process's argv): besides the run's
    // version, limits and packages, only defaults the new version changed (set by neither).
    for change in &diff.changes {
        let default_changed = change
            .note
            .as_deref()
            .is_some_and(|n| n.starts_with("set by neither launch"));
        assert!(
            change.key == "engine_version"
                || change.key.starts_with("limit:")
                || change.key.starts_with("package:")
                || default_changed,
            "invented change {change:#?}"
        );
    }
    assert!(
        diff.changes
            .iter()
            .all(|c| c.key != "gpu-memory-utilization")
    );
    // Symptoms apart from causes, idle samples left out of the means.
    assert!(diff.changes.iter().all(|c| !c.key.starts_with("metric:")));
    let symptom = diff
        .symptoms
        .iter()
        .find(|c| c.key == "metric:gen_throughput")
        .expect("throughput fell");
    assert!(symptom.explanation.contains("fell"), "{symptom:?}");
    let throughput = diff
        .metrics
        .iter()
        .find(|m| m.name == "gen_throughput")
        .unwrap();
    let (before, after) = (
        throughput.before.clone().unwrap(),
        throughput.after.clone().unwrap(),
    );
    assert!(before.min >= 2_000.0, "idle lines in the mean: {before:?}");
    assert!(after.min >= 1_200.0, "idle lines in the mean: {after:?}");
    let load = diff.load_note.clone().unwrap_or_default();
    assert!(load.contains("running requests"), "{load}");
    assert!(load.contains("idle samples left out"), "{load}");
    // Nothing lost: the coloured journal lines were read (no blob placeholders).
    let journal = report.problems.iter().find(|p| {
        p.name.contains("journal") && p.message.as_deref().unwrap_or("").contains("blob")
    });
    assert!(journal.is_none(), "{:?}", report.problems);

    let text = human("fx-vllm-upgrade");
    for expected in [
        "Runs (oldest first)",
        "engine: vllm 0.10.1.1",
        "engine: vllm 0.11.0",
        "KV capacity 1154496 tokens",
        "KV capacity 384832 tokens",
        "Symptoms (run against run, idle samples left out):",
        "Candidate causes, most likely first:",
        "Serving packages",
        "GPU memory",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    let symptoms_at = text.find("Symptoms (").unwrap();
    let causes_at = text.find("Candidate causes").unwrap();
    assert!(symptoms_at < causes_at);
}

#[test]
fn hand_launch_after_a_stopped_unit_and_an_upgrade() {
    let report = report("fx-sglang-hybrid");
    let unit_runs: Vec<_> = report
        .runs
        .iter()
        .filter(|r| r.launch.contains("sglang-qwen.service"))
        .collect();
    assert!(!unit_runs.is_empty(), "{:#?}", report.runs);
    for run in &unit_runs {
        // Ran before sglang 0.5.9 was installed (2026-11-21): never credited with it.
        assert_eq!(run.engine_version.version, None, "{run:#?}");
        assert_eq!(run.engine_version.source, VersionSource::InstalledAfter);
        assert!(
            run.engine_version
                .note
                .as_deref()
                .unwrap_or("")
                .starts_with("older than 0.5.9")
        );
        let end = run.end.as_ref().expect("stopped");
        assert_eq!(end.certainty, Certainty::Exact, "{run:#?}");
        assert_eq!(run.limits.get("max_total_num_tokens"), Some(&1_286_144.0));
    }
    // The last unit run stopped days before the hand launch started.
    let last_unit = unit_runs.last().unwrap();
    let live = report
        .runs
        .iter()
        .find(|r| r.running)
        .expect("the hand launch runs");
    let stopped = last_unit.end.as_ref().and_then(|e| e.at).unwrap();
    assert!(
        live.start.at.unwrap() - stopped > 2 * 86_400,
        "{last_unit:#?} {live:#?}"
    );
    assert_eq!(live.engine_version.version.as_deref(), Some("0.5.9"));
    assert_eq!(live.limits.get("max_total_num_tokens"), Some(&428_714.0));
    assert!(
        live.packages.iter().any(|p| p.name == "sgl-kernel"),
        "{:?}",
        live.packages
    );
    let model = report.models.first().expect("model summary");
    assert_eq!(model.full_attention_layers, Some(12));
    assert_eq!(model.mtp_layers, Some(1));
    // Installs near the runs include the upgrade; the timeline shows the pip line.
    assert!(
        report
            .install_events
            .iter()
            .any(|e| e.summary.contains("sglang 0.5.9")),
        "{:#?}",
        report.install_events
    );
    let out = probe(&["timeline", "fx-sglang-hybrid"]);
    let timeline = String::from_utf8_lossy(&out.stdout);
    assert!(
        timeline.contains("pip install -U sglang==0.5.9"),
        "{timeline}"
    );
    assert!(
        timeline.contains("systemctl stop sglang-qwen"),
        "{timeline}"
    );
    // Start-up limits compared where both runs logged them.
    let diff = report.vs_previous_launch.as_ref().expect("a comparison");
    assert!(diff.changes.iter().all(|c| !c.key.starts_with("metric:")));
    let text = human("fx-sglang-hybrid");
    assert!(
        text.contains("older than 0.5.9, installed 2026-11-21"),
        "{text}"
    );
    assert!(text.contains("Model config"), "{text}");
}

#[test]
fn timeline_places_host_changes_by_their_timestamps() {
    let out = probe(&["timeline", "fx-vllm-upgrade"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let timeline = String::from_utf8_lossy(&out.stdout);
    // The history's host changes, oldest first, between the launches they came with.
    let order = [
        "vllm==0.10.1.1",
        "systemctl daemon-reload",
        "systemctl enable --now vllm",
        "docker pull vllm/vllm-openai:v0.11.0",
        "vllm==0.11.0",
        "systemctl restart vllm",
    ];
    let positions: Vec<Option<usize>> = order.iter().map(|n| timeline.find(n)).collect();
    assert!(
        positions.iter().all(Option::is_some),
        "{positions:?}\n{timeline}"
    );
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "{positions:?}\n{timeline}"
    );
    // Each is placed at its own timestamp (2026-11-15 14:02 UTC for the first install).
    let first = timeline
        .lines()
        .find(|l| l.contains("vllm==0.10.1.1"))
        .unwrap_or_default();
    assert!(first.contains("2026-11-15"), "{first}");
}

/// Headless Chromium as `.ci/run` installs it: no sandbox (root), no network of its own, a
/// throw-away profile.
fn chromium(args: &[&str]) -> Output {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|err| panic!("chromium: {err} (.ci/run installs Debian's chromium)"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The page loads with no console error or blocked resource, and its DOM as the browser
/// built it.
fn rendered_dom(page: &std::path::Path) -> String {
    let url = format!("file://{}", page.display());
    let out = chromium(&["--dump-dom", &url]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for needle in ["CONSOLE", "Refused to", "Uncaught"] {
        assert!(!stderr.contains(needle), "{needle}: {stderr}");
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Screenshots at a desktop and a phone width, kept under target/ as artefacts.
fn screenshots(page: &std::path::Path, name: &str) {
    let url = format!("file://{}", page.display());
    for width in [1280, 390] {
        let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{width}.png"));
        chromium(&[
            &format!("--screenshot={}", shot.display()),
            &format!("--window-size={width},2400"),
            &url,
        ]);
        let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(size > 20_000, "{}: {size} bytes", shot.display());
    }
}

#[test]
fn html_pages_render_in_a_real_browser_and_hostile_strings_stay_text() {
    let env = env();
    let artefacts = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let page = artefacts.join("sglang-hybrid.html");
    let out = probe(&[
        "host",
        "fx-sglang-hybrid",
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.len() < 2 << 20, "{} bytes", html.len());
    let dom = rendered_dom(&page);
    for needle in [
        "probe report:",
        "class=\"timeline\"",
        "class=\"run running\"",
        "mark mark-launch",
        "Launches side by side",
        "id=\"probe-data\"",
    ] {
        assert!(dom.contains(needle), "missing {needle}");
    }
    screenshots(&page, "sglang-hybrid");

    // A snapshot file whose strings are attacks: they appear as text, never as markup.
    let store = env.dir.path().join("html-red-team.db");
    let run = |args: &[&str]| {
        Command::new(PROBE)
            .arg("-F")
            .arg(env.fleet.ssh_config())
            .arg("--store")
            .arg(&store)
            .args(args)
            .env_remove("RUST_LOG")
            .env("HOME", env.dir.path())
            .env("XDG_CONFIG_HOME", env.dir.path().join("xdg"))
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&["snapshots", "export", "fx-sglang-hybrid@latest"]);
    let before = if out.status.success() {
        out.stdout
    } else {
        assert!(run(&["host", "fx-sglang-hybrid"]).status.success());
        run(&["snapshots", "export", "fx-sglang-hybrid@latest"]).stdout
    };
    let mut snapshot: serde_json::Value = serde_json::from_slice(&before).unwrap();
    let payloads = [
        "<script>document.title='owned'</script>",
        "<img src=x onerror=\"document.title='owned'\">",
        "<a href=\"javascript:alert(1)\">click</a>",
        "<style>body{background:url(http://127.0.0.1:9/x)}</style>",
        "gpu\u{202e}lam\u{2066}",
    ];
    snapshot["host"]["hostname"] = serde_json::Value::from(payloads.join(" "));
    snapshot["id"] = serde_json::Value::from("red-team");
    if let Some(process) = snapshot["processes"].get_mut(0) {
        process["argv"]
            .as_array_mut()
            .unwrap()
            .extend(payloads.iter().map(|p| serde_json::Value::from(*p)));
    }
    let before_path = artefacts.join("red-team-before.json");
    let after_path = artefacts.join("red-team-after.json");
    std::fs::write(&before_path, &before).unwrap();
    std::fs::write(&after_path, serde_json::to_vec(&snapshot).unwrap()).unwrap();
    let hostile = artefacts.join("red-team.html");
    for (args, name) in [
        (
            vec![
                "diff",
                before_path.to_str().unwrap(),
                after_path.to_str().unwrap(),
            ],
            "diff",
        ),
        (vec!["timeline", after_path.to_str().unwrap()], "timeline"),
    ] {
        let mut args = args.clone();
        args.extend(["--format", "html", "-o", hostile.to_str().unwrap()]);
        let out = run(&args);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dom = rendered_dom(&hostile);
        assert!(!dom.contains("owned</title>"), "{name}: a payload ran");
        assert!(!dom.contains("<img"), "{name}");
        assert!(!dom.contains("<a href=\"javascript:"), "{name}");
        assert!(!dom.contains("<style>body{background:url"), "{name}");
        assert!(!dom.contains('\u{202e}'), "{name}");
        if name == "diff" {
            assert!(
                dom.contains("&lt;script&gt;"),
                "{name}: the payload is not shown as text"
            );
        }
    }
}
