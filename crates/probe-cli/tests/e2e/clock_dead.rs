//! End-to-end: a host whose real-time clock died and reads 1970 (issue 31). `clock-1970`'s
//! `date` answers with the epoch plus the time since boot, and root's history was stamped by
//! that clock. probe says the clock reads no plausible time and that the times the host gave
//! are not trusted (not merely "behind"), and keeps the 1970 stamps as stamps.

use crate::util;

/// 2000-01-01T00:00:00Z: a clock before it was never set.
const Y2000: i64 = 946_684_800;

/// The report (JSON), the human text and the stored snapshot of the host.
fn collected() -> &'static util::Collected {
    util::collected("clock-1970")
}

#[test]
fn a_clock_in_1970_is_said_and_its_times_are_not_trusted() {
    let (report, text, snap) = collected();
    let remote = snap.remote_clock.expect("the host's clock was read");
    assert!((0..Y2000).contains(&remote), "the host's clock: {remote}");
    let notice = report
        .notices
        .iter()
        .find(|n| n.starts_with("the host's clock"))
        .unwrap_or_else(|| panic!("no clock notice: {:?}", report.notices));
    assert!(
        notice.starts_with("the host's clock reads 1970-"),
        "{notice}"
    );
    assert!(notice.contains("behind this machine's"), "{notice}");
    assert!(notice.contains("no plausible time"), "{notice}");
    assert!(notice.contains("not trusted"), "{notice}");
    // The text says it too, on one line with the reason.
    assert!(
        text.lines()
            .any(|l| l.contains("clock reads 1970-") || l.contains("not trusted")),
        "{text}"
    );
    assert!(text.contains("not trusted"), "{text}");
}

#[test]
fn stamps_the_dead_clock_wrote_are_kept_as_stamps() {
    let (report, _, snap) = collected();
    let h = snap
        .histories
        .iter()
        .find(|h| h.path == "/root/.bash_history")
        .expect("root's history");
    assert_eq!(h.implausible_stamps, 3, "{h:#?}");
    assert!(
        report
            .notices
            .iter()
            .any(|n| n.starts_with("history /root/.bash_history: 3 timestamp")),
        "{:?}",
        report.notices
    );
}
