//! Times of log lines stamped with the time since the process began to log (`M.SS.mmm.uuu`, a
//! `[[prefix]]` of `configs/log_lines.toml` with `time = "elapsed"`): the line shows no time of
//! day, so a file's last run of such lines is dated back from the file's mtime, when the line
//! with the largest stamp (the last one written) was written. The host's thinning pass sends the
//! lines it keeps whole before the metric lines it sampled, so the stamps of a text need not
//! rise line by line; a stamp that falls back into the first minute is a new process writing
//! to the same file (`>>`, its start-up lines): the lines before that restart belong to an
//! earlier run whose end is not known, and stay undated.

use probe_model::UnixTime;

use super::engine_lines::{self, Place, TimeForm};
use crate::sanitize::sanitize_terminal;

/// Lines read back from the end for a stamp before a text is taken to have none.
const LOOK_BACK: usize = 64;
/// A process logs its start-up within this many microseconds of starting (model load included).
const START_US: i64 = 60_000_000;

/// The time origin of a text's last run of elapsed-stamped lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clock {
    /// Index of the first line of that run (lines before it are not dated).
    first: usize,
    /// Microseconds since the epoch at which the process's stamps count from.
    origin_us: i64,
}

impl Clock {
    /// The clock of `text` last written at `reference` (the file's mtime); `None` where its
    /// last lines show no elapsed stamp or no reference is known.
    pub fn of(text: &str, reference: Option<UnixTime>) -> Option<Clock> {
        let reference = reference?;
        if !has_elapsed_prefix() {
            return None;
        }
        text.lines().rev().take(LOOK_BACK).find_map(stamp)?;
        let mut first = 0;
        let mut newest: Option<i64> = None;
        let mut previous: Option<i64> = None;
        for (index, line) in text.lines().enumerate() {
            let Some(us) = stamp(line) else { continue };
            if previous.is_some_and(|p| us < p) && us < START_US {
                first = index;
                newest = None;
            }
            newest = Some(newest.map_or(us, |n| n.max(us)));
            previous = Some(us);
        }
        let newest = newest?;
        Some(Clock {
            first,
            origin_us: reference.saturating_mul(1_000_000).saturating_sub(newest),
        })
    }

    /// The time of line `index` (its text `line`): its stamp from the clock's origin.
    pub fn time_of(&self, index: usize, line: &str) -> Option<UnixTime> {
        if index < self.first {
            return None;
        }
        let us = stamp(line)?;
        Some(self.origin_us.saturating_add(us).div_euclid(1_000_000))
    }
}

/// Whether any prefix of the configuration is an elapsed stamp.
fn has_elapsed_prefix() -> bool {
    engine_lines::prefixes(Place::Message).any(|p| p.time == Some(TimeForm::Elapsed))
}

/// The microseconds an elapsed-stamped line shows (colour codes ignored).
fn stamp(line: &str) -> Option<i64> {
    if !line.as_bytes().iter().take(16).any(u8::is_ascii_digit) {
        return None;
    }
    let clean = sanitize_terminal(line);
    engine_lines::prefixes(Place::Message)
        .filter(|p| p.time == Some(TimeForm::Elapsed))
        .find_map(|p| {
            let c = p.pattern.captures(&clean)?;
            let g = |i| c.get(i).and_then(|m| m.as_str().parse::<i64>().ok());
            let (m, s, ms, us) = (g(1)?, g(2)?, g(3)?, g(4)?);
            m.checked_mul(60)?
                .checked_add(s)?
                .checked_mul(1000)?
                .checked_add(ms)?
                .checked_mul(1000)?
                .checked_add(us)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (log text, mtime, expected time of each line): the last line is the mtime; a restart
    /// (a smaller stamp) leaves the lines before it undated; colour codes do not matter; a text
    /// without stamps has no clock.
    #[test]
    fn dated_back_from_the_mtime() {
        type Row = (&'static str, Option<i64>, Option<Vec<Option<i64>>>);
        let table: &[Row] = &[
            (
                "0.00.100.000 I build: 1\n1.00.000.000 I a\nplain\n2.30.500.000 I b",
                Some(1_000_000),
                Some(vec![Some(999_849), Some(999_909), None, Some(1_000_000)]),
            ),
            (
                "5.00.000.000 I old\n0.00.000.000 I new\n0.10.000.000 I new",
                Some(1_000),
                Some(vec![None, Some(990), Some(1_000)]),
            ),
            // Thinned: kept lines first, then the sampled metric lines from an hour in.
            (
                "0.10.000.000 I start\n90.00.000.000 I kept\n60.00.000.000 I m\n100.00.000.000 I m",
                Some(10_000),
                Some(vec![Some(4_010), Some(9_400), Some(7_600), Some(10_000)]),
            ),
            (
                "\u{1b}[34m0.01.000.000\u{1b}[0m \u{1b}[32mI \u{1b}[0mload_tensors: x",
                Some(500),
                Some(vec![Some(500)]),
            ),
            ("no stamps here\nnor here", Some(500), None),
            ("0.01.000.000 I x", None, None),
            (
                "24480.59.999.999 I weeks",
                Some(2_000_000_000),
                Some(vec![Some(2_000_000_000)]),
            ),
        ];
        for (text, mtime, want) in table {
            let clock = Clock::of(text, *mtime);
            let got = clock.as_ref().map(|c| {
                text.lines()
                    .enumerate()
                    .map(|(i, l)| c.time_of(i, l))
                    .collect::<Vec<_>>()
            });
            assert_eq!(&got, want, "{text:?}");
        }
    }

    /// Hostile stamps (overflowing minutes) never panic and date nothing.
    #[test]
    fn overflow_is_no_time() {
        let text = "99999999999999999999.00.000.000 I x";
        assert_eq!(stamp(text), None);
        let text = "9223372036854775.00.000.000 I x";
        assert_eq!(stamp(text), None);
    }
}
