//! End-to-end: the built `probe` binary against the `secrets` fixture host (127.0.0.30), whose
//! unit file, EnvironmentFile, shell history, running server (argv, environment, log, and its
//! own `/metrics`: a `vllm:cache_config_info` label carrying its `HF_TOKEN`) and model
//! `config.json` hold every secret shape operators write, each literal secret containing
//! `SEKRIT`. None may reach a report (human, markdown, JSON, HTML, JSON Lines, Prometheus), a
//! stored snapshot (`snapshots show`/`export`), or the SQLite file; variable references stay.

use std::path::{Path, PathBuf};
use std::process::Output;

use probe_testkit::fixture::FixtureHost;

use crate::util;

/// probe with the host's own config, `home` and the store at `store`.
fn probe(host: &FixtureHost, home: &Path, store: &Path, args: &[&str]) -> Output {
    util::probe_on(home, &host.ssh_config(), store).run(args)
}

fn ok(out: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{what}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Every place `SEKRIT` (any case) occurs, with some context.
fn leaks(text: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    lower
        .match_indices("sekrit")
        .map(|(i, _)| {
            let bytes = text.as_bytes();
            let (from, to) = (i.saturating_sub(60), (i + 30).min(bytes.len()));
            String::from_utf8_lossy(bytes.get(from..to).unwrap_or_default()).into_owned()
        })
        .take(10)
        .collect()
}

fn assert_clean(what: &str, text: &str) {
    let found = leaks(text);
    assert!(found.is_empty(), "{what} leaks secrets: {found:#?}");
}

#[test]
fn no_secret_reaches_any_output_the_store_or_an_export() {
    let host = util::fleet(&["secrets"]).host("secrets");
    let home = tempfile::tempdir().unwrap();
    let store: PathBuf = home.path().join("snapshots.db");
    let alias = host.alias.as_str();

    let human = ok(&probe(host, home.path(), &store, &["host", alias]), "human");
    assert_clean("human report", &human);
    let markdown = ok(
        &probe(
            host,
            home.path(),
            &store,
            &["--format", "markdown", "host", alias],
        ),
        "markdown",
    );
    assert_clean("markdown report", &markdown);
    let json = ok(
        &probe(
            host,
            home.path(),
            &store,
            &["--format", "json", "host", alias],
        ),
        "json",
    );
    assert_clean("json report", &json);
    // The server was asked, and the label that carried the token is there, redacted.
    let reports: Vec<probe_model::HostReport> = serde_json::from_str(&json).unwrap();
    let token = reports
        .iter()
        .flat_map(|report| &report.servers)
        .find_map(|server| server.reading.args.get("cache_config.hf_token"));
    assert!(
        token
            .and_then(|t| t.as_str())
            .is_some_and(|t| t.starts_with("<redacted:")),
        "{token:?} in {:?}",
        reports.iter().map(|r| &r.servers).collect::<Vec<_>>()
    );
    let html = ok(
        &probe(
            host,
            home.path(),
            &store,
            &["--format", "html", "host", alias],
        ),
        "html",
    );
    assert_clean("html report", &html);

    let dir = tempfile::tempdir().unwrap();
    let inventory = dir.path().join("fleet.toml");
    std::fs::write(
        &inventory,
        format!("[hosts.secrets]\naddress = \"{alias}\"\n"),
    )
    .unwrap();
    let prom = dir.path().join("probe.prom");
    let jsonl = ok(
        &probe(
            host,
            home.path(),
            &store,
            &[
                "audit",
                "--inventory",
                inventory.to_str().unwrap(),
                "--jsonl",
                "--prometheus",
                prom.to_str().unwrap(),
            ],
        ),
        "audit jsonl",
    );
    assert!(!jsonl.is_empty());
    assert_clean("audit JSON Lines", &jsonl);
    assert_clean(
        "Prometheus textfile",
        &std::fs::read_to_string(&prom).unwrap(),
    );

    let shown = ok(
        &probe(
            host,
            home.path(),
            &store,
            &["--format", "json", "snapshots", "show", alias],
        ),
        "snapshots show",
    );
    assert_clean("snapshots show", &shown);
    let export_file = dir.path().join("export.json");
    ok(
        &probe(
            host,
            home.path(),
            &store,
            &[
                "snapshots",
                "export",
                alias,
                "--output",
                export_file.to_str().unwrap(),
            ],
        ),
        "snapshots export",
    );
    let export = std::fs::read_to_string(&export_file).unwrap();
    assert_clean("export", &export);
    for entry in std::fs::read_dir(home.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().contains("snapshots.db") {
            let bytes = std::fs::read(&path).unwrap();
            assert_clean(
                &format!("store file {}", path.display()),
                &String::from_utf8_lossy(&bytes),
            );
        }
    }

    // Not vacuous: every shape was collected, redacted where it stood, references kept.
    for expected in [
        "Environment=MY_DB_PASSWORD=<redacted:",
        "Environment=\\\"OPENAI_API_KEY=<redacted:",
        "https://<redacted:",
        "@o1.ingest.sentry.io/42",
        "postgres://app:<redacted:",
        "--env=HF_TOKEN=<redacted:",
        "-e HF_TOKEN=$4",
        "HF_TOKEN=${HF_TOKEN:-}",
        "echo $HF_TOKEN",
        "mysql -h db.local -uroot -p<redacted:",
        "docker login -u bot -p <redacted:",
        "sshpass -p <redacted:",
        "curl -u admin:<redacted:",
        "https://deploy:<redacted:",
        "aws configure set aws_secret_access_key <redacted:",
        "export DB_PASS=<redacted:",
        "--api-key <redacted:",
        "'api_key': ['<redacted:",
        "\"hub_api_key\": \"<redacted:",
        "https://calib:<redacted:",
        "\"HF_TOKEN_FROM_ARG\": \"$4\"",
        "Bearer <redacted:",
    ] {
        assert!(export.contains(expected), "export lacks {expected:?}");
    }
}
