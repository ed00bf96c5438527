//! Round 2's `self_installed` inputs (`$R2_SELF`): the program file each running server runs
//! when it is not an interpreter (an install script's binary, a build in a home directory),
//! and the content-addressed model stores (`DIR/blobs/sha256-...`) the serving processes load
//! from. Processes in another mount namespace are left out; at most [`MAX_BINARIES`] and
//! [`MAX_STORES`].

use probe_model::{ProcessRole, Snapshot};

use crate::script::Round2Inputs;

/// Program files stat'ed (and their checkouts read).
pub(super) const MAX_BINARIES: usize = 8;

/// Model stores whose manifests are listed.
pub(super) const MAX_STORES: usize = 4;

/// Where a content-addressed store keeps a blob: `STORE/blobs/sha256-<hex>`.
const BLOBS: &str = "/blobs/sha256-";

/// Adds the `bin` and `models` entries of the running serving processes to `inp`.
pub(super) fn self_installed(snap: &Snapshot, inp: &mut Round2Inputs) {
    let (mut bins, mut stores) = (0, 0);
    for p in &snap.processes {
        if p.mount_root.is_some() || p.container_id.is_some() {
            continue;
        }
        if p.role == ProcessRole::Launcher
            && p.engine.is_some()
            && bins < MAX_BINARIES
            && let Some(bin) = program(p)
            && push(inp, "bin", bin)
        {
            bins += 1;
        }
        for a in p.argv.iter().take(64) {
            if stores >= MAX_STORES {
                break;
            }
            if let Some((store, _)) = a.split_once(BLOBS)
                && store.starts_with('/')
                && !store.contains("/../")
                && push(inp, "models", store.to_string())
            {
                stores += 1;
            }
        }
    }
}

fn push(inp: &mut Round2Inputs, kind: &str, path: String) -> bool {
    let e = (kind.to_string(), path);
    if inp.self_installed.contains(&e) {
        return false;
    }
    inp.self_installed.push(e);
    true
}

/// The program a process runs, when it is a program of its own: its executable, else (a script
/// run by an interpreter through its `#!` line) its `argv[0]` when that names the script by an
/// absolute path or one under its working directory. An interpreter itself (Python, a shell)
/// is no engine's install.
fn program(p: &probe_model::ProcessInfo) -> Option<String> {
    let interpreter = |path: &str| {
        let base = path.rsplit('/').next().unwrap_or(path);
        [
            "python", "pypy", "sh", "bash", "dash", "zsh", "uv", "conda", "node",
        ]
        .iter()
        .any(|i| {
            base == *i
                || base
                    .strip_prefix(i)
                    .is_some_and(|v| v.starts_with(['.', '3', '2']))
        })
    };
    let clean = |s: &str| {
        s.starts_with('/') && !s.contains(['\n', '\t']) && !s.split('/').any(|c| c == "..")
    };
    if let Some(exe) = p.exe.as_deref().map(|e| e.trim_end_matches(" (deleted)"))
        && clean(exe)
        && !interpreter(exe)
    {
        return Some(squeeze(exe));
    }
    let a0 = p.argv.first()?;
    if interpreter(a0) {
        return None;
    }
    let path = if a0.starts_with('/') {
        a0.clone()
    } else if a0.contains('/') {
        let cwd = p.cwd.as_deref().filter(|c| c.starts_with('/'))?;
        format!(
            "{}/{}",
            cwd.trim_end_matches('/'),
            a0.trim_start_matches("./")
        )
    } else {
        return None;
    };
    let path = squeeze(&path);
    clean(&path).then_some(path)
}

/// `a//b///c` → `a/b/c` (a path as a process titled itself may pad it with slashes).
fn squeeze(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use probe_model::{Engine, ProcessInfo};

    fn proc(argv: &[&str], exe: Option<&str>, cwd: Option<&str>, role: ProcessRole) -> ProcessInfo {
        ProcessInfo {
            pid: 7,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            exe: exe.map(str::to_string),
            cwd: cwd.map(str::to_string),
            role,
            engine: Some(Engine::Other),
            ..ProcessInfo::default()
        }
    }

    #[test]
    fn programs_and_stores() {
        let blob = format!("/usr/share/m/models/blobs/sha256-{}", "a".repeat(64));
        let cases: Vec<(ProcessInfo, Vec<(&str, &str)>)> = vec![
            (
                proc(
                    &["/usr/local/bin/srv", "serve"],
                    Some("/usr/local/bin/srv"),
                    None,
                    ProcessRole::Launcher,
                ),
                vec![("bin", "/usr/local/bin/srv")],
            ),
            // A `#!` script run by python: its argv[0].
            (
                proc(
                    &["/usr/local/bin/srv", "serve"],
                    Some("/usr/bin/python3.11"),
                    None,
                    ProcessRole::Launcher,
                ),
                vec![("bin", "/usr/local/bin/srv")],
            ),
            // A build run from its checkout by a relative path.
            (
                proc(
                    &["./build/bin/llama-server", "-m", "x"],
                    Some("/usr/bin/python3.11"),
                    Some("/home/ana/llama.cpp"),
                    ProcessRole::Launcher,
                ),
                vec![("bin", "/home/ana/llama.cpp/build/bin/llama-server")],
            ),
            // Python itself is no install; a worker is not asked.
            (
                proc(
                    &["python3", "-m", "x"],
                    Some("/usr/bin/python3.11"),
                    None,
                    ProcessRole::Launcher,
                ),
                vec![],
            ),
            (
                proc(
                    &["/opt/x/bin/srv"],
                    Some("/opt/x/bin/srv"),
                    None,
                    ProcessRole::Worker,
                ),
                vec![],
            ),
            (
                proc(
                    &["/bin/srv", "runner", "--model", &blob],
                    None,
                    None,
                    ProcessRole::Other,
                ),
                vec![("models", "/usr/share/m/models")],
            ),
            (
                proc(
                    &["/bin/srv", "--model", "relative/blobs/sha256-x"],
                    None,
                    None,
                    ProcessRole::Other,
                ),
                vec![],
            ),
        ];
        for (p, want) in cases {
            let snap = Snapshot {
                processes: vec![p.clone()],
                ..Snapshot::default()
            };
            let mut inp = Round2Inputs::default();
            self_installed(&snap, &mut inp);
            let got: Vec<(&str, &str)> = inp
                .self_installed
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            assert_eq!(got, want, "{p:?}");
        }
    }
}
