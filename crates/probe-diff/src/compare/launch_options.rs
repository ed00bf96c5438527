//! Two launches' options compared: by canonical name within one engine, by cross-engine key
//! across engines, typed and default-aware (an option at its default equals one unset).

use std::collections::{BTreeMap, BTreeSet};

use probe_launch::catalog::{Catalog, OptionSpec, ValueKind, display, values_equal};
use probe_launch::{
    ConfigDifference, ConfigField, covered_by_speculative, default_of, speculative_leftover,
};
use probe_model::{ChangeKind, LaunchConfig};
use serde_json::Value;

use super::launch_sides::{Collector, Sides};
use crate::impact::{Area, Subject, change_for};

/// Whether an option is the model itself: compared once, as [`LaunchConfig::model`].
pub(super) fn is_model_option(sides: &Sides<'_>, name: &str) -> bool {
    sides.before_catalog.is_model_option(name) || sides.after_catalog.is_model_option(name)
}

pub(super) fn kind_of<'a>(
    left: Option<&'a OptionSpec>,
    right: Option<&'a OptionSpec>,
) -> Option<&'a ValueKind> {
    left.or(right).map(|spec| &spec.kind)
}

pub(super) struct OptionSide<'a> {
    name: &'a str,
    value: Option<&'a Value>,
    written: Option<String>,
    spec: Option<&'a OptionSpec>,
}

pub(super) fn compare_options_same_engine(
    sides: &Sides<'_>,
    collector: &mut Collector,
    equal_by_default: &mut Vec<String>,
) {
    let (options, defaults) = differing_options(sides);
    compare_changed_defaults(sides, collector, &defaults);
    let names: BTreeSet<&str> = sides
        .before
        .options
        .keys()
        .chain(sides.after.options.keys())
        .map(String::as_str)
        .collect();
    for name in names {
        if is_model_option(sides, name) {
            continue;
        }
        let before_spec = sides.before_catalog.get(name);
        let after_spec = sides.after_catalog.get(name);
        let Some((before_value, after_value)) = compared_values(sides, name) else {
            continue;
        };
        let before_side = OptionSide {
            name,
            value: before_value.as_ref(),
            written: sides
                .before
                .options
                .get(name)
                .map(|option| option.written.clone()),
            spec: before_spec.or(after_spec),
        };
        let after_side = OptionSide {
            name,
            value: after_value.as_ref(),
            written: sides
                .after
                .options
                .get(name)
                .map(|option| option.written.clone()),
            spec: after_spec.or(before_spec),
        };
        // An option the comparison found equal is only noted where it equals by default.
        let mut unranked = Collector::default();
        let into = if options.contains(name) {
            &mut *collector
        } else {
            &mut unranked
        };
        compare_option(
            &before_side,
            &after_side,
            name,
            None,
            into,
            equal_by_default,
        );
    }
}

/// The options (by name) whose values differ once defaults are taken into account, and the
/// defaults (as [`ConfigField::Default`] differences) of those neither side sets that differ.
/// One comparison decides which options differ: probe-launch's, the one `same_configuration`
/// reads. This ranks and explains what it found, so "same configuration" and "no option change
/// in the diff" cannot disagree.
fn differing_options(sides: &Sides<'_>) -> (BTreeSet<String>, Vec<ConfigDifference>) {
    let (defaults, others): (Vec<ConfigDifference>, Vec<ConfigDifference>) =
        probe_launch::configuration_differences(sides.before, sides.after)
            .into_iter()
            .partition(|d| matches!(d.field, ConfigField::Default(_)));
    let options = (others.into_iter())
        .filter_map(|d| match d.field {
            ConfigField::Option(name) => Some(name),
            _ => None,
        })
        .collect();
    (options, defaults)
}

/// The values of option `name` to compare on each side; `None` when the normalised
/// speculative settings already cover it (only what they leave out of a JSON speculative
/// config is compared).
fn compared_values(sides: &Sides<'_>, name: &str) -> Option<(Option<Value>, Option<Value>)> {
    let spec = sides
        .after_catalog
        .get(name)
        .or(sides.before_catalog.get(name));
    let before = sides.before.options.get(name).map(|o| o.value.clone());
    let after = sides.after.options.get(name).map(|o| o.value.clone());
    if !(sides.speculative_handled && covered_by_speculative(sides.after_catalog, spec, name)) {
        return Some((before, after));
    }
    if sides.after_catalog.speculative.json_option.as_deref() != Some(name) {
        return None;
    }
    let before = before.and_then(|v| speculative_leftover(sides.before_catalog, &v));
    let after = after.and_then(|v| speculative_leftover(sides.after_catalog, &v));
    let empty = |value: &Option<Value>| {
        value
            .as_ref()
            .is_none_or(|v| v.as_object().is_some_and(|o| o.is_empty()))
    };
    (!(empty(&before) && empty(&after))).then_some((before, after))
}

pub(super) fn compare_options_across_engines(
    sides: &Sides<'_>,
    collector: &mut Collector,
    equal_by_default: &mut Vec<String>,
) {
    // Cross-engine keys of the options set on either side.
    let mut commons: BTreeMap<String, (Option<&str>, Option<&str>)> = BTreeMap::new();
    let unmapped_before = by_common(sides, sides.before, sides.before_catalog, |common, name| {
        commons.entry(common).or_default().0 = Some(name);
    });
    let unmapped_after = by_common(sides, sides.after, sides.after_catalog, |common, name| {
        commons.entry(common).or_default().1 = Some(name);
    });
    for (common, names) in &commons {
        compare_common(sides, common, *names, collector, equal_by_default);
    }
    for (launch, catalog, names, removed) in [
        (sides.before, sides.before_catalog, &unmapped_before, true),
        (sides.after, sides.after_catalog, &unmapped_after, false),
    ] {
        for name in names {
            let unmapped = Unmapped {
                launch,
                catalog,
                name,
                removed,
            };
            compare_unmapped(sides, &unmapped, collector, equal_by_default);
        }
    }
}

/// Hands each option `launch` sets (its model left out) to `mapped` with its cross-engine key;
/// returns the options without one.
pub(super) fn by_common<'l>(
    sides: &Sides<'_>,
    launch: &'l LaunchConfig,
    catalog: &Catalog,
    mut mapped: impl FnMut(String, &'l str),
) -> Vec<&'l str> {
    let mut unmapped = Vec::new();
    for name in launch.options.keys() {
        if is_model_option(sides, name) {
            continue;
        }
        match catalog.get(name).and_then(|spec| spec.common.clone()) {
            Some(common) => mapped(common, name.as_str()),
            None => unmapped.push(name.as_str()),
        }
    }
    unmapped
}

/// One cross-engine key compared: each side's option (or its catalog's option for that key).
pub(super) fn compare_common(
    sides: &Sides<'_>,
    common: &str,
    (before_name, after_name): (Option<&str>, Option<&str>),
    collector: &mut Collector,
    equal_by_default: &mut Vec<String>,
) {
    let spec_of = |catalog: &'static Catalog, name: Option<&str>| match name {
        Some(name) => catalog.get(name),
        None => catalog.by_common(common),
    };
    let before_spec = spec_of(sides.before_catalog, before_name);
    let after_spec = spec_of(sides.after_catalog, after_name);
    let value_of = |launch: &LaunchConfig, name: Option<&str>, spec| {
        name.and_then(|name| launch.options.get(name))
            .map(|option| map_value(spec, &option.value))
    };
    let before_value = value_of(sides.before, before_name, before_spec);
    let after_value = value_of(sides.after, after_name, after_spec);
    let label_of = |name: Option<&str>, spec: Option<&OptionSpec>| {
        name.map(str::to_string)
            .or_else(|| spec.map(|spec| spec.name.clone()))
    };
    let before_label = label_of(before_name, before_spec);
    let after_label = label_of(after_name, after_spec);
    let key = after_label
        .clone()
        .or_else(|| before_label.clone())
        .unwrap_or_else(|| common.to_string());
    let written_of = |launch: &LaunchConfig, name: Option<&str>| {
        name.and_then(|name| launch.options.get(name))
            .map(|option| option.written.clone())
    };
    let before_side = OptionSide {
        name: before_label.as_deref().unwrap_or(common),
        value: before_value.as_ref(),
        written: written_of(sides.before, before_name),
        spec: before_spec,
    };
    let after_side = OptionSide {
        name: after_label.as_deref().unwrap_or(common),
        value: after_value.as_ref(),
        written: written_of(sides.after, after_name),
        spec: after_spec,
    };
    let mapping = format!(
        "{} --{} <-> {} --{} ({common})",
        sides.before.engine, before_side.name, sides.after.engine, after_side.name
    );
    compare_option(
        &before_side,
        &after_side,
        &key,
        Some(mapping),
        collector,
        equal_by_default,
    );
}

/// An option of one side that has no counterpart in the other engine.
pub(super) struct Unmapped<'a> {
    launch: &'a LaunchConfig,
    catalog: &'static Catalog,
    name: &'a str,
    /// On the before side (so removed by the switch), else added.
    removed: bool,
}

pub(super) fn compare_unmapped(
    sides: &Sides<'_>,
    u: &Unmapped<'_>,
    collector: &mut Collector,
    equal_by_default: &mut Vec<String>,
) {
    let (name, removed) = (u.name, u.removed);
    let spec = u.catalog.get(name);
    if sides.speculative_handled && covered_by_speculative(u.catalog, spec, name) {
        return;
    }
    let Some(option) = u.launch.options.get(name) else {
        return;
    };
    // An option set to its own engine's default did nothing there.
    if let Some(default) = default_of(spec)
        && values_equal(&option.value, &default, spec.map(|s| &s.kind))
    {
        equal_by_default.push(format!("{name}={} (default)", display(&option.value)));
        return;
    }
    let (kind, values, written, other) = if removed {
        let written = (Some(option.written.clone()), None);
        (
            ChangeKind::Removed,
            (Some(&option.value), None),
            written,
            sides.after.engine,
        )
    } else {
        let written = (None, Some(option.written.clone()));
        (
            ChangeKind::Added,
            (None, Some(&option.value)),
            written,
            sides.before.engine,
        )
    };
    let mut subject = Subject::new(Area::Option, name, kind).values(values.0, values.1);
    subject.option_category = spec.and_then(|spec| spec.category.as_deref());
    let note = format!("engine switch: {other} has no counterpart");
    collector.push(&subject, option_key(name), written.0, written.1, Some(note));
}

/// Options neither launch sets whose default differs between the two engine versions (probe-launch's
/// [`ConfigField::Default`] differences): the launches read the same but run differently
/// (vLLM's `--gpu-memory-utilization` went from 0.9 to 0.92).
pub(super) fn compare_changed_defaults(
    sides: &Sides<'_>,
    collector: &mut Collector,
    defaults: &[ConfigDifference],
) {
    let (Some(before_version), Some(after_version)) = (
        sides.before.engine_version.as_deref(),
        sides.after.engine_version.as_deref(),
    ) else {
        return;
    };
    for d in defaults {
        let (ConfigField::Default(name), Some(before_default), Some(after_default)) =
            (&d.field, &d.before, &d.after)
        else {
            continue;
        };
        let after_spec = sides.after_catalog.get(name);
        let mut subject = Subject::new(Area::Option, name, ChangeKind::Changed)
            .values(Some(before_default), Some(after_default));
        subject.common = after_spec.and_then(|spec| spec.common.as_deref());
        subject.option_category = after_spec.and_then(|spec| spec.category.as_deref());
        let note = format!(
            "set by neither launch: the default changed from {} ({before_version}) to {} \
             ({after_version})",
            display(before_default),
            display(after_default)
        );
        collector.push(&subject, option_key(name), None, None, Some(note));
    }
}

/// The key of an option change: its canonical name (a name lost in parsing still gets a key).
pub(super) fn option_key(name: &str) -> String {
    if name.trim().is_empty() {
        String::from("(unnamed option)")
    } else {
        name.to_string()
    }
}

/// Applies an option's mapping of written values to the cross-engine value (`4` -> `int4`).
pub(super) fn map_value(spec: Option<&OptionSpec>, value: &Value) -> Value {
    let Some(spec) = spec else {
        return value.clone();
    };
    if spec.value_map.is_empty() {
        return value.clone();
    }
    spec.value_map
        .get(&display(value))
        .cloned()
        .unwrap_or_else(|| value.clone())
}

pub(super) fn compare_option(
    before: &OptionSide<'_>,
    after: &OptionSide<'_>,
    key: &str,
    mapping: Option<String>,
    collector: &mut Collector,
    equal_by_default: &mut Vec<String>,
) {
    let common = after
        .spec
        .and_then(|spec| spec.common.as_deref())
        .or_else(|| before.spec.and_then(|spec| spec.common.as_deref()));
    let option_category = after
        .spec
        .and_then(|spec| spec.category.as_deref())
        .or_else(|| before.spec.and_then(|spec| spec.category.as_deref()));
    let Some((change_kind, before_effective, after_effective, note)) =
        effective(before, after, key, mapping, equal_by_default)
    else {
        return;
    };
    let mut subject = Subject::new(Area::Option, after.name, change_kind)
        .values(before_effective.as_ref(), after_effective.as_ref());
    if before.value.is_some() && after.value.is_none() {
        subject.name = before.name;
    }
    subject.common = common;
    subject.option_category = option_category;
    let Some((mut change, volatile)) = change_for(&subject, option_key(key)) else {
        return;
    };
    // The change records the values as written on each side; defaults live in the note.
    change.before = before.value.cloned();
    change.after = after.value.cloned();
    change.before_written = before.written.clone();
    change.after_written = after.written.clone();
    change.note = note;
    if volatile {
        collector.volatile.push(change);
    } else {
        collector.changes.push(change);
    }
}

/// The change an option's two sides make, with the value in effect on each side (a side that
/// leaves it unset has its default, where the catalog knows it) and the note that says so;
/// `None` when they are equal, an option equal by default noted in `equal_by_default`.
fn effective(
    before: &OptionSide<'_>,
    after: &OptionSide<'_>,
    key: &str,
    mapping: Option<String>,
    equal_by_default: &mut Vec<String>,
) -> Option<Effective> {
    let kind = kind_of(after.spec, before.spec);
    let join = |note: String| match &mapping {
        Some(mapping) => format!("{note}; mapped across engines: {mapping}"),
        None => note,
    };
    let outcome = match (before.value, after.value) {
        (None, None) => return None,
        (Some(a), Some(b)) => {
            if values_equal(a, b, kind) {
                return None;
            }
            (
                ChangeKind::Changed,
                Some(a.clone()),
                Some(b.clone()),
                mapping.clone(),
            )
        }
        (Some(a), None) => match default_of(after.spec) {
            Some(default) if values_equal(a, &default, kind) => {
                equal_by_default.push(format!("{key}={} (default)", display(a)));
                return None;
            }
            Some(default) => {
                let note = join(format!("unset now: the default is {}", display(&default)));
                (
                    ChangeKind::Removed,
                    Some(a.clone()),
                    Some(default),
                    Some(note),
                )
            }
            None => (
                ChangeKind::Removed,
                Some(a.clone()),
                None,
                Some(join(String::from(
                    "unset now: the engine decides at start-up",
                ))),
            ),
        },
        (None, Some(b)) => match default_of(before.spec) {
            Some(default) if values_equal(b, &default, kind) => {
                equal_by_default.push(format!("{key}={} (default)", display(b)));
                return None;
            }
            Some(default) => {
                let note = join(format!("was unset: the default was {}", display(&default)));
                (
                    ChangeKind::Added,
                    Some(default),
                    Some(b.clone()),
                    Some(note),
                )
            }
            None => (
                ChangeKind::Added,
                None,
                Some(b.clone()),
                Some(join(String::from(
                    "was unset: the engine decided at start-up",
                ))),
            ),
        },
    };
    Some(outcome)
}

/// A change's kind, the values in effect before and after, and its note.
type Effective = (ChangeKind, Option<Value>, Option<Value>, Option<String>);
