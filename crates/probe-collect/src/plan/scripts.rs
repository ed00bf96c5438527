//! The Python scripts that running servers run (`python3 serve_lmdeploy.py`, issue 34): read in
//! round 2 as launch files of kind `script` (bounded, no link followed, as the other launch
//! files), so that probe-launch reads the engine a script starts through its API; with the
//! interpreter's environment, so that the engine's version is known.

use probe_model::{LaunchConfig, LaunchOrigin, ProcessRole, Snapshot};

use super::common::{root_of, rooted};

/// One script to read: the launch file entry (kind word, the process naming it, its path
/// inside the process's mount namespace), and the interpreter that runs it with the root its
/// prefix is read under.
#[derive(Debug, PartialEq)]
pub(super) struct ScriptRead {
    pub(super) file: (String, String, String),
    pub(super) interpreter: Option<String>,
    pub(super) root: Option<String>,
}

/// Each launcher process that runs a Python script and has no launch of its own (`launches`),
/// in process order (the caller bounds them).
pub(super) fn python_scripts(snap: &Snapshot, launches: &[LaunchConfig]) -> Vec<ScriptRead> {
    let mut out = Vec::new();
    for p in snap
        .processes
        .iter()
        .filter(|p| p.role == ProcessRole::Launcher)
    {
        if launches.iter().any(|l| l.source.pid() == Some(p.pid)) {
            continue;
        }
        let Some(path) = probe_launch::python_script(&p.argv, p.cwd.as_deref()) else {
            continue;
        };
        if path.split('/').any(|x| x == "..") {
            continue;
        }
        let root = root_of(snap, p);
        let by = LaunchOrigin::Process { pid: p.pid }.label();
        out.push(ScriptRead {
            file: ("script".to_string(), by, rooted(root, &path)),
            interpreter: p.argv.first().cloned(),
            root: root.map(str::to_string),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use probe_model::{LaunchSource, ProcessInfo};

    use super::super::inputs::{MAX_LAUNCH_FILES, script_inputs};
    use super::*;
    use crate::script::Round2Inputs;

    fn proc(pid: u32, argv: &str, cwd: Option<&str>, role: ProcessRole) -> ProcessInfo {
        ProcessInfo {
            pid,
            argv: argv.split(' ').map(str::to_string).collect(),
            cwd: cwd.map(str::to_string),
            role,
            ..Default::default()
        }
    }

    #[test]
    fn the_scripts_of_launchers_without_a_launch_are_read() {
        let snap = Snapshot {
            processes: vec![
                proc(
                    10,
                    "/opt/venvs/lmdeploy/bin/python3 serve_lmdeploy.py",
                    Some("/srv/llm"),
                    ProcessRole::Launcher,
                ),
                // A worker (the forked api_server), a relative path with no cwd, `..`, a
                // module, a process that already has its launch.
                proc(11, "python3 /srv/llm/w.py", None, ProcessRole::Worker),
                proc(12, "python3 lmdeploy_x.py", None, ProcessRole::Launcher),
                proc(
                    13,
                    "python3 ../lmdeploy.py",
                    Some("/srv/a"),
                    ProcessRole::Launcher,
                ),
                proc(
                    14,
                    "python3 -m lmdeploy serve api_server m",
                    None,
                    ProcessRole::Launcher,
                ),
                proc(
                    15,
                    "python3 /srv/b/lmdeploy_run.py",
                    None,
                    ProcessRole::Launcher,
                ),
            ],
            ..Default::default()
        };
        let read = LaunchConfig {
            source: LaunchSource {
                location: LaunchOrigin::Process { pid: 15 }.location(),
                kind: probe_model::SourceKind::Process,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut inp = Round2Inputs::default();
        script_inputs(&snap, &[read], &mut inp);
        assert_eq!(
            inp.launch_files,
            [(
                "script".to_string(),
                "pid:10".to_string(),
                "/srv/llm/serve_lmdeploy.py".to_string()
            )]
        );
        assert_eq!(inp.python_prefixes, ["/opt/venvs/lmdeploy"]);
    }

    #[test]
    fn launch_files_stay_bounded() {
        let snap = Snapshot {
            processes: (0..40)
                .map(|i| {
                    proc(
                        100 + i,
                        &format!("python3 /srv/s{i}.py"),
                        None,
                        ProcessRole::Launcher,
                    )
                })
                .collect(),
            ..Default::default()
        };
        let mut inp = Round2Inputs::default();
        script_inputs(&snap, &[], &mut inp);
        assert_eq!(inp.launch_files.len(), MAX_LAUNCH_FILES);
    }
}
