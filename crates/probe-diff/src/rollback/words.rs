//! The words of a rollback: shell quoting, the earlier launch as a runnable text, the flags that
//! differ, package pins, power and driver steps, environment assignments and what a
//! `systemctl revert` would also drop. Shared by the plan (`rollback`) and the host report's
//! restore text (`verdict::restore`), which stands on it.

use probe_model::{Change, LaunchConfig, SourceKind, SystemdUnit};
use serde_json::Value;

/// Characters that need no quoting in a POSIX shell word.
pub(crate) fn plain(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
}

/// A word quoted for a POSIX shell.
pub(crate) fn quote(word: &str) -> String {
    if plain(word) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

pub(crate) fn text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// The launch as a shell text: its working directory, environment and argv.
pub(crate) fn launch_text(launch: &LaunchConfig) -> Option<String> {
    if launch.argv.is_empty() {
        return None;
    }
    let mut words: Vec<String> = Vec::new();
    if let Some(dir) = &launch.working_directory {
        words.push(format!("cd {} &&", quote(dir)));
    }
    if launch.source.kind != SourceKind::Process {
        for (name, value) in &launch.env {
            words.push(format!("{name}={}", quote(value)));
        }
    }
    words.extend(launch.argv.iter().map(|w| quote(w)));
    Some(words.join(" "))
}

/// The flags of the earlier launch that the running one does not have as they were, and
/// (`drop ...`) the running one's flags the earlier launch did not have.
pub(crate) fn differing_flags(
    before: &LaunchConfig,
    after: &LaunchConfig,
    changes: &[Change],
) -> Vec<String> {
    changes
        .iter()
        .filter_map(|c| {
            let flag = c.key.replace(['.', '_'], "-");
            let option = |l: &LaunchConfig| {
                l.options
                    .get(&c.key)
                    .or_else(|| l.options.get(&flag))
                    .map(|o| o.written.clone())
            };
            option(before)
                .or_else(|| {
                    (c.before.is_none())
                        .then(|| option(after).map(|w| format!("drop {w}")))
                        .flatten()
                })
                .or_else(|| c.before_written.clone())
                .or_else(|| {
                    let value = text(c.before.as_ref())?;
                    c.key
                        .starts_with("speculative")
                        .then(|| format!("{} = {value}", c.key))
                })
        })
        .collect()
}

/// `pip install NAME==VERSION ...` for the packages whose earlier versions are known.
pub(crate) fn pins(changes: &[Change], interpreter: Option<&str>) -> Option<String> {
    let mut pinned: Vec<String> = Vec::new();
    for change in changes {
        let name = match change.key.as_str() {
            key if key.starts_with("package:") => key.trim_start_matches("package:").to_string(),
            _ => continue,
        };
        let Some(version) = text(change.before.as_ref()) else {
            continue;
        };
        if version.starts_with("older than") || !plain(&version) || !plain(&name) {
            continue;
        }
        pinned.push(format!("{name}=={version}"));
    }
    if pinned.is_empty() {
        return None;
    }
    let pip = match interpreter {
        Some(python) => format!("{} -m pip", quote(python)),
        None => String::from("pip"),
    };
    Some(format!("{pip} install {}", pinned.join(" ")))
}

/// A power limit back to its earlier value.
pub(crate) fn power_steps(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .filter(|c| c.key.ends_with(".power_limit"))
        .filter_map(|c| {
            let watts = text(c.before.as_ref())?;
            let gpu = c
                .key
                .trim_end_matches(".power_limit")
                .rsplit(|ch: char| !ch.is_ascii_digit())
                .next()
                .filter(|g| !g.is_empty())
                .map(|g| format!(" -i {g}"))
                .unwrap_or_default();
            Some(format!(
                "nvidia-smi{gpu} -pl {}",
                watts.trim_end_matches(" W")
            ))
        })
        .collect()
}

pub(crate) fn driver_steps(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .filter(|c| c.key == "gpu.driver_version")
        .filter_map(|c| {
            Some(format!(
                "driver {} -> {}: reinstall the earlier driver ({}) and reboot",
                text(c.after.as_ref())?,
                text(c.before.as_ref())?,
                text(c.before.as_ref())?
            ))
        })
        .collect()
}

/// Drop-in lines named when saying what a `systemctl revert` would also drop.
const REVERT_LINES: usize = 6;

/// `VAR=value` (or `drop VAR=value`): an environment variable's assignment among the
/// differing settings, with whether it is to be dropped.
pub(crate) fn env_assignment(item: &str) -> Option<(&str, &str, bool)> {
    let (dropped, item) = match item.strip_prefix("drop ") {
        Some(rest) => (true, rest),
        None => (false, item),
    };
    let (var, value) = item.split_once('=')?;
    let mut chars = var.chars();
    let first = chars.next()?;
    let named = (first.is_ascii_uppercase() || first == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    named.then_some((var, value, dropped))
}

/// Whether the change that set `var` matters to the verdict: not ruled out, and explaining it
/// where some change does. A variable no change names matters.
pub(crate) fn matters(before: &LaunchConfig, changes: &[Change], var: &str) -> bool {
    let prefix = format!("{var}=");
    let of_var = |c: &&Change| {
        before
            .options
            .get(&c.key)
            .is_some_and(|o| o.written.starts_with(&prefix))
            || c.before_written
                .as_deref()
                .is_some_and(|w| w.starts_with(&prefix))
    };
    let Some(change) = changes.iter().find(of_var) else {
        return true;
    };
    let explained = changes.iter().any(|c| {
        c.verdict
            .as_ref()
            .is_some_and(|v| v.assessment == probe_model::Assessment::Explains)
    });
    match change.verdict.as_ref().map(|v| v.assessment) {
        Some(probe_model::Assessment::RuledOut) => false,
        Some(probe_model::Assessment::Explains) => true,
        _ => !explained,
    }
}

/// What `systemctl revert` would do here: undo exactly the change (the drop-ins hold only its
/// lines, and without them the unit file's own launch is the earlier one), or what else it
/// would drop. `None` when the unit has no drop-ins.
pub(crate) fn revert_step(
    unit: &SystemdUnit,
    before: &LaunchConfig,
    files: &[probe_launch::UnitFile<'_>],
    changed: &[(&str, &str)],
) -> Option<String> {
    let name = &unit.name;
    let drop_ins: Vec<&probe_launch::UnitFile<'_>> = files.iter().filter(|f| f.drop_in).collect();
    if drop_ins.is_empty() {
        return None;
    }
    let also: Vec<String> = drop_ins
        .iter()
        .flat_map(|f| {
            f.directives
                .iter()
                .filter(|d| !changed.contains(&(f.path, d.as_str())))
                .map(move |d| format!("{d} ({})", f.path))
        })
        .collect();
    let paths: Vec<&str> = drop_ins.iter().map(|f| f.path).collect();
    let own_is_earlier = probe_launch::without_drop_ins(unit).is_some_and(|own| {
        let hints = probe_launch::ParseHints {
            engine_version: before.engine_version.clone(),
            ..probe_launch::ParseHints::default()
        };
        probe_launch::from_unit(&own, &hints)
            .iter()
            .any(|l| l.engine == before.engine && probe_launch::same_configuration(l, before))
    });
    if also.is_empty() && own_is_earlier {
        return Some(format!(
            "or `systemctl revert {name}`: it removes the drop-in(s) {}, which hold only this \
             change, and the unit file's own ExecStart= is the earlier launch",
            paths.join(", ")
        ));
    }
    let more = also.len().saturating_sub(REVERT_LINES);
    let shown: Vec<&str> = also.iter().take(REVERT_LINES).map(String::as_str).collect();
    let falls_back = if own_is_earlier {
        String::new()
    } else {
        String::from(
            "; it falls back to the unit file's own ExecStart=, which is not the earlier launch",
        )
    };
    Some(if shown.is_empty() {
        format!(
            "not `systemctl revert {name}` alone: it removes every drop-in ({}){falls_back}",
            paths.join(", ")
        )
    } else {
        format!(
            "not `systemctl revert {name}`: it removes every drop-in, and with them also {}{}{falls_back}",
            shown.join("; "),
            if more > 0 {
                format!("; {more} more")
            } else {
                String::new()
            }
        )
    })
}
