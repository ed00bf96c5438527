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

/// What would bring back the earlier launch of `snapshot` and what it ran with: the rollback
/// plan of its running launch (`after`) back to `before` on the launcher that runs it (a
/// unit's drop-in, a compose file, a process to stop first), and its lines, so that the host
/// report and `probe diff --rollback` say the same steps.
pub(crate) fn restore(
    snapshot: &probe_model::Snapshot,
    before: &LaunchConfig,
    after: &LaunchConfig,
    changes: &[Change],
) -> Restore {
    let interpreter = after
        .interpreter
        .as_deref()
        .or(before.interpreter.as_deref());
    let differing = differing(before, after, changes);
    let pins = pins(changes, interpreter);
    let plan = crate::rollback::plan_within(snapshot, before, after, changes);
    // The pins are shown as such: their `run:` step is not said twice.
    let mut said = plan.clone();
    said.steps.retain(|s| {
        !matches!(&s.action, probe_model::RollbackAction::Run { command } if Some(command) == pins.as_ref())
    });
    Restore {
        source: probe_launch::evidence_label(before),
        launch_text: launch_text(before),
        differing,
        pins,
        steps: crate::rollback::lines(&said, &[]),
        plan,
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

    /// The running launch of `unit` (what systemd runs, drop-ins and all: `command`, as
    /// `systemctl show` gives its ExecStart).
    fn unit_launch(unit: &mut SystemdUnit, command: &str) -> LaunchConfig {
        unit.exec_start = vec![command.to_string()];
        let hints = probe_launch::ParseHints {
            source: probe_model::LaunchSource {
                kind: SourceKind::Unit,
                location: format!("unit:{}", unit.name),
                ..probe_model::LaunchSource::default()
            },
            ..probe_launch::ParseHints::default()
        };
        probe_launch::from_unit(unit, &hints)
            .into_iter()
            .next()
            .expect("a launch")
    }

    /// The host report's restore text is its rollback plan's lines: (drop-in text, whether the
    /// earlier launch is the unit file's own, a changed variable) -> the lines, each by its
    /// start, in order: the file that holds the change (a drop-in that holds nothing else is
    /// removed, as `systemctl revert` would; else its ExecStart= line changed, saying what a
    /// revert would also drop), the reload, the restart, the check.
    #[test]
    fn the_restore_text_is_the_plan_on_the_launcher() {
        const EXEC: &str = "ExecStart=\nExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4 --max-num-batched-tokens 512\n";
        let drop_in = "/etc/systemd/system/vllm.service.d/override.conf";
        let remove = format!("remove: the drop-in {drop_in}");
        let edit = format!(
            "edit: drop-in {drop_in}: change `ExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4 --max-num-batched-tokens 512` to `ExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4`"
        );
        let reload = "run: systemctl daemon-reload";
        let restart = "restart: systemctl restart vllm.service";
        let check = "verify: systemctl show -p ExecStart -p Environment vllm.service";
        let cases: [(String, bool, Vec<&str>); 3] = [
            // Only the flag: the drop-in goes (what a revert does).
            (
                format!("[Service]\n{EXEC}"),
                true,
                vec![&remove, reload, restart, check],
            ),
            // The drop-in holds more: its ExecStart= line changes, the rest stays.
            (
                format!("[Service]\nTimeoutStartSec=1800\n{EXEC}"),
                true,
                vec![&edit, reload, restart, check],
            ),
            // The unit file's own launch is not the earlier one: its line changes.
            (
                format!("[Service]\n{EXEC}"),
                false,
                vec![&edit, reload, restart],
            ),
        ];
        for (text, own_is_earlier, want) in cases {
            let mut unit = drop_in_unit(&text);
            let mut before = own_launch(&unit);
            if !own_is_earlier {
                before.options.remove("tensor-parallel-size");
            }
            let after = unit_launch(
                &mut unit,
                "/v/bin/vllm serve /m --tensor-parallel-size 4 --max-num-batched-tokens 512",
            );
            let changes = vec![Change {
                key: "max-num-batched-tokens".into(),
                kind: probe_model::ChangeKind::Added,
                after: Some(Value::from(512)),
                ..Change::default()
            }];
            let snapshot = probe_model::Snapshot {
                units: vec![unit.clone()],
                ..probe_model::Snapshot::default()
            };
            let restore = restore(&snapshot, &before, &after, &changes);
            assert_eq!(
                restore.plan.launcher,
                probe_model::Launcher::Systemd {
                    unit: "vllm.service".into()
                }
            );
            assert_eq!(
                restore.steps,
                crate::rollback::lines(&restore.plan, &[]),
                "the text is the plan's"
            );
            let steps = &restore.steps;
            assert!(steps.len() >= want.len(), "{text}: {steps:#?}");
            for (step, want) in steps.iter().zip(&want) {
                assert!(step.starts_with(want), "{text}:\n{step}\n{want}");
            }
            assert!(
                !steps
                    .iter()
                    .any(|s| s.contains("cd ") || s.starts_with("launch:")),
                "no hand-run launch beside systemd: {steps:#?}"
            );
        }
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
        unit.fragment.content =
            "[Service]\nEnvironmentFile=/etc/default/vllm\nExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4\n".into();
        let changes = [Change {
            key: "env:VLLM_ATTENTION_BACKEND".into(),
            after: Some(Value::from("FLASHINFER")),
            ..Change::default()
        }];
        let mut after = unit_launch(&mut unit, "/v/bin/vllm serve /m --tensor-parallel-size 4");
        let snapshot = probe_model::Snapshot {
            units: vec![unit.clone()],
            ..probe_model::Snapshot::default()
        };
        after
            .env
            .insert("VLLM_ATTENTION_BACKEND".into(), "FLASHINFER".into());
        let restore = restore(&snapshot, &own_launch(&unit), &after, &changes);
        assert!(
            restore.steps[0].starts_with(
                "edit: EnvironmentFile= /etc/default/vllm: remove the line VLLM_ATTENTION_BACKEND=..."
            ),
            "{:#?}",
            restore.steps
        );
        assert!(
            restore
                .steps
                .iter()
                .all(|s| !s.contains("TimeoutStartSec") || !s.starts_with("remove:")),
            "the drop-in that holds other settings stays: {:#?}",
            restore.steps
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
