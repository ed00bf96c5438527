//! Ollama Modelfiles (docs/modelfile.mdx): `FROM` names the model, `PARAMETER name value` sets
//! its load and sampling options (`num_ctx` is its context length), read with the Ollama
//! catalog's Modelfile options.

use std::collections::BTreeMap;

use probe_model::{Engine, LaunchConfig, LaunchOption};
use serde_json::Value;

use super::hints::ParseHints;
use super::values::typed;
use crate::catalog::{ValueKind, catalog};

/// Instructions only a Modelfile has (a Dockerfile also starts with `FROM`).
const OWN: &[&str] = &[
    "PARAMETER",
    "TEMPLATE",
    "SYSTEM",
    "ADAPTER",
    "MESSAGE",
    "LICENSE",
];

/// Instructions only a Dockerfile has.
const DOCKER: &[&str] = &[
    "RUN",
    "CMD",
    "ENTRYPOINT",
    "COPY",
    "ADD",
    "ENV",
    "WORKDIR",
    "EXPOSE",
    "USER",
    "ARG",
];

/// The instruction lines of a Modelfile: `(INSTRUCTION, rest)`, outside `"""` blocks.
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let t = line.trim();
        if in_block {
            in_block = t.matches("\"\"\"").count() % 2 == 0;
            continue;
        }
        // A Modelfile pasted in a fenced block keeps its fences.
        if t.is_empty() || t.starts_with('#') || t.starts_with("```") {
            continue;
        }
        let (word, rest) = t.split_once(char::is_whitespace).unwrap_or((t, ""));
        in_block = rest.matches("\"\"\"").count() % 2 == 1;
        out.push((word.to_ascii_uppercase(), rest.trim().to_string()));
    }
    out
}

/// Whether `text` is a Modelfile: it starts with `FROM`, has a Modelfile instruction and none
/// of a Dockerfile's.
pub(crate) fn is_modelfile(text: &str) -> bool {
    let ins = instructions(text);
    // `FROM` as written (instructions are upper-cased by convention): prose that starts "From
    // ..." is no Modelfile.
    let first = text
        .lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("```"));
    first.is_some_and(|l| l.starts_with("FROM "))
        && ins.iter().any(|(w, _)| OWN.contains(&w.as_str()))
        && !ins.iter().any(|(w, _)| DOCKER.contains(&w.as_str()))
}

/// The model a Modelfile builds, with its parameters as options.
pub(crate) fn launch(text: &str, hints: &ParseHints) -> Option<LaunchConfig> {
    let cat = catalog(Engine::Ollama, hints.engine_version.as_deref());
    let mut model = None;
    let mut options = BTreeMap::new();
    let mut unknown = Vec::new();
    for (word, rest) in instructions(text) {
        match word.as_str() {
            "FROM" if model.is_none() => model = Some(rest),
            "PARAMETER" => {
                let (name, value) = rest.split_once(char::is_whitespace).unwrap_or((&rest, ""));
                let value = value.trim().trim_matches('"');
                let Some(spec) = cat.lookup_name_loose(name) else {
                    unknown.push(format!("{name} {value}"));
                    continue;
                };
                let v = typed(value, &spec.kind, cat.units);
                let written = format!("PARAMETER {name} {value}");
                match (options.get_mut(&spec.name), &spec.kind) {
                    // `stop` repeats: every value is kept.
                    (Some(LaunchOption { value: old, .. }), ValueKind::List) => {
                        let mut items = match std::mem::take(old) {
                            Value::Array(a) => a,
                            one => vec![one],
                        };
                        items.push(v);
                        *old = Value::Array(items);
                    }
                    _ => {
                        options.insert(spec.name.clone(), LaunchOption { value: v, written });
                    }
                }
            }
            _ => {}
        }
    }
    Some(LaunchConfig {
        engine: Engine::Ollama,
        engine_version: hints.engine_version.clone(),
        entrypoint: Some("Modelfile".into()),
        model,
        options,
        unknown,
        working_directory: hints.working_directory.clone(),
        source: hints.source.clone(),
        ..LaunchConfig::default()
    })
}
