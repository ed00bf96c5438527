//! Package manager history for GPU drivers, CUDA and NCCL: apt history.log, dpkg.log,
//! dnf.rpm.log / yum.log.

use probe_model::PackageEvent;
use regex::Regex;

use crate::config;
use crate::frame::{FileStatus, file_header, records};
use crate::sanitize::{sanitize_line, text};

/// At most this many events are kept (newest).
pub const MAX_EVENTS: usize = 5000;

/// Bytes of a gzip-rotated apt history the script keeps (`tail -c`).
const GZ_APT_TAIL: usize = 1 << 20;

fn sys_re() -> &'static Regex {
    config::system_packages()
}

/// Parses the `pkg_history` section; `tz` is the remote UTC offset (logs use local time).
pub fn parse(body: &[u8], boundary: &str, tz: i64) -> Vec<PackageEvent> {
    let mut out = Vec::new();
    for r in records(body, boundary) {
        match r.kind {
            'F' => {
                let h = file_header(&r.header);
                if h.is_ok() {
                    let truncated = h.size.is_some_and(|s| s > r.data.len() as u64);
                    out.extend(apt_history(&text(r.data), &h.path, tz, truncated));
                }
            }
            'R' => {
                if let Some(path) = r.header.strip_prefix("gz apt ") {
                    // A gzip-rotated apt history: the tail of its text (1 MiB), so a cut
                    // first block is skipped like in a truncated file.
                    let cut = r.data.len() >= GZ_APT_TAIL;
                    out.extend(apt_history(&text(r.data), &sanitize_line(path), tz, cut));
                } else if let Some(path) = r.header.strip_prefix("grep ") {
                    let path = sanitize_line(path);
                    let t = text(r.data);
                    if path.contains("dpkg") {
                        out.extend(dpkg_log(&t, &path, tz));
                    } else {
                        out.extend(dnf_log(&t, &path, tz));
                    }
                }
            }
            _ => {}
        }
    }
    out.sort_by_key(|e| e.time);
    if out.len() > MAX_EVENTS {
        out.drain(..out.len() - MAX_EVENTS);
    }
    out
}

/// The package logs that were there but not read, each with what it was (`/var/log/dpkg.log:
/// not a regular file (a FIFO): not read`): the section says what it met.
pub fn not_read(body: &[u8], boundary: &str) -> Vec<(probe_model::SectionStatus, String)> {
    use probe_model::SectionStatus;
    let mut out = Vec::new();
    for r in records(body, boundary) {
        let (status, what, path) = match r.kind {
            'F' => {
                let h = file_header(&r.header);
                if matches!(h.status, FileStatus::Ok | FileStatus::Missing) {
                    continue;
                }
                let (st, _) = h.section_status();
                (st, h.status.describe(), h.path)
            }
            'R' => {
                let Some((word, path)) = r.header.split_once(' ') else {
                    continue;
                };
                // `nogz` is this section's own word (a rotated log it cannot unpack); the
                // others are file statuses.
                let (st, why) = if word == "nogz" {
                    (
                        SectionStatus::Ok,
                        "gzip-compressed, and no zcat or gzip".to_string(),
                    )
                } else {
                    match FileStatus::from_word(word) {
                        FileStatus::Ok | FileStatus::Missing | FileStatus::Other(_) => continue,
                        status => (status.section_status().0, status.describe()),
                    }
                };
                (st, why, sanitize_line(path))
            }
            _ => continue,
        };
        out.push((status, format!("{path}: {what}")));
    }
    out
}

/// apt `history.log`: blocks `Start-Date:` / `Commandline:` / `Install:` / `Upgrade:` / ...
pub fn apt_history(t: &str, source: &str, tz: i64, truncated: bool) -> Vec<PackageEvent> {
    let mut out = Vec::new();
    let mut time = None;
    let mut started = !truncated;
    for l in t.lines() {
        if let Some(d) = l.strip_prefix("Start-Date:") {
            let d = d.split_whitespace().collect::<Vec<_>>().join(" ");
            time = super::parse_datetime(&d).map(|x| x - tz);
            started = true;
            continue;
        }
        if !started {
            continue;
        }
        let Some((action, list)) = l.split_once(": ") else {
            continue;
        };
        let action = match action {
            "Install" => "install",
            "Upgrade" => "upgrade",
            "Downgrade" => "downgrade",
            "Remove" => "remove",
            "Purge" => "purge",
            "Reinstall" => "reinstall",
            _ => continue,
        };
        for (pkg, versions) in apt_items(list) {
            if !sys_re().is_match(pkg) {
                continue;
            }
            let vers: Vec<&str> = versions.split(", ").filter(|v| *v != "automatic").collect();
            let (from, to) = match action {
                "upgrade" | "downgrade" => (vers.first().copied(), vers.get(1).copied()),
                "remove" | "purge" => (vers.first().copied(), None),
                _ => (None, vers.first().copied()),
            };
            out.push(PackageEvent {
                time,
                manager: "apt".into(),
                action: action.into(),
                package: sanitize_line(pkg.split(':').next().unwrap_or(pkg)),
                from_version: from.map(sanitize_line),
                to_version: to.map(sanitize_line),
                source: source.to_string(),
            });
        }
    }
    out
}

/// The items of an apt history line's list, `name (version, ...)`: each `([^\s,()]+)
/// \(([^()]*)\)` in it, leftmost first, as the regex would find them. By hand, because the
/// regex's captures were most of the cost of a host's apt history (an `Install:` line of a
/// new machine lists hundreds of packages).
fn apt_items(list: &str) -> Vec<(&str, &str)> {
    let is_name = |c: char| !(c.is_whitespace() || matches!(c, ',' | '(' | ')'));
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(start) = list.get(at..).and_then(|r| r.find(is_name)).map(|k| at + k) {
        let rest = list.get(start..).unwrap_or("");
        let end = start + rest.find(|c: char| !is_name(c)).unwrap_or(rest.len());
        at = end;
        let Some(inside) = list.get(end..).and_then(|r| r.strip_prefix(" (")) else {
            continue;
        };
        let from = end + 2;
        if let Some(k) = inside.find(['(', ')'])
            && inside[k..].starts_with(')')
        {
            out.push((&list[start..end], &inside[..k]));
            at = from + k + 1;
        }
    }
    out
}

/// `dpkg.log`: `2024-05-01 10:00:00 upgrade libnccl2:amd64 2.18.1-1+cuda12.1 2.19.3-1+cuda12.3`.
pub fn dpkg_log(t: &str, source: &str, tz: i64) -> Vec<PackageEvent> {
    let mut out = Vec::new();
    for l in t.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        let (Some(d), Some(tm), Some(action), Some(pkg)) =
            (w.first(), w.get(1), w.get(2), w.get(3))
        else {
            continue;
        };
        if !matches!(*action, "install" | "upgrade" | "remove" | "purge") {
            continue;
        }
        let v = |x: Option<&&str>| x.filter(|v| **v != "<none>").map(|v| sanitize_line(v));
        out.push(PackageEvent {
            time: super::parse_datetime(&format!("{d} {tm}")).map(|x| x - tz),
            manager: "dpkg".into(),
            action: (*action).to_string(),
            package: sanitize_line(pkg.split(':').next().unwrap_or(pkg)),
            from_version: v(w.get(4)),
            to_version: v(w.get(5)),
            source: source.to_string(),
        });
    }
    out
}

/// `dnf.rpm.log`: `2024-05-01T10:00:00+0000 SUBDEBUG Upgrade: nvidia-driver-3:550.54.15-1.el9.x86_64`.
pub fn dnf_log(t: &str, source: &str, tz: i64) -> Vec<PackageEvent> {
    let mut out = Vec::new();
    for l in t.lines() {
        let mut w = l.splitn(3, ' ');
        let (Some(ts), Some(_lvl), Some(rest)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        let Some((act, pkg)) = rest.split_once(": ") else {
            continue;
        };
        let action = match act.trim() {
            "Installed" | "Install" => "install",
            "Upgrade" | "Upgraded" => "upgrade",
            "Erase" | "Erased" | "Remove" | "Removed" => "remove",
            "Downgrade" | "Downgraded" => "downgrade",
            _ => continue,
        };
        let time = super::parse_rfc3339(ts).or_else(|| super::parse_datetime(ts).map(|x| x - tz));
        let pkg = pkg.trim();
        // name-[epoch:]version-release.arch: the version starts at the first `-<digit>` or `-N:`.
        let (name, ver) = split_nevra(pkg);
        out.push(PackageEvent {
            time,
            manager: "dnf".into(),
            action: action.into(),
            package: sanitize_line(name),
            from_version: None,
            to_version: (!ver.is_empty()).then(|| sanitize_line(ver)),
            source: source.to_string(),
        });
    }
    out
}

fn split_nevra(s: &str) -> (&str, &str) {
    let b = s.as_bytes();
    for i in 0..b.len() {
        if b.get(i) == Some(&b'-') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            return (s.get(..i).unwrap_or(s), s.get(i + 1..).unwrap_or(""));
        }
    }
    (s, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The hand-written reader finds exactly what the regex it replaced finds.
        #[test]
        fn apt_items_are_the_regex_matches(list in "[a-z0-9:.+~ ,()\u{a0}\u{3000}é\t-]{0,60}") {
            let regex = Regex::new(r"([^\s,()]+) \(([^()]*)\)").unwrap();
            let expected: Vec<(&str, &str)> = regex
                .captures_iter(&list)
                .map(|c| (c.get(1).unwrap().as_str(), c.get(2).unwrap().as_str()))
                .collect();
            proptest::prop_assert_eq!(apt_items(&list), expected);
        }
    }

    #[test]
    fn apt_items_table() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            (
                "libnccl2:amd64 (2.18.1-1+cuda12.1, 2.19.3-1+cuda12.3), cuda-drivers (550.54.15-1, automatic)",
                &[
                    ("libnccl2:amd64", "2.18.1-1+cuda12.1, 2.19.3-1+cuda12.3"),
                    ("cuda-drivers", "550.54.15-1, automatic"),
                ],
            ),
            ("a (1), b(2), c (3", &[("a", "1")]),
            ("a ((1)) b (2)", &[("b", "2")]),
            ("", &[]),
            ("é (ü)", &[("é", "ü")]),
        ];
        for (list, expected) in cases {
            assert_eq!(apt_items(list), *expected, "{list}");
        }
    }

    #[test]
    fn what_was_not_read_is_named() {
        let b = "0123456789abcdef0123456789abcdef";
        let body = format!(
            "\n{b} R fifo /var/log/dpkg.log\n\n{b} R denied /var/log/dpkg.log.3.gz\n\n{b} F fifo apt - - /var/log/apt/history.log\n\n{b} F missing apt - - /var/log/apt/history.log.1\n\n{b} R grep /var/log/dnf.rpm.log\n"
        );
        let got = not_read(body.as_bytes(), b);
        let texts: Vec<&str> = got.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                "/var/log/dpkg.log: not a regular file (a FIFO): not read",
                "/var/log/dpkg.log.3.gz: permission denied",
                "/var/log/apt/history.log: not a regular file (a FIFO): not read",
            ]
        );
        assert_eq!(got[0].0, probe_model::SectionStatus::Failed);
    }

    #[test]
    fn apt() {
        let t = "\nStart-Date: 2026-10-01  09:12:44\nCommandline: apt-get install -y cuda-drivers-550\nRequested-By: ops (1000)\nInstall: nvidia-driver-550:amd64 (550.54.15-0ubuntu1, automatic), curl:amd64 (7.88)\nUpgrade: libnccl2:amd64 (2.18.1-1+cuda12.1, 2.19.3-1+cuda12.3)\nEnd-Date: 2026-10-01  09:13:40\n";
        let e = apt_history(t, "/var/log/apt/history.log", 0, false);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].package, "nvidia-driver-550");
        assert_eq!(e[0].to_version.as_deref(), Some("550.54.15-0ubuntu1"));
        assert_eq!(e[1].from_version.as_deref(), Some("2.18.1-1+cuda12.1"));
        assert_eq!(e[1].to_version.as_deref(), Some("2.19.3-1+cuda12.3"));
        assert_eq!(
            e[0].time,
            super::super::parse_datetime("2026-10-01 09:12:44")
        );
    }

    #[test]
    fn rotated_gzip_records() {
        let b = "BB";
        let body = format!(
            "\n{b} R gz apt /var/log/apt/history.log.1.gz\n\nStart-Date: 2026-09-16  10:02:11\nCommandline: apt-get upgrade -y\nUpgrade: nvidia-driver-550-server:amd64 (550.144.03-0ubuntu1, 550.163.01-0ubuntu1), curl:amd64 (1, 2)\nEnd-Date: 2026-09-16  10:04:40\n\n{b} R grep /var/log/dpkg.log.2.gz\n2026-09-16 10:02:30 upgrade nvidia-driver-550-server:amd64 550.144.03-0ubuntu1 550.163.01-0ubuntu1\n\n{b} R denied /var/log/dpkg.log.3.gz\n"
        );
        let e = parse(body.as_bytes(), b, 0);
        assert_eq!(e.len(), 2, "{e:?}");
        assert_eq!(e[0].manager, "apt");
        assert_eq!(e[0].action, "upgrade");
        assert_eq!(e[0].source, "/var/log/apt/history.log.1.gz");
        assert_eq!(e[0].from_version.as_deref(), Some("550.144.03-0ubuntu1"));
        assert_eq!(e[1].manager, "dpkg");
        assert_eq!(e[1].source, "/var/log/dpkg.log.2.gz");
        // A tail that was cut starts at the next block.
        let cut = format!(
            "Upgrade: nvidia-x:amd64 (1, 2)\n{}",
            "x".repeat(GZ_APT_TAIL)
        );
        let body = format!("\n{b} R gz apt /p.gz\n{cut}");
        assert!(parse(body.as_bytes(), b, 0).is_empty());
    }

    #[test]
    fn dpkg_and_dnf() {
        let e = dpkg_log(
            "2026-10-01 09:13:01 upgrade libnccl2:amd64 2.18.1-1+cuda12.1 2.19.3-1+cuda12.3\n2026-10-01 09:13:02 status installed libnccl2:amd64 2.19.3\n",
            "d",
            3600,
        );
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].time,
            super::super::parse_datetime("2026-10-01 08:13:01")
        );
        let e = dnf_log(
            "2026-10-01T09:13:01+0000 SUBDEBUG Upgrade: nvidia-driver-3:550.54.15-1.el9.x86_64\n",
            "x",
            0,
        );
        assert_eq!(e[0].package, "nvidia-driver");
        assert_eq!(e[0].to_version.as_deref(), Some("3:550.54.15-1.el9.x86_64"));
    }
}
