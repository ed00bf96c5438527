//! A service manager's lifecycle lines (started, stopping, stopped, exited).

use probe_model::UnixTime;

use crate::sanitize::sanitize_line;

/// Substrings of a service manager's lifecycle lines ([`lifecycle`]).
pub(super) const LIFECYCLE_MARKERS: &[&str] = &[
    "Started ",
    "Stopping ",
    "Stopped ",
    "Deactivated successfully",
    "Main process exited",
    "Failed with result",
];
/// A service manager's lifecycle line (`Started X`, `Stopping X...`, `Stopped X`,
/// `X: Deactivated successfully.`, `X: Main process exited, code=killed, status=9/KILL`,
/// `X: Failed with result 'exit-code'.`).
pub(super) fn lifecycle(line: &str, time: Option<UnixTime>) -> Option<probe_model::LifecycleEvent> {
    use probe_model::LifecycleKind;
    let l = line.trim();
    let kind = if l.starts_with("Started ") {
        LifecycleKind::Started
    } else if l.starts_with("Stopping ") {
        LifecycleKind::Stopping
    } else if l.starts_with("Stopped ") || l.ends_with(": Deactivated successfully.") {
        LifecycleKind::Stopped
    } else if l.contains(": Main process exited, code=") || l.contains(": Failed with result ") {
        LifecycleKind::Exited
    } else {
        return None;
    };
    Some(probe_model::LifecycleEvent {
        time,
        kind,
        text: sanitize_line(l),
    })
}
