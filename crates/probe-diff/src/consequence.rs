//! Causes and consequences: a value the engine resolves at start-up from other settings (its KV
//! cache in tokens or blocks, the requests it admits from memory, its CUDA graph sizes, its
//! chunked-prefill budget) is not a cause of its own. Where a setting it derives from changed
//! too, the resolved value is linked to it ([`Change::consequence_of`]) and ranked right under
//! it, never above; where nothing it derives from changed, its note says what it derives from
//! and why it moves. Which value derives from which settings is data: `configs/impact.toml`,
//! `[[consequence]]`.

use probe_model::Change;

use crate::impact::{Consequence, glob_match, rules};

fn matches(patterns: &[String], key: &str) -> bool {
    let key = key.replace('_', "-");
    patterns
        .iter()
        .any(|pattern| glob_match(&pattern.replace('_', "-"), &key))
}

/// The consequence rule of a change's key, if it is a resolved value.
pub(crate) fn rule_for(key: &str) -> Option<&'static Consequence> {
    rules().consequence.iter().find(|c| matches(&c.values, key))
}

/// Links each resolved value among `changes` to the changes it follows from, and notes what
/// a resolved value that moved alone derives from. Idempotent.
pub(crate) fn link(changes: &mut [Change]) {
    let keys: Vec<String> = changes.iter().map(|c| c.key.clone()).collect();
    for change in changes.iter_mut() {
        let Some(rule) = rule_for(&change.key) else {
            continue;
        };
        let causes: Vec<String> = keys
            .iter()
            .filter(|k| **k != change.key && rule_for(k).is_none())
            .filter(|k| matches(&rule.derived_from, k))
            .cloned()
            .collect();
        let lone = format!(
            "derived from {}; none of them differs here: {}",
            rule.from, rule.why
        );
        let linked = format!("follows from {}: {}", causes.join(", "), rule.why);
        // Ranking runs again as changes join (the runs', then the snapshot's): the note says
        // what holds for the changes now here.
        let mut notes: Vec<String> = change
            .note
            .take()
            .map(|n| n.split("; ").map(String::from).collect())
            .unwrap_or_default();
        let ours = |n: &String| n.starts_with("derived from ") || n.starts_with("follows from ");
        notes.retain(|n| !ours(n) && !lone.contains(n.as_str()) && !linked.contains(n.as_str()));
        notes.push(if causes.is_empty() { lone } else { linked });
        change.note = Some(notes.join("; "));
        change.consequence_of = causes;
    }
}

/// Moves every linked consequence right under the last of its causes (in the order `changes`
/// already has) and gives it that cause's impact, so a consequence is never ranked above a
/// cause. Consequences of the same cause keep their order; one whose causes are not among
/// `changes` is unlinked and stays where it is.
pub(crate) fn place(changes: &mut [Change]) {
    let linked = |c: &Change| !c.consequence_of.is_empty();
    if !changes.iter().any(linked) {
        return;
    }
    let rest: Vec<usize> = (0..changes.len())
        .filter(|i| !linked(&changes[*i]))
        .collect();
    let mut under: Vec<Vec<usize>> = vec![Vec::new(); rest.len()];
    let mut unlinked = Vec::new();
    for i in (0..changes.len()).filter(|i| linked(&changes[*i])) {
        let causes = &changes[i].consequence_of;
        match rest.iter().rposition(|r| causes.contains(&changes[*r].key)) {
            Some(at) => under[at].push(i),
            None => unlinked.push(i),
        }
    }
    let mut order = Vec::with_capacity(changes.len());
    let mut impacts = Vec::with_capacity(changes.len());
    for (at, r) in rest.iter().enumerate() {
        order.push(*r);
        impacts.push(changes[*r].impact);
        for i in &under[at] {
            order.push(*i);
            impacts.push(changes[*r].impact);
        }
    }
    let mut reordered: Vec<Change> = order.iter().map(|i| changes[*i].clone()).collect();
    for (change, impact) in reordered.iter_mut().zip(impacts) {
        change.impact = impact;
    }
    for i in unlinked {
        let mut change = changes[i].clone();
        change.consequence_of.clear();
        reordered.push(change);
    }
    changes.clone_from_slice(&reordered);
}
