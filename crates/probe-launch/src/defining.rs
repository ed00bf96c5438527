//! The files that define each launch ([`LaunchConfig::files`]), from what the snapshot already
//! holds: a unit's file, its drop-ins in systemd's order, its `EnvironmentFile=`s and the script
//! its `ExecStart=` runs; a compose container's files (as its label names them, overrides after
//! the files they override) and the `env_file:`s its service names in them. Nothing is read
//! here that was not collected.

use probe_model::{
    ContainerInfo, DefiningFile, DefiningFileRole, LaunchConfig, LaunchOrigin, Snapshot,
    SourceKind, SystemdUnit,
};
use serde_json::Value;

use crate::ctx::basename;
use crate::shell::split_words;
use crate::unit_files::unit_files;

/// Names listed in [`DefiningFile::sets`] at most (an environment file of many variables).
const MAX_SETS: usize = 32;

/// Unit directives a launch reads: what a drop-in that holds one of them changes.
const LAUNCH_DIRECTIVES: [&str; 8] = [
    "ExecStart",
    "Environment",
    "EnvironmentFile",
    "UnsetEnvironment",
    "PassEnvironment",
    "WorkingDirectory",
    "User",
    "Group",
];

/// Shells whose first operand is the script they run.
const SHELLS: [&str; 5] = ["sh", "bash", "dash", "zsh", "ksh"];

/// Fills [`LaunchConfig::files`] of the unit and container launches in `out`.
pub(crate) fn fill(snapshot: &Snapshot, out: &mut [LaunchConfig]) {
    for launch in out.iter_mut() {
        if !launch.files.is_empty() {
            continue;
        }
        launch.files = match (launch.source.kind, launch.source.origin()) {
            (SourceKind::Unit, LaunchOrigin::Unit { name }) => snapshot
                .units
                .iter()
                .find(|u| u.name == name)
                .map(unit_defining_files)
                .unwrap_or_default(),
            (SourceKind::Container, LaunchOrigin::Container { name }) => snapshot
                .containers
                .iter()
                .find(|c| c.name.as_deref() == Some(name.as_str()) || c.id == name)
                .map(|c| container_defining_files(snapshot, c))
                .unwrap_or_default(),
            _ => Vec::new(),
        };
    }
}

/// A unit's defining files: its file, its drop-ins in order, its `EnvironmentFile=`s, the
/// script its `ExecStart=` runs.
pub fn unit_defining_files(unit: &SystemdUnit) -> Vec<DefiningFile> {
    let mut files: Vec<DefiningFile> = unit_files(unit)
        .into_iter()
        .map(|f| DefiningFile {
            role: if f.drop_in {
                DefiningFileRole::DropIn
            } else {
                DefiningFileRole::Unit
            },
            path: f.path.to_string(),
            optional: false,
            sets: launch_directives(&f.directives),
        })
        .collect();
    for e in &unit.environment_files {
        files.push(DefiningFile {
            role: DefiningFileRole::EnvironmentFile,
            path: e.path.clone(),
            optional: e.optional,
            sets: e.vars.keys().take(MAX_SETS).cloned().collect(),
        });
    }
    if let Some(script) = unit.exec_start.last().and_then(|l| start_script(l)) {
        files.push(DefiningFile {
            role: DefiningFileRole::StartScript,
            path: script,
            optional: false,
            sets: Vec::new(),
        });
    }
    files
}

/// The directive names of a unit file's lines that a launch reads, each once, in order.
fn launch_directives(directives: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for d in directives {
        let key = d.split('=').next().unwrap_or_default().trim();
        if LAUNCH_DIRECTIVES.contains(&key) {
            let named = format!("{key}=");
            if !out.contains(&named) {
                out.push(named);
            }
        }
    }
    out
}

/// The script an `ExecStart=` line runs: its program when that is a `*.sh` file, or the first
/// operand of a shell it runs (`/bin/bash /opt/start.sh`, not `bash -c '...'`).
pub fn start_script(exec_start: &str) -> Option<String> {
    let words = split_words(exec_start);
    let mut words = words.iter().map(String::as_str);
    // systemd's prefixes: `-` (failure ignored), `@`, `+`, `!`, `!!`, `:`.
    let program = words.next()?.trim_start_matches(['-', '@', '+', '!', ':']);
    if program.is_empty() {
        return None;
    }
    if SHELLS.contains(&basename(program)) {
        let operand = words.next()?;
        return (!operand.starts_with('-') && operand.contains('/')).then(|| operand.to_string());
    }
    (program.starts_with('/') && program.ends_with(".sh")).then(|| program.to_string())
}

/// A compose container's defining files: the compose files its label names, in that order, then
/// the `env_file:`s its service names in the files that were read.
fn container_defining_files(snapshot: &Snapshot, c: &ContainerInfo) -> Vec<DefiningFile> {
    let Some(compose) = &c.compose else {
        return Vec::new();
    };
    let mut files: Vec<DefiningFile> = compose
        .config_files
        .iter()
        .map(|path| DefiningFile {
            role: DefiningFileRole::Compose,
            path: path.clone(),
            optional: false,
            sets: Vec::new(),
        })
        .collect();
    let service = crate::container_text::service_of(snapshot, c);
    let env_files = service
        .as_ref()
        .and_then(|s| s.get("env_file"))
        .map(env_files)
        .unwrap_or_default();
    for (path, optional) in env_files {
        let path = match (&compose.working_dir, path.starts_with('/')) {
            (Some(dir), false) => format!(
                "{}/{}",
                dir.trim_end_matches('/'),
                path.trim_start_matches("./")
            ),
            _ => path,
        };
        files.push(DefiningFile {
            role: DefiningFileRole::EnvFile,
            path,
            optional,
            sets: Vec::new(),
        });
    }
    files
}

/// A service's `env_file:` in its three spellings: a path, a list of paths, a list of
/// `{path, required}` (Compose 2.24).
fn env_files(value: &Value) -> Vec<(String, bool)> {
    let one = |v: &Value| match v {
        Value::String(path) => Some((path.trim().to_string(), false)),
        Value::Object(o) => o.get("path").and_then(Value::as_str).map(|path| {
            let required = o.get("required").and_then(Value::as_bool).unwrap_or(true);
            (path.trim().to_string(), !required)
        }),
        _ => None,
    };
    let all: Vec<(String, bool)> = match value {
        Value::Array(items) => items.iter().filter_map(one).collect(),
        other => one(other).into_iter().collect(),
    };
    all.into_iter()
        .filter(|(path, _)| !path.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use probe_model::{ComposeOrigin, EnvironmentFile, FileText, LaunchFile, LaunchFileKind};

    use super::*;

    #[test]
    fn start_scripts_of_exec_start_lines() {
        let table = [
            (
                "/opt/serve/start_vllm.sh --port 8000",
                Some("/opt/serve/start_vllm.sh"),
            ),
            ("-/opt/serve/start.sh", Some("/opt/serve/start.sh")),
            (
                "/bin/bash /opt/serve/run-sglang",
                Some("/opt/serve/run-sglang"),
            ),
            ("/usr/bin/env bash -c 'exec vllm serve m'", None),
            ("/bin/bash -c 'exec /opt/start.sh'", None),
            ("/opt/venvs/vllm/bin/vllm serve /m --port 8000", None),
            ("start.sh", None),
            ("", None),
        ];
        for (line, want) in table {
            assert_eq!(start_script(line).as_deref(), want, "{line}");
        }
    }

    fn file(path: &str, content: &str) -> FileText {
        FileText {
            path: path.into(),
            content: content.into(),
            ..FileText::default()
        }
    }

    #[test]
    fn a_units_files_in_order_with_what_each_sets() {
        let unit = SystemdUnit {
            name: "vllm.service".into(),
            fragment: file(
                "/etc/systemd/system/vllm.service",
                "[Service]\nUser=vllm\nEnvironmentFile=-/etc/default/vllm\nExecStart=/opt/v/bin/vllm serve m\nRestart=always\n",
            ),
            drop_ins: vec![
                file(
                    "/etc/systemd/system/vllm.service.d/override.conf",
                    "[Service]\nTimeoutStartSec=1800\nExecStart=\nExecStart=/opt/v/bin/vllm serve m \\\n  --max-num-batched-tokens 512\n",
                ),
                file(
                    "/etc/systemd/system/vllm.service.d/zz-env.conf",
                    "[Service]\nEnvironment=A=1\n",
                ),
            ],
            exec_start: vec!["/opt/v/bin/vllm serve m --max-num-batched-tokens 512".into()],
            environment_files: vec![EnvironmentFile {
                path: "/etc/default/vllm".into(),
                optional: true,
                vars: [("HF_TOKEN".to_string(), "x".to_string())].into(),
                ..EnvironmentFile::default()
            }],
            ..SystemdUnit::default()
        };
        let got: Vec<(DefiningFileRole, String, bool, Vec<String>)> = unit_defining_files(&unit)
            .into_iter()
            .map(|f| (f.role, f.path, f.optional, f.sets))
            .collect();
        let want = [
            (
                DefiningFileRole::Unit,
                "/etc/systemd/system/vllm.service",
                false,
                &["User=", "EnvironmentFile=", "ExecStart="][..],
            ),
            (
                DefiningFileRole::DropIn,
                "/etc/systemd/system/vllm.service.d/override.conf",
                false,
                &["ExecStart="][..],
            ),
            (
                DefiningFileRole::DropIn,
                "/etc/systemd/system/vllm.service.d/zz-env.conf",
                false,
                &["Environment="][..],
            ),
            (
                DefiningFileRole::EnvironmentFile,
                "/etc/default/vllm",
                true,
                &["HF_TOKEN"][..],
            ),
        ]
        .map(|(r, p, o, s)| {
            (
                r,
                p.to_string(),
                o,
                s.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
            )
        });
        assert_eq!(got, want);
    }

    #[test]
    fn a_compose_containers_files_and_env_files() {
        let container = ContainerInfo {
            id: "3f2a9c1d8e7b00000000".into(),
            name: Some("llm-vllm-1".into()),
            compose: Some(ComposeOrigin {
                project: "llm".into(),
                service: "vllm".into(),
                config_files: vec![
                    "/srv/llm/compose.yaml".into(),
                    "/srv/llm/compose.override.yaml".into(),
                ],
                working_dir: Some("/srv/llm".into()),
                container_number: Some(1),
            }),
            ..ContainerInfo::default()
        };
        let text = |path: &str, text: &str| LaunchFile {
            kind: LaunchFileKind::Compose,
            path: path.into(),
            text: text.into(),
            ..LaunchFile::default()
        };
        let snapshot = Snapshot {
            containers: vec![container.clone()],
            launch_files: vec![
                text(
                    "/srv/llm/compose.yaml",
                    "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    env_file: ./vllm.env\n",
                ),
                text(
                    "/srv/llm/compose.override.yaml",
                    "services:\n  vllm:\n    env_file:\n      - ./vllm.env\n      - path: /etc/llm/extra.env\n        required: false\n",
                ),
            ],
            ..Snapshot::default()
        };
        let got: Vec<(DefiningFileRole, String, bool)> =
            container_defining_files(&snapshot, &container)
                .into_iter()
                .map(|f| (f.role, f.path, f.optional))
                .collect();
        let want = [
            (DefiningFileRole::Compose, "/srv/llm/compose.yaml", false),
            (
                DefiningFileRole::Compose,
                "/srv/llm/compose.override.yaml",
                false,
            ),
            (DefiningFileRole::EnvFile, "/srv/llm/vllm.env", false),
            (DefiningFileRole::EnvFile, "/etc/llm/extra.env", true),
        ]
        .map(|(r, p, o)| (r, p.to_string(), o));
        assert_eq!(got, want);
    }
}
