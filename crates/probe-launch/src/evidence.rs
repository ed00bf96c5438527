//! One piece of collected evidence to launches: a process's argv, a systemd unit, an engine's
//! start-up log line.

use std::collections::BTreeMap;
use std::rc::Rc;

use probe_model::{
    Engine, LaunchConfig, LaunchOption, LaunchSource, StartupRecord, SystemdUnit, TimeBounds,
};
use serde_json::{Map, Value};

use crate::catalog::{Catalog, catalog};
use crate::ctx::{Ctx, basename};
use crate::hints::ParseHints;
use crate::shell::Budget;
use crate::values::python_literal;
use crate::wrappers::{self, guess_engine_from_name};
use crate::{argv, go_map, options, rust_debug, systemd, values, work};

pub(crate) fn base_ctx(hints: &ParseHints, budget: &Rc<Budget>) -> Ctx {
    Ctx {
        cwd: hints.working_directory.clone(),
        budget: budget.clone(),
        ..Ctx::default()
    }
}

/// One launch from an argv (wrappers unwrapped), or `None` when it is no model server.
pub fn from_argv(
    argv: &[String],
    env: &BTreeMap<String, String>,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    let budget = work::budget_of(work::words(argv), env);
    let ctx = Ctx {
        env: env.clone(),
        ..base_ctx(hints, &budget)
    };
    argv::launch(argv, ctx, hints)
}

/// Launches of a collected unit (effective `ExecStart=`, environment, working directory).
pub fn from_unit(unit: &SystemdUnit, hints: &ParseHints) -> Vec<LaunchConfig> {
    let budget = work::budget_of(work::words(&unit.exec_start), &unit.environment);
    let mut out = from_unit_inner(unit, hints, None, &budget);
    work::mark_cut(&mut out, &budget);
    out
}

pub(crate) fn from_unit_inner(
    unit: &SystemdUnit,
    hints: &ParseHints,
    description: Option<&str>,
    budget: &Rc<Budget>,
) -> Vec<LaunchConfig> {
    let mut resolve_env = unit.environment.clone();
    for f in &unit.environment_files {
        for (k, v) in &f.vars {
            resolve_env.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in &hints.env {
        resolve_env.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let spec = systemd::specifiers(
        Some(unit.name.as_str()).filter(|n| !n.is_empty()),
        unit.run_as.as_deref(),
    );
    let mut out = Vec::new();
    let mut h = hints.clone();
    if h.working_directory.is_none() {
        h.working_directory = unit.working_directory.clone();
    }
    for line in &unit.exec_start {
        let mut warnings = Vec::new();
        let argv = systemd::split_exec(line, &resolve_env, &spec, &mut warnings, true);
        let ctx = Ctx {
            env: resolve_env.clone(),
            warnings: warnings.clone(),
            ..base_ctx(&h, budget)
        };
        match argv::launch(&argv, ctx, &h) {
            Some(l) => out.push(l),
            None => {
                // An opaque wrapper script: the engine is only known from its name.
                let prog = argv.first().cloned().unwrap_or_default();
                // A catalogued wrapper (`bash -c '...'`, `env`, `nohup`) was read through: what it
                // runs is in the text and is no launch, so its name says nothing of an engine.
                if wrappers::wrapper(basename(&prog)).is_some() {
                    continue;
                }
                let engine = guess_engine_from_name(basename(&prog))
                    .or_else(|| description.and_then(guess_engine_from_name));
                if let Some(engine) = engine
                    && !prog.is_empty()
                {
                    let mut w = warnings;
                    w.push(format!("ExecStart runs {prog}, a script whose contents are not in the text; engine guessed from its name"));
                    out.push(LaunchConfig {
                        engine,
                        entrypoint: Some(prog),
                        env: unit.environment.clone(),
                        warnings: w,
                        argv,
                        working_directory: h.working_directory.clone(),
                        source: h.source.clone(),
                        engine_version: h.engine_version.clone(),
                        ..LaunchConfig::default()
                    });
                }
            }
        }
    }
    out
}

/// A launch from an engine's start-up log line.
pub fn from_startup_log(record: &StartupRecord, hints: &ParseHints) -> Option<LaunchConfig> {
    let engine = match record.engine {
        Engine::Other => hints.engine.unwrap_or(Engine::Other),
        engine => engine,
    };
    let body = args_body(record.text.as_str())?;
    // Ollama logs the environment in effect as a Go map (`map[OLLAMA_HOST:... ...]`): its
    // configuration is that environment, read through the catalog's `env` options.
    if body.starts_with("map[") {
        return from_startup_env(record, engine, body, hints);
    }
    let m = logged_args(body)?;
    let version = record
        .version
        .clone()
        .or_else(|| hints.engine_version.clone());
    let cat = catalog(engine, version.as_deref());
    let model = logged_model(cat, &m);
    let (options, unknown) = logged_options(cat, &m);
    let speculative = options::speculative(cat, &options);
    Some(LaunchConfig {
        engine,
        engine_version: version,
        entrypoint: Some(format!("{engine} start-up log")),
        model,
        options,
        unknown,
        speculative,
        working_directory: hints.working_directory.clone(),
        source: LaunchSource {
            time: TimeBounds {
                at: record.time.or(hints.source.time.at),
                ..hints.source.time.clone()
            },
            ..hints.source.clone()
        },
        ..LaunchConfig::default()
    })
}

/// What a start-up line logs after its marker (`server_args=`, `non-default args:`), else the
/// whole line, trimmed.
fn args_body(text: &str) -> Option<&str> {
    let start = text
        .find("server_args=")
        .map(|p| p + "server_args=".len())
        .or_else(|| {
            text.find("non-default args:")
                .map(|p| p + "non-default args:".len())
        })
        .unwrap_or(0);
    Some(text.get(start..)?.trim())
}

/// The logged arguments as one object: a Python literal, or TGI's Rust `Debug` output
/// (`Args { model_id: ..., }`).
fn logged_args(body: &str) -> Option<Map<String, Value>> {
    let parsed = if body.starts_with("Args") {
        rust_debug::parse(body)?
    } else {
        python_literal(body)?
    };
    match parsed {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// The model is the model, not an option (vLLM logs it twice: `model` and `model_tag`): the
/// first of the usual keys with a value, else the first catalogued model option with a string.
fn logged_model(cat: &Catalog, m: &Map<String, Value>) -> Option<String> {
    for key in ["model_tag", "model_path", "model", "model_id"] {
        if let Some(s) = m.get(key).and_then(Value::as_str)
            && !s.trim().is_empty()
        {
            return Some(s.to_string());
        }
    }
    m.iter()
        .filter(|(k, _)| cat.is_model_option(k))
        .find_map(|(_, v)| v.as_str())
        .map(str::to_string)
}

/// The logged options the catalog knows, as the command line would write them, and the rest
/// as `key=value` (model options and nulls left out).
fn logged_options(
    cat: &Catalog,
    m: &Map<String, Value>,
) -> (BTreeMap<String, LaunchOption>, Vec<String>) {
    let mut options = BTreeMap::new();
    let mut unknown = Vec::new();
    for (k, v) in m {
        if cat.is_model_option(k) || v.is_null() {
            continue;
        }
        match cat.lookup_name_loose(k) {
            Some(spec) => {
                let value = match (v, &spec.kind) {
                    (Value::String(s), crate::catalog::ValueKind::Json) => {
                        values::lenient_json(s).unwrap_or_else(|| v.clone())
                    }
                    _ => v.clone(),
                };
                let written = options::written_like_cli(spec, &value);
                options.insert(spec.name.clone(), LaunchOption { value, written });
            }
            None => unknown.push(format!("{k}={v}")),
        }
    }
    (options, unknown)
}

/// A start-up record that is the environment in effect (a Go map): the options the catalog
/// reads from those variables. Variables logged empty are unset; the values logged are what the
/// engine resolved, defaults included.
fn from_startup_env(
    record: &StartupRecord,
    engine: Engine,
    body: &str,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    let env: BTreeMap<String, String> = go_map::parse(body)?
        .into_iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .map(|(k, v)| (k, go_map::as_written(&v)))
        .collect();
    let version = record
        .version
        .clone()
        .or_else(|| hints.engine_version.clone());
    let cat = catalog(engine, version.as_deref());
    let mut options = BTreeMap::new();
    argv::options_from_env_map(cat, &env, &mut options);
    Some(LaunchConfig {
        engine,
        engine_version: version,
        entrypoint: Some(format!("{engine} start-up log")),
        options,
        working_directory: hints.working_directory.clone(),
        source: LaunchSource {
            time: TimeBounds {
                at: record.time.or(hints.source.time.at),
                ..hints.source.time.clone()
            },
            ..hints.source.clone()
        },
        ..LaunchConfig::default()
    })
}
