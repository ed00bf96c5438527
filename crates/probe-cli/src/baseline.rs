//! `--baseline WHEN` read into the typed [`probe_diff::Baseline`] (dates and times with jiff).
//!
//! WHEN is one of:
//! * a date, `2026-11-20`: that whole UTC day;
//! * a range, `2026-11-20..2026-11-25` or `2026-11-20T09:00..2026-11-21T18:00`: a date at the end
//!   counts whole (to the end of the 25th), a time at the end is where it stops;
//! * a span ago, `7d`, `36h`, `2w`: the 24 hours that ended that long before the collection (`7d`
//!   is the day that ended a week ago: a whole daily cycle of load, as "last week" means);
//! * `run:N`: a run of the running server counted back (`run:0` the running run, `run:1` the one
//!   before); `run:TIME`: the run that was up at that time;
//! * a stored snapshot (an id, or `HOST@latest`, `HOST@~N`, `HOST@DATE`): the run that was up
//!   when it was collected, up to then.
//!
//! Times without an offset are UTC.

use jiff::civil::{Date, DateTime};
use jiff::{SignedDuration, Timestamp, tz::TimeZone};
use probe_diff::{Baseline, When};

/// What the text names: a baseline, or a snapshot still to look up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Ready(Baseline),
    Snapshot(String),
}

/// The forms, for the error line.
pub const FORMS: &str = "a date (2026-11-20), a range (2026-11-20..2026-11-25, times allowed), \
                         a span ago (7d, 36h), run:N, run:TIME or a stored snapshot";

/// A point in time: a timestamp with an offset, else a civil date-time in UTC.
fn instant(text: &str) -> Option<i64> {
    if let Ok(t) = text.parse::<Timestamp>() {
        return Some(t.as_second());
    }
    let civil = text.replace(' ', "T").parse::<DateTime>().ok()?;
    Some(TimeZone::UTC.to_timestamp(civil).ok()?.as_second())
}

fn date(text: &str) -> Option<Date> {
    text.parse::<Date>().ok().filter(|_| text.len() == 10)
}

fn day_start(date: Date) -> Option<i64> {
    Some(
        TimeZone::UTC
            .to_timestamp(date.to_datetime(jiff::civil::Time::midnight()))
            .ok()?
            .as_second(),
    )
}

/// Why a `--baseline WHEN` names no period: the reason, for one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BaselineError {
    #[error("an empty period: give {FORMS}")]
    Empty,
    #[error("{0:?} after run: is neither a count back (run:1) nor a time (run:2026-11-20T14:00)")]
    RunNeither(String),
    #[error("{0:?} is neither a date nor a time")]
    EndNeither(String),
    #[error("{0}: out of range")]
    OutOfRange(String),
    #[error("the range ends before it starts ({0})")]
    Reversed(String),
    #[error("a time alone names no period: give a range (A..B) or run:{0}")]
    TimeAlone(String),
    #[error("{0:?}: a span ago is a count and a unit (w, d, h, m), like 7d or 36h")]
    BadSpan(String),
    #[error("{0:?} is not a valid date or time")]
    BadDate(String),
    #[error("{0:?} is not {FORMS}")]
    NotAForm(String),
}

/// One end of a range: a date (its start, or with `whole_day` its end) or a time.
fn end_point(text: &str, whole_day: bool) -> Result<i64, BaselineError> {
    let text = text.trim();
    if let Some(d) = date(text) {
        let d = if whole_day {
            d.tomorrow()
                .map_err(|_| BaselineError::OutOfRange(text.to_string()))?
        } else {
            d
        };
        return day_start(d).ok_or_else(|| BaselineError::OutOfRange(text.to_string()));
    }
    instant(text).ok_or_else(|| BaselineError::EndNeither(text.to_string()))
}

/// `7d`, `36h`, `2w`, `90m`: seconds.
fn ago(text: &str) -> Option<i64> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    let n: i64 = digits.parse().ok()?;
    let per = match unit {
        "w" => 7 * 86_400,
        "d" => 86_400,
        "h" => 3_600,
        "m" | "min" => 60,
        _ => return None,
    };
    let seconds = n.checked_mul(per)?;
    // Further back than a century names no period a log holds.
    (seconds > 0 && SignedDuration::from_secs(seconds) < SignedDuration::from_hours(876_000))
        .then_some(seconds)
}

/// Reads WHEN; an error is the reason, for one line.
pub fn parse(text: &str) -> Result<Parsed, BaselineError> {
    let trimmed = text.trim();
    let ready = |when| {
        Ok(Parsed::Ready(Baseline {
            text: trimmed.to_string(),
            when,
        }))
    };
    if trimmed.is_empty() {
        return Err(BaselineError::Empty);
    }
    if let Some(run) = trimmed.strip_prefix("run:") {
        if let Ok(back) = run.parse::<usize>() {
            return ready(When::RunBack(back));
        }
        return match instant(run).or_else(|| date(run).and_then(day_start)) {
            Some(at) => ready(When::RunAt(at)),
            None => Err(BaselineError::RunNeither(run.to_string())),
        };
    }
    if let Some((from, to)) = trimmed.split_once("..") {
        let start = end_point(from, false)?;
        let end = end_point(to, true)?;
        if end <= start {
            return Err(BaselineError::Reversed(trimmed.to_string()));
        }
        return ready(When::Range { start, end });
    }
    if let Some(d) = date(trimmed) {
        let start = day_start(d).ok_or_else(|| BaselineError::OutOfRange(trimmed.to_string()))?;
        return ready(When::Range {
            start,
            end: start + 86_400,
        });
    }
    if instant(trimmed).is_some() {
        return Err(BaselineError::TimeAlone(trimmed.to_string()));
    }
    if trimmed.starts_with(|c: char| c.is_ascii_digit())
        && trimmed.ends_with(|c: char| c.is_ascii_alphabetic())
        && trimmed.len() <= 12
    {
        return match ago(trimmed) {
            Some(seconds) => ready(When::Ago(seconds)),
            None => Err(BaselineError::BadSpan(trimmed.to_string())),
        };
    }
    let date_like = trimmed.len() >= 5
        && trimmed[..4].bytes().all(|b| b.is_ascii_digit())
        && trimmed.as_bytes()[4] == b'-';
    if date_like {
        return Err(BaselineError::BadDate(trimmed.to_string()));
    }
    if trimmed.contains(char::is_whitespace) {
        return Err(BaselineError::NotAForm(trimmed.to_string()));
    }
    Ok(Parsed::Snapshot(trimmed.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOV20: i64 = 1_795_132_800; // 2026-11-20 00:00 UTC

    #[test]
    fn baselines_are_read() {
        let cases: Vec<(&str, Result<When, &str>)> = vec![
            (
                "2026-11-20",
                Ok(When::Range {
                    start: NOV20,
                    end: NOV20 + 86_400,
                }),
            ),
            (
                "2026-11-20..2026-11-25",
                Ok(When::Range {
                    start: NOV20,
                    end: NOV20 + 6 * 86_400,
                }),
            ),
            (
                "2026-11-20T09:00..2026-11-21 18:00",
                Ok(When::Range {
                    start: NOV20 + 9 * 3_600,
                    end: NOV20 + 86_400 + 18 * 3_600,
                }),
            ),
            (
                "2026-11-20T09:00+01:00..2026-11-20T10:00Z",
                Ok(When::Range {
                    start: NOV20 + 8 * 3_600,
                    end: NOV20 + 10 * 3_600,
                }),
            ),
            ("7d", Ok(When::Ago(7 * 86_400))),
            ("36h", Ok(When::Ago(36 * 3_600))),
            ("2w", Ok(When::Ago(14 * 86_400))),
            ("run:1", Ok(When::RunBack(1))),
            ("run:2026-11-20T14:00", Ok(When::RunAt(NOV20 + 14 * 3_600))),
            ("2026-11-25..2026-11-20", Err("ends before it starts")),
            ("2026-11-20T09:00", Err("a time alone names no period")),
            ("7y", Err("a span ago is a count and a unit")),
            ("0d", Err("a span ago is a count and a unit")),
            ("run:yesterday", Err("neither a count back")),
            ("2026-13-40", Err("not a valid date")),
            ("2026-11-20..soon", Err("neither a date nor a time")),
            ("last week", Err("is not a date")),
            ("", Err("an empty period")),
        ];
        for (text, want) in cases {
            let got = parse(text);
            match (got, want) {
                (Ok(Parsed::Ready(b)), Ok(when)) => {
                    assert_eq!(b.when, when, "{text}");
                    assert_eq!(b.text, text.trim(), "{text}");
                }
                (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{text}: {e}"),
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
        assert_eq!(
            parse("fixture-a-1795000000-x1y2"),
            Ok(Parsed::Snapshot("fixture-a-1795000000-x1y2".into()))
        );
    }
}
