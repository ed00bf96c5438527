//! The `logs` and `found_logs` sections: log files read as text (kubelet's CRI files as
//! container logs), and small found files dated by their mtime.

use probe_model::{LogOrigin, LogSource, SectionStatus, UnixTime};

use super::containers::{MAX_CONTAINER_LINES_TOTAL, container_source};
use super::lines::parse_text;
use super::record::{read_thinned, set_file_status, thinning_after};
use crate::frame::{FileStatus, file_header, records};
use crate::sanitize::sanitize_line;

/// Parses the `logs` section (file tails).
pub fn parse_files(
    body: &[u8],
    boundary: &str,
    clock: Option<UnixTime>,
    tz: i64,
) -> Vec<LogSource> {
    let recs = records(body, boundary);
    (0..recs.len())
        .filter_map(|i| file_source(&recs, i, clock, tz))
        .collect()
}

/// The log of the file record `recs[i]` (`None`: not a file record).
fn file_source(
    recs: &[crate::frame::Record<'_>],
    i: usize,
    clock: Option<UnixTime>,
    tz: i64,
) -> Option<LogSource> {
    let r = recs.get(i).filter(|r| r.kind == 'F')?;
    let thinning = thinning_after(recs, i);
    let h = file_header(&r.header);
    let mut src = LogSource {
        origin: LogOrigin::File,
        location: h.path.clone(),
        mtime: h.mtime,
        ..Default::default()
    };
    match (&h.status, thinning) {
        (FileStatus::Ok, Some(t)) => read_thinned(r.data, t, h.mtime.or(clock), tz, &mut src),
        (FileStatus::Ok, None) => {
            src.bytes_read = r.data.len() as u64;
            src.truncated = h.size.is_some_and(|s| s > r.data.len() as u64);
            let mut data = r.data;
            if src.truncated {
                // A tail starts mid-line.
                data = data
                    .iter()
                    .position(|&c| c == b'\n')
                    .and_then(|i| data.get(i + 1..))
                    .unwrap_or(&[]);
            }
            parse_text(
                &String::from_utf8_lossy(data),
                h.mtime.or(clock),
                tz,
                &mut src,
            );
            if src.truncated {
                src.status = SectionStatus::Truncated;
            }
        }
        _ => set_file_status(&mut src, &h, None),
    }
    Some(src)
}

/// The `found_logs` section: the files of each place `found` names (`rec found INDEX` before
/// them), each with the place's reason; kubelet's CRI files decoded as such.
pub fn parse_found(
    body: &[u8],
    boundary: &str,
    clock: Option<UnixTime>,
    tz: i64,
    found: &[crate::found::FoundPlace],
) -> Vec<LogSource> {
    let recs = records(body, boundary);
    let mut place: Option<&crate::found::FoundPlace> = None;
    let mut budget = MAX_CONTAINER_LINES_TOTAL;
    let mut out = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        if let Some(n) = r.header.strip_prefix("found ") {
            place = n.trim().parse::<usize>().ok().and_then(|n| found.get(n));
            continue;
        }
        if r.kind != 'F' {
            continue;
        }
        // A file the plan did not ask for is not taken.
        let Some(p) = place else { continue };
        let src = match p.mode {
            crate::found::FoundMode::Text => file_source(&recs, i, clock, tz).map(|mut s| {
                date_by_mtime(&mut s);
                s
            }),
            crate::found::FoundMode::Cri => {
                container_source(&recs, i, "k8s-file", &mut budget, clock, tz).map(|mut s| {
                    s.origin = LogOrigin::File;
                    s
                })
            }
        };
        out.extend(src.map(|mut s| {
            s.found_by = Some(sanitize_line(&p.reason));
            s
        }));
    }
    out.extend(
        found
            .iter()
            .filter(|p| !crate::found::passed(p))
            .map(|p| LogSource {
                origin: LogOrigin::File,
                location: sanitize_line(&format!("{}/{}", p.dir, p.pattern)),
                status: SectionStatus::NotPresent,
                message: Some(crate::found::not_passed(p)),
                found_by: Some(sanitize_line(&p.reason)),
                ..LogSource::default()
            }),
    );
    out
}

/// Lines of a found file that shows no time of its own at most, for the file's mtime to date
/// them: a command's whole output written at once (`ollama run --verbose ... > FILE`, one file
/// per run of a cron job), not a log that grew over days.
const MTIME_DATED_MAX_LINES: u64 = 200;

/// A found file none of whose lines has a time, small enough to be one command's output: its
/// metric points are dated by the file's mtime (when the command finished writing it).
pub fn date_by_mtime(src: &mut LogSource) {
    let Some(mtime) = src.mtime else { return };
    let timed = src
        .metrics
        .iter()
        .flat_map(|m| m.points.iter())
        .any(|(t, _)| t.is_some())
        || src.lifecycle.iter().any(|e| e.time.is_some())
        || src.startups.iter().any(|r| r.time.is_some())
        || src.limits.iter().any(|l| l.time.is_some())
        || src.versions.iter().any(|v| v.time.is_some());
    let samples: u64 = src.metrics.iter().map(|m| m.summary.count).sum();
    if timed || samples == 0 || samples > MTIME_DATED_MAX_LINES {
        return;
    }
    for m in &mut src.metrics {
        for p in &mut m.points {
            p.0 = Some(mtime);
        }
        m.summary.first_time = Some(mtime);
        m.summary.last_time = Some(mtime);
    }
}
