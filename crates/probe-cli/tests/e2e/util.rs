//! What every module of the e2e binary shares: the one way to run the built `probe` ([`probe`]),
//! the check of its JSON against the published schemas ([`assert_schema`], applied to every
//! JSON document a run writes), waits for a condition ([`wait_until`]), and the guard that lets
//! a test which needs the machine to itself run alone ([`alone`]).
//!
//! The fixture hosts come from one registry per process, `probe_testkit::fixture::shared_fleet`:
//! each host starts once, on first use, whichever module asks first, and every module that needs
//! it shares it. A module keeps only what is its own (a home directory, an inventory) in a static.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use probe_testkit::fixture::SharedFleet;

pub const PROBE: &str = env!("CARGO_BIN_EXE_probe");

/// The built `probe` with the environment every test gives it: `HOME` and `XDG_CONFIG_HOME`
/// under `home` (the real `~/.ssh` and `~/.config` are never read), no `RUST_LOG`, `NO_COLOR`,
/// no `PROBE_STORE`/`PROBE_SHARD` from the caller's shell, stdin closed. Add `-F` with
/// [`Probe::config`] and `--store` with [`Probe::store`], then [`Probe::run`].
pub fn probe(home: &Path) -> Probe {
    Probe {
        home: home.to_path_buf(),
        config: None,
        store: None,
        wrapper: Vec::new(),
        envs: Vec::new(),
    }
}

/// [`probe`] with `-F config` and `--store store`: how most tests run it.
pub fn probe_on(home: &Path, config: &Path, store: impl AsRef<OsStr>) -> Probe {
    probe(home).config(config).store(store)
}

/// The one host report of a `probe host ALIAS --format json` run that succeeded.
#[track_caller]
pub fn one_host_report(out: &Output) -> probe_model::HostReport {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut reports: Vec<probe_model::HostReport> =
        serde_json::from_slice(&out.stdout).expect("host reports");
    assert_eq!(reports.len(), 1, "one report");
    reports.remove(0)
}

/// `probe host ALIAS --format json` into the store of `home` (`store.db`), then the snapshot it
/// stored, as `probe snapshots export` writes it: the report and what it was built from.
pub fn host_report_and_snapshot(
    home: &Path,
    config: &Path,
    alias: &str,
) -> (probe_model::HostReport, probe_model::Snapshot) {
    let probe = probe_on(home, config, home.join("store.db"));
    let report = one_host_report(&probe.run(&["host", alias, "--format", "json"]));
    let path = home.join(format!("{alias}.snapshot.json"));
    let export = probe.run(&["snapshots", "export", alias, "-o", path.to_str().unwrap()]);
    assert_eq!(export.status.code(), Some(0), "{}", text(&export.stderr));
    let snapshot = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    (report, snapshot)
}

/// [`host_report_and_snapshot`], and the human text of the same host (`--no-store`).
pub fn host_report_text_and_snapshot(
    home: &Path,
    config: &Path,
    alias: &str,
) -> (probe_model::HostReport, String, probe_model::Snapshot) {
    let (report, snapshot) = host_report_and_snapshot(home, config, alias);
    let out = probe(home)
        .config(config)
        .run(&["host", alias, "--no-store"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    (report, text(&out.stdout), snapshot)
}

/// What one collection of a fixture host gives: the report (JSON), the human text and the
/// snapshot it stored.
pub type Collected = (probe_model::HostReport, String, probe_model::Snapshot);

/// [`host_report_text_and_snapshot`] of fixture host `name` (alias `fx-NAME`), collected once
/// per test process on its own fleet and store, whichever test asks first; the others wait for
/// that one collection.
pub fn collected(name: &str) -> &'static Collected {
    type Slot = &'static OnceLock<Collected>;
    static SLOTS: OnceLock<Mutex<HashMap<String, Slot>>> = OnceLock::new();
    let slot: Slot = {
        let mut slots = SLOTS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *slots
            .entry(name.to_string())
            .or_insert_with(|| Box::leak(Box::new(OnceLock::new())))
    };
    slot.get_or_init(|| {
        let fleet: &'static SharedFleet = Box::leak(Box::new(fleet(&[name])));
        let dir: &'static tempfile::TempDir = Box::leak(Box::new(tempfile::tempdir().unwrap()));
        host_report_text_and_snapshot(dir.path(), &fleet.ssh_config(), &format!("fx-{name}"))
    })
}

/// One configured `probe` invocation (see [`probe`]).
#[derive(Clone)]
pub struct Probe {
    home: PathBuf,
    config: Option<PathBuf>,
    store: Option<OsString>,
    /// A command line that runs probe (`timeout 60 prlimit --as=...`).
    wrapper: Vec<String>,
    /// Set after the common environment.
    envs: Vec<(String, String)>,
}

impl Probe {
    /// `-F PATH`: the client ssh_config.
    pub fn config(mut self, path: &Path) -> Probe {
        self.config = Some(path.to_path_buf());
        self
    }

    /// `--store STORE`: a SQLite file or a PostgreSQL URL.
    pub fn store(mut self, store: impl AsRef<OsStr>) -> Probe {
        self.store = Some(store.as_ref().to_os_string());
        self
    }

    /// Runs probe under `argv` (`["timeout", "60"]`).
    pub fn wrapped(mut self, argv: &[&str]) -> Probe {
        self.wrapper = argv.iter().map(|a| a.to_string()).collect();
        self
    }

    pub fn env(mut self, key: &str, value: impl Into<String>) -> Probe {
        self.envs.push((key.to_string(), value.into()));
        self
    }

    /// The whole command line: the wrapper, probe, `-F`, `--store`, then `args`.
    pub fn argv(&self, args: &[&str]) -> Vec<OsString> {
        let mut argv: Vec<OsString> = self.wrapper.iter().map(OsString::from).collect();
        argv.push(PROBE.into());
        if let Some(config) = &self.config {
            argv.extend(["-F".into(), config.clone().into_os_string()]);
        }
        if let Some(store) = &self.store {
            argv.extend(["--store".into(), store.clone()]);
        }
        argv.extend(args.iter().map(OsString::from));
        argv
    }

    /// Gives `command` this invocation's environment.
    pub fn apply_env(&self, command: &mut Command) {
        command
            .env_remove("RUST_LOG")
            .env_remove("PROBE_STORE")
            .env_remove("PROBE_SHARD")
            .env("NO_COLOR", "1")
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join("xdg-config"))
            .stdin(Stdio::null());
        for (key, value) in &self.envs {
            command.env(key, value);
        }
    }

    /// The command, not started.
    pub fn command(&self, args: &[&str]) -> Command {
        let argv = self.argv(args);
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]);
        self.apply_env(&mut command);
        command
    }

    /// Runs probe with `args` to the end; what it wrote as JSON is checked against its schema
    /// ([`assert_output_schema`]).
    pub fn run(&self, args: &[&str]) -> Output {
        let _busy = busy();
        let out = self.command(args).output().expect("run probe");
        assert_output_schema(args, &out);
        out
    }

    /// [`Probe::run`], and how long probe itself ran (not the wait for [`busy`]).
    pub fn run_timed(&self, args: &[&str]) -> (Output, Duration) {
        let _busy = busy();
        let started = Instant::now();
        let out = self.command(args).output().expect("run probe");
        let elapsed = started.elapsed();
        assert_output_schema(args, &out);
        (out, elapsed)
    }

    /// Starts probe with `args`, stdout and stderr piped; check its output with
    /// [`assert_output_schema`] after `wait_with_output`.
    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start probe")
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh directory and a SQLite store path in it.
pub fn store() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshots.db");
    (dir, path)
}

/// The document a probe command line writes as JSON, by its schema name under `docs/schema/`
/// (docs/CLI.md, "JSON Schemas").
enum Document {
    /// One document of this schema on stdout.
    Stdout(&'static str),
    /// `snapshots export`: a snapshot on stdout, or in the `-o` file.
    Export,
    /// `audit --jsonl`: `audit-record` lines, `outliers-line` lines, then one `audit-summary`
    /// line, each checked by its `type`.
    AuditLines,
    /// JSON without a published schema (`snapshots list`):
    /// it must still parse.
    Unschemed,
}

const SUBCOMMANDS: &[&str] = &[
    "host",
    "diff",
    "timeline",
    "launch",
    "audit",
    "snapshots",
    "resolve",
    "completions",
    "man",
];

fn document(args: &[&str]) -> Option<Document> {
    let at = args.iter().position(|a| SUBCOMMANDS.contains(a))?;
    let has = |flag: &str| args.contains(&flag);
    let json =
        has("--json") || has("--format=json") || args.windows(2).any(|w| w == ["--format", "json"]);
    let sub = args.get(at + 1).copied();
    match args[at] {
        "host" if json => Some(Document::Stdout("host-report")),
        "diff" if has("--rollback") && json => Some(Document::Stdout("rollback-plan")),
        "diff" if json => Some(Document::Stdout("snapshot-diff")),
        "timeline" if json => Some(Document::Stdout("timeline")),
        "launch" if json => Some(Document::Stdout("launch-output")),
        "audit" if sub == Some("report") => json.then_some(Document::Stdout("fleet-report")),
        "audit" if has("--jsonl") => Some(Document::AuditLines),
        "audit" if json => Some(Document::Stdout("audit-report")),
        "snapshots" if sub == Some("export") && !has("--to-store") => Some(Document::Export),
        "snapshots" if sub == Some("show") && json => Some(Document::Stdout("snapshot")),
        "snapshots" if sub == Some("list") && json => Some(Document::Unschemed),
        _ => None,
    }
}

/// Checks what probe wrote as JSON for `args` against its published schema: every document
/// on stdout (`--format json`, `--json`, each line of `--jsonl`) and the snapshot of
/// `snapshots export`. A failed run (exit 2, or a signal) wrote none and is left to the test.
pub fn assert_output_schema(args: &[&str], out: &Output) {
    if matches!(out.status.code(), None | Some(2)) {
        return;
    }
    let Some(document) = document(args) else {
        return;
    };
    let parse = |bytes: &[u8], what: &str| -> serde_json::Value {
        serde_json::from_slice(bytes)
            .unwrap_or_else(|e| panic!("probe {args:?}: {what} is not JSON: {e}\n{}", text(bytes)))
    };
    match document {
        Document::Stdout(schema) => assert_schema(&parse(&out.stdout, "stdout"), schema),
        Document::Unschemed => {
            parse(&out.stdout, "stdout");
        }
        Document::Export => {
            let file = args
                .windows(2)
                .find(|w| w[0] == "-o" || w[0] == "--output")
                .map(|w| w[1]);
            match file {
                Some(file) => {
                    let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{file}: {e}"));
                    assert_schema(&parse(&bytes, file), "snapshot");
                }
                None => assert_schema(&parse(&out.stdout, "stdout"), "snapshot"),
            }
        }
        Document::AuditLines => {
            let stdout = text(&out.stdout);
            let lines: Vec<&str> = stdout.lines().collect();
            let (summary, records) = lines
                .split_last()
                .unwrap_or_else(|| panic!("probe {args:?}: no JSON Lines"));
            for line in records {
                let value = parse(line.as_bytes(), "a line");
                let schema = match value["type"].as_str() {
                    Some("outliers") => "outliers-line",
                    _ => "audit-record",
                };
                assert_schema(&value, schema);
            }
            assert_schema(&parse(summary.as_bytes(), "the last line"), "audit-summary");
        }
    }
}

/// Checks `value` against the committed `docs/schema/NAME.schema.json` (generated from the model
/// types by `crates/probe-model/tests/model/schema.rs`): what the binary writes is what is
/// documented.
#[track_caller]
pub fn assert_schema(value: &serde_json::Value, name: &str) {
    let errors = schema_errors(name, value);
    assert!(
        errors.is_empty(),
        "output does not match docs/schema/{name}.schema.json:\n{}",
        errors.join("\n")
    );
}

/// The first violations of `docs/schema/NAME.schema.json` by `value`.
pub fn schema_errors(name: &str, value: &serde_json::Value) -> Vec<String> {
    validator(name)
        .iter_errors(value)
        .take(10)
        .map(|e| {
            let message = e.to_string();
            let short: String = message.chars().take(300).collect();
            format!("at {:?}: {short}", e.instance_path().as_str())
        })
        .collect()
}

/// The compiled schema `name`, built once per process.
fn validator(name: &str) -> &'static jsonschema::Validator {
    static VALIDATORS: OnceLock<Mutex<BTreeMap<String, &'static jsonschema::Validator>>> =
        OnceLock::new();
    let mut validators = VALIDATORS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    validators.entry(name.to_string()).or_insert_with(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/schema")
            .join(format!("{name}.schema.json"));
        let schema: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let validator = jsonschema::validator_for(&schema)
            .unwrap_or_else(|e| panic!("{}: not a schema: {e}", path.display()));
        Box::leak(Box::new(validator))
    })
}

/// Polls `condition` until it holds; fails naming `what` when it still does not after
/// `timeout`. For waiting on the fixtures (a log line, a clock), never a fixed sleep.
#[track_caller]
pub fn wait_until(what: &str, timeout: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !condition() {
        assert!(Instant::now() < deadline, "{what}: not after {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Tests in this binary run in parallel threads. A test whose outcome rests on deadlines that a
/// busy machine misses (the 500-host simulation: its connect timeout and deadline are sized for
/// an otherwise idle 2-core runner) holds [`alone`] for its whole run; every probe run and
/// browser of the other tests holds [`busy`] while it works, so they wait while it runs and it
/// waits for the ones running.
static MACHINE: RwLock<()> = RwLock::new(());

thread_local! {
    /// Whether this thread holds [`alone`] (its own probe runs then take no [`busy`] guard).
    static ALONE: Cell<bool> = const { Cell::new(false) };
}

/// Held while a test's probe or browser works (see [`MACHINE`]); `None` on the thread that
/// holds [`alone`].
pub fn busy() -> Option<RwLockReadGuard<'static, ()>> {
    if ALONE.get() {
        return None;
    }
    Some(MACHINE.read().unwrap_or_else(|e| e.into_inner()))
}

/// The machine to this test alone (see [`MACHINE`]), until the guard drops.
pub fn alone() -> Alone {
    let guard = MACHINE.write().unwrap_or_else(|e| e.into_inner());
    ALONE.set(true);
    Alone { _guard: guard }
}

pub struct Alone {
    _guard: RwLockWriteGuard<'static, ()>,
}

impl Drop for Alone {
    fn drop(&mut self) {
        ALONE.set(false);
    }
}

/// The named fixture hosts from this process's registry (`probe_testkit::fixture::shared_fleet`),
/// after checking that the machine can run them; started, where not yet running, as busy work
/// (see [`MACHINE`]).
pub fn fleet(names: &[&str]) -> probe_testkit::fixture::SharedFleet {
    probe_testkit::require_openssh().unwrap_or_else(|e| panic!("{e}"));
    probe_testkit::fixture::require_namespaces().unwrap_or_else(|e| panic!("{e}"));
    let _busy = busy();
    let started = Instant::now();
    let fleet = probe_testkit::fixture::shared_fleet(names);
    eprintln!("fixture hosts {names:?} ready in {:?}", started.elapsed());
    fleet
}

/// The schema check knows the document of every command line that writes JSON, wherever its
/// global flags stand, and leaves the others alone.
#[test]
fn every_json_command_line_has_its_document() {
    let schema = |args: &[&str]| match document(args) {
        Some(Document::Stdout(name)) => name,
        Some(Document::Export) => "export",
        Some(Document::AuditLines) => "audit lines",
        Some(Document::Unschemed) => "unschemed",
        None => "none",
    };
    for (args, want) in [
        (&["host", "a", "--format", "json"][..], "host-report"),
        (&["--format", "json", "host", "a"], "host-report"),
        (&["host", "a"], "none"),
        (&["host", "a", "--format", "markdown"], "none"),
        (&["diff", "a", "b", "--format", "json"], "snapshot-diff"),
        (
            &["diff", "a", "b", "--rollback", "--format", "json"],
            "rollback-plan",
        ),
        (&["timeline", "a", "--format", "json"], "timeline"),
        (&["launch", "f", "--json"], "launch-output"),
        (&["audit", "--inventory", "i", "--jsonl"], "audit lines"),
        (
            &["audit", "--inventory", "i", "--format", "json"],
            "audit-report",
        ),
        (&["audit", "report", "--format", "json"], "fleet-report"),
        (&["snapshots", "export", "a", "-o", "f"], "export"),
        (&["snapshots", "export", "--to-store", "s"], "none"),
        (&["--format", "json", "snapshots", "show", "a"], "snapshot"),
        (&["snapshots", "list", "--format", "json"], "unschemed"),
        (&["-F", "/dev/zero", "resolve", "gpu1"], "none"),
    ] {
        assert_eq!(schema(args), want, "{args:?}");
    }
}

/// The verdict on the change `key` of a launch diff (a test fails naming the changes when there
/// is none).
#[track_caller]
pub fn verdict_of<'a>(
    diff: &'a probe_model::LaunchDiff,
    key: &str,
) -> &'a probe_model::CauseVerdict {
    diff.changes
        .iter()
        .find(|c| c.key == key)
        .and_then(|c| c.verdict.as_ref())
        .unwrap_or_else(|| panic!("{key}: {:#?}", diff.changes))
}

/// The verdict block of a human host report and its candidate causes' table: from `Verdict`
/// and from `  Candidate causes`, each to the next blank line.
#[track_caller]
pub fn verdict_blocks(text: &str) -> String {
    let block = |from: &str| {
        let start = text
            .find(from)
            .unwrap_or_else(|| panic!("{from} in\n{text}"));
        let rest = &text[start..];
        let end = rest.find("\n\n").unwrap_or(rest.len());
        rest[..end].to_string()
    };
    format!("{}\n\n{}", block("Verdict"), block("  Candidate causes"))
}

/// Fixture hosts collected once each (`probe host ALIAS`) into a store of their own: the set-up
/// of the tests that compare two or three nodes.
pub struct Stored {
    pub config: PathBuf,
    pub dir: tempfile::TempDir,
    pub store: PathBuf,
}

impl Stored {
    pub fn collect(names: &[&str]) -> Stored {
        let fleet = fleet(names);
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("snapshots.db");
        let stored = Stored {
            config: fleet.ssh_config(),
            dir,
            store,
        };
        for name in names {
            let out = stored.probe(&["host", &format!("fx-{name}")]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        }
        stored
    }

    /// probe with this store and the fleet's ssh_config.
    pub fn probe(&self, args: &[&str]) -> Output {
        probe_on(self.dir.path(), &self.config, &self.store).run(args)
    }
}
