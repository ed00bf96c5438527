//! End-to-end: engines installed outside package managers (issue 32, item 4) on `selfinst`
//! (127.0.0.70): Ollama upgraded 0.12.11 -> 0.13.5 by its install script, a llama.cpp build in
//! a home directory whose checkout was pulled again after the build, and vLLM installed
//! editable from a checkout that moved since. Each is an `engine_install` event on the
//! timeline with the evidence it is known from: the history line, the files and their mtimes,
//! the versions the runs' start-up lines gave, the checkouts' git state read as files.

use std::path::PathBuf;
use std::process::Output;
use std::sync::OnceLock;

use probe_model::{Timeline, TimelineEventKind};

use crate::util;

struct Env {
    fleet: probe_testkit::fixture::SharedFleet,
    dir: tempfile::TempDir,
    /// The host report (JSON) of the one collection, stored in `store.db`.
    report: probe_model::HostReport,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let fleet = util::fleet(&["selfinst"]);
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store.db");
        let out = util::probe_on(dir.path(), &fleet.ssh_config(), &store).run(&[
            "host",
            "fx-selfinst",
            "--format",
            "json",
        ]);
        let report = util::one_host_report(&out);
        Env { fleet, dir, report }
    })
}

/// `probe` on the stored collection.
fn probe(args: &[&str]) -> Output {
    let env = env();
    let store: PathBuf = env.dir.path().join("store.db");
    let out = util::probe_on(env.dir.path(), &env.fleet.ssh_config(), &store).run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn timeline() -> Timeline {
    serde_json::from_slice(&probe(&["timeline", "fx-selfinst@latest", "--format", "json"]).stdout)
        .unwrap()
}

/// The human timeline's evidence block: from its heading to the end.
fn evidence_block(text: &str) -> String {
    let at = text
        .find("Evidence of engines installed outside package managers")
        .unwrap_or_else(|| panic!("no evidence block in\n{text}"));
    text[at..].trim_end().to_string()
}

fn engine_installs(t: &Timeline) -> Vec<&probe_model::TimelineEvent> {
    t.events
        .iter()
        .filter(|e| e.kind == TimelineEventKind::EngineInstall)
        .collect()
}

/// Ollama's upgrade by its install script: one event at the history line's time, between the
/// last 0.12.11 run and the first 0.13.5 one, with the line, the binary's and the unit file's
/// mtimes and both versions as evidence.
#[test]
fn an_install_script_upgrade_is_one_event_with_its_evidence() {
    let t = timeline();
    let events = engine_installs(&t);
    let upgrade = events
        .iter()
        .find(|e| e.summary.starts_with("ollama 0.12.11 -> 0.13.5"))
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(upgrade.time.at, Some(1_794_801_490), "{upgrade:#?}");
    assert_eq!(upgrade.confidence, probe_model::Confidence::Exact);
    let evidence = upgrade.evidence.join("\n");
    for want in [
        "curl -fsSL https://ollama.com/install.sh | OLLAMA_VERSION=0.13.5 sh",
        "binary /usr/local/bin/ollama written 2026-11-14 01:27:09 UTC",
        "unit file /etc/systemd/system/ollama.service written 2026-11-16 03:58:12 UTC",
        "version 0.12.11 in the run from 2026-11-09 10:40:13 UTC",
        "version 0.13.5 in the run from 2026-11-16 04:01:55 UTC",
    ] {
        assert!(evidence.contains(want), "{want}:\n{evidence}");
    }
    // The first install (2026-11-09, before any run) is no upgrade.
    assert_eq!(
        events
            .iter()
            .filter(|e| e.summary.starts_with("ollama "))
            .count(),
        1
    );
    // The host report lists it among the installs near the runs.
    assert!(
        env()
            .report
            .install_events
            .iter()
            .any(|e| e.kind == TimelineEventKind::EngineInstall
                && e.summary.starts_with("ollama 0.12.11 -> 0.13.5")),
        "{:#?}",
        env().report.install_events
    );
}

/// ana's llama.cpp build: the binary's mtime, the commit it was built from (ORIG_HEAD, since
/// she pulled again without rebuilding), the history lines that built it; and the editable
/// vLLM whose checkout moved since its install.
#[test]
fn a_home_build_and_an_editable_checkout_are_versions_with_their_commits() {
    let t = timeline();
    let events = engine_installs(&t);
    let build = events
        .iter()
        .find(|e| {
            e.summary
                .contains("llama-server built from /home/ana/llama.cpp")
        })
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(build.time.at, Some(1_796_059_985), "{build:#?}");
    assert!(
        build
            .summary
            .contains("@ 3f4ae8a (master); the checkout moved to b6a7c1e since"),
        "{}",
        build.summary
    );
    let evidence = build.evidence.join("\n");
    for want in [
        "cmake --build build --config Release -j 16",
        "ORIG_HEAD 3f4ae8ad5c2e9b1d7a6f0e4c8b2a9d1e3f5c7b90",
        "cd ~/llama.cpp && git pull",
    ] {
        assert!(evidence.contains(want), "{want}:\n{evidence}");
    }
    let editable = events
        .iter()
        .find(|e| {
            e.summary
                .starts_with("vllm 0.11.1.dev123+g5e2c7a1 (editable, /opt/src/vllm @ 8d41f0b)")
        })
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert!(
        editable
            .summary
            .contains("checkout moved 5e2c7a1 -> 8d41f0b"),
        "{}",
        editable.summary
    );
    let human =
        String::from_utf8_lossy(&probe(&["timeline", "fx-selfinst@latest"]).stdout).into_owned();
    insta::assert_snapshot!("selfinst_timeline_evidence", evidence_block(&human));
}

/// The runs' engine versions say the checkouts: the editable vLLM's with the commit its
/// checkout held, the running llama-server (no version line read) with the checkout and the
/// commit it was built from.
#[test]
fn the_runs_versions_name_their_checkouts() {
    let runs = &env().report.runs;
    let vllm = runs
        .iter()
        .find(|r| r.engine == probe_model::Engine::Vllm)
        .unwrap_or_else(|| panic!("{runs:#?}"));
    assert_eq!(
        vllm.engine_version.version.as_deref(),
        Some("0.11.1.dev123+g5e2c7a1")
    );
    assert_eq!(
        vllm.engine_version.note.as_deref(),
        Some("editable, /opt/src/vllm @ 8d41f0b")
    );
    let llama = runs
        .iter()
        .find(|r| r.engine == probe_model::Engine::LlamaCpp && r.running)
        .unwrap_or_else(|| panic!("{runs:#?}"));
    assert_eq!(
        llama.engine_version.note.as_deref(),
        Some("built from /home/ana/llama.cpp @ 3f4ae8a"),
        "{llama:#?}"
    );
    let text =
        String::from_utf8_lossy(&probe(&["host", "fx-selfinst", "--no-store"]).stdout).into_owned();
    for want in [
        "engine: vllm 0.11.1.dev123+g5e2c7a1 (editable, /opt/src/vllm @ 8d41f0b)",
        "engine: llama.cpp (built from /home/ana/llama.cpp @ 3f4ae8a)",
        "[engine] ollama 0.12.11 -> 0.13.5 installed outside the package manager (install script)",
        "ollama  model llama3.3:70b (loaded by its runners; the command line names none)",
    ] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
}
