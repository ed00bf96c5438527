//! The `journal` section: `journalctl -o short-iso` per unit, thinned or a plain tail.

use probe_model::{LogOrigin, LogSource, SectionStatus, UnixTime};

use super::lines::parse_text;
use super::record::{read_thinned, thinning_after};
use crate::frame::records;
use crate::sanitize::sanitize_line;

/// Parses the `journal` section (`journalctl -o short-iso` per unit).
pub fn parse_journal(
    body: &[u8],
    boundary: &str,
    clock: Option<UnixTime>,
    tz: i64,
    cap: u64,
) -> Vec<LogSource> {
    let mut out = Vec::new();
    let recs = records(body, boundary);
    for (i, r) in recs.iter().enumerate() {
        let Some(rest) = r.header.strip_prefix("unit ") else {
            continue;
        };
        let name = match rest.split_once(' ') {
            // A container logging to the journal: its entries, by their CONTAINER_NAME field.
            Some(("container", n)) => sanitize_line(&format!("CONTAINER_NAME={n}")),
            Some((_, n)) => sanitize_line(n),
            None => sanitize_line(rest),
        };
        let mut src = LogSource {
            origin: LogOrigin::Journal,
            location: name,
            bytes_read: r.data.len() as u64,
            ..Default::default()
        };
        if let Some(thinning) = thinning_after(&recs, i) {
            read_thinned(r.data, thinning, clock, tz, &mut src);
            if r.data.is_empty() {
                src.status = SectionStatus::NotPresent;
                src.message = Some("no journal entries".into());
            }
            out.push(src);
            continue;
        }
        src.truncated = r.data.len() as u64 >= cap;
        parse_text(&String::from_utf8_lossy(r.data), clock, tz, &mut src);
        if r.data.is_empty() {
            src.status = SectionStatus::NotPresent;
            src.message = Some("no journal entries".into());
        } else if src.unreadable_lines > 0 {
            src.status = SectionStatus::Truncated;
            src.message = Some(format!(
                "read only in part: {} journal lines came as \"[N blob data]\" (journalctl \
                 without -a) and were not read",
                src.unreadable_lines
            ));
        } else if src.truncated {
            src.status = SectionStatus::Truncated;
            src.message = Some(format!("read only in part: the newest {cap} bytes"));
        }
        out.push(src);
    }
    out
}
