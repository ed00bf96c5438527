//! The period a user names as good (`probe host --baseline WHEN`, `probe diff --baseline WHEN`),
//! typed: the CLI reads the text into a [`Baseline`], and it is resolved here against the runs of
//! the server, to a stretch of time and the run it lies in.

use probe_model::UnixTime;

/// When a run started, and when it ended (`None` while it runs).
pub(crate) type Span = (UnixTime, Option<UnixTime>);

/// The 24 hours a relative baseline (`7d`) spans: a whole daily cycle of load.
pub const AGO_SPAN_S: i64 = 86_400;

/// A period named as the good one, with the text the user gave (said in `why`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Baseline {
    /// As the user wrote it, for the report (`2026-11-20..2026-11-25`, `7d`, `run:1`).
    pub text: String,
    pub when: When,
}

/// What a baseline names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// From `start` to `end` (exclusive): a date is its whole UTC day, a range its span.
    Range { start: UnixTime, end: UnixTime },
    /// The 24 hours ([`AGO_SPAN_S`]) that ended this many seconds before the collection: `7d` is
    /// the day that ended a week ago.
    Ago(i64),
    /// A run of the running server counted back from it: 0 is the running run, 1 the run before.
    RunBack(usize),
    /// The run of the running server's that was up at this time (`run:2026-11-20T14:00`).
    RunAt(UnixTime),
    /// A stored snapshot of the host, collected then: the run that was up at that time, from its
    /// start up to the collection.
    Snapshot(UnixTime),
}

/// A baseline resolved: the stretch of time, and the run of the server it lies in (the run up at
/// its start, else the first run that starts inside it), as an index into the runs given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    pub(crate) start: UnixTime,
    pub(crate) end: UnixTime,
    pub(crate) run: Option<usize>,
}

impl Baseline {
    /// The stretch of time this baseline names among `runs` (a server's, oldest first), for a
    /// snapshot collected at `collected_at`; `None` when it names a run that does not exist, or
    /// an empty stretch.
    pub(crate) fn resolve(&self, runs: &[Span], collected_at: UnixTime) -> Option<Resolved> {
        let up_at = |t: UnixTime| {
            runs.iter()
                .rposition(|(start, end)| *start <= t && end.is_none_or(|end| t < end))
        };
        let end_of = |index: usize| runs.get(index).map(|r| r.1.unwrap_or(collected_at));
        let (start, end) = match self.when {
            When::Range { start, end } => (start, end),
            When::Ago(seconds) => {
                let end = collected_at - seconds;
                (end - AGO_SPAN_S, end)
            }
            When::RunBack(back) => {
                let index = runs.len().checked_sub(back + 1)?;
                (runs.get(index)?.0, end_of(index)?)
            }
            When::RunAt(t) => {
                let index = up_at(t)?;
                (runs.get(index)?.0, end_of(index)?)
            }
            When::Snapshot(t) => (runs.get(up_at(t)?)?.0, t),
        };
        if end <= start {
            return None;
        }
        let run = up_at(start).or_else(|| runs.iter().position(|r| r.0 >= start && r.0 < end));
        Some(Resolved { start, end, run })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400;
    const T0: UnixTime = 1_794_470_400; // 2026-11-12 08:00 UTC

    fn run(start_day: i64, end_day: Option<i64>) -> Span {
        (T0 + start_day * DAY, end_day.map(|d| T0 + d * DAY))
    }

    #[test]
    fn baselines_resolve_to_stretches_of_time() {
        let runs = vec![run(0, Some(10)), run(10, None)];
        let now = T0 + 21 * DAY;
        let baseline = |when| Baseline {
            text: String::new(),
            when,
        };
        // (when, expected (start, end, run index) in days from T0)
        type Days = Option<(i64, i64, Option<usize>)>;
        let cases: Vec<(When, Days)> = vec![
            (
                When::Range {
                    start: T0 + 2 * DAY,
                    end: T0 + 4 * DAY,
                },
                Some((2, 4, Some(0))),
            ),
            (When::Ago(7 * DAY), Some((13, 14, Some(1)))),
            (When::RunBack(0), Some((10, 21, Some(1)))),
            (When::RunBack(1), Some((0, 10, Some(0)))),
            (When::RunBack(2), None),
            (When::RunAt(T0 + 3 * DAY), Some((0, 10, Some(0)))),
            (When::RunAt(T0 - DAY), None),
            (When::Snapshot(T0 + 5 * DAY), Some((0, 5, Some(0)))),
            (
                When::Range {
                    start: T0 + 4 * DAY,
                    end: T0 + 4 * DAY,
                },
                None,
            ),
            (
                When::Range {
                    start: T0 - 3 * DAY,
                    end: T0 + DAY,
                },
                Some((-3, 1, Some(0))),
            ),
        ];
        for (when, want) in cases {
            let got = baseline(when)
                .resolve(&runs, now)
                .map(|r| ((r.start - T0) / DAY, (r.end - T0) / DAY, r.run));
            assert_eq!(got, want, "{when:?}");
        }
    }
}
