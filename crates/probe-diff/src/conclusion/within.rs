//! Periods, not only runs: inside the running run, where its load or speed moved for a day or
//! more ([`crate::changepoint`]), or the period the user named good (`--baseline`), compared
//! with now as the verdict compares runs: like for like, the symptom, the causes (none when both
//! periods lie in one run: nothing changed in the launch or in what was in effect), and "the
//! load changed, not the server" when the speed at the same running count held.

use probe_model::{ComparedPeriod, Conclusion, LaunchConfig, LaunchDiff, Lead, Run, Snapshot};

use super::previous::{capacity, causes, layers};
use crate::analysis::Analysis;
use crate::baseline::Baseline;
use crate::changepoint::{ChangePoint, change_points};
use crate::explain;
use crate::number::number;
use crate::periods::{
    PeriodStats, RunPeriod, ServerPoints, compare_periods, idle_times, load_bands, load_note,
    period_metrics, run_periods, server_points,
};
use crate::ranking::rank;
use crate::verdict::{self, Evidence};
use probe_launch::evidence_label;
use probe_model::civil::utc_minute as utc;

/// Where a host report keeps this verdict.
const VERDICT_FIELD: &str = "vs_period.verdict";

/// One side of the comparison: a stretch of one server's time, the run it lies in, and why.
#[derive(Debug, Clone)]
pub(crate) struct Side {
    pub(crate) period: RunPeriod,
    pub(crate) why: String,
}

/// The running server of an analysis, its runs, its running run and its metric points.
pub(crate) struct Server<'a> {
    pub(crate) launch: &'a LaunchConfig,
    pub(crate) runs: Vec<RunPeriod>,
    pub(crate) current: RunPeriod,
    pub(crate) points: ServerPoints,
}

impl<'a> Server<'a> {
    pub(crate) fn running(snapshot: &Snapshot, analysis: &'a Analysis) -> Option<Server<'a>> {
        let timeline = &analysis.timeline;
        let running = timeline
            .events
            .iter()
            .find(|e| e.running && e.launch.is_some())?
            .launch?;
        let launch = timeline.launches.get(running)?;
        let runs = run_periods(snapshot, analysis, running);
        let current = runs.iter().rev().find(|p| p.launch == running)?.clone();
        let points = server_points(snapshot, timeline, launch);
        Some(Server {
            launch,
            runs,
            current,
            points,
        })
    }

    /// When each run started and ended, for a baseline to name one.
    pub(crate) fn spans(&self) -> Vec<crate::baseline::Span> {
        self.runs.iter().map(|r| (r.start, r.end)).collect()
    }

    /// The launch a period of this server ran, by evidence.
    pub(crate) fn launch_of(&self, analysis: &Analysis, period: &RunPeriod) -> Option<String> {
        analysis
            .timeline
            .launches
            .get(period.launch)
            .map(evidence_label)
    }

    /// The change points of the running run.
    pub(crate) fn change_points(&self) -> Vec<ChangePoint> {
        let idle = idle_times(&self.points, &self.current);
        change_points(&self.points, (self.current.start, self.current.end), &idle)
    }

    /// Now: the running run since its last change point (since its start without one), and
    /// after the baseline where the baseline reaches into it.
    pub(crate) fn now(&self, points: &[ChangePoint], after: Option<i64>) -> Side {
        let mut period = self.current.clone();
        let mut why = String::from("now: the running run since it started");
        if let Some(last) = points.last() {
            period.start = last.at;
            why = format!(
                "now: the running run since its last change point ({})",
                utc(last.at)
            );
        }
        if let Some(after) = after.filter(|a| *a > period.start) {
            period.start = after;
            why = format!("now: the running run after the baseline ({})", utc(after));
        }
        Side { period, why }
    }
}

/// "change point in running_reqs at 2026-11-24 09:00 (8.9 -> 25.4)".
fn change_text(point: &ChangePoint) -> String {
    format!(
        "change point in {} at {} ({} -> {})",
        point.metric,
        utc(point.at),
        number(point.before),
        number(point.after)
    )
}

/// The sides compared: the period the baseline names against now; else, with a change point in
/// the running run, the period before its last change point against the period since.
pub(crate) fn sides(
    server: &Server<'_>,
    baseline: Option<&Baseline>,
    collected_at: i64,
) -> Option<(Side, Side)> {
    let points = server.change_points();
    if let Some(baseline) = baseline {
        let why = format!("named by --baseline {}", baseline.text);
        let Some(resolved) = baseline.resolve(&server.spans(), collected_at) else {
            // Nothing it names exists: an empty period, so the report says so.
            let period = RunPeriod {
                start: collected_at,
                end: Some(collected_at),
                ..server.current.clone()
            };
            return Some((Side { period, why }, server.now(&points, None)));
        };
        let run = resolved
            .run
            .and_then(|index| server.runs.get(index).cloned())
            .unwrap_or_else(|| server.current.clone());
        let period = RunPeriod {
            start: resolved.start,
            end: Some(resolved.end),
            ..run
        };
        let now = server.now(&points, Some(resolved.end));
        return Some((Side { period, why }, now));
    }
    let last = points.last()?;
    let start = points
        .iter()
        .rev()
        .nth(1)
        .map_or(server.current.start, |p| p.at);
    let before = Side {
        period: RunPeriod {
            start,
            end: Some(last.at),
            ..server.current.clone()
        },
        why: format!("before the {}", change_text(last)),
    };
    let mut now = server.now(&points, None);
    now.why = format!("now: since the {}", change_text(last));
    Some((before, now))
}

/// The running run's period now against an earlier period of it (the one before its last change
/// point), or against the period `baseline` names (in this run or an earlier one): causes (none
/// inside one run), symptoms, load, verdict, and which periods were compared and why. `None`
/// when the running run has no change point and no baseline is given, or no metrics.
pub fn period_diff(
    snapshot: &Snapshot,
    analysis: &Analysis,
    baseline: Option<&Baseline>,
) -> Option<LaunchDiff> {
    let server = Server::running(snapshot, analysis)?;
    if server.points.is_empty() {
        return None;
    }
    let (before, after) = sides(&server, baseline, snapshot.collected_at)?;
    let runs = (
        analysis.runs.get(before.period.run),
        analysis.runs.get(after.period.run),
    );
    let before_launch = analysis
        .timeline
        .launches
        .get(before.period.launch)
        .unwrap_or(server.launch);
    let mut diff = if before.period.run == after.period.run {
        LaunchDiff::default()
    } else {
        causes(before_launch, server.launch, runs.0, runs.1)
    };
    diff.before = span(&before.period);
    diff.after = span(&after.period);
    diff.periods = vec![
        compared("before", &before, before_launch, runs.0),
        compared("after", &after, server.launch, runs.1),
    ];
    let stats = (
        period_metrics(&server.points, &before.period),
        period_metrics(&server.points, &after.period),
    );
    let judged = Judged {
        snapshot,
        server: &server,
        launches: (before_launch, server.launch),
        runs,
    };
    judged.symptoms((&before, &after), stats, &mut diff);
    Some(diff)
}

/// `2026-11-12 09:00 .. 2026-11-24 09:00`, `2026-11-24 09:00 .. now`.
fn span(period: &RunPeriod) -> String {
    let end = period.end.map_or_else(|| String::from("now"), utc);
    format!("{} .. {end}", utc(period.start))
}

fn compared(label: &str, side: &Side, launch: &LaunchConfig, run: Option<&Run>) -> ComparedPeriod {
    ComparedPeriod {
        label: label.to_string(),
        start: side.period.start,
        end: side.period.end,
        run_start: run.and_then(|r| r.start.at),
        launch: evidence_label(launch),
        why: side.why.clone(),
    }
}

/// What the verdict of two periods is drawn from.
struct Judged<'a> {
    snapshot: &'a Snapshot,
    server: &'a Server<'a>,
    launches: (&'a LaunchConfig, &'a LaunchConfig),
    runs: (Option<&'a Run>, Option<&'a Run>),
}

impl Judged<'_> {
    fn symptoms(
        &self,
        (before, after): (&Side, &Side),
        (before_stats, after_stats): (PeriodStats, PeriodStats),
        diff: &mut LaunchDiff,
    ) {
        let describe = |side: &Side, launch: &LaunchConfig| {
            format!("{} ran {}", evidence_label(launch), span(&side.period))
        };
        let before_text = describe(before, self.launches.0);
        let after_text = describe(after, self.launches.1);
        let same_run = before.period.run == after.period.run;
        diff.metrics_note = Some(if before_stats.metrics.is_empty() {
            format!("no metrics logged in the period compared with now ({before_text})")
        } else if after_stats.metrics.is_empty() {
            format!("no metrics logged since {}", utc(after.period.start))
        } else if same_run {
            format!(
                "means of two periods of one run ({} up since {}): {} vs {}",
                evidence_label(self.launches.1),
                utc(self.server.current.start),
                span(&before.period),
                span(&after.period)
            )
        } else {
            format!("means while {before_text} vs while {after_text}")
        });
        if same_run {
            diff.notes.push(String::from(
                "one run, one launch: nothing changed in the launch or in what was in effect \
                 between the two periods, so nothing is to restore",
            ));
        }
        let (comparisons, symptoms) = compare_periods(
            &before_stats.metrics,
            &after_stats.metrics,
            &span(&before.period),
            &span(&after.period),
        );
        if !before_stats.metrics.is_empty() && !after_stats.metrics.is_empty() {
            diff.load_note = load_note(&comparisons, before_stats.idle, after_stats.idle);
        }
        diff.metrics = comparisons;
        diff.symptoms = symptoms;
        rank(&mut diff.symptoms);
        if !same_run {
            explain::link_mechanisms(diff, self.launches.1);
        }
        let points = &self.server.points;
        let evidence = Evidence {
            metrics: &diff.metrics,
            before_period: before_text,
            after_period: after_text,
            capacity: (capacity(self.runs.0), capacity(self.runs.1)),
            layers: layers(self.runs.0, self.runs.1),
            bands: load_bands((points, &before.period), (points, &after.period)),
            field: String::from(VERDICT_FIELD),
            ..Evidence::default()
        };
        let mut verdict = verdict::judge(&mut diff.changes, &evidence);
        if !same_run
            && matches!(
                verdict.conclusion,
                Conclusion::Cause | Conclusion::Unexplained
            )
        {
            verdict.restore = Some(verdict::restore(
                self.snapshot,
                self.launches.0,
                self.launches.1,
                &diff.changes,
            ));
        }
        diff.verdict = Some(verdict);
    }
}

/// Which verdict a host report opens with: the period comparison when a baseline was named, when
/// there is no earlier run to compare with, or when the previous run found no cause while the
/// periods of this run differ (the load or the speed moved inside it); else the previous run's.
pub fn lead(
    previous: Option<&LaunchDiff>,
    period: Option<&LaunchDiff>,
    baseline: bool,
) -> Option<Lead> {
    let conclusion = |d: &LaunchDiff| d.verdict.as_ref().map(|v| v.conclusion);
    let Some(period) = period else {
        return previous.map(|_| Lead::PreviousLaunch);
    };
    let Some(previous) = previous else {
        return Some(Lead::Period);
    };
    let telling = !matches!(
        conclusion(period),
        None | Some(Conclusion::NoSlowdown | Conclusion::NotEnoughEvidence)
    );
    if baseline || (conclusion(previous) != Some(Conclusion::Cause) && telling) {
        Some(Lead::Period)
    } else {
        Some(Lead::PreviousLaunch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::Verdict;

    fn with(conclusion: Conclusion) -> LaunchDiff {
        LaunchDiff {
            verdict: Some(Verdict {
                conclusion,
                ..Verdict::default()
            }),
            ..LaunchDiff::default()
        }
    }

    #[test]
    fn the_more_telling_comparison_leads() {
        use Conclusion::*;
        // (previous, period, baseline given, lead)
        let cases = [
            (None, None, false, None),
            (Some(Cause), None, false, Some(Lead::PreviousLaunch)),
            (None, Some(LoadChanged), false, Some(Lead::Period)),
            (
                Some(Cause),
                Some(LoadChanged),
                false,
                Some(Lead::PreviousLaunch),
            ),
            (
                Some(NoSlowdown),
                Some(LoadChanged),
                false,
                Some(Lead::Period),
            ),
            (
                Some(NoSlowdown),
                Some(NoSlowdown),
                false,
                Some(Lead::PreviousLaunch),
            ),
            (Some(Cause), Some(NoSlowdown), true, Some(Lead::Period)),
        ];
        for (previous, period, baseline, want) in cases {
            let previous = previous.map(with);
            let period = period.map(with);
            assert_eq!(
                lead(previous.as_ref(), period.as_ref(), baseline),
                want,
                "{previous:?} {period:?} {baseline}"
            );
        }
    }
}
