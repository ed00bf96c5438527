//! What would restore the earlier behaviour: the earlier launch as a runnable text with the
//! differing flags named, the package pins, the power limit; and `probe diff --rollback`'s
//! checklist. probe prints these; it never runs any of them.

use probe_model::{Change, KeyArea, LaunchConfig, Restore, SourceKind, SystemdUnit};
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
pub(crate) fn differing(
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
                    c.parsed_key()
                        .is_speculative()
                        .then(|| format!("{} = {value}", c.key))
                })
        })
        .collect()
}

/// `pip install NAME==VERSION ...` for the packages whose earlier versions are known.
pub(crate) fn pins(changes: &[Change], interpreter: Option<&str>) -> Option<String> {
    let mut pinned: Vec<String> = Vec::new();
    for change in changes {
        let key = change.parsed_key();
        let name = match (key.area, key.of) {
            (KeyArea::Package, None) => key.name,
            (KeyArea::Package, Some(of)) => format!("{}@{of}", key.name),
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

/// Where the running launch's differing settings live when systemd runs it (`unit`), and the
/// least that undoes only them: which file holds its `ExecStart=` (a drop-in overrides the unit
/// file, so editing the unit file would change nothing) and the flags to change in that line,
/// which file sets each differing variable and its one line; then whether `systemctl revert`
/// undoes exactly this (the drop-ins hold nothing else, and the unit file's own `ExecStart=`
/// is the earlier launch) or what else it would drop; the reload, the restart and how to
/// check that it took. Nothing when the differences are not the launcher's (packages, a
/// driver).
fn unit_steps(
    unit: &SystemdUnit,
    before: &LaunchConfig,
    differing: &[String],
    changes: &[Change],
) -> Vec<String> {
    let files = probe_launch::unit_files(unit);
    let name = &unit.name;
    let mut out = Vec::new();
    // The drop-in lines the change is in: the rest is what a revert would also drop.
    let mut changed_lines: Vec<(&str, &str)> = Vec::new();
    // Settings an engine reads from its environment (Ollama's `OLLAMA_*`) live in
    // `Environment=` lines, not in the flags of `ExecStart=`.
    // (A variable compared as such, `env:NAME`, has its own step below.)
    let (variables, flags): (Vec<&String>, Vec<&String>) = differing.iter().partition(|d| {
        env_assignment(d).is_some_and(|(var, _, _)| {
            !changes
                .iter()
                .any(|c| c.key_name(KeyArea::Env) == Some(var))
        })
    });
    let exec_file = probe_launch::exec_start_file(&files).filter(|_| !flags.is_empty());
    if let Some(f) = exec_file {
        let edits = flags
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        out.push(if f.drop_in {
            format!(
                "the change is in the drop-in {} (what `systemctl edit {name}` writes), whose \
                 ExecStart= overrides the unit file's: the least undo is its ExecStart= line \
                 there ({edits})",
                f.path
            )
        } else {
            format!(
                "{name} takes its ExecStart= from {}: change the flags there ({edits})",
                f.path
            )
        });
        if f.drop_in {
            changed_lines.extend(
                f.directives
                    .iter()
                    .filter(|d| d.starts_with("ExecStart="))
                    .map(|d| (f.path, d.as_str())),
            );
        }
    }
    let mut left = Vec::new();
    for item in variables {
        let Some((var, value, dropped)) = env_assignment(item) else {
            continue;
        };
        if !matters(before, changes, var) {
            left.push(item.as_str());
            continue;
        }
        let wanted = format!("{var}={value}");
        let source = probe_launch::environment_source(unit, &files, var)
            .and_then(|path| files.iter().find(|f| f.path == path));
        match source {
            Some(f) => {
                let line = f
                    .directives
                    .iter()
                    .find(|d| d.starts_with("Environment=") && d.contains(&format!("{var}=")));
                if let Some(line) = line.filter(|_| f.drop_in) {
                    changed_lines.push((f.path, line.as_str()));
                }
                let what = line.map_or_else(|| format!("its {var}="), |l| format!("the line {l}"));
                let kind = if f.drop_in { "drop-in" } else { "unit file" };
                out.push(if dropped {
                    format!(
                        "{var} is set for {name} by the {kind} {}: remove {what} there",
                        f.path
                    )
                } else {
                    format!(
                        "{var} is set for {name} by the {kind} {}: change {what} there to \
                         Environment=\"{wanted}\"",
                        f.path
                    )
                });
            }
            None if !dropped => {
                let target = files.iter().rev().find(|f| f.drop_in).map_or_else(
                    || String::from("a drop-in (`systemctl edit`)"),
                    |f| format!("the drop-in {}", f.path),
                );
                out.push(format!(
                    "{var} is not set for {name} now: add Environment=\"{wanted}\" to {target}"
                ));
            }
            None => {}
        }
    }
    if !left.is_empty() && !out.is_empty() {
        let names: Vec<&str> = left
            .iter()
            .filter_map(|l| env_assignment(l).map(|(var, _, _)| var))
            .collect();
        let (it, them) = if names.len() == 1 {
            ("it is", "it")
        } else {
            ("they are", "them")
        };
        out.push(format!(
            "leave {} as {it} now (earlier {}): no tested cause needs {them} back",
            names.join(", "),
            left.join(", ")
        ));
    }
    for var in changes.iter().filter_map(|c| c.key_name(KeyArea::Env)) {
        let Some(path) = probe_launch::environment_source(unit, &files, var) else {
            continue;
        };
        match files.iter().find(|f| f.path == path) {
            Some(f) => {
                let line = f
                    .directives
                    .iter()
                    .find(|d| d.starts_with("Environment=") && d.contains(&format!("{var}=")));
                if let Some(line) = line.filter(|_| f.drop_in) {
                    changed_lines.push((f.path, line.as_str()));
                }
                out.push(format!(
                    "{var} is set for {name} by the {} {path}: change or remove {} there",
                    if f.drop_in { "drop-in" } else { "unit file" },
                    line.map_or_else(|| format!("its {var}="), |l| format!("the line {l}"))
                ));
            }
            None => out.push(format!(
                "{var} is set for {name} by its EnvironmentFile= {path}: change or remove its \
                 {var}= line there (the file alone: no other setting of {name} changes)"
            )),
        }
    }
    if out.is_empty() {
        return out;
    }
    if let Some(step) = revert_step(unit, before, &files, &changed_lines) {
        out.push(step);
    }
    out.push(format!(
        "systemctl daemon-reload && systemctl restart {name}"
    ));
    out.push(format!(
        "check that it took: systemctl show -p ExecStart -p Environment {name}"
    ));
    out
}

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

/// What would bring back the earlier launch and what it ran with; `unit`: the systemd unit that
/// runs the running launch, when one does.
pub(crate) fn restore(
    before: &LaunchConfig,
    after: &LaunchConfig,
    changes: &[Change],
    unit: Option<&SystemdUnit>,
) -> Restore {
    let interpreter = after
        .interpreter
        .as_deref()
        .or(before.interpreter.as_deref());
    let differing = differing(before, after, changes);
    let mut steps = unit
        .map(|u| unit_steps(u, before, &differing, changes))
        .unwrap_or_default();
    steps.extend(power_steps(changes));
    steps.extend(driver_steps(changes));
    Restore {
        source: probe_launch::evidence_label(before),
        launch_text: launch_text(before),
        differing,
        pins: pins(changes, interpreter),
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_quoted() {
        let cases = [
            ("plain", "plain"),
            ("--tp", "--tp"),
            ("a b", "'a b'"),
            ("it's", r"'it'\''s'"),
            ("$HOME", "'$HOME'"),
            ("", "''"),
        ];
        for (word, want) in cases {
            assert_eq!(quote(word), want);
        }
    }

    fn drop_in_unit(drop_in: &str) -> SystemdUnit {
        use probe_model::FileText;
        let file = |path: &str, content: &str| FileText {
            path: path.into(),
            content: content.into(),
            ..FileText::default()
        };
        SystemdUnit {
            name: "vllm.service".into(),
            fragment: file(
                "/etc/systemd/system/vllm.service",
                "[Service]\nExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4\n",
            ),
            drop_ins: vec![file(
                "/etc/systemd/system/vllm.service.d/override.conf",
                drop_in,
            )],
            ..SystemdUnit::default()
        }
    }

    /// The launch a unit file alone runs.
    fn own_launch(unit: &SystemdUnit) -> LaunchConfig {
        let own = probe_launch::without_drop_ins(unit).expect("a unit file");
        probe_launch::from_unit(&own, &probe_launch::ParseHints::default())
            .into_iter()
            .next()
            .expect("a launch")
    }

    /// (drop-in text, whether the earlier launch is the unit file's own, changed variable) ->
    /// the steps, each by its start: the file holding the change with the least edit, then
    /// what `systemctl revert` would do.
    #[test]
    fn the_file_holding_the_change_and_the_least_undo() {
        const EXEC: &str = "ExecStart=\nExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4 --max-num-batched-tokens 512\n";
        let least = "the change is in the drop-in /etc/systemd/system/vllm.service.d/override.conf (what `systemctl edit vllm.service` writes), whose ExecStart= overrides the unit file's: the least undo is its ExecStart= line there (drop --max-num-batched-tokens 512)";
        let env = "NCCL_P2P_DISABLE is set for vllm.service by the drop-in /etc/systemd/system/vllm.service.d/override.conf: change or remove the line Environment=NCCL_P2P_DISABLE=1 there";
        let reload = "systemctl daemon-reload && systemctl restart vllm.service";
        let check = "check that it took: systemctl show -p ExecStart -p Environment vllm.service";
        let cases: [(String, bool, bool, Vec<&str>); 4] = [
            // Only the flag: revert undoes exactly it.
            (
                format!("[Service]\n{EXEC}"),
                true,
                false,
                vec![
                    least,
                    "or `systemctl revert vllm.service`: it removes the drop-in(s) /etc/systemd/system/vllm.service.d/override.conf, which hold only this change",
                    reload,
                    check,
                ],
            ),
            // The flag and a variable, both in the drop-in: still exactly this change.
            (
                format!("[Service]\nEnvironment=NCCL_P2P_DISABLE=1\n{EXEC}"),
                true,
                true,
                vec![
                    least,
                    env,
                    "or `systemctl revert vllm.service`: it removes the drop-in(s)",
                    reload,
                    check,
                ],
            ),
            // The drop-in holds more: revert would drop it too.
            (
                format!("[Service]\nTimeoutStartSec=1800\n{EXEC}"),
                true,
                false,
                vec![
                    least,
                    "not `systemctl revert vllm.service`: it removes every drop-in, and with them also TimeoutStartSec=1800 (/etc/systemd/system/vllm.service.d/override.conf)",
                    reload,
                    check,
                ],
            ),
            // The unit file's own launch is not the earlier one either.
            (
                format!("[Service]\n{EXEC}"),
                false,
                false,
                vec![
                    least,
                    "not `systemctl revert vllm.service` alone: it removes every drop-in (/etc/systemd/system/vllm.service.d/override.conf); it falls back to the unit file's own ExecStart=, which is not the earlier launch",
                    reload,
                    check,
                ],
            ),
        ];
        for (drop_in, own_is_earlier, env_changed, want) in cases {
            let unit = drop_in_unit(&drop_in);
            let mut before = own_launch(&unit);
            if !own_is_earlier {
                before.options.remove("tensor-parallel-size");
            }
            let mut changes = vec![Change {
                key: "max-num-batched-tokens".into(),
                kind: probe_model::ChangeKind::Added,
                after: Some(Value::from(512)),
                ..Change::default()
            }];
            if env_changed {
                changes.push(Change {
                    key: "env:NCCL_P2P_DISABLE".into(),
                    after: Some(Value::from("1")),
                    ..Change::default()
                });
            }
            let differing = [String::from("drop --max-num-batched-tokens 512")];
            let steps = unit_steps(&unit, &before, &differing, &changes);
            assert_eq!(steps.len(), want.len(), "{drop_in}: {steps:#?}");
            for (step, want) in steps.iter().zip(&want) {
                assert!(step.starts_with(want), "{drop_in}:\n{step}\n{want}");
            }
        }
        // Only packages differ: nothing for the launcher.
        let unit = drop_in_unit(EXEC);
        assert!(unit_steps(&unit, &own_launch(&unit), &[], &[]).is_empty());
    }

    #[test]
    fn a_variable_from_an_environment_file_is_changed_there_alone() {
        let mut unit = drop_in_unit("[Service]\nTimeoutStartSec=1800\n");
        unit.environment_files.push(probe_model::EnvironmentFile {
            path: "/etc/default/vllm".into(),
            vars: [(
                "VLLM_ATTENTION_BACKEND".to_string(),
                "FLASHINFER".to_string(),
            )]
            .into(),
            ..probe_model::EnvironmentFile::default()
        });
        let changes = [Change {
            key: "env:VLLM_ATTENTION_BACKEND".into(),
            after: Some(Value::from("FLASHINFER")),
            ..Change::default()
        }];
        let steps = unit_steps(&unit, &own_launch(&unit), &[], &changes);
        assert!(
            steps[0].starts_with(
                "VLLM_ATTENTION_BACKEND is set for vllm.service by its EnvironmentFile= /etc/default/vllm: change or remove its VLLM_ATTENTION_BACKEND= line there"
            ),
            "{steps:#?}"
        );
        assert!(
            steps[1].starts_with("not `systemctl revert vllm.service`: it removes every drop-in, and with them also TimeoutStartSec=1800"),
            "{steps:#?}"
        );
    }

    #[test]
    fn pins_and_power() {
        let change = |key: &str, b: &str, a: &str| Change {
            key: key.into(),
            before: Some(Value::from(b)),
            after: Some(Value::from(a)),
            ..Change::default()
        };
        let changes = [
            change("package:flashinfer-python", "0.5.2", "0.5.3"),
            change("package:torch", "older than 2.9.1", "2.9.1"),
            change("package:evil", "1; rm -rf /", "2"),
            change("gpu:1.power_limit", "700", "200"),
        ];
        assert_eq!(
            pins(&changes, Some("/opt/venv/bin/python3")).as_deref(),
            Some("/opt/venv/bin/python3 -m pip install flashinfer-python==0.5.2")
        );
        assert_eq!(power_steps(&changes), ["nvidia-smi -i 1 -pl 700"]);
    }
}
