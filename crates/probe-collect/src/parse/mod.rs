//! Parsers: remote output (hostile bytes) in, typed snapshot parts out. Every parser is total
//! (never panics, whatever the input), bounded (caps on entries and points), and sanitises
//! strings for terminals at parse time (see [`crate::sanitize`]).

pub mod bench;
pub mod containers;
pub mod elapsed;
pub mod engine_lines;
pub mod gpu;
pub mod gpu_catalog;
pub mod gpu_health;
pub mod gpu_procs;
pub mod history;
pub mod host;
pub mod kernel_log;
pub mod launch_files;
pub mod logs;
pub mod models;
pub mod nvcsv;
pub mod pkgs;
pub mod processes;
pub mod python;
pub mod self_installed;
pub mod units;

#[cfg(test)]
mod engine_lines_tests;

use probe_model::UnixTime;

/// What earlier sections tell later parsers.
#[derive(Debug, Clone, Default)]
pub struct Ctx {
    pub boundary: String,
    /// Remote clock (Unix seconds) at the start.
    pub remote_clock: Option<UnixTime>,
    /// Remote UTC offset in seconds (`date +%z`), for local-time log lines.
    pub tz_offset_s: i64,
    pub clk_tck: Option<u64>,
    pub boot_time: Option<UnixTime>,
    /// uid → user name, from /etc/passwd.
    pub users: std::collections::BTreeMap<u32, String>,
    /// user → home.
    pub homes: std::collections::BTreeMap<String, String>,
    pub tools: Vec<String>,
    pub systemd_running: bool,
    /// What round 1's `log_places` section read (round 2's plan reads it; not in the snapshot).
    pub log_places: crate::found::Places,
}

/// The UTC year of a Unix time (1970 for one out of range).
pub fn year_of(t: UnixTime) -> i64 {
    probe_model::civil::year_of(t).unwrap_or(1970)
}

/// `YYYY-MM-DD` + `HH:MM:SS` as UTC seconds (caller subtracts the zone offset). `None` for a
/// date that does not exist, or one before 1970 (no log line or file on a host is that old).
pub fn civil(y: i64, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Option<UnixTime> {
    probe_model::civil::civil(y, mo, d, h, mi, s).filter(|t| *t >= 0)
}

/// Parses `YYYY-MM-DD[T ]HH:MM:SS` at the start of `s` (UTC, no zone).
pub fn parse_datetime(s: &str) -> Option<UnixTime> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<u32>().ok());
    if b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || b.get(13) != Some(&b':')
        || b.get(16) != Some(&b':')
    {
        return None;
    }
    civil(
        i64::from(num(0..4)?),
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    )
}

/// Parses a zone suffix `+0100`, `-05:30`, `Z` into seconds east of UTC.
pub fn parse_offset(z: &str) -> Option<i64> {
    let z = z.trim();
    if z == "Z" || z.eq_ignore_ascii_case("UTC") || z.eq_ignore_ascii_case("GMT") {
        return Some(0);
    }
    let (sign, rest) = match z.as_bytes().first()? {
        b'+' => (1, z.get(1..)?),
        b'-' => (-1, z.get(1..)?),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let h: i64 = digits.get(0..2)?.parse().ok()?;
    let m: i64 = digits.get(2..4)?.parse().ok()?;
    Some(sign * (h * 3600 + m * 60))
}

/// RFC 3339 (`2026-10-30T12:00:01.123456789Z`, `...+02:00`) to Unix seconds.
pub fn parse_rfc3339(s: &str) -> Option<UnixTime> {
    let base = parse_datetime(s)?;
    let rest = s.get(19..)?;
    let rest = rest.trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
    let off = if rest.is_empty() {
        0
    } else {
        parse_offset(rest)?
    };
    Some(base - off)
}

/// Lines of a byte buffer, lossily decoded (no sanitising).
pub fn lines(b: &[u8]) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    b.split(|&c| c == b'\n')
        .map(|l| String::from_utf8_lossy(l.strip_suffix(b"\r").unwrap_or(l)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil(1970, 1, 1, 0, 0, 0), Some(0));
        assert_eq!(parse_datetime("2026-10-30 12:00:01"), Some(1_793_361_601));
        assert_eq!(
            parse_rfc3339("2026-10-30T12:00:01.5+01:00"),
            Some(1_793_361_601 - 3600)
        );
        assert_eq!(parse_offset("-0530"), Some(-(5 * 3600 + 30 * 60)));
        assert_eq!(year_of(1_793_361_601), 2026);
        assert_eq!(year_of(0), 1970);
        assert_eq!(parse_datetime("garbage"), None);
        assert_eq!(parse_datetime("2026-13-30 12:00:01"), None);
    }
}
