//! Tensor-parallel communication held against the decode step: a decode step of a model split
//! over `tp` GPUs makes `all-reduces-per-layer` all-reduces per layer, each of running x hidden
//! x bytes-per-element bytes. A change of the path they take (the engine's custom all-reduce,
//! NCCL's peer-to-peer, shared-memory or InfiniBand transport, its algorithm or protocol, the
//! topology) adds its extra time to every one of them, every step: the added per-step time,
//! shared out over the step's all-reduces, must fall in what a slower path adds
//! (`configs/verdict.toml`, `[collective]`). Without tensor parallelism there is no all-reduce.

use probe_model::{Assessment, CauseVerdict, Change};

use super::ctx::{Ctx, Finding};
use super::load::both;
use crate::number::number;

/// Whether a cause key is a parallel size itself (its change changes the all-reduces, not only
/// their path).
fn is_size(key: &str) -> bool {
    let key = key.rsplit('.').next().unwrap_or(key).replace('_', "-");
    matches!(
        key.as_str(),
        "tensor-parallel-size" | "tp" | "tp-size" | "pipeline-parallel-size" | "pp" | "pp-size"
    )
}

pub(super) fn assess(
    change: &Change,
    ctx: &Ctx<'_>,
    f: Finding,
    missing: &[String],
) -> CauseVerdict {
    let shape = ctx.shape;
    let f = f
        .num("tp_before", shape.tp.0)
        .num("tp_after", shape.tp.1)
        .num("layers", shape.layers)
        .num("hidden_size", shape.hidden);
    let tp = shape.tp.1.or(shape.tp.0);
    if !is_size(&change.key)
        && shape.tp.0.unwrap_or(1.0) <= 1.0
        && shape.tp.1.unwrap_or(1.0) <= 1.0
        && tp.is_some()
    {
        return f.done(
            Assessment::RuledOut,
            String::from(
                "no tensor parallelism on either side: a decode step makes no all-reduce for this \
                 to slow down",
            ),
            missing,
        );
    }
    let (Some(throughput), Some((_, rb, ra))) = (
        ctx.throughput,
        both(ctx.metrics, &ctx.config.metrics.running),
    ) else {
        return f.done(
            Assessment::Consistent,
            String::from("no running-request count and throughput logged by both runs"),
            missing,
        );
    };
    let (b, a) = throughput;
    if b <= 0.0 || a <= 0.0 || rb.mean <= 0.0 || ra.mean <= 0.0 {
        return f.done(
            Assessment::Consistent,
            String::from("an idle run: no decode step to time"),
            missing,
        );
    }
    // One decode step yields one token per running request.
    let step_before = rb.mean / b * 1000.0;
    let step_after = ra.mean / a * 1000.0;
    let added = step_after - step_before;
    let f = f
        .num("step_ms_before", Some(step_before))
        .num("step_ms_after", Some(step_after))
        .num("per_request_before", Some(b / rb.mean))
        .num("per_request_after", Some(a / ra.mean));
    let steps = format!(
        "per-step decode time {} -> {} ms at {} -> {} running requests (per request {} -> {} \
         tok/s)",
        number(step_before),
        number(step_after),
        number(rb.mean),
        number(ra.mean),
        number(b / rb.mean),
        number(a / ra.mean)
    );
    if added <= 0.0 || ctx.held(step_before, step_after) {
        return f.done(
            Assessment::RuledOut,
            format!("{steps}: a decode step did not get slower, so no all-reduce did"),
            missing,
        );
    }
    let step = Step {
        text: steps,
        added_ms: added,
        running_after: ra.mean,
    };
    share_out(f, ctx, &step, tp, missing)
}

/// A decode step timed on both sides: how it is said, the time it gained, the running
/// requests after.
struct Step {
    text: String,
    added_ms: f64,
    running_after: f64,
}

/// The time a slower decode step gained, shared out over the all-reduces it makes, held
/// against what a slower all-reduce path adds (`[collective]`).
fn share_out(
    f: Finding,
    ctx: &Ctx<'_>,
    step: &Step,
    tp: Option<f64>,
    missing: &[String],
) -> CauseVerdict {
    let shape = ctx.shape;
    let (steps, added) = (&step.text, step.added_ms);
    let (Some(layers), Some(hidden)) = (shape.layers, shape.hidden) else {
        return f.done(
            Assessment::Consistent,
            format!(
                "{steps}; the model's layers and hidden size are not known here, so the added \
                 time cannot be shared out over its all-reduces"
            ),
            missing,
        );
    };
    let config = &ctx.config.collective;
    let count = config.all_reduces_per_layer * layers;
    let per = added * 1000.0 / count;
    let kb = step.running_after * hidden * config.bytes_per_element / 1000.0;
    let f = f
        .num("all_reduces_per_step", Some(count))
        .num("added_us_per_all_reduce", Some(per))
        .num("message_kb", Some(kb));
    let tp_text = tp
        .map(|t| format!(" over TP {}", number(t)))
        .unwrap_or_default();
    let arithmetic = format!(
        "{steps}: +{} ms per step over {} all-reduces{tp_text} ({} per layer x {} layers, each \
         {} x {} x {} B = {} KB) = +{} us per all-reduce",
        number(added),
        number(count),
        number(config.all_reduces_per_layer),
        number(layers),
        number(step.running_after),
        number(hidden),
        number(config.bytes_per_element),
        number(kb.round()),
        number(per)
    );
    let [low, high] = config.added_us;
    if per < low {
        return f.done(
            Assessment::Consistent,
            format!("{arithmetic}, less than a slower all-reduce path adds ({low}-{high} us)"),
            missing,
        );
    }
    if per > high {
        return f.done(
            Assessment::Consistent,
            format!(
                "{arithmetic}, more than a slower all-reduce path adds ({low}-{high} us): \
                 something else slowed the step too"
            ),
            missing,
        );
    }
    f.done(
        Assessment::Explains,
        format!(
            "{arithmetic}, within what a slower all-reduce path adds for messages this size \
             ({low}-{high} us)"
        ),
        missing,
    )
}
