//! The `cuda-graphs` test: whether the engine replays its decode steps as captured CUDA graphs.
//! Without them every decode step launches its kernels from the CPU one by one, a fixed cost
//! per step that every output token of a request pays. A setting that turns the graphs off
//! (a list of batch sizes to capture that is empty or holds only 0, or `false`) explains a rise
//! in the time per output token where the time it added per token falls in `[graphs] added-ms`
//! of `configs/verdict.toml` (what the launches a step's graph held cost); one that turns them
//! on, or leaves sizes to capture, cannot slow decoding down and is ruled out.

use probe_model::{Assessment, CauseVerdict, Change, SymptomKind};
use serde_json::Value;

use super::ctx::{Ctx, Finding};
use super::symptoms::means;
use crate::number::number;

/// Holds a CUDA-graphs setting against the time per output token.
pub(super) fn assess(
    change: &Change,
    ctx: &Ctx<'_>,
    f: Finding,
    missing: &[String],
) -> CauseVerdict {
    let shown = |v: Option<&Value>| v.map_or_else(|| String::from("default"), Value::to_string);
    let (before, after) = (shown(change.before.as_ref()), shown(change.after.as_ref()));
    let Some(off_after) = change.after.as_ref().map(turns_off) else {
        return f.done(
            Assessment::Consistent,
            format!("cuda graphs {before} -> default: what the default captures is not logged"),
            missing,
        );
    };
    if !off_after {
        let reason = format!(
            "cuda graphs {before} -> {after}: decode steps still replay captured graphs; this \
             cannot make a token slower"
        );
        return f.done(Assessment::RuledOut, reason, missing);
    }
    let tpot = ctx
        .symptom
        .filter(|s| s.kind == SymptomKind::Itl)
        .and_then(means);
    let Some((b, a)) = tpot else {
        return f.done(
            Assessment::Consistent,
            format!(
                "cuda graphs turned off ({before} -> {after}): each decode step launches its \
                 kernels one by one; no time per output token compared"
            ),
            missing,
        );
    };
    let added = a - b;
    let [low, high] = ctx.config.graphs.added_ms;
    let f = f
        .num("tpot_before_ms", Some(b))
        .num("tpot_after_ms", Some(a))
        .num("added_ms_per_token", Some(added))
        .num("added_ms_low", Some(low))
        .num("added_ms_high", Some(high));
    let reason = format!(
        "cuda graphs turned off ({before} -> {after}): each decode step launches its kernels \
         one by one from the CPU; time per output token {} -> {} ms (+{} ms a token, x{})",
        number(b),
        number(a),
        number(added),
        number(a / b)
    );
    if (low..=high).contains(&added) {
        let reason = format!(
            "{reason}, within the {}-{} ms a step's kernel launches cost",
            number(low),
            number(high)
        );
        return f.done(Assessment::Explains, reason, missing);
    }
    let reason = format!(
        "{reason}: not the {}-{} ms a step's kernel launches cost",
        number(low),
        number(high)
    );
    f.done(Assessment::Consistent, reason, missing)
}

/// Whether a value of the setting captures no graph: `false`, an empty list, or only sizes of 0
/// (TGI's `--cuda-graphs 0`; its launcher keeps the sizes above 0).
fn turns_off(value: &Value) -> bool {
    let size = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match value {
        Value::Bool(on) => !on,
        Value::Array(items) => items.iter().all(|v| size(v).is_some_and(|n| n <= 0.0)),
        Value::String(s) => s
            .split(',')
            .all(|p| p.trim().parse::<f64>().is_ok_and(|n| n <= 0.0)),
        other => size(other).is_some_and(|n| n <= 0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::turns_off;
    use crate::verdict::{Evidence, judge};
    use probe_model::{Assessment, Category, Change, Impact, MetricComparison, MetricSummary};
    use serde_json::{Value, json};

    fn tpot(before: f64, after: f64) -> MetricComparison {
        let side = |mean: f64| MetricSummary {
            count: 200,
            mean,
            min: mean * 0.95,
            max: mean * 1.05,
            ..MetricSummary::default()
        };
        MetricComparison {
            name: String::from("request_tpot_ms"),
            unit: String::from("ms"),
            before: Some(side(before)),
            after: Some(side(after)),
            change: Some(after / before - 1.0),
        }
    }

    /// (time per token before and after in ms, the setting after, the assessment): off with a
    /// launch-sized rise explains; no rise, a rise no launch cost makes, or graphs kept do not.
    #[test]
    fn held_against_the_time_per_token() {
        let cases: [(f64, f64, Value, Assessment); 5] = [
            (20.5, 30.3, json!(["0"]), Assessment::Explains),
            (20.5, 20.7, json!(["0"]), Assessment::RuledOut),
            (20.5, 60.0, json!(["0"]), Assessment::Consistent),
            (
                20.5,
                30.3,
                json!(["1", "2", "4", "8"]),
                Assessment::RuledOut,
            ),
            (20.5, 24.0, json!([]), Assessment::Explains),
        ];
        for (before, after, value, want) in cases {
            let mut changes = vec![Change {
                key: String::from("cuda-graphs"),
                category: Category::KernelsBackends,
                impact: Impact::Medium,
                before: None,
                after: Some(value.clone()),
                explanation: String::from("cuda-graphs added"),
                ..Change::default()
            }];
            let metrics = [tpot(before, after)];
            judge(
                &mut changes,
                &Evidence {
                    metrics: &metrics,
                    ..Evidence::default()
                },
            );
            let got = changes[0].verdict.as_ref().expect("a verdict");
            assert_eq!(got.assessment, want, "{before} -> {after} {value}: {got:?}");
            if want == Assessment::Explains {
                assert!(got.reason.contains("ms a token"), "{}", got.reason);
            }
        }
    }

    /// (value, whether it captures no graph).
    #[test]
    fn values_that_turn_graphs_off() {
        for (value, off) in [
            (json!(["0"]), true),
            (json!([0]), true),
            (json!([]), true),
            (json!("0"), true),
            (json!(false), true),
            (json!([1, 2, 4, 8]), false),
            (json!(["0", "8"]), false),
            (json!("1,2,4"), false),
            (json!(true), false),
            (json!("auto"), false),
        ] {
            assert_eq!(turns_off(&value), off, "{value}");
        }
    }
}
