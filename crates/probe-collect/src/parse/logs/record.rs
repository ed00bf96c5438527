//! What a log's file record says besides its text: the host's thinning record after it
//! (coverage, why it is partial) and why a file was not read.

use probe_model::{LogSource, LogThinning, SectionStatus, UnixTime};

use super::lines::parse_text;
use crate::frame::FileHeader;

/// The `thin` record the host's thinning pass wrote right after a log's record, if any:
/// `thin SEEN KEPT METRIC_SEEN METRIC_KEPT OVER_CAPS OVER_SIZE READER_STATUS`.
pub(super) fn thinning_after(recs: &[crate::frame::Record<'_>], i: usize) -> Option<LogThinning> {
    let next = recs.get(i + 1).filter(|r| r.kind == 'R')?;
    let rest = next.header.strip_prefix("thin ")?;
    let w: Vec<&str> = rest.split(' ').collect();
    let n = |k: usize| w.get(k).and_then(|x| x.parse::<u64>().ok());
    Some(LogThinning {
        lines_seen: n(0)?,
        lines_kept: n(1)?,
        metric_lines_seen: n(2)?,
        metric_lines_kept: n(3)?,
        dropped_over_caps: n(4)?,
        dropped_over_size: n(5)?,
        stopped_early: w.get(6).is_some_and(|rc| *rc == "124" || *rc == "137"),
        metric_lines_per_hour: crate::config::probes().thinning.metric_lines_per_hour,
        first_time: None,
        last_time: None,
    })
}

/// Reads what the host's thinning pass kept of a log: every line it sent, the coverage (the
/// first and last time kept) and, when it stopped early or hit its byte cap, why it is partial.
pub(super) fn read_thinned(
    data: &[u8],
    thinning: LogThinning,
    reference: Option<UnixTime>,
    tz: i64,
    src: &mut LogSource,
) {
    src.bytes_read = data.len() as u64;
    parse_text(&String::from_utf8_lossy(data), reference, tz, src);
    finish_thinning(thinning, src);
}

/// A thinned log's coverage (the first and last time among what was kept) and, when the reader
/// stopped early, why it is partial.
pub(super) fn finish_thinning(mut t: LogThinning, src: &mut LogSource) {
    let times = src
        .metrics
        .iter()
        .flat_map(|m| [m.summary.first_time, m.summary.last_time])
        .chain(src.lifecycle.iter().map(|e| e.time))
        .chain(src.startups.iter().map(|s| s.time))
        .flatten();
    t.first_time = times.clone().min();
    t.last_time = times.max();
    src.truncated = t.stopped_early;
    if t.stopped_early {
        src.status = SectionStatus::Truncated;
        src.message = Some(String::from(
            "read only in part: the reader stopped at its time limit; the newest lines were \
             read again from the end, and what lay between is missing",
        ));
    }
    src.thinning = Some(t);
}

/// A log file record that was not read: its status, and why (`denied_message` replaces the
/// plain "permission denied" where the caller knows more).
pub(super) fn set_file_status(src: &mut LogSource, h: &FileHeader, denied_message: Option<&str>) {
    let (status, message) = h.section_status();
    src.status = status;
    src.message = match (status, message) {
        (_, Some(message)) => Some(message.into()),
        (SectionStatus::PermissionDenied, None) => denied_message.map(String::from),
        (SectionStatus::Failed, None) => Some(h.status.describe()),
        _ => None,
    };
}
