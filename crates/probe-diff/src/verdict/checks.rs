//! One cause held against the symptoms: the test `configs/verdict.toml` gives it, with the numbers
//! it used. A limit matters only where it binds; speculative settings are held against accept
//! length; hardware against what was sampled of the run; versions and the rest stay consistent
//! unless runs on both sides of them performed the same.

use probe_model::{Assessment, CauseVerdict, Change, ChangeKind, MetricSummary, SymptomKind};

use super::config::{Test, named};
use super::ctx::{Ctx, Finding, values};
use super::load::both;
use crate::number::number;

/// Holds one cause against the symptoms.
pub(crate) fn assess(change: &Change, ctx: &Ctx<'_>) -> CauseVerdict {
    let (test, missing, explains) = match ctx.config.check_for(&change.key) {
        Some(check) => (
            check.test,
            check.missing.as_slice(),
            check.explains.as_slice(),
        ),
        None => (Test::Other, &[][..], &[][..]),
    };
    let kind = ctx.symptom.map(|s| s.kind).unwrap_or_default();
    if !explains.is_empty() && !explains.contains(&kind) {
        return super::latency::outside(test, ctx, Finding::new(test), explains);
    }
    if kind != SymptomKind::Throughput {
        return super::latency::assess(change, test, ctx, Finding::new(test), missing);
    }
    if let Some(verdict) = common(change, test, ctx) {
        return verdict;
    }
    let finding = Finding::new(test);
    match test {
        Test::RunningCap => running_cap(change, ctx, finding, missing),
        // Against throughput, a prefill budget matters as the KV capacity does: by how many
        // requests it lets run at once where the cache fills.
        Test::KvCapacity | Test::PrefillBudget => kv_capacity(change, ctx, finding, missing),
        Test::Speculative => speculative(change, ctx, finding, missing),
        Test::GpuLayers => gpu_layers(ctx, finding, missing),
        Test::Resident => resident(ctx, finding, missing),
        Test::KvSize => kv_size(change, ctx, finding, missing),
        Test::Offload => finding.done(
            Assessment::Consistent,
            String::from(
                "weights or KV cache held in host memory cross PCIe on every step; no logged \
                 number isolates it",
            ),
            missing,
        ),
        Test::Hardware => finding.done(
            Assessment::Consistent,
            format!(
                "{}; clocks, power and throttle reasons are known only as read at collection, \
                 not over the runs",
                change.explanation
            ),
            missing,
        ),
        Test::Collective => super::collective::assess(change, ctx, finding, missing),
        Test::CudaGraphs => super::graphs::assess(change, ctx, finding, missing),
        Test::Version | Test::Other | Test::PrefixCache => finding.done(
            Assessment::Consistent,
            String::from("no logged number isolates its effect"),
            missing,
        ),
    }
}

/// What rules a cause out whatever its test: throughput that did not fall, the same change
/// between earlier runs that performed the same, the same speed at the same load.
fn common(change: &Change, test: Test, ctx: &Ctx<'_>) -> Option<CauseVerdict> {
    let finding = Finding::new(test);
    if let Some((b, a)) = ctx.throughput
        && b > 0.0
        && a / b > 1.0 - ctx.config.held
    {
        let reason = format!(
            "throughput did not fall ({} -> {} tok/s): there is no slowdown for it to cause",
            number(b),
            number(a)
        );
        let finding = finding
            .num("throughput_before", Some(b))
            .num("throughput_after", Some(a));
        return Some(finding.done(Assessment::RuledOut, reason, &[]));
    }
    if ctx.held_across.iter().any(|k| k == &change.key) {
        let reason = String::from(
            "it also changed between earlier runs whose throughput held: it does not explain the \
             slowdown",
        );
        return Some(finding.done(Assessment::RuledOut, reason, &[]));
    }
    if let Some((b, a)) = ctx.band_throughput
        && ctx.held(b, a)
    {
        let reason = format!(
            "at the same running-request count the runs were as fast ({} -> {} tok/s): the \
             server did not get slower, the load changed",
            number(b),
            number(a)
        );
        let finding = finding
            .num("band_before", Some(b))
            .num("band_after", Some(a));
        return Some(finding.done(Assessment::RuledOut, reason, &[]));
    }
    None
}

/// Whether the predicted throughput ratio matches the observed (aggregate) one within the
/// tolerance.
fn matches(ctx: &Ctx<'_>, predicted: f64) -> Option<bool> {
    matches_ratio(ctx, ctx.ratio(), predicted)
}

fn matches_ratio(ctx: &Ctx<'_>, observed: Option<f64>, predicted: f64) -> Option<bool> {
    let observed = observed?;
    (predicted > 0.0).then(|| (observed / predicted - 1.0).abs() <= ctx.config.tolerance)
}

fn ratio_text(ctx: &Ctx<'_>, predicted: f64) -> String {
    observed_text(ctx.ratio(), predicted)
}

fn observed_text(observed: Option<f64>, predicted: f64) -> String {
    match observed {
        Some(observed) => format!(
            "predicted throughput x{}, observed x{}",
            number(predicted),
            number(observed)
        ),
        None => format!("predicted throughput x{}", number(predicted)),
    }
}

fn queue_mean(ctx: &Ctx<'_>) -> Option<(f64, f64)> {
    let names = ctx.config.symptom_metrics(SymptomKind::Queue);
    both(ctx.metrics, names).map(|(_, b, a)| (b.mean, a.mean))
}

/// A cap on concurrent requests matters only where the load reached it.
fn running_cap(change: &Change, ctx: &Ctx<'_>, f: Finding, missing: &[String]) -> CauseVerdict {
    let (cap_before, cap_after) = values(change);
    let f = f.num("cap_before", cap_before).num("cap_after", cap_after);
    let Some((_, rb, ra)) = both(ctx.metrics, &ctx.config.metrics.running) else {
        return f.done(
            Assessment::Consistent,
            String::from("no running-request count logged by both runs"),
            missing,
        );
    };
    let queue = queue_mean(ctx);
    let f = f
        .summary("running_before", rb)
        .summary("running_after", ra)
        .num("queue_after_mean", queue.map(|q| q.1));
    let Some(cap_after) = cap_after else {
        return f.done(
            Assessment::Consistent,
            String::from("the cap in effect after is the engine's default, not known here"),
            missing,
        );
    };
    let queued = queue.is_some_and(|(_, a)| a >= 0.5);
    let queue_text = match queue {
        Some((_, a)) if a < 0.5 => String::from("; nothing queued after"),
        Some((_, a)) => format!("; {} queued on average after", number(a)),
        None => String::from("; no queue length logged"),
    };
    if rb.max <= cap_after && !queued {
        let reason = format!(
            "never bound: the earlier run peaked at {} running requests, within the new cap of {}, \
             and the later run averaged {}{queue_text}",
            number(rb.max),
            number(cap_after),
            number(ra.mean)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    if cap_before.is_some_and(|b| cap_after >= b) {
        let reason = format!(
            "the cap rose to {}: it admits more requests, not fewer",
            number(cap_after)
        );
        return f.done(Assessment::Consistent, reason, missing);
    }
    let predicted = cap_after / rb.mean.max(cap_after);
    let pinned = ra.max <= cap_after * 1.02;
    let reason = format!(
        "the earlier run averaged {} running requests, the new cap admits {}{queue_text}: {}",
        number(rb.mean),
        number(cap_after),
        ratio_text(ctx, predicted)
    );
    let f = f
        .num("predicted_ratio", Some(predicted))
        .num("observed_ratio", ctx.ratio());
    if pinned && matches(ctx, predicted) == Some(true) {
        return f.done(Assessment::Explains, reason, missing);
    }
    f.done(Assessment::Consistent, reason, missing)
}

/// KV capacity matters only where the cache filled (or requests queued and were preempted).
fn kv_capacity(change: &Change, ctx: &Ctx<'_>, f: Finding, missing: &[String]) -> CauseVerdict {
    let (before, after) = values(change);
    let f = f.num("before", before).num("after", after);
    let Some((_, ub, ua)) = both(ctx.metrics, &ctx.config.metrics.usage) else {
        return f.done(
            Assessment::Consistent,
            String::from("no KV usage logged by both runs"),
            missing,
        );
    };
    let (cb, ca) = ctx.capacity;
    let queue = queue_mean(ctx);
    let f = f
        .summary("usage_before", ub)
        .summary("usage_after", ua)
        .num("capacity_before_tokens", cb)
        .num("capacity_after_tokens", ca)
        .num("queue_after_mean", queue.map(|q| q.1));
    let pct = |v: f64| format!("{}%", number(v * 100.0));
    let tokens = match (cb, ca) {
        (Some(cb), Some(ca)) => format!(
            " (at most {} of {} tokens before, {} of {} after)",
            number((ub.max * cb).round()),
            number(cb),
            number((ua.max * ca).round()),
            number(ca)
        ),
        _ => String::new(),
    };
    let queued = queue.is_some_and(|(_, a)| a >= 0.5);
    if ua.max < 0.8 && !queued {
        let reason = format!(
            "never bound: KV usage peaked at {} before and {} after{tokens}; the cache never filled",
            pct(ub.max),
            pct(ua.max)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    let reason = format!(
        "KV usage peaked at {} after ({} before){tokens}{}: the cache filled, fewer requests fit",
        pct(ua.max),
        pct(ub.max),
        if queued { ", with requests queued" } else { "" }
    );
    let running = both(ctx.metrics, &ctx.config.metrics.running);
    let predicted = running
        .filter(|(_, rb, _)| rb.mean > 0.0)
        .map(|(_, rb, ra)| ra.mean / rb.mean);
    match predicted {
        Some(p) if ua.max >= 0.9 && p < 1.0 && matches(ctx, p) == Some(true) => {
            let reason = format!("{reason}; {}", ratio_text(ctx, p));
            f.num("predicted_ratio", Some(p))
                .done(Assessment::Explains, reason, missing)
        }
        _ => f.done(Assessment::Consistent, reason, missing),
    }
}

/// Speculative settings held against the accept length: what each decoding step yields.
fn speculative(change: &Change, ctx: &Ctx<'_>, f: Finding, missing: &[String]) -> CauseVerdict {
    let accept = both(ctx.metrics, &ctx.config.metrics.accept);
    let f = match accept {
        Some((_, b, a)) => f.summary("accept_before", b).summary("accept_after", a),
        None => f,
    };
    let observed = ctx.same_load_ratio();
    let f = f.num("observed_ratio", observed);
    if let Some(mechanism) = &change.mechanism {
        let predicted = accept.map(|(_, b, a)| a.mean / b.mean.max(f64::MIN_POSITIVE));
        if predicted.and_then(|p| matches_ratio(ctx, observed, p)) != Some(false) {
            return f.num("predicted_ratio", predicted).done(
                Assessment::Explains,
                mechanism.clone(),
                missing,
            );
        }
    }
    let Some((_, b, a)) = accept else {
        if let Some(before) = accept_before_speculation_ended(change, ctx) {
            return speculation_ended(before, observed, ctx, f, missing);
        }
        return f.done(
            Assessment::Consistent,
            String::from("no accept length logged by both runs"),
            missing,
        );
    };
    if ctx.held(b.mean, a.mean) {
        let reason = format!(
            "the accept length held ({} -> {}): what each step yields did not change",
            number(b.mean),
            number(a.mean)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    if a.mean > b.mean {
        let reason = format!(
            "the accept length rose ({} -> {}): each step yields more, not less",
            number(b.mean),
            number(a.mean)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    let predicted = a.mean / b.mean;
    let reason = format!(
        "the accept length fell {} -> {}: {}",
        number(b.mean),
        number(a.mean),
        observed_text(observed, predicted)
    );
    let f = f.num("predicted_ratio", Some(predicted));
    match matches_ratio(ctx, observed, predicted) {
        Some(true) => f.done(Assessment::Explains, reason, missing),
        _ => f.done(Assessment::Consistent, reason, missing),
    }
}

/// The accept length the earlier run logged, when this change took speculative decoding away
/// (removed, and the running side logs no accept length): without drafts a step yields one token.
fn accept_before_speculation_ended<'a>(
    change: &Change,
    ctx: &Ctx<'a>,
) -> Option<&'a MetricSummary> {
    if change.kind != ChangeKind::Removed {
        return None;
    }
    let names = &ctx.config.metrics.accept;
    let after_logged = ctx
        .metrics
        .iter()
        .any(|m| named(names, &m.name) && m.after.is_some());
    if after_logged {
        return None;
    }
    ctx.metrics
        .iter()
        .filter(|m| named(names, &m.name))
        .find_map(|m| m.before.as_ref())
        .filter(|b| b.mean > 1.0)
}

/// Speculative decoding taken away: each step now yields one token where it yielded the earlier
/// accept length, so throughput may fall to 1/accept at most (a step without drafting and
/// verifying is also cheaper, so it falls less). An observed fall between that bound and none
/// explains it; a rise rules it out.
fn speculation_ended(
    before: &MetricSummary,
    observed: Option<f64>,
    ctx: &Ctx<'_>,
    f: Finding,
    missing: &[String],
) -> CauseVerdict {
    let bound = 1.0 / before.mean;
    let f = f
        .summary("accept_before", before)
        .num("predicted_ratio", Some(bound))
        .num("observed_ratio", observed);
    let steps = format!(
        "speculative decoding taken away: each step yielded {} tokens (accept length), now 1, so \
         throughput may fall to x{} at most (a step without drafts is also cheaper)",
        number(before.mean),
        number(bound)
    );
    match observed {
        Some(o) if o >= 1.0 - ctx.config.held => f.done(
            Assessment::RuledOut,
            format!("{steps}; observed x{}: it did not fall", number(o)),
            missing,
        ),
        Some(o) if o >= bound * (1.0 - ctx.config.tolerance) => f.done(
            Assessment::Explains,
            format!("{steps}; observed x{}", number(o)),
            missing,
        ),
        Some(o) => f.done(
            Assessment::Consistent,
            format!("{steps}; observed x{}, more than it explains", number(o)),
            missing,
        ),
        None => f.done(Assessment::Consistent, steps, missing),
    }
}

/// The layers on the GPU, held against what each run's engine logged at start-up (`offloaded
/// N/M layers to GPU`): the same count in both runs rules the option out whatever it says; a
/// count that fell while throughput fell explains it (the layers left run on the CPU).
fn gpu_layers(ctx: &Ctx<'_>, f: Finding, missing: &[String]) -> CauseVerdict {
    let (before, after) = ctx.layers.gpu;
    let f = f
        .num("gpu_layers_before", before)
        .num("gpu_layers_after", after)
        .num("model_layers", ctx.layers.model)
        .num("observed_ratio", ctx.ratio());
    let of = ctx
        .layers
        .model
        .map(|m| format!(" of {}", number(m)))
        .unwrap_or_default();
    let (Some(before), Some(after)) = (before, after) else {
        return f.done(
            Assessment::Consistent,
            String::from("no offloaded-layers line logged by both runs"),
            missing,
        );
    };
    if before == after {
        let reason = format!(
            "both runs' logs show the same {}{of} layers on the GPU: the placement did not change",
            number(after)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    if after > before {
        let reason = format!(
            "more layers on the GPU ({} -> {}{of}): less of each token runs on the CPU, not more",
            number(before),
            number(after)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    let reason = format!(
        "fewer layers on the GPU ({} -> {}{of}, as the engine logged them): the rest run on the \
         CPU, which every token waits for",
        number(before),
        number(after)
    );
    match ctx.ratio() {
        Some(ratio) => {
            let reason = format!("{reason}; throughput x{}", number(ratio));
            f.done(Assessment::Explains, reason, missing)
        }
        None => f.done(
            Assessment::Consistent,
            format!("{reason}; no throughput logged by both runs"),
            missing,
        ),
    }
}

/// What sizes a KV cache the engine allocates whole at load (context length x parallel
/// sequences): it explains a drop where the KV size grew and layers left the GPU with it (the
/// memory the KV cache took was theirs), with the arithmetic; a KV size that did not grow, or
/// layers that stayed, rule it out as the placement's cause. Without the lines, as any option.
fn kv_size(change: &Change, ctx: &Ctx<'_>, f: Finding, missing: &[String]) -> CauseVerdict {
    let (kv_before, kv_after) = ctx.layers.kv;
    let (gpu_before, gpu_after) = ctx.layers.gpu;
    let f = f
        .num("kv_size_before", kv_before)
        .num("kv_size_after", kv_after)
        .num("gpu_layers_before", gpu_before)
        .num("gpu_layers_after", gpu_after)
        .num("observed_ratio", ctx.ratio());
    let (Some(kb), Some(ka), Some(gb), Some(ga)) = (kv_before, kv_after, gpu_before, gpu_after)
    else {
        // No KV size or placement logged (an engine that sizes its cache otherwise): as any
        // other option.
        return f.done(
            Assessment::Consistent,
            String::from("no logged number isolates its effect"),
            &[],
        );
    };
    let sized = format!(
        "the KV cache the engine sized went {} -> {} tokens",
        number(kb),
        number(ka)
    );
    let by = match (change.before.as_ref(), change.after.as_ref()) {
        (Some(b), Some(a)) => {
            let (b, a) = (b.as_f64(), a.as_f64());
            match (b, a) {
                (Some(b), Some(a)) if b > 0.0 && kb > 0.0 => format!(
                    " (x{}; {} {} -> {} is x{} of it)",
                    number(ka / kb),
                    change.key,
                    number(b),
                    number(a),
                    number(a / b)
                ),
                _ => String::new(),
            }
        }
        _ => String::new(),
    };
    if ka <= kb || ga >= gb {
        let reason = format!(
            "{sized}{by}, and the layers on the GPU went {} -> {}: it moved none off the GPU",
            number(gb),
            number(ga)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    let of = ctx
        .layers
        .model
        .map(|m| format!(" of {}", number(m)))
        .unwrap_or_default();
    let reason = format!(
        "{sized}{by}; its memory was the GPU's: {} layers left it ({} -> {}{of}) and run on the CPU",
        number(gb - ga),
        number(gb),
        number(ga)
    );
    match ctx.ratio() {
        Some(ratio) => f.done(
            Assessment::Explains,
            format!("{reason}; throughput x{}", number(ratio)),
            missing,
        ),
        None => f.done(
            Assessment::Consistent,
            format!("{reason}; no throughput logged by both runs"),
            missing,
        ),
    }
}

/// More models kept loaded beside the served one: they take GPU memory, and matter only where
/// that memory pushed the served model's layers off the GPU. Every run holding all the model's
/// layers on the GPU, as the engine logged them, rules it out; fewer layers keep it possible
/// (what else is loaded is not logged at each start).
fn resident(ctx: &Ctx<'_>, f: Finding, missing: &[String]) -> CauseVerdict {
    let (before, after) = ctx.layers.gpu;
    let f = f
        .num("gpu_layers_before", before)
        .num("gpu_layers_after", after)
        .num("model_layers", ctx.layers.model);
    let (Some(before), Some(after)) = (before, after) else {
        return f.done(
            Assessment::Consistent,
            String::from("no offloaded-layers line logged by both runs"),
            missing,
        );
    };
    if after >= before {
        let reason = match ctx.layers.model.filter(|m| after >= *m) {
            Some(m) => format!(
                "every layer of the model stays on the GPU ({} -> {} of {}, as the engine \
                 logged them): a model kept loaded beside it took none of its GPU memory",
                number(before),
                number(after),
                number(m)
            ),
            None => format!(
                "no fewer layers on the GPU ({} -> {}, as the engine logged them): a model kept \
                 loaded beside it moved none",
                number(before),
                number(after)
            ),
        };
        return f.done(Assessment::RuledOut, reason, missing);
    }
    let reason = format!(
        "fewer layers on the GPU ({} -> {}): a model kept loaded beside it may hold the memory \
         they needed; what else was loaded is not logged at each start",
        number(before),
        number(after)
    );
    f.done(Assessment::Consistent, reason, missing)
}
