//! Builds the [`HostReport`] of a snapshot: launches now and before, what changed against the
//! previous launch and the previous snapshot, log metrics and collection problems.

use probe_diff::Analysis;
use probe_model::{
    HostReport, LaunchConfig, MetricReport, Run, SCHEMA_VERSION, SectionReport, SectionStatus,
    Snapshot, TimelineEvent, TimelineEventKind,
};

/// Earlier launches the report lists (the timeline has them all).
const MAX_EARLIER: usize = 20;
/// Runs the report holds: the newest. The terminal shows fewer (`render::runs`); a page draws
/// them all on its timeline.
const MAX_RUNS: usize = 200;
/// Install events listed: those within this many seconds before a run's start (or during it).
const NEAR_RUN_S: i64 = 14 * 86_400;
const MAX_INSTALLS: usize = 12;

/// The newest runs (oldest first, as the analysis orders them), and how many older ones the
/// cap left out.
fn runs_capped(mut runs: Vec<Run>) -> (Vec<Run>, usize) {
    let cut = runs.len().saturating_sub(MAX_RUNS);
    runs.drain(..cut);
    (runs, cut)
}

/// Package, driver and host-changing events of the timeline near a run: within two weeks before
/// a run's start, or while it ran. Newest kept.
fn installs_near_runs(analysis: &Analysis) -> Vec<TimelineEvent> {
    let near = |event: &TimelineEvent| {
        let Some(at) = event
            .time
            .at
            .or(event.time.not_after)
            .or(event.time.not_before)
        else {
            return false;
        };
        analysis.runs.iter().any(|run| {
            let start = run.start.at.unwrap_or(i64::MIN);
            let end = run.end.as_ref().and_then(|e| e.at).unwrap_or(i64::MAX);
            at >= start.saturating_sub(NEAR_RUN_S) && at <= end
        })
    };
    let mut events: Vec<TimelineEvent> = analysis
        .timeline
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                TimelineEventKind::PackageInstall
                    | TimelineEventKind::DriverInstall
                    | TimelineEventKind::HostChange
                    | TimelineEventKind::EngineInstall
            )
        })
        .filter(|e| near(e))
        .cloned()
        .collect();
    let cut = events.len().saturating_sub(MAX_INSTALLS);
    events.drain(..cut);
    events
}

/// What the report must say about the host's clock: a clock minutes or years off this
/// machine's (every time below is the host's), and history timestamps no clock could have
/// written (kept as stamps, their entries without a time).
fn clock_notices(snapshot: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(remote), Some(skew)) = (
        snapshot.remote_clock,
        probe_diff::host_clock_offset(snapshot),
    ) {
        let (how, by) = if skew > 0 {
            ("ahead of", skew)
        } else {
            ("behind", -skew)
        };
        if probe_model::civil::PLAUSIBLE.contains(&remote) {
            out.push(format!(
                "the host's clock is {} {how} this machine's (host {}, here {}): the times in \
                 this report are the host's, and events it logged are ordered by them (`probe \
                 timeline` gives each its time on this machine's clock too)",
                duration(by),
                render_time(remote),
                render_time(snapshot.collected_at)
            ));
        } else {
            out.push(format!(
                "the host's clock reads {} ({} {how} this machine's, here {}): no plausible \
                 time (before 2000 or after 2200: a clock that was never set, such as a dead \
                 real-time clock battery), so the times the host gave (its logs, files and \
                 history, the runs' starts) are not trusted: they are shown as the host wrote \
                 them, and their order is only as good as that clock",
                render_time(remote),
                duration(by),
                render_time(snapshot.collected_at)
            ));
        }
    }
    for h in snapshot
        .histories
        .iter()
        .filter(|h| h.implausible_stamps > 0)
    {
        out.push(format!(
            "history {}: {} timestamp line(s) hold no plausible time (before 2000 or after \
             2200: a clock that was not set); kept as stamps, their entries without a time",
            h.path, h.implausible_stamps
        ));
    }
    out
}

/// `3 y 12 d`, `2 d 4 h`, `17 min`.
pub(crate) fn duration(s: i64) -> String {
    let (d, h, m) = (s / 86_400, s % 86_400 / 3_600, s % 3_600 / 60);
    match (d / 365, d % 365) {
        (y, rest) if y > 0 => format!("{y} y {rest} d"),
        _ if d > 0 => format!("{d} d {h} h"),
        _ if h > 0 => format!("{h} h {m} min"),
        _ => format!("{m} min"),
    }
}

fn render_time(t: probe_model::UnixTime) -> String {
    probe_model::civil::utc_minute(t)
}

/// The report on `snapshot`; `previous` is the last stored snapshot of the same host.
pub fn build(
    snapshot: &Snapshot,
    previous: Option<&Snapshot>,
    stored: bool,
    notices: Vec<String>,
) -> HostReport {
    build_with(snapshot, previous, stored, notices, None)
}

/// The report, with the period `--baseline` named compared with now (`vs_period`).
pub fn build_with(
    snapshot: &Snapshot,
    previous: Option<&Snapshot>,
    stored: bool,
    notices: Vec<String>,
    baseline: Option<&probe_diff::Baseline>,
) -> HostReport {
    let analysis = probe_diff::analyze(snapshot);
    let timeline = &analysis.timeline;
    let running: Vec<LaunchConfig> = analysis
        .launches
        .iter()
        .filter(|launch| launch.source.running)
        .cloned()
        .collect();

    let (earlier, earlier_omitted) = earlier_launches(&analysis);

    // Against the previous run of the running server: causes, symptoms, with the metrics of each.
    let vs_previous_launch = probe_diff::previous_launch_diff(snapshot, &analysis);
    // Periods inside the running run (a change point of its load or speed), or the one named.
    let vs_period = probe_diff::period_diff(snapshot, &analysis, baseline);
    let lead = probe_diff::lead(
        vs_previous_launch.as_ref(),
        vs_period.as_ref(),
        baseline.is_some(),
    );
    let vs_last_snapshot = previous.map(|before| {
        let before_analysis = probe_diff::analyze(before);
        probe_diff::compare_analyses(
            before,
            &before_analysis,
            snapshot,
            &analysis,
            &probe_diff::CompareOptions::default(),
        )
    });

    let metrics = log_metrics(snapshot);
    let metrics_by_run = probe_diff::metrics_by_run(snapshot, &analysis, 3);
    let install_events = installs_near_runs(&analysis);
    let models = snapshot
        .models
        .iter()
        .filter(|m| !m.fields.is_empty())
        .map(probe_diff::summarize_model)
        .collect();
    let (runs, runs_omitted) = runs_capped(analysis.runs);
    let problems = problem_sections(snapshot);
    let mut notices = notices;
    notices.extend(clock_notices(snapshot));

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
        vs_period,
        lead,
        vs_last_snapshot,
        metrics,
        metrics_by_run,
        runs,
        install_events,
        models,
        earlier_omitted,
        runs_omitted,
        hardware: probe_diff::hardware_report(snapshot, previous, timeline),
        problems,
        notices,
        servers: probe_diff::server_views(snapshot, &analysis.launches),
        containers: snapshot.containers.clone(),
        found_logs: found_logs(snapshot),
    }
}

/// Earlier launches: every launch event of the timeline that is not running, newest first
/// (repeated identical launches are one event), capped; and how many the cap left out.
fn earlier_launches(analysis: &Analysis) -> (Vec<LaunchConfig>, usize) {
    let timeline = &analysis.timeline;
    let mut earlier: Vec<LaunchConfig> = timeline
        .events
        .iter()
        .filter(|event| !event.running)
        .filter_map(|event| event.launch.and_then(|index| timeline.launches.get(index)))
        .filter(|launch| !launch.source.running)
        .cloned()
        .collect();
    earlier.reverse();
    let earlier_omitted = earlier.len().saturating_sub(MAX_EARLIER);
    earlier.truncate(MAX_EARLIER);
    (earlier, earlier_omitted)
}

/// Every metric series of every log, named by the log it came from.
fn log_metrics(snapshot: &Snapshot) -> Vec<MetricReport> {
    snapshot
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
        .collect()
}

/// The log files read because a cron line, a timer, logrotate or kubelet named them.
fn found_logs(snapshot: &Snapshot) -> Vec<probe_model::FoundLog> {
    snapshot
        .logs
        .iter()
        .filter_map(|log| {
            Some(probe_model::FoundLog {
                location: log.location.clone(),
                found_by: log.found_by.clone()?,
                status: log.status,
                lines_seen: log.thinning.as_ref().map(|t| t.lines_seen),
                startups: log.startups.len(),
            })
        })
        .collect()
}

/// Sections that did not collect cleanly (neither ok nor absent).
fn problem_sections(snapshot: &Snapshot) -> Vec<SectionReport> {
    snapshot
        .sections
        .iter()
        .filter(|section| {
            !matches!(
                section.status,
                SectionStatus::Ok | SectionStatus::NotPresent
            )
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_clock_off_by_minutes_or_years_is_said() {
        let mut snap = Snapshot {
            collected_at: 1_796_000_000,
            remote_clock: Some(1_796_000_040),
            ..Default::default()
        };
        assert!(
            super::clock_notices(&snap).is_empty(),
            "40 s: the collection's own time"
        );
        for (remote, says) in [
            (
                1_796_000_000 + 3 * 365 * 86_400 + 5 * 86_400,
                "3 y 5 d ahead of",
            ),
            (86_400, "56 y 346 d behind"),
            (1_796_000_000 - 17 * 60, "17 min behind"),
        ] {
            snap.remote_clock = Some(remote);
            let n = super::clock_notices(&snap);
            assert!(n.len() == 1 && n[0].contains(says), "{n:?}");
            // A clock in 1970 (a dead RTC) was never set: its times are not trusted.
            assert_eq!(n[0].contains("not trusted"), remote < 946_684_800, "{n:?}");
        }
        snap.remote_clock = Some(1_796_000_000);
        snap.histories.push(probe_model::HistoryFile {
            path: "/root/.bash_history".into(),
            implausible_stamps: 2,
            ..Default::default()
        });
        let n = super::clock_notices(&snap);
        assert!(
            n.len() == 1 && n[0].starts_with("history /root/.bash_history: 2 timestamp"),
            "{n:?}"
        );
    }

    use probe_launch::snapshot_readings;
    use probe_model::{Engine, ProcessInfo, ProcessRole, Snapshot};

    fn host(id: &str, tp: u32) -> Snapshot {
        let argv = format!("vllm serve Qwen/Qwen2-7B --tensor-parallel-size {tp} --port 8001");
        Snapshot {
            id: id.into(),
            target: "gpu7".into(),
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

    /// The report reads the snapshot once, and the previous one once, for every part of it (the
    /// launches, runs, metrics by run, the comparison with the previous launch and with the
    /// last snapshot and its verdict).
    #[test]
    fn the_report_reads_each_snapshot_once() {
        let (previous, now) = (host("s1", 1), host("s2", 2));
        let before = snapshot_readings();
        let report = super::build(&now, Some(&previous), true, Vec::new());
        assert!(report.vs_last_snapshot.is_some());
        assert_eq!(snapshot_readings() - before, 2);
        let before = snapshot_readings();
        super::build(&now, None, false, Vec::new());
        assert_eq!(snapshot_readings() - before, 1);
    }
}
