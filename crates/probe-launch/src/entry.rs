//! Catalog look-ups: which engine entry point a binary, a Python module or a container image
//! is, and whether a word starts something the launch reader can follow.

use probe_model::Engine;

use super::ctx::basename;
use super::wrappers::{guess_engine_from_name, is_python, wrapper};
use crate::catalog::{Catalog, EntryKind, EntryPoint, catalog};

pub(crate) fn entry_for_binary(
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

pub(crate) fn entry_for_module(
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
    let repo = probe_model::image_repository(image);
    let last = basename(repo);
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
pub(crate) fn default_entry_argv(c: &Catalog) -> Option<Vec<String>> {
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
    let repo = probe_model::image_repository(image);
    if let Some(e) = guess_engine_from_name(repo) {
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

/// Whether `word` starts something we can follow (a launcher, an interpreter, a wrapper).
pub(crate) fn is_launcher_word(word: &str, next: &[String]) -> bool {
    let base = basename(word);
    is_python(base)
        || entry_for_binary(base, next).is_some()
        || wrapper(base).is_some_and(|w| w.starts_launch())
}
