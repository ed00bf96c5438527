//! What each page holds: for a host, the verdict first, then the timeline, the metrics per run,
//! the launches side by side, and the text report's sections (causes grouped as there, GPU
//! state, packages, collection problems); for a diff and a timeline, the same parts that apply.

use probe_model::{
    HostReport, LaunchConfig, MetricReport, SnapshotDiff, Timeline, TimelineEventKind,
};

use super::charts::{self, Period};
use super::timeline::{self, Bar, Mark, MarkKind};
use super::{doc, escape, launches};
use crate::render::doc::{Block, Doc};
use crate::render::{self, format_time};

/// One host's section of the page.
pub fn host_section(report: &HostReport) -> String {
    let name = report.host.hostname.as_deref().unwrap_or(&report.target);
    let full = render::host_report_doc(report);
    let (header, mut rest) = split_header(full);
    let verdict = take_verdict(&mut rest);
    let mut out = format!(
        "<section class=\"report\" id=\"{}\">\n",
        escape::id("host-", name)
    );
    out.push_str(&doc::render(&header, 0));
    out.push_str(&verdict_section(&verdict));
    out.push_str(&figure(
        "Timeline",
        "timeline",
        host_timeline(report),
        "Runs as bars (the running one in dark blue), events as markers; hover a bar or a \
         marker for its evidence.",
    ));
    let periods = host_periods(report);
    let metric_charts = charts::charts(&periods);
    if !metric_charts.is_empty() {
        out.push_str(
            "<h2>Metrics per run</h2>\n<p class=\"dim\">Each run's samples: the band \
             spans min to max over the time they were logged, the line is the mean; gaps are \
             periods without samples (idle or not running). Shaded: the periods compared \
             below.</p>\n",
        );
        out.push_str(&metric_charts);
    }
    let mut all: Vec<&LaunchConfig> = report.running.iter().collect();
    all.extend(report.earlier.iter());
    if all.len() > 1 {
        out.push_str(
            "<h2>Launches side by side</h2>\n<p class=\"dim\">Running first, then \
             the earlier ones newest first; rows that differ are highlighted.</p>\n",
        );
        out.push_str(&launches::side_by_side(&all));
    }
    out.push_str(&doc::render(&rest, 0));
    out.push_str("</section>\n");
    out
}

/// The conclusion `probe host` prints at the top, when the report has one: the text report's
/// Verdict block, first on the page.
pub fn verdict_section(verdict: &Doc) -> String {
    if verdict.blocks.is_empty() {
        return String::new();
    }
    format!(
        "<div class=\"verdict\" id=\"verdict\">\n{}</div>\n",
        doc::render(verdict, 0)
    )
}

/// The Verdict block the text report opens its sections with, taken out of them.
fn take_verdict(rest: &mut Doc) -> Doc {
    let starts =
        matches!(rest.blocks.first(), Some(Block::Heading(2, title)) if title == "Verdict");
    if !starts {
        return Doc::default();
    }
    let end = rest
        .blocks
        .iter()
        .skip(1)
        .position(|block| matches!(block, Block::Heading(level, _) if *level <= 2))
        .map_or(rest.blocks.len(), |at| at + 1);
    Doc {
        blocks: rest.blocks.drain(..end).collect(),
    }
}

/// The title and the fields under it; the sections after.
fn split_header(full: Doc) -> (Doc, Doc) {
    let cut = full
        .blocks
        .iter()
        .position(|block| matches!(block, Block::Heading(level, _) if *level >= 2))
        .unwrap_or(full.blocks.len());
    let mut header = full;
    let rest = header.blocks.split_off(cut);
    (header, Doc { blocks: rest })
}

fn figure(heading: &str, class: &str, drawing: Option<(String, String)>, caption: &str) -> String {
    let Some((svg, legend)) = drawing else {
        return String::new();
    };
    format!(
        "<h2>{}</h2>\n<figure class=\"{class}\">{svg}<figcaption>{legend}{}</figcaption></figure>\n",
        escape::text(heading),
        escape::text(caption)
    )
}

/// Runs as bars; run starts, installs, faults and the boot as markers.
fn host_timeline(report: &HostReport) -> Option<(String, String)> {
    let now = report.collected_at;
    let mut bars = Vec::new();
    let mut marks = Vec::new();
    for run in &report.runs {
        let Some(start) = run.start.at else { continue };
        let end = run
            .end
            .as_ref()
            .and_then(|end| end.at)
            .unwrap_or(now)
            .max(start);
        let mut title = format!(
            "{} {}: started {} ({})",
            run.engine,
            run.launch,
            format_time(start),
            run.start.evidence
        );
        match &run.end {
            Some(bound) => title.push_str(&format!(
                ", ended {} ({})",
                bound.at.map(format_time).unwrap_or_else(|| "?".into()),
                bound.evidence
            )),
            None => title.push_str(", running now"),
        }
        if let Some(version) = &run.engine_version.version {
            title.push_str(&format!(", {} {version}", run.engine));
        }
        marks.push(Mark {
            at: start,
            kind: MarkKind::Launch,
            title: format!("{} ({})", run.launch, run.start.evidence),
        });
        bars.push(Bar {
            label: run.launch.clone(),
            start,
            end,
            running: run.running,
            title,
        });
    }
    for event in &report.install_events {
        if let Some(at) = event_time(event) {
            marks.push(Mark {
                at,
                kind: mark_kind(event.kind),
                title: event.summary.clone(),
            });
        }
    }
    for fault in &report.hardware.state.faults {
        if let Some(at) = fault.time {
            let meaning = fault.meaning.as_deref().unwrap_or("");
            marks.push(Mark {
                at,
                kind: MarkKind::Fault,
                title: format!("{} {meaning}", fault.line),
            });
        }
    }
    if let Some(boot) = report.host.boot_time {
        marks.push(Mark {
            at: boot,
            kind: MarkKind::Reboot,
            title: format!("booted {}", format_time(boot)),
        });
    }
    let svg = timeline::svg(&bars, &marks)?;
    Some((svg, timeline::legend(&marks)))
}

fn event_time(event: &probe_model::TimelineEvent) -> Option<i64> {
    event
        .time
        .at
        .or(event.time.not_after)
        .or(event.time.not_before)
}

fn mark_kind(kind: TimelineEventKind) -> MarkKind {
    match kind {
        TimelineEventKind::Launch => MarkKind::Launch,
        TimelineEventKind::PackageInstall | TimelineEventKind::EngineInstall => MarkKind::Install,
        TimelineEventKind::DriverInstall => MarkKind::Driver,
        TimelineEventKind::UnitChange => MarkKind::Unit,
        TimelineEventKind::HostChange => MarkKind::HostChange,
        TimelineEventKind::GpuFault => MarkKind::Fault,
        TimelineEventKind::PowerLimitChange => MarkKind::PowerLimit,
        TimelineEventKind::GpuObservation => MarkKind::GpuObservation,
        TimelineEventKind::Benchmark => MarkKind::Benchmark,
    }
}

/// The runs with metrics, and the periods the verdict compares shaded: the spans its
/// comparison names (a period inside the running run, one named by `--baseline`, with why each
/// was chosen), else the running run and the one before it.
fn host_periods(report: &HostReport) -> Vec<Period<'_>> {
    let named: &[probe_model::ComparedPeriod] = report
        .vs_period
        .as_ref()
        .or(report.vs_previous_launch.as_ref())
        .map_or(&[], |diff| diff.periods.as_slice());
    let compared = if !named.is_empty() || report.vs_previous_launch.is_none() {
        0
    } else {
        2
    };
    let mut periods = run_periods(report, compared);
    periods.extend(named.iter().map(|p| Period {
        label: format!("{}: {}", p.label, p.why),
        start: p.start,
        end: p.end.unwrap_or(report.collected_at).max(p.start),
        running: false,
        compared: true,
        metrics: &[],
    }));
    periods
}

/// The runs with metrics, the first `compared` of them shaded.
fn run_periods(report: &HostReport, compared: usize) -> Vec<Period<'_>> {
    report
        .metrics_by_run
        .iter()
        .enumerate()
        .filter_map(|(index, run)| {
            let first = run
                .metrics
                .iter()
                .filter_map(|metric| metric.summary.first_time)
                .min();
            let last = run
                .metrics
                .iter()
                .filter_map(|metric| metric.summary.last_time)
                .max();
            let start = run.start.or(first)?;
            let end = run
                .end
                .or(if run.running {
                    Some(report.collected_at)
                } else {
                    last
                })
                .unwrap_or(start)
                .max(start);
            Some(Period {
                label: run.launch.clone(),
                start,
                end,
                running: run.running,
                compared: index < compared,
                metrics: &run.metrics,
            })
        })
        .collect()
}

/// The diff page: the two sides' metrics as compared periods, then the text report's sections.
pub fn diff_section(diff: &SnapshotDiff) -> String {
    let mut out = String::from("<section class=\"report\" id=\"diff\">\n");
    let full = render::snapshot_diff_doc(diff);
    let (header, mut rest) = split_header(full);
    let verdict = take_verdict(&mut rest);
    out.push_str(&doc::render(&header, 0));
    out.push_str(&verdict_section(&verdict));
    let side = |before: bool| -> Vec<MetricReport> {
        diff.metrics
            .iter()
            .filter_map(|comparison| {
                let summary = if before {
                    comparison.before.clone()
                } else {
                    comparison.after.clone()
                }?;
                Some(MetricReport {
                    name: comparison.name.clone(),
                    unit: comparison.unit.clone(),
                    source: String::new(),
                    summary,
                })
            })
            .collect()
    };
    let (before, after) = (side(true), side(false));
    let period = |label: &str, metrics: &'_ [MetricReport]| {
        let start = metrics.iter().filter_map(|m| m.summary.first_time).min()?;
        let end = metrics.iter().filter_map(|m| m.summary.last_time).max()?;
        Some((label.to_string(), start, end.max(start)))
    };
    let mut periods = Vec::new();
    for (bound, metrics) in [
        (period(&diff.before.id, &before), &before),
        (period(&diff.after.id, &after), &after),
    ] {
        if let Some((label, start, end)) = bound {
            periods.push(Period {
                label,
                start,
                end,
                running: false,
                compared: true,
                metrics,
            });
        }
    }
    let metric_charts = charts::charts(&periods);
    if !metric_charts.is_empty() {
        out.push_str("<h2>Metrics, before and after</h2>\n");
        out.push_str(&metric_charts);
    }
    out.push_str(&doc::render(&rest, 0));
    out.push_str("</section>\n");
    out
}

/// The timeline page: launches as bars (each until the next launch), every event a marker,
/// then the text timeline.
pub fn timeline_section(timeline: &Timeline) -> String {
    let mut out = String::from("<section class=\"report\" id=\"timeline\">\n");
    let full = render::timeline_doc(timeline);
    let (header, rest) = split_header(full);
    out.push_str(&doc::render(&header, 0));
    let launches: Vec<(&probe_model::TimelineEvent, i64)> = timeline
        .events
        .iter()
        .filter(|event| event.kind == TimelineEventKind::Launch)
        .filter_map(|event| event_time(event).map(|at| (event, at)))
        .collect();
    let last = timeline.events.iter().filter_map(event_time).max();
    let mut bars = Vec::new();
    for (index, (event, at)) in launches.iter().enumerate() {
        let end = launches
            .get(index + 1)
            .map(|(_, next)| *next)
            .or(last)
            .unwrap_or(*at)
            .max(*at);
        let label = event
            .launch
            .and_then(|index| timeline.launches.get(index))
            .map(|launch| format!("{}:{}", launch.source.kind.as_str(), launch.source.location))
            .unwrap_or_else(|| event.summary.clone());
        bars.push(Bar {
            label,
            start: *at,
            end,
            running: event.running,
            title: format!(
                "{} ({}; until the next launch: the timeline does not know when it stopped)",
                event.summary,
                format_time(*at)
            ),
        });
    }
    let marks: Vec<Mark> = timeline
        .events
        .iter()
        .filter_map(|event| {
            event_time(event).map(|at| Mark {
                at,
                kind: mark_kind(event.kind),
                title: event.summary.clone(),
            })
        })
        .collect();
    if let Some(svg) = timeline::svg(&bars, &marks) {
        out.push_str(&figure(
            "Timeline",
            "timeline",
            Some((svg, timeline::legend(&marks))),
            "Launches as bars (the running one in dark blue), every event a marker; hover for \
             its evidence.",
        ));
    }
    out.push_str(&doc::render(&rest, 0));
    out.push_str("</section>\n");
    out
}
