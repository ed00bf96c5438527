//! The host that differs from its peers: for a group of hosts (an inventory group or tag), the
//! modal configuration and each host's differences from it, ranked like a launch diff.
//!
//! Nothing here reads a launch or a package list itself: every difference is a [`Change`] of
//! [`compare_snapshots_with`] between a reference host (the group's medoid, the host closest to
//! all others) and each member, so engines, versions, launch options (default-aware), packages,
//! the driver, GPU model and count and model configuration are compared exactly as `probe diff`
//! compares them. For every change key the modal value is the one most hosts have (ties go to the
//! reference); a host differs where its value is not the modal one, and the change reported is
//! `modal -> host's value`. Host facts that always differ between machines (host name, memory,
//! uptime) and log metrics are not configuration and are left out.
//!
//! Members are [`FleetView`]s: a snapshot without what the comparison never reads (section
//! reports, the environments of processes that are not launchers), so that the store can read
//! ten thousand of them without parsing those (`get_many_views`). A test holds the outliers of
//! views to those of whole snapshots.

use std::collections::BTreeMap;

use probe_model::{
    Change, ChangeKind, FleetView, GroupOutliers, HostDifferences, Impact, LaunchConfig,
    ModalValue, Snapshot,
};
use serde_json::Value;

use crate::analysis::Analysis;
use crate::compare::{CompareOptions, compare_analyses, rank};

/// One member of a group: its name (inventory name) and its latest snapshot, as the comparison
/// reads it.
#[derive(Debug, Clone, Copy)]
pub struct Member<'a> {
    pub host: &'a str,
    pub view: &'a FleetView,
}

impl Member<'_> {
    fn snapshot(&self) -> &Snapshot {
        self.view.snapshot()
    }
}

/// Groups larger than this pick their reference among the first members only (the medoid costs
/// one comparison per pair).
const MEDOID_CANDIDATES: usize = 12;
/// Packages named in the baseline.
const KEY_PACKAGES: &[&str] = &[
    "vllm",
    "sglang",
    "sgl-kernel",
    "torch",
    "transformers",
    "flashinfer-python",
    "triton",
    "xformers",
];

/// The modal configuration of `members` and each host's differences from it.
pub fn outliers(group: &str, members: &[Member<'_>]) -> GroupOutliers {
    // Each member read once: its launches, timeline and runs serve every comparison it is in.
    let analyses: Vec<Analysis> = members
        .iter()
        .map(|member| crate::analysis::analyze(member.snapshot()))
        .collect();
    let Some(reference) = medoid(members, &analyses) else {
        return GroupOutliers {
            group: group.to_string(),
            hosts: 0,
            reference: None,
            baseline: Vec::new(),
            disputed: Vec::new(),
            outliers: Vec::new(),
        };
    };
    let diffs: Vec<BTreeMap<String, Change>> = (0..members.len())
        .map(|index| {
            if index == reference {
                BTreeMap::new()
            } else {
                configuration_changes(members, &analyses, reference, index)
                    .into_iter()
                    .map(|change| (change.key.clone(), change))
                    .collect()
            }
        })
        .collect();
    let keys: Vec<String> = {
        let mut keys: Vec<String> = diffs.iter().flat_map(|diff| diff.keys().cloned()).collect();
        keys.sort();
        keys.dedup();
        keys
    };
    let mut per_host: Vec<Vec<Change>> = vec![Vec::new(); members.len()];
    let mut disputed = Vec::new();
    let mut from_holder = HolderComparisons::default();
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
            // When the mode is not the reference's value, the change was read in the
            // reference's direction: compare a host that has the mode with this one instead, so
            // the impact and the explanation's `before -> after` read group -> host.
            let change = holder
                .and_then(|holder| from_holder.change(members, &analyses, holder, index, key))
                .unwrap_or(change);
            per_host[index].push(change);
        }
    }
    let mut outliers: Vec<HostDifferences> = per_host
        .into_iter()
        .zip(members)
        .filter(|(changes, _)| !changes.is_empty())
        .map(|(mut changes, member)| {
            rank(&mut changes);
            HostDifferences {
                host: member.host.to_string(),
                changes,
            }
        })
        .collect();
    outliers.sort_by(|a, b| {
        severity(&b.changes)
            .cmp(&severity(&a.changes))
            .then_with(|| a.host.cmp(&b.host))
    });
    GroupOutliers {
        group: group.to_string(),
        hosts: members.len(),
        reference: Some(members[reference].host.to_string()),
        baseline: baseline(members[reference].snapshot(), &analyses[reference].launches),
        disputed,
        outliers,
    }
}

/// (high, medium, low, count): more high-impact differences rank a host first.
fn severity(changes: &[Change]) -> (usize, usize, usize, usize) {
    let count = |impact: Impact| changes.iter().filter(|c| c.impact == impact).count();
    (
        count(Impact::High),
        count(Impact::Medium),
        count(Impact::Low),
        changes.len(),
    )
}

/// The changes between two members that are configuration (not identity, not metrics).
fn configuration_changes(
    members: &[Member<'_>],
    analyses: &[Analysis],
    from: usize,
    to: usize,
) -> Vec<Change> {
    let diff = compare_analyses(
        members[from].snapshot(),
        &analyses[from],
        members[to].snapshot(),
        &analyses[to],
        &CompareOptions::default(),
    );
    diff.changes
        .into_iter()
        .filter(|change| change.impact != Impact::None)
        .filter(|change| !change.key.starts_with("host.") && !change.key.starts_with("metric:"))
        .collect()
}

/// The member with the fewest differences from the others (among the first candidates).
fn medoid(members: &[Member<'_>], analyses: &[Analysis]) -> Option<usize> {
    let candidates = members.len().min(MEDOID_CANDIDATES);
    (0..candidates).min_by_key(|&candidate| {
        (0..candidates)
            .filter(|&other| other != candidate)
            .map(|other| configuration_changes(members, analyses, candidate, other).len())
            .sum::<usize>()
    })
}

/// The first member whose value of `key` is the modal one (the mode is not the reference's).
fn holder_of(diffs: &[BTreeMap<String, Change>], key: &str, modal: &Change) -> Option<usize> {
    diffs.iter().position(|diff| {
        diff.get(key)
            .is_some_and(|own| value_key(Some(own)) == value_key(Some(modal)))
    })
}

/// Comparisons from a host holding a modal value to another member, each made once.
#[derive(Default)]
struct HolderComparisons {
    done: BTreeMap<(usize, usize), BTreeMap<String, Change>>,
}

impl HolderComparisons {
    /// The change of `key` from member `holder` to member `to`, as `probe diff` reads it.
    fn change(
        &mut self,
        members: &[Member<'_>],
        analyses: &[Analysis],
        holder: usize,
        to: usize,
        key: &str,
    ) -> Option<Change> {
        self.done
            .entry((holder, to))
            .or_insert_with(|| {
                configuration_changes(members, analyses, holder, to)
                    .into_iter()
                    .map(|change| (change.key.clone(), change))
                    .collect()
            })
            .get(key)
            .cloned()
    }
}

/// Identity of a host's value for a key: the change's `after` (or the reference's value).
fn value_key(change: Option<&Change>) -> Option<String> {
    change.map(|change| {
        format!(
            "{}|{}",
            change
                .after
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default(),
            change.after_written.as_deref().unwrap_or("")
        )
    })
}

/// The modal value of `key`: `None` for the reference's value, else a change that leads to it;
/// and how many hosts have it. Ties go to the reference.
fn modal_value(diffs: &[BTreeMap<String, Change>], key: &str) -> (Option<Change>, usize) {
    let mut counts: BTreeMap<Option<String>, (usize, Option<&Change>)> = BTreeMap::new();
    for diff in diffs {
        let change = diff.get(key);
        let entry = counts.entry(value_key(change)).or_insert((0, change));
        entry.0 += 1;
    }
    let reference_count = counts.get(&None).map_or(0, |(count, _)| *count);
    let best = counts
        .iter()
        .filter(|(value, _)| value.is_some())
        .max_by(|a, b| a.1.0.cmp(&b.1.0).then_with(|| b.0.cmp(a.0)));
    match best {
        Some((_, (count, change))) if *count > reference_count => {
            (change.map(|change| (*change).clone()), *count)
        }
        _ => (None, reference_count),
    }
}

/// What one host differs in on a key, as `modal -> host's value`; `None` when it has the mode.
fn difference_from_mode(own: Option<&Change>, modal: Option<&Change>) -> Option<Change> {
    match (modal, own) {
        // The reference's value is the mode: the comparison already says `mode -> host`.
        (None, own) => own.cloned(),
        (Some(modal), Some(own)) if value_key(Some(own)) == value_key(Some(modal)) => None,
        // The host has the reference's value, which is not the mode: the reverse change.
        (Some(modal), None) => Some(reversed(modal)),
        // A third value: from the mode to this host's value.
        (Some(modal), Some(own)) => {
            let mut change = own.clone();
            change.before = modal.after.clone();
            change.before_written = modal.after_written.clone();
            change.kind = match (&change.before, &change.after) {
                (None, Some(_)) => ChangeKind::Added,
                (Some(_), None) => ChangeKind::Removed,
                _ => ChangeKind::Changed,
            };
            Some(change)
        }
    }
}

fn reversed(change: &Change) -> Change {
    let mut reversed = change.clone();
    std::mem::swap(&mut reversed.before, &mut reversed.after);
    std::mem::swap(&mut reversed.before_written, &mut reversed.after_written);
    reversed.kind = match change.kind {
        ChangeKind::Added => ChangeKind::Removed,
        ChangeKind::Removed => ChangeKind::Added,
        ChangeKind::Changed => ChangeKind::Changed,
    };
    reversed
}

fn written(value: Option<&Value>, written: Option<&str>) -> String {
    match (value, written) {
        (Some(Value::String(text)), _) => text.clone(),
        (Some(Value::Null) | None, None) => String::from("(absent)"),
        (Some(value), _) => value.to_string(),
        (None, Some(text)) => text.to_string(),
    }
}

/// The reference's own value of a key, from any comparison that names it.
fn reference_written(diffs: &[BTreeMap<String, Change>], key: &str) -> String {
    diffs.iter().find_map(|diff| diff.get(key)).map_or_else(
        || String::from("(absent)"),
        |change| written(change.before.as_ref(), change.before_written.as_deref()),
    )
}

/// One line per running launch, then key packages, then driver and GPUs.
fn baseline(snapshot: &Snapshot, launches: &[LaunchConfig]) -> Vec<String> {
    let mut lines = Vec::new();
    for launch in launches.iter().filter(|launch| launch.source.running) {
        let mut line = launch.engine.as_str().to_string();
        if let Some(version) = &launch.engine_version {
            line.push_str(&format!(" {version}"));
        }
        if let Some(model) = &launch.model {
            line.push_str(&format!(", model {model}"));
        }
        let options: Vec<String> = launch
            .options
            .iter()
            .map(|(name, option)| format!("{name} {}", option.written))
            .collect();
        if !options.is_empty() {
            line.push_str(&format!(": {}", options.join(" ")));
        }
        lines.push(line);
    }
    let mut packages: Vec<String> = Vec::new();
    for environment in &snapshot.python_envs {
        for package in &environment.packages {
            let entry = format!("{} {}", package.name, package.version);
            if KEY_PACKAGES.contains(&package.name.as_str()) && !packages.contains(&entry) {
                packages.push(entry);
            }
        }
    }
    if !packages.is_empty() {
        lines.push(format!("packages: {}", packages.join(", ")));
    }
    let gpu = &snapshot.gpu;
    if let Some(driver) = &gpu.driver_version {
        lines.push(format!("driver {driver}"));
    }
    if let Some(name) = gpu.gpus.first().and_then(|first| first.name.as_deref()) {
        lines.push(format!("{} x {name}", gpu.gpus.len()));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::{Gpu, GpuState, GpuStatus, ProcessInfo, PythonEnv, PythonPackage};

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
}
