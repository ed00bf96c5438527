//! One snapshot read once: its launches, its timeline and its runs, computed together and handed
//! to everything that compares or renders (the report, `probe timeline`, `probe diff`, round-2
//! planning), so that nothing rebuilds them.

use probe_model::{LaunchConfig, Run, Snapshot, Timeline};

/// What probe-diff reads out of one snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Analysis {
    /// Every launch, each run's evidence merged into one ([`probe_launch::launches_of`]).
    pub launches: Vec<LaunchConfig>,
    /// Every run of every server, oldest first, with what was in effect while it ran.
    pub runs: Vec<Run>,
    /// The launches and host events, oldest first.
    pub timeline: Timeline,
    /// Which run each of the snapshot's benchmark results measured, in their order.
    pub benchmarks: Vec<crate::bench::Attribution>,
}

impl Analysis {
    /// The runs of the server of run `index` (the same server), oldest first.
    pub fn runs_of_server(&self, snapshot: &Snapshot, index: usize) -> Vec<&Run> {
        let Some(run) = self.runs.get(index) else {
            return Vec::new();
        };
        let Some(server) = self.timeline.launches.get(run.launch_index) else {
            return Vec::new();
        };
        self.runs
            .iter()
            .filter(|other| {
                other.launch_index == run.launch_index
                    || self
                        .timeline
                        .launches
                        .get(other.launch_index)
                        .is_some_and(|l| probe_launch::same_server(snapshot, l, server))
            })
            .collect()
    }
}

/// Reads a snapshot once: every launch it holds evidence for (merged per run), the timeline and
/// the runs.
///
/// ```
/// use probe_model::{Engine, ProcessInfo, ProcessRole, Snapshot};
///
/// let argv = "nohup vllm serve Qwen/Qwen2-7B --tensor-parallel-size 2 --port 8001";
/// let snapshot = Snapshot {
///     processes: vec![ProcessInfo {
///         pid: 4242,
///         argv: argv.split(' ').map(String::from).collect(),
///         role: ProcessRole::Launcher,
///         engine: Some(Engine::Vllm),
///         ..ProcessInfo::default()
///     }],
///     ..Snapshot::default()
/// };
/// let analysis = probe_diff::analyze(&snapshot);
/// let launch = &analysis.launches[0];
/// assert_eq!(launch.engine, Engine::Vllm);
/// assert_eq!(launch.model.as_deref(), Some("Qwen/Qwen2-7B"));
/// assert_eq!(launch.wrappers, ["nohup"]);
/// assert_eq!(launch.options["tensor-parallel-size"].value, 2);
/// assert!(launch.source.running);
/// ```
pub fn analyze(snapshot: &Snapshot) -> Analysis {
    analyze_with(snapshot, probe_launch::launches_of(snapshot))
}

/// [`analyze`] for a snapshot whose launches were already reconstructed (`probe diff` and the
/// audit have them): the timeline and the runs, without reading the launches again.
pub(crate) fn analyze_with(snapshot: &Snapshot, launches: Vec<LaunchConfig>) -> Analysis {
    let mut timeline = crate::timeline::timeline_with(snapshot, &launches);
    let runs = crate::run::runs_of(snapshot, &timeline);
    crate::self_installed::annotate(&mut timeline, snapshot, &runs);
    let benchmarks = crate::bench::annotate(&mut timeline, snapshot, &runs);
    Analysis {
        launches,
        runs,
        timeline,
        benchmarks,
    }
}

#[cfg(test)]
mod tests {
    use probe_model::{Engine, ProcessInfo, ProcessRole, Snapshot};

    use probe_launch::snapshot_readings;

    fn host(name: &str, tp: u32) -> Snapshot {
        let argv = format!("vllm serve Qwen/Qwen2-7B --tensor-parallel-size {tp} --port 8001");
        Snapshot {
            id: name.into(),
            target: name.into(),
            processes: vec![ProcessInfo {
                pid: 4242,
                argv: argv.split(' ').map(String::from).collect(),
                role: ProcessRole::Launcher,
                engine: Some(Engine::Vllm),
                start_time: Some(1_796_000_000),
                ..ProcessInfo::default()
            }],
            ..Snapshot::default()
        }
    }

    /// Each snapshot is read once per comparison, and a fleet's once per distinct
    /// configuration, however many comparisons it is in (the verdict, the runs, the medoid
    /// search, the outliers): the six hosts differ only in their ids (which feed no change
    /// the outliers keep) and in two tensor-parallel sizes, so two readings.
    #[test]
    fn every_snapshot_is_read_once() {
        let (a, b) = (host("a", 1), host("b", 2));
        let readings = |f: &dyn Fn()| {
            let before = snapshot_readings();
            f();
            snapshot_readings() - before
        };
        assert_eq!(readings(&|| drop(crate::analyze(&a))), 1);
        let diff = || drop(crate::compare_snapshots(&a, &b, &Default::default()));
        assert_eq!(readings(&diff), 2);
        let fleet: Vec<probe_model::FleetView> = (0..6)
            .map(|i| probe_model::FleetView::of(host(&format!("h{i}"), 1 + i % 2)))
            .collect();
        let members: Vec<crate::fleet::Member<'_>> = fleet
            .iter()
            .map(|view| crate::fleet::Member {
                host: &view.snapshot().id,
                view,
            })
            .collect();
        let outliers = || {
            let group = crate::fleet::outliers("all", &members);
            assert_eq!(group.hosts, 6);
        };
        assert_eq!(readings(&outliers), 2);
    }
}
