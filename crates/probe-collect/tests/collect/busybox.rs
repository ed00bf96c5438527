//! The round-1 script on a busybox-only userland: `busybox sh` with every tool (head, stat,
//! awk, grep, timeout, ...) a busybox applet. Fails with a clear message when busybox is missing
//! (`.ci/run` installs it).

#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use probe_collect::{CollectOptions, frame, parse::Ctx, plan, script};
use probe_model::{SectionStatus, Snapshot};

#[test]
fn round1_under_busybox() {
    let Some(bb) = ["/usr/bin/busybox", "/bin/busybox"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        panic!("busybox is not installed: `apt-get install busybox` (.ci/run does)");
    };
    // A PATH holding only busybox applets.
    let dir = tempfile::tempdir().unwrap();
    let list = std::process::Command::new(bb)
        .arg("--list")
        .output()
        .unwrap();
    for applet in String::from_utf8_lossy(&list.stdout).lines() {
        let _ = std::os::unix::fs::symlink(bb, dir.path().join(applet));
    }
    let boundary = script::new_boundary();
    let text = script::build(&CollectOptions::default(), &boundary);
    let mut child = std::process::Command::new(dir.path().join("sh"))
        .arg("-s")
        .env_clear()
        .env("PATH", dir.path())
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
        "script did not finish: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut snap = Snapshot::default();
    let mut ctx = Ctx {
        boundary: boundary.clone(),
        ..Default::default()
    };
    plan::apply_round1(&mut snap, &mut ctx, &f, false);
    for s in &snap.sections {
        eprintln!(
            "{:12} {:?} rc={:?} {:?}ms {:?}",
            s.name, s.status, s.exit_code, s.duration_ms, s.message
        );
        assert_ne!(
            s.status,
            SectionStatus::Failed,
            "{}: {:?}",
            s.name,
            s.message
        );
    }
    assert!(snap.host.hostname.is_some());
    assert!(snap.host.cpu_count.unwrap_or(0) >= 1);
    assert!(ctx.remote_clock.is_some() && ctx.clk_tck.is_some());
}
