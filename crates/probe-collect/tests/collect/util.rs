//! What the test modules share: the shells the host scripts must run under, and round 2 run
//! locally under one of them.

use probe_collect::{CollectOptions, frame, parse::Ctx, plan, script};
use probe_model::Snapshot;
use std::path::Path;

/// A shell and the PATH it runs with.
pub struct Shell {
    pub name: &'static str,
    pub sh: String,
    pub path: String,
    _bin: tempfile::TempDir,
}

/// dash + mawk, busybox alone, bash + gawk: each must be installed (`.ci/run` installs them).
pub fn shells() -> Vec<Shell> {
    let need = |p: &str| {
        assert!(
            Path::new(p).exists(),
            "{p} is not installed (.ci/run installs it)"
        );
        p.to_string()
    };
    let sys = "/usr/local/bin:/usr/bin:/bin";
    let dash_bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(need("/usr/bin/mawk"), dash_bin.path().join("awk")).unwrap();
    let dash_path = format!("{}:{sys}", dash_bin.path().display());
    let bb_bin = tempfile::tempdir().unwrap();
    let bb = need("/usr/bin/busybox");
    let list = std::process::Command::new(&bb)
        .arg("--list")
        .output()
        .unwrap();
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        let _ = std::os::unix::fs::symlink(&bb, bb_bin.path().join(applet));
    }
    let bb_path = bb_bin.path().display().to_string();
    vec![
        Shell {
            name: "dash+mawk",
            sh: need("/usr/bin/dash"),
            path: dash_path,
            _bin: dash_bin,
        },
        Shell {
            name: "busybox",
            sh: format!("{bb_path}/sh"),
            path: bb_path,
            _bin: bb_bin,
        },
        Shell {
            name: "bash+gawk",
            sh: need("/usr/bin/bash"),
            path: sys.into(),
            _bin: tempfile::tempdir().unwrap(),
        },
    ]
}

/// Runs round 2's script for `inputs` under `shell` (an ISO-8859-1 locale in its environment,
/// as a host set up that way gives) and applies it to an empty snapshot.
pub fn run_round2(shell: &Shell, inputs: &script::Round2Inputs) -> Snapshot {
    let boundary = script::new_boundary();
    let text = script::build_round2(
        &CollectOptions::default(),
        &boundary,
        std::time::Duration::from_secs(120),
        inputs,
    );
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
    let f = frame::parse(&out.stdout, &boundary);
    assert!(
        f.done,
        "{}: script did not finish: {}",
        shell.name,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut snap = Snapshot::default();
    let ctx = Ctx {
        boundary,
        remote_clock: Some(1_796_000_000),
        ..Default::default()
    };
    plan::apply_round2(&mut snap, &ctx, &f, inputs);
    snap
}
