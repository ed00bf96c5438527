//! A flag and the start-up limit it sets are one change: `--max-num-batched-tokens 512` added by
//! a drop-in, and the `max_num_batched_tokens` the engine then logged at start-up (8192 -> 512),
//! are one row with one impact and one reasoning, its earlier value said as the default the
//! earlier run's engine resolved (`default (8192)`). Which limit an option sets is data: the
//! engine catalog's `startup_limit` (`configs/engines/`).

use probe_model::{Change, ChangeKind, DefaultFrom, LaunchConfig, UnsetDefault};

use probe_launch::catalog::{Catalog, catalog};
use probe_launch::default_of;

use crate::impact::value_number;
use crate::ranking::rank;

/// The key prefix of a start-up limit's change ([`super::compare_runs`]).
const LIMIT: &str = "limit:";

/// Folds each `limit:NAME` change into the change of the option that sets limit NAME, where both
/// are in `changes` (the launches compared and their runs), and says the earlier value of an
/// option left unset as its default: what the earlier run's engine resolved, else the catalog's
/// default for that version. Launches of different engines are left alone (their options are
/// keyed across engines).
pub(crate) fn fold_limits(changes: &mut Vec<Change>, before: &LaunchConfig, after: &LaunchConfig) {
    if before.engine != after.engine {
        return;
    }
    let catalogs = (
        catalog(before.engine, before.engine_version.as_deref()),
        catalog(after.engine, after.engine_version.as_deref()),
    );
    let (limits, mut rest): (Vec<Change>, Vec<Change>) = std::mem::take(changes)
        .into_iter()
        .partition(|c| c.key.starts_with(LIMIT));
    for option in rest.iter_mut() {
        let Some(name) = limit_of(catalogs, &option.key) else {
            continue;
        };
        option.startup_limit = Some(name.to_string());
        if option.unset_default.is_none() {
            option.unset_default = catalog_default(catalogs, option);
        }
    }
    for limit in limits {
        let name = limit.key.get(LIMIT.len()..).unwrap_or_default();
        match rest
            .iter_mut()
            .find(|c| c.startup_limit.as_deref() == Some(name))
        {
            Some(option) => absorb(option, &limit),
            None => rest.push(limit),
        }
    }
    *changes = rest;
    rank(changes);
}

/// The start-up limit the option `key` sets, by either side's catalog.
fn limit_of<'c>(catalogs: (&'c Catalog, &'c Catalog), key: &str) -> Option<&'c str> {
    catalogs
        .1
        .get(key)
        .or_else(|| catalogs.0.get(key))
        .and_then(|spec| spec.startup_limit.as_deref())
}

/// The catalog's default on the side that leaves an option unset (the earlier side of an added
/// option, the later of a removed one), for that side's engine version.
fn catalog_default(catalogs: (&Catalog, &Catalog), option: &Change) -> Option<UnsetDefault> {
    let side = match option.kind {
        ChangeKind::Added if option.before.is_none() => catalogs.0,
        ChangeKind::Removed if option.after.is_none() => catalogs.1,
        _ => return None,
    };
    let value = default_of(side.get(&option.key))?;
    (!value.is_null()).then_some(UnsetDefault {
        value,
        from: DefaultFrom::Catalog,
    })
}

/// One change of the option and its limit: the option's key (what the verdict's checks and
/// the restore text name), the stronger impact with its reasoning, what the engine resolved in
/// the note, and the resolved value as the default of the side that left the option unset.
fn absorb(option: &mut Change, limit: &Change) {
    let resolved = match option.kind {
        ChangeKind::Added if option.before.is_none() => limit.before.clone(),
        ChangeKind::Removed if option.after.is_none() => limit.after.clone(),
        _ => None,
    };
    if let Some(value) = resolved {
        option.unset_default = Some(UnsetDefault {
            value,
            from: DefaultFrom::Resolved,
        });
    }
    if limit.impact < option.impact {
        option.impact = limit.impact;
        option.category = limit.category;
        option.explanation = limit.explanation.clone();
    }
    let number = |v: Option<&serde_json::Value>| {
        v.and_then(value_number)
            .map(crate::number::number)
            .unwrap_or_else(|| String::from("?"))
    };
    let resolved_note = format!(
        "the engine resolved {} {} -> {} at start-up",
        limit.key.get(LIMIT.len()..).unwrap_or_default(),
        number(limit.before.as_ref()),
        number(limit.after.as_ref())
    );
    option.note = Some(match option.note.take() {
        Some(note) => format!("{note}; {resolved_note}"),
        None => resolved_note,
    });
    if option.mechanism.is_none() {
        option.mechanism = limit.mechanism.clone();
    }
}

/// The numbers a change went from and to, with the default of the side that left an option
/// unset standing for it.
pub(crate) fn effective_numbers(change: &Change) -> (Option<f64>, Option<f64>) {
    let unset = change
        .unset_default
        .as_ref()
        .and_then(|d| value_number(&d.value));
    let before = change.before.as_ref().and_then(value_number);
    let after = change.after.as_ref().and_then(value_number);
    match change.kind {
        ChangeKind::Added => (before.or(unset), after),
        ChangeKind::Removed => (before, after.or(unset)),
        ChangeKind::Changed => (before, after),
    }
}

#[cfg(test)]
mod tests {
    use probe_model::{Engine, Impact, LaunchOption};
    use serde_json::{Value, json};

    use super::*;
    use crate::compare::compare_runs;
    use crate::compare::launch::compare_launches;

    fn launch(engine: Engine, version: &str, options: &[(&str, Value)]) -> LaunchConfig {
        LaunchConfig {
            engine,
            engine_version: Some(version.into()),
            model: Some("/m".into()),
            options: options
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        LaunchOption {
                            value: v.clone(),
                            written: format!("--{k} {v}"),
                        },
                    )
                })
                .collect(),
            ..LaunchConfig::default()
        }
    }

    fn run(limits: &[(&str, f64)]) -> probe_model::Run {
        probe_model::Run {
            limits: limits.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            ..probe_model::Run::default()
        }
    }

    /// A run's start-up limits.
    type Limits = Vec<(&'static str, f64)>;

    /// (engine, options before/after, limits before/after) -> the one row: key, kind, unset
    /// default (value, from), whether a `limit:` row is left.
    #[test]
    fn a_flag_and_its_start_up_limit_are_one_change() {
        struct Case {
            engine: Engine,
            version: &'static str,
            before: Vec<(&'static str, Value)>,
            after: Vec<(&'static str, Value)>,
            limits: (Limits, Limits),
            key: &'static str,
            kind: ChangeKind,
            default: Option<(Value, DefaultFrom)>,
            limit_row_left: bool,
        }
        let cases = [
            // A drop-in adds the budget; the earlier run resolved 8192 (the default there).
            Case {
                engine: Engine::Vllm,
                version: "0.11.0",
                before: vec![],
                after: vec![("max-num-batched-tokens", json!(512))],
                limits: (
                    vec![("max_num_batched_tokens", 8192.0)],
                    vec![("max_num_batched_tokens", 512.0)],
                ),
                key: "max-num-batched-tokens",
                kind: ChangeKind::Added,
                default: Some((json!(8192), DefaultFrom::Resolved)),
                limit_row_left: false,
            },
            // Set on both sides: one row, the values as written.
            Case {
                engine: Engine::Sglang,
                version: "0.5.9",
                before: vec![("max-running-requests", json!(48))],
                after: vec![("max-running-requests", json!(8))],
                limits: (
                    vec![("max_running_requests", 48.0)],
                    vec![("max_running_requests", 8.0)],
                ),
                key: "max-running-requests",
                kind: ChangeKind::Changed,
                default: None,
                limit_row_left: false,
            },
            // Removed: the later run's resolved value is the default it fell back to.
            Case {
                engine: Engine::Sglang,
                version: "0.5.9",
                before: vec![("chunked-prefill-size", json!(16384))],
                after: vec![],
                limits: (
                    vec![("chunked_prefill_size", 16384.0)],
                    vec![("chunked_prefill_size", 8192.0)],
                ),
                key: "chunked-prefill-size",
                kind: ChangeKind::Removed,
                default: Some((json!(8192), DefaultFrom::Resolved)),
                limit_row_left: false,
            },
            // No limit logged: the catalog's default for that version.
            Case {
                engine: Engine::Sglang,
                version: "0.5.9",
                before: vec![],
                after: vec![("max-prefill-tokens", json!(4096))],
                limits: (vec![], vec![]),
                key: "max-prefill-tokens",
                kind: ChangeKind::Added,
                default: Some((json!(16384), DefaultFrom::Catalog)),
                limit_row_left: false,
            },
            // A limit no flag changed (the KV cache shrank on its own) stays a row of its own.
            Case {
                engine: Engine::Vllm,
                version: "0.11.0",
                before: vec![("max-num-seqs", json!(256))],
                after: vec![("max-num-seqs", json!(64))],
                limits: (
                    vec![("kv_cache_tokens", 1_000_000.0)],
                    vec![("kv_cache_tokens", 500_000.0)],
                ),
                key: "max-num-seqs",
                kind: ChangeKind::Changed,
                default: None,
                limit_row_left: true,
            },
        ];
        for case in cases {
            let before = launch(case.engine, case.version, &case.before);
            let after = launch(case.engine, case.version, &case.after);
            let mut changes = compare_launches(&before, &after).changes;
            changes.extend(compare_runs(&run(&case.limits.0), &run(&case.limits.1)));
            fold_limits(&mut changes, &before, &after);
            let rows: Vec<&Change> = changes
                .iter()
                .filter(|c| c.key == case.key || c.key.starts_with(LIMIT))
                .collect();
            let option = rows
                .iter()
                .find(|c| c.key == case.key)
                .unwrap_or_else(|| panic!("{}: {changes:#?}", case.key));
            assert_eq!(option.kind, case.kind, "{}", case.key);
            assert_eq!(
                option
                    .unset_default
                    .as_ref()
                    .map(|d| (d.value.clone(), d.from)),
                case.default,
                "{}",
                case.key
            );
            assert_eq!(
                rows.iter().any(|c| c.key.starts_with(LIMIT)),
                case.limit_row_left,
                "{}: {rows:#?}",
                case.key
            );
            if !case.limits.0.is_empty() && !case.limit_row_left {
                let note = option.note.as_deref().unwrap_or_default();
                assert!(note.contains("the engine resolved"), "{note}");
            }
        }
    }

    #[test]
    fn the_merged_change_takes_the_stronger_impact() {
        let before = launch(Engine::Sglang, "0.5.9", &[]);
        let after = launch(
            Engine::Sglang,
            "0.5.9",
            &[("max-running-requests", json!(4))],
        );
        let mut changes = compare_launches(&before, &after).changes;
        changes.extend(compare_runs(
            &run(&[("max_running_requests", 2048.0)]),
            &run(&[("max_running_requests", 4.0)]),
        ));
        fold_limits(&mut changes, &before, &after);
        let [one] = changes.as_slice() else {
            panic!("{changes:#?}");
        };
        assert_eq!(one.key, "max-running-requests");
        assert_eq!(one.impact, Impact::High, "{one:#?}");
        assert_eq!(effective_numbers(one), (Some(2048.0), Some(4.0)));
    }
}
