//! Container runtimes' log files: docker `json-file` and podman/CRI `k8s-file` decoded into
//! timed lines (partial entries joined), then read as a log.

use probe_model::{LogOrigin, LogSource, SectionStatus, UnixTime};

use super::lines::parse_timed_lines;
use super::record::{finish_thinning, set_file_status, thinning_after};
use crate::frame::{FileStatus, file_header, records};
use crate::sanitize::sanitize_line;

/// Decoded lines kept per container log (the newest).
pub const MAX_CONTAINER_LINES: usize = 200_000;
/// Decoded lines over all container logs of one collection.
pub const MAX_CONTAINER_LINES_TOTAL: usize = 1_000_000;
/// Longest line rebuilt from partial entries (docker splits lines at 16 KiB).
const MAX_JOINED_LINE: usize = 1 << 20;

/// Log drivers whose file [`decode_container_log`] reads.
pub fn container_log_readable(driver: &str) -> bool {
    matches!(driver, "json-file" | "k8s-file")
}

/// One entry of docker's json-file log.
#[derive(serde::Deserialize)]
struct JsonEntry {
    #[serde(default)]
    log: String,
    #[serde(default)]
    stream: String,
    #[serde(default)]
    time: String,
}

/// Lines being rebuilt from partial entries, per stream (stdout, everything else).
#[derive(Default)]
struct Joiner {
    parts: [Option<(Option<UnixTime>, String)>; 2],
    out: Vec<(Option<UnixTime>, String)>,
    budget: usize,
}

impl Joiner {
    /// Adds one entry's text; `done`: the entry ends its line.
    fn push(&mut self, stream: &str, time: Option<UnixTime>, text: &str, done: bool) {
        let slot = usize::from(stream != "stdout");
        let Some(part) = self.parts.get_mut(slot) else {
            return;
        };
        let (t0, mut line) = part.take().unwrap_or((time, String::new()));
        if line.len() < MAX_JOINED_LINE {
            let mut end = text.len().min(MAX_JOINED_LINE - line.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            line.push_str(text.get(..end).unwrap_or(""));
        }
        if done {
            self.emit(t0, &line);
        } else {
            *part = Some((t0, line));
        }
    }

    fn emit(&mut self, time: Option<UnixTime>, text: &str) {
        for l in text.split('\n') {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            self.out
                .push((time, l.strip_suffix('\r').unwrap_or(l).to_string()));
        }
        if self.out.len() > 2 * MAX_CONTAINER_LINES {
            self.out.drain(..MAX_CONTAINER_LINES);
        }
    }

    fn finish(mut self) -> Vec<(Option<UnixTime>, String)> {
        for slot in 0..self.parts.len() {
            if let Some((t, l)) = self.parts.get_mut(slot).and_then(Option::take) {
                self.emit(t, &l);
            }
        }
        let mut out = self.out;
        if out.len() > MAX_CONTAINER_LINES {
            out.drain(..out.len() - MAX_CONTAINER_LINES);
        }
        out
    }
}

/// Decodes the text of a container runtime's log file into (time, line) pairs: docker
/// `json-file` (one JSON object a line, `{"log":"...\n","stream":"stdout","time":"RFC 3339"}`;
/// an entry whose `log` lacks the final `\n` is the first part of a longer line) or podman/CRI
/// `k8s-file` (`TIME STREAM P|F TEXT`, `P` = partial). Stdout and stderr are joined
/// separately. Returns the lines (the newest [`MAX_CONTAINER_LINES`], at most `budget` lines
/// decoded, which is decreased) and how many lines could not be decoded.
pub fn decode_container_log(
    data: &[u8],
    driver: &str,
    budget: &mut usize,
) -> (Vec<(Option<UnixTime>, String)>, usize) {
    let mut j = Joiner {
        budget: *budget,
        ..Default::default()
    };
    let mut bad = 0usize;
    for raw in data.split(|&c| c == b'\n') {
        if j.budget == 0 {
            break;
        }
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match driver {
            "k8s-file" => {
                let l = String::from_utf8_lossy(raw);
                let mut it = l.splitn(4, ' ');
                let (Some(t), Some(stream), Some(tag)) = (it.next(), it.next(), it.next()) else {
                    bad += 1;
                    continue;
                };
                let time = crate::parse::parse_rfc3339(t);
                if time.is_none() || !matches!(tag, "F" | "P") {
                    bad += 1;
                    continue;
                }
                let text = it.next().unwrap_or("");
                j.push(stream, time, text, tag == "F");
            }
            _ => match serde_json::from_slice::<JsonEntry>(raw) {
                Ok(e) => {
                    let time = crate::parse::parse_rfc3339(&e.time);
                    let (text, done) = match e.log.strip_suffix('\n') {
                        Some(t) => (t, true),
                        None => (e.log.as_str(), false),
                    };
                    j.push(&e.stream, time, text, done);
                }
                Err(_) => bad += 1,
            },
        }
    }
    let used = *budget - j.budget;
    *budget -= used;
    (j.finish(), bad)
}

/// Parses the `container_logs` section: per container a `clog DRIVER` record, then the tail
/// of its log file; decoded by driver and read for start-ups and metrics with the runtime's
/// own line times.
pub fn parse_container_logs(
    body: &[u8],
    boundary: &str,
    clock: Option<UnixTime>,
    tz: i64,
) -> Vec<LogSource> {
    let mut out = Vec::new();
    let mut driver = String::new();
    let mut budget = MAX_CONTAINER_LINES_TOTAL;
    let recs = records(body, boundary);
    for (i, r) in recs.iter().enumerate() {
        if let Some(d) = r.header.strip_prefix("clog ") {
            driver = d.trim().to_string();
            continue;
        }
        out.extend(container_source(&recs, i, &driver, &mut budget, clock, tz));
    }
    out
}

/// The container log of the file record `recs[i]`, decoded as `driver` writes it (`None`: not
/// a file record); `budget`: decoded lines left for the collection.
pub(super) fn container_source(
    recs: &[crate::frame::Record<'_>],
    i: usize,
    driver: &str,
    budget: &mut usize,
    clock: Option<UnixTime>,
    tz: i64,
) -> Option<LogSource> {
    let r = recs.get(i).filter(|r| r.kind == 'F')?;
    let h = file_header(&r.header);
    let mut src = LogSource {
        origin: LogOrigin::Container,
        location: h.path.clone(),
        mtime: h.mtime,
        ..Default::default()
    };
    match h.status {
        FileStatus::Ok if !container_log_readable(driver) => {
            src.status = SectionStatus::Failed;
            src.message = Some(format!(
                "log driver {}: not a text log this collector reads",
                sanitize_line(driver)
            ));
        }
        FileStatus::Ok => {
            let thinning = thinning_after(recs, i);
            src.bytes_read = r.data.len() as u64;
            src.truncated = thinning.is_none() && h.size.is_some_and(|s| s > r.data.len() as u64);
            let mut data = r.data;
            if src.truncated {
                // A tail starts mid-line.
                data = data
                    .iter()
                    .position(|&c| c == b'\n')
                    .and_then(|i| data.get(i + 1..))
                    .unwrap_or(&[]);
            }
            let (lines, bad) = decode_container_log(data, driver, budget);
            parse_timed_lines(
                lines.iter().map(|(t, l)| (*t, l.as_str())),
                h.mtime.or(clock),
                tz,
                &mut src,
            );
            if src.truncated {
                src.status = SectionStatus::Truncated;
            }
            if let Some(t) = thinning {
                finish_thinning(t, &mut src);
            }
            if bad > 0 && lines.is_empty() {
                src.status = SectionStatus::Failed;
                src.message = Some(format!(
                    "not a {} log: none of its {bad} lines could be decoded",
                    sanitize_line(driver)
                ));
            } else if bad > 0 {
                src.message = Some(format!("{bad} lines could not be decoded"));
            }
            if *budget == 0 {
                src.message = Some(format!(
                    "stopped decoding after {MAX_CONTAINER_LINES_TOTAL} lines of container logs"
                ));
            }
        }
        _ => set_file_status(
            &mut src,
            &h,
            Some("readable by root only (needs root or --sudo)"),
        ),
    }
    Some(src)
}
