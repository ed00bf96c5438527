//! Parsers: remote output (hostile bytes) in, typed snapshot parts out. Every parser is total
//! (never panics, whatever the input), bounded (caps on entries and points), and sanitises
//! strings for terminals at parse time (see [`crate::sanitize`]).

pub mod bench;
pub mod containers;
pub mod engine_lines;
pub mod gpu;
pub mod gpu_health;
pub mod gpu_procs;
pub mod history;
pub mod host;
pub mod kernel_log;
pub mod logs;
pub mod models;
pub mod nvcsv;
pub mod pkgs;
pub mod processes;
pub mod python;
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
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let d = i64::from(d);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Year of a Unix time (UTC).
pub fn year_of(t: UnixTime) -> i64 {
    // Inverse of days_from_civil, year only.
    let z = t.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(m <= 2)
}

/// `YYYY-MM-DD` + `HH:MM:SS` as UTC seconds (caller subtracts the zone offset). `None` when
/// out of range.
pub fn civil(y: i64, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> Option<UnixTime> {
    if !(1970..=9999).contains(&y)
        || !(1..=12).contains(&mo)
        || !(1..=31).contains(&d)
        || h > 23
        || mi > 59
        || s > 60
    {
        return None;
    }
    Some(
        days_from_civil(y, mo, d) * 86_400
            + i64::from(h) * 3600
            + i64::from(mi) * 60
            + i64::from(s),
    )
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
