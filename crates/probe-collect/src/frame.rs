//! Section framing of the script output. The script prints, for each section,
//!
//! ```text
//! \n<B> BEGIN <name>\n<stdout, capped>\n<B> ERR <name>\n<stderr head + "\n<B> rc <N>\n">\n<B> END <name> <t0> <t1>\n
//! ```
//!
//! where `<B>` is a boundary random per run (32 hex digits). Inside a section, records are
//! started by `\n<B> R <kind> <args>\n` and file records by `\n<B> F <status> <tag> <mtime>
//! <size> <path>\n`. Nothing in a file or command output can forge these lines without knowing
//! `<B>`, so parsing goes by the boundary only, never by content.

/// One framed section as received.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawSection {
    pub name: String,
    /// Stdout of the section (after the remote cap; may hold one byte more than the cap).
    pub body: Vec<u8>,
    /// First bytes of stderr.
    pub stderr: Vec<u8>,
    /// Exit code of the section's command (`None` when the trailer was lost).
    pub rc: Option<i32>,
    /// Centiseconds of uptime at start and end (from /proc/uptime).
    pub t0: Option<u64>,
    pub t1: Option<u64>,
    /// Whether the END trailer was seen (false: output cut off mid-section).
    pub complete: bool,
    /// The framing inside this section was broken (the boundary where only the collector's
    /// own framing can put it, a section begun twice or ended under another name): why.
    pub tampered: Option<String>,
}

/// Whole output of one script run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Framed {
    pub sections: Vec<RawSection>,
    /// `<B> DONE` was seen: the script ran to its end.
    pub done: bool,
}

/// Marker lines `\n<B> ` followed by a keyword. Returns (line start offset, line end offset
/// (exclusive, without the \n), rest of the marker line after `<B> `).
fn marker_lines<'a>(
    data: &'a [u8],
    boundary: &'a [u8],
) -> impl Iterator<Item = (usize, usize, &'a [u8])> + 'a {
    let mut pos = 0usize;
    let finder = memchr::memmem::Finder::new(boundary);
    std::iter::from_fn(move || {
        if boundary.is_empty() {
            return None;
        }
        while pos < data.len() {
            let rest = data.get(pos..)?;
            let idx = finder.find(rest)?;
            let start = pos + idx;
            pos = start + boundary.len();
            // Must be at line start and be followed by a space.
            let at_line_start = start == 0 || data.get(start - 1) == Some(&b'\n');
            if !at_line_start || data.get(start + boundary.len()) != Some(&b' ') {
                continue;
            }
            let after = start + boundary.len() + 1;
            let end = data
                .get(after..)
                .and_then(|r| r.iter().position(|&b| b == b'\n'))
                .map_or(data.len(), |i| after + i);
            pos = end;
            return Some((start, end, data.get(after..end).unwrap_or(&[])));
        }
        None
    })
}

/// Byte-substring search (no allocation).
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    memchr::memmem::find(hay, needle)
}

/// Strips the `\n` the framing put before a marker line.
fn before_marker(data: &[u8], from: usize, marker_start: usize) -> &[u8] {
    let end = if marker_start > from && data.get(marker_start - 1) == Some(&b'\n') {
        marker_start - 1
    } else {
        marker_start
    };
    data.get(from..end.max(from)).unwrap_or(&[])
}

/// The words of a marker line: its keyword and the script's own fields (ASCII) come first, a
/// remote name (a path) last, so they are read from the line's valid UTF-8 prefix. A name that
/// is not UTF-8 (Latin-1 under an ISO-8859-1 locale) cuts only itself short; reading the line
/// as nothing would make a good marker line look forged, and its section tampered.
fn words(b: &[u8]) -> Vec<&str> {
    let text = match std::str::from_utf8(b) {
        Ok(text) => text,
        Err(err) => b
            .get(..err.valid_up_to())
            .and_then(|valid| std::str::from_utf8(valid).ok())
            .unwrap_or(""),
    };
    text.split(' ').filter(|w| !w.is_empty()).collect()
}

use crate::sanitize::sanitize_line;

/// Marker keywords the script writes after the boundary.
const KEYWORDS: &[&str] = &["BEGIN", "ERR", "END", "DONE", "rc", "R", "F"];

/// Every offset of the boundary in `data`.
fn occurrences(data: &[u8], b: &[u8]) -> Vec<usize> {
    if b.is_empty() {
        return Vec::new();
    }
    memchr::memmem::find_iter(data, b).collect()
}

/// Splits script output into sections. Total: any input gives some result. A section whose
/// framing is broken keeps what it held and says why in [`RawSection::tampered`]; the sections
/// around it are unaffected.
pub fn parse(data: &[u8], boundary: &str) -> Framed {
    let mut out = split(data, boundary);
    let b = boundary.as_bytes();
    if b.is_empty() {
        return out;
    }
    // Every occurrence of the boundary must be a marker line the script writes.
    let good: Vec<usize> = marker_lines(data, b)
        .filter(|(_, _, rest)| {
            let w = words(rest);
            w.first().is_some_and(|k| KEYWORDS.contains(k))
        })
        .map(|(start, _, _)| start)
        .collect();
    let starts = section_starts(data, b);
    // A reader that found the boundary in what it read says so (`R tampered WHY`).
    for (at, _, rest) in marker_lines(data, b) {
        let w = words(rest);
        if w.first() == Some(&"R") && w.get(1) == Some(&"tampered") {
            let why = sanitize_line(&w.get(2..).unwrap_or(&[]).join(" "));
            let idx = starts.iter().rposition(|&s| s <= at);
            if let Some(sec) = idx.and_then(|i| out.sections.get_mut(i)) {
                sec.tampered.get_or_insert(why);
            }
        }
    }
    for at in occurrences(data, b) {
        if good.binary_search(&at).is_ok() {
            continue;
        }
        let idx = starts.iter().rposition(|&s| s <= at);
        if let Some(sec) = idx.and_then(|i| out.sections.get_mut(i)) {
            sec.tampered
                .get_or_insert_with(|| "the run's boundary appeared inside its output".into());
        }
    }
    out
}

/// Offsets of the BEGIN lines, one per section `split` returns, in order.
fn section_starts(data: &[u8], b: &[u8]) -> Vec<usize> {
    marker_lines(data, b)
        .filter(|(_, _, rest)| words(rest).first() == Some(&"BEGIN"))
        .map(|(start, _, _)| start)
        .collect()
}

fn split(data: &[u8], boundary: &str) -> Framed {
    let b = boundary.as_bytes();
    let mut out = Framed::default();
    let mut seen: Vec<String> = Vec::new();
    // State: current section and where its body / stderr started.
    let mut cur: Option<RawSection> = None;
    let mut body_from = 0usize;
    let mut err_from: Option<usize> = None;
    for (start, end, rest) in marker_lines(data, b) {
        let w = words(rest);
        match w.first().copied() {
            Some("BEGIN") => {
                if let Some(mut s) = cur.take() {
                    // Previous section never ended: keep what came. The script always ends a
                    // section before it begins the next, so this is not its doing.
                    close_incomplete(&mut s, data, body_from, err_from, start);
                    s.tampered = Some("a section began inside it".into());
                    out.sections.push(s);
                }
                let name = w.get(1).unwrap_or(&"").to_string();
                let twice = seen.contains(&name);
                seen.push(name.clone());
                cur = Some(RawSection {
                    name,
                    tampered: twice.then(|| "begun twice".to_string()),
                    ..Default::default()
                });
                body_from = (end + 1).min(data.len());
                err_from = None;
            }
            Some("ERR") => {
                if let Some(s) = cur.as_mut() {
                    if err_from.is_none() {
                        s.body = before_marker(data, body_from, start).to_vec();
                        err_from = Some((end + 1).min(data.len()));
                    }
                } else if let Some(last) = out.sections.last_mut() {
                    last.tampered.get_or_insert_with(|| "ended twice".into());
                }
            }
            Some("END") => {
                if let Some(mut s) = cur.take() {
                    if w.get(1).copied() != Some(s.name.as_str()) {
                        s.tampered = Some("ended under another name".into());
                    }
                    match err_from {
                        Some(ef) => {
                            let err = before_marker(data, ef, start);
                            let (stderr, rc) = split_rc(err, b);
                            s.stderr = stderr;
                            s.rc = rc;
                        }
                        None => s.body = before_marker(data, body_from, start).to_vec(),
                    }
                    s.t0 = w.get(2).and_then(|v| v.parse().ok());
                    s.t1 = w.get(3).and_then(|v| v.parse().ok());
                    s.complete = true;
                    out.sections.push(s);
                } else if let Some(last) = out.sections.last_mut() {
                    last.tampered.get_or_insert_with(|| "ended twice".into());
                }
                err_from = None;
            }
            Some("DONE") => {
                if let Some(mut s) = cur.take() {
                    close_incomplete(&mut s, data, body_from, err_from, start);
                    out.sections.push(s);
                }
                out.done = true;
            }
            // Records inside a body and rc lines inside ERR are handled by their readers.
            _ => {}
        }
    }
    if let Some(mut s) = cur.take() {
        close_incomplete(&mut s, data, body_from, err_from, data.len());
        out.sections.push(s);
    }
    out
}

fn close_incomplete(
    s: &mut RawSection,
    data: &[u8],
    body_from: usize,
    err_from: Option<usize>,
    upto: usize,
) {
    match err_from {
        Some(ef) => {
            let (stderr, rc) = split_rc(before_marker(data, ef, upto), b"");
            s.stderr = stderr;
            s.rc = rc;
        }
        None => s.body = before_marker(data, body_from, upto).to_vec(),
    }
}

/// Takes the `<B> rc N` line out of the stderr block.
fn split_rc(err: &[u8], b: &[u8]) -> (Vec<u8>, Option<i32>) {
    let mut rc = None;
    let mut stderr = Vec::with_capacity(err.len());
    let mut last = 0usize;
    for (start, end, rest) in marker_lines(err, b) {
        let w = words(rest);
        if w.first() == Some(&"rc") {
            rc = w.get(1).and_then(|v| v.parse().ok());
            stderr.extend_from_slice(err.get(last..start).unwrap_or(&[]));
            last = (end + 1).min(err.len());
        }
    }
    stderr.extend_from_slice(err.get(last..).unwrap_or(&[]));
    while stderr.last().is_some_and(|c| c.is_ascii_whitespace()) {
        stderr.pop();
    }
    while stderr.first().is_some_and(|c| c.is_ascii_whitespace()) {
        stderr.remove(0);
    }
    (stderr, rc)
}

/// One record inside a section body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    /// `R` (plain record) or `F` (file).
    pub kind: char,
    /// The marker line after `<B> R ` / `<B> F ` (lossy UTF-8, raw).
    pub header: String,
    pub data: &'a [u8],
}

/// Splits a section body into records. Bytes before the first record are returned with kind
/// `-` and an empty header.
pub fn records<'a>(body: &'a [u8], boundary: &str) -> Vec<Record<'a>> {
    let b = boundary.as_bytes();
    let mut out = Vec::new();
    let mut cur: Option<(char, String, usize)> = None;
    let mut first_end = None;
    for (start, end, rest) in marker_lines(body, b) {
        let (kind, header) = match rest.split_first() {
            Some((b'R', h)) => ('R', h),
            Some((b'F', h)) => ('F', h),
            _ => continue,
        };
        if h_ok(header) {
            if let Some((k, h, from)) = cur.take() {
                out.push(Record {
                    kind: k,
                    header: h,
                    data: before_marker(body, from, start),
                });
            } else if first_end.is_none() {
                first_end = Some(start);
            }
            let header =
                String::from_utf8_lossy(header.strip_prefix(b" ").unwrap_or(header)).into_owned();
            cur = Some((kind, header, (end + 1).min(body.len())));
        }
    }
    if let Some((k, h, from)) = cur.take() {
        let data = body.get(from..).unwrap_or(&[]);
        out.push(Record {
            kind: k,
            header: h,
            data,
        });
    }
    let lead = before_marker(body, 0, first_end.unwrap_or(body.len()));
    if !lead.is_empty() && lead.iter().any(|c| !c.is_ascii_whitespace()) {
        out.insert(
            0,
            Record {
                kind: '-',
                header: String::new(),
                data: lead,
            },
        );
    }
    out
}

fn h_ok(h: &[u8]) -> bool {
    h.is_empty() || h.first() == Some(&b' ')
}

/// The status word of a file record (and of the `R denied PATH`-style records), as the
/// collection script writes it. A word the script never writes (a hostile or corrupted stream)
/// is kept, sanitised, as `Other`: it reads as a failure that names the word.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FileStatus {
    #[default]
    Ok,
    Missing,
    Denied,
    /// A symbolic link where a file was expected: never followed.
    Symlink,
    /// Something that is not a regular file (a directory, a device).
    NotFile,
    /// A named pipe: reading it could block, so it is not read.
    Fifo,
    Other(String),
}

impl FileStatus {
    pub fn from_word(word: &str) -> FileStatus {
        match word {
            "ok" => FileStatus::Ok,
            "missing" => FileStatus::Missing,
            "denied" => FileStatus::Denied,
            "symlink" => FileStatus::Symlink,
            "notfile" => FileStatus::NotFile,
            "fifo" => FileStatus::Fifo,
            other => FileStatus::Other(crate::sanitize::sanitize_line(other)),
        }
    }

    /// What the status means for a section, with a default message where the status alone
    /// does not say it.
    pub fn section_status(&self) -> (probe_model::SectionStatus, Option<&'static str>) {
        use probe_model::SectionStatus;
        match self {
            FileStatus::Ok => (SectionStatus::Ok, None),
            FileStatus::Missing => (SectionStatus::NotPresent, None),
            FileStatus::Denied => (SectionStatus::PermissionDenied, None),
            FileStatus::Symlink => (
                SectionStatus::PermissionDenied,
                Some("symbolic link: not followed"),
            ),
            FileStatus::NotFile => (SectionStatus::Failed, Some("not a regular file")),
            FileStatus::Fifo => (
                SectionStatus::Failed,
                Some("not a regular file (a FIFO): not read"),
            ),
            FileStatus::Other(_) => (SectionStatus::Failed, None),
        }
    }

    /// One phrase for a note: the default message, else the plain meaning, else the word.
    pub fn describe(&self) -> String {
        match (self, self.section_status()) {
            (_, (_, Some(message))) => message.to_string(),
            (FileStatus::Ok, _) => "read".into(),
            (FileStatus::Missing, _) => "missing".into(),
            (FileStatus::Denied, _) => "permission denied".into(),
            (FileStatus::Other(word), _) => word.clone(),
            _ => "not read".into(),
        }
    }
}

/// A file record header: `<status> <tag> <mtime> <size> <path>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileHeader {
    pub status: FileStatus,
    pub tag: String,
    pub mtime: Option<i64>,
    pub size: Option<u64>,
    pub path: String,
}

/// Why a file whose name came with U+FFFD was not read: its name held bytes that are not UTF-8
/// (a Latin-1 name under an ISO-8859-1 locale, read in round 1), and the host found no single
/// file whose name has one such byte in each U+FFFD's place (the prelude's `lone`).
pub const NAME_NOT_MATCHED: &str = "its name is not UTF-8 (shown with \u{fffd}) and no single \
     file on the host matched it with one byte in each such place: not read";

impl FileHeader {
    /// What the record's status means for a section (see [`FileStatus::section_status`]); a
    /// missing file whose name came with U+FFFD says why ([`NAME_NOT_MATCHED`]) rather than an
    /// unexplained "not present".
    pub fn section_status(&self) -> (probe_model::SectionStatus, Option<&'static str>) {
        match self.status.section_status() {
            (probe_model::SectionStatus::NotPresent, None) if self.path.contains('\u{fffd}') => (
                probe_model::SectionStatus::NotPresent,
                Some(NAME_NOT_MATCHED),
            ),
            other => other,
        }
    }

    /// One phrase for a note (see [`FileStatus::describe`]), with the reason
    /// [`section_status`](Self::section_status) gives.
    pub fn describe(&self) -> String {
        match self.section_status() {
            (_, Some(message)) => message.to_string(),
            _ => self.status.describe(),
        }
    }

    pub fn is_ok(&self) -> bool {
        self.status == FileStatus::Ok
    }
}

pub fn file_header(h: &str) -> FileHeader {
    let mut it = h.splitn(5, ' ');
    FileHeader {
        status: FileStatus::from_word(it.next().unwrap_or("")),
        tag: it.next().unwrap_or("").to_string(),
        mtime: it.next().and_then(|v| v.parse().ok()),
        size: it.next().and_then(|v| v.parse().ok()),
        path: crate::sanitize::sanitize_line(it.next().unwrap_or("")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "0123456789abcdef0123456789abcdef";

    fn section(name: &str, body: &str, err: &str, rc: i32) -> String {
        format!(
            "\n{B} BEGIN {name}\n{body}\n{B} ERR {name}\n{err}\n{B} rc {rc}\n\n{B} END {name} 100 150\n"
        )
    }

    /// Every word the script writes, and one it never does, read the same in every section.
    #[test]
    fn file_status_words_mean_one_thing() {
        use probe_model::SectionStatus::*;
        let cases = [
            ("ok", Ok, None),
            ("missing", NotPresent, None),
            ("denied", PermissionDenied, None),
            (
                "symlink",
                PermissionDenied,
                Some("symbolic link: not followed"),
            ),
            ("notfile", Failed, Some("not a regular file")),
            (
                "fifo",
                Failed,
                Some("not a regular file (a FIFO): not read"),
            ),
            ("\x1b[31mweird", Failed, None),
        ];
        for (word, status, message) in cases {
            let header = file_header(&format!("{word} tag 1 2 /p"));
            assert_eq!(header.section_status(), (status, message), "{word}");
            assert_eq!(header.is_ok(), word == "ok", "{word}");
        }
        let odd = file_header("\x1b[31mweird tag - - /p");
        assert!(!odd.status.describe().contains('\x1b'), "{:?}", odd.status);
    }

    #[test]
    fn parses_sections() {
        let out = format!(
            "{}{}\n{B} DONE\n",
            section("a", "hello\nworld", "", 0),
            section("b", "x", "oops", 4)
        );
        let f = parse(out.as_bytes(), B);
        assert!(f.done);
        assert_eq!(f.sections.len(), 2);
        assert_eq!(f.sections[0].body, b"hello\nworld");
        assert_eq!(f.sections[0].rc, Some(0));
        assert_eq!(f.sections[0].t0, Some(100));
        assert_eq!(f.sections[1].stderr, b"oops");
        assert_eq!(f.sections[1].rc, Some(4));
    }

    #[test]
    fn forged_boundary_cannot_create_section() {
        // A file containing a boundary-like line with a different boundary.
        let forged = "line\n0123456789abcdef0123456789abcdee BEGIN evil\nx\n0123456789abcdef0123456789abcdee END evil 1 2";
        let out = section("a", forged, "", 0);
        let f = parse(out.as_bytes(), B);
        assert_eq!(f.sections.len(), 1);
        assert_eq!(f.sections[0].body, forged.as_bytes());
    }

    #[test]
    fn records_split() {
        let body = format!(
            "lead\n{B} R clock\n123\n{B} F ok alice 1700000000 10 /home/a/.bash_history\nls -l\n\n{B} R empty\n"
        );
        let r = records(body.as_bytes(), B);
        assert_eq!(r.len(), 4);
        assert_eq!(r[0].kind, '-');
        assert_eq!(r[1].header, "clock");
        assert_eq!(r[1].data, b"123");
        assert_eq!(r[2].kind, 'F');
        let h = file_header(&r[2].header);
        assert_eq!(h.tag, "alice");
        assert_eq!(h.mtime, Some(1_700_000_000));
        assert_eq!(h.path, "/home/a/.bash_history");
        assert_eq!(r[2].data, b"ls -l\n");
        assert_eq!(r[3].data, b"");
    }

    #[test]
    fn broken_framing_is_tampered_and_costs_only_its_section() {
        // (case, body of section b, why)
        let cases = [
            (
                "boundary inside content",
                format!("x={B}\n"),
                "the run's boundary appeared inside its output",
            ),
            (
                "forged end of section",
                format!("data\n{B} END b 1 2\nafter"),
                "",
            ),
            (
                "forged section inside",
                format!("data\n{B} BEGIN evil\nfake"),
                "a section began inside it",
            ),
            (
                "reader found the boundary",
                format!("{B} R tampered the environ of process 7 held the boundary\n"),
                "the environ of process 7 held the boundary",
            ),
        ];
        for (what, body, why) in cases {
            let out = format!(
                "{}{}{}\n{B} DONE\n",
                section("a", "first", "", 0),
                section("b", &body, "", 0),
                section("c", "last", "", 0)
            );
            let f = parse(out.as_bytes(), B);
            let get = |n: &str| f.sections.iter().find(|s| s.name == n);
            assert_eq!(
                get("a").map(|s| s.body.clone()),
                Some(b"first".to_vec()),
                "{what}"
            );
            assert_eq!(
                get("c").map(|s| s.body.clone()),
                Some(b"last".to_vec()),
                "{what}"
            );
            assert!(get("a").is_some_and(|s| s.tampered.is_none()), "{what}");
            assert!(get("c").is_some_and(|s| s.tampered.is_none()), "{what}");
            let t = f
                .sections
                .iter()
                .filter(|s| s.name != "a" && s.name != "c")
                .find_map(|s| s.tampered.clone());
            match t {
                Some(t) if why.is_empty() || t == why => {}
                other => panic!("{what}: {other:?}"),
            }
        }
    }

    /// A file whose name is not UTF-8 (Latin-1 `caf\xe9.service` under an ISO-8859-1 locale)
    /// is one more file record: the section is not tampered, its neighbours are whole, and the
    /// name is kept lossily for display.
    #[test]
    fn a_name_that_is_not_utf8_is_a_file_record() {
        let body = format!(
            "{B} F ok unit 1700000000 4 /etc/systemd/system/caf\u{e9}.service\nabc\n{B} F ok unit 1700000000 2 /etc/systemd/system/b.service\nx\n"
        )
        .replace('\u{e9}', "\u{1}");
        // The Latin-1 byte itself, in place of the marker character.
        let body: Vec<u8> = body
            .into_bytes()
            .into_iter()
            .map(|c| if c == 1 { 0xe9 } else { c })
            .collect();
        let mut out = section("a", "first", "", 0).into_bytes();
        out.extend_from_slice(format!("\n{B} BEGIN units\n").as_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(
            format!("\n{B} ERR units\n{B} rc 0\n\n{B} END units 1 2\n").as_bytes(),
        );
        out.extend_from_slice(format!("{}\n{B} DONE\n", section("c", "last", "", 0)).as_bytes());
        let f = parse(&out, B);
        assert!(f.done);
        let units = f.sections.iter().find(|s| s.name == "units").unwrap();
        assert_eq!(units.tampered, None);
        assert!(f.sections.iter().all(|s| s.tampered.is_none()));
        let r = records(&units.body, B);
        assert_eq!(r.len(), 2, "{r:?}");
        let h = file_header(&r[0].header);
        assert_eq!(h.path, "/etc/systemd/system/caf\u{fffd}.service");
        assert_eq!(r[0].data, b"abc");
        assert_eq!(
            file_header(&r[1].header).path,
            "/etc/systemd/system/b.service"
        );
    }

    #[test]
    fn incomplete_section_kept() {
        let out = format!("\n{B} BEGIN a\npartial output");
        let f = parse(out.as_bytes(), B);
        assert!(!f.done);
        assert_eq!(f.sections.len(), 1);
        assert!(!f.sections[0].complete);
        assert_eq!(f.sections[0].body, b"partial output");
    }
}
