//! Two runs compared on what was in effect while each ran: the engine version it ran, its
//! serving packages, the driver and CUDA, the model's revision and config, and the limits the
//! engine resolved at start-up. Launch options are compared by [`super::compare_launches`].

use probe_model::{Change, ChangeKey, ChangeKind, KeyArea, ModelSummary, Run, RunPackage};
use serde_json::Value;

use crate::impact::{Area, Subject, change_for};
use crate::ranking::rank;
use probe_launch::engine_package;

/// The differences between what two runs had in effect, ranked.
pub fn compare_runs(before: &Run, after: &Run) -> Vec<Change> {
    let mut changes = Vec::new();
    engine_version(before, after, &mut changes);
    packages(before, after, &mut changes);
    let gpu = [
        ("driver_version", &before.driver, &after.driver),
        ("cuda_version", &before.cuda, &after.cuda),
    ];
    for (name, b, a) in gpu {
        if let (Some(b), Some(a)) = (b, a)
            && b.trim() != a.trim()
        {
            push_text(
                &mut changes,
                Area::Gpu,
                name,
                ChangeKey::new(KeyArea::Gpus, name).to_string(),
                b,
                a,
            );
        }
    }
    if let (Some(b), Some(a)) = (&before.model, &after.model) {
        model(b, a, &mut changes);
    }
    limits(before, after, &mut changes);
    changes.extend(crate::hardware::run_causes(before, after));
    rank(&mut changes);
    changes
}

fn push_text(changes: &mut Vec<Change>, area: Area, name: &str, key: String, b: &str, a: &str) {
    let (bv, av) = (Value::from(b.trim()), Value::from(a.trim()));
    let subject = Subject::new(area, name, ChangeKind::Changed).values(Some(&bv), Some(&av));
    if let Some((change, false)) = change_for(&subject, key) {
        changes.push(change);
    }
}

fn engine_version(before: &Run, after: &Run, changes: &mut Vec<Change>) {
    if before.engine != after.engine {
        return;
    }
    match (
        &before.engine_version.version,
        &after.engine_version.version,
    ) {
        (Some(b), Some(a)) if b.trim() != a.trim() => push_text(
            changes,
            Area::EngineVersion,
            "engine_version",
            ChangeKey::fixed(KeyArea::EngineVersion).to_string(),
            b,
            a,
        ),
        (None, Some(a)) => {
            let Some(note) = &before.engine_version.note else {
                return;
            };
            // The earlier run ran a version older than the one installed later.
            if !note.starts_with("older than") {
                return;
            }
            let (bv, av) = (Value::from(note.as_str()), Value::from(a.trim()));
            let subject = Subject::new(Area::EngineVersion, "engine_version", ChangeKind::Changed)
                .values(Some(&bv), Some(&av));
            if let Some((mut change, false)) = change_for(
                &subject,
                ChangeKey::fixed(KeyArea::EngineVersion).to_string(),
            ) {
                change.explanation = format!(
                    "engine upgraded between the runs ({note} -> {}): kernels, scheduler and \
                     defaults may differ",
                    a.trim()
                );
                changes.push(change);
            }
        }
        _ => {}
    }
}

fn package_text(package: &RunPackage) -> Option<String> {
    package.version.clone().or_else(|| {
        package
            .note
            .as_ref()
            .filter(|n| n.contains("after this run started"))
            .map(|n| format!("older than {n}"))
    })
}

fn packages(before: &Run, after: &Run, changes: &mut Vec<Change>) {
    let engine = engine_package(after.engine);
    for a in &after.packages {
        if engine.contains(&a.name) {
            continue;
        }
        let Some(b) = before.packages.iter().find(|b| b.name == a.name) else {
            continue;
        };
        let (Some(bt), Some(at)) = (package_text(b), package_text(a)) else {
            continue;
        };
        if bt != at {
            push_text(
                changes,
                Area::Package,
                &a.name,
                ChangeKey::new(KeyArea::Package, a.name.as_str()).to_string(),
                &bt,
                &at,
            );
        }
    }
}

fn model(before: &ModelSummary, after: &ModelSummary, changes: &mut Vec<Change>) {
    let fields: [(&str, Option<String>, Option<String>); 6] = [
        ("revision", before.revision.clone(), after.revision.clone()),
        (
            "quantization_config",
            before.quantization.clone(),
            after.quantization.clone(),
        ),
        ("torch_dtype", before.dtype.clone(), after.dtype.clone()),
        (
            "num_hidden_layers",
            before.layers.map(|v| v.to_string()),
            after.layers.map(|v| v.to_string()),
        ),
        (
            "mtp_num_hidden_layers",
            before.mtp_layers.map(|v| v.to_string()),
            after.mtp_layers.map(|v| v.to_string()),
        ),
        (
            "max_position_embeddings",
            before.max_positions.map(|v| v.to_string()),
            after.max_positions.map(|v| v.to_string()),
        ),
    ];
    for (name, b, a) in fields {
        if let (Some(b), Some(a)) = (b, a)
            && b != a
        {
            push_text(
                changes,
                Area::ModelConfig,
                name,
                ChangeKey::new(KeyArea::RunModelConfig, name).to_string(),
                &b,
                &a,
            );
        }
    }
}

fn limits(before: &Run, after: &Run, changes: &mut Vec<Change>) {
    for (name, a) in &after.limits {
        let Some(b) = before.limits.get(name) else {
            continue;
        };
        if (a - b).abs() < f64::EPSILON {
            continue;
        }
        let (Some(bv), Some(av)) = (number_value(*b), number_value(*a)) else {
            continue;
        };
        let subject =
            Subject::new(Area::Limit, name, ChangeKind::Changed).values(Some(&bv), Some(&av));
        if let Some((change, false)) =
            change_for(&subject, ChangeKey::new(KeyArea::Limit, name).to_string())
        {
            changes.push(change);
        }
    }
}

fn number_value(value: f64) -> Option<Value> {
    if value.fract() == 0.0 && value.abs() < 9e15 {
        Some(Value::from(value as i64))
    } else {
        serde_json::Number::from_f64(value).map(Value::Number)
    }
}
