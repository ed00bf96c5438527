//! Causes held against a latency or queue symptom (time to first token, decode time per token,
//! end-to-end latency, queued requests): a smaller prefill budget takes more steps to prefill a
//! prompt, prefix caching turned off prefills what was cached, a request cap makes requests
//! wait. Throughput symptoms are `checks`'s.

use probe_model::{Assessment, CauseVerdict, Change, ChangeKind, DefaultFrom, SymptomKind};

use super::config::Test;
use super::ctx::{Ctx, Finding, values};
use super::load::both;
use super::symptoms::{held, means, numbers, worsened};
use crate::number::number;

/// Holds one cause against the latency symptom of `ctx`.
pub(super) fn assess(
    change: &Change,
    test: Test,
    ctx: &Ctx<'_>,
    f: Finding,
    missing: &[String],
) -> CauseVerdict {
    let Some(symptom) = ctx.symptom else {
        return f.done(
            Assessment::Consistent,
            String::from("no symptom compared"),
            missing,
        );
    };
    let f = match means(symptom) {
        Some((b, a)) => f
            .num("symptom_before", Some(b))
            .num("symptom_after", Some(a)),
        None => f,
    };
    if !worsened(ctx.config, symptom) {
        let reason = format!(
            "{} did not get worse ({}): there is no slowdown for it to cause",
            symptom.kind.label(),
            numbers(symptom)
        );
        return f.done(Assessment::RuledOut, reason, &[]);
    }
    match test {
        Test::PrefillBudget => prefill_budget(change, ctx, f, missing),
        Test::PrefixCache => prefix_cache(change, ctx, f, missing),
        Test::RunningCap => running_cap(change, ctx, f, missing),
        Test::KvCapacity => kv_capacity(ctx, f, missing),
        Test::CudaGraphs => super::graphs::assess(change, ctx, f, missing),
        _ => f.done(
            Assessment::Consistent,
            format!(
                "no logged number isolates its effect on {}",
                symptom.kind.label()
            ),
            missing,
        ),
    }
}

/// A cause whose mechanism cannot produce the symptom (`explains` in `configs/verdict.toml`).
pub(super) fn outside(
    test: Test,
    ctx: &Ctx<'_>,
    f: Finding,
    explains: &[SymptomKind],
) -> CauseVerdict {
    let kind = ctx.symptom.map(|s| s.kind).unwrap_or_default();
    let acts: Vec<&str> = explains.iter().map(|k| k.label()).collect();
    let reason = format!(
        "a {} change acts on {}, not on {}: it does not explain this symptom",
        test.as_str(),
        acts.join(", "),
        kind.label()
    );
    f.done(Assessment::RuledOut, reason, &[])
}

/// The mean of a metric of `names` on each side.
fn pair(ctx: &Ctx<'_>, names: &[String]) -> Option<(f64, f64)> {
    both(ctx.metrics, names).map(|(_, b, a)| (b.mean, a.mean))
}

fn queue(ctx: &Ctx<'_>) -> Option<(f64, f64)> {
    pair(ctx, ctx.config.symptom_metrics(SymptomKind::Queue))
}

/// Whether the queue grew: by more than `held` and by at least half a request.
fn queue_grew(ctx: &Ctx<'_>) -> bool {
    queue(ctx).is_some_and(|(b, a)| a - b >= 0.5 && a > b * (1.0 + ctx.config.held))
}

/// The decode speed per request, when both sides have it and it held.
fn decode_held(ctx: &Ctx<'_>) -> Option<bool> {
    let itl = ctx.symptoms.iter().find(|s| s.kind == SymptomKind::Itl)?;
    Some(held(ctx.config, itl))
}

fn queue_text(ctx: &Ctx<'_>) -> String {
    match queue(ctx) {
        Some((b, a)) => format!("; queued requests {} -> {}", number(b), number(a)),
        None => String::new(),
    }
}

/// The prefill tokens one step takes. Prefilling a prompt of `L` tokens takes `ceil(L/budget)`
/// steps, and every request behind it waits: a smaller budget delays the first token of
/// prompts longer than it, and queues requests at the same request rate; decode speed holds
/// (or improves: fewer prefill tokens share each step with decodes).
fn prefill_budget(change: &Change, ctx: &Ctx<'_>, f: Finding, missing: &[String]) -> CauseVerdict {
    let kind = ctx.symptom.map(|s| s.kind).unwrap_or_default();
    let number_of = |v: Option<&serde_json::Value>| v.and_then(crate::impact::value_number);
    let (flag_before, flag_after) = (
        number_of(change.before.as_ref()),
        number_of(change.after.as_ref()),
    );
    // A flag left unset stood for what the engine resolved at start-up, where it logged that,
    // else for the catalog's default of that version.
    let (default_before, default_after) = values(change);
    let (before, after) = (
        flag_before.or(ctx.prefill_budget.0).or(default_before),
        flag_after.or(ctx.prefill_budget.1).or(default_after),
    );
    let resolved_before = ctx.prefill_budget.0.is_some()
        || change
            .unset_default
            .as_ref()
            .is_some_and(|d| d.from == DefaultFrom::Resolved);
    let prompt = pair(ctx, &ctx.config.metrics.prompt_length).map(|(_, a)| a);
    let f = f
        .num("budget_before", before)
        .num("budget_after", after)
        .num("prompt_tokens", prompt)
        .num("queue_before_mean", queue(ctx).map(|q| q.0))
        .num("queue_after_mean", queue(ctx).map(|q| q.1));
    let Some(after) = after else {
        return f.done(
            Assessment::Consistent,
            String::from("the budget in effect after is the engine's default, not known here"),
            missing,
        );
    };
    let before_text = budget_text(flag_before, before, resolved_before);
    if before.is_some_and(|b| after >= b) {
        let reason = format!(
            "the prefill budget rose or held ({before_text} -> {} tokens): a prompt takes as \
             many steps or fewer",
            number(after)
        );
        let assessment = if kind == SymptomKind::Itl {
            Assessment::Consistent
        } else {
            Assessment::RuledOut
        };
        return f.done(assessment, reason, missing);
    }
    if kind == SymptomKind::Itl {
        let reason = format!(
            "a smaller prefill budget ({before_text} -> {} tokens) leaves more of each step to \
             decoding, not less",
            number(after)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    let Some(prompt) = prompt else {
        let reason = format!(
            "the prefill budget fell ({before_text} -> {} tokens){}; the prompt length is not \
             known, so the steps a prompt takes are not",
            number(after),
            queue_text(ctx)
        );
        return f.done(Assessment::Consistent, reason, missing);
    };
    prompt_steps(f, ctx, (before, after), prompt, &before_text, missing)
}

/// How the earlier budget is said: the flag as set, else the default as the earlier run
/// resolved it or as the catalog has it for that version.
fn budget_text(flag: Option<f64>, before: Option<f64>, resolved: bool) -> String {
    match (flag, before) {
        (None, Some(b)) if resolved => {
            format!("the default, {} as the earlier run resolved it,", number(b))
        }
        (None, Some(b)) => format!("the default, {} for that version,", number(b)),
        (_, Some(b)) => number(b),
        (_, None) => String::from("the default"),
    }
}

/// A prefill budget that fell, held against the prefill steps a prompt of the measured length
/// takes and the queue.
fn prompt_steps(
    f: Finding,
    ctx: &Ctx<'_>,
    (before, after): (Option<f64>, f64),
    prompt: f64,
    before_text: &str,
    missing: &[String],
) -> CauseVerdict {
    let steps = |budget: f64, prompt: f64| (prompt / budget).ceil();
    let more_steps = prompt > after;
    let steps_text = match before {
        Some(b) => format!(
            "a {}-token prompt takes {} prefill step(s) instead of {}",
            number(prompt),
            number(steps(after, prompt)),
            number(steps(b, prompt))
        ),
        None => format!(
            "a {}-token prompt takes {} prefill step(s)",
            number(prompt),
            number(steps(after, prompt))
        ),
    };
    let decode = match decode_held(ctx) {
        Some(true) => "; decode speed held",
        Some(false) => "; decode speed moved too",
        None => "",
    };
    let reason = format!(
        "the prefill budget fell ({before_text} -> {} tokens): {steps_text}{}{decode}",
        number(after),
        queue_text(ctx)
    );
    let f = f.num("prefill_steps_after", Some(steps(after, prompt)));
    if !more_steps && !queue_grew(ctx) {
        let reason = format!(
            "prompts of {} tokens fit the new budget of {} in one step and nothing queued more: it \
             does not delay the first token",
            number(prompt),
            number(after)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    if decode_held(ctx) != Some(false) && (more_steps || queue_grew(ctx)) {
        return f.done(Assessment::Explains, reason, missing);
    }
    f.done(Assessment::Consistent, reason, missing)
}

/// Whether the change turned prefix caching off (`Some(false)`), on (`Some(true)`), or the
/// direction is not known (a removed flag whose default this version does not say).
fn caching_after(change: &Change) -> Option<bool> {
    let key = change.key.to_ascii_lowercase().replace('_', "-");
    let negative = key.contains("no-enable") || key.contains("disable");
    let set = match (&change.kind, change.after.as_ref()) {
        (ChangeKind::Removed, _) => return None,
        (_, Some(serde_json::Value::Bool(b))) => *b,
        _ => true,
    };
    Some(set != negative)
}

/// Prefix caching: a prompt whose prefix is cached skips prefilling it; held against the hit
/// rate.
fn prefix_cache(change: &Change, ctx: &Ctx<'_>, f: Finding, missing: &[String]) -> CauseVerdict {
    let hit = pair(ctx, &ctx.config.metrics.hit_rate);
    let f = f
        .num("hit_rate_before", hit.map(|h| h.0))
        .num("hit_rate_after", hit.map(|h| h.1));
    let pct = |v: f64| format!("{}%", number(v * 100.0));
    if caching_after(change) == Some(true) {
        return f.done(
            Assessment::RuledOut,
            String::from("prefix caching was turned on: more is cached, not less"),
            missing,
        );
    }
    let Some((b, a)) = hit else {
        return f.done(
            Assessment::Consistent,
            String::from("no prefix cache hit rate logged by both runs"),
            missing,
        );
    };
    if a < b - 0.05 {
        let reason = format!(
            "the prefix cache hit rate fell {} -> {}: prompts prefill what was cached before{}",
            pct(b),
            pct(a),
            queue_text(ctx)
        );
        return f.done(Assessment::Explains, reason, missing);
    }
    let reason = format!(
        "the prefix cache hit rate held ({} -> {}): as much was cached as before",
        pct(b),
        pct(a)
    );
    f.done(Assessment::RuledOut, reason, missing)
}

/// A request cap makes requests wait for a slot: it explains a latency rise where the running
/// count sat at the new cap and the queue grew.
fn running_cap(change: &Change, ctx: &Ctx<'_>, f: Finding, missing: &[String]) -> CauseVerdict {
    let (cap_before, cap_after) = values(change);
    let running = both(ctx.metrics, &ctx.config.metrics.running);
    let f = f
        .num("cap_before", cap_before)
        .num("cap_after", cap_after)
        .num("running_after_max", running.map(|r| r.2.max));
    let (Some(cap), Some((_, _, ra))) = (cap_after, running) else {
        return f.done(
            Assessment::Consistent,
            String::from("the cap after, or the running count, is not known"),
            missing,
        );
    };
    if ra.max < cap * 0.98 {
        let reason = format!(
            "never bound: at most {} requests ran at once under a cap of {}: requests that \
             waited did not wait for it",
            number(ra.max),
            number(cap)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    let reason = format!(
        "requests ran at the cap of {} (at most {} at once){}: the rest waited for a slot",
        number(cap),
        number(ra.max),
        queue_text(ctx)
    );
    if cap_before.is_none_or(|b| cap < b) && queue_grew(ctx) {
        return f.done(Assessment::Explains, reason, missing);
    }
    f.done(Assessment::Consistent, reason, missing)
}

/// A smaller KV cache admits fewer requests at once: the rest queue. It explains a latency rise
/// only where the cache filled and the queue grew.
fn kv_capacity(ctx: &Ctx<'_>, f: Finding, missing: &[String]) -> CauseVerdict {
    let Some((_, ub, ua)) = both(ctx.metrics, &ctx.config.metrics.usage) else {
        return f.done(
            Assessment::Consistent,
            String::from("no KV usage logged by both runs"),
            missing,
        );
    };
    let f = f
        .num("usage_before_max", Some(ub.max))
        .num("usage_after_max", Some(ua.max));
    let pct = |v: f64| format!("{}%", number(v * 100.0));
    if ua.max < 0.8 {
        let reason = format!(
            "never bound: KV usage peaked at {} after ({} before): the cache never filled",
            pct(ua.max),
            pct(ub.max)
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    let reason = format!(
        "KV usage peaked at {} after ({} before){}",
        pct(ua.max),
        pct(ub.max),
        queue_text(ctx)
    );
    if ua.max >= 0.9 && queue_grew(ctx) {
        return f.done(Assessment::Explains, reason, missing);
    }
    f.done(Assessment::Consistent, reason, missing)
}
