//! supervisord configuration: each `[program:NAME]` section's `command=` is a launch, run with
//! its `environment=`, `directory=` and log files (supervisord's own option names, from its
//! `options.py`: `command`, `environment`, `directory`, `stdout_logfile`, `stderr_logfile`).

use std::collections::BTreeMap;

use probe_model::LaunchConfig;

use super::ctx::{Ctx, ReadArgv};
use super::hints::ParseHints;
use super::ini::{Section, sections, starts_with_header};
use super::shell::split_words;

/// Whether `text` is a supervisord configuration with at least one program that has a command.
pub(crate) fn is_supervisor(text: &str) -> bool {
    starts_with_header(text) && sections(text).iter().any(|s| program(s).is_some())
}

/// The program name of a `[program:NAME]` section that has a `command=`.
fn program(s: &Section) -> Option<&str> {
    let name = s.name.strip_prefix("program:")?;
    s.get("command").map(|_| name.trim())
}

/// The launches of every program of `text`.
pub(crate) fn launches(
    text: &str,
    read: ReadArgv,
    ctx: &Ctx,
    hints: &ParseHints,
) -> Vec<LaunchConfig> {
    let mut out = Vec::new();
    for s in sections(text) {
        let Some(name) = program(&s) else { continue };
        let command = s.get("command").unwrap_or_default();
        // supervisord expands `%(program_name)s` in the command; `%(ENV_X)s` stays as written.
        let command = command.replace("%(program_name)s", name);
        let mut c = ctx.clone();
        if !c.budget.take(command.len()) {
            break;
        }
        c.env
            .extend(environment(s.get("environment").unwrap_or_default()));
        if let Some(d) = s.get("directory") {
            c.cwd = Some(d.to_string());
        }
        for key in ["stdout_logfile", "stderr_logfile"] {
            if let Some(f) = s.get(key).filter(|f| !matches!(*f, "NONE" | "AUTO" | "")) {
                c.log_files.push(f.to_string());
            }
        }
        out.extend(read(&split_words(&command), c, hints));
    }
    out
}

/// `KEY="value",KEY2=value2`: commas inside quotes belong to the value.
fn environment(v: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut items = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    for c in v.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ',') => items.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    items.push(cur);
    for it in items {
        if let Some((k, val)) = it.split_once('=') {
            let k = k.trim();
            if !k.is_empty() {
                out.insert(k.to_string(), val.trim().to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_values_keep_their_commas() {
        let e = environment("CUDA_VISIBLE_DEVICES=\"0,1\", HF_HOME='/data/hf',X=1");
        assert_eq!(
            e.get("CUDA_VISIBLE_DEVICES").map(String::as_str),
            Some("0,1")
        );
        assert_eq!(e.get("HF_HOME").map(String::as_str), Some("/data/hf"));
        assert_eq!(e.get("X").map(String::as_str), Some("1"));
    }
}
