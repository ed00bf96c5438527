//! Civil (calendar) dates and Unix times, in UTC: the one place probe converts between them,
//! through `jiff`. Parsers of remote text build times with [`civil`]; notes and reports write
//! them with [`utc_minute`] and [`utc_second`].

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

use crate::UnixTime;

/// Times a host's clock or a history stamp can plausibly read: 2000-01-01 to 2200-01-01 UTC.
/// Outside it is a clock that was never set (a dead real-time clock's 1970) or a stamp that is
/// no time at all (`#100000`).
pub const PLAUSIBLE: std::ops::Range<UnixTime> = 946_684_800..7_258_118_400;

/// `YYYY-MM-DD HH:MM:SS` read as UTC (the caller subtracts a zone offset it knows). `None` for a
/// date that does not exist (2026-02-30) or a field out of range. A leap second (`:60`) is the
/// second after `:59`.
pub fn civil(
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
) -> Option<UnixTime> {
    if second > 60 {
        return None;
    }
    let leap = i64::from(second == 60);
    let at = DateTime::new(
        i16::try_from(year).ok()?,
        i8::try_from(month).ok()?,
        i8::try_from(day).ok()?,
        i8::try_from(hour).ok()?,
        i8::try_from(minute).ok()?,
        i8::try_from(second.min(59)).ok()?,
        0,
    )
    .ok()?;
    let zoned = at.to_zoned_datetime(TimeZone::UTC).ok()?;
    Some(zoned.timestamp().as_second() + leap)
}

/// The first second after the UTC day `year-month-day`; `None` when there is no such day.
pub fn day_end(year: i64, month: u32, day: u32) -> Option<UnixTime> {
    let date = Date::new(
        i16::try_from(year).ok()?,
        i8::try_from(month).ok()?,
        i8::try_from(day).ok()?,
    )
    .ok()?;
    let next = date.tomorrow().ok()?;
    Some(
        next.to_zoned_datetime(TimeZone::UTC)
            .ok()?
            .timestamp()
            .as_second(),
    )
}

/// The UTC year of a Unix time (`None` out of jiff's range, years -9999..=9999).
pub fn year_of(time: UnixTime) -> Option<i64> {
    let at = jiff::Timestamp::from_second(time).ok()?;
    Some(i64::from(at.to_zoned_datetime(TimeZone::UTC).year()))
}

/// `2026-11-19 07:45 UTC`, as notes write times; `?` for an impossible time.
pub fn utc_minute(time: UnixTime) -> String {
    formatted(time, "%Y-%m-%d %H:%M UTC")
}

/// `2026-11-19 07:45:12 UTC`, as reports write times; `?` for an impossible time.
pub fn utc_second(time: UnixTime) -> String {
    formatted(time, "%Y-%m-%d %H:%M:%S UTC")
}

/// `2026-11-19` (UTC); `?` for an impossible time.
pub fn utc_date(time: UnixTime) -> String {
    formatted(time, "%Y-%m-%d")
}

/// `07:45` (UTC); `?` for an impossible time.
pub fn utc_hhmm(time: UnixTime) -> String {
    formatted(time, "%H:%M")
}

fn formatted(time: UnixTime, format: &str) -> String {
    jiff::Timestamp::from_second(time)
        .map(|at| at.strftime(format).to_string())
        .unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_times_convert_both_ways() {
        for (fields, want) in [
            ((1970, 1, 1, 0, 0, 0), Some(0)),
            ((2026, 11, 20, 10, 0, 0), Some(1_795_168_800)),
            ((2024, 2, 29, 23, 59, 59), Some(1_709_251_199)),
            ((2016, 12, 31, 23, 59, 60), Some(1_483_228_800)),
            ((2026, 2, 29, 0, 0, 0), None),
            ((2026, 4, 31, 0, 0, 0), None),
            ((2026, 13, 1, 0, 0, 0), None),
            ((2026, 1, 1, 24, 0, 0), None),
            ((2026, 1, 1, 0, 60, 0), None),
            ((2026, 1, 1, 0, 0, 61), None),
            ((99_999, 1, 1, 0, 0, 0), None),
        ] {
            let (y, mo, d, h, mi, s) = fields;
            assert_eq!(civil(y, mo, d, h, mi, s), want, "{fields:?}");
        }
        assert_eq!(day_end(2026, 11, 20), Some(1_795_219_200));
        assert_eq!(day_end(2024, 2, 29), Some(1_709_251_200));
        assert_eq!(day_end(2026, 2, 29), None);
        assert_eq!(year_of(1_795_168_800), Some(2026));
        assert_eq!(year_of(-1), Some(1969));
        assert_eq!(year_of(i64::MAX), None);
        assert_eq!(utc_minute(1_795_168_845), "2026-11-20 10:00 UTC");
        assert_eq!(utc_second(1_795_168_845), "2026-11-20 10:00:45 UTC");
        assert_eq!(utc_second(i64::MAX), "?");
        assert_eq!(utc_date(1_795_168_845), "2026-11-20");
        assert_eq!(utc_hhmm(1_795_168_845), "10:00");
        assert_eq!(utc_date(-86_400), "1969-12-31");
    }
}
