//! The model's shape (layers, hidden size, from the snapshots' model configs) and each launch's
//! tensor-parallel size: what the verdict's collective test shares an added step time out over.

use probe_model::{LaunchConfig, Snapshot};

/// The tensor-parallel size a launch ran with: its option, else 1 (every engine's default).
fn tensor_parallel(launch: &LaunchConfig) -> f64 {
    probe_launch::common::common_fields(launch)
        .get("tensor_parallel")
        .and_then(|v| v.as_f64().or_else(|| v.as_str()?.parse().ok()))
        .unwrap_or(1.0)
}

/// A number among a model config's fields, top level or a nested text model's.
fn model_field(snapshot: &Snapshot, model: Option<&str>, name: &str) -> Option<f64> {
    let nested = format!("text_config.{name}");
    let mut models: Vec<&probe_model::ModelConfig> = snapshot.models.iter().collect();
    // The running launch's model first.
    models.sort_by_key(|m| model != Some(m.model.as_str()));
    models.iter().find_map(|m| {
        m.fields
            .get(name)
            .or_else(|| m.fields.get(&nested))
            .and_then(serde_json::Value::as_f64)
    })
}

/// The model's shape (from either snapshot's model configs, the launches' model first) and the
/// tensor-parallel size of each launch.
pub(crate) fn shape_of(
    (before, after): (&Snapshot, &Snapshot),
    (lb, la): (Option<&LaunchConfig>, Option<&LaunchConfig>),
) -> crate::verdict::Shape {
    let field = |name: &str| {
        model_field(after, la.and_then(|l| l.model.as_deref()), name)
            .or_else(|| model_field(before, lb.and_then(|l| l.model.as_deref()), name))
    };
    crate::verdict::Shape {
        layers: field("num_hidden_layers"),
        hidden: field("hidden_size"),
        tp: (lb.map(tensor_parallel), la.map(tensor_parallel)),
    }
}
