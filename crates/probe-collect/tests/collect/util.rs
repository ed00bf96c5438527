//! What the test modules share: the shells the host scripts must run under, and round 2 run
//! locally under one of them.

use probe_collect::frame::{self, Framed};
use probe_collect::{CollectOptions, parse::Ctx, plan, script};
use probe_model::Snapshot;
use std::path::Path;

/// A shell and the PATH it runs with.
pub struct Shell {
    pub name: &'static str,
    pub sh: String,
    pub path: String,
    _bin: tempfile::TempDir,
}

fn need(p: &str) -> String {
    assert!(
        Path::new(p).exists(),
        "{p} is not installed (.ci/run installs it)"
    );
    p.to_string()
}

/// Busybox's `sh` with nothing but busybox applets on the PATH.
pub fn busybox() -> Shell {
    let bin = tempfile::tempdir().unwrap();
    let bb = need("/usr/bin/busybox");
    let list = std::process::Command::new(&bb)
        .arg("--list")
        .output()
        .unwrap();
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        let _ = std::os::unix::fs::symlink(&bb, bin.path().join(applet));
    }
    let path = bin.path().display().to_string();
    Shell {
        name: "busybox",
        sh: format!("{path}/sh"),
        path,
        _bin: bin,
    }
}

/// dash + mawk, busybox alone, bash + gawk: each must be installed (`.ci/run` installs them).
pub fn shells() -> Vec<Shell> {
    let sys = "/usr/local/bin:/usr/bin:/bin";
    let dash_bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(need("/usr/bin/mawk"), dash_bin.path().join("awk")).unwrap();
    let dash_path = format!("{}:{sys}", dash_bin.path().display());
    vec![
        Shell {
            name: "dash+mawk",
            sh: need("/usr/bin/dash"),
            path: dash_path,
            _bin: dash_bin,
        },
        busybox(),
        Shell {
            name: "bash+gawk",
            sh: need("/usr/bin/bash"),
            path: sys.into(),
            _bin: tempfile::tempdir().unwrap(),
        },
    ]
}

/// Runs `text` (a script framed with `boundary`) as `sh -s` under `shell`, its environment
/// only the PATH and an ISO-8859-1 locale (as a host set up that way gives); the script must
/// finish.
pub fn run_script(shell: &Shell, text: &str, boundary: &str) -> Framed {
    let mut child = std::process::Command::new(&shell.sh)
        .arg("-s")
        .env_clear()
        .env("PATH", &shell.path)
        .env("LANG", "en_US.ISO-8859-1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let f = frame::parse(&out.stdout, boundary);
    assert!(
        f.done,
        "{}: script did not finish: {}",
        shell.name,
        String::from_utf8_lossy(&out.stderr)
    );
    f
}

/// Runs round 2's script for `inputs` under `shell` and applies it to an empty snapshot.
pub fn run_round2(shell: &Shell, inputs: &script::Round2Inputs) -> Snapshot {
    let boundary = script::new_boundary();
    let text = script::build_round2(
        &CollectOptions::default(),
        &boundary,
        std::time::Duration::from_secs(120),
        inputs,
    );
    let f = run_script(shell, &text, &boundary);
    let mut snap = Snapshot::default();
    let ctx = Ctx {
        boundary,
        remote_clock: Some(1_796_000_000),
        ..Default::default()
    };
    plan::apply_round2(&mut snap, &ctx, &f, inputs);
    snap
}
