//! Causes and consequences (issue 33): a value the engine resolved from other settings is ranked
//! right under the changes it follows from, with their impact, never above them and never as a
//! cause of its own; alone, its note says what it derives from.

use probe_diff::{Evidence, judge, rank};
use probe_model::{Category, Change, ChangeKind, Impact};
use serde_json::json;

fn change(key: &str, impact: Impact, category: Category) -> Change {
    Change {
        key: key.to_string(),
        impact,
        category,
        kind: ChangeKind::Changed,
        before: Some(json!(1)),
        after: Some(json!(2)),
        explanation: format!("{key} changed"),
        ..Change::default()
    }
}

const KV: &str = "limit:kv_cache_tokens";

/// (changes in, keys in the ranked order, the consequence's causes)
type Case = (
    &'static [(&'static str, Impact)],
    &'static [&'static str],
    &'static [&'static str],
);

#[test]
fn a_consequence_goes_under_its_causes() {
    let cases: &[Case] = &[
        // The drop-in: the KV count ranked HIGH above the two settings that caused it.
        (
            &[
                (KV, Impact::High),
                ("disable-custom-all-reduce", Impact::Medium),
                ("env:NCCL_P2P_DISABLE", Impact::Medium),
            ],
            &["disable-custom-all-reduce", "env:NCCL_P2P_DISABLE", KV],
            &["disable-custom-all-reduce", "env:NCCL_P2P_DISABLE"],
        ),
        // A cause ranked lower than an unrelated change: the consequence follows its cause.
        (
            &[
                ("package:numpy", Impact::High),
                (KV, Impact::High),
                ("gpu-memory-utilization", Impact::Low),
            ],
            &["package:numpy", "gpu-memory-utilization", KV],
            &["gpu-memory-utilization"],
        ),
        // Nothing it derives from differs: it stays where it ranks, linked to nothing.
        (
            &[(KV, Impact::Low), ("package:numpy", Impact::Low)],
            &[KV, "package:numpy"],
            &[],
        ),
    ];
    for (input, order, causes) in cases {
        let mut changes: Vec<Change> = input
            .iter()
            .map(|(key, impact)| change(key, *impact, Category::Other))
            .collect();
        rank(&mut changes);
        let keys: Vec<&str> = changes.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(&keys, order, "{input:?}");
        let kv = changes.iter().find(|c| c.key == KV).unwrap();
        assert_eq!(kv.consequence_of, *causes, "{input:?}");
        let at = keys.iter().position(|k| *k == KV).unwrap();
        if let Some(cause) = at.checked_sub(1).filter(|_| !causes.is_empty()) {
            assert_eq!(kv.impact, changes[cause].impact, "its cause's impact");
        }
        assert!(
            changes.windows(2).all(|p| p[0].impact <= p[1].impact),
            "still ranked: {keys:?}"
        );
    }
}

#[test]
fn a_lone_consequence_says_what_it_derives_from() {
    let mut changes = vec![change(KV, Impact::Low, Category::MemoryKvCache)];
    rank(&mut changes);
    let note = changes[0].note.clone().unwrap_or_default();
    assert!(note.contains("derived from the GPU memory left"), "{note}");
    assert!(note.contains("none of them differs here"), "{note}");
    // Ranking again does not repeat the note.
    rank(&mut changes);
    assert_eq!(changes[0].note.as_deref(), Some(note.as_str()));
}

#[test]
fn a_consequence_is_never_judged_as_a_cause() {
    let mut changes = vec![
        change(KV, Impact::High, Category::MemoryKvCache),
        change(
            "disable-custom-all-reduce",
            Impact::Medium,
            Category::Parallelism,
        ),
    ];
    rank(&mut changes);
    let verdict = judge(&mut changes, &Evidence::default());
    let kv = changes.iter().find(|c| c.key == KV).unwrap();
    assert!(kv.verdict.is_none(), "{:?}", kv.verdict);
    assert_eq!(
        changes.last().unwrap().key,
        KV,
        "under its cause after the verdict's ranking"
    );
    assert_ne!(verdict.cause.as_deref(), Some(KV));
    assert!(
        changes[0].verdict.is_some(),
        "the cause was judged: {:?}",
        changes[0]
    );
}
