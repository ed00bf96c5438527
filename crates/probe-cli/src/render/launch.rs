//! Launches as a report lists them: one launch's items (source, options, evidence, defining
//! files, environment), and the document of `probe launch`.

use probe_diff::is_session_variable;
use probe_model::text::join_capped as capped;
use probe_model::{DefiningFileRole, LaunchConfig, SourceKind, Speculative};

use super::doc::{Doc, Tone};
use super::{format_time, format_value};

pub(super) fn source_label(launch: &LaunchConfig) -> String {
    let kind = launch.source.kind.as_str();
    let when = launch
        .source
        .time
        .at
        .map(|t| format!(", {}", format_time(t)))
        .or_else(|| {
            launch
                .source
                .time
                .not_after
                .map(|t| format!(", before {}", format_time(t)))
        })
        .unwrap_or_default();
    let location = &launch.source.location;
    if location.is_empty() {
        format!("{kind}{when}")
    } else if location.starts_with(&format!("{kind}:")) || location.starts_with("pid:") {
        format!("{location}{when}")
    } else {
        format!("{kind} {location}{when}")
    }
}

/// The options that matter, as written, in a stable order.
fn launch_options(launch: &LaunchConfig) -> Vec<String> {
    // A start-up log lists every value the engine resolved: the defaults say nothing.
    let from_log = launch.source.kind == SourceKind::Log;
    let mut at_default = 0usize;
    let mut options: Vec<String> = launch
        .options
        .iter()
        .filter(|(name, _)| {
            let hide = from_log && probe_diff::option_at_default(launch, name);
            at_default += usize::from(hide);
            !hide
        })
        .map(|(name, option)| {
            if option.written.is_empty() {
                format!("--{name} {}", format_value(&option.value))
            } else {
                option.written.clone()
            }
        })
        .collect();
    options.extend(launch.unknown.iter().cloned());
    if at_default > 0 {
        options.push(format!("(+{at_default} at their defaults)"));
    }
    options
}

/// Options shown per launch in a report (JSON has all of them).
const MAX_OPTIONS_SHOWN: usize = 24;

/// Environment variables shown per launch in a report.
const MAX_ENV_SHOWN: usize = 12;

/// Other evidence of the same run named per launch.
const MAX_EVIDENCE_SHOWN: usize = 4;

/// Files that define a launch named per launch.
const MAX_FILES_SHOWN: usize = 8;

/// The files that define a launch, in order: `unit file PATH`, `drop-in 1 PATH (ExecStart=)`,
/// `EnvironmentFile= PATH (optional)`, `compose file PATH`.
fn defining_files(launch: &LaunchConfig) -> Vec<String> {
    let mut drop_ins = 0;
    launch
        .files
        .iter()
        .map(|f| {
            let mut text = f.role.label().to_string();
            if f.role == DefiningFileRole::DropIn {
                drop_ins += 1;
                text.push_str(&format!(" {drop_ins}"));
            }
            text.push(' ');
            text.push_str(&f.path);
            let mut notes: Vec<&str> = Vec::new();
            // What a drop-in changes (a unit file sets everything).
            if f.role == DefiningFileRole::DropIn {
                notes.extend(f.sets.iter().map(String::as_str));
            }
            if f.optional {
                notes.push("optional");
            }
            if !notes.is_empty() {
                text.push_str(&format!(" ({})", notes.join(" ")));
            }
            text
        })
        .collect()
}

/// The lines describing one launch.
pub(super) fn launch_items(launch: &LaunchConfig, items: &mut Vec<(u8, Tone, String)>) {
    items.push((
        0,
        if launch.source.running {
            Tone::Good
        } else {
            Tone::Plain
        },
        headline(launch),
    ));
    items.push((1, Tone::Dim, from_line(launch)));
    let options = launch_options(launch);
    if !options.is_empty() {
        items.push((1, Tone::Plain, capped(&options, MAX_OPTIONS_SHOWN, " ")));
    }
    if let Some(line) = launch.speculative.as_ref().and_then(speculative_line) {
        items.push((1, Tone::Plain, line));
    }
    if !launch.wrappers.is_empty() {
        items.push((1, Tone::Dim, format!("via {}", launch.wrappers.join(" > "))));
    }
    if let Some(directory) = &launch.working_directory {
        items.push((1, Tone::Dim, format!("in {directory}")));
    }
    if !launch.files.is_empty() {
        items.push((
            1,
            Tone::Dim,
            format!(
                "files {}",
                capped(&defining_files(launch), MAX_FILES_SHOWN, "; ")
            ),
        ));
    }
    if let Some(line) = env_line(launch) {
        items.push((1, Tone::Dim, line));
    }
    for warning in &launch.warnings {
        items.push((1, Tone::Warn, format!("warning: {warning}")));
    }
}

/// The engine, its version and the model (`vllm 0.6.3  model m`).
fn headline(launch: &LaunchConfig) -> String {
    let version = launch
        .engine_version
        .as_deref()
        .map(|v| format!(" {v}"))
        .unwrap_or_default();
    let model = match (&launch.model, launch.loaded_models.as_slice()) {
        (Some(m), _) => m.clone(),
        (None, []) => "(model not set)".to_string(),
        (None, loaded) => format!(
            "{} (loaded by its runners; the command line names none)",
            loaded.join(", ")
        ),
    };
    format!("{}{version}  model {model}", launch.engine)
}

/// Where the launch was read (`from ...; also seen in ...`).
fn from_line(launch: &LaunchConfig) -> String {
    let mut from = format!("from {}", source_label(launch));
    if !launch.source.also_seen_in.is_empty() {
        from.push_str(&format!(
            "; also seen in {}",
            capped(&launch.source.also_seen_in, MAX_EVIDENCE_SHOWN, ", ")
        ));
    }
    from
}

/// The speculative decoding settings (`speculative: eagle, steps 3, ...`), where any is known.
fn speculative_line(spec: &Speculative) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(algorithm) = spec
        .effective_algorithm
        .as_ref()
        .or(spec.algorithm.as_ref())
    {
        parts.push(algorithm.clone());
    }
    for (label, value) in [
        ("steps", &spec.num_steps),
        ("topk", &spec.eagle_topk),
        ("draft tokens", &spec.num_draft_tokens),
        ("speculative tokens", &spec.num_speculative_tokens),
    ] {
        if let Some(value) = value {
            parts.push(format!("{label} {}", format_value(value)));
        }
    }
    if let Some(draft) = &spec.draft_model {
        parts.push(format!("draft model {draft}"));
    }
    (!parts.is_empty()).then(|| format!("speculative: {}", parts.join(", ")))
}

/// The launch's environment (`env K=V ...`) but the login session's variables, where any.
fn env_line(launch: &LaunchConfig) -> Option<String> {
    let env: Vec<String> = launch
        .env
        .iter()
        .filter(|(key, _)| !is_session_variable(key))
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    (!env.is_empty()).then(|| format!("env {}", capped(&env, MAX_ENV_SHOWN, " ")))
}

/// Launches read from a text (`probe launch`).
pub fn launches_doc(launches: &[LaunchConfig]) -> Doc {
    let mut doc = Doc::default();
    if launches.is_empty() {
        doc.line(Tone::Warn, "no model server launch found in the text");
        return doc;
    }
    for (index, launch) in launches.iter().enumerate() {
        if launches.len() > 1 {
            doc.heading(2, format!("Launch {}", index + 1));
        }
        let mut fields = vec![("engine".to_string(), launch.engine.to_string())];
        if let Some(version) = &launch.engine_version {
            fields.push(("version".into(), version.clone()));
        }
        if let Some(model) = &launch.model {
            fields.push(("model".into(), model.clone()));
        }
        if let Some(entry) = &launch.entrypoint {
            fields.push(("entrypoint".into(), entry.clone()));
        }
        if let Some(interpreter) = &launch.interpreter {
            fields.push(("interpreter".into(), interpreter.clone()));
        }
        if !launch.wrappers.is_empty() {
            fields.push(("wrappers".into(), launch.wrappers.join(" > ")));
        }
        if let Some(directory) = &launch.working_directory {
            fields.push(("directory".into(), directory.clone()));
        }
        if !launch.log_files.is_empty() {
            fields.push(("logs".into(), launch.log_files.join(", ")));
        }
        doc.fields(fields);
        if !launch.options.is_empty() {
            let rows = launch
                .options
                .iter()
                .map(|(name, option)| {
                    (
                        Tone::Plain,
                        vec![
                            name.clone(),
                            format_value(&option.value),
                            option.written.clone(),
                        ],
                    )
                })
                .collect();
            doc.table(
                ["option", "value", "as written"].map(String::from).to_vec(),
                rows,
            );
        }
        let mut items = Vec::new();
        for (key, value) in &launch.env {
            items.push((0, Tone::Plain, format!("env {key}={value}")));
        }
        for unknown in &launch.unknown {
            items.push((0, Tone::Warn, format!("unknown flag kept: {unknown}")));
        }
        for warning in &launch.warnings {
            items.push((0, Tone::Warn, format!("warning: {warning}")));
        }
        doc.items(items);
    }
    doc
}
