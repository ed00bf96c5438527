//! What would restore the earlier behaviour: the earlier launch as a runnable text with the
//! differing flags named, the package pins, the power limit; and `probe diff --rollback`'s
//! checklist. probe prints these; it never runs any of them.

use probe_model::{Change, LaunchConfig, Restore, SourceKind, SystemdUnit};
use serde_json::Value;

/// Characters that need no quoting in a POSIX shell word.
fn plain(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
}

/// A word quoted for a POSIX shell.
fn quote(word: &str) -> String {
    if plain(word) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// The launch as a shell text: its working directory, environment and argv.
fn launch_text(launch: &LaunchConfig) -> Option<String> {
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
fn differing(before: &LaunchConfig, after: &LaunchConfig, changes: &[Change]) -> Vec<String> {
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
fn pins(changes: &[Change], interpreter: Option<&str>) -> Option<String> {
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
fn power_steps(changes: &[Change]) -> Vec<String> {
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

fn driver_steps(changes: &[Change]) -> Vec<String> {
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

/// Where the running launch's differing settings live when systemd runs it (`unit`): which file
/// holds its `ExecStart=` (a drop-in overrides the unit file, so editing the unit file would
/// change nothing), which file sets each differing variable, what `systemctl revert` would also
/// drop, then the reload, the restart and how to check that it took. Nothing when the
/// differences are not the launcher's (packages, a driver).
fn unit_steps(unit: &SystemdUnit, flags_differ: bool, changes: &[Change]) -> Vec<String> {
    let files = probe_launch::unit_files(unit);
    let name = &unit.name;
    let mut out = Vec::new();
    if flags_differ && let Some(f) = probe_launch::exec_start_file(&files) {
        out.push(if f.drop_in {
            format!(
                "{name} takes its ExecStart= from the drop-in {} (what `systemctl edit` \
                 writes), not from the unit file: change the flags there, or delete that \
                 drop-in's ExecStart= lines to fall back to the unit file's own",
                f.path
            )
        } else {
            format!(
                "{name} takes its ExecStart= from {}: change the flags there",
                f.path
            )
        });
    }
    for var in changes.iter().filter_map(|c| c.key.strip_prefix("env:")) {
        if let Some(path) = probe_launch::environment_source(unit, &files, var) {
            out.push(format!(
                "{var} is set for {name} by {path}: change it there"
            ));
        }
    }
    if out.is_empty() {
        return out;
    }
    let dropped: Vec<String> = files
        .iter()
        .filter(|f| f.drop_in)
        .flat_map(|f| {
            f.directives
                .iter()
                .map(move |d| format!("{d} ({})", f.path))
        })
        .collect();
    if !dropped.is_empty() {
        let more = dropped.len().saturating_sub(REVERT_LINES);
        let shown: Vec<&str> = dropped
            .iter()
            .take(REVERT_LINES)
            .map(String::as_str)
            .collect();
        out.push(format!(
            "`systemctl revert {name}` would undo it by removing every drop-in, and with them: \
             {}{}",
            shown.join("; "),
            if more > 0 {
                format!("; {more} more")
            } else {
                String::new()
            }
        ));
    }
    out.push(format!(
        "systemctl daemon-reload && systemctl restart {name}"
    ));
    out.push(format!(
        "check that it took: systemctl show -p ExecStart -p Environment {name}"
    ));
    out
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
        .map(|u| unit_steps(u, !differing.is_empty(), changes))
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

/// `probe diff A B --rollback`: what rolling B back to A changes, in order (flags, packages,
/// driver, model revision, power limit), one line each. Nothing is run.
pub(crate) fn rollback(
    before: Option<&LaunchConfig>,
    after: Option<&LaunchConfig>,
    changes: &[Change],
) -> Vec<String> {
    let mut lines = Vec::new();
    if let (Some(before), Some(after)) = (before, after) {
        let r = restore(before, after, changes, None);
        for flag in &r.differing {
            match flag.strip_prefix("drop ") {
                Some(dropped) => lines.push(format!("flag: drop {dropped}")),
                None => lines.push(format!("flag: restore {flag}")),
            }
        }
        if let Some(text) = &r.launch_text {
            lines.push(format!("launch: {text}   (from {})", r.source));
        }
    }
    if let Some(pins) = pins(changes, after.and_then(|a| a.interpreter.as_deref())) {
        lines.push(format!("packages: {pins}"));
    }
    lines.extend(
        driver_steps(changes)
            .into_iter()
            .map(|s| format!("driver: {s}")),
    );
    for change in changes.iter().filter(|c| c.key.starts_with("model")) {
        if let Some(before) = text(change.before.as_ref()) {
            lines.push(format!("model: {} back to {before}", change.key));
        }
    }
    lines.extend(
        power_steps(changes)
            .into_iter()
            .map(|s| format!("power: {s}")),
    );
    lines
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

    #[test]
    fn a_drop_in_holding_the_flags_is_named_with_what_a_revert_drops() {
        use probe_model::FileText;
        let file = |path: &str, content: &str| FileText {
            path: path.into(),
            content: content.into(),
            ..FileText::default()
        };
        let unit = SystemdUnit {
            name: "vllm.service".into(),
            fragment: file(
                "/etc/systemd/system/vllm.service",
                "[Service]\nExecStart=/v/bin/vllm serve m --tp 4\n",
            ),
            drop_ins: vec![file(
                "/etc/systemd/system/vllm.service.d/override.conf",
                "[Service]\nEnvironment=NCCL_P2P_DISABLE=1\nExecStart=\nExecStart=/v/bin/vllm serve m --tp 4 --disable-custom-all-reduce\n",
            )],
            ..SystemdUnit::default()
        };
        let changes = [Change {
            key: "env:NCCL_P2P_DISABLE".into(),
            after: Some(Value::from("1")),
            ..Change::default()
        }];
        let steps = unit_steps(&unit, true, &changes);
        let want = [
            "vllm.service takes its ExecStart= from the drop-in /etc/systemd/system/vllm.service.d/override.conf",
            "NCCL_P2P_DISABLE is set for vllm.service by /etc/systemd/system/vllm.service.d/override.conf",
            "`systemctl revert vllm.service` would undo it by removing every drop-in, and with them: Environment=NCCL_P2P_DISABLE=1 (/etc/systemd/system/vllm.service.d/override.conf); ExecStart= (",
            "systemctl daemon-reload && systemctl restart vllm.service",
            "check that it took: systemctl show -p ExecStart -p Environment vllm.service",
        ];
        assert_eq!(steps.len(), want.len(), "{steps:#?}");
        for (step, want) in steps.iter().zip(want) {
            assert!(step.starts_with(want), "{step}");
        }
        // Only packages differ: nothing for the launcher.
        assert!(unit_steps(&unit, false, &[]).is_empty());
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
