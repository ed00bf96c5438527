//! Which file of a systemd unit sets what its launch runs: the unit file, each drop-in in the
//! order systemd applies them, each `EnvironmentFile=`. A restore that edits the unit file while
//! a drop-in's `ExecStart=` overrides it changes nothing; these answers say where to edit.

use probe_model::SystemdUnit;

use crate::systemd::parse_unit;

/// One file of a unit, with what it sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitFile<'a> {
    pub path: &'a str,
    /// A drop-in (`NAME.service.d/*.conf`, what `systemctl edit` writes), not the unit file.
    pub drop_in: bool,
    /// It has an `ExecStart=` line (a reset counts: it clears what came before).
    pub sets_exec_start: bool,
    /// The variables its `Environment=` lines set.
    pub environment: Vec<String>,
    /// Its directive lines (`Key=value`, continuation lines joined), for saying what else a
    /// `systemctl revert` drops with it.
    pub directives: Vec<String>,
}

/// The unit file, then its drop-ins in order.
pub fn unit_files(unit: &SystemdUnit) -> Vec<UnitFile<'_>> {
    std::iter::once((&unit.fragment, false))
        .chain(unit.drop_ins.iter().map(|d| (d, true)))
        .filter(|(f, _)| !f.path.is_empty())
        .map(|(f, drop_in)| {
            let parsed = parse_unit(&f.content);
            UnitFile {
                path: &f.path,
                drop_in,
                sets_exec_start: f
                    .content
                    .lines()
                    .any(|l| l.trim_start().starts_with("ExecStart=")),
                environment: parsed.environment.keys().cloned().collect(),
                directives: directives(&f.content),
            }
        })
        .collect()
}

/// The file whose `ExecStart=` is in effect: the last that has one.
pub fn exec_start_file<'a>(files: &'a [UnitFile<'a>]) -> Option<&'a UnitFile<'a>> {
    files.iter().rev().find(|f| f.sets_exec_start)
}

/// The file that sets `var` for the service: an `EnvironmentFile=` that holds it (those
/// override `Environment=`), else the last file whose `Environment=` sets it.
pub fn environment_source<'a>(
    unit: &'a SystemdUnit,
    files: &'a [UnitFile<'a>],
    var: &str,
) -> Option<&'a str> {
    unit.environment_files
        .iter()
        .rev()
        .find(|e| e.vars.contains_key(var))
        .map(|e| e.path.as_str())
        .or_else(|| {
            files
                .iter()
                .rev()
                .find(|f| f.environment.iter().any(|v| v == var))
                .map(|f| f.path)
        })
}

/// The unit as its own file defines it, its drop-ins gone: what `systemctl revert` leaves of a
/// unit whose file is under `/etc` (its `ExecStart=`, `Environment=`, `EnvironmentFile=`s,
/// working directory and user from the unit file alone). `None` when the unit file was not read.
pub fn without_drop_ins(unit: &SystemdUnit) -> Option<SystemdUnit> {
    if unit.fragment.path.is_empty() || unit.fragment.content.is_empty() {
        return None;
    }
    let own = parse_unit(&unit.fragment.content);
    Some(SystemdUnit {
        name: unit.name.clone(),
        scope: unit.scope,
        owner: unit.owner.clone(),
        fragment: unit.fragment.clone(),
        drop_ins: Vec::new(),
        exec_start: own.exec_start,
        environment: own.environment,
        environment_files: unit
            .environment_files
            .iter()
            .filter(|e| {
                own.environment_files
                    .iter()
                    .any(|f| f.trim_start_matches('-') == e.path)
            })
            .cloned()
            .collect(),
        working_directory: own.working_directory,
        run_as: own.user,
        state: None,
    })
}

/// `Key=value` lines of a unit text, continuations joined, comments and headers left out.
fn directives(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(c) = cur.as_mut() {
            c.push(' ');
            c.push_str(t.trim_end_matches('\\').trim_end());
            if !t.ends_with('\\') {
                out.extend(cur.take());
            }
            continue;
        }
        if t.is_empty() || t.starts_with(['#', ';', '[']) || !t.contains('=') {
            continue;
        }
        if t.ends_with('\\') {
            cur = Some(t.trim_end_matches('\\').trim_end().to_string());
        } else {
            out.push(t.to_string());
        }
    }
    out.extend(cur);
    out
}

#[cfg(test)]
mod tests {
    use probe_model::{EnvironmentFile, FileText};

    use super::*;

    fn file(path: &str, content: &str) -> FileText {
        FileText {
            path: path.into(),
            content: content.into(),
            ..FileText::default()
        }
    }

    #[test]
    fn the_drop_in_that_sets_exec_start_and_the_variables() {
        let mut unit = SystemdUnit {
            name: "vllm.service".into(),
            fragment: file(
                "/etc/systemd/system/vllm.service",
                "[Service]\nEnvironment=A=1 B=2\nExecStart=/opt/v/bin/vllm serve m \\\n  --tp 4\n",
            ),
            drop_ins: vec![
                file(
                    "/etc/systemd/system/vllm.service.d/10-env.conf",
                    "[Service]\nEnvironment=NCCL_P2P_DISABLE=1\n",
                ),
                file(
                    "/etc/systemd/system/vllm.service.d/override.conf",
                    "[Service]\n# debugging the hang\nExecStart=\nExecStart=/opt/v/bin/vllm serve m --tp 4 \\\n  --disable-custom-all-reduce\n",
                ),
            ],
            ..SystemdUnit::default()
        };
        unit.environment_files.push(EnvironmentFile {
            path: "/etc/default/vllm".into(),
            vars: [("HF_TOKEN".to_string(), "x".to_string())].into(),
            ..EnvironmentFile::default()
        });
        let files = unit_files(&unit);
        assert_eq!(files.len(), 3);
        let exec = exec_start_file(&files).expect("an ExecStart");
        assert_eq!(
            exec.path,
            "/etc/systemd/system/vllm.service.d/override.conf"
        );
        assert!(exec.drop_in);
        assert_eq!(
            exec.directives,
            [
                "ExecStart=",
                "ExecStart=/opt/v/bin/vllm serve m --tp 4 --disable-custom-all-reduce"
            ]
        );
        let cases = [
            (
                "NCCL_P2P_DISABLE",
                Some("/etc/systemd/system/vllm.service.d/10-env.conf"),
            ),
            ("A", Some("/etc/systemd/system/vllm.service")),
            ("HF_TOKEN", Some("/etc/default/vllm")),
            ("NOPE", None),
        ];
        for (var, want) in cases {
            assert_eq!(environment_source(&unit, &files, var), want, "{var}");
        }
        assert_eq!(files[1].directives, ["Environment=NCCL_P2P_DISABLE=1"]);
    }
}
