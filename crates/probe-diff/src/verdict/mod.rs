//! The verdict: every candidate cause tested against the symptoms, ranked by what the test found
//! (explains, consistent, ruled out; the static impact only breaks ties), and the conclusion a
//! report opens with: the symptom in numbers, like for like or not, the best-supported cause and
//! its mechanism, what was ruled out, how sure, and what would restore the earlier speed.
//!
//! Tests and tolerances are data: `configs/verdict.toml`.

mod checks;
mod collective;
mod config;
mod ctx;
mod graphs;
mod headline;
mod latency;
mod load;
pub(crate) mod restore;
mod symptoms;
mod workload;

use probe_model::{
    Assessment, Category, Change, Conclusion, Impact, MetricComparison, Symptom, SymptomKind,
    Verdict, VerdictConfidence,
};

pub use config::{VerdictConfig, config, named};
pub use load::{Band, Layers, Shape};
pub(crate) use restore::restore;

use load::{Capacities, both};

/// What the verdict is drawn from, besides the causes.
#[derive(Debug, Clone, Default)]
pub struct Evidence<'a> {
    /// The metrics of the two runs (or snapshots) compared.
    pub metrics: &'a [MetricComparison],
    /// How the report names the two periods.
    pub before_period: String,
    pub after_period: String,
    /// The KV capacity in tokens each run had (start-up limits).
    pub capacity: Capacities,
    /// The prefill token budget each run's engine resolved at start-up (start-up limits).
    pub prefill_budget: (Option<f64>, Option<f64>),
    /// The layers each run had on the GPU (start-up limits).
    pub layers: Layers,
    /// Throughput samples by running-request count, for a band comparison.
    pub bands: Vec<Band>,
    /// Cause keys that also changed between earlier runs whose throughput held.
    pub held_across: Vec<String>,
    /// The model's layers and hidden size, and each side's tensor-parallel size.
    pub shape: Shape,
    /// The JSON field the verdict is written to.
    pub field: String,
}

/// Tests every cause of `changes` against the evidence (setting [`Change::verdict`]), ranks them
/// by what the tests found, and draws the verdict.
pub fn judge(changes: &mut [Change], evidence: &Evidence<'_>) -> Verdict {
    // A value the engine resolved from another change here is that change's consequence, not
    // a cause to judge.
    crate::consequence::link(changes);
    let config = config();
    let throughput = both(
        evidence.metrics,
        config.symptom_metrics(SymptomKind::Throughput),
    );
    let mut load = load::compare(config, evidence.metrics, evidence.capacity, &evidence.bands);
    load.measures
        .extend(workload::measures(config, evidence.metrics));
    let periods = (
        evidence.before_period.as_str(),
        evidence.after_period.as_str(),
    );
    let compared = symptoms::compared(config, evidence.metrics, periods);
    let throughput_fell = throughput.is_some_and(|(_, b, a)| {
        fell(config, (b.mean, a.mean))
            || load.like_for_like == Some(false)
                && per_request_of(&load).is_some_and(|p| fell(config, p))
    });
    let symptom = symptoms::primary(config, &compared, throughput_fell);
    let ctx = ctx::Ctx {
        config,
        metrics: evidence.metrics,
        throughput: throughput.map(|(_, b, a)| (b.mean, a.mean)),
        capacity: evidence.capacity,
        held_across: &evidence.held_across,
        band_throughput: load.band_throughput,
        layers: evidence.layers,
        symptom: symptom.as_ref(),
        symptoms: &compared,
        prefill_budget: evidence.prefill_budget,
        shape: evidence.shape,
    };
    for change in changes.iter_mut().filter(|c| is_cause(c)) {
        change.verdict = Some(checks::assess(change, &ctx));
    }
    rank_by_verdict(changes);
    let mut verdict = Verdict {
        symptom,
        symptoms: compared,
        load,
        field: evidence.field.clone(),
        ..Verdict::default()
    };
    count(changes, &mut verdict);
    verdict.conclusion = conclusion(changes, &verdict);
    let best = changes
        .iter()
        .find(|c| assessment(c) == Some(Assessment::Explains));
    if verdict.conclusion == Conclusion::Cause
        && let Some(best) = best
    {
        verdict.cause = Some(best.key.clone());
        verdict.mechanism = best.verdict.as_ref().map(|v| v.reason.clone());
        not_needed(changes, &best.key.clone());
    }
    (verdict.confidence, verdict.confidence_reason) = confidence(changes, &verdict);
    verdict.ruled_out = headline::ruled_out(changes);
    verdict.headline = headline::headline(changes, &verdict);
    verdict
}

/// A candidate cause: ranked above `none`, not a symptom (a metric that moved), and not the
/// consequence of another change (a value the engine resolved from it).
fn is_cause(change: &Change) -> bool {
    change.impact != Impact::None
        && change.category != Category::Metrics
        && change.consequence_of.is_empty()
}

fn assessment(change: &Change) -> Option<Assessment> {
    change.verdict.as_ref().map(|v| v.assessment)
}

/// Explains first, then consistent, then ruled out; causes without a verdict (impact `none`)
/// last; inside each group the order `rank` gave.
fn rank_by_verdict(changes: &mut [Change]) {
    crate::ranking::rank(changes);
    // Inside "explains", a cause whose own mechanism predicts the numbers comes first.
    changes.sort_by_key(|c| match assessment(c) {
        Some(a) => (a as u8, c.mechanism.is_none()),
        None => (u8::MAX, true),
    });
    // A consequence has no verdict of its own: it goes back under its cause.
    crate::consequence::place(changes);
}

fn count(changes: &[Change], verdict: &mut Verdict) {
    for change in changes {
        match assessment(change) {
            Some(Assessment::Explains) => verdict.explains += 1,
            Some(Assessment::Consistent) => verdict.consistent += 1,
            Some(Assessment::RuledOut) => verdict.ruled_out_count += 1,
            None => {}
        }
    }
}

/// The consistent causes once another explains the change: still possible, not needed.
fn not_needed(changes: &mut [Change], best: &str) {
    for change in changes.iter_mut() {
        if let Some(v) = change.verdict.as_mut()
            && v.assessment == Assessment::Consistent
        {
            v.reason = format!("{}; not needed: {best} explains the change", v.reason);
        }
    }
}

fn per_request(verdict: &Verdict) -> Option<(f64, f64)> {
    per_request_of(&verdict.load)
}

fn per_request_of(load: &probe_model::LoadComparison) -> Option<(f64, f64)> {
    let m = load
        .measures
        .iter()
        .find(|m| m.name == "throughput per request")?;
    Some((m.before?, m.after?))
}

fn fell(config: &VerdictConfig, (before, after): (f64, f64)) -> bool {
    before > 0.0 && after / before <= 1.0 - config.held
}

fn conclusion(changes: &[Change], verdict: &Verdict) -> Conclusion {
    let config = config();
    let Some(symptom) = &verdict.symptom else {
        return Conclusion::NotEnoughEvidence;
    };
    let (Some(before), Some(after)) = (&symptom.before, &symptom.after) else {
        return Conclusion::NotEnoughEvidence;
    };
    if symptom.kind != SymptomKind::Throughput {
        return latency_conclusion(changes, verdict, symptom);
    }
    let aggregate_fell = fell(config, (before.mean, after.mean));
    let per_request_fell = per_request(verdict).is_some_and(|p| fell(config, p));
    let load_differs = verdict.load.like_for_like == Some(false);
    let band_held = verdict
        .load
        .band_throughput
        .is_some_and(|p| !fell(config, p));
    if !(aggregate_fell || per_request_fell && load_differs) {
        return Conclusion::NoSlowdown;
    }
    if aggregate_fell
        && changes
            .iter()
            .any(|c| assessment(c) == Some(Assessment::Explains))
    {
        return Conclusion::Cause;
    }
    let open = changes
        .iter()
        .any(|c| assessment(c) == Some(Assessment::Consistent));
    // Fewer requests at once, each as fast or faster: the aggregate fell with the demand.
    let per_request_held = per_request(verdict).is_some_and(|p| !fell(config, p));
    if load_differs && (!open || band_held || !aggregate_fell || per_request_held) {
        return Conclusion::LoadChanged;
    }
    Conclusion::Unexplained
}

/// The conclusion on a latency or queue symptom: worse and explained, worse at another workload
/// (the load changed), worse and unexplained, or not worse.
fn latency_conclusion(changes: &[Change], verdict: &Verdict, symptom: &Symptom) -> Conclusion {
    if !symptoms::worsened(config(), symptom) {
        return Conclusion::NoSlowdown;
    }
    if changes
        .iter()
        .any(|c| assessment(c) == Some(Assessment::Explains))
    {
        return Conclusion::Cause;
    }
    let open = changes
        .iter()
        .any(|c| assessment(c) == Some(Assessment::Consistent));
    // The queue a latency rise brings is its effect, not load: the workload decides, and only
    // where no benchmark gives it, the running requests and KV usage.
    let load_differs = match workload::same(config(), verdict) {
        Some(same) => !same,
        None => !open && verdict.load.like_for_like == Some(false),
    };
    if load_differs {
        return Conclusion::LoadChanged;
    }
    Conclusion::Unexplained
}

/// Whether every cause that explains was held to the same test (speculative settings that
/// moved together, say): one change of one mechanism, not rivals.
fn one_family(changes: &[Change]) -> bool {
    let mut tests = changes
        .iter()
        .filter_map(|c| c.verdict.as_ref())
        .filter(|v| v.assessment == Assessment::Explains)
        .map(|v| v.test.as_str());
    let first = tests.next();
    tests.all(|t| Some(t) == first)
}

/// How sure, and why: the samples behind the symptom, like for like or not, how many causes
/// explain it.
fn confidence(changes: &[Change], verdict: &Verdict) -> (VerdictConfidence, String) {
    let config = config();
    let samples = verdict
        .symptom
        .as_ref()
        .and_then(|s| Some(s.before.as_ref()?.count.min(s.after.as_ref()?.count)))
        .unwrap_or(0);
    let few = samples < config.min_samples;
    let like = verdict.load.like_for_like;
    let band = verdict.load.band.is_some();
    if let Some(symptom) = verdict
        .symptom
        .as_ref()
        .filter(|s| s.metric.ends_with("(bench)"))
    {
        return benchmark_confidence(changes, verdict, symptom, samples);
    }
    match verdict.conclusion {
        Conclusion::NotEnoughEvidence => (
            VerdictConfidence::Low,
            String::from("the runs' throughput could not be compared"),
        ),
        _ if samples < 2 => (
            VerdictConfidence::Low,
            format!("only {samples} throughput sample(s) on one side"),
        ),
        Conclusion::Cause if verdict.explains > 1 && !one_family(changes) => (
            VerdictConfidence::Medium,
            format!(
                "{} causes each explain the change; they are not told apart",
                verdict.explains
            ),
        ),
        Conclusion::Cause | Conclusion::NoSlowdown if few => (
            VerdictConfidence::Medium,
            format!("few samples: {samples} on the thinner side"),
        ),
        Conclusion::Cause | Conclusion::NoSlowdown if like == Some(true) => (
            VerdictConfidence::High,
            format!("like for like, {samples}+ samples a side, the numbers match the mechanism"),
        ),
        Conclusion::Cause | Conclusion::NoSlowdown => (
            VerdictConfidence::Medium,
            String::from("the load was not like for like (or not logged)"),
        ),
        Conclusion::LoadChanged if band => (
            VerdictConfidence::High,
            String::from("at the same running-request count the runs were as fast"),
        ),
        Conclusion::LoadChanged => (
            VerdictConfidence::Medium,
            String::from("no load band both runs share to compare speed at the same load"),
        ),
        Conclusion::Unexplained => (VerdictConfidence::Low, unexplained(verdict.consistent)),
    }
}

/// The confidence line where nothing explains the change: the causes left are the headline's
/// "consistent" ones, which no logged number tested.
fn unexplained(consistent: usize) -> String {
    format!(
        "nothing tested explains the change; {consistent} cause(s) remain consistent, untested by \
         any logged number"
    )
}

/// How sure, where the symptom comes from benchmark results: each is a measured run of many
/// requests at a known workload, so one a side is evidence, not a sample; the same workload on
/// both sides makes it like for like.
fn benchmark_confidence(
    changes: &[Change],
    verdict: &Verdict,
    symptom: &Symptom,
    samples: u64,
) -> (VerdictConfidence, String) {
    let same = workload::same(config(), verdict);
    let what = format!(
        "{samples} benchmark result(s) a side for {}",
        symptom.kind.label()
    );
    match (verdict.conclusion, same) {
        (Conclusion::NotEnoughEvidence, _) => (
            VerdictConfidence::Low,
            String::from("the runs could not be compared"),
        ),
        (Conclusion::Cause, _) if verdict.explains > 1 && !one_family(changes) => (
            VerdictConfidence::Medium,
            format!(
                "{} causes each explain the change; they are not told apart",
                verdict.explains
            ),
        ),
        (Conclusion::Cause | Conclusion::NoSlowdown, Some(true)) if samples >= 2 => (
            VerdictConfidence::High,
            format!("{what} at the same workload; the numbers match the mechanism"),
        ),
        (Conclusion::Cause | Conclusion::NoSlowdown, Some(true)) => (
            VerdictConfidence::Medium,
            format!("{what} at the same workload: one measurement each side"),
        ),
        (Conclusion::LoadChanged, Some(false)) => (
            VerdictConfidence::Medium,
            format!("{what}, at different workloads"),
        ),
        (Conclusion::Unexplained, _) => (VerdictConfidence::Low, unexplained(verdict.consistent)),
        _ => (
            VerdictConfidence::Low,
            format!("{what}; the workloads are not known to match"),
        ),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod collective_tests;
