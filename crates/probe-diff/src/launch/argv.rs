//! From an argv to a launch: unwrapping wrappers, finding the engine's entry point, reading the
//! options with the engine's catalog.

use std::collections::BTreeMap;

use probe_model::{Engine, LaunchConfig, LaunchOption};

use super::options::{merge_config, parse, speculative};
use super::shell::{self, State};
use super::{ParseHints, container, yaml_to_json};
use crate::catalog::{Catalog, EntryKind, EntryPoint, catalog};

const MAX_DEPTH: usize = 6;

/// Everything known around an argv.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ctx {
    pub env: BTreeMap<String, String>,
    /// Variables known but not part of the launch env (EnvironmentFile, outer shell).
    pub wrappers: Vec<String>,
    /// Context wrappers (`conda`, `venv`) that come after process wrappers.
    pub context_wrappers: Vec<String>,
    pub venv: Option<String>,
    pub warnings: Vec<String>,
    pub files: std::rc::Rc<BTreeMap<String, String>>,
    pub log_files: Vec<String>,
    pub cwd: Option<String>,
    pub depth: usize,
}

pub(crate) fn basename(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().unwrap_or(p)
}

fn is_python(base: &str) -> bool {
    let b = base.strip_suffix(".exe").unwrap_or(base);
    b == "python"
        || b == "pypy3"
        || b.strip_prefix("python")
            .map(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .unwrap_or(false)
}

/// Wrappers that take their own options and then run a command; the command is found by scanning
/// for the next word that starts a known launcher.
const SCAN_WRAPPERS: &[&str] = &[
    "numactl",
    "taskset",
    "nice",
    "ionice",
    "timeout",
    "chrt",
    "setsid",
    "srun",
    "mpirun",
    "mpiexec",
    "unbuffer",
    "xvfb-run",
    "ncu",
    "strace",
    "cgexec",
    "systemd-run",
    "prlimit",
    "stdbuf",
    "caffeinate",
    "nsys",
    "runuser",
    "su-exec",
    "gosu",
    "tini",
    "dumb-init",
    "with-contenv",
    "ltrace",
    "perf",
    "py-spy",
    "ray",
    "trtllm-llmapi-launch",
    "watchmedo",
    "singularity",
    "apptainer",
    "screen",
    "tmux",
    "pm2",
];

fn wrapper_label(base: &str, next: Option<&str>) -> Option<String> {
    match base {
        "nsys" => Some(format!(
            "nsys {}",
            next.filter(|n| !n.starts_with('-')).unwrap_or("profile")
        )),
        "numactl" | "taskset" | "srun" | "mpirun" | "mpiexec" | "ncu" | "strace" | "perf"
        | "py-spy" => Some(base.to_string()),
        _ => None,
    }
}

fn entry_for_binary(
    base: &str,
    rest: &[String],
) -> Option<(&'static Catalog, &'static EntryPoint)> {
    // Windows builds (`llama-server.exe`).
    let base = base
        .strip_suffix(".exe")
        .or_else(|| base.strip_suffix(".EXE"))
        .unwrap_or(base);
    entry_point(EntryKind::Binary, base, rest)
}

fn entry_for_module(
    module: &str,
    rest: &[String],
) -> Option<(&'static Catalog, &'static EntryPoint)> {
    entry_point(EntryKind::Module, module, rest)
}

/// The catalog entry point of `kind` (`binary`, `module`) named `name` whose subcommand words
/// (if any) start `rest`.
fn entry_point(
    kind: EntryKind,
    name: &str,
    rest: &[String],
) -> Option<(&'static Catalog, &'static EntryPoint)> {
    for e in Engine::ALL {
        let c = catalog(e, None);
        for ep in &c.entry_points {
            if ep.kind == kind && ep.matches == name {
                let ok = ep
                    .subcommand
                    .iter()
                    .enumerate()
                    .all(|(k, w)| rest.get(k).map(String::as_str) == Some(w.as_str()));
                if ok {
                    return Some((c, ep));
                }
            }
        }
    }
    None
}

/// The engine entry point of a container image (`vllm/vllm-openai:v0.8.5` -> vLLM).
pub(crate) fn entry_for_image(image: &str) -> Option<(&'static Catalog, &'static EntryPoint)> {
    let repo = image_repo(image);
    let last = basename(&repo);
    for e in Engine::ALL {
        let c = catalog(e, None);
        for ep in &c.entry_points {
            if ep.kind == EntryKind::Image
                && (repo.ends_with(&ep.matches) || basename(&ep.matches) == last)
            {
                return Some((c, ep));
            }
        }
    }
    None
}

/// How a guessed engine starts when only its arguments are given (an image whose entry point is
/// not known): its image entry point, else its first binary or module entry point.
fn default_entry_argv(c: &Catalog) -> Option<Vec<String>> {
    let eps = &c.entry_points;
    if let Some(ep) = eps
        .iter()
        .find(|e| e.kind == EntryKind::Image && !e.image_entrypoint.is_empty())
    {
        return Some(ep.image_entrypoint.clone());
    }
    let ep = eps
        .iter()
        .find(|e| e.kind == EntryKind::Binary)
        .or_else(|| eps.iter().find(|e| e.kind == EntryKind::Module))?;
    let head = if ep.kind == EntryKind::Module {
        vec!["python3".to_string(), "-m".to_string(), ep.matches.clone()]
    } else {
        vec![ep.matches.clone()]
    };
    Some(
        head.into_iter()
            .chain(ep.subcommand.iter().cloned())
            .collect(),
    )
}

/// Number of distinct `--flags` in `args` that `c` knows by an exact spelling.
fn known_flags(c: &Catalog, args: &[String]) -> usize {
    let mut seen = std::collections::BTreeSet::new();
    for a in args {
        if !a.starts_with("--") {
            continue;
        }
        let flag = a.split_once('=').map(|(f, _)| f).unwrap_or(a);
        let spelled = if c.underscore_to_dash {
            format!("--{}", flag.trim_start_matches('-').replace('_', "-"))
        } else {
            flag.to_string()
        };
        if let Some((o, _)) = c.lookup_exact(&spelled) {
            seen.insert(o.name.clone());
        }
    }
    seen.len()
}

/// The entry argv of an image we have no catalog entry for, when its command is only server
/// arguments (`vastai/vllm:v0.7.0 --model ...`, a custom TGI build `falcon-lctx:1.0 --model-id ...`):
/// the engine named in the image, else the one whose catalog knows clearly most of the flags.
pub(crate) fn guess_image_entry(image: &str, cmd: &[String]) -> Option<Vec<String>> {
    if !cmd.first().map(|a| a.starts_with('-')).unwrap_or(false) {
        return None;
    }
    let repo = image_repo(image);
    if let Some(e) = super::guess_engine_from_name(&repo) {
        return default_entry_argv(catalog(e, None));
    }
    let mut scores: Vec<(usize, Engine)> = Engine::ALL
        .iter()
        .map(|&e| (known_flags(catalog(e, None), cmd), e))
        .collect();
    scores.sort_by_key(|s| std::cmp::Reverse(s.0));
    match scores.as_slice() {
        [(best, e), (second, _), ..] if *best >= 2 && *best > second + 1 => {
            default_entry_argv(catalog(*e, None))
        }
        [(best, e)] if *best >= 2 => default_entry_argv(catalog(*e, None)),
        _ => None,
    }
}

fn image_repo(image: &str) -> String {
    let no_digest = image.split('@').next().unwrap_or(image);
    let last_slash = no_digest.rfind('/').map(|p| p + 1).unwrap_or(0);
    match no_digest.get(last_slash..).and_then(|t| t.find(':')) {
        Some(colon) => no_digest
            .get(..last_slash + colon)
            .unwrap_or(no_digest)
            .to_string(),
        None => no_digest.to_string(),
    }
}

/// Whether `word` starts something we can follow (a launcher, an interpreter, a wrapper).
pub(crate) fn is_launcher_word(word: &str, next: &[String]) -> bool {
    let base = basename(word);
    is_python(base)
        || entry_for_binary(base, next).is_some()
        || matches!(
            base,
            "bash"
                | "sh"
                | "zsh"
                | "dash"
                | "docker"
                | "podman"
                | "nerdctl"
                | "uv"
                | "conda"
                | "nohup"
                | "env"
                | "exec"
                | "sudo"
                | "eval"
        )
        || SCAN_WRAPPERS.contains(&base)
}

fn venv_of(path: &str) -> Option<(String, &'static str)> {
    let (dir, _) = path.rsplit_once("/bin/")?;
    let lower = dir.to_ascii_lowercase();
    if lower.contains("conda") || lower.contains("mamba") || lower.contains("/envs/") {
        return Some((dir.to_string(), "conda"));
    }
    let last = basename(dir);
    if last.contains("venv")
        || last.contains("env")
        || last.starts_with('.')
        || lower.contains("venv")
    {
        return Some((dir.to_string(), "venv"));
    }
    None
}

/// One launch from `argv`; `None` when it runs no model server we know.
pub(crate) fn launch(argv: &[String], mut ctx: Ctx, hints: &ParseHints) -> Option<LaunchConfig> {
    if ctx.depth > MAX_DEPTH {
        return None;
    }
    let mut i = 0;
    // A pasted prompt (`$ vllm serve ...`).
    while matches!(argv.get(i).map(String::as_str), Some("$" | "%" | ">" | "#")) {
        i += 1;
    }
    // `history` output (`  123  vllm serve ...`).
    if argv
        .get(i)
        .map(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or(false)
        && argv.len() > i + 1
    {
        i += 1;
    }
    // Makefile recipe prefixes (`@python ...`, `-vllm ...`).
    let owned: Vec<String>;
    let argv: &[String] = match argv.get(i) {
        Some(w)
            if (w.starts_with('@') || w.starts_with('-'))
                && w.len() > 1
                && is_launcher_word(w.trim_start_matches(['@', '-']), &[]) =>
        {
            let mut v = argv.to_vec();
            if let Some(x) = v.get_mut(i) {
                *x = x.trim_start_matches(['@', '-']).to_string();
            }
            owned = v;
            &owned
        }
        _ => argv,
    };
    let mut interpreter: Option<String> = None;
    loop {
        let word = argv.get(i)?;
        let base = basename(word);
        let rest = argv.get(i + 1..).unwrap_or(&[]);
        if let Some((name, value, _)) = assignment(word) {
            // `env VAR=x cmd`, `sudo VAR=x cmd`
            ctx.env.insert(name.to_string(), value.to_string());
            i += 1;
            continue;
        }
        match base {
            "nohup" => {
                ctx.wrappers.push("nohup".into());
                i += 1;
            }
            "exec" | "time" | "command" | "builtin" | "then" | "do" => {
                i += 1;
                while argv.get(i).map(|a| a.starts_with('-')).unwrap_or(false) {
                    i += 1;
                }
            }
            "env" => {
                i += 1;
                while let Some(a) = argv.get(i) {
                    if a == "-u" || a == "--unset" || a == "-C" || a == "--chdir" {
                        i += 2;
                    } else if a.starts_with('-') {
                        i += 1;
                    } else if let Some((n, v, _)) = assignment(a) {
                        ctx.env.insert(n.to_string(), v.to_string());
                        i += 1;
                    } else {
                        break;
                    }
                }
            }
            "sudo" | "doas" => {
                i += 1;
                while let Some(a) = argv.get(i) {
                    if matches!(
                        a.as_str(),
                        "-u" | "-g" | "-C" | "-D" | "-p" | "-r" | "-t" | "-U" | "-h"
                    ) {
                        i += 2;
                    } else if a.starts_with('-') {
                        i += 1;
                    } else {
                        break;
                    }
                }
            }
            "uv" if rest.first().map(String::as_str) == Some("run") => {
                ctx.wrappers.push("uv run".into());
                i += 2;
                while let Some(a) = argv.get(i) {
                    if matches!(
                        a.as_str(),
                        "--with"
                            | "--python"
                            | "-p"
                            | "--directory"
                            | "--project"
                            | "--env-file"
                            | "--extra"
                            | "--group"
                            | "--package"
                            | "--index"
                            | "--with-requirements"
                            | "--index-url"
                    ) {
                        i += 2;
                    } else if a.starts_with('-') {
                        i += 1;
                    } else {
                        break;
                    }
                }
            }
            "conda" | "mamba" | "micromamba" if rest.first().map(String::as_str) == Some("run") => {
                ctx.wrappers.push("conda".into());
                i += 2;
                while let Some(a) = argv.get(i) {
                    if matches!(a.as_str(), "-n" | "--name" | "-p" | "--prefix" | "--cwd") {
                        if let Some(v) = argv.get(i + 1) {
                            ctx.venv = Some(v.clone());
                        }
                        i += 2;
                    } else if a.starts_with('-') {
                        i += 1;
                    } else {
                        break;
                    }
                }
            }
            "bash" | "sh" | "zsh" | "dash" | "ksh" | "fish" | "busybox" => {
                let mut j = i + 1;
                if base == "busybox" && argv.get(j).map(|a| a == "sh").unwrap_or(false) {
                    j += 1;
                }
                let mut has_c = false;
                while let Some(a) = argv.get(j) {
                    if a.starts_with('-') && !a.starts_with("--") {
                        has_c |= a.contains('c');
                        j += 1;
                    } else if a.starts_with("--") {
                        j += 1;
                    } else {
                        break;
                    }
                }
                if !has_c {
                    return None;
                }
                let script = argv.get(j)?;
                let label = if base == "sh" || base == "dash" || base == "busybox" {
                    "sh -c"
                } else {
                    "bash -c"
                };
                ctx.wrappers.push(label.into());
                return from_shell_text(script, ctx, hints);
            }
            "eval" => {
                ctx.wrappers.push("eval".into());
                let script = rest.join(" ");
                return from_shell_text(&script, ctx, hints);
            }
            // Distributed launchers running a module (`torchrun --nproc_per_node 2 -m
            // sglang.launch_server ...`, `accelerate launch -m ...`): read as `python -m`.
            "torchrun" | "accelerate" | "deepspeed" => {
                let j = (i + 1..argv.len()).find(|&j| {
                    argv.get(j)
                        .map(|a| a == "-m" || a == "--module")
                        .unwrap_or(false)
                })?;
                let v: Vec<String> = std::iter::once("python".to_string())
                    .chain(std::iter::once("-m".to_string()))
                    .chain(argv.get(j + 1..).unwrap_or(&[]).iter().cloned())
                    .collect();
                ctx.depth += 1;
                return launch(&v, ctx, hints);
            }
            "docker" | "podman" | "nerdctl" | "nvidia-docker" => {
                return container::docker_run(argv.get(i..).unwrap_or(&[]), ctx, hints);
            }
            b if SCAN_WRAPPERS.contains(&b) => {
                if let Some(l) = wrapper_label(b, rest.first().map(String::as_str)) {
                    ctx.wrappers.push(l);
                }
                let j = (i + 1..argv.len()).find(|&j| {
                    argv.get(j)
                        .map(|w| {
                            let b = basename(w);
                            // `apptainer exec IMAGE cmd`, `env`: the wrapper's own words.
                            b != "nohup"
                                && b != "env"
                                && b != "exec"
                                && is_launcher_word(w, argv.get(j + 1..).unwrap_or(&[]))
                        })
                        .unwrap_or(false)
                });
                match j {
                    Some(j) => i = j,
                    None => {
                        // `tmux new -d 'cmd ...'`, `screen -dm bash -c ...`: a command given as one string.
                        let script = rest.iter().find(|a| a.contains(' '))?.clone();
                        return from_shell_text(&script, ctx, hints);
                    }
                }
            }
            b if is_python(b)
                || (b.starts_with('$') && rest.first().map(String::as_str) == Some("-m")) =>
            {
                interpreter = Some(word.clone());
                let mut j = i + 1;
                let mut module: Option<String> = None;
                while let Some(a) = argv.get(j) {
                    match a.as_str() {
                        "-m" => {
                            module = argv.get(j + 1).cloned();
                            j += 2;
                            break;
                        }
                        "-X" | "-W" => j += 2,
                        "-c" => return None,
                        s if s.starts_with("-m") && s.len() > 2 => {
                            module = Some(s.get(2..).unwrap_or("").to_string());
                            j += 1;
                            break;
                        }
                        s if s.starts_with('-') => j += 1,
                        _ => break,
                    }
                }
                let Some(module) = module else {
                    // `python3 /opt/venv/bin/vllm serve ...`: a console script run by its
                    // interpreter (how /proc shows a script started through its shebang).
                    let script = argv.get(j)?;
                    if script.contains('/')
                        && entry_for_binary(basename(script), argv.get(j + 1..).unwrap_or(&[]))
                            .is_some()
                    {
                        i = j;
                        continue;
                    }
                    return None;
                };
                let rest = argv.get(j..).unwrap_or(&[]);
                let (cat, ep) = entry_for_module(&module, rest)?;
                let after = j + ep.subcommand.len();
                let entry = std::iter::once(format!("python -m {module}"))
                    .chain(ep.subcommand.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" ");
                return Some(build(
                    cat,
                    ep,
                    entry,
                    interpreter,
                    argv.get(after..).unwrap_or(&[]),
                    argv,
                    ctx,
                    hints,
                ));
            }
            _ => {
                let (cat, ep) = entry_for_binary(base, rest)?;
                let after = i + 1 + ep.subcommand.len();
                let entry = std::iter::once(base.to_string())
                    .chain(ep.subcommand.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" ");
                if word.contains('/')
                    && let Some((dir, kind)) = venv_of(word)
                {
                    ctx.venv.get_or_insert(dir);
                    if !ctx.context_wrappers.iter().any(|w| w == kind) {
                        ctx.context_wrappers.push(kind.into());
                    }
                }
                return Some(build(
                    cat,
                    ep,
                    entry,
                    interpreter,
                    argv.get(after..).unwrap_or(&[]),
                    argv,
                    ctx,
                    hints,
                ));
            }
        }
    }
}

pub(crate) fn assignment(s: &str) -> Option<(&str, &str, bool)> {
    let (name, value) = s.split_once('=')?;
    if name.is_empty()
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || name
            .chars()
            .next()
            .map(|c| c.is_ascii_digit())
            .unwrap_or(true)
    {
        return None;
    }
    Some((name, value, false))
}

/// Runs a shell text (a `bash -c` string, an `eval`) and returns its first launch.
pub(crate) fn from_shell_text(script: &str, ctx: Ctx, hints: &ParseHints) -> Option<LaunchConfig> {
    let mut st = State {
        exported: ctx.env.clone(),
        files: ctx.files.clone(),
        cwd: ctx.cwd.clone(),
        ..State::default()
    };
    for (k, v) in &ctx.env {
        st.vars.insert(k.clone(), shell::Val::Text(v.clone()));
    }
    let cmds = shell::commands(script, &mut st, ctx.depth + 1);
    for c in cmds {
        let mut sub = ctx.clone();
        sub.depth += 1;
        if let Some(l) = from_shell_command(&c, sub, hints) {
            return Some(l);
        }
    }
    None
}

/// A launch from one command of a shell text, with that command's environment and context.
pub(crate) fn from_shell_command(
    c: &shell::ShellCommand,
    mut ctx: Ctx,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    for (k, v) in &c.exported {
        ctx.env.insert(k.clone(), v.clone());
    }
    for (k, v) in &c.prefix_env {
        ctx.env.insert(k.clone(), v.clone());
    }
    for w in &c.context_wrappers {
        if w == "eval" {
            ctx.wrappers.push(w.clone());
        } else if !ctx.context_wrappers.contains(w) {
            ctx.context_wrappers.push(w.clone());
        }
    }
    if ctx.venv.is_none() {
        ctx.venv = c.venv.clone();
    }
    if c.cwd.is_some() {
        ctx.cwd = c.cwd.clone();
    }
    if ctx.files.is_empty() {
        ctx.files = c.files.clone();
    } else if !c.files.is_empty() {
        let m = std::rc::Rc::make_mut(&mut ctx.files);
        for (k, v) in c.files.iter() {
            m.insert(k.clone(), v.clone());
        }
    }
    let mut logs: Vec<String> = c.redirects.iter().map(|(_, t)| t.clone()).collect();
    logs.extend(c.tee.iter().cloned());
    let mut l = launch(&c.argv, ctx, hints)?;
    if !c.tee.is_empty() {
        l.wrappers.push("tee".into());
    }
    if l.wrappers.iter().any(|w| w == "nohup") && logs.is_empty() {
        logs.push("nohup.out".into());
    }
    for f in logs {
        if !l.log_files.contains(&f) {
            l.log_files.push(f);
        }
    }
    Some(l)
}

#[allow(clippy::too_many_arguments)]
fn build(
    cat: &'static Catalog,
    ep: &EntryPoint,
    entrypoint: String,
    interpreter: Option<String>,
    args: &[String],
    argv: &[String],
    mut ctx: Ctx,
    hints: &ParseHints,
) -> LaunchConfig {
    let engine = ep.engine.unwrap_or(cat.engine());
    let version = hints.engine_version.clone();
    let cat = match &version {
        Some(v) => catalog(cat.engine(), Some(v)),
        None => cat,
    };
    let parsed = parse(cat, args, ep.positional_model);
    let mut options = parsed.options;
    let mut warnings = std::mem::take(&mut ctx.warnings);
    warnings.extend(parsed.warnings);

    // Options read from environment variables (TGI, llama.cpp, Ollama).
    for spec in cat.options() {
        if let Some(var) = &spec.env
            && !options.contains_key(&spec.name)
            && let Some(v) = ctx.env.get(var)
        {
            options.insert(
                spec.name.clone(),
                LaunchOption {
                    value: super::values::typed(v, &spec.kind, &cat.units),
                    written: format!("{var}={v}"),
                },
            );
        }
    }
    // A YAML config written earlier in the same text (here-document).
    for name in &cat.config_options {
        if let Some(o) = options.get(name).cloned()
            && let Some(path) = o.value.as_str()
        {
            let key = shell::normalize_path(path);
            let found = ctx.files.get(&key).or_else(|| {
                ctx.files
                    .iter()
                    .find(|(k, _)| basename(k) == basename(&key))
                    .map(|(_, v)| v)
            });
            if let Some(text) = found {
                if let Some(cfg) = yaml_to_json(text) {
                    merge_config(cat, &cfg, &mut options, "");
                }
            } else {
                warnings.push(format!(
                    "options in config file {path} are not visible here"
                ));
            }
        }
    }

    let model = parsed.positional_model.clone().or_else(|| {
        cat.model_options.iter().find_map(|m| {
            options.get(m).and_then(|o| match &o.value {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Null => None,
                other => Some(other.to_string()),
            })
        })
    });
    let spec = speculative(cat, &options);
    let mut log_files = ctx.log_files.clone();
    for (k, o) in &options {
        if (k == "log-file" || k == "log_file")
            && let Some(s) = o.value.as_str()
        {
            log_files.push(s.to_string());
        }
    }
    if let Some(ip) = &interpreter
        && let Some((dir, kind)) = venv_of(ip)
    {
        ctx.venv.get_or_insert(dir);
        if !ctx.context_wrappers.iter().any(|w| w == kind) {
            ctx.context_wrappers.push(kind.into());
        }
    }
    let mut wrappers = ctx.wrappers.clone();
    for w in &ctx.context_wrappers {
        if !wrappers.contains(w) {
            wrappers.push(w.clone());
        }
    }
    LaunchConfig {
        engine,
        engine_version: version,
        entrypoint: Some(entrypoint),
        interpreter,
        venv: ctx.venv.clone(),
        wrappers,
        model,
        options,
        env: ctx.env.clone(),
        unknown: parsed.unknown,
        warnings,
        speculative: spec,
        argv: argv.to_vec(),
        working_directory: ctx.cwd.clone().or_else(|| hints.working_directory.clone()),
        log_files,
        source: hints.source.clone(),
    }
}
