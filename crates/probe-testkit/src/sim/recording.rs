//! A recorded collection: every section a real collection of one fixture host printed, with the
//! run's boundary, the host's machine-id and its host name replaced by placeholders, so that
//! one recording can answer for any number of simulated hosts and any session's boundary.
//!
//! The file is binary-safe and read by hand (no serde in the testkit):
//!
//! ```text
//! probe-sim-recording 1
//! fingerprint <sha256 of the collection script's commands, hex>
//! source <fixture name>
//! machine-id <recorded machine-id>
//! hostname <recorded host name>
//! drift <text> <replacement of the same length>
//! section <name> <sha256 of the script's `sec` call, hex> <length>
//! <length bytes: from "\n<B> BEGIN <name>" up to the section's END line, included>
//! ...
//! end
//! ```
//!
//! A section's key is its `sec` call in the script (name, limits and command): a changed probe
//! no longer matches its recording, and the simulator counts it as stale instead of answering.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

const MAGIC: &str = "probe-sim-recording 1";
/// Placeholders; a recorded output that already holds one cannot be recorded.
pub const BOUNDARY_MARK: &str = "@@probe-sim:B@@";
pub const MACHINE_ID_MARK: &str = "@@probe-sim:MID@@";
pub const HOSTNAME_MARK: &str = "@@probe-sim:HOST@@";

/// The SHA-256 of `parts`, each followed by a NUL, as hex.
pub fn fingerprint<S: AsRef<str>>(parts: &[S]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_ref().as_bytes());
        h.update([0u8]);
    }
    hex(&h.finalize())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn sha_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// One section as recorded (placeholders in place of the boundary, machine-id and host name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedSection {
    /// SHA-256 of the `sec` call that produced it.
    pub call_sha: String,
    pub bytes: Vec<u8>,
}

/// A whole recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// Fingerprint of the collection script the recording was made with ([`fingerprint`] of
    /// `probe_collect::script::commands()`).
    pub fingerprint: String,
    /// The fixture host it was recorded from.
    pub source: String,
    pub machine_id: String,
    pub hostname: String,
    /// What a drifting host changes between runs: (text, replacement of the same length).
    pub drift: (String, String),
    pub sections: BTreeMap<String, RecordedSection>,
}

/// One exec channel of a real collection, as the recorder saw it.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The script sent on stdin.
    pub script: Vec<u8>,
    pub stdout: Vec<u8>,
}

/// A `sec` call of a script: the section's name and the SHA-256 of the call's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecCall {
    pub name: String,
    pub sha: String,
}

/// What a script asks: its boundary and its sections in order. `None`: not a collection script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptAsk {
    pub boundary: String,
    pub calls: Vec<SecCall>,
}

/// Reads the boundary (`B='<hex>'`, the first line) and the `sec` calls (one after another at
/// the end of the script, each a line of words and single-quoted strings that may span lines).
pub fn parse_script(script: &[u8]) -> Option<ScriptAsk> {
    let text = std::str::from_utf8(script).ok()?;
    let first = text.lines().next()?;
    let boundary = first.strip_prefix("B='")?.strip_suffix('\'')?;
    if boundary.is_empty() || !boundary.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let start = text.find("\nsec ")? + 1;
    let mut calls = Vec::new();
    let mut rest = text.get(start..)?;
    while let Some(body) = rest.strip_prefix("sec ") {
        let len = call_len(body)? + 4;
        let call = rest.get(..len)?;
        let name = body.split(' ').next().unwrap_or("").to_string();
        calls.push(SecCall {
            name,
            sha: sha_hex(call.as_bytes()),
        });
        rest = rest.get(len..)?.strip_prefix('\n')?;
    }
    Some(ScriptAsk {
        boundary: boundary.to_string(),
        calls,
    })
}

/// Length of one call's text up to its ending newline (outside single quotes; `\'` outside them
/// is a quote character, as `sq` writes one).
fn call_len(s: &str) -> Option<usize> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !quoted => escaped = true,
            '\'' => quoted = !quoted,
            '\n' if !quoted => return Some(i),
            _ => {}
        }
    }
    None
}

/// Splits a group's output into its sections: name -> bytes from `\n<B> BEGIN name` to the end
/// of its `END` line.
fn split_sections(stdout: &[u8], boundary: &str) -> Vec<(String, Vec<u8>)> {
    let begin = format!("\n{boundary} BEGIN ");
    let mut starts: Vec<usize> = memchr::memmem::find_iter(stdout, begin.as_bytes()).collect();
    let done = memchr::memmem::find(stdout, format!("\n{boundary} DONE").as_bytes());
    starts.push(done.unwrap_or(stdout.len()));
    starts
        .windows(2)
        .filter_map(|w| {
            let chunk = stdout.get(w[0]..w[1])?;
            let name_at = begin.len();
            let line = chunk.get(name_at..)?;
            let end = line.iter().position(|&b| b == b'\n')?;
            let name = std::str::from_utf8(line.get(..end)?).ok()?.to_string();
            Some((name, chunk.to_vec()))
        })
        .collect()
}

fn replace_all(data: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return data.to_vec();
    }
    let mut out = Vec::with_capacity(data.len());
    let mut last = 0;
    for at in memchr::memmem::find_iter(data, from) {
        if at < last {
            continue;
        }
        out.extend_from_slice(&data[last..at]);
        out.extend_from_slice(to);
        last = at + from.len();
    }
    out.extend_from_slice(&data[last..]);
    out
}

/// What the recorder knows besides the exchanges.
#[derive(Debug, Clone)]
pub struct RecordMeta {
    pub fingerprint: String,
    pub source: String,
    pub machine_id: String,
    pub hostname: String,
    pub drift: (String, String),
}

/// Why a recording cannot be made, read or used.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("drift {from:?} -> {to:?}: not a same-length change")]
    Drift { from: String, to: String },
    #[error("the recorded output already holds {0}")]
    HoldsMark(&'static str),
    #[error("drift text {0:?} occurs in no section")]
    DriftNowhere(String),
    #[error("not a probe-sim recording (version 1)")]
    NotARecording,
    #[error("drift: two words expected")]
    DriftWords,
    #[error("bad line {0:?}")]
    BadLine(String),
    #[error("bad length in {0:?}")]
    BadLength(String),
    #[error("section {0}: no newline after its bytes")]
    NoNewline(String),
    #[error("length overflow")]
    LengthOverflow,
    #[error("recording ends early")]
    EndsEarly,
    #[error("a header line is not UTF-8")]
    NotUtf8,
    #[error("expected {key}, got {line:?}")]
    Expected { key: String, line: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    In {
        path: std::path::PathBuf,
        #[source]
        source: Box<RecordingError>,
    },
    #[error(
        "the simulator's recording of {source_host} is stale: it was made with collection script \
         {made_with}, the script is now {now}; record it again with `cargo run -p probe-collect \
         --example sim_record` (needs the fixture hosts)"
    )]
    Stale {
        source_host: String,
        made_with: String,
        now: String,
    },
}

impl Recording {
    /// Builds a recording from a collection's exec channels. Fails when a placeholder already
    /// occurs in the output, when the drift text is missing from it or changes its length.
    pub fn from_exchanges(
        meta: RecordMeta,
        exchanges: &[Exchange],
    ) -> Result<Recording, RecordingError> {
        let (from, to) = &meta.drift;
        if from.len() != to.len() || from.is_empty() || from == to {
            return Err(RecordingError::Drift {
                from: from.clone(),
                to: to.clone(),
            });
        }
        let mut sections = BTreeMap::new();
        for ex in exchanges {
            let Some(ask) = parse_script(&ex.script) else {
                continue;
            };
            for mark in [BOUNDARY_MARK, MACHINE_ID_MARK, HOSTNAME_MARK] {
                if memchr::memmem::find(&ex.stdout, mark.as_bytes()).is_some() {
                    return Err(RecordingError::HoldsMark(mark));
                }
            }
            let mut out = replace_all(
                &ex.stdout,
                ask.boundary.as_bytes(),
                BOUNDARY_MARK.as_bytes(),
            );
            out = replace_all(&out, meta.machine_id.as_bytes(), MACHINE_ID_MARK.as_bytes());
            out = replace_all(&out, meta.hostname.as_bytes(), HOSTNAME_MARK.as_bytes());
            for (name, bytes) in split_sections(&out, BOUNDARY_MARK) {
                let Some(call) = ask.calls.iter().find(|c| c.name == name) else {
                    continue;
                };
                sections.insert(
                    name,
                    RecordedSection {
                        call_sha: call.sha.clone(),
                        bytes,
                    },
                );
            }
        }
        let found = sections
            .values()
            .any(|s| memchr::memmem::find(&s.bytes, from.as_bytes()).is_some());
        if !found {
            return Err(RecordingError::DriftNowhere(from.clone()));
        }
        Ok(Recording {
            fingerprint: meta.fingerprint,
            source: meta.source,
            machine_id: meta.machine_id,
            hostname: meta.hostname,
            drift: meta.drift,
            sections,
        })
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!(
            "{MAGIC}\nfingerprint {}\nsource {}\nmachine-id {}\nhostname {}\ndrift {} {}\n",
            self.fingerprint,
            self.source,
            self.machine_id,
            self.hostname,
            self.drift.0,
            self.drift.1
        )
        .into_bytes();
        for (name, s) in &self.sections {
            out.extend_from_slice(
                format!("section {name} {} {}\n", s.call_sha, s.bytes.len()).as_bytes(),
            );
            out.extend_from_slice(&s.bytes);
            out.push(b'\n');
        }
        out.extend_from_slice(b"end\n");
        out
    }

    /// Reads a recording file.
    pub fn parse(data: &[u8]) -> Result<Recording, RecordingError> {
        let mut r = Reader { data, pos: 0 };
        if r.line()? != MAGIC {
            return Err(RecordingError::NotARecording);
        }
        let fingerprint = r.field("fingerprint")?;
        let source = r.field("source")?;
        let machine_id = r.field("machine-id")?;
        let hostname = r.field("hostname")?;
        let drift = r.field("drift")?;
        let (from, to) = drift.split_once(' ').ok_or(RecordingError::DriftWords)?;
        let mut sections = BTreeMap::new();
        loop {
            let line = r.line()?;
            if line == "end" {
                break;
            }
            let w: Vec<&str> = line.split(' ').collect();
            let [kw, name, sha, len] = w.as_slice() else {
                return Err(RecordingError::BadLine(line.to_string()));
            };
            if *kw != "section" {
                return Err(RecordingError::BadLine(line.to_string()));
            }
            let len: usize = len
                .parse()
                .map_err(|_| RecordingError::BadLength(line.to_string()))?;
            let bytes = r.take(len)?.to_vec();
            if r.take(1)? != b"\n" {
                return Err(RecordingError::NoNewline((*name).to_string()));
            }
            sections.insert(
                (*name).to_string(),
                RecordedSection {
                    call_sha: (*sha).to_string(),
                    bytes,
                },
            );
        }
        Ok(Recording {
            fingerprint,
            source,
            machine_id,
            hostname,
            drift: (from.to_string(), to.to_string()),
            sections,
        })
    }

    pub fn load(path: &Path) -> Result<Recording, RecordingError> {
        let data = std::fs::read(path).map_err(|source| RecordingError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Recording::parse(&data).map_err(|e| RecordingError::In {
            path: path.to_path_buf(),
            source: Box::new(e),
        })
    }

    /// Fails loudly when the collection script changed since the recording was made.
    pub fn check_fresh(&self, fingerprint: &str) -> Result<(), RecordingError> {
        if self.fingerprint == fingerprint {
            return Ok(());
        }
        Err(RecordingError::Stale {
            source_host: self.source.clone(),
            made_with: self.fingerprint.clone(),
            now: fingerprint.to_string(),
        })
    }
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordingError> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or(RecordingError::LengthOverflow)?;
        let s = self
            .data
            .get(self.pos..end)
            .ok_or(RecordingError::EndsEarly)?;
        self.pos = end;
        Ok(s)
    }

    fn line(&mut self) -> Result<&'a str, RecordingError> {
        let rest = self.data.get(self.pos..).ok_or(RecordingError::EndsEarly)?;
        let n = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or(RecordingError::EndsEarly)?;
        let line = self.take(n)?;
        self.pos += 1;
        std::str::from_utf8(line).map_err(|_| RecordingError::NotUtf8)
    }

    fn field(&mut self, key: &str) -> Result<String, RecordingError> {
        let line = self.line()?;
        line.strip_prefix(key)
            .and_then(|v| v.strip_prefix(' '))
            .map(str::to_string)
            .ok_or_else(|| RecordingError::Expected {
                key: key.to_string(),
                line: line.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "0123456789abcdef0123456789abcdef";

    fn script(calls: &[&str]) -> Vec<u8> {
        let mut s = format!("B='{B}'\nWANT_SUDO=0\nP='x\nsec() {{ :; }}\n'\n");
        for c in calls {
            s.push_str(c);
            s.push('\n');
        }
        s.push_str("printf '\\n%s DONE\\n' \"$B\"\n");
        s.into_bytes()
    }

    fn out(names: &[&str]) -> Vec<u8> {
        let mut o = String::new();
        for n in names {
            o.push_str(&format!(
                "\n{B} BEGIN {n}\nbody of {n} on host-one mid 0000aaaa driver 550.1\n{B} ERR {n}\n{B} rc 0\n{B} END {n} 1 2\n"
            ));
        }
        o.push_str(&format!("\n{B} DONE\n"));
        o.into_bytes()
    }

    fn meta() -> RecordMeta {
        RecordMeta {
            fingerprint: "f".into(),
            source: "fx".into(),
            machine_id: "0000aaaa".into(),
            hostname: "host-one".into(),
            drift: ("550.1".into(), "550.2".into()),
        }
    }

    #[test]
    fn script_calls_are_read_across_quoted_newlines() {
        let s = script(&[
            "sec host 5 100 0 '' 'uname -a'",
            "sec gpu 5 100 0 'host' 'a\nb '\\'' c'",
        ]);
        let ask = parse_script(&s).unwrap();
        assert_eq!(ask.boundary, B);
        let names: Vec<&str> = ask.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["host", "gpu"]);
        let changed = script(&[
            "sec host 5 100 0 '' 'uname -r'",
            "sec gpu 5 100 0 'host' 'a\nb '\\'' c'",
        ]);
        let other = parse_script(&changed).unwrap();
        assert_ne!(
            ask.calls[0].sha, other.calls[0].sha,
            "a changed command changes the key"
        );
        assert_eq!(ask.calls[1].sha, other.calls[1].sha);
    }

    #[test]
    fn not_a_collection_script() {
        for s in [&b"true"[..], b"B='xyz'\nsec a", b"", b"\xff\xfe"] {
            assert_eq!(parse_script(s), None, "{s:?}");
        }
    }

    #[test]
    fn recording_round_trips_and_replaces_identity() {
        let ex = Exchange {
            script: script(&[
                "sec host 5 100 0 '' 'uname -a'",
                "sec gpu 5 100 0 '' 'nvidia-smi'",
            ]),
            stdout: out(&["host", "gpu"]),
        };
        let rec = Recording::from_exchanges(meta(), &[ex]).unwrap();
        assert_eq!(rec.sections.len(), 2);
        let host = &rec.sections["host"].bytes;
        let text = String::from_utf8_lossy(host);
        assert!(
            text.starts_with(&format!("\n{BOUNDARY_MARK} BEGIN host\n")),
            "{text}"
        );
        assert!(
            text.contains(HOSTNAME_MARK) && text.contains(MACHINE_ID_MARK),
            "{text}"
        );
        assert!(!text.contains(B) && !text.contains("DONE"), "{text}");
        assert_eq!(Recording::parse(&rec.to_bytes()).unwrap(), rec);
    }

    #[test]
    fn bad_recordings_are_refused() {
        let ex = Exchange {
            script: script(&["sec host 5 100 0 '' 'uname -a'"]),
            stdout: out(&["host"]),
        };
        let mut m = meta();
        m.drift = ("550.1".into(), "550.10".into());
        assert!(Recording::from_exchanges(m, std::slice::from_ref(&ex)).is_err());
        let mut m = meta();
        m.drift = ("999.9".into(), "999.8".into());
        assert!(Recording::from_exchanges(m, std::slice::from_ref(&ex)).is_err());
        let good = Recording::from_exchanges(meta(), &[ex]).unwrap().to_bytes();
        for cut in [0, 10, good.len() / 2, good.len() - 1] {
            assert!(Recording::parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        assert!(good.starts_with(MAGIC.as_bytes()));
    }

    #[test]
    fn stale_recording_says_how_to_record_again() {
        let rec = Recording::from_exchanges(
            meta(),
            &[Exchange {
                script: script(&["sec host 5 100 0 '' 'uname -a'"]),
                stdout: out(&["host"]),
            }],
        )
        .unwrap();
        assert!(rec.check_fresh("f").is_ok());
        let err = rec.check_fresh("g").unwrap_err().to_string();
        assert!(err.contains("stale") && err.contains("sim_record"), "{err}");
    }
}
