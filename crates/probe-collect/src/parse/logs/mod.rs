//! Server logs: lifecycle lines, the engines' version and start-up lines (the resolved
//! arguments), their start-up limits and their periodic metrics as bounded time series with
//! summaries. What each engine prints is data (`configs/log_lines.toml`, read by
//! [`super::engine_lines`]); this reader names no engine.

mod containers;
mod files;
mod journal;
mod lifecycle;
mod lines;
mod record;
mod series;
mod startups;
#[cfg(test)]
mod tests;

pub use containers::{
    MAX_CONTAINER_LINES, MAX_CONTAINER_LINES_TOTAL, container_log_readable, decode_container_log,
    parse_container_logs,
};
pub use files::{date_by_mtime, parse_files, parse_found};
pub use journal::parse_journal;
pub use lines::{parse_text, parse_timed_lines};
pub use series::{MAX_POINTS, RECENT_POINTS, summarize};
pub use startups::MAX_STARTUPS;

use super::engine_lines;
use lifecycle::LIFECYCLE_MARKERS;
use lines::BLOB_MARKER;

/// Substrings of every line other than a metric line these readers take something from:
/// lifecycle, the engines' versions, start-up arguments and limits (`keep` of
/// `configs/log_lines.toml`; the thinning adds every limit marker), unreadable placeholders. The
/// host keeps such lines in full (within its caps an hour and a run); the test
/// `thinning_keeps_what_the_reader_reads` holds this list to the readers.
pub fn keep_markers() -> Vec<&'static str> {
    LIFECYCLE_MARKERS
        .iter()
        .copied()
        .chain(engine_lines::keep())
        .chain([BLOB_MARKER])
        .collect()
}
