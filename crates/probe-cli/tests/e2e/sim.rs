//! End-to-end: the built `probe audit` against 500 simulated hosts (`probe_testkit::sim`: real
//! SSH from russh's server side on 127.78.x.y, replaying the recorded collection of the
//! `sglang-story` fixture host), audited twice into one SQLite store. Every host must end with
//! the status its behaviour calls for, every outcome must be in the store, and the second run
//! must cost the store no more than the content-addressed bound per collected host.
//!
//! Bounded in time: 20 ms per channel, a 15 s deadline (the stalled hosts take it) and an 8 s
//! connect timeout (the silent hosts take it; shorter ones fail healthy hosts whose handshake
//! waits for a CPU on a loaded 2-core runner with the unoptimised test build). The other tests of
//! the binary pause their probe runs while it holds `util::alone`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use probe_model::{AuditRecord, AuditStatus, FleetView};
use probe_store::SnapshotStore;
use probe_testkit::sim::{
    Behaviour, DROPPED_SECTION, Recording, Shares, SimFleet, SimOptions, default_recording_path,
    fingerprint,
};

use crate::util::{self, text};

const HOSTS: usize = 500;
/// What one more snapshot of an unchanged host may cost the store (docs/STORE.md, "Sizes").
const UNCHANGED_SNAPSHOT_BOUND: u64 = 4096;

/// The committed recording, refused when the collection script changed since it was made.
fn recording() -> Recording {
    let rec = Recording::load(&default_recording_path()).unwrap_or_else(|e| panic!("{e}"));
    rec.check_fresh(&fingerprint(&probe_collect::script::commands()))
        .unwrap_or_else(|e| panic!("{e}"));
    rec
}

/// The status each behaviour ends with, on the first run and on the second.
fn expected(b: Behaviour, second: bool) -> AuditStatus {
    match b {
        Behaviour::Normal => AuditStatus::Ok,
        Behaviour::Drift if second => AuditStatus::Changed,
        Behaviour::Drift => AuditStatus::Ok,
        Behaviour::Refuse => AuditStatus::Unreachable,
        Behaviour::Timeout | Behaviour::Stall => AuditStatus::TimedOut,
        Behaviour::ChangedKey => AuditStatus::HostKeyRefused,
        Behaviour::DropChannel => AuditStatus::Partial,
    }
}

fn store_bytes(db: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", db.display())).ok())
        .map(|m| m.len())
        .sum()
}

/// One `probe audit` run: its host records by inventory name.
fn audit(sim: &SimFleet, inventory: &Path, db: &Path) -> BTreeMap<String, AuditRecord> {
    let started = Instant::now();
    let out = util::probe_on(sim.dir(), &sim.ssh_config(), db).run(&[
        "--deadline",
        "15",
        "--connect-timeout",
        "8",
        "audit",
        "--inventory",
        inventory.to_str().unwrap(),
        "-j",
        "64",
        "--jsonl",
        "--fail-on",
        "never",
    ]);
    eprintln!("audit of {HOSTS} simulated hosts: {:?}", started.elapsed());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut records = BTreeMap::new();
    for line in stdout.lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        if value["type"] == "host" {
            let record: AuditRecord = serde_json::from_value(value).unwrap();
            assert!(
                records.insert(record.host.clone(), record).is_none(),
                "a host reported twice"
            );
        }
    }
    records
}

fn check_statuses(sim: &SimFleet, records: &BTreeMap<String, AuditRecord>, second: bool) {
    assert_eq!(records.len(), HOSTS, "one record per host");
    let mut wrong = Vec::new();
    for host in &sim.hosts {
        let record = &records[&host.name];
        if record.status != expected(host.behaviour, second) {
            wrong.push(format!(
                "{} ({:?}): {:?} {:?}",
                host.name, host.behaviour, record.status, record.error
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn five_hundred_simulated_hosts_audited_twice() {
    probe_testkit::require_openssh().unwrap_or_else(|e| panic!("{e}"));
    // Its timeouts are sized for a machine doing nothing else (see the module's comment).
    let _alone = util::alone();
    let options = SimOptions {
        hosts: HOSTS,
        latency: Duration::from_millis(20),
        jitter: Duration::from_millis(10),
        shares: Shares {
            refuse: 0.02,
            timeout: 0.02,
            stall: 0.02,
            changed_key: 0.02,
            drift: 0.04,
            drop_channel: 0.02,
        },
        seed: 22,
        subnet: 78,
    };
    let sim = SimFleet::start(recording(), &options);
    let inventory = sim.dir().join("fleet.toml");
    std::fs::write(&inventory, sim.inventory_toml(HOSTS)).unwrap();
    let db = sim.dir().join("snapshots.db");

    let first = audit(&sim, &inventory, &db);
    check_statuses(&sim, &first, false);
    let after_first = store_bytes(&db);

    sim.next_run();
    let second = audit(&sim, &inventory, &db);
    check_statuses(&sim, &second, true);
    let after_second = store_bytes(&db);

    // The drifted hosts name their change: the driver the recording's drift rewrote.
    let (from, to) = &sim.recording().drift;
    for host in sim.hosts.iter().filter(|h| h.behaviour == Behaviour::Drift) {
        let changes = second[&host.name].top_changes.join("\n");
        assert!(
            changes.contains(from.as_str()) && changes.contains(to.as_str()),
            "{}: {changes}",
            host.name
        );
    }

    // Every outcome is in the store, with the second run's status.
    let store = probe_store::open(db.to_str().unwrap()).unwrap();
    let stored: BTreeMap<String, AuditStatus> = store
        .last_audits()
        .unwrap()
        .into_iter()
        .map(|a| (a.record.host.clone(), a.record.status))
        .collect();
    for host in &sim.hosts {
        assert_eq!(
            stored.get(&host.name),
            Some(&expected(host.behaviour, true)),
            "{} in the store",
            host.name
        );
    }
    let collected = second.values().filter(|r| r.status.collected()).count() as u64;
    let snapshots = store.list(None).unwrap().len() as u64;
    assert_eq!(
        snapshots,
        2 * collected,
        "one snapshot per collected host and run"
    );

    // Content-addressed: the second snapshot of a host costs a reference to what did not change.
    let growth = after_second.saturating_sub(after_first);
    eprintln!(
        "store: {after_first} bytes after the first run, {after_second} after the second \
         ({} bytes per collected host)",
        growth / collected.max(1)
    );
    assert!(
        growth <= collected * UNCHANGED_SNAPSHOT_BOUND,
        "the second run grew the store by {growth} bytes for {collected} hosts"
    );

    let stats = sim.stats();
    assert_eq!(stats.stale, 0, "stale sections: {:?}", stats.stale_names);
    assert!(stats.authenticated >= 2 * collected, "{stats:?}");

    views_have_the_outliers_of_whole_snapshots(&sim, &second, &*store);
}

/// The fleet comparison reads views (`get_many_views`: no section reports, no environments of
/// processes that are not launchers); on these recorded snapshots, a group's outliers from the
/// views are those from the whole snapshots (`get_many`), and the drifted hosts are found.
fn views_have_the_outliers_of_whole_snapshots(
    sim: &SimFleet,
    records: &BTreeMap<String, AuditRecord>,
    store: &dyn SnapshotStore,
) {
    let drifted = sim.hosts.iter().filter(|h| h.behaviour == Behaviour::Drift);
    let normal = sim
        .hosts
        .iter()
        .filter(|h| h.behaviour == Behaviour::Normal);
    let group: Vec<&str> = (drifted.take(3).chain(normal.take(9)))
        .map(|h| h.name.as_str())
        .collect();
    let ids: Vec<String> = group
        .iter()
        .map(|name| records[*name].snapshot_id.clone().unwrap())
        .collect();
    let whole: Vec<FleetView> = (store.get_many(&ids).unwrap().into_iter())
        .map(|snapshot| FleetView::unprojected(snapshot.unwrap()))
        .collect();
    let views: Vec<FleetView> = (store.get_many_views(&ids).unwrap().into_iter())
        .map(Option::unwrap)
        .collect();
    let env_count = |views: &[FleetView]| -> usize {
        (views.iter().flat_map(|v| &v.snapshot().processes))
            .map(|p| p.env.len())
            .sum()
    };
    // The views left out what they leave out.
    assert!(whole.iter().all(|v| !v.snapshot().sections.is_empty()));
    assert!(views.iter().all(|v| v.snapshot().sections.is_empty()));
    let (kept, all) = (env_count(&views), env_count(&whole));
    eprintln!("fleet views: {kept} environment variables of {all} kept");
    assert!(
        kept < all,
        "the workers' environments are left out: {kept} of {all}"
    );
    let outliers = |views: &[FleetView]| {
        let members: Vec<probe_diff::Member<'_>> = (group.iter().zip(views))
            .map(|(host, view)| probe_diff::Member { host, view })
            .collect();
        probe_diff::outliers("sim", &members)
    };
    let (from_views, from_whole) = (outliers(&views), outliers(&whole));
    assert_eq!(from_views, from_whole);
    let odd: Vec<&str> = (from_views.outliers.iter())
        .map(|o| o.host.as_str())
        .collect();
    let mut expected = group[..3].to_vec();
    expected.sort_unstable();
    let mut found = odd.clone();
    found.sort_unstable();
    assert_eq!(found, expected, "{:#?}", from_views.outliers);
}

/// The sections of the round-1 group that runs `section`.
fn group_of(section: &str) -> Vec<String> {
    probe_collect::script::groups(1)
        .into_iter()
        .find(|g| g.probes.iter().any(|p| p.name == section))
        .map(|g| g.probes.iter().map(|p| p.name.clone()).collect())
        .unwrap_or_default()
}

/// A host whose server closes one group's channel without an exit status (a session's sshd
/// killed mid-command) loses that group's sections and nothing else: the audit gives it the
/// status `partial` with the sections named, stores its snapshot, and exits 6 (`INCOMPLETE`)
/// under `--fail-on drift` and `error` (0 under `never`); the table says so, and `audit report`
/// reads the status back from the store.
#[test]
fn a_host_that_loses_sections_is_partial() {
    probe_testkit::require_openssh().unwrap_or_else(|e| panic!("{e}"));
    let options = SimOptions {
        hosts: 4,
        latency: Duration::from_millis(5),
        jitter: Duration::ZERO,
        shares: Shares {
            drop_channel: 0.25,
            ..Shares::default()
        },
        seed: 5,
        subnet: 80,
    };
    let sim = SimFleet::start(recording(), &options);
    let inventory = sim.dir().join("fleet.toml");
    std::fs::write(&inventory, sim.inventory_toml(4)).unwrap();
    let db = sim.dir().join("snapshots.db");
    let dropped = sim
        .hosts
        .iter()
        .find(|h| h.behaviour == Behaviour::DropChannel)
        .unwrap();
    let probe = || util::probe_on(sim.dir(), &sim.ssh_config(), &db);
    let inventory = inventory.to_str().unwrap();

    let out = probe().run(&[
        "--deadline",
        "30",
        "audit",
        "--inventory",
        inventory,
        "--jsonl",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(i32::from(probe_model::exit_codes::INCOMPLETE)),
        "{stderr}"
    );
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let records: BTreeMap<String, AuditRecord> = lines
        .iter()
        .filter(|line| line["type"] == "host")
        .map(|line| {
            let record: AuditRecord = serde_json::from_value(line.clone()).unwrap();
            (record.host.clone(), record)
        })
        .collect();
    assert_eq!(records.len(), 4, "{stderr}");
    for (name, record) in &records {
        if *name == dropped.name {
            assert_eq!(record.status, AuditStatus::Partial, "{record:?}");
            assert!(record.snapshot_id.is_some(), "stored: {record:?}");
            assert_eq!(record.error, None, "{record:?}");
            let group = group_of(DROPPED_SECTION);
            assert!(group.len() >= 2, "{group:?}");
            for section in &group {
                assert!(
                    record.lost_sections.contains(section),
                    "{section} not lost: {record:?}"
                );
            }
            assert!(
                !record.lost_sections.iter().any(|s| s == "host"),
                "{record:?}"
            );
        } else {
            assert_eq!(record.status, AuditStatus::Ok, "{record:?}");
            assert!(record.lost_sections.is_empty(), "{record:?}");
        }
    }
    let summary = lines.last().unwrap();
    assert_eq!(summary["type"], "summary", "{summary}");
    assert_eq!(summary["partial"], 1, "{summary}");
    assert_eq!(summary["ok"], 3, "{summary}");
    assert_eq!(summary["exit_code"], 6, "{summary}");

    // The table, under --fail-on error: the partial host and what it lost; never: exit 0.
    let out = probe().run(&["audit", "--inventory", inventory, "--fail-on", "error"]);
    let table = text(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    let row = table
        .lines()
        .find(|line| line.contains(&dropped.name))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("partial"), "{row}");
    assert!(row.contains("lost to the connection"), "{row}");
    assert!(row.contains(DROPPED_SECTION), "{row}");
    assert!(table.contains("1 partial"), "{table}");
    let out = probe().run(&["audit", "--inventory", inventory, "--fail-on", "never"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    // The store kept the status: the fleet report reads it back.
    let out = probe().run(&["audit", "report", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let host = report["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["host"] == dropped.name.as_str())
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(host["status"], "partial", "{host}");
    assert!(
        host["lost_sections"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s == DROPPED_SECTION)),
        "{host}"
    );
}
