//! End-to-end: a sharded audit of the fixture hosts (real sshd in namespaces) by three `probe`
//! runners into one real PostgreSQL store, the fleet report read back from it, and the history
//! moved between PostgreSQL and SQLite with `snapshots import/export`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use probe_model::AuditRecord;
use probe_testkit::fixture::SharedFleet;
use probe_testkit::postgres::Postgres;

use crate::util::{self, text};

/// The fixture hosts that collect in well under a second.
const FAST: &[&str] = &["sglang-hybrid", "vllm-systemd", "docker-vllm", "bare"];
const SHARDS: u32 = 3;

/// probe with the fleet's config, the PostgreSQL client environment and the store `store`.
fn prober(fleet: &SharedFleet, pg: &Postgres, home: &Path, store: &str) -> util::Probe {
    pg.client_env().into_iter().fold(
        util::probe_on(home, &fleet.ssh_config(), store),
        |probe, (key, value)| probe.env(&key, value),
    )
}

fn probe(fleet: &SharedFleet, pg: &Postgres, home: &Path, store: &str, args: &[&str]) -> Output {
    prober(fleet, pg, home, store).run(args)
}

#[test]
fn sharded_audit_into_one_postgres_store_and_the_fleet_report() {
    probe_testkit::postgres::require_postgres().unwrap_or_else(|e| panic!("{e}"));
    let pg = Postgres::start();
    let url = pg.create_database("fleet");
    let fleet = util::fleet(FAST);
    let home = tempfile::tempdir().unwrap();
    // Two inventory names per fixture host (8 hosts), so every shard has work.
    let mut inventory = String::from("[groups.prod]\nhosts = [");
    let names: Vec<String> = fleet
        .hosts
        .iter()
        .flat_map(|host| [format!("{}-a", host.name), format!("{}-b", host.name)])
        .collect();
    inventory.push_str(
        &names
            .iter()
            .map(|name| format!("\"{name}\""))
            .collect::<Vec<_>>()
            .join(", "),
    );
    inventory.push_str("]\n\n");
    for host in &fleet.hosts {
        for suffix in ["a", "b"] {
            inventory.push_str(&format!(
                "[hosts.{}-{suffix}]\naddress = \"{}\"\n\n",
                host.name, host.alias
            ));
        }
    }
    let inventory_path = home.path().join("fleet.toml");
    std::fs::write(&inventory_path, inventory).unwrap();
    let inventory_arg = inventory_path.to_str().unwrap();

    // Three runners at once, one shard each, one store.
    let mut runners = Vec::new();
    let busy = util::busy();
    for index in 0..SHARDS {
        let prometheus = home.path().join(format!("probe-{index}.prom"));
        let shard = format!("{index}/{SHARDS}");
        let prometheus_arg = prometheus.to_str().unwrap().to_string();
        let args = [
            "audit",
            "--inventory",
            inventory_arg,
            "--jsonl",
            "--shard",
            &shard,
            "--prometheus",
            &prometheus_arg,
            "--fail-on",
            "error",
        ]
        .map(String::from);
        let child =
            prober(&fleet, &pg, home.path(), &url).spawn(&args.each_ref().map(|a| a.as_str()));
        runners.push((index, prometheus, args, child));
    }
    let mut audited: Vec<String> = Vec::new();
    let mut all_records: Vec<AuditRecord> = Vec::new();
    for (index, prometheus, args, child) in runners {
        let out = child.wait_with_output().unwrap();
        util::assert_output_schema(&args.each_ref().map(|a| a.as_str()), &out);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "shard {index}: {stdout}{}",
            text(&out.stderr)
        );
        let lines: Vec<&str> = stdout.lines().collect();
        let records: Vec<AuditRecord> = lines[..lines.len() - 1]
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        for record in &records {
            // Two names of one machine share its history, so a twin may find the other's
            // snapshot as its previous one; minutes apart nothing drifted, whatever the servers'
            // lifetime averages did meanwhile.
            assert_eq!(record.status, probe_model::AuditStatus::Ok, "{record:?}");
            audited.push(record.host.clone());
        }
        all_records.extend(records.iter().cloned());
        let metrics = std::fs::read_to_string(&prometheus).unwrap();
        assert!(
            metrics.contains(&format!("shard=\"{index}/{SHARDS}\"")),
            "{metrics}"
        );
        for record in &records {
            assert!(metrics.contains(&format!("probe_host_up{{host=\"{}\"}} 1", record.host)));
        }
    }
    drop(busy);
    // What that design implies: a previous snapshot, where one was found, is the twin's.
    for record in &all_records {
        let Some(previous) = &record.previous_snapshot_id else {
            continue;
        };
        let twin = match record.host.strip_suffix("-a") {
            Some(base) => format!("{base}-b"),
            None => format!("{}-a", record.host.trim_end_matches("-b")),
        };
        let twin_snapshot = all_records
            .iter()
            .find(|r| r.host == twin)
            .and_then(|r| r.snapshot_id.as_ref());
        assert_eq!(Some(previous), twin_snapshot, "{record:?}");
    }
    // Every host audited by exactly one shard.
    let mut sorted = audited.clone();
    sorted.sort();
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(sorted, expected);

    // The fleet report lists every host once, with the shard that audited it.
    let out = probe(
        &fleet,
        &pg,
        home.path(),
        &url,
        &["audit", "report", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hosts = report["hosts"].as_array().unwrap();
    let listed: Vec<&str> = hosts.iter().map(|h| h["host"].as_str().unwrap()).collect();
    let unique: BTreeSet<&str> = listed.iter().copied().collect();
    assert_eq!(listed.len(), names.len(), "{listed:?}");
    assert_eq!(unique.len(), names.len(), "{listed:?}");
    for host in hosts {
        assert_eq!(host["status"], "ok", "{host}");
        assert!(host["snapshot_age_s"].as_i64().unwrap() < 600, "{host}");
        assert!(host["shard"].as_str().unwrap().ends_with("/3"), "{host}");
    }
    assert_eq!(report["shards"].as_array().unwrap().len(), SHARDS as usize);
    // The prod group: 8 hosts, the outliers named by probe-diff.
    let prod = report["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "prod")
        .expect("prod group in outliers");
    assert_eq!(prod["hosts"], 8);
    assert!(!prod["outliers"].as_array().unwrap().is_empty(), "{prod}");

    // With the inventory, a host no shard audited shows as never audited.
    let mut with_new = std::fs::read_to_string(&inventory_path).unwrap();
    with_new.push_str("[hosts.newcomer]\naddress = \"fx-bare\"\n");
    std::fs::write(&inventory_path, with_new).unwrap();
    let out = probe(
        &fleet,
        &pg,
        home.path(),
        &url,
        &["audit", "report", "--inventory", inventory_arg],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("newcomer") && stdout.contains("never audited"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Hosts that differ from their group"),
        "{stdout}"
    );

    // PostgreSQL -> SQLite -> a fresh PostgreSQL database: the same snapshots.
    let sqlite = home.path().join("copy.db");
    let sqlite_arg = sqlite.to_str().unwrap();
    let out = probe(
        &fleet,
        &pg,
        home.path(),
        &url,
        &["snapshots", "export", "--to-store", sqlite_arg],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("copied 8 of 8"),
        "{}",
        text(&out.stderr)
    );
    let second = pg.create_database("fleet2");
    let out = probe(
        &fleet,
        &pg,
        home.path(),
        &second,
        &["snapshots", "import", "--from-store", sqlite_arg],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ids = |store: &str| {
        let out = probe(
            &fleet,
            &pg,
            home.path(),
            store,
            &["snapshots", "list", "--format", "json"],
        );
        let metas: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        metas
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(ids(&url).len(), 8);
    assert_eq!(ids(&url), ids(sqlite_arg));
    assert_eq!(ids(&url), ids(&second));

    // A wrong password: one line, no password printed.
    let wrong = url.replacen("probe@", "probe:hunter2@", 1);
    let out = probe(&fleet, &pg, home.path(), &wrong, &["snapshots", "list"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(stderr.contains("probe:***@"), "{stderr}");
}
