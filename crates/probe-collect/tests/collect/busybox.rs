//! The round-1 script on a busybox-only userland: `busybox sh` with every tool (head, stat,
//! awk, grep, timeout, ...) a busybox applet. Fails with a clear message when busybox is missing
//! (`.ci/run` installs it).

#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use probe_collect::{CollectOptions, parse::Ctx, plan, script};
use probe_model::{SectionStatus, Snapshot};

#[test]
fn round1_under_busybox() {
    let shell = crate::util::busybox();
    let boundary = script::new_boundary();
    let text = script::build(&CollectOptions::default(), &boundary);
    let f = crate::util::run_script(&shell, &text, &boundary);
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
