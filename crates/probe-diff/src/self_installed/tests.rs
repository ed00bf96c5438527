//! Table tests: each self-installed story gives its events, with the evidence that says so.

use probe_model::{
    Checkout, Engine, FileText, HistoryEntry, HistoryFile, InstalledBinary, PythonEnv,
    PythonPackage, RunBound, RunVersion, SelfInstalled, Snapshot, SystemdUnit, VersionSource,
};

use super::*;

const C: &str = "9c1e5b2e7d6f4a3b2c1d0e9f8a7b6c5d4e3f2a1b";

fn run(location: &str, at: i64, version: &str) -> Run {
    Run {
        launch: location.into(),
        engine: Engine::Ollama,
        start: RunBound {
            at: Some(at),
            ..RunBound::default()
        },
        engine_version: RunVersion {
            version: Some(version.into()),
            source: VersionSource::StartupLine,
            note: None,
        },
        ..Run::default()
    }
}

fn history(entries: &[(i64, &str)]) -> HistoryFile {
    HistoryFile {
        path: "/root/.bash_history".into(),
        entries: entries
            .iter()
            .enumerate()
            .map(|(i, (t, c))| HistoryEntry {
                index: i as u32,
                time: Some(*t),
                command: c.to_string(),
            })
            .collect(),
        ..HistoryFile::default()
    }
}

fn binary(path: &str, mtime: i64, checkout: Option<&str>) -> InstalledBinary {
    InstalledBinary {
        path: path.into(),
        mtime: Some(mtime),
        checkout: checkout.map(str::to_string),
        ..InstalledBinary::default()
    }
}

#[test]
fn an_install_script_between_two_runs_is_an_upgrade_with_its_evidence() {
    let snap = Snapshot {
        histories: vec![history(&[
            (1_000, "ollama pull llama3.3:70b"),
            (
                5_000,
                "curl -fsSL https://ollama.com/install.sh | OLLAMA_VERSION=0.13.5 sh",
            ),
        ])],
        units: vec![SystemdUnit {
            name: "ollama.service".into(),
            fragment: FileText {
                path: "/etc/systemd/system/ollama.service".into(),
                mtime: Some(5_030),
                ..FileText::default()
            },
            ..SystemdUnit::default()
        }],
        self_installed: SelfInstalled {
            binaries: vec![binary("/usr/local/bin/ollama", 5_020, None)],
            ..SelfInstalled::default()
        },
        ..Snapshot::default()
    };
    let runs = [
        run("log:ollama.service", 900, "0.12.11"),
        run("log:ollama.service", 2_000, "0.12.11"),
        run("pid:66", 5_040, "0.13.5"),
    ];
    let ev = version_changes(&snap, &runs);
    assert_eq!(ev.len(), 1, "{ev:#?}");
    let e = &ev[0];
    assert_eq!(e.kind, TimelineEventKind::EngineInstall);
    assert_eq!(e.time.at, Some(5_000));
    assert_eq!(e.confidence, Confidence::Exact);
    assert!(
        e.summary.starts_with("ollama 0.12.11 -> 0.13.5"),
        "{}",
        e.summary
    );
    let joined = e.evidence.join("\n");
    for want in [
        "version 0.12.11",
        "version 0.13.5",
        "install.sh | OLLAMA_VERSION=0.13.5 sh",
        "binary /usr/local/bin/ollama written",
        "unit file /etc/systemd/system/ollama.service written",
    ] {
        assert!(joined.contains(want), "{want}: {joined}");
    }
}

#[test]
fn a_version_change_without_self_install_evidence_is_left_to_the_package_events() {
    let snap = Snapshot {
        histories: vec![history(&[(5_000, "pip install -U vllm")])],
        ..Snapshot::default()
    };
    let runs = [run("a", 1_000, "0.10.0"), run("a", 6_000, "0.11.0")];
    assert!(version_changes(&snap, &runs).is_empty());
}

#[test]
fn a_build_in_a_checkout_and_a_checkout_that_moved_since() {
    let checkout = |ref_mtime: i64| Checkout {
        dir: "/home/ana/llama.cpp".into(),
        branch: Some("refs/heads/master".into()),
        commit: Some(C.into()),
        ref_mtime: Some(ref_mtime),
        fetched_at: Some(ref_mtime),
        moved_at: Some(ref_mtime),
        moved_from: Some("3f4ae8ad".repeat(5)),
    };
    for (ref_mtime, moved) in [(9_000, false), (20_000, true)] {
        let snap = Snapshot {
            histories: vec![HistoryFile {
                path: "/home/ana/.bash_history".into(),
                ..history(&[
                    (8_900, "cd ~/llama.cpp && git pull"),
                    (9_100, "cmake --build build --config Release -j 16"),
                    (9_500, "ls"),
                ])
            }],
            self_installed: SelfInstalled {
                binaries: vec![binary(
                    "/home/ana/llama.cpp/build/bin/llama-server",
                    9_600,
                    Some("/home/ana/llama.cpp"),
                )],
                checkouts: vec![checkout(ref_mtime)],
                ..SelfInstalled::default()
            },
            ..Snapshot::default()
        };
        let ev = events(&snap);
        assert_eq!(ev.len(), 1, "{ev:#?}");
        let e = &ev[0];
        assert_eq!(e.time.at, Some(9_600));
        let built = if moved { "3f4ae8a" } else { "9c1e5b2" };
        assert!(
            e.summary.starts_with(&format!(
                "/home/ana/llama.cpp/build/bin/llama-server built from /home/ana/llama.cpp @ {built} (master)"
            )),
            "{}",
            e.summary
        );
        assert_eq!(
            e.summary
                .contains("the checkout moved to 9c1e5b2 since, not rebuilt"),
            moved,
            "{}",
            e.summary
        );
        let joined = e.evidence.join("\n");
        assert!(joined.contains("git pull"), "{joined}");
        assert!(joined.contains("cmake --build build"), "{joined}");
        assert!(!joined.contains("`ls`"), "{joined}");
    }
}

#[test]
fn an_editable_install_shows_its_checkout_and_a_move_since_the_install() {
    for (version, moved) in [
        ("0.11.1.dev123+g9c1e5b2", false),
        ("0.11.1.dev123+gabc1234", true),
        ("0.11.1", false),
    ] {
        let snap = Snapshot {
            python_envs: vec![PythonEnv {
                interpreter: "/opt/venvs/vllm-src/bin/python3".into(),
                packages: vec![PythonPackage {
                    name: "vllm".into(),
                    version: version.into(),
                    installed_at: Some(1_000),
                    direct_url: Some("file:///opt/src/vllm (editable)".into()),
                    installer: None,
                }],
                ..PythonEnv::default()
            }],
            self_installed: SelfInstalled {
                checkouts: vec![Checkout {
                    dir: "/opt/src/vllm".into(),
                    commit: Some(C.into()),
                    ref_mtime: Some(2_000),
                    ..Checkout::default()
                }],
                ..SelfInstalled::default()
            },
            ..Snapshot::default()
        };
        let ev = events(&snap);
        assert_eq!(ev.len(), 1, "{ev:#?}");
        let e = &ev[0];
        assert!(
            e.summary.starts_with(&format!(
                "vllm {version} (editable, /opt/src/vllm @ 9c1e5b2)"
            )),
            "{}",
            e.summary
        );
        assert_eq!(
            e.summary.contains("checkout moved abc1234 -> 9c1e5b2"),
            moved,
            "{}",
            e.summary
        );
        assert_eq!(e.time.at, Some(2_000));
    }
}

#[test]
fn install_scripts_and_build_steps_are_told_apart() {
    for (line, script, build) in [
        ("curl -fsSL https://ollama.com/install.sh | sh", true, false),
        (
            "curl -fsSL https://ollama.com/install.sh | OLLAMA_VERSION=0.13.5 sh",
            true,
            false,
        ),
        (
            "wget -qO- https://example.com/get.sh | sudo bash",
            true,
            false,
        ),
        ("curl -s http://localhost:11434/api/ps | jq .", false, false),
        ("cmake --build build --config Release -j", false, true),
        ("git pull --rebase", false, true),
        ("make", false, true),
        ("ollama serve", false, false),
    ] {
        assert_eq!(is_install_script(line), script, "{line}");
        assert_eq!(is_build_step(line), build, "{line}");
    }
}

#[test]
fn a_runs_version_says_its_checkout() {
    let checkout = Checkout {
        dir: "/opt/src/vllm".into(),
        commit: Some(C.into()),
        moved_at: Some(4_000),
        moved_from: Some("ab".repeat(20)),
        ..Checkout::default()
    };
    let snap = Snapshot {
        self_installed: SelfInstalled {
            binaries: vec![binary(
                "/home/ana/llama.cpp/build/bin/llama-server",
                9_600,
                Some("/opt/src/vllm"),
            )],
            checkouts: vec![checkout],
            ..SelfInstalled::default()
        },
        ..Snapshot::default()
    };
    let env = PythonEnv {
        packages: vec![PythonPackage {
            name: "vllm".into(),
            version: "0.11.1.dev123+g9c1e5b2".into(),
            installed_at: Some(1_000),
            direct_url: Some("file:///opt/src/vllm (editable)".into()),
            installer: None,
        }],
        ..PythonEnv::default()
    };
    let installed = RunVersion {
        version: Some("0.11.1.dev123+g9c1e5b2".into()),
        source: VersionSource::InstalledBefore,
        note: None,
    };
    let launch = probe_model::LaunchConfig::default();
    let v = run_version(
        &snap,
        &launch,
        5_000,
        &["vllm".to_string()],
        Some(&env),
        installed.clone(),
    );
    assert_eq!(v.note.as_deref(), Some("editable, /opt/src/vllm @ 9c1e5b2"));
    // A run that started before the checkout moved ran where it was (ORIG_HEAD).
    let early = run_version(
        &snap,
        &launch,
        3_000,
        &["vllm".to_string()],
        Some(&env),
        installed.clone(),
    );
    assert_eq!(
        early.note.as_deref(),
        Some("editable, /opt/src/vllm @ abababa")
    );
    // Not its package, or a version from the start-up line: as it was.
    assert_eq!(
        run_version(
            &snap,
            &launch,
            5_000,
            &["sglang".to_string()],
            Some(&env),
            installed.clone()
        ),
        installed
    );
    let logged = RunVersion {
        source: VersionSource::StartupLine,
        ..installed
    };
    assert_eq!(
        run_version(
            &snap,
            &launch,
            5_000,
            &["vllm".to_string()],
            Some(&env),
            logged.clone()
        ),
        logged
    );
    // A build run from its checkout by a relative path.
    let built = probe_model::LaunchConfig {
        argv: vec!["./build/bin//llama-server".into()],
        working_directory: Some("/home/ana/llama.cpp".into()),
        ..probe_model::LaunchConfig::default()
    };
    let v = run_version(&snap, &built, 5_000, &[], None, RunVersion::default());
    assert_eq!(
        v.note.as_deref(),
        Some("built from /opt/src/vllm @ 9c1e5b2")
    );
    assert_eq!(v.version, None);
}
