//! The verdict block every report opens with, and the candidate causes grouped by what testing
//! them against the symptoms found (explains, consistent, ruled out).

use probe_model::{
    Assessment, Change, Conclusion, Impact, MetricSummary, Verdict, VerdictConfidence,
};

use super::changes::{
    category_label, change_summary, changes_table, consequence_why, impact_label,
};
use super::doc::{Doc, Tone};
use super::format_time;
use super::metrics::number;

/// Causes shown in the human and Markdown tables; JSON has all.
pub(super) const MAX_CAUSES_SHOWN: usize = 10;

fn tone(verdict: &Verdict) -> Tone {
    match verdict.conclusion {
        Conclusion::Cause | Conclusion::Unexplained => Tone::Bad,
        Conclusion::LoadChanged => Tone::Warn,
        Conclusion::NoSlowdown => Tone::Good,
        Conclusion::NotEnoughEvidence => Tone::Dim,
    }
}

fn side(summary: &MetricSummary) -> String {
    let period = match (summary.first_time, summary.last_time) {
        (Some(first), Some(last)) => format!(", {} .. {}", format_time(first), format_time(last)),
        _ => String::new(),
    };
    format!(
        "mean {} (n={}, {} .. {}{period})",
        number(summary.mean),
        summary.count,
        number(summary.min),
        number(summary.max)
    )
}

fn symptom_fields(verdict: &Verdict, fields: &mut Vec<(String, String)>) {
    let Some(symptom) = &verdict.symptom else {
        return;
    };
    let (Some(b), Some(a)) = (&symptom.before, &symptom.after) else {
        return;
    };
    fields.push((
        "symptom".into(),
        format!("{} ({})", symptom.metric, symptom.unit),
    ));
    fields.push((
        "  before".into(),
        format!("{} while {}", side(b), symptom.before_period),
    ));
    fields.push((
        "  after".into(),
        format!("{} while {}", side(a), symptom.after_period),
    ));
}

fn confidence_label(confidence: VerdictConfidence) -> &'static str {
    confidence.as_str()
}

/// The block a report opens with: what happened, like for like or not, the cause and its
/// mechanism, what was ruled out, how sure, what would restore it, and where the JSON holds it.
pub(super) fn section(doc: &mut Doc, verdict: &Verdict) {
    doc.heading(2, "Verdict");
    doc.line(tone(verdict), format!("  {}", verdict.headline));
    let mut fields = Vec::new();
    symptom_fields(verdict, &mut fields);
    if !verdict.load.summary.is_empty() {
        fields.push(("load".into(), verdict.load.summary.clone()));
    }
    if let Some(band) = &verdict.load.band {
        fields.push(("same load".into(), band.clone()));
    }
    for line in &verdict.load.benchmarks {
        fields.push(("measured".into(), line.clone()));
    }
    if let (Some(cause), Some(mechanism)) = (&verdict.cause, &verdict.mechanism) {
        fields.push(("cause".into(), format!("{cause}: {mechanism}")));
    }
    if !verdict.ruled_out.is_empty() {
        fields.push(("ruled out".into(), verdict.ruled_out.clone()));
    }
    fields.push((
        "confidence".into(),
        format!(
            "{} ({})",
            confidence_label(verdict.confidence),
            verdict.confidence_reason
        ),
    ));
    fields.push((
        "causes".into(),
        format!(
            "{} explain, {} consistent, {} ruled out (JSON: {})",
            verdict.explains, verdict.consistent, verdict.ruled_out_count, verdict.field
        ),
    ));
    doc.fields(fields);
    restore(doc, verdict);
}

fn restore(doc: &mut Doc, verdict: &Verdict) {
    let Some(restore) = &verdict.restore else {
        return;
    };
    doc.line(
        Tone::Plain,
        format!("  To restore the earlier launch ({}):", restore.source),
    );
    // The launch as a command only where the plan has no steps of its own: beside a launcher
    // (a unit, a compose service) a hand-run command would start a second server.
    if restore.plan.steps.is_empty()
        && let Some(text) = &restore.launch_text
    {
        doc.code(text.clone());
    }
    if !restore.differing.is_empty() {
        doc.line(
            Tone::Warn,
            format!("    differs from now: {}", restore.differing.join(", ")),
        );
    }
    if let Some(pins) = &restore.pins {
        doc.line(Tone::Plain, "  and the packages it ran with:");
        doc.code(pins.clone());
    }
    // The rollback plan's steps, as `probe diff --rollback` words them.
    for (i, step) in restore.steps.iter().enumerate() {
        doc.line(Tone::Plain, format!("    {}. {step}", i + 1));
    }
    doc.line(
        Tone::Dim,
        "    (probe only prints these; it runs nothing on the host)",
    );
}

fn group_label(assessment: Option<Assessment>) -> &'static str {
    match assessment {
        Some(a) => a.as_str(),
        None => "-",
    }
}

fn group_tone(assessment: Option<Assessment>) -> Tone {
    match assessment {
        Some(Assessment::Explains) => Tone::Bad,
        Some(Assessment::Consistent) => Tone::Warn,
        Some(Assessment::RuledOut) | None => Tone::Dim,
    }
}

/// Why, for the table: the test's reason with what is missing, else the rule's explanation.
fn why(change: &Change) -> String {
    match &change.verdict {
        Some(v) if !v.missing.is_empty() => {
            format!("{} (missing: {})", v.reason, v.missing.join("; "))
        }
        Some(v) => v.reason.clone(),
        None => change.explanation.clone(),
    }
}

/// The candidate causes grouped: explains, consistent, ruled out; the first
/// [`MAX_CAUSES_SHOWN`], then the counts of the rest.
pub(super) fn cause_groups(doc: &mut Doc, changes: &[Change]) {
    let causes: Vec<&Change> = changes.iter().filter(|c| c.verdict.is_some()).collect();
    if causes.is_empty() {
        doc.line(Tone::Good, "  no candidate causes");
        return;
    }
    // Each cause shown, with the values the engine resolved from it right under it.
    let mut rows = Vec::new();
    let mut shown = 0;
    let mut under_shown = false;
    for change in changes {
        if change.verdict.is_some() {
            under_shown = shown < MAX_CAUSES_SHOWN;
            if !under_shown {
                continue;
            }
            shown += 1;
            let assessment = change.verdict.as_ref().map(|v| v.assessment);
            rows.push((
                group_tone(assessment),
                vec![
                    group_label(assessment).to_string(),
                    impact_label(change.impact).to_string(),
                    category_label(change),
                    change_summary(change),
                    why(change),
                ],
            ));
        } else if !change.consequence_of.is_empty() && under_shown {
            rows.push((
                Tone::Dim,
                vec![
                    String::from("consequence"),
                    impact_label(change.impact).to_string(),
                    category_label(change),
                    format!("-> {}", change_summary(change)),
                    consequence_why(change),
                ],
            ));
        } else {
            under_shown = false;
        }
    }
    doc.table(
        ["verdict", "impact", "area", "change", "why"]
            .map(String::from)
            .to_vec(),
        rows,
    );
    if causes.len() > MAX_CAUSES_SHOWN {
        let rest = &causes[MAX_CAUSES_SHOWN..];
        let count = |a: Assessment| {
            rest.iter()
                .filter(|c| c.verdict.as_ref().is_some_and(|v| v.assessment == a))
                .count()
        };
        doc.line(
            Tone::Dim,
            format!(
                "  ... {}: {} consistent, {} ruled out (--format json for all)",
                probe_model::text::and_more(rest.len()),
                count(Assessment::Consistent),
                count(Assessment::RuledOut)
            ),
        );
    }
}

/// The causes grouped by their verdicts where they have them, else the changes ranked by rule;
/// the symptoms a snapshot diff also lists (metrics) follow the causes.
pub(super) fn changes_or_causes(doc: &mut Doc, changes: &[Change], limit: usize) {
    if !changes.iter().any(|c| c.verdict.is_some()) {
        changes_table(doc, changes, limit);
        return;
    }
    cause_groups(doc, changes);
    let symptoms: Vec<Change> = changes
        .iter()
        .filter(|c| c.verdict.is_none() && c.impact != Impact::None && c.consequence_of.is_empty())
        .cloned()
        .collect();
    if !symptoms.is_empty() {
        doc.line(Tone::Plain, "  Metrics that moved (symptoms, not causes):");
        changes_table(doc, &symptoms, limit);
    }
}

#[cfg(test)]
mod tests {
    use probe_diff::{Evidence, judge};
    use probe_model::{Category, Impact, MetricComparison, Restore, SnapshotDiff, SnapshotRef};
    use serde_json::json;

    use super::*;
    use crate::output::Styles;
    use crate::render::{human, markdown};

    fn metric(name: &str, before: (f64, f64), after: (f64, f64)) -> MetricComparison {
        let summary = |(mean, max): (f64, f64)| MetricSummary {
            count: 120,
            mean,
            min: mean.min(max),
            max,
            first_time: Some(1_795_168_898),
            last_time: Some(1_795_174_318),
            ..MetricSummary::default()
        };
        MetricComparison {
            name: name.into(),
            unit: "tok/s".into(),
            before: Some(summary(before)),
            after: Some(summary(after)),
            change: Some(after.0 / before.0 - 1.0),
        }
    }

    fn cause(key: &str, category: Category, impact: Impact, b: i64, a: i64) -> Change {
        Change {
            key: key.into(),
            category,
            impact,
            before: Some(json!(b)),
            after: Some(json!(a)),
            explanation: format!("{key} changed"),
            ..Change::default()
        }
    }

    /// The project's story, judged as `probe host` judges it.
    fn story() -> (Vec<Change>, Verdict) {
        let mut steps = cause(
            "speculative.num_steps",
            Category::SpeculativeDecoding,
            Impact::Medium,
            3,
            1,
        );
        steps.mechanism = Some(
            "with EAGLE/NEXTN chains and topk 1 the accept length is at most num_steps + 1: 3 \
             -> 1 steps caps it at 2, which matches 2.81 -> 1.74"
                .into(),
        );
        let mut changes = vec![
            cause(
                "limit:max_running_requests",
                Category::BatchingScheduling,
                Impact::High,
                4,
                1,
            ),
            cause(
                "limit:max_total_num_tokens",
                Category::MemoryKvCache,
                Impact::High,
                61_440,
                19_456,
            ),
            steps,
        ];
        let metrics = [
            metric("gen_throughput", (69.93, 71.95), (36.92, 38.94)),
            metric("accept_len", (2.81, 2.86), (1.74, 1.78)),
            metric("running_reqs", (1.0, 1.0), (1.0, 1.0)),
            metric("queue_reqs", (0.0, 0.0), (0.0, 0.0)),
            metric("token_usage", (0.015, 0.02), (0.015, 0.02)),
        ];
        let evidence = Evidence {
            metrics: &metrics,
            before_period: "history:/root/.bash_history#1 (up from 2026-11-20 10:00 UTC)".into(),
            after_period: "pid:32 (running now)".into(),
            capacity: (Some(61_440.0), Some(19_456.0)),
            field: "vs_previous_launch.verdict".into(),
            ..Evidence::default()
        };
        let mut verdict = judge(&mut changes, &evidence);
        verdict.restore = Some(Restore {
            source: "history:/root/.bash_history#1".into(),
            launch_text: Some(
                "/opt/venvs/sglang/bin/python3 -m sglang.launch_server --speculative-num-steps 3 \
                 --max-running-requests 4"
                    .into(),
            ),
            differing: vec![
                "--speculative-num-steps 3".into(),
                "--max-running-requests 4".into(),
            ],
            pins: Some("/opt/venvs/sglang/bin/python3 -m pip install sglang==0.5.8".into()),
            steps: Vec::new(),
            plan: probe_model::RollbackPlan::default(),
        });
        (changes, verdict)
    }

    fn doc() -> Doc {
        let (changes, verdict) = story();
        let mut doc = Doc::default();
        section(&mut doc, &verdict);
        cause_groups(&mut doc, &changes);
        doc
    }

    #[test]
    fn verdict_and_cause_groups_human() {
        insta::assert_snapshot!(human::render(&doc(), Styles::new(false)));
    }

    #[test]
    fn verdict_and_cause_groups_markdown() {
        insta::assert_snapshot!(markdown::render(&doc()));
    }

    #[test]
    fn rollback_checklist() {
        let diff = SnapshotDiff {
            before: SnapshotRef {
                id: "gpu7-a".into(),
                host: "gpu7".into(),
                collected_at: 0,
                ..SnapshotRef::default()
            },
            after: SnapshotRef {
                id: "gpu7-b".into(),
                host: "gpu7".into(),
                collected_at: 0,
                ..SnapshotRef::default()
            },
            rollback: vec![
                "flag: restore --speculative-num-steps 3".into(),
                "flag: drop --max-running-requests 1".into(),
                "packages: pip install sglang==0.5.8".into(),
                "power: nvidia-smi -i 1 -pl 700".into(),
            ],
            ..SnapshotDiff::default()
        };
        let doc = crate::render::rollback_doc(&diff);
        insta::assert_snapshot!(human::render(&doc, Styles::new(false)));
    }
}
