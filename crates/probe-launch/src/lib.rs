//! Launch reading: from any launch text to a `LaunchConfig`, with the engines' option catalogs.
//!
//! This crate is what the collector (to plan what to read next) and the analysis (to compare and
//! explain) both need to know about launches, and nothing else: it depends on probe-model only.
//!
//! Inputs: a `/proc` argv, a systemd unit, a shell line or script, a `docker run`, a compose
//! service, a Kubernetes container, an engine's start-up log line. Every path ends in the same
//! place: an argv whose wrappers (`nohup`, `bash -c`, `docker run`, `uv run`, ...) are unwrapped
//! until an engine entry point is found, whose options are then read with that engine's catalog
//! (`configs/engines/*.toml`). Nothing here panics on bad input: what cannot be read becomes a
//! warning.
//!
//! **Invariant enforced by lint:** these readers take text from remote hosts and must not panic on
//! it, so `unwrap`, `expect`, `panic!` and indexing/slicing are denied in the whole crate (its unit
//! tests opt out: a failing test is meant to panic).

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod catalog;
pub mod common;
pub mod compose_env;
mod config_files;
mod configuration;
pub mod embedded;
pub mod speculative;
pub mod version;

mod argv;
mod container;
mod container_text;
mod ctx;
mod defining;
mod dockerfile;
mod entry;
mod go_map;
mod hints;
mod host_change;
mod identity;
mod ini;
mod merge;
mod modelfile;
mod options;
mod pm2;
mod quadlet;
mod rust_debug;
mod serving;
mod shell;
mod skypilot;
mod spec;
mod supervisor;
mod systemd;
mod unit_files;
mod values;
mod work;
pub mod wrappers;
mod writes;
mod yaml;

use std::collections::BTreeMap;
use std::rc::Rc;

use probe_model::{
    Engine, LaunchConfig, LaunchOption, LaunchOrigin, LaunchSource, ProcessRole, Snapshot,
    SourceKind, StartupRecord, SystemdUnit, TimeBounds,
};
use serde_json::Value;

use crate::catalog::catalog;
pub use config_files::{apply_config_file, config_files};
pub use configuration::{
    ConfigDifference, ConfigField, OWN_MTP_HEADS, configuration_differences,
    covered_by_speculative, default_of, launch_details, lists_resolved_values, option_at_default,
    same_configuration, speculative_leftover, trim_model,
};
use ctx::{Ctx, basename};
use hints::MAX_TEXT;
use shell::Budget;
use wrappers::guess_engine_from_name;
use yaml::yaml_lenient;

pub use hints::{ParseHints, TextKind};

pub use defining::{start_script, unit_defining_files};
pub use host_change::{host_change, installs_package};
pub use identity::{ServerLaunches, port_of, same_server, unit_of};
pub use merge::{evidence_label, merge_runs, run_start};
pub use unit_files::{UnitFile, environment_source, exec_start_file, unit_files, without_drop_ins};
pub use values::{parse_human_int, python_literal};
pub use work::Work;
pub use writes::{WritingCommand, writing_commands};

fn detect_kind(text: &str) -> TextKind {
    if text.contains('\0') {
        return TextKind::Argv;
    }
    if text.contains("server_args=") {
        return TextKind::SglangServerArgs;
    }
    if text.contains("non-default args:") {
        return TextKind::VllmNonDefaultArgs;
    }
    // Texts whose own format says what runs (before a unit: a quadlet has `[Service]` too).
    if quadlet::is_quadlet(text) {
        return TextKind::Quadlet;
    }
    // A JSON object (Triton's vLLM `model.json`, a serving config): read as YAML.
    if text.trim_start().starts_with('{')
        && serde_json::from_str::<serde_json::Map<String, Value>>(text.trim()).is_ok()
    {
        return TextKind::Kubernetes;
    }
    if supervisor::is_supervisor(text) {
        return TextKind::Supervisor;
    }
    if modelfile::is_modelfile(text) {
        return TextKind::Modelfile;
    }
    if dockerfile::is_dockerfile(text) {
        return TextKind::Dockerfile;
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    // A script that writes a unit with a here-document is a script (its file is read as a unit
    // when the script runs no server itself).
    let writes_a_file = !ini::starts_with_header(text) && lines.iter().any(|l| l.contains("<<"));
    if !writes_a_file
        && lines
            .iter()
            .any(|l| *l == "[Service]" || l.starts_with("ExecStart="))
    {
        return TextKind::SystemdUnit;
    }
    if pm2::is_ecosystem(text) {
        return TextKind::Pm2;
    }
    let yaml_key = |l: &&str, k: &str| {
        let l = l.trim_start_matches("- ").trim_start();
        l.starts_with(k)
            && l.get(k.len()..)
                .map(|r| r.starts_with(':'))
                .unwrap_or(false)
    };
    let has = |k: &str| lines.iter().any(|l| yaml_key(l, k));
    // Shell scripts that write YAML with a here-document are still shell.
    let shellish = lines.iter().any(|l| l.contains("<<") || l.ends_with('\\'));
    if !shellish || has("containers") || has("services") {
        // Servers described without a container command (serving charts, Ray Serve, KServe).
        let serving = [
            "servingEngineSpec",
            "modelSpec",
            "llm_configs",
            "serveConfigV2",
            "modelFormat",
        ];
        if has("containers")
            || serving.iter().any(|k| has(k))
            || (has("args") && has("image"))
            || (has("env") && has("image") && !has("environment"))
        {
            return TextKind::Kubernetes;
        }
        if has("image") || has("services") || (has("command") && !shellish) || has("entrypoint") {
            return TextKind::Compose;
        }
    }
    TextKind::Shell
}

/// Removes Markdown code-fence lines (README snippets keep their fences).
fn strip_fences(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn base_ctx(hints: &ParseHints, budget: &Rc<Budget>) -> Ctx {
    Ctx {
        cwd: hints.working_directory.clone(),
        budget: budget.clone(),
        ..Ctx::default()
    }
}

/// Every launch in `text`; non-server commands are skipped.
pub fn reconstruct(text: &str, hints: &ParseHints) -> Vec<LaunchConfig> {
    reconstruct_measured(text, hints).0
}

/// [`reconstruct`], with the work the reading took. Time and memory are linear in the size of
/// the text (and of `hints.env`): a text that asks for more (self-doubling variables, `eval`
/// fan-out, shells nested in shells) is read until its [`Work`] limit, and the launches found
/// until then say so in a warning.
pub fn reconstruct_measured(text: &str, hints: &ParseHints) -> (Vec<LaunchConfig>, Work) {
    let budget = work::budget_of(text.len().min(MAX_TEXT), &hints.env);
    let out = reconstruct_within(text, hints, &budget);
    (out, Work::of(&budget))
}

/// [`reconstruct`] paid from `budget`, which the caller may share between texts (the entries of
/// one history file).
fn reconstruct_within(text: &str, hints: &ParseHints, budget: &Rc<Budget>) -> Vec<LaunchConfig> {
    let mut warn_cut = None;
    let text = if text.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        warn_cut = Some(format!("input cut to {MAX_TEXT} bytes"));
        text.get(..end).unwrap_or("")
    } else {
        text
    };
    // A SkyPilot task: its `run:` script, with the task's `envs:` exported.
    if hints.kind == TextKind::Auto
        && let Some(script) = skypilot::script(text)
    {
        let mut out = shell_readings(&script, hints, budget);
        for l in &mut out {
            l.warnings
                .push("the run: script of a SkyPilot task, with its envs: exported".into());
        }
        return out;
    }
    let kind = match hints.kind {
        TextKind::Auto => detect_kind(text),
        k => k,
    };
    let mut out = match kind {
        TextKind::Argv => {
            let argv: Vec<String> = text
                .split('\0')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let ctx = Ctx {
                env: hints.env.clone(),
                ..base_ctx(hints, budget)
            };
            argv::launch(&argv, ctx, hints).into_iter().collect()
        }
        TextKind::SystemdUnit => unit_text(text, hints, None, budget),
        TextKind::Quadlet | TextKind::Supervisor | TextKind::Dockerfile | TextKind::Pm2 => {
            let out = own_format(kind, text, hints, budget);
            if out.is_empty() && hints.kind == TextKind::Auto {
                shell_readings(text, hints, budget)
            } else {
                out
            }
        }
        TextKind::Modelfile => {
            if budget.take(text.len()) {
                modelfile::launch(text, hints).into_iter().collect()
            } else {
                Vec::new()
            }
        }
        TextKind::Compose | TextKind::Kubernetes => {
            let clean = strip_fences(text);
            let out = match yaml_lenient(&clean) {
                Some(mut doc) => {
                    // A compose file read with the variables of its `.env` (given as the
                    // hints' environment): Compose interpolates them into every value.
                    let used = if kind == TextKind::Compose && !hints.env.is_empty() {
                        compose_env::interpolate(&mut doc, &hints.env)
                    } else {
                        Vec::new()
                    };
                    let mut out = Vec::new();
                    container::from_yaml(
                        argv::launch,
                        &doc,
                        kind == TextKind::Kubernetes,
                        &base_ctx(hints, budget),
                        hints,
                        &mut out,
                        0,
                    );
                    if !used.is_empty() {
                        for l in &mut out {
                            l.warnings.push(format!(
                                "compose interpolated {} from the variables given with it (.env)",
                                used.join(", ")
                            ));
                        }
                    }
                    out
                }
                None => shell_text(&clean, hints, budget),
            };
            // Runbook prose with `image:` or `services:` lines is no compose file.
            if out.is_empty() && hints.kind == TextKind::Auto {
                shell_readings(text, hints, budget)
            } else {
                out
            }
        }
        TextKind::SglangServerArgs | TextKind::VllmNonDefaultArgs => {
            let engine = if kind == TextKind::SglangServerArgs {
                Engine::Sglang
            } else {
                Engine::Vllm
            };
            let rec = StartupRecord {
                time: hints.source.time.at,
                engine,
                text: text.to_string(),
                version: None,
            };
            from_startup_log(&rec, hints).into_iter().collect()
        }
        TextKind::Shell | TextKind::DockerRun | TextKind::Auto => {
            shell_readings(text, hints, budget)
        }
    };
    // A pasted transcript that holds the server's start-up line and the command before it.
    if out.is_empty()
        && hints.kind == TextKind::Auto
        && matches!(
            kind,
            TextKind::SglangServerArgs | TextKind::VllmNonDefaultArgs
        )
    {
        out = shell_readings(text, hints, budget);
    }
    work::mark_cut(&mut out, budget);
    if let Some(w) = warn_cut {
        for l in &mut out {
            l.warnings.push(w.clone());
        }
    }
    for l in &mut out {
        if l.engine_version.is_none() {
            l.engine_version = hints.engine_version.clone();
        }
    }
    out
}

/// The launches of a text in a format of its own that names a command (a podman quadlet, a
/// supervisord configuration, a Dockerfile, a pm2 ecosystem file).
fn own_format(
    kind: TextKind,
    text: &str,
    hints: &ParseHints,
    budget: &Rc<Budget>,
) -> Vec<LaunchConfig> {
    if !budget.take(text.len()) {
        return Vec::new();
    }
    let ctx = base_ctx(hints, budget);
    match kind {
        TextKind::Quadlet => quadlet::launch(text, argv::launch, ctx, hints)
            .into_iter()
            .collect(),
        TextKind::Supervisor => supervisor::launches(text, argv::launch, &ctx, hints),
        TextKind::Dockerfile => dockerfile::launch(text, argv::launch, ctx, hints)
            .into_iter()
            .collect(),
        TextKind::Pm2 => pm2::launches(text, argv::launch, &ctx, hints),
        _ => Vec::new(),
    }
}

/// The command after a pasted shell prompt (`(venv) user@host:~/dir$ vllm serve ...`,
/// `root@box:/# ...`, `C:\\Users\\me>llama-server.exe ...`, `$ ...`, `> ...`), or `None` when the
/// line does not start with a prompt followed by something we can launch.
pub(crate) fn strip_prompt(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start().len();
    let mut rest = line.get(indent..)?;
    // A virtualenv / conda marker: `(name) `.
    if let Some(inner) = rest.strip_prefix('(')
        && let Some(end) = inner.find(") ")
        && inner
            .get(..end)
            .map(|n| !n.is_empty() && !n.contains(char::is_whitespace))
            .unwrap_or(false)
    {
        rest = inner.get(end + 2..)?.trim_start();
    }
    let first = rest.split_whitespace().next()?;
    let after = if matches!(first, "$" | "%" | ">" | "#") {
        // A bare prompt sign; `#` only when something else marks a prompt (it is a comment).
        if first == "#" {
            return None;
        }
        rest.get(first.len()..)?.trim_start()
    } else if first.contains('@')
        && (first.ends_with('$') || first.ends_with('#') || first.ends_with('%'))
        && first.contains(':')
    {
        // `user@host:path$`
        rest.get(first.len()..)?.trim_start()
    } else if first.len() > 3
        && first.as_bytes().get(1) == Some(&b':')
        && first.as_bytes().get(2) == Some(&b'\\')
        && let Some(gt) = rest.find('>')
    {
        // Windows `C:\\dir>cmd` (the command is glued to the prompt).
        rest.get(gt + 1..)?.trim_start()
    } else {
        return None;
    };
    if after.is_empty() || std::ptr::eq(after, line) {
        return None;
    }
    let words: Vec<String> = after.split_whitespace().map(str::to_string).collect();
    let head = words.first()?;
    let head = head.trim_matches(['"', '\'']);
    if entry::is_launcher_word(head, words.get(1..).unwrap_or(&[]))
        || ctx::assignment(head).is_some()
    {
        Some(after)
    } else {
        None
    }
}

/// The launches of a shell text as people paste it (Markdown, prompts, prose): the first of its
/// readings that yields any.
fn shell_readings(text: &str, hints: &ParseHints, budget: &Rc<Budget>) -> Vec<LaunchConfig> {
    // Pasting mangles: CRLF, `—tp` for `--tp`, typographic quotes. Each repair is noted.
    let (text, repairs) = shell::paste::repair(text);
    if !repairs.is_empty() && !budget.take(text.len()) {
        return Vec::new();
    }
    let mention = |span: &str| names_a_launcher_only(span, hints, budget);
    let mut out = shell::markdown::readings(&text, &starts_command, &mention)
        .iter()
        .map(|t| shell_text(t, hints, budget))
        .find(|l| !l.is_empty() || budget.exhausted())
        .unwrap_or_default();
    for l in &mut out {
        l.warnings.extend(repairs.iter().cloned());
    }
    out
}

/// Whether an inline code span names a launcher and nothing else (`vllm serve`,
/// `python -m sglang.launch_server`): read on its own it is one launch with no model, no option,
/// no argument and no environment. In a sentence such a span is a mention, not a command.
fn names_a_launcher_only(span: &str, hints: &ParseHints, budget: &Rc<Budget>) -> bool {
    match shell_text(span, hints, budget).as_slice() {
        [l] => {
            l.model.is_none() && l.options.is_empty() && l.unknown.is_empty() && l.env.is_empty()
        }
        _ => false,
    }
}

/// Whether `line` starts a command a launch can come from (a launcher, an assignment, a
/// builtin that sets what the launch sees), after a pasted prompt.
fn starts_command(line: &str) -> bool {
    let line = strip_prompt(line).unwrap_or(line);
    let words: Vec<String> = line
        .split_whitespace()
        .take(3)
        .map(str::to_string)
        .collect();
    let Some((head, next)) = words.split_first() else {
        return false;
    };
    entry::is_launcher_word(head, next)
        || ctx::assignment(head).is_some()
        || matches!(
            head.as_str(),
            "export" | "source" | "." | "cd" | "read" | "set"
        )
}

fn strip_prompts(text: &str) -> String {
    text.lines()
        .map(|l| strip_prompt(l).unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

fn shell_text(text: &str, hints: &ParseHints, budget: &Rc<Budget>) -> Vec<LaunchConfig> {
    if !budget.take(shell::weight(&hints.env)) {
        return Vec::new();
    }
    let text = strip_prompts(text);
    let text = text.as_str();
    // The walk spends half of what is left at most: the commands it recorded can still be read.
    let mut st = shell::State {
        cwd: hints.working_directory.clone(),
        budget: Budget::nested(budget),
        ..Default::default()
    };
    for (k, v) in &hints.env {
        st.vars.insert(k.clone(), shell::Val::Text(v.clone()));
    }
    let cmds = shell::commands(text, &mut st, 0);
    let out: Vec<LaunchConfig> = cmds
        .iter()
        .take_while(|_| !budget.exhausted())
        .filter_map(|c| argv::from_shell_command(c, base_ctx(hints, budget), hints))
        .collect();
    if out.is_empty() {
        written_launchers(&st.files, hints, budget)
    } else {
        out
    }
}

/// The launches of files a script wrote with a here-document and runs no server itself
/// (`sudo tee /etc/systemd/system/vllm.service <<EOF`, `cat > .../conf.d/vllm.conf <<EOF`, a
/// compose file, a quadlet): each file in a launcher's own format, read as such.
fn written_launchers(
    files: &BTreeMap<String, String>,
    hints: &ParseHints,
    budget: &Rc<Budget>,
) -> Vec<LaunchConfig> {
    let mut out = Vec::new();
    for (path, body) in files {
        let kind = detect_kind(body);
        if matches!(kind, TextKind::Shell | TextKind::Auto) || budget.exhausted() {
            continue;
        }
        let h = ParseHints {
            kind,
            ..hints.clone()
        };
        let name = basename(path);
        let found = if kind == TextKind::SystemdUnit && name.contains(".service") {
            unit_text(body, &h, Some(name), budget)
        } else {
            reconstruct_within(body, &h, budget)
        };
        for mut l in found {
            l.warnings
                .push(format!("read from {path}, which the text writes"));
            out.push(l);
        }
    }
    out
}

/// Launches of a unit given as text (`unit_name` for specifiers when known).
fn unit_text(
    text: &str,
    hints: &ParseHints,
    unit_name: Option<&str>,
    budget: &Rc<Budget>,
) -> Vec<LaunchConfig> {
    let mut u = systemd::parse_unit(text);
    let ollama_only = u.exec_start.is_empty() && ollama_environment(&u.environment);
    if ollama_only {
        u.exec_start.push("ollama serve".to_string());
    }
    let unit = SystemdUnit {
        name: unit_name.unwrap_or_default().to_string(),
        exec_start: u.exec_start.clone(),
        environment: u.environment.clone(),
        working_directory: u.working_directory.clone(),
        run_as: u.user.clone(),
        ..SystemdUnit::default()
    };
    let mut out = from_unit_inner(&unit, hints, u.description.as_deref(), budget);
    if ollama_only {
        for l in &mut out {
            l.entrypoint = None;
            l.argv.clear();
            l.warnings.push(
                "no ExecStart= in this text (a drop-in): its OLLAMA_* variables configure \
                 Ollama's server, whose command is in the unit it extends"
                    .to_string(),
            );
        }
    }
    if hints.env.is_empty() {
        for l in &mut out {
            for f in &u.environment_files {
                l.warnings.push(format!(
                    "variables from EnvironmentFile={f} are not in the text"
                ));
            }
        }
    }
    out
}

/// Whether a unit's environment configures Ollama's server (`OLLAMA_HOST`, `OLLAMA_MODELS`,
/// `OLLAMA_NUM_PARALLEL`, ...): a drop-in of `ollama.service` that sets only these.
fn ollama_environment(env: &BTreeMap<String, String>) -> bool {
    env.keys().any(|k| k.starts_with("OLLAMA_"))
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

fn from_unit_inner(
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
    let text = record.text.as_str();
    let start = text
        .find("server_args=")
        .map(|p| p + "server_args=".len())
        .or_else(|| {
            text.find("non-default args:")
                .map(|p| p + "non-default args:".len())
        })
        .unwrap_or(0);
    let body = text.get(start..)?.trim();
    // Ollama logs the environment in effect as a Go map (`map[OLLAMA_HOST:... ...]`): its
    // configuration is that environment, read through the catalog's `env` options.
    if body.starts_with("map[") {
        return from_startup_env(record, engine, body, hints);
    }
    // TGI logs its arguments as Rust `Debug` output (`Args { model_id: ..., }`).
    let parsed = if body.starts_with("Args") {
        rust_debug::parse(body)?
    } else {
        python_literal(body)?
    };
    let Value::Object(m) = parsed else {
        return None;
    };
    let version = record
        .version
        .clone()
        .or_else(|| hints.engine_version.clone());
    let cat = catalog(engine, version.as_deref());
    let mut options = BTreeMap::new();
    let mut unknown = Vec::new();
    let mut model = None;
    // The model is the model, not an option (vLLM logs it twice: `model` and `model_tag`).
    for key in ["model_tag", "model_path", "model", "model_id"] {
        if let Some(s) = m.get(key).and_then(Value::as_str)
            && !s.trim().is_empty()
        {
            model = Some(s.to_string());
            break;
        }
    }
    for (k, v) in &m {
        if cat.is_model_option(k) {
            if model.is_none()
                && let Some(s) = v.as_str()
            {
                model = Some(s.to_string());
            }
            continue;
        }
        if v.is_null() {
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

/// The Python distributions that are `engine` (its catalog's `packages`).
pub fn engine_package(engine: Engine) -> &'static [String] {
    &catalog(engine, None).packages
}

/// The container a launch runs in, when it runs in one: `Some(Some(id))` a known container
/// (its own record, or a process inside it), `Some(None)` a container not in the snapshot (a
/// `docker run` history line or unit), `None` the host.
fn container_of(snapshot: &Snapshot, l: &LaunchConfig) -> Option<Option<String>> {
    match l.source.kind {
        SourceKind::Container => {
            let origin = l.source.origin();
            let label = origin.container().unwrap_or_default();
            let id = snapshot
                .containers
                .iter()
                .find(|c| c.name.as_deref() == Some(label) || c.id == label)
                .map(|c| c.id.clone());
            Some(id)
        }
        SourceKind::Process => {
            let pid = l.source.pid()?;
            let p = snapshot.processes.iter().find(|p| p.pid == pid)?;
            p.container_id.clone().map(Some)
        }
        _ => l
            .wrappers
            .iter()
            .any(|w| matches!(w.as_str(), "docker" | "podman"))
            .then_some(None),
    }
}

/// One container id names the other (a short id is a prefix of the long one).
fn same_container_id(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim(), b.trim());
    a.len() >= 12 && b.len() >= 12 && (a.starts_with(b) || b.starts_with(a))
}

/// The processes (`pid:N`) and mount roots of container `id`.
fn container_users(snapshot: &Snapshot, id: &str) -> (Vec<String>, Vec<String>) {
    let mut pids = Vec::new();
    let mut roots = Vec::new();
    for p in &snapshot.processes {
        if p.container_id
            .as_deref()
            .is_some_and(|c| same_container_id(c, id))
        {
            pids.push(format!("pid:{}", p.pid));
            if let Some(root) = &p.mount_root {
                roots.push(root.clone());
            }
        }
    }
    (pids, roots)
}

/// A Python environment read inside a container (through a containerised process's root).
fn env_in_container(snapshot: &Snapshot, env: &probe_model::PythonEnv) -> bool {
    snapshot.processes.iter().any(|p| {
        p.container_id.is_some()
            && (env.used_by.contains(&format!("pid:{}", p.pid))
                || (env.mount_root.is_some() && env.mount_root == p.mount_root))
    })
}

/// Fills `engine_version` from the snapshot's Python environments: the one whose interpreter or
/// users match the launch, else the only host one that has the engine. A launch in a container
/// takes only that container's own packages (over its image tag's version, set when it was
/// read); the host's or another container's packages are never its version.
fn fill_version(snapshot: &Snapshot, l: &mut LaunchConfig) {
    let pkgs = engine_package(l.engine);
    if pkgs.is_empty() {
        return;
    }
    let version_in = |env: &probe_model::PythonEnv| {
        env.packages
            .iter()
            .find(|p| pkgs.contains(&p.name))
            .map(|p| p.version.clone())
    };
    if let Some(container) = container_of(snapshot, l) {
        let Some(id) = container else { return };
        let (pids, roots) = container_users(snapshot, &id);
        let own = snapshot.python_envs.iter().find(|e| {
            e.used_by.iter().any(|u| pids.contains(u))
                || e.mount_root.as_ref().is_some_and(|r| roots.contains(r))
        });
        if let Some(v) = own.and_then(version_in) {
            l.engine_version = Some(v);
        }
        return;
    }
    if l.engine_version.is_some() {
        return;
    }
    // A package written after this launch started is not what it ran: only a launch that runs
    // now, or one that started after the install, takes the installed version.
    let start = l.source.time.at;
    let running = l.source.running;
    let in_effect = |env: &probe_model::PythonEnv| {
        env.packages
            .iter()
            .find(|p| pkgs.contains(&p.name))
            .filter(|p| {
                running
                    || matches!((p.installed_at, start), (Some(installed), Some(start)) if installed <= start)
            })
            .map(|p| p.version.clone())
    };
    if let Some(env) = serving_env(snapshot, l) {
        if let Some(v) = in_effect(env) {
            l.engine_version = Some(v);
        }
        return;
    }
    let all: Vec<&probe_model::PythonEnv> = snapshot
        .python_envs
        .iter()
        .filter(|e| !env_in_container(snapshot, e))
        .filter(|e| version_in(e).is_some())
        .collect();
    if let [only] = all.as_slice()
        && let Some(v) = in_effect(only)
    {
        l.engine_version = Some(v);
    }
}

/// The Python environment a launch runs in: the one whose interpreter, venv or users match it.
pub fn serving_env<'a>(
    snapshot: &'a Snapshot,
    l: &LaunchConfig,
) -> Option<&'a probe_model::PythonEnv> {
    let label = evidence_label(l);
    let loc = l.source.location.trim();
    snapshot.python_envs.iter().find(|e| {
        l.interpreter
            .as_deref()
            .map(|i| i == e.interpreter && e.mount_root.is_none())
            .unwrap_or(false)
            || e.used_by.iter().any(|u| u == loc || *u == label)
            || l.venv
                .as_deref()
                .zip(e.prefix.as_deref())
                .map(|(a, b)| a == b && e.mount_root.is_none())
                .unwrap_or(false)
    })
}

/// Re-reads a launch with its engine version's catalog once the version is known.
fn with_version(l: LaunchConfig, hints: &ParseHints) -> LaunchConfig {
    let Some(v) = l.engine_version.clone() else {
        return l;
    };
    if l.argv.is_empty() {
        return l;
    }
    let h = ParseHints {
        engine_version: Some(v),
        ..hints.clone()
    };
    match argv::launch(
        &l.argv,
        Ctx {
            env: l.env.clone(),
            cwd: l.working_directory.clone(),
            budget: work::budget_of(work::words(&l.argv), &l.env),
            ..Ctx::default()
        },
        &h,
    ) {
        Some(mut n) => {
            n.source = l.source;
            n.log_files = l.log_files;
            n.wrappers = l.wrappers;
            n
        }
        None => l,
    }
}

thread_local! {
    static READINGS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many snapshots [`launches_of`] has read on this thread: a command reads each snapshot
/// once and passes the [`crate::Analysis`] on; tests hold it to that.
pub fn snapshot_readings() -> usize {
    READINGS.with(std::cell::Cell::get)
}

/// Every launch in a snapshot: each piece of evidence reconstructed, then the evidence of one
/// run merged into one launch ([`merge_runs`]).
pub fn launches_of(snapshot: &Snapshot) -> Vec<LaunchConfig> {
    READINGS.with(|count| count.set(count.get() + 1));
    let mut out = Vec::new();
    process_launches(snapshot, &mut out);
    unit_launches(snapshot, &mut out);
    container_launches(snapshot, &mut out);
    container_text::annotate(snapshot, &mut out);
    history_launches(snapshot, &mut out);
    log_launches(snapshot, &mut out);
    defining::fill(snapshot, &mut out);
    config_files::fill(snapshot, &mut out);
    merge_runs(snapshot, out)
}

/// A launch completed with its engine version from the snapshot, re-read with that version's
/// catalog.
fn finish(
    snapshot: &Snapshot,
    mut l: LaunchConfig,
    hints: &ParseHints,
    out: &mut Vec<LaunchConfig>,
) {
    fill_version(snapshot, &mut l);
    out.push(with_version(l, hints));
}

/// The launcher processes (argv, environment, working directory).
fn process_launches(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for p in &snapshot.processes {
        if p.role != ProcessRole::Launcher {
            continue;
        }
        let hints = ParseHints {
            source: LaunchSource {
                kind: SourceKind::Process,
                location: LaunchOrigin::Process { pid: p.pid }.location(),
                time: TimeBounds {
                    at: p.start_time,
                    ..TimeBounds::default()
                },
                running: true,
                ..LaunchSource::default()
            },
            working_directory: p.cwd.clone(),
            ..ParseHints::default()
        };
        if let Some(mut l) = from_argv(&p.argv, &p.env, &hints) {
            if let Some(e) = p.engine
                && l.engine == Engine::Other
                && e != Engine::Other
            {
                l.engine = e;
            }
            finish(snapshot, l, &hints, out);
        }
    }
}

/// The systemd units (effective `ExecStart=`; running when their main PID is alive or they are
/// active).
fn unit_launches(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for u in &snapshot.units {
        let running_pid = u
            .state
            .as_ref()
            .and_then(|s| s.main_pid)
            .filter(|p| *p != 0);
        let running = running_pid
            .map(|pid| snapshot.processes.iter().any(|p| p.pid == pid))
            .unwrap_or(false)
            || u.state.as_ref().and_then(|s| s.active_state.as_deref()) == Some("active");
        let mtimes: Vec<i64> = std::iter::once(u.fragment.mtime)
            .chain(u.drop_ins.iter().map(|d| d.mtime))
            .flatten()
            .collect();
        let hints = ParseHints {
            source: LaunchSource {
                kind: SourceKind::Unit,
                location: LaunchOrigin::Unit {
                    name: u.name.clone(),
                }
                .location(),
                time: TimeBounds {
                    at: u
                        .state
                        .as_ref()
                        .and_then(|s| s.exec_main_start)
                        .filter(|_| running),
                    not_before: mtimes.iter().max().copied(),
                    not_after: None,
                },
                running,
                ..LaunchSource::default()
            },
            working_directory: u.working_directory.clone(),
            ..ParseHints::default()
        };
        for l in from_unit(u, &hints) {
            finish(snapshot, l, &hints, out);
        }
    }
}

/// The containers (image, entrypoint, command, environment).
fn container_launches(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for c in &snapshot.containers {
        let hints = ParseHints {
            source: LaunchSource {
                kind: SourceKind::Container,
                location: LaunchOrigin::Container {
                    name: c.name.clone().unwrap_or_else(|| c.id.clone()),
                }
                .location(),
                time: TimeBounds {
                    at: c.started_at,
                    ..TimeBounds::default()
                },
                running: c.state.as_deref() == Some("running"),
                ..LaunchSource::default()
            },
            ..ParseHints::default()
        };
        if let Some(l) = container::from_container(argv::launch, c, &hints) {
            finish(snapshot, l, &hints, out);
        }
    }
}

/// The shell history lines (timestamped when the history has times, else bounded by the file).
fn history_launches(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for h in &snapshot.histories {
        // One budget for the file: an entry that blows up spends its own file's, no other's.
        let size: usize = h.entries.iter().map(|e| e.command.len()).sum();
        let budget = work::budget_of(size, &BTreeMap::new());
        // Variables typed in earlier entries (`CMD=...`, then `eval "$CMD"`).
        let mut carried = BTreeMap::new();
        for e in &h.entries {
            if budget.exhausted() {
                break;
            }
            let hints = ParseHints {
                kind: TextKind::Shell,
                // The carried variables the entry can reach, not all of them.
                env: shell::reachable(&e.command, &carried),
                source: LaunchSource {
                    kind: SourceKind::History,
                    location: LaunchOrigin::History {
                        path: h.path.clone(),
                        index: Some(e.index),
                    }
                    .location(),
                    time: TimeBounds {
                        at: e.time,
                        not_before: None,
                        not_after: if e.time.is_none() { h.mtime } else { None },
                    },
                    running: false,
                    ..LaunchSource::default()
                },
                ..ParseHints::default()
            };
            for l in reconstruct_within(&e.command, &hints, &budget) {
                finish(snapshot, l, &hints, out);
            }
            shell::carry_vars(&e.command, &mut carried, &budget);
        }
    }
}

/// The engines' start-up log lines (what the engine resolved).
fn log_launches(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for log in &snapshot.logs {
        for r in &log.startups {
            let hints = ParseHints {
                source: LaunchSource {
                    kind: SourceKind::Log,
                    location: log.location.clone(),
                    time: TimeBounds {
                        at: r.time,
                        ..TimeBounds::default()
                    },
                    running: false,
                    ..LaunchSource::default()
                },
                engine_version: r.version.clone(),
                ..ParseHints::default()
            };
            if let Some(mut l) = from_startup_log(r, &hints) {
                fill_version(snapshot, &mut l);
                out.push(l);
            }
        }
    }
}

#[cfg(test)]
mod tests;
