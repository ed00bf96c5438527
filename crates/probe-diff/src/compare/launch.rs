//! Two launch configurations compared option by option, default-aware and typed, across engines.

use std::collections::{BTreeMap, BTreeSet};

use probe_model::{Change, ChangeKey, ChangeKind, KeyArea, LaunchConfig, LaunchDiff, SourceKind};
use serde_json::Value;

use probe_launch::catalog::{Catalog, OptionSpec, ValueKind, catalog, display, values_equal};
use probe_launch::speculative::{self, SpecView};
use probe_launch::{
    ConfigField, OWN_MTP_HEADS, covered_by_speculative, default_of, launch_details,
    speculative_leftover, trim_model,
};

use crate::impact::{Area, Subject, change_for};
use crate::label::launch_label;
use crate::ranking::rank;

/// Compares two launches: what was added, removed and changed, ranked by likely impact.
pub fn compare_launches(before: &LaunchConfig, after: &LaunchConfig) -> LaunchDiff {
    compare_launches_split(before, after).0
}

/// Like [`compare_launches`], also returning the volatile differences (environment churn such as
/// `SSH_CONNECTION`) that are not counted as changes.
pub(crate) fn compare_launches_split(
    before: &LaunchConfig,
    after: &LaunchConfig,
) -> (LaunchDiff, Vec<Change>) {
    let mut collector = Collector::default();
    let mut diff = LaunchDiff {
        before: launch_label(before),
        after: launch_label(after),
        ..LaunchDiff::default()
    };

    if before.engine != after.engine {
        diff.engine_switch = Some((before.engine, after.engine));
        let before_value = Value::from(before.engine.as_str());
        let after_value = Value::from(after.engine.as_str());
        let subject = Subject::new(Area::Engine, "engine", ChangeKind::Changed)
            .values(Some(&before_value), Some(&after_value));
        collector.push(
            &subject,
            ChangeKey::fixed(KeyArea::Engine).to_string(),
            None,
            None,
            None,
        );
    }
    if let (Some(before_version), Some(after_version)) = (
        before.engine_version.as_deref(),
        after.engine_version.as_deref(),
    ) && before_version.trim() != after_version.trim()
    {
        let area = if before.engine == after.engine {
            Area::EngineVersion
        } else {
            // Versions of different engines do not order; the engine switch says it all.
            Area::Launch
        };
        let before_value = Value::from(before_version.trim());
        let after_value = Value::from(after_version.trim());
        let subject = Subject::new(area, "engine_version", ChangeKind::Changed)
            .values(Some(&before_value), Some(&after_value));
        collector.push(
            &subject,
            ChangeKey::fixed(KeyArea::EngineVersion).to_string(),
            None,
            None,
            None,
        );
    }
    compare_model(before, after, &mut collector);
    let speculative_handled = compare_speculative(before, after, &mut collector);

    let before_catalog = catalog(before.engine, before.engine_version.as_deref());
    let after_catalog = catalog(after.engine, after.engine_version.as_deref());
    let sides = Sides {
        before,
        after,
        before_catalog,
        after_catalog,
        speculative_handled,
    };
    if before.engine == after.engine {
        compare_options_same_engine(&sides, &mut collector, &mut diff.equal_by_default);
    } else {
        compare_options_across_engines(&sides, &mut collector, &mut diff.equal_by_default);
    }
    compare_env(before, after, &mut collector, &mut diff.notes);
    compare_launch_details(before, after, &mut collector);

    rank(&mut collector.changes);
    diff.changes = collector.changes;
    (diff, collector.volatile)
}

#[derive(Default)]
struct Collector {
    changes: Vec<Change>,
    volatile: Vec<Change>,
}

impl Collector {
    fn push(
        &mut self,
        subject: &Subject<'_>,
        key: String,
        before_written: Option<String>,
        after_written: Option<String>,
        note: Option<String>,
    ) {
        let Some((mut change, volatile)) = change_for(subject, key) else {
            return;
        };
        change.before_written = before_written;
        change.after_written = after_written;
        change.note = note;
        if volatile {
            change.impact = probe_model::Impact::None;
            self.volatile.push(change);
        } else {
            self.changes.push(change);
        }
    }
}

struct Sides<'a> {
    before: &'a LaunchConfig,
    after: &'a LaunchConfig,
    before_catalog: &'static Catalog,
    after_catalog: &'static Catalog,
    speculative_handled: bool,
}

fn compare_model(before: &LaunchConfig, after: &LaunchConfig, collector: &mut Collector) {
    let before_model = before.model.as_deref().map(trim_model);
    let after_model = after.model.as_deref().map(trim_model);
    if before_model == after_model {
        return;
    }
    let kind = match (before_model, after_model) {
        (None, Some(_)) => ChangeKind::Added,
        (Some(_), None) => ChangeKind::Removed,
        _ => ChangeKind::Changed,
    };
    let before_value = before_model.map(Value::from);
    let after_value = after_model.map(Value::from);
    let subject = Subject::new(Area::Model, "model", kind)
        .values(before_value.as_ref(), after_value.as_ref());
    collector.push(
        &subject,
        ChangeKey::fixed(KeyArea::Model).to_string(),
        None,
        None,
        None,
    );
}

/// Compares the normalised speculative settings. Returns whether either side has them, in which
/// case the raw speculative options are not compared again.
fn compare_speculative(
    before: &LaunchConfig,
    after: &LaunchConfig,
    collector: &mut Collector,
) -> bool {
    let before_view = speculative::view(before);
    let after_view = speculative::view(after);
    let handled = before.speculative.is_some() || after.speculative.is_some();
    match (&before_view, &after_view) {
        (None, None) => {}
        (Some(view), None) => {
            let value = view.algorithm.clone().map(Value::from);
            let subject = Subject::new(Area::Speculative, "algorithm", ChangeKind::Removed)
                .values(value.as_ref(), None);
            let note = format!("before: {}", speculative::describe(view));
            collector.push(
                &subject,
                ChangeKey::new(KeyArea::Speculative, "algorithm").to_string(),
                None,
                None,
                Some(note),
            );
        }
        (None, Some(view)) => {
            let value = view.algorithm.clone().map(Value::from);
            let subject = Subject::new(Area::Speculative, "algorithm", ChangeKind::Added)
                .values(None, value.as_ref());
            let note = format!("after: {}", speculative::describe(view));
            collector.push(
                &subject,
                ChangeKey::new(KeyArea::Speculative, "algorithm").to_string(),
                None,
                None,
                Some(note),
            );
        }
        (Some(left), Some(right)) => {
            compare_speculative_views(before, after, left, right, collector)
        }
    }
    handled
}

fn compare_speculative_views(
    before: &LaunchConfig,
    after: &LaunchConfig,
    left: &SpecView,
    right: &SpecView,
    collector: &mut Collector,
) {
    let written = |launch: &LaunchConfig| {
        launch
            .speculative
            .as_ref()
            .and_then(|speculative| speculative.algorithm.clone())
    };
    if !speculative::same_algorithm(left, right) {
        let before_value = left.algorithm.clone().map(Value::from);
        let after_value = right.algorithm.clone().map(Value::from);
        let subject = Subject::new(Area::Speculative, "algorithm", ChangeKind::Changed)
            .values(before_value.as_ref(), after_value.as_ref());
        collector.push(
            &subject,
            ChangeKey::new(KeyArea::Speculative, "algorithm").to_string(),
            written(before),
            written(after),
            None,
        );
    }
    if left.draft_model != right.draft_model {
        let before_value = Value::from(
            left.draft_model
                .clone()
                .unwrap_or_else(|| OWN_MTP_HEADS.to_string()),
        );
        let after_value = Value::from(
            right
                .draft_model
                .clone()
                .unwrap_or_else(|| OWN_MTP_HEADS.to_string()),
        );
        let subject = Subject::new(Area::Speculative, "draft_model", ChangeKind::Changed)
            .values(Some(&before_value), Some(&after_value));
        collector.push(
            &subject,
            ChangeKey::new(KeyArea::Speculative, "draft_model").to_string(),
            None,
            None,
            None,
        );
    }
    let numeric = [
        ("num_steps", &left.num_steps, &right.num_steps),
        ("eagle_topk", &left.eagle_topk, &right.eagle_topk),
        (
            "num_draft_tokens",
            &left.num_draft_tokens,
            &right.num_draft_tokens,
        ),
    ];
    for (name, before_value, after_value) in numeric {
        let equal = match (before_value, after_value) {
            (Some(a), Some(b)) => values_equal(a, b, Some(&ValueKind::Int)),
            (None, None) => true,
            // One side leaves it to the engine, which picks it at start-up: unknown, not a change.
            _ => true,
        };
        if equal {
            continue;
        }
        let subject = Subject::new(Area::Speculative, name, ChangeKind::Changed)
            .values(before_value.as_ref(), after_value.as_ref());
        collector.push(
            &subject,
            ChangeKey::new(KeyArea::Speculative, name).to_string(),
            None,
            None,
            None,
        );
    }
}

/// Whether an option is the model itself: compared once, as [`LaunchConfig::model`].
fn is_model_option(sides: &Sides<'_>, name: &str) -> bool {
    sides.before_catalog.is_model_option(name) || sides.after_catalog.is_model_option(name)
}

fn kind_of<'a>(
    left: Option<&'a OptionSpec>,
    right: Option<&'a OptionSpec>,
) -> Option<&'a ValueKind> {
    left.or(right).map(|spec| &spec.kind)
}

struct OptionSide<'a> {
    name: &'a str,
    value: Option<&'a Value>,
    written: Option<String>,
    spec: Option<&'a OptionSpec>,
}

fn compare_options_same_engine(
    sides: &Sides<'_>,
    collector: &mut Collector,
    equal_by_default: &mut Vec<String>,
) {
    // One comparison decides which options differ: probe-launch's, the one `same_configuration`
    // reads. This ranks and explains what it found, so "same configuration" and "no option
    // change in the diff" cannot disagree.
    let differences = probe_launch::configuration_differences(sides.before, sides.after);
    let differing = |wanted: fn(&ConfigField) -> Option<&str>| -> BTreeSet<String> {
        differences
            .iter()
            .filter_map(|d| wanted(&d.field).map(str::to_string))
            .collect()
    };
    let options = differing(|field| match field {
        ConfigField::Option(name) => Some(name.as_str()),
        _ => None,
    });
    let defaults = differing(|field| match field {
        ConfigField::Default(name) => Some(name.as_str()),
        _ => None,
    });
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
        let mut before_value = sides
            .before
            .options
            .get(name)
            .map(|option| option.value.clone());
        let mut after_value = sides
            .after
            .options
            .get(name)
            .map(|option| option.value.clone());
        if sides.speculative_handled
            && covered_by_speculative(sides.after_catalog, after_spec.or(before_spec), name)
        {
            // Only what the normalised form leaves out of a JSON speculative config is compared.
            if sides.after_catalog.speculative.json_option.as_deref() != Some(name) {
                continue;
            }
            before_value =
                before_value.and_then(|v| speculative_leftover(sides.before_catalog, &v));
            after_value = after_value.and_then(|v| speculative_leftover(sides.after_catalog, &v));
            let empty = |value: &Option<Value>| {
                value
                    .as_ref()
                    .is_none_or(|v| v.as_object().is_some_and(|o| o.is_empty()))
            };
            if empty(&before_value) && empty(&after_value) {
                continue;
            }
        }
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

fn compare_options_across_engines(
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
fn by_common<'l>(
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
fn compare_common(
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
struct Unmapped<'a> {
    launch: &'a LaunchConfig,
    catalog: &'static Catalog,
    name: &'a str,
    /// On the before side (so removed by the switch), else added.
    removed: bool,
}

fn compare_unmapped(
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

/// Options neither launch sets whose default differs between the two engine versions: the
/// launches read the same but run differently (vLLM's `--gpu-memory-utilization` went from 0.9
/// to 0.92).
fn compare_changed_defaults(
    sides: &Sides<'_>,
    collector: &mut Collector,
    differing: &BTreeSet<String>,
) {
    let (Some(before_version), Some(after_version)) = (
        sides.before.engine_version.as_deref(),
        sides.after.engine_version.as_deref(),
    ) else {
        return;
    };
    if before_version.trim() == after_version.trim() {
        return;
    }
    for after_spec in sides.after_catalog.options() {
        let name = after_spec.name.as_str();
        if !differing.contains(name)
            || is_model_option(sides, name)
            || sides.before.options.contains_key(name)
            || sides.after.options.contains_key(name)
        {
            continue;
        }
        let Some(before_spec) = sides.before_catalog.get(name) else {
            continue;
        };
        if sides.speculative_handled
            && covered_by_speculative(sides.after_catalog, Some(after_spec), name)
        {
            continue;
        }
        let (Some(before_default), Some(after_default)) =
            (default_of(Some(before_spec)), default_of(Some(after_spec)))
        else {
            continue;
        };
        if values_equal(&before_default, &after_default, Some(&after_spec.kind)) {
            continue;
        }
        let mut subject = Subject::new(Area::Option, name, ChangeKind::Changed)
            .values(Some(&before_default), Some(&after_default));
        subject.common = after_spec.common.as_deref();
        subject.option_category = after_spec.category.as_deref();
        let note = format!(
            "set by neither launch: the default changed from {} ({before_version}) to {} \
             ({after_version})",
            display(&before_default),
            display(&after_default)
        );
        collector.push(&subject, option_key(name), None, None, Some(note));
    }
}

/// The key of an option change: its canonical name (a name lost in parsing still gets a key).
fn option_key(name: &str) -> String {
    if name.trim().is_empty() {
        String::from("(unnamed option)")
    } else {
        name.to_string()
    }
}

/// Applies an option's mapping of written values to the cross-engine value (`4` -> `int4`).
fn map_value(spec: Option<&OptionSpec>, value: &Value) -> Value {
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

fn compare_option(
    before: &OptionSide<'_>,
    after: &OptionSide<'_>,
    key: &str,
    mapping: Option<String>,
    collector: &mut Collector,
    equal_by_default: &mut Vec<String>,
) {
    let kind = kind_of(after.spec, before.spec);
    let common = after
        .spec
        .and_then(|spec| spec.common.as_deref())
        .or_else(|| before.spec.and_then(|spec| spec.common.as_deref()));
    let option_category = after
        .spec
        .and_then(|spec| spec.category.as_deref())
        .or_else(|| before.spec.and_then(|spec| spec.category.as_deref()));
    let join = |note: String| match &mapping {
        Some(mapping) => format!("{note}; mapped across engines: {mapping}"),
        None => note,
    };
    let (change_kind, before_effective, after_effective, note) = match (before.value, after.value) {
        (None, None) => return,
        (Some(a), Some(b)) => {
            if values_equal(a, b, kind) {
                return;
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
                return;
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
                return;
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

/// Whether a launch's environment is the whole environment it ran with, so that a variable
/// missing from it was really unset: a process's environment, a container's (for the container),
/// a unit's (`Environment=` and `EnvironmentFile=`). A history line, a script or a log shows only
/// the variables written there: what the shell had exported is unknown.
pub(crate) fn env_is_complete(kind: SourceKind) -> bool {
    matches!(
        kind,
        SourceKind::Process | SourceKind::Container | SourceKind::Unit
    )
}

fn source_word(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::Process => "the process",
        SourceKind::Unit => "the unit",
        SourceKind::History => "the history line",
        SourceKind::Log => "the start-up log line",
        SourceKind::Container => "the container",
        SourceKind::File => "the file",
        SourceKind::Text => "the text",
    }
}

/// Variables shown by name in a note about variables that could not be compared.
const ENV_NOTE_NAMES: usize = 6;

/// The rule of login-session variables (CA bundles, cloud SDK settings, proxies), which no
/// engine or library setting reads: summed up in one change.
const SESSION_RULE: &str = "env-session";

fn compare_env(
    before_launch: &LaunchConfig,
    after_launch: &LaunchConfig,
    collector: &mut Collector,
    notes: &mut Vec<String>,
) {
    let before = &before_launch.env;
    let after = &after_launch.env;
    let before_complete = env_is_complete(before_launch.source.kind);
    let after_complete = env_is_complete(after_launch.source.kind);
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    // Variables set on one side only, where the other side does not show its whole environment.
    let mut unknown_before: Vec<&str> = Vec::new();
    let mut unknown_after: Vec<&str> = Vec::new();
    let mut session: Vec<&str> = Vec::new();
    // Variables the engine's catalog reads as options (Ollama's `OLLAMA_*`) are compared as those
    // options, which a start-up line listing the environment in effect shows.
    let option_vars: BTreeSet<String> = [before_launch, after_launch]
        .iter()
        .flat_map(|l| {
            probe_launch::catalog::catalog(l.engine, l.engine_version.as_deref())
                .options()
                .filter_map(|o| o.env.clone())
        })
        .collect();
    for name in names {
        let before_value = before.get(name);
        let after_value = after.get(name);
        if before_value == after_value {
            continue;
        }
        let noise = || crate::impact::is_session_variable(name) || option_vars.contains(name);
        match (before_value, after_value) {
            (None, Some(_)) if !before_complete => {
                if !noise() {
                    unknown_before.push(name);
                }
                continue;
            }
            (Some(_), None) if !after_complete => {
                if !noise() {
                    unknown_after.push(name);
                }
                continue;
            }
            _ => {}
        }
        let kind = match (before_value, after_value) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            _ => ChangeKind::Changed,
        };
        let redacted =
            |value: Option<&String>| value.is_some_and(|v| probe_model::text::is_redacted(v));
        let note = match (redacted(before_value), redacted(after_value)) {
            (true, true) => Some(String::from("values are redacted; their hashes differ")),
            (true, false) | (false, true) if kind == ChangeKind::Changed => {
                Some(String::from("one side is redacted: compared as different"))
            }
            _ => None,
        };
        let before_json = before_value.map(|v| Value::from(v.as_str()));
        let after_json = after_value.map(|v| Value::from(v.as_str()));
        let subject =
            Subject::new(Area::Env, name, kind).values(before_json.as_ref(), after_json.as_ref());
        // Login-session variables (CA bundles, cloud SDK settings) are summed up in one line.
        if crate::impact::assess(&subject).rule.as_deref() == Some(SESSION_RULE) {
            session.push(name.as_str());
            continue;
        }
        collector.push(
            &subject,
            ChangeKey::new(KeyArea::Env, name.as_str()).to_string(),
            None,
            None,
            note,
        );
    }
    if !session.is_empty() {
        let shown = probe_model::text::join_capped(&session, ENV_NOTE_NAMES, ", ");
        collector.changes.push(Change {
            category: probe_model::Category::Host,
            impact: probe_model::Impact::Low,
            kind: ChangeKind::Changed,
            key: ChangeKey::new(KeyArea::Env, "(login session)").to_string(),
            before: None,
            after: Some(Value::from(session.len())),
            explanation: format!(
                "{} login-session variables differ ({shown}); no engine or library setting reads them",
                session.len()
            ),
            ..Change::default()
        });
    }
    let mut note_for = |names: &[&str], set_in: &LaunchConfig, unknown_in: &LaunchConfig| {
        if names.is_empty() {
            return;
        }
        let shown = probe_model::text::join_capped(names, ENV_NOTE_NAMES, ", ");
        notes.push(format!(
            "env not compared: {shown} set in {} ({}); {} ({}) shows only the variables \
             written on it, so whether they were set there is unknown",
            source_word(set_in.source.kind),
            launch_label(set_in),
            source_word(unknown_in.source.kind),
            launch_label(unknown_in),
        ));
    };
    note_for(&unknown_before, after_launch, before_launch);
    note_for(&unknown_after, before_launch, after_launch);
}

fn compare_launch_details(before: &LaunchConfig, after: &LaunchConfig, collector: &mut Collector) {
    for difference in launch_details(before, after) {
        let key = match &difference.field {
            ConfigField::Detail(name) => (*name).to_string(),
            ConfigField::Unknown(flag) => {
                ChangeKey::new(KeyArea::Unknown, flag.as_str()).to_string()
            }
            _ => continue,
        };
        let subject = Subject::new(Area::Launch, &key, difference.kind)
            .values(difference.before.as_ref(), difference.after.as_ref());
        collector.push(
            &subject,
            key.clone(),
            difference.before_written,
            difference.after_written,
            None,
        );
    }
}
