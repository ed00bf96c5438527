//! What would restore the earlier behaviour: the earlier launch as a runnable text with the
//! differing flags named, the package pins, the power limit; and `probe diff --rollback`'s
//! checklist. probe prints these; it never runs any of them.

use probe_model::{Change, LaunchConfig, Restore};

use crate::rollback::{differing_flags, launch_text, pins};

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
    let differing = differing_flags(before, after, changes);
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
