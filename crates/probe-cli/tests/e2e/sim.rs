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
    Behaviour, Recording, Shares, SimFleet, SimOptions, default_recording_path, fingerprint,
};

use crate::util;

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
