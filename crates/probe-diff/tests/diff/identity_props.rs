//! Property (issue 33): identity (host names, machine ids, boot times, GPU UUIDs and serials,
//! PIDs, seeds) never appears among the causes, the verdict or the fleet outliers, whatever
//! else differs, with or without the volatile differences included.

use probe_diff::{CompareOptions, Member, compare_snapshots_with, outliers};
use probe_model::identity::is_identity;
use probe_model::{
    FleetView, Gpu, GpuState, GpuStatus, HostFacts, PythonEnv, PythonPackage, Snapshot,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Identity {
    hostname: String,
    machine_id: String,
    boot_time: i64,
    uptime_s: u64,
    uuids: Vec<String>,
}

fn identity() -> impl Strategy<Value = Identity> {
    (
        "[a-z][a-z0-9-]{0,12}",
        "[0-9a-f]{32}",
        1_700_000_000i64..1_800_000_000,
        0u64..10_000_000,
        prop::collection::vec("GPU-[0-9a-f]{8}", 1..4),
    )
        .prop_map(
            |(hostname, machine_id, boot_time, uptime_s, uuids)| Identity {
                hostname,
                machine_id,
                boot_time,
                uptime_s,
                uuids,
            },
        )
}

/// A snapshot of `identity` with `power` limits on its GPUs and `torch` at `version`.
fn snapshot(id: &Identity, power: f64, version: &str) -> Snapshot {
    Snapshot {
        host: HostFacts {
            hostname: Some(id.hostname.clone()),
            machine_id: Some(id.machine_id.clone()),
            boot_time: Some(id.boot_time),
            uptime_s: Some(id.uptime_s),
            ..HostFacts::default()
        },
        gpu: GpuState {
            status: GpuStatus::Present,
            gpus: id
                .uuids
                .iter()
                .enumerate()
                .map(|(i, uuid)| Gpu {
                    index: Some(i as u32),
                    uuid: Some(uuid.clone()),
                    power_limit_w: Some(power),
                    ..Gpu::default()
                })
                .collect(),
            ..GpuState::default()
        },
        python_envs: vec![PythonEnv {
            interpreter: String::from("/opt/venvs/vllm/bin/python3"),
            packages: vec![PythonPackage {
                name: String::from("torch"),
                version: version.to_string(),
                ..PythonPackage::default()
            }],
            ..PythonEnv::default()
        }],
        ..Snapshot::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn identity_never_a_cause_an_outlier_or_the_verdict(
        a in identity(),
        b in identity(),
        powers in (100.0f64..800.0, 100.0f64..800.0),
        versions in ("2\\.[0-9]\\.[0-9]", "2\\.[0-9]\\.[0-9]"),
        include_volatile in any::<bool>(),
    ) {
        let before = snapshot(&a, powers.0, &versions.0);
        let after = snapshot(&b, powers.1, &versions.1);
        let options = CompareOptions { include_volatile, ..CompareOptions::default() };
        let diff = compare_snapshots_with(&before, &[], &after, &[], &options);
        for change in &diff.changes {
            prop_assert!(!is_identity(&change.key), "a cause: {}", change.key);
            for cause in &change.consequence_of {
                prop_assert!(!is_identity(cause), "a consequence's cause: {cause}");
            }
        }
        if let Some(verdict) = &diff.verdict {
            prop_assert!(verdict.cause.as_deref().is_none_or(|k| !is_identity(k)));
            for text in [&verdict.headline, &verdict.ruled_out] {
                prop_assert!(!text.contains("host."), "{text}");
                for value in [&a.hostname, &b.hostname, &a.machine_id, &b.machine_id] {
                    prop_assert!(value.len() < 3 || !text.contains(value.as_str()), "{value} in {text}");
                }
            }
        }
        let views = [FleetView::from(before), FleetView::from(after)];
        let members = [
            Member { host: "a", view: &views[0] },
            Member { host: "b", view: &views[1] },
        ];
        let group = outliers("g", &members);
        for host in &group.outliers {
            for change in &host.changes {
                prop_assert!(!is_identity(&change.key), "an outlier: {}", change.key);
            }
        }
    }
}
