//! The `collective` test on inputs whose answer is known: the issue-33 drop-in (custom
//! all-reduce off, NCCL peer-to-peer off) on GLM-4.5-Air (46 layers, hidden 4096) over TP 4.

use probe_model::{
    Assessment, Category, Change, ChangeKind, Impact, MetricComparison, MetricSummary,
};
use serde_json::json;

use super::{Evidence, Shape, judge};

fn metric(name: &str, b: f64, a: f64) -> MetricComparison {
    let summary = |mean: f64| MetricSummary {
        count: 20,
        mean,
        min: mean,
        max: mean,
        ..MetricSummary::default()
    };
    MetricComparison {
        name: name.to_string(),
        unit: String::from("x"),
        before: Some(summary(b)),
        after: Some(summary(a)),
        change: Some(a / b - 1.0),
    }
}

fn added(key: &str, value: serde_json::Value) -> Change {
    Change {
        key: key.to_string(),
        category: Category::Parallelism,
        impact: Impact::Medium,
        kind: ChangeKind::Added,
        after: Some(value),
        explanation: format!("{key} added"),
        ..Change::default()
    }
}

const GLM_TP4: Shape = Shape {
    layers: Some(46.0),
    hidden: Some(4096.0),
    tp: (Some(4.0), Some(4.0)),
};

/// (what, throughput before/after, running before/after, shape, assessment, reason contains)
type Case = (
    &'static str,
    (f64, f64),
    (f64, f64),
    Shape,
    Assessment,
    &'static str,
);

#[test]
fn all_reduce_path_against_the_decode_step() {
    let cases: &[Case] = &[
        (
            "a quarter slower per request at the same load: ~47 us per all-reduce",
            (2084.0, 1573.0),
            (28.3, 28.1),
            GLM_TP4,
            Assessment::Explains,
            "+4.28 ms per step over 92 all-reduces over TP 4 (2 per layer x 46 layers, each 28.1 x 4096 x 2 B = 230 KB) = +46.57 us per all-reduce",
        ),
        (
            "without tensor parallelism there is no all-reduce",
            (2084.0, 1573.0),
            (28.3, 28.1),
            Shape {
                tp: (Some(1.0), Some(1.0)),
                ..GLM_TP4
            },
            Assessment::RuledOut,
            "no tensor parallelism",
        ),
        (
            "halved: far more than a slower all-reduce adds",
            (2084.0, 1000.0),
            (28.3, 28.1),
            GLM_TP4,
            Assessment::Consistent,
            "something else slowed the step too",
        ),
        (
            "the model's shape unknown: no arithmetic",
            (2084.0, 1573.0),
            (28.3, 28.1),
            Shape {
                layers: None,
                ..GLM_TP4
            },
            Assessment::Consistent,
            "layers and hidden size are not known",
        ),
    ];
    for (what, (tb, ta), (rb, ra), shape, want, reason) in cases {
        let mut changes = vec![
            added("disable-custom-all-reduce", json!(true)),
            added("env:NCCL_P2P_DISABLE", json!("1")),
        ];
        let metrics = vec![
            metric("gen_throughput", *tb, *ta),
            metric("running_reqs", *rb, *ra),
            metric("waiting_reqs", 0.7, 0.8),
        ];
        let evidence = Evidence {
            metrics: &metrics,
            shape: *shape,
            ..Evidence::default()
        };
        let verdict = judge(&mut changes, &evidence);
        for change in &changes {
            let v = change.verdict.as_ref().expect("judged");
            assert_eq!(v.test, probe_model::Test::Collective, "{what}");
            assert_eq!(v.assessment, *want, "{what}: {}", v.reason);
            assert!(v.reason.contains(reason), "{what}: {}", v.reason);
        }
        if *want == Assessment::Explains {
            assert_eq!(
                verdict.cause.as_deref(),
                Some("disable-custom-all-reduce"),
                "{what}"
            );
        }
    }
}

/// A TTFT-only slowdown at idle is outside what the all-reduce path can produce: ruled out.
#[test]
fn not_a_first_token_delay_at_idle() {
    let mut changes = vec![added("disable-custom-all-reduce", json!(true))];
    let metrics = vec![
        metric("gen_throughput", 80.0, 80.0),
        metric("ttft_p50 (bench, s)", 0.12, 0.30),
        metric("running_reqs", 1.0, 1.0),
    ];
    let evidence = Evidence {
        metrics: &metrics,
        shape: GLM_TP4,
        ..Evidence::default()
    };
    judge(&mut changes, &evidence);
    let v = changes[0].verdict.as_ref().unwrap();
    assert_eq!(v.assessment, Assessment::RuledOut, "{v:#?}");
}
