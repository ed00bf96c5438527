use super::comparisons::{MEDOID_CANDIDATES, Side, configuration_changes};
use super::configurations::configuration_bytes;
use super::modes::*;
use super::report::*;
use super::*;
use probe_model::{
    Gpu, GpuState, GpuStatus, GroupOutliers, ModalValue, ProcessInfo, PythonEnv, PythonPackage,
    Snapshot,
};
use serde_json::Value;

use crate::analysis::Analysis;
use probe_model::{FleetView, HostIds};

use super::views::Source;

/// A vLLM host, as a fleet comparison reads it.
fn host(name: &str, driver: &str, extra_flag: Option<&str>, torch: &str) -> FleetView {
    FleetView::of(whole_host(name, driver, extra_flag, torch))
}

/// A vLLM host: the server process, its venv's packages, two GPUs.
fn whole_host(name: &str, driver: &str, extra_flag: Option<&str>, torch: &str) -> Snapshot {
    let mut cmdline = vec![
        "/opt/venvs/vllm/bin/python3".to_string(),
        "-m".into(),
        "vllm.entrypoints.openai.api_server".into(),
        "--model".into(),
        "/mnt/models/GLM-4.5-Air-FP8".into(),
        "--tensor-parallel-size".into(),
        "2".into(),
        "--max-model-len".into(),
        "32768".into(),
    ];
    if let Some(flag) = extra_flag {
        cmdline.extend(flag.split(' ').map(str::to_string));
    }
    let package = |name: &str, version: &str| PythonPackage {
        name: name.into(),
        version: version.into(),
        ..PythonPackage::default()
    };
    let gpu = |index: u32| Gpu {
        index: Some(index),
        name: Some("NVIDIA H200".into()),
        driver_version: Some(driver.into()),
        uuid: Some(format!("GPU-{name}-{index}")),
        ..Gpu::default()
    };
    Snapshot {
        schema_version: probe_model::SCHEMA_VERSION,
        id: format!("{name}-1"),
        target: name.into(),
        collected_at: 1_795_000_000,
        redacted: true,
        host: probe_model::HostFacts {
            hostname: Some(name.into()),
            machine_id: Some(format!("machine-{name}")),
            uptime_s: Some(1000 + name.len() as u64 * 77),
            ..probe_model::HostFacts::default()
        },
        processes: vec![ProcessInfo {
            pid: 4242,
            engine: Some(probe_model::Engine::Vllm),
            argv: cmdline,
            role: probe_model::ProcessRole::Launcher,
            exe: Some("/opt/venvs/vllm/bin/python3.11".into()),
            ..ProcessInfo::default()
        }],
        python_envs: vec![PythonEnv {
            interpreter: "/opt/venvs/vllm/bin/python3".into(),
            packages: vec![
                package("vllm", "0.11.0"),
                package("torch", torch),
                package("transformers", "4.57.1"),
            ],
            ..PythonEnv::default()
        }],
        gpu: GpuState {
            status: GpuStatus::Present,
            driver_version: Some(driver.into()),
            cuda_version: Some("12.8".into()),
            gpus: vec![gpu(0), gpu(1)],
            ..GpuState::default()
        },
        ..Snapshot::default()
    }
}

fn keys(changes: &[Change]) -> Vec<String> {
    let mut keys: Vec<String> = changes.iter().map(|change| change.key.clone()).collect();
    keys.sort();
    keys
}

#[test]
fn one_host_differs_in_driver_flag_and_package() {
    let snapshots = [
        host("gpu1", "570.172.08", None, "2.8.0+cu128"),
        host("gpu2", "570.172.08", None, "2.8.0+cu128"),
        host(
            "gpu3",
            "575.57.08",
            Some("--enable-expert-parallel"),
            "2.9.0+cu128",
        ),
        host("gpu4", "570.172.08", None, "2.8.0+cu128"),
    ];
    let members: Vec<Member<'_>> = snapshots
        .iter()
        .map(|view| Member {
            host: &view.snapshot().target,
            view,
        })
        .collect();
    let report = outliers("prod", &members);
    assert_eq!(report.hosts, 4);
    assert_ne!(report.reference.as_deref(), Some("gpu3"));
    assert_eq!(report.outliers.len(), 1, "{:#?}", report.outliers);
    let odd = &report.outliers[0];
    assert_eq!(odd.host, "gpu3");
    let found = keys(&odd.changes);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found.iter().any(|k| k == "gpu.driver_version"), "{found:?}");
    assert!(
        found.iter().any(|k| k.starts_with("package:torch")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|k| k.ends_with("enable_expert_parallel")
                || k.ends_with("enable-expert-parallel")),
        "{found:?}"
    );
    let driver = odd
        .changes
        .iter()
        .find(|c| c.key == "gpu.driver_version")
        .unwrap();
    assert_eq!(driver.before, Some(Value::from("570.172.08")));
    assert_eq!(driver.after, Some(Value::from("575.57.08")));
    // Ranked like a launch diff: highest impact first.
    assert!(
        odd.changes
            .windows(2)
            .all(|pair| pair[0].impact <= pair[1].impact),
        "{:?}",
        odd.changes.iter().map(|c| c.impact).collect::<Vec<_>>()
    );
    assert_eq!(report.disputed.len(), 3);
    assert!(report.disputed.iter().all(|modal| modal.hosts == 3));
    let baseline = report.baseline.join("\n");
    assert!(baseline.contains("vllm 0.11.0"), "{baseline}");
    assert!(baseline.contains("driver 570.172.08"), "{baseline}");
    assert!(baseline.contains("2 x NVIDIA H200"), "{baseline}");
}

#[test]
fn identical_hosts_have_no_outliers_and_the_mode_wins_over_the_reference() {
    let same = [
        host("a", "570.172.08", None, "2.8.0"),
        host("b", "570.172.08", None, "2.8.0"),
    ];
    let members: Vec<Member<'_>> = same
        .iter()
        .map(|view| Member {
            host: &view.snapshot().target,
            view,
        })
        .collect();
    let report = outliers("g", &members);
    assert!(report.outliers.is_empty(), "{:#?}", report.outliers);
    assert!(report.disputed.is_empty());
    assert_eq!(outliers("empty", &[]).hosts, 0);

    // Two camps of 2 and 3: the 2 are the outliers, whichever host is the reference.
    let camps = [
        host("p", "570", None, "2.8.0"),
        host("q", "575", None, "2.8.0"),
        host("r", "575", None, "2.8.0"),
        host("s", "570", None, "2.8.0"),
        host("t", "575", None, "2.8.0"),
    ];
    let members: Vec<Member<'_>> = camps
        .iter()
        .map(|view| Member {
            host: &view.snapshot().target,
            view,
        })
        .collect();
    let report = outliers("g", &members);
    let odd: Vec<&str> = report.outliers.iter().map(|o| o.host.as_str()).collect();
    assert_eq!(odd, ["p", "s"], "{:#?}", report.outliers);
    let change = &report.outliers[0].changes[0];
    assert_eq!(change.key, "gpu.driver_version");
    assert_eq!(change.before, Some(Value::from("575")));
    assert_eq!(change.after, Some(Value::from("570")));
    assert_eq!(report.disputed[0].value, "575");
    assert_eq!(report.disputed[0].hosts, 3);
}

/// The view leaves out only what the comparison never reads: hosts whose section reports
/// and workers' environments all differ have the outliers their whole snapshots have, and a
/// launcher's environment (kept) still makes an outlier.
#[test]
fn views_have_the_outliers_of_whole_snapshots() {
    let whole: Vec<Snapshot> = (0..5)
        .map(|n| {
            let mut snapshot = whole_host(&format!("gpu{n}"), "570.172.08", None, "2.8.0");
            snapshot.sections = (0..3)
                .map(|i| probe_model::SectionReport {
                    name: format!("section-{i}"),
                    bytes: 100 * n + i,
                    duration_ms: Some(n),
                    ..probe_model::SectionReport::default()
                })
                .collect();
            let visible = if n == 3 { "2,3" } else { "0,1" };
            snapshot.processes[0].env =
                [("CUDA_VISIBLE_DEVICES".to_string(), visible.to_string())].into();
            snapshot.processes.push(ProcessInfo {
                pid: 4243,
                ppid: Some(4242),
                role: probe_model::ProcessRole::Worker,
                engine: Some(probe_model::Engine::Vllm),
                argv: vec!["VLLM::Worker_TP0".into()],
                env: [
                    ("CUDA_VISIBLE_DEVICES".to_string(), format!("{n}")),
                    ("VLLM_ATTENTION_BACKEND".to_string(), format!("B{n}")),
                ]
                .into(),
                ..ProcessInfo::default()
            });
            snapshot
        })
        .collect();
    let report = |views: &[FleetView]| {
        let members: Vec<Member<'_>> = views
            .iter()
            .map(|view| Member {
                host: &view.snapshot().target,
                view,
            })
            .collect();
        outliers("g", &members)
    };
    let views: Vec<FleetView> = whole.iter().cloned().map(FleetView::of).collect();
    let unprojected: Vec<FleetView> = whole.into_iter().map(FleetView::unprojected).collect();
    assert!(views[0].snapshot().sections.is_empty());
    assert!(views[0].snapshot().processes[1].env.is_empty());
    let (from_views, from_whole) = (report(&views), report(&unprojected));
    assert_eq!(from_views, from_whole);
    let odd: Vec<&str> = from_views
        .outliers
        .iter()
        .map(|o| o.host.as_str())
        .collect();
    assert_eq!(odd, ["gpu3"], "{:#?}", from_views.outliers);
    let found = keys(&from_views.outliers[0].changes);
    assert!(
        found.iter().any(|key| key.contains("CUDA_VISIBLE_DEVICES")),
        "{found:?}"
    );
}

/// Whether the reference holds the mode or not, an outlier's change and its explanation read
/// from the group's value to the host's.
#[test]
fn outlier_explanations_read_from_the_group_to_the_host() {
    // The 575 hosts disagree on torch, so the medoid (the reference) is a 570 host while
    // the driver's mode is 575: the comparisons were made in the other direction.
    let camps = [
        host("p", "570", None, "2.8.0"),
        host("q", "575", None, "2.7.0"),
        host("r", "575", None, "2.7.1"),
        host("s", "570", None, "2.8.0"),
        host("t", "575", None, "2.6.0"),
    ];
    let members: Vec<Member<'_>> = camps
        .iter()
        .map(|view| Member {
            host: &view.snapshot().target,
            view,
        })
        .collect();
    let report = outliers("g", &members);
    assert_eq!(report.reference.as_deref(), Some("p"));
    for host_name in ["p", "s"] {
        let outlier = report
            .outliers
            .iter()
            .find(|outlier| outlier.host == host_name)
            .unwrap();
        let change = outlier
            .changes
            .iter()
            .find(|change| change.key == "gpu.driver_version")
            .unwrap();
        assert_eq!(change.before, Some(Value::from("575")), "{change:?}");
        assert_eq!(change.after, Some(Value::from("570")), "{change:?}");
        assert!(
            change.explanation.contains("575 -> 570"),
            "{}: {}",
            outlier.host,
            change.explanation
        );
    }
}

/// The comparison as it was made before configurations were shared: every member analysed
/// up front and held, one comparison per member, the holders' comparisons per member.
fn per_member_outliers(group: &str, members: &[Member<'_>]) -> GroupOutliers {
    let analyses: Vec<Analysis> = members
        .iter()
        .map(|member| crate::analysis::analyze(member.snapshot()))
        .collect();
    let side = |index: usize| Side {
        snapshot: members[index].snapshot(),
        analysis: &analyses[index],
    };
    let candidates = members.len().min(MEDOID_CANDIDATES);
    let Some(reference) = (0..candidates).min_by_key(|&candidate| {
        (0..candidates)
            .filter(|&other| other != candidate)
            .map(|other| configuration_changes(side(candidate), side(other)).len())
            .sum::<usize>()
    }) else {
        return outliers(group, &[]);
    };
    let diffs: Vec<BTreeMap<String, Change>> = (0..members.len())
        .map(|index| {
            if index == reference {
                BTreeMap::new()
            } else {
                keyed(configuration_changes(side(reference), side(index)))
            }
        })
        .collect();
    let diffs: Vec<&BTreeMap<String, Change>> = diffs.iter().collect();
    let mut keys: Vec<String> = diffs.iter().flat_map(|diff| diff.keys().cloned()).collect();
    keys.sort();
    keys.dedup();
    let mut per_host: Vec<Vec<Change>> = vec![Vec::new(); members.len()];
    let mut disputed = Vec::new();
    for key in &keys {
        let (modal, count) = modal_value(&diffs, key);
        disputed.push(ModalValue {
            key: key.clone(),
            value: match &modal {
                None => reference_written(&diffs, key),
                Some(change) => written(change.after.as_ref(), change.after_written.as_deref()),
            },
            hosts: count,
        });
        let holder = modal
            .as_ref()
            .and_then(|modal| holder_of(&diffs, key, modal));
        for (index, diff) in diffs.iter().enumerate() {
            let Some(change) = difference_from_mode(diff.get(key), modal.as_ref()) else {
                continue;
            };
            let change = holder
                .and_then(|holder| {
                    keyed(configuration_changes(side(holder), side(index))).remove(key)
                })
                .unwrap_or(change);
            per_host[index].push(change);
        }
    }
    let outliers = ranked(per_host, &hosts_of(members));
    GroupOutliers {
        group: group.to_string(),
        hosts: members.len(),
        reference: Some(members[reference].host.to_string()),
        baseline: baseline(members[reference].snapshot(), &analyses[reference].launches),
        disputed,
        outliers,
    }
}

/// `snapshot` renamed (`node-N.example`) in every field a configuration leaves out.
fn renamed(mut snapshot: Snapshot, n: u64) -> Snapshot {
    let name = format!("node-{n}.example");
    snapshot.id = format!("{name}-{}", 1_795_000_000 + n);
    snapshot.target = format!("root@{name}:22");
    snapshot.address = Some(format!("10.0.{n}.1:22"));
    snapshot.remote_clock = Some(1_795_000_000 - n as i64);
    snapshot.collector_version = format!("0.{n}.0");
    snapshot.duration_ms = 700 + n;
    snapshot.host.hostname = Some(name);
    snapshot.host.machine_id = Some(format!("{n:032x}"));
    snapshot.host.uptime_s = Some(86_400 + n * 61);
    snapshot.host.boot_time = Some(1_790_000_000 + n as i64);
    snapshot.host.mem_available_kib = Some(1_500_000_000 - n * 999);
    snapshot
}

fn hosts_of<'a>(members: &[Member<'a>]) -> Vec<&'a str> {
    members.iter().map(|member| member.host).collect()
}

fn members_of(views: &[FleetView]) -> Vec<Member<'_>> {
    views
        .iter()
        .map(|view| Member {
            host: &view.snapshot().target,
            view,
        })
        .collect()
}

/// Hosts identical but for their identity share one configuration, compared once, and the
/// outliers are those of comparing every member: also where the mode is not the
/// reference's value (the holders' comparisons), with drifted hosts among them.
#[test]
fn shared_configurations_have_the_outliers_of_every_member_compared() {
    let mut views = Vec::new();
    for n in 0..40u64 {
        let (driver, flag, torch) = match n {
            // The first 12: the 570 hosts agree, the 575 hosts disagree on torch, so the
            // medoid is a 570 host while most of the group runs 575.
            0..12 if n % 2 == 0 => ("570.172.08", None, "2.8.0".to_string()),
            0..12 => ("575.57.08", None, format!("2.7.{n}")),
            20 | 30 => (
                "575.57.08",
                Some("--enable-expert-parallel"),
                "2.8.0".into(),
            ),
            25 => ("570.172.08", Some("--max-num-seqs 64"), "2.8.0".into()),
            33 => ("575.57.08", None, "2.9.0".into()),
            _ => ("575.57.08", None, "2.8.0".into()),
        };
        // All of them built as one host, then each renamed in every field a
        // configuration leaves out.
        let snapshot = whole_host("gpu", driver, flag, &torch);
        views.push(FleetView::of(renamed(snapshot, n)));
    }
    let members = members_of(&views);
    let configs = Configurations::of(&members);
    // 570 (6 of the first 12), 6 distinct 575 of them, the 575 image, two
    // flags, another torch.
    assert_eq!(configs.len(), 11, "{configs:?}");
    assert_eq!(configs.of_member[0], configs.of_member[2]);
    assert_eq!(configs.of_member[14], configs.of_member[15]);
    let shared = outliers("g", &members);
    let each = Configurations::each(40);
    let every = outliers_of(
        "g",
        &hosts_of(&members),
        &each,
        &mut Source::given(&members, &each),
        None,
    );
    assert_eq!(Some(&shared), every.as_ref());
    assert_eq!(shared, per_member_outliers("g", &members));
    // Fingerprints (here each configuration's bytes): only the first member of each is
    // read, and the outliers are the same.
    let bytes: Vec<Option<Vec<u8>>> = (views.iter())
        .map(|view| configuration_bytes(view.snapshot()))
        .collect();
    let no_ids = HostIds::default();
    let fingerprinted: Vec<Fingerprinted<'_>> = (views.iter().zip(&bytes))
        .map(|(view, bytes)| Fingerprinted {
            host: &view.snapshot().target,
            hash: bytes.as_deref(),
            ids: &no_ids,
            view: None,
        })
        .collect();
    let mut read: Vec<usize> = Vec::new();
    let by_fingerprint = outliers_by_fingerprint("g", &fingerprinted, &mut |wanted| {
        read.extend(wanted);
        Some(wanted.iter().map(|&index| views[index].clone()).collect())
    });
    assert_eq!(by_fingerprint.as_ref(), Some(&shared));
    read.sort_unstable();
    assert_eq!(read, configs.first);
    // A member to read whose view is gone: no answer rather than a wrong one.
    let gone = configs.first[1];
    let answer = outliers_by_fingerprint("g", &fingerprinted, &mut |wanted| {
        (!wanted.contains(&gone)).then(|| wanted.iter().map(|&i| views[i].clone()).collect())
    });
    assert_eq!(answer, None);
    assert_eq!(shared.reference.as_deref(), Some("root@node-0.example:22"));
    // The mode is 575: each 570 host's driver change reads from the group to the host.
    let odd: Vec<&str> = shared.outliers.iter().map(|o| o.host.as_str()).collect();
    for n in [0, 2, 20, 25, 30, 33] {
        let expected = format!("root@node-{n}.example:22");
        assert!(
            odd.contains(&expected.as_str()),
            "{expected} not in {odd:?}"
        );
    }
    assert!(!odd.contains(&"root@node-14.example:22"), "{odd:?}");
    let gpu2 = (shared.outliers.iter())
        .find(|o| o.host == "root@node-2.example:22")
        .unwrap();
    let driver = gpu2
        .changes
        .iter()
        .find(|change| change.key == "gpu.driver_version")
        .unwrap();
    assert_eq!(driver.before, Some(Value::from("575.57.08")), "{driver:?}");
    assert!(
        driver.explanation.contains("575.57.08 -> 570.172.08"),
        "{}",
        driver.explanation
    );
}

/// What serialises alike but is not the same value is not one configuration: a NaN (never
/// equal) or an infinity against an absent number (all `null`), `-0.0` against `0.0`; nor
/// are hosts that differ in a field the comparison reads (the collection time).
#[test]
fn configurations_tell_apart_what_serialises_alike() {
    let with_power = |power: Option<f64>| {
        let mut snapshot = whole_host("gpu1", "570", None, "2.8.0");
        snapshot.gpu.gpus[0].power_draw_w = power;
        FleetView::of(snapshot)
    };
    for (a, b) in [
        (Some(f64::NAN), Some(f64::NAN)),
        (Some(f64::NAN), None),
        (Some(f64::INFINITY), None),
        (Some(f64::INFINITY), Some(f64::NEG_INFINITY)),
        (Some(0.0), Some(-0.0)),
    ] {
        let views = [with_power(a), with_power(b)];
        let configs = Configurations::of(&members_of(&views));
        assert_eq!(configs.first, [0, 1], "{a:?} and {b:?}");
    }
    let views = [with_power(Some(300.5)), with_power(Some(300.5))];
    assert_eq!(Configurations::of(&members_of(&views)).first, [0]);
    let mut later = whole_host("gpu1", "570", None, "2.8.0");
    later.collected_at += 1;
    let views = [
        FleetView::of(whole_host("gpu1", "570", None, "2.8.0")),
        FleetView::of(renamed(whole_host("gpu1", "570", None, "2.8.0"), 7)),
        FleetView::of(later),
    ];
    let configs = Configurations::of(&members_of(&views));
    assert_eq!(configs.of_member, [0, 0, 1]);
}

/// Hosts set up alike, each with its own process id and GPU UUIDs (one hash, their own ids):
/// the reference's comparison with one of them is shared by all that it sees alike, so only
/// the medoid's candidates and one more host are read, and the outliers are those of every
/// member's view (a host with a flag of its own, under another hash, among them).
#[test]
fn hosts_apart_only_in_ids_are_compared_once_with_every_members_outliers() {
    let views: Vec<FleetView> = (0..30u32)
        .map(|n| {
            let flag = (n == 20).then_some("--enable-expert-parallel");
            let mut snapshot = renamed(whole_host("gpu", "575", flag, "2.8.0"), u64::from(n));
            snapshot.processes[0].pid = 5000 + n * 3;
            for (index, gpu) in snapshot.gpu.gpus.iter_mut().enumerate() {
                gpu.uuid = Some(format!("GPU-{n:04x}-{index}"));
            }
            FleetView::of(snapshot)
        })
        .collect();
    let ids: Vec<HostIds> = (views.iter())
        .map(|view| {
            let snapshot = view.snapshot();
            HostIds {
                pids: vec![snapshot.processes[0].pid],
                uuids: (snapshot.gpu.gpus.iter())
                    .filter_map(|gpu| gpu.uuid.clone())
                    .collect(),
            }
        })
        .collect();
    let hashes: Vec<&[u8]> = (0..30)
        .map(|n| if n == 20 { &b"flag"[..] } else { &b"image"[..] })
        .collect();
    let fingerprinted: Vec<Fingerprinted<'_>> = (0..30)
        .map(|n| Fingerprinted {
            host: &views[n].snapshot().target,
            hash: Some(hashes[n]),
            ids: &ids[n],
            view: None,
        })
        .collect();
    let mut read: Vec<usize> = Vec::new();
    let by_fingerprint = outliers_by_fingerprint("g", &fingerprinted, &mut |wanted| {
        read.extend(wanted);
        Some(wanted.iter().map(|&index| views[index].clone()).collect())
    });
    let members = members_of(&views);
    let every = outliers("g", &members);
    assert_eq!(by_fingerprint.as_ref(), Some(&every));
    let odd: Vec<&str> = every.outliers.iter().map(|o| o.host.as_str()).collect();
    assert_eq!(odd, ["root@node-20.example:22"]);
    read.sort_unstable();
    let mut expected: Vec<usize> = (0..12).collect();
    expected.push(20);
    assert_eq!(read, expected);
}
