//! `probe diff` compares the runs too: two snapshots (of one host over time, or of two hosts)
//! whose servers match have their latest runs compared on what was in effect, so an engine
//! upgrade under an unchanged unit and a KV capacity that fell to a third show up as changes,
//! and nothing the snapshot-level comparison already says is said twice.

use std::collections::BTreeMap;

use probe_diff::{CompareOptions, compare_snapshots};
use probe_model::{
    HostFacts, LogOrigin, LogSource, ProcessInfo, ProcessRole, Snapshot, StartupLimits,
    SystemdUnit, UnitState, VersionLine,
};

const START: i64 = 1_796_033_530;
const EXEC: &str = "/opt/v/bin/vllm serve /mnt/models/Q --tensor-parallel-size 2 --port 8000";

fn host(start: i64, version: &str, kv_tokens: f64, concurrency: f64) -> Snapshot {
    Snapshot {
        host: HostFacts {
            hostname: Some("gpu01".into()),
            machine_id: Some("0123456789abcdef".into()),
            ..HostFacts::default()
        },
        processes: vec![ProcessInfo {
            pid: 63,
            ppid: Some(1),
            argv: format!("/opt/v/bin/python3 {EXEC}")
                .split_whitespace()
                .map(String::from)
                .collect(),
            start_time: Some(start),
            role: ProcessRole::Launcher,
            engine: Some(probe_model::Engine::Vllm),
            env: BTreeMap::new(),
            ..ProcessInfo::default()
        }],
        units: vec![SystemdUnit {
            name: "vllm.service".into(),
            exec_start: vec![EXEC.into()],
            state: Some(UnitState {
                active_state: Some("active".into()),
                main_pid: Some(63),
                exec_main_start: Some(start),
                ..UnitState::default()
            }),
            ..SystemdUnit::default()
        }],
        logs: vec![LogSource {
            origin: LogOrigin::Journal,
            location: "vllm.service".into(),
            versions: vec![VersionLine {
                time: Some(start + 2),
                engine: probe_model::Engine::Vllm,
                version: version.into(),
            }],
            limits: vec![StartupLimits {
                time: Some(start + 40),
                engine: probe_model::Engine::Vllm,
                values: BTreeMap::from([
                    ("kv_cache_tokens".into(), kv_tokens),
                    ("max_concurrency".into(), concurrency),
                ]),
            }],
            ..LogSource::default()
        }],
        ..Snapshot::default()
    }
}

#[test]
fn the_latest_runs_of_matched_servers_are_compared() {
    let before = host(START, "0.10.1", 300_000.0, 73.2);
    let after = host(START + 7 * 86_400, "0.11.0", 100_000.0, 24.4);
    let diff = compare_snapshots(&before, &after, &CompareOptions::default());
    let keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
    for key in ["limit:kv_cache_tokens", "limit:max_concurrency"] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    let kv = diff
        .changes
        .iter()
        .find(|c| c.key == "limit:kv_cache_tokens");
    assert_eq!(
        kv.and_then(|c| c.before.clone()),
        Some(serde_json::json!(300_000))
    );
    assert_eq!(
        kv.and_then(|c| c.after.clone()),
        Some(serde_json::json!(100_000))
    );
    // The engine upgrade is one change, not one from the launch and one from the run.
    let versions = keys
        .iter()
        .filter(|k| k.ends_with("engine_version"))
        .count();
    assert_eq!(versions, 1, "{keys:?}");
    // No flag change is invented: the unit and the process are the same.
    assert!(
        !keys
            .iter()
            .any(|k| k.starts_with("option:") || k.contains("tensor")),
        "{keys:?}"
    );
}

#[test]
fn identical_runs_add_nothing() {
    let before = host(START, "0.10.1", 300_000.0, 73.2);
    let after = host(START, "0.10.1", 300_000.0, 73.2);
    let diff = compare_snapshots(&before, &after, &CompareOptions::default());
    let limits: Vec<&str> = diff
        .changes
        .iter()
        .map(|c| c.key.as_str())
        .filter(|k| k.contains("limit:") || k.contains("engine_version"))
        .collect();
    assert!(limits.is_empty(), "{limits:?}");
}
