//! Reading a launch text: the text's kind decides the reader (an argv, a unit, a format of its
//! own, a compose or Kubernetes document, a start-up log line, a shell text as people paste it),
//! all paid from one [`Budget`].

use std::collections::BTreeMap;
use std::rc::Rc;

use probe_model::{Engine, LaunchConfig, StartupRecord, SystemdUnit};

use crate::ctx::{Ctx, basename};
use crate::detect::detect_kind;
use crate::evidence::{base_ctx, from_startup_log, from_unit_inner};
use crate::hints::{MAX_TEXT, ParseHints, TextKind};
use crate::prompt::{starts_command, strip_prompts};
use crate::shell::{self, Budget};
use crate::work::{self, Work};
use crate::yaml::yaml_lenient;
use crate::{
    argv, compose_env, container, dockerfile, env_drop_in, modelfile, pm2, quadlet, skypilot,
    supervisor, systemd,
};

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
pub(crate) fn reconstruct_within(
    text: &str,
    hints: &ParseHints,
    budget: &Rc<Budget>,
) -> Vec<LaunchConfig> {
    let (text, warn_cut) = cut_to_max(text);
    if hints.kind == TextKind::Auto
        && let Some(out) = skypilot_text(text, hints, budget)
    {
        return out;
    }
    let kind = match hints.kind {
        TextKind::Auto => detect_kind(text),
        k => k,
    };
    let mut out = read_kind(kind, text, hints, budget);
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

/// `text` cut to [`MAX_TEXT`] bytes at a character boundary, with the warning that says so
/// when it was longer.
fn cut_to_max(text: &str) -> (&str, Option<String>) {
    if text.len() <= MAX_TEXT {
        return (text, None);
    }
    let mut end = MAX_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (
        text.get(..end).unwrap_or(""),
        Some(format!("input cut to {MAX_TEXT} bytes")),
    )
}

/// A SkyPilot task: its `run:` script, with the task's `envs:` exported; `None` when the text
/// is no task.
fn skypilot_text(text: &str, hints: &ParseHints, budget: &Rc<Budget>) -> Option<Vec<LaunchConfig>> {
    let script = skypilot::script(text)?;
    let mut out = shell_readings(&script, hints, budget);
    for l in &mut out {
        l.warnings
            .push("the run: script of a SkyPilot task, with its envs: exported".into());
    }
    Some(out)
}

/// The launches of a text of `kind`, one step per kind. A Python script that starts an engine
/// through its API (the catalogs' `[python]`) comes first when the kind was detected.
fn read_kind(
    kind: TextKind,
    text: &str,
    hints: &ParseHints,
    budget: &Rc<Budget>,
) -> Vec<LaunchConfig> {
    if hints.kind == TextKind::Auto {
        let python = crate::python_api::launches(text, hints);
        if !python.is_empty() {
            return python;
        }
    }
    match kind {
        TextKind::Argv => argv_text(text, hints, budget),
        TextKind::SystemdUnit => unit_text(text, hints, None, budget),
        TextKind::Quadlet | TextKind::Supervisor | TextKind::Dockerfile | TextKind::Pm2 => {
            or_shell(own_format(kind, text, hints, budget), text, hints, budget)
        }
        TextKind::Modelfile => modelfile_text(text, hints, budget),
        // Runbook prose with `image:` or `services:` lines is no compose file.
        TextKind::Compose | TextKind::Kubernetes => {
            or_shell(yaml_text(kind, text, hints, budget), text, hints, budget)
        }
        // A pasted transcript that holds the server's start-up line and the command before it.
        TextKind::SglangServerArgs | TextKind::VllmNonDefaultArgs => {
            or_shell(startup_text(kind, text, hints), text, hints, budget)
        }
        TextKind::Shell | TextKind::DockerRun | TextKind::Auto => {
            shell_readings(text, hints, budget)
        }
    }
}

/// `out`, or when it is empty and the kind was detected (a guess), the text read as a shell
/// text.
fn or_shell(
    out: Vec<LaunchConfig>,
    text: &str,
    hints: &ParseHints,
    budget: &Rc<Budget>,
) -> Vec<LaunchConfig> {
    if out.is_empty() && hints.kind == TextKind::Auto {
        shell_readings(text, hints, budget)
    } else {
        out
    }
}

/// The launch of an argv given as text, its words NUL-separated (`/proc/PID/cmdline`).
fn argv_text(text: &str, hints: &ParseHints, budget: &Rc<Budget>) -> Vec<LaunchConfig> {
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

/// The launch of an Ollama Modelfile.
fn modelfile_text(text: &str, hints: &ParseHints, budget: &Rc<Budget>) -> Vec<LaunchConfig> {
    if budget.take(text.len()) {
        modelfile::launch(text, hints).into_iter().collect()
    } else {
        Vec::new()
    }
}

/// The launches of a compose file or a Kubernetes (or serving-chart) document; a text that is
/// no YAML is read as a shell text.
fn yaml_text(
    kind: TextKind,
    text: &str,
    hints: &ParseHints,
    budget: &Rc<Budget>,
) -> Vec<LaunchConfig> {
    let clean = strip_fences(text);
    match yaml_lenient(&clean) {
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
    }
}

/// The launch of an engine's start-up line given as text (SGLang's `server_args=`, vLLM's
/// `non-default args:`).
fn startup_text(kind: TextKind, text: &str, hints: &ParseHints) -> Vec<LaunchConfig> {
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

/// Removes Markdown code-fence lines (README snippets keep their fences).
fn strip_fences(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
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
    let drop_in = u
        .exec_start
        .is_empty()
        .then(|| env_drop_in::configured_engine(&u.environment))
        .flatten();
    if let Some(command) = drop_in.and_then(env_drop_in::server_command) {
        u.exec_start.push(command);
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
    if let Some(engine) = drop_in {
        for l in &mut out {
            l.entrypoint = None;
            l.argv.clear();
            l.warnings.push(env_drop_in::warning(engine));
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
