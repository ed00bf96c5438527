//! The verdict block every report opens with, and the candidate causes grouped by what testing
//! them against the symptoms found (explains, consistent, ruled out).

use probe_model::{Assessment, Change, Conclusion, MetricSummary, Verdict, VerdictConfidence};

use super::doc::{Doc, Tone};
use super::{category_label, change_summary, format_time, number};

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
    if let Some(text) = &restore.launch_text {
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
    for step in &restore.steps {
        doc.line(Tone::Plain, format!("    then: {step}"));
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
    let rows = causes
        .iter()
        .take(MAX_CAUSES_SHOWN)
        .map(|change| {
            let assessment = change.verdict.as_ref().map(|v| v.assessment);
            (
                group_tone(assessment),
                vec![
                    group_label(assessment).to_string(),
                    super::impact_label(change.impact).to_string(),
                    category_label(change),
                    change_summary(change),
                    why(change),
                ],
            )
        })
        .collect();
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
                "  ... and {} more: {} consistent, {} ruled out (--format json for all)",
                rest.len(),
                count(Assessment::Consistent),
                count(Assessment::RuledOut)
            ),
        );
    }
}
