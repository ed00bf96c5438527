//! Builds the [`HostReport`] of a snapshot: launches now and before, what changed against the
//! previous launch and the previous snapshot, log metrics and collection problems.

use probe_model::{
    HostReport, LaunchConfig, MetricReport, SCHEMA_VERSION, SectionStatus, Snapshot,
};

/// The report on `snapshot`; `previous` is the last stored snapshot of the same host.
pub fn build(
    snapshot: &Snapshot,
    previous: Option<&Snapshot>,
    stored: bool,
    notices: Vec<String>,
) -> HostReport {
    let launches = probe_diff::launch::launches_of(snapshot);
    let timeline = probe_diff::timeline_with(snapshot, &launches);
    let running: Vec<LaunchConfig> = launches
        .iter()
        .filter(|launch| launch.source.running)
        .cloned()
        .collect();

    // Earlier launches: every launch event of the timeline that is not running, newest first.
    let mut earlier: Vec<LaunchConfig> = timeline
        .events
        .iter()
        .filter(|event| !event.running)
        .filter_map(|event| event.launch.and_then(|index| timeline.launches.get(index)))
        .filter(|launch| !launch.source.running)
        .cloned()
        .collect();
    earlier.reverse();

    // Against the previous launch of the running server, with the metrics of each one's run.
    let vs_previous_launch = probe_diff::previous_launch_diff(snapshot, &timeline);
    let vs_last_snapshot = previous.map(|before| {
        probe_diff::compare_snapshots(before, snapshot, &probe_diff::CompareOptions::default())
    });

    let metrics = snapshot
        .logs
        .iter()
        .flat_map(|log| {
            log.metrics.iter().map(move |series| MetricReport {
                name: series.name.clone(),
                unit: series.unit.clone(),
                source: log.location.clone(),
                summary: series.summary.clone(),
            })
        })
        .collect();
    let metrics_by_run = probe_diff::metrics_by_run(snapshot, &timeline, 3);
    let problems = snapshot
        .sections
        .iter()
        .filter(|section| {
            !matches!(
                section.status,
                SectionStatus::Ok | SectionStatus::NotPresent
            )
        })
        .cloned()
        .collect();

    HostReport {
        schema_version: SCHEMA_VERSION,
        target: snapshot.target.clone(),
        address: snapshot.address.clone(),
        snapshot_id: snapshot.id.clone(),
        collected_at: snapshot.collected_at,
        stored,
        host: snapshot.host.clone(),
        gpu: snapshot.gpu.clone(),
        running,
        earlier,
        vs_previous_launch,
        vs_last_snapshot,
        metrics,
        metrics_by_run,
        hardware: probe_diff::hardware::report(snapshot, previous, &timeline),
        problems,
        notices,
    }
}
