//! The result survives the store: `probe host` against a store it cannot write (a full file
//! system, a read-only mount) still prints its report (`--format json` complete), says in one
//! line on stderr that the snapshot was not stored and why, exits 5, and keeps the snapshot in
//! the spool, from which `probe snapshots import` stores it. The broken store is real: a small
//! tmpfs filled to the last byte, or a read-only bind mount, each mounted in a private mount
//! namespace (`unshare -m`) that only the probe under test sees.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::util::{self, text};

/// A working store at `path` (the seed the broken mounts hold).
fn seed_store(home: &Path, path: &Path) {
    let out = util::probe(home)
        .store(path)
        .run(&["snapshots", "list", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(path.is_file(), "no store made at {}", path.display());
}

/// Runs `probe --store MOUNT/snapshots.db --spool SPOOL ARGS` in a private mount namespace where
/// `setup` (a shell line, `$M` the mount point, `$SEED` the seed store) has broken the store.
fn probe_with_broken_store(
    home: &Path,
    mount: &Path,
    seed: &Path,
    spool: &Path,
    setup: &str,
    args: &[&str],
) -> Output {
    let script = format!("set -e; {setup}; exec \"$0\" \"$@\"");
    let store = mount.join("snapshots.db");
    let mut full_args = vec!["--spool", spool.to_str().unwrap()];
    full_args.extend_from_slice(args);
    util::probe(home)
        .store(&store)
        .env("M", mount.to_str().unwrap())
        .env("SEED", seed.to_str().unwrap())
        .wrapped(&[
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            &script,
        ])
        .run(&full_args)
}

/// What every broken-store run shows: the report, the one line, exit 5, the spooled file;
/// then the file imports into a working store. Returns the spooled file.
#[track_caller]
fn assert_reported_not_stored_and_spooled(
    out: &Output,
    home: &Path,
    spool: &Path,
    cause: &[&str],
) -> PathBuf {
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(i32::from(probe_model::exit_codes::NOT_STORED)),
        "{stderr}"
    );
    let reports: Vec<probe_model::HostReport> =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(reports.len(), 1, "{stderr}");
    let report = &reports[0];
    assert!(!report.stored, "{stderr}");
    let id = report.snapshot_id.clone();
    assert!(!id.is_empty());
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("not stored"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let line = lines[0];
    assert!(
        line.contains(&format!("snapshot {id} not stored")),
        "{line}"
    );
    for needle in cause {
        assert!(line.contains(needle), "{needle:?} not in {line}");
    }
    let spooled = spool.join(format!("{id}.json"));
    assert!(line.contains(&spooled.display().to_string()), "{line}");
    assert!(spooled.is_file(), "{line}");
    let files: Vec<_> = std::fs::read_dir(spool).unwrap().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    // The spooled snapshot stores later, as it was collected.
    let (_dir, good) = util::store();
    let out =
        util::probe(home)
            .store(&good)
            .run(&["snapshots", "import", spooled.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = util::probe(home)
        .store(&good)
        .run(&["snapshots", "list", "--format", "json"]);
    let metas: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(metas.len(), 1, "{metas:?}");
    assert_eq!(metas[0]["id"], serde_json::json!(id));
    spooled
}

#[test]
fn a_full_file_system_under_the_store_loses_no_report() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (seed, mount, spool) = (
        work.path().join("seed.db"),
        work.path().join("full"),
        work.path().join("spool"),
    );
    seed_store(home.path(), &seed);
    std::fs::create_dir(&mount).unwrap();
    // A 2 MiB tmpfs holding the store, then filled to the last byte.
    let setup = "mount -t tmpfs -o size=2m probe-full \"$M\"; cp \"$SEED\" \"$M/snapshots.db\"; \
                 dd if=/dev/zero of=\"$M/fill\" bs=4k 2>/dev/null || true";
    let out = probe_with_broken_store(
        home.path(),
        &mount,
        &seed,
        &spool,
        setup,
        &["host", "local", "--format", "json"],
    );
    assert_reported_not_stored_and_spooled(&out, home.path(), &spool, &["full"]);
    // Outside the namespace nothing was mounted: the directory is as it was.
    assert_eq!(std::fs::read_dir(&mount).unwrap().count(), 0);
}

#[test]
fn a_read_only_store_loses_no_report() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let (seed, mount, spool) = (
        work.path().join("seed.db"),
        work.path().join("ro"),
        work.path().join("spool"),
    );
    seed_store(home.path(), &seed);
    std::fs::create_dir(&mount).unwrap();
    std::fs::copy(&seed, mount.join("snapshots.db")).unwrap();
    // The store's directory bound read-only over itself (root ignores file modes: a mount it
    // cannot ignore).
    let setup = "mount --bind \"$M\" \"$M\"; mount -o remount,bind,ro \"$M\"";
    let out = probe_with_broken_store(
        home.path(),
        &mount,
        &seed,
        &spool,
        setup,
        &["host", "local", "--format", "json"],
    );
    assert_reported_not_stored_and_spooled(&out, home.path(), &spool, &["Read-only file system"]);
    // The human report too, and without a spool directory the line says it was not kept.
    let out = util::probe(home.path())
        .store(mount.join("snapshots.db"))
        .env("M", mount.to_str().unwrap())
        .env("XDG_STATE_HOME", "relative-is-ignored")
        .env("HOME", "")
        .wrapped(&[
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            "set -e; mount --bind \"$M\" \"$M\"; mount -o remount,bind,ro \"$M\"; exec \"$0\" \"$@\"",
        ])
        .run(&["host", "local"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        text(&out.stdout).starts_with("probe report: local"),
        "{stderr}"
    );
    assert!(stderr.contains("not kept: no spool directory"), "{stderr}");
}

/// A shared PostgreSQL store behind a path that stops answering: at once (the store never
/// opens), and on the first write of a session that opened and read (`probe audit`). Each run
/// ends within its bounds, reports, exits 5 and spools; the test's own guard is the e2e
/// `timeout` wrapper, so a hang fails instead of hanging CI.
#[test]
fn a_postgres_store_that_stalls_loses_no_report() {
    use probe_testkit::postgres::{Postgres, SUPERUSER, require_postgres};
    use probe_testkit::stall::{Stall, StallingProxy};
    require_postgres().unwrap_or_else(|e| panic!("{e}"));
    let pg = Postgres::start();
    let name = "unstored";
    let direct = pg.create_database(name);
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    // The schema, made through the direct path, so that the runs below only read and write.
    let out = pg
        .client_env()
        .into_iter()
        .fold(util::probe(home.path()), |p, (k, v)| p.env(&k, v))
        .store(&direct)
        .run(&["snapshots", "list", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let through = |proxy: &StallingProxy| {
        format!(
            "postgres://{SUPERUSER}@127.0.0.1:{}/{name}?sslmode=disable&connect_timeout=2",
            proxy.port
        )
    };
    let prober = |store: &str, spool: &Path| {
        util::probe(home.path())
            .store(store)
            .env("PGPASSWORD", pg.password.clone())
            .env("PROBE_SPOOL", spool.to_str().unwrap())
            .wrapped(&["timeout", "300"])
    };

    // Accepted, then silence from the start.
    let proxy = StallingProxy::start((pg.addr, pg.port).into(), Stall::AtOnce);
    let spool = work.path().join("spool-at-once");
    let out = prober(&through(&proxy), &spool).run(&[
        "host",
        "local",
        "--format",
        "json",
        "--deadline",
        "10",
    ]);
    assert_reported_not_stored_and_spooled(&out, home.path(), &spool, &["no answer within"]);

    // Opens, reads the previous snapshot, then the first INSERT is never answered: the audit
    // records the host as collected, not stored, and finishes.
    let proxy = StallingProxy::start(
        (pg.addr, pg.port).into(),
        Stall::OnClientBytes(b"INSERT".to_vec()),
    );
    let spool = work.path().join("spool-on-write");
    let inventory = work.path().join("inventory.ini");
    std::fs::write(&inventory, "[here]\nlocal\n").unwrap();
    let out = prober(&through(&proxy), &spool).run(&[
        "audit",
        "--inventory",
        inventory.to_str().unwrap(),
        "--jsonl",
        "--deadline",
        "10",
    ]);
    let stderr = text(&out.stderr);
    assert!(
        proxy.is_stalled(),
        "the write never reached the proxy: {stderr}"
    );
    assert_eq!(
        out.status.code(),
        Some(i32::from(probe_model::exit_codes::NOT_STORED)),
        "{stderr}"
    );
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let host = lines
        .iter()
        .find(|line| line["type"] == "host")
        .unwrap_or_else(|| panic!("no host record: {lines:?}"));
    assert!(
        matches!(host["status"].as_str(), Some("ok" | "changed")),
        "{host}"
    );
    let error = host["error"].as_str().unwrap_or_default();
    assert!(error.contains("not stored"), "{host}");
    assert!(error.contains("no answer within"), "{host}");
    let summary = lines.last().unwrap();
    assert_eq!(summary["type"], "summary", "{summary}");
    assert_eq!(summary["exit_code"], 5, "{summary}");
    let spooled: Vec<_> = std::fs::read_dir(&spool).unwrap().collect();
    assert_eq!(spooled.len(), 1, "{spooled:?}");
}

/// An audit of a dozen hosts whose shared store stalls on its first write: every wait for the
/// store is bounded by what is left of the audit's deadline ((⌈hosts ÷ jobs⌉ + 1) × `--deadline`,
/// here 4 × 6 s), not only by the per-operation bound, so the audit ends near its deadline
/// instead of one bound per host for the snapshot and another for its record (about 12 × 2 × 6
/// s). One line says the deadline passed; every host is reported, and every snapshot the store
/// did not take is in the spool. The hosts are simulated (`probe_testkit::sim`) so that the
/// collections are fast and the store's waits are what the run is made of.
#[test]
fn an_audit_stops_waiting_for_a_stalled_store_at_its_deadline() {
    use probe_testkit::postgres::{Postgres, SUPERUSER, require_postgres};
    use probe_testkit::sim::{Recording, SimFleet, SimOptions, default_recording_path};
    use probe_testkit::stall::{Stall, StallingProxy};
    require_postgres().unwrap_or_else(|e| panic!("{e}"));
    probe_testkit::require_openssh().unwrap_or_else(|e| panic!("{e}"));
    const HOSTS: usize = 12;
    const JOBS: usize = 4;
    const DEADLINE_S: u64 = 6;
    let pg = Postgres::start();
    let name = "audit_deadline";
    let direct = pg.create_database(name);
    let recording = Recording::load(&default_recording_path()).unwrap_or_else(|e| panic!("{e}"));
    let sim = SimFleet::start(
        recording,
        &SimOptions {
            hosts: HOSTS,
            latency: std::time::Duration::from_millis(5),
            jitter: std::time::Duration::ZERO,
            seed: 3,
            subnet: 81,
            ..SimOptions::default()
        },
    );
    let inventory = sim.dir().join("fleet.toml");
    std::fs::write(&inventory, sim.inventory_toml(HOSTS)).unwrap();
    let spool = sim.dir().join("spool");
    let prober = |store: &str| {
        util::probe_on(sim.dir(), &sim.ssh_config(), store)
            .env("PGPASSWORD", pg.password.clone())
            .env("PROBE_SPOOL", spool.to_str().unwrap())
            .wrapped(&["timeout", "300"])
    };
    // The schema, made through the direct path.
    let out = pg
        .client_env()
        .into_iter()
        .fold(util::probe(sim.dir()), |p, (k, v)| p.env(&k, v))
        .store(&direct)
        .run(&["snapshots", "list", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let proxy = StallingProxy::start(
        (pg.addr, pg.port).into(),
        Stall::OnClientBytes(b"INSERT".to_vec()),
    );
    let store = format!(
        "postgres://{SUPERUSER}@127.0.0.1:{}/{name}?sslmode=disable",
        proxy.port
    );
    let started = std::time::Instant::now();
    let out = prober(&store).run(&[
        "--deadline",
        &DEADLINE_S.to_string(),
        "audit",
        "--inventory",
        inventory.to_str().unwrap(),
        "-j",
        &JOBS.to_string(),
        "--jsonl",
    ]);
    let took = started.elapsed();
    let stderr = text(&out.stderr);
    assert!(proxy.is_stalled(), "no write reached the proxy: {stderr}");
    let audit_deadline = DEADLINE_S * (HOSTS.div_ceil(JOBS) as u64 + 1);
    eprintln!("audit with a stalled store: {took:?} (its deadline {audit_deadline}s)");
    // Its deadline, the one wait in flight when it passed (its own bound at most), and the
    // start and the end of the process.
    assert!(
        took.as_secs() < audit_deadline + DEADLINE_S + 10,
        "took {took:?}, deadline {audit_deadline}s: {stderr}"
    );
    assert_eq!(
        out.status.code(),
        Some(i32::from(probe_model::exit_codes::NOT_STORED)),
        "{stderr}"
    );
    let passed: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("the audit's deadline passed"))
        .collect();
    assert_eq!(passed.len(), 1, "{stderr}");
    assert!(
        passed[0].contains(&format!("({audit_deadline}s: --deadline {DEADLINE_S}s")),
        "{}",
        passed[0]
    );
    assert!(passed[0].contains("no longer waited for"), "{}", passed[0]);
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let hosts: Vec<&serde_json::Value> = lines.iter().filter(|l| l["type"] == "host").collect();
    assert_eq!(hosts.len(), HOSTS, "{stderr}");
    for host in &hosts {
        assert!(
            matches!(host["status"].as_str(), Some("ok" | "changed")),
            "{host}"
        );
        let error = host["error"].as_str().unwrap_or_default();
        assert!(error.contains("not stored"), "{host}");
    }
    // Some snapshots waited out their own bound, the later ones the audit's deadline.
    assert!(
        hosts.iter().any(|h| h["error"]
            .as_str()
            .is_some_and(|e| e.contains("the run's overall deadline passed"))),
        "{stderr}"
    );
    let spooled = std::fs::read_dir(&spool).unwrap().count();
    assert_eq!(spooled, HOSTS, "{stderr}");
}
