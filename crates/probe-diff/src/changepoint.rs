//! Change points inside a run: where the load or the speed moved and stayed moved (a new client's
//! batch jobs since Tuesday), not a spike. Each watched metric (running and queued requests,
//! prompt and generation throughput) is reduced to hourly medians of its non-idle samples, then
//! split by binary segmentation: the split that leaves the least variance inside its two
//! segments, kept when both last long enough and the step is large against the spread inside
//! them. Thresholds are data: `configs/periods.toml`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use probe_model::UnixTime;
use serde::Deserialize;

/// The embedded file.
const PERIODS_TOML: &str = include_str!("../../../configs/periods.toml");

const HOUR: i64 = 3_600;

/// `configs/periods.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct Config {
    /// Both segments of a change point last at least this many hours.
    pub(crate) min_hours: u32,
    /// A bucket (an hour, or wider where hours hold fewer) with fewer samples has no median.
    pub(crate) min_samples_per_bucket: usize,
    /// The means moved by more than this share of the larger one.
    pub(crate) min_relative: f64,
    /// ... and by at least this many pooled within-segment standard deviations.
    pub(crate) min_effect: f64,
    /// Change points per metric, at most.
    pub(crate) max_change_points: usize,
    pub(crate) watch: Watch,
    #[serde(default)]
    pub(crate) floor: BTreeMap<String, f64>,
}

/// The metric names watched, by group; the first name a server logged of each group is used.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Watch {
    pub(crate) running: Vec<String>,
    pub(crate) queue: Vec<String>,
    pub(crate) prompt: Vec<String>,
    pub(crate) throughput: Vec<String>,
}

impl Config {
    pub(crate) fn parse(text: &str) -> Result<Config, toml::de::Error> {
        toml::from_str(text)
    }

    fn floor(&self, metric: &str) -> f64 {
        self.floor.get(metric).copied().unwrap_or(0.0)
    }
}

static CONFIG: LazyLock<Config> = LazyLock::new(|| {
    probe_launch::embedded::load("configs/periods.toml", Config::parse(PERIODS_TOML))
});

pub(crate) fn config() -> &'static Config {
    &CONFIG
}

/// Where one metric's level moved for good.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChangePoint {
    /// The first hour of the later segment.
    pub(crate) at: UnixTime,
    pub(crate) metric: String,
    /// Means of the hourly medians of the segments on each side.
    pub(crate) before: f64,
    pub(crate) after: f64,
    /// The step in pooled within-segment standard deviations (infinite when both are flat).
    pub(crate) effect: f64,
}

/// Bucket widths tried, in hours: the first whose typical bucket holds enough samples is used
/// (the host thins a long log's metric lines evenly in time, so a run of months keeps fewer an
/// hour than a run of days).
const WIDTHS_H: &[i64] = &[1, 2, 3, 4, 6, 12];

/// The median of each bucket with at least `min_samples` samples: (bucket start, median), in
/// time order. Buckets are UTC hours, or wider (2, 3, 4, 6, 12 h) where an hour typically holds
/// fewer than `min_samples` samples.
pub(crate) fn bucket_medians(
    points: &[(UnixTime, f64)],
    min_samples: usize,
) -> Vec<(UnixTime, f64)> {
    let min_samples = min_samples.max(1);
    let mut buckets: BTreeMap<UnixTime, Vec<f64>> = BTreeMap::new();
    for width in WIDTHS_H {
        let span = width * HOUR;
        buckets.clear();
        for (t, v) in points {
            if v.is_finite() {
                buckets
                    .entry(t.div_euclid(span) * span)
                    .or_default()
                    .push(*v);
            }
        }
        let mut counts: Vec<usize> = buckets.values().map(Vec::len).collect();
        counts.sort_unstable();
        if counts
            .get(counts.len() / 2)
            .is_some_and(|c| *c >= min_samples)
        {
            break;
        }
    }
    buckets
        .into_iter()
        .filter(|(_, values)| values.len() >= min_samples)
        .map(|(start, mut values)| {
            values.sort_by(f64::total_cmp);
            let mid = values.len() / 2;
            let median = if values.len() % 2 == 0 {
                (values[mid - 1] + values[mid]) / 2.0
            } else {
                values[mid]
            };
            (start, median)
        })
        .collect()
}

/// Sums of a series for the variance of any stretch of it.
struct Prefix {
    sum: Vec<f64>,
    squares: Vec<f64>,
}

impl Prefix {
    fn of(values: &[f64]) -> Prefix {
        let mut sum = vec![0.0];
        let mut squares = vec![0.0];
        for v in values {
            sum.push(sum.last().copied().unwrap_or_default() + v);
            squares.push(squares.last().copied().unwrap_or_default() + v * v);
        }
        Prefix { sum, squares }
    }

    /// (mean, sum of squared deviations) of `values[lo..hi]`.
    fn stretch(&self, lo: usize, hi: usize) -> (f64, f64) {
        let n = (hi - lo) as f64;
        let s = self.sum[hi] - self.sum[lo];
        let q = self.squares[hi] - self.squares[lo];
        let mean = s / n;
        (mean, (q - s * mean).max(0.0))
    }
}

/// How long a stretch of hourly medians lasts, first hour to the end of the last.
fn hours_long(hours: &[(UnixTime, f64)]) -> i64 {
    match (hours.first(), hours.last()) {
        (Some(first), Some(last)) => (last.0 - first.0 + HOUR) / HOUR,
        _ => 0,
    }
}

/// The change points of one series of hourly medians (binary segmentation, at most
/// `max-change-points`), in time order: (first hour after, mean before, mean after, effect).
pub(crate) fn series_change_points(
    hours: &[(UnixTime, f64)],
    floor: f64,
    config: &Config,
) -> Vec<(UnixTime, f64, f64, f64)> {
    let values: Vec<f64> = hours.iter().map(|(_, v)| *v).collect();
    let prefix = Prefix::of(&values);
    let mut found: Vec<(usize, f64)> = Vec::new();
    let mut stack = vec![(0, hours.len())];
    while let Some((lo, hi)) = stack.pop() {
        if found.len() >= config.max_change_points {
            break;
        }
        let Some((k, effect)) = best_split(hours, &prefix, (lo, hi), floor, config) else {
            continue;
        };
        found.push((k, effect));
        stack.push((lo, k));
        stack.push((k, hi));
    }
    found.sort_by_key(|p| p.0);
    // Each point's means are those of the final segments on either side of it.
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(found.iter().map(|p| p.0))
        .chain(std::iter::once(hours.len()))
        .collect();
    found
        .iter()
        .enumerate()
        .map(|(i, (k, effect))| {
            let before = prefix.stretch(bounds[i], *k).0;
            let after = prefix.stretch(*k, bounds[i + 2]).0;
            (hours[*k].0, before, after, *effect)
        })
        .collect()
}

/// The split of `hours[lo..hi]` that leaves the least variance inside its segments, if it is a
/// change point: both segments long enough, the step large enough.
fn best_split(
    hours: &[(UnixTime, f64)],
    prefix: &Prefix,
    (lo, hi): (usize, usize),
    floor: f64,
    config: &Config,
) -> Option<(usize, f64)> {
    let min = i64::from(config.min_hours.max(1));
    if hi < lo + 3 || hours_long(&hours[lo..hi]) < 2 * min {
        return None;
    }
    let mut best: Option<(usize, f64)> = None;
    for k in lo + 1..hi {
        if hours_long(&hours[lo..k]) < min || hours_long(&hours[k..hi]) < min {
            continue;
        }
        let cost = prefix.stretch(lo, k).1 + prefix.stretch(k, hi).1;
        if best.is_none_or(|(_, c)| cost < c) {
            best = Some((k, cost));
        }
    }
    let (k, cost) = best?;
    let (before, _) = prefix.stretch(lo, k);
    let (after, _) = prefix.stretch(k, hi);
    let step = (after - before).abs();
    let base = before.abs().max(after.abs());
    if step <= floor || base <= 0.0 || step / base <= config.min_relative {
        return None;
    }
    let n = hi - lo;
    let sd = if n > 2 {
        (cost / (n - 2) as f64).sqrt()
    } else {
        0.0
    };
    let effect = if sd > 0.0 { step / sd } else { f64::INFINITY };
    (effect >= config.min_effect).then_some((k, effect))
}

/// The change points of a server's watched metrics inside `[start, end)`, idle samples left out:
/// the first logged name of each watched group, then points of different metrics closer than
/// `min-hours` merged (the strongest kept), in time order.
pub(crate) fn change_points(
    points: &crate::periods::ServerPoints,
    (start, end): (UnixTime, Option<UnixTime>),
    idle: &BTreeSet<UnixTime>,
) -> Vec<ChangePoint> {
    let config = config();
    let watch = &config.watch;
    let mut all: Vec<ChangePoint> = Vec::new();
    for group in [
        &watch.running,
        &watch.queue,
        &watch.prompt,
        &watch.throughput,
    ] {
        let Some((name, values)) = group
            .iter()
            .find_map(|name| points.get(name).map(|(_, values)| (name, values)))
        else {
            continue;
        };
        let inside: Vec<(UnixTime, f64)> = values
            .iter()
            .copied()
            .filter(|(t, _)| *t >= start && end.is_none_or(|end| *t < end) && !idle.contains(t))
            .collect();
        let hours = bucket_medians(&inside, config.min_samples_per_bucket);
        for (at, before, after, effect) in series_change_points(&hours, config.floor(name), config)
        {
            all.push(ChangePoint {
                at,
                metric: name.clone(),
                before,
                after,
                effect,
            });
        }
    }
    merge(all, i64::from(config.min_hours) * HOUR)
}

/// Points closer than `apart` seconds are one: the strongest (the first watched group on a tie).
fn merge(mut all: Vec<ChangePoint>, apart: i64) -> Vec<ChangePoint> {
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|a, b| all[*b].effect.total_cmp(&all[*a].effect).then(a.cmp(b)));
    let mut kept: Vec<usize> = Vec::new();
    for i in order {
        if kept.iter().all(|k| (all[*k].at - all[i].at).abs() >= apart) {
            kept.push(i);
        }
    }
    kept.sort_unstable();
    let mut out: Vec<ChangePoint> = Vec::new();
    for (index, point) in all.drain(..).enumerate() {
        if kept.contains(&index) {
            out.push(point);
        }
    }
    out.sort_by_key(|p| p.at);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: UnixTime = 1_794_470_400; // 2026-11-12 08:00 UTC

    /// One sample every 10 minutes for `hours` hours, value `f(hour, sample)`.
    fn series(hours: i64, f: impl Fn(i64, i64) -> f64) -> Vec<(UnixTime, f64)> {
        (0..hours * 6)
            .map(|i| (T0 + i * 600, f(i / 6, i % 6)))
            .collect()
    }

    /// A deterministic jitter in [-1, 1].
    fn jitter(i: i64) -> f64 {
        (((i * 7919 + 13) % 101) as f64 / 50.0) - 1.0
    }

    #[test]
    fn embedded_config_parses() {
        assert!(config().min_hours >= 1);
        assert!(Config::parse("min-hours = 1\nbogus = 2").is_err());
    }

    #[test]
    fn change_points_of_one_series() {
        // (case, samples, floor, expected change points: (hours after T0, before, after))
        type Case = (
            &'static str,
            Vec<(UnixTime, f64)>,
            f64,
            Vec<(i64, f64, f64)>,
        );
        let cases: Vec<Case> = vec![
            ("flat", series(21 * 24, |_, _| 8.0), 0.0, vec![]),
            (
                "step in load at hour 288",
                series(21 * 24, |h, _| if h < 288 { 8.0 } else { 31.0 }),
                2.0,
                vec![(288, 8.0, 31.0)],
            ),
            (
                "single spike of two hours",
                series(
                    21 * 24,
                    |h, _| if h == 100 || h == 101 { 90.0 } else { 8.0 },
                ),
                2.0,
                vec![],
            ),
            (
                "noisy step",
                series(21 * 24, |h, s| {
                    let level = if h < 200 { 10.0 } else { 24.0 };
                    level + 3.0 * jitter(h * 6 + s)
                }),
                2.0,
                vec![(200, 10.0, 24.0)],
            ),
            (
                "daily cycle only",
                series(21 * 24, |h, _| if h % 24 < 12 { 10.0 } else { 20.0 }),
                2.0,
                vec![],
            ),
            (
                "two steps",
                series(30 * 24, |h, _| match h {
                    h if h < 240 => 5.0,
                    h if h < 480 => 15.0,
                    _ => 40.0,
                }),
                2.0,
                vec![(240, 5.0, 15.0), (480, 15.0, 40.0)],
            ),
            (
                "step under the floor",
                series(21 * 24, |h, _| if h < 288 { 1.0 } else { 2.0 }),
                2.0,
                vec![],
            ),
            (
                "tiny series",
                series(30, |h, _| if h < 15 { 1.0 } else { 50.0 }),
                0.0,
                vec![],
            ),
            ("empty", Vec::new(), 0.0, vec![]),
        ];
        for (case, samples, floor, want) in cases {
            let hours = bucket_medians(&samples, config().min_samples_per_bucket);
            let got: Vec<(i64, f64, f64)> = series_change_points(&hours, floor, config())
                .into_iter()
                .map(|(at, b, a, _)| {
                    (
                        (at - T0) / HOUR,
                        (b * 10.0).round() / 10.0,
                        (a * 10.0).round() / 10.0,
                    )
                })
                .collect();
            if case == "noisy step" {
                let at: Vec<i64> = got.iter().map(|g| g.0).collect();
                assert_eq!(at, vec![200], "{case}: {got:?}");
                assert!(
                    (got[0].1 - 10.0).abs() < 1.0 && (got[0].2 - 24.0).abs() < 1.0,
                    "{case}: {got:?}"
                );
                continue;
            }
            assert_eq!(got, want, "{case}");
        }
    }

    #[test]
    fn bucket_medians_need_enough_samples() {
        // Three samples in the first hour, one in the second.
        let samples = vec![(T0, 1.0), (T0 + 10, 3.0), (T0 + 20, 2.0), (T0 + HOUR, 9.0)];
        let cases = [
            (1, vec![(T0, 2.0), (T0 + HOUR, 9.0)]),
            (3, vec![(T0, 2.0)]),
            // Hours hold too few: two-hour buckets.
            (4, vec![(T0, 2.5)]),
            (5, vec![]),
        ];
        for (min, want) in cases {
            assert_eq!(bucket_medians(&samples, min), want, "min {min}");
        }
        // Two samples an hour: buckets of 3 hours hold six.
        let thin: Vec<(UnixTime, f64)> = (0..48).map(|i| (T0 + i * 1_800, 1.0)).collect();
        let buckets = bucket_medians(&thin, 6);
        assert_eq!(buckets.get(1).map(|b| b.0 - buckets[0].0), Some(3 * HOUR));
    }

    #[test]
    fn points_of_metrics_close_together_are_one() {
        let point = |hours: i64, metric: &str, effect: f64| ChangePoint {
            at: T0 + hours * HOUR,
            metric: metric.to_string(),
            before: 1.0,
            after: 2.0,
            effect,
        };
        let merged = merge(
            vec![
                point(100, "running_reqs", 4.0),
                point(101, "waiting_reqs", 6.0),
                point(300, "gen_throughput", 2.0),
            ],
            24 * HOUR,
        );
        let got: Vec<(i64, &str)> = merged
            .iter()
            .map(|p| ((p.at - T0) / HOUR, p.metric.as_str()))
            .collect();
        assert_eq!(got, vec![(101, "waiting_reqs"), (300, "gen_throughput")]);
    }
}
