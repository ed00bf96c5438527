//! From an argv to a launch: unwrapping wrappers (`configs/wrappers.toml`), finding the engine's
//! entry point, reading the options with the engine's catalog.

use probe_model::{LaunchConfig, LaunchOption};

use super::container;
use super::ctx::{Ctx, assignment, basename};
use super::entry::{entry_for_binary, entry_for_module, is_launcher_word};
use super::hints::ParseHints;
use super::options::{ConfigFile, merge_config, parse, speculative};
use super::shell::{self, State};
use super::wrappers::{Read, Wrapper, is_python, wrapper};
use super::yaml::yaml_to_json;
use crate::catalog::{Catalog, EntryPoint, catalog};

const MAX_DEPTH: usize = 6;

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
    // The argv and the environment are copied along the way (and into the launch).
    let cost = shell::words(argv) + shell::weight(&ctx.env);
    if ctx.depth > MAX_DEPTH || !ctx.budget.take(cost) {
        return None;
    }
    let (argv, mut i) = without_line_prefixes(argv);
    loop {
        let word = argv.get(i)?;
        if let Some((name, value, _)) = assignment(word) {
            // `env VAR=x cmd`, `sudo VAR=x cmd`
            ctx.env.insert(name.to_string(), value.to_string());
            i += 1;
            continue;
        }
        match step(&argv, i, &mut ctx, hints) {
            Step::Next(j) => i = j,
            Step::Done(l) => return l.map(|l| *l),
        }
    }
}

/// What one word of an argv leads to: the next word to read, or the end of the reading.
enum Step {
    Next(usize),
    Done(Option<Box<LaunchConfig>>),
}

fn done(l: Option<LaunchConfig>) -> Step {
    Step::Done(l.map(Box::new))
}

/// Where the command of a pasted line starts: after prompt signs (`$ vllm serve ...`) and a
/// `history` number (`  123  vllm serve ...`), with a Makefile recipe prefix (`@python ...`,
/// `-vllm ...`) taken off its word.
fn without_line_prefixes(argv: &[String]) -> (std::borrow::Cow<'_, [String]>, usize) {
    let mut i = 0;
    while matches!(argv.get(i).map(String::as_str), Some("$" | "%" | ">" | "#")) {
        i += 1;
    }
    if argv
        .get(i)
        .is_some_and(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit()))
        && argv.len() > i + 1
    {
        i += 1;
    }
    match argv.get(i) {
        Some(w)
            if (w.starts_with('@') || w.starts_with('-'))
                && w.len() > 1
                && is_launcher_word(w.trim_start_matches(['@', '-']), &[]) =>
        {
            let mut v = argv.to_vec();
            if let Some(x) = v.get_mut(i) {
                *x = x.trim_start_matches(['@', '-']).to_string();
            }
            (std::borrow::Cow::Owned(v), i)
        }
        _ => (std::borrow::Cow::Borrowed(argv), i),
    }
}

/// Reads the word at `i`: a wrapper of `configs/wrappers.toml`, an interpreter, else an engine
/// binary.
fn step(argv: &[String], i: usize, ctx: &mut Ctx, hints: &ParseHints) -> Step {
    let Some(word) = argv.get(i) else {
        return done(None);
    };
    let base = basename(word);
    let rest = argv.get(i + 1..).unwrap_or(&[]);
    match wrapper_at(base, rest).map(|w| (w, w.read)) {
        Some((w, Read::Prefix | Read::Keyword)) => Step::Next(past_prefix(w, argv, i, ctx)),
        Some((w, Read::Shell)) => done(shell_wrapper(w, argv, i, std::mem::take(ctx), hints)),
        Some((w, Read::Eval)) => {
            ctx.wrappers.extend(w.label_for(base, None));
            done(from_shell_text(&rest.join(" "), std::mem::take(ctx), hints))
        }
        Some((_, Read::Module)) => done(module_launcher(argv, i, std::mem::take(ctx), hints)),
        Some((_, Read::Container)) => done(container::docker_run(
            argv.get(i..).unwrap_or(&[]),
            std::mem::take(ctx),
            hints,
            launch,
        )),
        Some((w, Read::Scan)) => scan_wrapper(w, argv, i, ctx, hints),
        _ if is_python(base)
            || (base.starts_with('$') && rest.first().map(String::as_str) == Some("-m")) =>
        {
            python(argv, i, ctx, hints)
        }
        _ => done(engine_binary(argv, i, std::mem::take(ctx), hints)),
    }
}

/// The wrapper named `base` when the words after it fit it (its subcommand, if it has one).
fn wrapper_at(base: &str, rest: &[String]) -> Option<&'static Wrapper> {
    wrapper(base).filter(|w| {
        w.subcommand
            .as_deref()
            .is_none_or(|s| rest.first().map(String::as_str) == Some(s))
    })
}

/// Whether [`launch`] can find anything in `argv`: its command word (after prompt signs, a
/// history number and assignments) is a wrapper, an interpreter or an engine binary. Every
/// other command (`echo`, `mkdir`, ...) is passed over before its environment is copied.
fn may_launch(argv: &[String]) -> bool {
    let (argv, i) = without_line_prefixes(argv);
    let Some(j) = (i..argv.len()).find(|&j| argv.get(j).is_some_and(|w| assignment(w).is_none()))
    else {
        return false;
    };
    let base = argv.get(j).map(|w| basename(w)).unwrap_or_default();
    let rest = argv.get(j + 1..).unwrap_or(&[]);
    wrapper_at(base, rest).is_some()
        || is_python(base)
        || (base.starts_with('$') && rest.first().map(String::as_str) == Some("-m"))
        || entry_for_binary(base, rest).is_some()
}

/// Past a wrapper that takes options and then the command (`nohup`, `env -u X`, `sudo -u u`,
/// `uv run --with x`, `conda run -n env`): the index of the command.
fn past_prefix(w: &Wrapper, argv: &[String], i: usize, ctx: &mut Ctx) -> usize {
    let base = argv.get(i).map(|a| basename(a)).unwrap_or_default();
    ctx.wrappers.extend(w.label_for(base, None));
    let mut i = i + 1 + usize::from(w.subcommand.is_some());
    while let Some(a) = argv.get(i) {
        if w.venv_flags.contains(a) {
            if let Some(v) = argv.get(i + 1) {
                ctx.venv = Some(v.clone());
            }
            i += 2;
        } else if w.value_flags.contains(a) {
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
    i
}

/// A shell run with `-c SCRIPT` (`bash -lc '...'`, `busybox sh -c`): the script's first launch.
fn shell_wrapper(
    w: &Wrapper,
    argv: &[String],
    i: usize,
    mut ctx: Ctx,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    let mut j = i + 1 + usize::from(w.subcommand.is_some());
    let mut has_c = false;
    while let Some(a) = argv.get(j) {
        if !a.starts_with('-') {
            break;
        }
        has_c |= !a.starts_with("--") && a.contains('c');
        j += 1;
    }
    if !has_c {
        return None;
    }
    let script = argv.get(j)?;
    let base = argv.get(i).map(|a| basename(a)).unwrap_or_default();
    ctx.wrappers.extend(w.label_for(base, None));
    from_shell_text(script, ctx, hints)
}

/// A distributed launcher running a module (`torchrun --nproc_per_node 2 -m
/// sglang.launch_server ...`, `accelerate launch -m ...`): read as `python -m`.
fn module_launcher(
    argv: &[String],
    i: usize,
    mut ctx: Ctx,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    let j =
        (i + 1..argv.len()).find(|&j| argv.get(j).is_some_and(|a| a == "-m" || a == "--module"))?;
    let v: Vec<String> = ["python", "-m"]
        .into_iter()
        .map(str::to_string)
        .chain(argv.get(j + 1..).unwrap_or(&[]).iter().cloned())
        .collect();
    ctx.depth += 1;
    launch(&v, ctx, hints)
}

/// A wrapper with its own options and arguments (`numactl -N 0`, `timeout 1h`, `apptainer exec
/// IMAGE`): the next word that starts a launcher, else a command given as one string (`tmux new
/// -d 'cmd ...'`).
fn scan_wrapper(w: &Wrapper, argv: &[String], i: usize, ctx: &mut Ctx, hints: &ParseHints) -> Step {
    let base = argv.get(i).map(|a| basename(a)).unwrap_or_default();
    let rest = argv.get(i + 1..).unwrap_or(&[]);
    ctx.wrappers
        .extend(w.label_for(base, rest.first().map(String::as_str)));
    let skip = &super::wrappers::table().scan_skip;
    let next = (i + 1..argv.len()).find(|&j| {
        argv.get(j).is_some_and(|word| {
            !skip.iter().any(|s| s == basename(word))
                && is_launcher_word(word, argv.get(j + 1..).unwrap_or(&[]))
        })
    });
    match next {
        Some(j) => {
            // `srun env A=1 cmd`: assignments right before the command set its environment.
            let mut k = j;
            while k > i + 1
                && let Some((name, value, _)) = argv.get(k - 1).and_then(|w| assignment(w))
            {
                ctx.env.insert(name.to_string(), value.to_string());
                k -= 1;
            }
            Step::Next(j)
        }
        None => done(
            rest.iter()
                .find(|a| a.contains(' '))
                .and_then(|script| from_shell_text(script, std::mem::take(ctx), hints)),
        ),
    }
}

/// A Python interpreter: `python -m MODULE`, or a console script it runs (`python3
/// /opt/venv/bin/vllm serve ...`, how /proc shows a script started through its shebang).
fn python(argv: &[String], i: usize, ctx: &mut Ctx, hints: &ParseHints) -> Step {
    ctx.interpreter = argv.get(i).cloned();
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
            "-c" => return done(None),
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
        let is_script = argv.get(j).is_some_and(|script| {
            script.contains('/')
                && entry_for_binary(basename(script), argv.get(j + 1..).unwrap_or(&[])).is_some()
        });
        return if is_script { Step::Next(j) } else { done(None) };
    };
    let Some((cat, ep)) = entry_for_module(&module, argv.get(j..).unwrap_or(&[])) else {
        return done(None);
    };
    let entry = entry_label(&format!("python -m {module}"), ep);
    let args = argv.get(j + ep.subcommand.len()..).unwrap_or(&[]);
    let found = Found {
        cat,
        ep,
        entrypoint: entry,
    };
    done(Some(build(found, args, argv, std::mem::take(ctx), hints)))
}

/// An engine's own binary (`vllm serve`, `/opt/venv/bin/sglang`), with the environment its path
/// names.
fn engine_binary(
    argv: &[String],
    i: usize,
    mut ctx: Ctx,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    let word = argv.get(i)?;
    let base = basename(word);
    let (cat, ep) = entry_for_binary(base, argv.get(i + 1..).unwrap_or(&[]))?;
    if word.contains('/')
        && let Some((dir, kind)) = venv_of(word)
    {
        ctx.venv.get_or_insert(dir);
        if !ctx.context_wrappers.iter().any(|w| w == kind) {
            ctx.context_wrappers.push(kind.into());
        }
    }
    let found = Found {
        cat,
        ep,
        entrypoint: entry_label(base, ep),
    };
    let args = argv.get(i + 1 + ep.subcommand.len()..).unwrap_or(&[]);
    Some(build(found, args, argv, ctx, hints))
}

/// `head` followed by the entry point's subcommand words (`vllm serve`).
fn entry_label(head: &str, ep: &EntryPoint) -> String {
    std::iter::once(head.to_string())
        .chain(ep.subcommand.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a shell text (a `bash -c` string, an `eval`) and returns its first launch.
pub(crate) fn from_shell_text(script: &str, ctx: Ctx, hints: &ParseHints) -> Option<LaunchConfig> {
    // A script in a script: half of what is left at most, so that the rest still has its share.
    let budget = shell::Budget::nested(&ctx.budget);
    if !budget.take(2 * shell::weight(&ctx.env)) {
        return None;
    }
    let mut st = State {
        exported: std::rc::Rc::new(ctx.env.clone()),
        files: ctx.files.clone(),
        cwd: ctx.cwd.clone(),
        budget: shell::Budget::nested(&budget),
        ..State::default()
    };
    for (k, v) in &ctx.env {
        st.vars.insert(k.clone(), shell::Val::Text(v.clone()));
    }
    let cmds = shell::commands(script, &mut st, ctx.depth + 1);
    for c in cmds {
        if budget.exhausted() {
            break;
        }
        let mut sub = ctx.clone();
        sub.depth += 1;
        sub.budget = budget.clone();
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
    if !may_launch(&c.argv) {
        return None;
    }
    for (k, v) in c.exported.iter() {
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
    // `nohup sh -c "..." > log`: the outer command's redirection is nohup's output, not nohup.out.
    let nohup_outside = ctx.wrappers.iter().any(|w| w == "nohup");
    let mut l = launch(&c.argv, ctx, hints)?;
    for u in &c.unknown {
        l.warnings.push(format!(
            "arguments come from {u}, whose output is not in the text (an unknown number of words)"
        ));
    }
    // The conditions the text runs it under (`when $1 = -d`, `in a loop`).
    l.warnings.extend(c.when.iter().cloned());
    l.warnings.extend(c.undecided.iter().cloned());
    if !c.tee.is_empty() {
        l.wrappers.push("tee".into());
    }
    if l.wrappers.iter().any(|w| w == "nohup") && logs.is_empty() && !nohup_outside {
        logs.push("nohup.out".into());
    }
    for f in logs {
        if !l.log_files.contains(&f) {
            l.log_files.push(f);
        }
    }
    Some(l)
}

/// The entry point an argv reached: the catalog that reads its options and how it is named.
struct Found {
    cat: &'static Catalog,
    ep: &'static EntryPoint,
    entrypoint: String,
}

/// The launch of an entry point: its options read with the catalog of the engine version (when
/// known), completed from the environment and from config files written in the same text.
fn build(
    found: Found,
    args: &[String],
    argv: &[String],
    mut ctx: Ctx,
    hints: &ParseHints,
) -> LaunchConfig {
    let Found {
        cat,
        ep,
        entrypoint,
    } = found;
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
    options_from_env(cat, &ctx, &mut options);
    options_from_config_files(cat, &ctx, &mut options, &mut warnings);
    let mut unknown = parsed.unknown;
    let model = match (parsed.positional_model.clone(), model_option(cat, &options)) {
        // `sglang serve --model-path M ${EXTRA_ARGS:-}`: a variable from outside the text in
        // the model's place stands for any number of words, none of them known to be a model.
        (Some(p), Some(named)) if is_variable_reference(&p) => {
            warnings.push(format!("unresolved variable in argument {p}"));
            unknown.insert(0, p);
            Some(named)
        }
        (p, named) => p.or(named),
    };
    let spec = speculative(cat, &options);
    let mut log_files = ctx.log_files.clone();
    log_files.extend(
        options
            .iter()
            .filter(|(k, _)| *k == "log-file" || *k == "log_file")
            .filter_map(|(_, o)| o.value.as_str().map(str::to_string)),
    );
    if let Some((dir, kind)) = ctx.interpreter.as_deref().and_then(venv_of) {
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
        interpreter: ctx.interpreter.clone(),
        venv: ctx.venv.clone(),
        wrappers,
        model,
        options,
        env: ctx.env.clone(),
        unknown,
        warnings,
        speculative: spec,
        argv: argv.to_vec(),
        working_directory: ctx.cwd.clone().or_else(|| hints.working_directory.clone()),
        log_files,
        files: Vec::new(),
        loaded_models: Vec::new(),
        source: hints.source.clone(),
    }
}

type Options = std::collections::BTreeMap<String, LaunchOption>;

/// Options read from environment variables (TGI, llama.cpp, Ollama), where the argv has none.
fn options_from_env(cat: &Catalog, ctx: &Ctx, options: &mut Options) {
    options_from_env_map(cat, &ctx.env, options);
}

/// Options read from the variables of `env` (those the catalog names), where `options` has none.
pub(crate) fn options_from_env_map(
    cat: &Catalog,
    env: &std::collections::BTreeMap<String, String>,
    options: &mut Options,
) {
    for spec in cat.options() {
        if let Some(var) = &spec.env
            && !options.contains_key(&spec.name)
            && let Some(whole) = env.get(var)
            && let Some(v) = spec.env_part.map_or(Some(whole.as_str()), |p| p.of(whole))
        {
            options.insert(
                spec.name.clone(),
                LaunchOption {
                    value: super::values::typed(v, &spec.kind, cat.units),
                    written: format!("{var}={whole}"),
                },
            );
        }
    }
}

/// Options of a YAML config file written earlier in the same text (a here-document).
fn options_from_config_files(
    cat: &Catalog,
    ctx: &Ctx,
    options: &mut Options,
    warnings: &mut Vec<String>,
) {
    for name in &cat.config_options {
        let Some(path) = options
            .get(name)
            .and_then(|o| o.value.as_str())
            .map(str::to_string)
        else {
            continue;
        };
        let key = shell::normalize_path(&path);
        let found = ctx.files.get(&key).or_else(|| {
            ctx.files
                .iter()
                .find(|(k, _)| basename(k) == basename(&key))
                .map(|(_, v)| v)
        });
        match found {
            Some(text) => {
                if let Some(cfg) = yaml_to_json(text) {
                    let file = ConfigFile { path: path.clone() };
                    merge_config(cat, &cfg, &file, options, warnings, "");
                }
            }
            None => warnings.push(format!(
                "options in config file {path} are not visible here"
            )),
        }
    }
}

/// The model named by one of the catalog's model options.
fn model_option(cat: &Catalog, options: &Options) -> Option<String> {
    cat.model_options.iter().find_map(|m| {
        options.get(m).and_then(|o| match &o.value {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Null => None,
            other => Some(other.to_string()),
        })
    })
}

/// A word that is one variable reference as written (`$EXTRA`, `${ARGS:-}`): what the text
/// leaves to the environment.
fn is_variable_reference(w: &str) -> bool {
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !n.starts_with(|c: char| c.is_ascii_digit())
    };
    if let Some(body) = w.strip_prefix("${").and_then(|b| b.strip_suffix('}')) {
        let end = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(body.len());
        return name_ok(body.get(..end).unwrap_or("")) && !body.contains('$');
    }
    w.strip_prefix('$').is_some_and(name_ok)
}
