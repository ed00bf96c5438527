//! The Python script a running server process runs (`python3 serve_lmdeploy.py`, issue 34): its
//! path, which the collector reads in round 2 (a launch file of kind `python_script`: bounded,
//! no link followed), and the launch the script starts through an engine's API, read from that
//! file with [`crate::python_api`]. Each value read keeps the file it came from (`written`:
//! `cache_max_entry_count=0.5 (in PATH)`, and the script among the launch's defining files).
//!
//! A script whose calls disagree (a `serve(...)` in each branch of an `if`) gives only what they
//! all set alike: which branch runs is not in the text. A script that was not read (a link, a
//! FIFO, missing) leaves the engine's settings unknown, said once on the launch.

use probe_model::{
    DefiningFileRole, Engine, LaunchConfig, LaunchFile, LaunchFileKind, ProcessInfo, ProcessRole,
    SectionStatus, Snapshot,
};

use crate::config_files::{record_file, same_file};
use crate::ctx::basename;
use crate::hints::ParseHints;
use crate::installed::fill_version;
use crate::python_api;

/// Interpreter options that take the next word as their value.
const WITH_VALUE: &[&str] = &["-X", "-W", "--check-hash-based-pycs"];

/// The script a Python interpreter's argv runs (`python3 -u serve.py --port 1`), as an absolute
/// path (a relative one joined to `cwd`, the process's working directory): `None` for `-m`, `-c`,
/// a script read from stdin, a name that is no `.py` file, or a relative path with no absolute
/// `cwd`.
pub fn python_script(argv: &[String], cwd: Option<&str>) -> Option<String> {
    let first = argv.first()?;
    if !basename(first).starts_with("python") {
        return None;
    }
    let mut i = 1;
    while let Some(a) = argv.get(i) {
        match a.as_str() {
            "--" => {
                i += 1;
                break;
            }
            "-m" | "-c" | "-" => return None,
            s if WITH_VALUE.contains(&s) => i += 2,
            s if s.starts_with("-m") || s.starts_with("-c") => return None,
            s if s.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let script = argv.get(i)?;
    if !script.ends_with(".py") || script.contains('\0') {
        return None;
    }
    if script.starts_with('/') {
        return Some(script.clone());
    }
    let dir = cwd.filter(|d| d.starts_with('/'))?;
    Some(format!(
        "{}/{}",
        dir.trim_end_matches('/'),
        script.trim_start_matches("./")
    ))
}

/// Whether a Python script's text is one to keep: it imports an engine's API module (so it may
/// start an engine). The collector keeps no other script's text: it is the user's code, and
/// says nothing of a server.
pub fn python_script_starts_engine(text: &str) -> bool {
    python_api::imports_an_engine(text)
}

/// The launches of the running processes that run a Python script round 2 read (those no other
/// reading gave a launch): what the script starts through an engine's API, as the process runs
/// it (its argv, environment, working directory, start).
pub(crate) fn fill(snapshot: &Snapshot, out: &mut Vec<LaunchConfig>) {
    for p in &snapshot.processes {
        if p.role != ProcessRole::Launcher || out.iter().any(|l| l.source.pid() == Some(p.pid)) {
            continue;
        }
        let Some(path) = python_script(&p.argv, p.cwd.as_deref()) else {
            continue;
        };
        let Some(f) = snapshot
            .launch_files
            .iter()
            .find(|f| f.kind == LaunchFileKind::PythonScript && same_file(&f.path, &path))
        else {
            continue;
        };
        if let Some(l) = of_process(snapshot, p, &path, f) {
            out.push(l);
        }
    }
}

/// The launch of process `p`, which runs the script at `path` that round 2 read as `f`.
fn of_process(
    snapshot: &Snapshot,
    p: &ProcessInfo,
    path: &str,
    f: &LaunchFile,
) -> Option<LaunchConfig> {
    let mut hints = ParseHints::of_process(p);
    let read = matches!(f.status, SectionStatus::Ok | SectionStatus::Truncated);
    let mut l = if read {
        let first = agreed(python_api::launches_in(&f.text, &hints, Some(path)))?;
        // Read again with the catalog of the engine version the process runs.
        let mut probe = skeleton(p, first.engine, &hints);
        fill_version(snapshot, &mut probe);
        match probe.engine_version {
            Some(v) => {
                hints.engine_version = Some(v);
                agreed(python_api::launches_in(&f.text, &hints, Some(path))).unwrap_or(first)
            }
            None => first,
        }
    } else {
        // The engine only by the process's name; its settings are in the script not read.
        let engine = p.engine.filter(|e| *e != Engine::Other)?;
        let mut l = skeleton(p, engine, &hints);
        fill_version(snapshot, &mut l);
        let why = f.message.as_deref().unwrap_or("not read");
        l.warnings.push(format!(
            "the Python script {path} was not read on the host ({why}): the engine settings \
             it gives are unknown"
        ));
        l
    };
    with_process(&mut l, p, path, f, read);
    Some(l)
}

/// A launch of `engine` by process `p`, nothing read yet.
fn skeleton(p: &ProcessInfo, engine: Engine, hints: &ParseHints) -> LaunchConfig {
    LaunchConfig {
        engine,
        argv: p.argv.clone(),
        interpreter: p.argv.first().cloned(),
        working_directory: hints.working_directory.clone(),
        source: hints.source.clone(),
        ..LaunchConfig::default()
    }
}

/// The process's own facts on the script's launch, and the script among its defining files
/// (with the options it sets).
fn with_process(l: &mut LaunchConfig, p: &ProcessInfo, path: &str, f: &LaunchFile, read: bool) {
    l.argv = p.argv.clone();
    l.env = p.env.clone();
    l.interpreter = p.argv.first().cloned();
    if !read {
        return;
    }
    if f.truncated {
        l.warnings.push(format!(
            "the Python script {path} was read only in part (over its size bound): what \
             follows the cut is not visible here"
        ));
    }
    if let (Some(m), Some(start)) = (f.mtime, l.source.time.at)
        && m > start
    {
        l.warnings.push(format!(
            "the Python script {path} changed after this process started: its values here \
             are the file's now, which the running process may not have read"
        ));
    }
    record_file(l, DefiningFileRole::PythonScript, path);
}

/// One launch from a script's engine calls: the only one, or what every call sets alike (the
/// others said unknown: which call runs is not in the text).
fn agreed(launches: Vec<LaunchConfig>) -> Option<LaunchConfig> {
    let mut it = launches.into_iter();
    let mut l = it.next()?;
    let rest: Vec<LaunchConfig> = it.collect();
    if rest.is_empty() {
        return Some(l);
    }
    let calls = rest.len() + 1;
    let names: Vec<String> = l
        .options
        .keys()
        .chain(rest.iter().flat_map(|r| r.options.keys()))
        .cloned()
        .collect();
    for name in names {
        let value = l.options.get(&name).map(|o| &o.value);
        if rest
            .iter()
            .all(|r| r.options.get(&name).map(|o| &o.value) == value)
        {
            continue;
        }
        l.options.remove(&name);
        let said = format!(
            "{name} is unknown: the script's {calls} engine calls set it differently, and \
             which of them runs is not in the text"
        );
        if !l.warnings.contains(&said) {
            l.warnings.push(said);
        }
    }
    if rest
        .iter()
        .any(|r| r.model != l.model || r.engine != l.engine)
    {
        l.model = None;
        l.warnings.push(format!(
            "the model is unknown: the script's {calls} engine calls name different models or \
             engines, and which of them runs is not in the text"
        ));
    }
    Some(l)
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::indexing_slicing,
        clippy::panic,
        reason = "tests: a failing test panics"
    )]

    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn the_script_of_an_interpreter_argv() {
        let cases: &[(&str, Option<&str>, Option<&str>)] = &[
            (
                "python3 serve.py",
                Some("/srv/app"),
                Some("/srv/app/serve.py"),
            ),
            (
                "python3 ./serve.py --tp 2",
                Some("/srv/app/"),
                Some("/srv/app/serve.py"),
            ),
            (
                "/opt/v/bin/python3.11 -u -X dev /srv/s.py",
                None,
                Some("/srv/s.py"),
            ),
            ("python -W ignore -- /srv/s.py", None, Some("/srv/s.py")),
            ("python3 serve.py", None, None),
            ("python3 serve.py", Some("relative"), None),
            ("python3 -m lmdeploy serve api_server m", Some("/"), None),
            ("python3 -mlmdeploy", Some("/"), None),
            ("python3 -c import", Some("/"), None),
            ("python3 - < serve.py", Some("/"), None),
            ("python3 /opt/v/bin/lmdeploy serve", None, None),
            ("bash serve.py", Some("/"), None),
            ("python3", Some("/"), None),
        ];
        for (a, cwd, want) in cases {
            assert_eq!(
                python_script(&argv(a), *cwd).as_deref(),
                *want,
                "{a} in {cwd:?}"
            );
        }
    }

    fn snapshot(text: &str, status: SectionStatus, message: Option<&str>) -> Snapshot {
        Snapshot {
            processes: vec![ProcessInfo {
                pid: 42,
                argv: argv("/opt/venvs/lmdeploy/bin/python3 serve_lmdeploy.py"),
                cwd: Some("/srv/llm".into()),
                role: ProcessRole::Launcher,
                engine: Some(Engine::Lmdeploy),
                start_time: Some(2_000),
                ..Default::default()
            }],
            launch_files: vec![LaunchFile {
                kind: LaunchFileKind::PythonScript,
                path: "/srv/llm/serve_lmdeploy.py".into(),
                named_by: "pid:42".into(),
                status,
                message: message.map(str::to_string),
                mtime: Some(1_000),
                text: text.into(),
                truncated: status == SectionStatus::Truncated,
            }],
            ..Default::default()
        }
    }

    fn read(s: &Snapshot) -> Vec<LaunchConfig> {
        let mut out = Vec::new();
        fill(s, &mut out);
        out
    }

    const SCRIPT: &str = "from lmdeploy import serve, TurbomindEngineConfig\n\
        CACHE = 0.5\n\
        cfg = TurbomindEngineConfig(tp=2, cache_max_entry_count=CACHE)\n\
        serve('/models/q', backend_config=cfg, server_port=23333)\n";

    #[test]
    fn the_running_script_gives_the_launch_with_its_file() {
        let got = read(&snapshot(SCRIPT, SectionStatus::Ok, None));
        let [l] = got.as_slice() else {
            panic!("{got:#?}")
        };
        assert_eq!(l.engine, Engine::Lmdeploy);
        assert_eq!(l.source.pid(), Some(42));
        assert!(l.source.running);
        assert_eq!(l.model.as_deref(), Some("/models/q"));
        let o = &l.options["cache-max-entry-count"];
        assert_eq!(o.value, serde_json::json!(0.5));
        assert_eq!(
            o.written,
            "cache_max_entry_count=0.5 (in /srv/llm/serve_lmdeploy.py)"
        );
        assert_eq!(l.options["tp"].value, serde_json::json!(2));
        let [f] = l.files.as_slice() else {
            panic!("{:#?}", l.files)
        };
        assert_eq!(f.role, DefiningFileRole::PythonScript);
        assert_eq!(f.sets, ["cache-max-entry-count", "server-port", "tp"]);
        assert_eq!(l.argv[1], "serve_lmdeploy.py");
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    }

    #[test]
    fn calls_that_disagree_leave_what_differs_unknown() {
        let text = "import lmdeploy\n\
            if fast:\n    lmdeploy.serve('/m', backend_config=lmdeploy.TurbomindEngineConfig(tp=2, cache_max_entry_count=0.4))\n\
            else:\n    lmdeploy.serve('/m', backend_config=lmdeploy.TurbomindEngineConfig(tp=2, cache_max_entry_count=0.8))\n";
        let got = read(&snapshot(text, SectionStatus::Ok, None));
        let [l] = got.as_slice() else {
            panic!("{got:#?}")
        };
        assert_eq!(l.options["tp"].value, serde_json::json!(2));
        assert!(!l.options.contains_key("cache-max-entry-count"));
        assert!(
            l.warnings.iter().any(|w| w.starts_with(
                "cache-max-entry-count is unknown: the script's 2 engine calls set it differently"
            )),
            "{:?}",
            l.warnings
        );
    }

    #[test]
    fn a_script_not_read_says_so_once_and_sets_nothing() {
        let s = snapshot(
            "",
            SectionStatus::PermissionDenied,
            Some("symbolic link: not followed"),
        );
        let got = read(&s);
        let [l] = got.as_slice() else {
            panic!("{got:#?}")
        };
        assert_eq!(l.engine, Engine::Lmdeploy);
        assert!(l.options.is_empty() && l.files.is_empty());
        assert_eq!(
            l.warnings,
            [
                "the Python script /srv/llm/serve_lmdeploy.py was not read on the host (symbolic \
              link: not followed): the engine settings it gives are unknown"
            ]
        );
        // Read, but no engine call in it (a client, a cut text of NULs): no launch.
        assert!(read(&snapshot("import time\n", SectionStatus::Ok, None)).is_empty());
        assert!(
            read(&snapshot(
                &"\0".repeat(4096),
                SectionStatus::Truncated,
                None
            ))
            .is_empty()
        );
    }

    #[test]
    fn a_truncated_or_later_changed_script_is_said() {
        let mut s = snapshot(SCRIPT, SectionStatus::Truncated, None);
        s.launch_files[0].mtime = Some(3_000);
        let got = read(&s);
        let [l] = got.as_slice() else {
            panic!("{got:#?}")
        };
        assert_eq!(l.warnings.len(), 2, "{:?}", l.warnings);
        assert!(l.warnings[0].contains("read only in part"));
        assert!(l.warnings[1].contains("changed after this process started"));
    }
}
