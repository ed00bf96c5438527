//! Shell histories: bash (`#<epoch>` lines, multi-line entries), zsh extended
//! (`: <epoch>:<dur>;cmd`, `\` continuations, metafied bytes), fish (`- cmd:` / `when:`).

use probe_model::{HistoryEntry, HistoryFile, SectionStatus, ShellKind, UnixTime};

use crate::frame::{file_header, records};
use crate::sanitize::sanitize_terminal;

/// At most this many entries per file are kept (the newest).
pub const MAX_ENTRIES: usize = 50_000;
/// A single command longer than this is cut.
const MAX_COMMAND: usize = 16 * 1024;

/// A history file that was listed but not read (symlink, unreadable, foreign owner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub user: String,
    pub path: String,
    pub reason: SectionStatus,
    pub why: String,
}

/// Parses the `history` section: the files read and those skipped.
pub fn parse(body: &[u8], boundary: &str) -> (Vec<HistoryFile>, Vec<Skipped>) {
    let mut files: Vec<HistoryFile> = Vec::new();
    let mut skipped = Vec::new();
    for r in records(body, boundary) {
        match r.kind {
            'F' => {
                let h = file_header(&r.header);
                let user = crate::sanitize::sanitize_line(&h.tag);
                if !h.is_ok() {
                    let (reason, message) = h.section_status();
                    let why = match (reason, message) {
                        (_, Some(message)) => message,
                        (SectionStatus::PermissionDenied, None) => "permission denied",
                        (SectionStatus::NotPresent, None) => "missing",
                        _ => "not a regular file",
                    };
                    skipped.push(Skipped {
                        user,
                        path: h.path,
                        reason,
                        why: why.into(),
                    });
                    continue;
                }
                if files.iter().any(|f| f.path == h.path) {
                    continue;
                }
                let truncated = h.size.is_some_and(|s| s > r.data.len() as u64);
                let shell = kind_of(&h.path, r.data);
                let entries = parse_entries(shell, r.data, truncated);
                files.push(HistoryFile {
                    user,
                    path: h.path,
                    shell,
                    mtime: h.mtime,
                    size: h.size,
                    truncated,
                    entries,
                    implausible_stamps: implausible_stamps(shell, r.data),
                });
            }
            'R' => {
                let mut it = r.header.splitn(3, ' ');
                let kind = it.next().unwrap_or("");
                let user = crate::sanitize::sanitize_line(it.next().unwrap_or(""));
                let path = crate::sanitize::sanitize_line(it.next().unwrap_or(""));
                let why = match kind {
                    "outside" => "HISTFILE outside the user's home: not read",
                    "foreign" => "HISTFILE owned by another user: not read",
                    _ => continue,
                };
                skipped.push(Skipped {
                    user,
                    path,
                    reason: SectionStatus::PermissionDenied,
                    why: why.into(),
                });
            }
            _ => {}
        }
    }
    (files, skipped)
}

/// Shell of a history file, by name and then by content.
pub fn kind_of(path: &str, data: &[u8]) -> ShellKind {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name == "fish_history" {
        return ShellKind::Fish;
    }
    if name == ".zsh_history" || name == ".zhistory" {
        return ShellKind::Zsh;
    }
    if name == ".bash_history" {
        return ShellKind::Bash;
    }
    if name == ".sh_history" || name == ".ash_history" {
        return ShellKind::Sh;
    }
    // Custom HISTFILE or `.history`: look at the content.
    let head =
        String::from_utf8_lossy(data.get(..data.len().min(4096)).unwrap_or(&[])).into_owned();
    if head.lines().any(|l| zsh_prefix(l).is_some()) {
        ShellKind::Zsh
    } else if head.lines().any(|l| l.starts_with("- cmd: ")) {
        ShellKind::Fish
    } else if head.lines().any(|l| bash_stamp(l).is_some()) {
        ShellKind::Bash
    } else {
        ShellKind::Other
    }
}

/// Parses entries of one file. `truncated`: the data is a tail, its first line is partial.
pub fn parse_entries(shell: ShellKind, data: &[u8], truncated: bool) -> Vec<HistoryEntry> {
    let data = if truncated {
        // Drop the partial first line of a tail.
        match data.iter().position(|&c| c == b'\n') {
            Some(i) => data.get(i + 1..).unwrap_or(&[]),
            None => &[],
        }
    } else {
        data
    };
    let mut out = match shell {
        ShellKind::Zsh => zsh(&unmetafy(data)),
        ShellKind::Fish => fish(&String::from_utf8_lossy(data)),
        _ => bash(&String::from_utf8_lossy(data)),
    };
    if out.len() > MAX_ENTRIES {
        out.drain(..out.len() - MAX_ENTRIES);
    }
    for (i, e) in out.iter_mut().enumerate() {
        e.index = u32::try_from(i).unwrap_or(u32::MAX);
        e.command = clip(&sanitize_terminal(&e.command));
    }
    out
}

fn clip(s: &str) -> String {
    if s.len() <= MAX_COMMAND {
        return s.to_string();
    }
    let mut end = MAX_COMMAND;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or("").to_string()
}

/// A bash timestamp line: `#` and 1 to 12 digits, as `HISTTIMEFORMAT` makes bash write them.
fn stamp_line(l: &str) -> Option<UnixTime> {
    let d = l.strip_prefix('#')?;
    (!d.is_empty() && d.len() <= 12 && d.bytes().all(|c| c.is_ascii_digit()))
        .then(|| d.parse().ok())
        .flatten()
}

/// A bash timestamp line with a plausible time.
fn bash_stamp(l: &str) -> Option<UnixTime> {
    stamp_line(l).filter(|t| probe_model::civil::PLAUSIBLE.contains(t))
}

/// How many timestamp lines of a bash history hold no plausible time.
pub fn implausible_stamps(shell: ShellKind, data: &[u8]) -> u64 {
    if matches!(shell, ShellKind::Zsh | ShellKind::Fish) {
        return 0;
    }
    let text = String::from_utf8_lossy(data);
    if !stamped(&text) {
        return 0;
    }
    text.lines()
        .filter(|l| stamp_line(l).is_some() && bash_stamp(l).is_none())
        .count() as u64
}

/// Whether a bash history holds timestamps: a plausible one anywhere, or a stamp line first
/// (bash writes one before every entry, so a file of a host whose clock was dead starts with
/// one too).
fn stamped(text: &str) -> bool {
    text.lines().any(|l| bash_stamp(l).is_some())
        || text
            .lines()
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| stamp_line(l).is_some())
}

fn bash(text: &str) -> Vec<HistoryEntry> {
    let stamped = stamped(text);
    let mut out: Vec<HistoryEntry> = Vec::new();
    if !stamped {
        for l in text.lines() {
            if !l.trim().is_empty() {
                out.push(HistoryEntry {
                    index: 0,
                    time: None,
                    command: l.to_string(),
                });
            }
        }
        return out;
    }
    // With timestamps, everything between two stamps is one (possibly multi-line) entry.
    let mut cur: Option<HistoryEntry> = None;
    for l in text.lines() {
        if let Some(t) = stamp_line(l) {
            if let Some(e) = cur.take().filter(|e| !e.command.is_empty()) {
                out.push(e);
            }
            cur = Some(HistoryEntry {
                index: 0,
                time: probe_model::civil::PLAUSIBLE.contains(&t).then_some(t),
                command: String::new(),
            });
            continue;
        }
        match cur.as_mut() {
            Some(e) => {
                if !e.command.is_empty() {
                    e.command.push('\n');
                }
                e.command.push_str(l);
            }
            None if !l.trim().is_empty() => out.push(HistoryEntry {
                index: 0,
                time: None,
                command: l.to_string(),
            }),
            None => {}
        }
    }
    if let Some(e) = cur.filter(|e| !e.command.is_empty()) {
        out.push(e);
    }
    out
}

/// `: 1700000000:0;cmd` → (time, cmd).
fn zsh_prefix(l: &str) -> Option<(UnixTime, &str)> {
    let rest = l.strip_prefix(": ")?;
    let (ts, rest) = rest.split_once(':')?;
    let (dur, cmd) = rest.split_once(';')?;
    if ts.is_empty()
        || !ts.bytes().all(|c| c.is_ascii_digit())
        || !dur.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    Some((ts.parse().ok()?, cmd))
}

fn zsh(text: &str) -> Vec<HistoryEntry> {
    let mut out: Vec<HistoryEntry> = Vec::new();
    let mut continued = false;
    for l in text.lines() {
        if continued && let Some(e) = out.last_mut() {
            e.command.push('\n');
            e.command.push_str(l.strip_suffix('\\').unwrap_or(l));
            continued = l.ends_with('\\');
            continue;
        }
        let (time, cmd) = match zsh_prefix(l) {
            Some((t, c)) => (Some(t), c),
            None if l.trim().is_empty() => continue,
            None => (None, l),
        };
        continued = cmd.ends_with('\\');
        out.push(HistoryEntry {
            index: 0,
            time,
            command: cmd.strip_suffix('\\').unwrap_or(cmd).to_string(),
        });
    }
    out
}

/// zsh stores bytes 0x83-0xa2 "metafied": 0x83 then the byte xor 0x20.
fn unmetafy(data: &[u8]) -> String {
    let mut out = Vec::with_capacity(data.len());
    let mut it = data.iter();
    while let Some(&c) = it.next() {
        if c == 0x83 {
            if let Some(&n) = it.next() {
                out.push(n ^ 0x20);
            }
        } else {
            out.push(c);
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn fish(text: &str) -> Vec<HistoryEntry> {
    let mut out: Vec<HistoryEntry> = Vec::new();
    for l in text.lines() {
        if let Some(cmd) = l.strip_prefix("- cmd: ") {
            out.push(HistoryEntry {
                index: 0,
                time: None,
                command: fish_unescape(cmd),
            });
        } else if let Some(when) = l.trim_start().strip_prefix("when: ")
            && l.starts_with("  ")
            && let Some(e) = out.last_mut()
        {
            e.time = when.trim().parse().ok();
        }
    }
    out
}

fn fish_unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('n') => out.push('\n'),
                Some('\\') => out.push('\\'),
                Some(o) => {
                    out.push('\\');
                    out.push(o);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_clocks_stamps_are_stamps_not_commands() {
        let t = "#100000\nnvidia-smi\n#100060\nsystemctl restart vllm\n#1795000000\nls\n";
        let e = parse_entries(ShellKind::Bash, t.as_bytes(), false);
        let got: Vec<(Option<i64>, &str)> =
            e.iter().map(|e| (e.time, e.command.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (None, "nvidia-smi"),
                (None, "systemctl restart vllm"),
                (Some(1_795_000_000), "ls")
            ]
        );
        assert_eq!(implausible_stamps(ShellKind::Bash, t.as_bytes()), 2);
        // Only stamps of a dead clock: still stamps.
        let e = parse_entries(ShellKind::Bash, b"#5\nls\n#6\npwd\n", false);
        assert_eq!(
            e.iter().map(|e| e.command.as_str()).collect::<Vec<_>>(),
            ["ls", "pwd"]
        );
        // A history without stamps keeps a `#42` comment as a command.
        let e = parse_entries(ShellKind::Bash, b"ls\n#42\npwd\n", false);
        assert_eq!(e.len(), 3);
        assert_eq!(implausible_stamps(ShellKind::Bash, b"ls\n#42\npwd\n"), 0);
    }

    #[test]
    fn bash_with_timestamps_and_multiline() {
        let t = "#1761811200\ncd /opt\n#1761811260\npython -m sglang.launch_server \\\n  --model-path /models/q --tp 2\n#1761811300\nls\n";
        let e = parse_entries(ShellKind::Bash, t.as_bytes(), false);
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].time, Some(1_761_811_200));
        assert_eq!(
            e[1].command,
            "python -m sglang.launch_server \\\n  --model-path /models/q --tp 2"
        );
        assert_eq!(e[1].time, Some(1_761_811_260));
        assert_eq!(e[2].index, 2);
    }

    #[test]
    fn bash_plain_and_truncated() {
        let e = parse_entries(ShellKind::Bash, b"l -part\nls\n\nnvidia-smi\n", true);
        assert_eq!(
            e.iter().map(|e| e.command.as_str()).collect::<Vec<_>>(),
            ["ls", "nvidia-smi"]
        );
        assert!(e.iter().all(|e| e.time.is_none()));
    }

    #[test]
    fn zsh_extended() {
        let t = ": 1761811200:0;vllm serve m \\\n--tp 2\n: 1761811300:5;ls\nplain\n";
        let e = parse_entries(ShellKind::Zsh, t.as_bytes(), false);
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].command, "vllm serve m \n--tp 2");
        assert_eq!(e[1].time, Some(1_761_811_300));
        assert_eq!(e[2].time, None);
        // Metafied byte: 0x83 0xa3 is 0x83 (first byte of U+00C3? no: raw 0x83 xor) — just no panic.
        let _ = parse_entries(ShellKind::Zsh, b": 1:0;\x83\xa3\x83", false);
    }

    #[test]
    fn fish_history() {
        let t = "- cmd: vllm serve Qwen/Qwen3-8B --port 8000\n  when: 1761811200\n  paths:\n    - /tmp\n- cmd: echo a\\nb\n  when: 1761811300\n";
        let e = parse_entries(ShellKind::Fish, t.as_bytes(), false);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].time, Some(1_761_811_200));
        assert_eq!(e[1].command, "echo a\nb");
    }

    #[test]
    fn escapes_stripped() {
        let e = parse_entries(ShellKind::Bash, b"echo \x1b[2J\x1b]0;pwned\x07hi\n", false);
        assert_eq!(e[0].command, "echo hi");
    }

    #[test]
    fn section_records() {
        let b = "bb";
        let body = format!(
            "\n{b} F ok root 1761811400 20 /root/.bash_history\n#1761811200\nls\n\n{b} F symlink eve - - /home/eve/.bash_history\n\n{b} R outside bob /etc/shadow\n"
        );
        let (f, s) = parse(body.as_bytes(), b);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].user, "root");
        assert_eq!(f[0].mtime, Some(1_761_811_400));
        assert_eq!(f[0].entries.len(), 1);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].path, "/home/eve/.bash_history");
        assert_eq!(s[1].path, "/etc/shadow");
    }
}
