//! The verdict in words: one sentence of what happened and why, and one line of what was ruled
//! out.

use probe_model::{Assessment, Change, Conclusion, SymptomKind, Verdict};

use super::config::config;
use super::symptoms::{held, metric_label, numbers, worsened};
use crate::number::number;

/// Ruled-out causes shown by name in the one line; the rest are counted.
const RULED_OUT_NAMED: usize = 4;

fn value(value: Option<&serde_json::Value>) -> String {
    match value {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => String::from("unset"),
    }
}

/// `key before -> after`.
pub(crate) fn cause_text(change: &Change) -> String {
    format!(
        "{} {} -> {}",
        change.key,
        change
            .default_before()
            .unwrap_or_else(|| value(change.before.as_ref())),
        change
            .default_after()
            .unwrap_or_else(|| value(change.after.as_ref()))
    )
}

/// One line naming what was ruled out and why, shortest reason first.
pub(crate) fn ruled_out(changes: &[Change]) -> String {
    let ruled: Vec<&Change> = changes
        .iter()
        .filter(|c| {
            c.verdict
                .as_ref()
                .is_some_and(|v| v.assessment == Assessment::RuledOut)
        })
        .collect();
    if ruled.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = ruled
        .iter()
        .map(|c| {
            let reason = c.verdict.as_ref().map(|v| v.reason.as_str()).unwrap_or("");
            let short = reason.split(':').next().unwrap_or(reason);
            format!("{} ({short})", cause_text(c))
        })
        .collect();
    format!(
        "ruled out: {}",
        probe_model::text::join_capped(&parts, RULED_OUT_NAMED, "; ")
    )
}

fn pct(change: f64) -> String {
    format!("{}%", number((change * 100.0).abs()))
}

fn symptom_text(verdict: &Verdict) -> String {
    let Some(symptom) = &verdict.symptom else {
        return String::new();
    };
    if symptom.kind != SymptomKind::Throughput {
        return latency_text(verdict);
    }
    let (Some(b), Some(a)) = (&symptom.before, &symptom.after) else {
        return String::new();
    };
    let direction = if a.mean < b.mean { "fell" } else { "rose" };
    let change = if b.mean > 0.0 {
        a.mean / b.mean - 1.0
    } else {
        0.0
    };
    format!(
        "{} {direction} {} ({} -> {} {})",
        symptom.metric,
        pct(change),
        number(b.mean),
        number(a.mean),
        symptom.unit
    )
}

/// `TTFT p90 rose 375% (400 -> 1900 ms) at the same request rate and prompt length (8 req/s,
/// 1024 tokens); decode speed (time per output token) unchanged (TPOT p50 21 -> 22 ms)`.
fn latency_text(verdict: &Verdict) -> String {
    let Some(symptom) = &verdict.symptom else {
        return String::new();
    };
    let Some((b, a)) = super::symptoms::means(symptom) else {
        return String::new();
    };
    let direction = if a < b { "fell" } else { "rose" };
    let change = if b > 0.0 { a / b - 1.0 } else { 0.0 };
    let mut text = format!(
        "{} {direction} {} ({} -> {} {}){}",
        metric_label(symptom),
        pct(change),
        number(b),
        number(a),
        symptom.unit,
        super::workload::text(config(), verdict)
    );
    for other in verdict.symptoms.iter().filter(|s| s.kind != symptom.kind) {
        let state = if held(config(), other) {
            "unchanged"
        } else if worsened(config(), other) {
            "also worse"
        } else {
            "better"
        };
        text.push_str(&format!(
            "; {} {state} ({})",
            other.kind.label(),
            numbers(other)
        ));
    }
    text
}

fn measure(verdict: &Verdict, name: &str) -> Option<(f64, f64)> {
    let m = verdict.load.measures.iter().find(|m| m.name == name)?;
    Some((m.before?, m.after?))
}

fn load_text(verdict: &Verdict) -> String {
    let running = measure(verdict, "running requests");
    let per = measure(verdict, "throughput per request");
    let mut text = String::from("the load changed, not the server");
    if let Some((b, a)) = running
        && b > 0.0
    {
        text.push_str(&format!(
            ": x{} as many requests run at once ({} -> {})",
            number(a / b),
            number(b),
            number(a)
        ));
    }
    if let Some((b, a)) = per {
        text.push_str(&format!(
            ", so per-request speed went {} -> {} tok/s",
            number(b),
            number(a)
        ));
    }
    if let Some(symptom) = verdict.symptom.as_ref()
        && let (Some(b), Some(a)) = (&symptom.before, &symptom.after)
    {
        let word = if a.mean >= b.mean { "rose" } else { "went" };
        text.push_str(&format!(
            " while the aggregate {word} {} -> {} {}",
            number(b.mean),
            number(a.mean),
            symptom.unit
        ));
    }
    if let Some(band) = &verdict.load.band {
        text.push_str(&format!("; compared at the same load: {band}"));
    }
    text
}

/// One sentence: what happened and why.
pub(crate) fn headline(changes: &[Change], verdict: &Verdict) -> String {
    let symptom = symptom_text(verdict);
    match verdict.conclusion {
        Conclusion::Cause => {
            let cause = changes
                .iter()
                .find(|c| Some(&c.key) == verdict.cause.as_ref())
                .map(cause_text)
                .unwrap_or_default();
            let with: Vec<String> = changes
                .iter()
                .filter(|c| Some(&c.key) != verdict.cause.as_ref())
                .filter(|c| {
                    c.verdict
                        .as_ref()
                        .is_some_and(|v| v.assessment == Assessment::Explains)
                })
                .map(cause_text)
                .collect();
            if with.is_empty() {
                format!("{symptom}: {cause} explains it")
            } else {
                format!("{symptom}: {cause} explains it (with {})", with.join(", "))
            }
        }
        Conclusion::LoadChanged => load_text(verdict),
        Conclusion::NoSlowdown => format!("no slowdown: {symptom}"),
        Conclusion::Unexplained => format!(
            "{symptom}; nothing tested explains it, {} candidate cause(s) remain consistent",
            verdict.consistent
        ),
        Conclusion::NotEnoughEvidence => String::from(
            "the runs' throughput could not be compared (no throughput logged by both): the \
             causes below are untested",
        ),
    }
}
