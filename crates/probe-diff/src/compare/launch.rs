//! Two launch configurations compared option by option, default-aware and typed, across engines.

use probe_model::{Change, ChangeKey, ChangeKind, KeyArea, LaunchConfig, LaunchDiff};
use serde_json::Value;

use probe_launch::catalog::{ValueKind, catalog, values_equal};
use probe_launch::speculative::{self, SpecView};
use probe_launch::{ConfigField, OWN_MTP_HEADS, launch_details, trim_model};

use super::launch_env::compare_env;
use super::launch_options::{compare_options_across_engines, compare_options_same_engine};
use super::launch_sides::{Collector, Sides};
use crate::impact::{Area, Subject};
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

/// The model each launch serves: its own, or where neither names one (an Ollama server's models
/// are what its runners load), the one each loaded first, when both are known. A model kept
/// loaded beside it is no change of the model (its settings, `max-loaded-models`, are).
fn compare_model(before: &LaunchConfig, after: &LaunchConfig, collector: &mut Collector) {
    let (before_model, after_model) = match (before.model.as_deref(), after.model.as_deref()) {
        (None, None) => match (before.loaded_models.first(), after.loaded_models.first()) {
            (Some(b), Some(a)) => (Some(b.as_str()), Some(a.as_str())),
            _ => return,
        },
        (b, a) => (b.map(trim_model), a.map(trim_model)),
    };
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
