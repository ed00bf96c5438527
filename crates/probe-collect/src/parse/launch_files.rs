//! The `launch_files` section: files read as a launch's text because other evidence names them
//! (the compose files a server container's labels name, the config files a running launch's
//! options name, the Python script a running server runs), one `R lfile KIND NAMED_BY` record
//! followed by the file's own record.

use probe_model::{LaunchFile, LaunchFileKind, SectionStatus};

use crate::frame::{FileStatus, file_header, records};
use crate::sanitize::{sanitize_line, sanitize_terminal};

/// Files kept from one section.
const MAX_FILES: usize = 32;

/// Parses the section; `cap` is the bound each file was read to (a file that fills it is
/// marked truncated).
pub fn parse(body: &[u8], boundary: &str, cap: usize) -> Vec<LaunchFile> {
    let mut out = Vec::new();
    let mut named: Option<(LaunchFileKind, String)> = None;
    for r in records(body, boundary) {
        match r.kind {
            'R' => named = r.header.strip_prefix("lfile ").and_then(named_by),
            'F' => {
                let Some((kind, by)) = named.take() else {
                    continue;
                };
                if out.len() < MAX_FILES {
                    out.push(file(kind, by, &r.header, r.data, cap));
                }
            }
            _ => {}
        }
    }
    out
}

/// `compose container:vllm-1` → the kind and the evidence that named the file.
fn named_by(rest: &str) -> Option<(LaunchFileKind, String)> {
    let (kind, by) = rest.trim().split_once(' ')?;
    let kind = match kind {
        "compose" => LaunchFileKind::Compose,
        "config" => LaunchFileKind::EngineConfig,
        "script" => LaunchFileKind::PythonScript,
        _ => return None,
    };
    Some((kind, sanitize_line(by.trim())))
}

fn file(
    kind: LaunchFileKind,
    named_by: String,
    header: &str,
    data: &[u8],
    cap: usize,
) -> LaunchFile {
    let h = file_header(header);
    let mut f = LaunchFile {
        kind,
        path: sanitize_line(&h.path),
        named_by,
        mtime: h.mtime,
        ..LaunchFile::default()
    };
    match &h.status {
        FileStatus::Ok => match std::str::from_utf8(data) {
            Ok(text) => {
                f.truncated = data.len() >= cap;
                f.text = sanitize_terminal(text);
                if f.truncated {
                    f.status = SectionStatus::Truncated;
                    f.message = Some(format!("read up to {cap} bytes"));
                }
            }
            Err(_) => {
                f.status = SectionStatus::Failed;
                f.message = Some("not UTF-8 text: not read".into());
            }
        },
        _ => {
            f.status = h.section_status().0;
            f.message = Some(h.describe());
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(records: &[(&str, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        for (h, d) in records {
            b.extend_from_slice(format!("\nB {h}\n{d}").as_bytes());
        }
        b
    }

    #[test]
    fn files_with_what_named_them() {
        let b = body(&[
            ("R lfile compose container:vllm-1", ""),
            (
                "F ok compose 1793361601 40 /srv/llm/compose.yaml",
                "services:\n  vllm:\n    image: x\x1b[2J\n",
            ),
            ("R lfile compose container:vllm-1", ""),
            ("F symlink compose - - /srv/llm/compose.gpu.yaml", ""),
            ("R lfile compose container:b", ""),
            ("F fifo compose - - /srv/b/compose.yaml", ""),
            // A record no `lfile` names, and a kind the script never writes.
            ("F ok compose 1 1 /etc/passwd", "root:x:0:0"),
            ("R lfile unit container:c", ""),
            ("F ok compose 1 1 /srv/c/compose.yaml", "x"),
        ]);
        let got = parse(&b, "B", 1 << 20);
        let brief: Vec<(&str, &str, SectionStatus, Option<&str>)> = got
            .iter()
            .map(|f| {
                (
                    f.path.as_str(),
                    f.named_by.as_str(),
                    f.status,
                    f.message.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            brief,
            [
                (
                    "/srv/llm/compose.yaml",
                    "container:vllm-1",
                    SectionStatus::Ok,
                    None
                ),
                (
                    "/srv/llm/compose.gpu.yaml",
                    "container:vllm-1",
                    SectionStatus::PermissionDenied,
                    Some("symbolic link: not followed")
                ),
                (
                    "/srv/b/compose.yaml",
                    "container:b",
                    SectionStatus::Failed,
                    Some("not a regular file (a FIFO): not read")
                ),
            ]
        );
        assert_eq!(got[0].mtime, Some(1_793_361_601));
        assert!(!got[0].text.contains('\u{1b}'), "{:?}", got[0].text);
        assert!(got[0].text.starts_with("services:\n  vllm:\n"));
    }

    #[test]
    fn a_file_that_fills_the_bound_is_truncated() {
        let b = body(&[
            ("R lfile compose container:a", ""),
            ("F ok compose 1 99 /srv/a/compose.yaml", "services: {}"),
        ]);
        let got = parse(&b, "B", 12);
        assert_eq!(got[0].status, SectionStatus::Truncated);
        assert!(got[0].truncated);
        let mut raw = body(&[
            ("R lfile compose container:a", ""),
            ("F ok compose 1 2 /srv/a/compose.yaml", ""),
        ]);
        raw.extend_from_slice(b"\xff\xfe");
        let got = parse(&raw, "B", 1 << 20);
        assert_eq!(got[0].status, SectionStatus::Failed);
    }
}
