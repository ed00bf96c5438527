//! A unit text without `ExecStart=` whose variables configure an engine's server (a drop-in of
//! `systemctl edit`, as Ollama's install is configured): the engine is the one whose
//! definition's `[environment]` prefix names one of the variables, and its command is the
//! definition's binary entry point, in the unit the drop-in extends.

use std::collections::BTreeMap;

use crate::catalog::{Catalog, EntryKind, catalog};
use probe_model::Engine;

/// The catalog of the engine `env` configures, when a variable carries its prefix.
pub(crate) fn configured_engine(env: &BTreeMap<String, String>) -> Option<&'static Catalog> {
    Engine::ALL.into_iter().map(|e| catalog(e, None)).find(|c| {
        c.environment
            .prefix
            .as_deref()
            .is_some_and(|p| env.keys().any(|k| k.starts_with(p)))
    })
}

/// The `ExecStart=` line the extended unit runs: the binary entry point with its subcommand
/// (`ollama serve`).
pub(crate) fn server_command(c: &Catalog) -> Option<String> {
    let ep = c
        .entry_points
        .iter()
        .find(|e| e.kind == EntryKind::Binary)?;
    let words: Vec<&str> = std::iter::once(ep.matches.as_str())
        .chain(ep.subcommand.iter().map(String::as_str))
        .collect();
    Some(words.join(" "))
}

/// What a launch read from such a drop-in says about itself.
pub(crate) fn warning(c: &Catalog) -> String {
    let prefix = c.environment.prefix.as_deref().unwrap_or_default();
    let engine = c.engine();
    let label = c
        .environment
        .label
        .clone()
        .unwrap_or_else(|| engine.to_string());
    format!(
        "no ExecStart= in this text (a drop-in): its {prefix}* variables configure {label}'s \
         server, whose command is in the unit it extends"
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn the_engine_a_drop_in_configures_table() {
        type Case = (&'static [&'static str], Option<(Engine, &'static str)>);
        let cases: &[Case] = &[
            (
                &["OLLAMA_CONTEXT_LENGTH"],
                Some((Engine::Ollama, "ollama serve")),
            ),
            (
                &["PATH", "OLLAMA_HOST"],
                Some((Engine::Ollama, "ollama serve")),
            ),
            (&["PATH", "CUDA_VISIBLE_DEVICES"], None),
            (&[], None),
        ];
        for (keys, want) in cases {
            let env: BTreeMap<String, String> = keys
                .iter()
                .map(|k| (k.to_string(), "1".to_string()))
                .collect();
            let got = configured_engine(&env).map(|c| (c.engine(), server_command(c).unwrap()));
            let want = want.map(|(e, cmd)| (e, cmd.to_string()));
            assert_eq!(got, want, "{keys:?}");
        }
    }
}
