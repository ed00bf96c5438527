//! Causes linked to symptoms: the mechanisms of `configs/impact.toml` in numbers, and changes
//! that happened between earlier runs whose metrics stayed the same (they do not explain the
//! slowdown).

use probe_model::{Change, ChangeKey, KeyArea, LaunchConfig, LaunchDiff, Snapshot};
use serde_json::Value;

use crate::analysis::Analysis;
use crate::compare::compare_runs;
use crate::impact::{Mechanism, rules, value_number};
use crate::number::number;
use crate::periods::{RunPeriod, ServerPoints, compare_launches_read, period_metrics};
use probe_launch::evidence_label;
use probe_model::civil::utc_minute as utc;

/// Relative change of throughput below which two runs "performed the same".
const SAME_THROUGHPUT: f64 = 0.1;
/// Lines of "does not explain" kept.
const MAX_NOT_EXPLAINING: usize = 10;

fn metric_means(diff: &LaunchDiff, name: &str) -> Option<(f64, f64)> {
    let m = diff.metrics.iter().find(|m| m.name == name)?;
    Some((m.before.as_ref()?.mean, m.after.as_ref()?.mean))
}

fn topk_of(launch: &LaunchConfig) -> Option<i64> {
    let speculative = launch.speculative.as_ref()?;
    speculative
        .eagle_topk
        .as_ref()
        .or_else(|| speculative.implied.get("eagle_topk"))
        .and_then(value_number)
        .map(|v| v as i64)
}

fn throughput_line(diff: &LaunchDiff, symptom: (f64, f64)) -> String {
    let Some((before, after)) = metric_means(diff, "gen_throughput")
        .or_else(|| metric_means(diff, "generation_throughput"))
    else {
        return String::new();
    };
    if before == 0.0 || symptom.0 == 0.0 {
        return String::new();
    }
    format!(
        "; the throughput ratio follows: {} -> {} tok/s is x{}, the ratio of the symptom is x{}",
        number(before),
        number(after),
        number(after / before),
        number(symptom.1 / symptom.0)
    )
}

fn mechanism_text(
    mechanism: &Mechanism,
    cause: &Change,
    diff: &LaunchDiff,
    after_launch: &LaunchConfig,
) -> Option<String> {
    if let Some(topk) = mechanism.when_topk
        && topk_of(after_launch) != Some(topk)
    {
        return None;
    }
    let (cause_before, cause_after) = crate::compare::effective_numbers(cause);
    let (cause_before, cause_after) = (cause_before?, cause_after?);
    let symptom = metric_means(diff, &mechanism.symptom)?;
    let cap = mechanism.cap(cause_after);
    // The symptom has to sit under the cap (a little slack for rounding in the logs).
    if symptom.1 > cap * 1.02 {
        return None;
    }
    Some(
        mechanism
            .explanation
            .replace("{before}", &number(cause_before))
            .replace("{after}", &number(cause_after))
            .replace("{cap}", &number(cap))
            .replace("{symptom}", &mechanism.symptom)
            .replace("{symptom_before}", &number(symptom.0))
            .replace("{symptom_after}", &number(symptom.1))
            .replace("{throughput}", &throughput_line(diff, symptom)),
    )
}

/// Sets [`Change::mechanism`] on the causes a rule links to a symptom in numbers.
pub(crate) fn link_mechanisms(diff: &mut LaunchDiff, after_launch: &LaunchConfig) {
    let texts: Vec<(usize, String)> = diff
        .changes
        .iter()
        .enumerate()
        .filter_map(|(index, cause)| {
            rules()
                .mechanism
                .iter()
                .filter(|m| {
                    m.cause == cause.key
                        || cause.startup_limit.as_ref().is_some_and(|limit| {
                            ChangeKey::name_in(&m.cause, KeyArea::Limit) == Some(limit)
                        })
                })
                .find_map(|m| mechanism_text(m, cause, diff, after_launch))
                .map(|text| (index, text))
        })
        .collect();
    for (index, text) in texts {
        if let Some(change) = diff.changes.get_mut(index) {
            change.mechanism = Some(text);
        }
    }
}

fn short(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::from("unset"),
    }
}

/// Changes between consecutive earlier runs whose throughput stayed the same: they do not
/// explain the slowdown. A cause of the current comparison that is among them gets a note.
/// Returns the lines, and the keys of the current causes found among them.
pub(crate) fn not_explaining(
    snapshot: &Snapshot,
    analysis: &Analysis,
    periods: &[RunPeriod],
    points: &ServerPoints,
    compared: (usize, usize),
    causes: &mut [Change],
) -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut held: Vec<String> = Vec::new();
    let throughput = |period: &RunPeriod| {
        let stats = period_metrics(points, period);
        ["gen_throughput", "generation_throughput"]
            .iter()
            .find_map(|name| stats.metrics.get(*name).map(|(_, s)| s.mean))
    };
    let with_metrics: Vec<(&RunPeriod, f64)> = periods
        .iter()
        .filter(|p| p.run != compared.1)
        .filter_map(|p| throughput(p).map(|t| (p, t)))
        .collect();
    for pair in with_metrics.windows(2) {
        let [(a, ta), (b, tb)] = pair else { continue };
        if (a.run, b.run) == compared || *ta == 0.0 || (tb / ta - 1.0).abs() >= SAME_THROUGHPUT {
            continue;
        }
        let (Some(la), Some(lb)) = (
            analysis.timeline.launches.get(a.launch),
            analysis.timeline.launches.get(b.launch),
        ) else {
            continue;
        };
        let mut changes = compare_launches_read(la, lb).changes;
        if let (Some(ra), Some(rb)) = (analysis.runs.get(a.run), analysis.runs.get(b.run)) {
            changes.extend(compare_runs(ra, rb));
        }
        crate::compare::fold_limits(&mut changes, la, lb);
        let _ = snapshot;
        for change in changes {
            let line = format!(
                "{}: {} -> {} between {} ({}) and {} ({}); gen_throughput stayed {} -> {} tok/s: \
                 does not explain the slowdown",
                change.key,
                short(change.before.as_ref()),
                short(change.after.as_ref()),
                evidence_label(la),
                utc(a.start),
                evidence_label(lb),
                utc(b.start),
                number(*ta),
                number(*tb)
            );
            for cause in causes.iter_mut().filter(|c| c.key == change.key) {
                if !held.contains(&cause.key) {
                    held.push(cause.key.clone());
                }
                let note = format!(
                    "also changed between earlier runs with the same throughput ({} -> {} tok/s)",
                    number(*ta),
                    number(*tb)
                );
                cause.note = Some(match cause.note.take() {
                    Some(n) => format!("{n}; {note}"),
                    None => note,
                });
            }
            if lines.len() < MAX_NOT_EXPLAINING && !lines.contains(&line) {
                lines.push(line);
            }
        }
    }
    (lines, held)
}
