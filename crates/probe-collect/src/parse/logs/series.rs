//! The engines' metric values as bounded time series with summaries, and the log's
//! start-up limits they come with.

use std::collections::BTreeMap;

use probe_model::{LogSource, MetricSeries, MetricSummary, UnixTime};

use super::startups::merge_limits;
use crate::parse::engine_lines::{self, Found};

/// Older points kept per series at most, evenly spread over the whole log (when this many have
/// come, every other one is let go, and from then on every second one is taken), besides the
/// newest [`RECENT_POINTS`]; the summary covers all samples.
pub const MAX_POINTS: usize = 2048;
/// The newest points of a series, kept all (the running run's samples).
pub const RECENT_POINTS: usize = 1024;
/// Running accumulation of one series.
#[derive(Default)]
pub(super) struct Acc {
    unit: &'static str,
    /// The points before the newest [`RECENT_POINTS`], every `stride`-th of them (`offered`
    /// counts them).
    points: Vec<(Option<UnixTime>, f64)>,
    stride: usize,
    offered: usize,
    /// The newest points, all of them.
    recent: std::collections::VecDeque<(Option<UnixTime>, f64)>,
    all: Vec<f64>,
    first_time: Option<UnixTime>,
    last_time: Option<UnixTime>,
}

impl Acc {
    /// Keeps the newest [`RECENT_POINTS`] points all, and of the older ones every `stride`-th,
    /// halving them (and doubling the stride) when they reach [`MAX_POINTS`]: the points stay
    /// evenly spread over the whole log, and which older sample is a point depends only on its
    /// place in the log and the stride, not on how many lines came after it.
    fn offer(&mut self, point: (Option<UnixTime>, f64)) {
        self.recent.push_back(point);
        if self.recent.len() <= RECENT_POINTS {
            return;
        }
        let Some(older) = self.recent.pop_front() else {
            return;
        };
        let stride = self.stride.max(1);
        if self.offered.is_multiple_of(stride) {
            self.points.push(older);
        }
        self.offered += 1;
        if self.points.len() >= MAX_POINTS {
            let mut i = 0;
            self.points.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.stride = stride * 2;
        }
    }

    /// The older points, then the newest.
    fn into_points(self) -> Vec<(Option<UnixTime>, f64)> {
        let mut points = self.points;
        points.extend(self.recent);
        points
    }
}
/// Adds one value to the series `name`.
fn push_point(
    acc: &mut BTreeMap<&'static str, Acc>,
    name: &'static str,
    unit: &'static str,
    time: Option<UnixTime>,
    v: f64,
) {
    let a = acc.entry(name).or_default();
    if a.all.iter().len() == 0 && a.points.is_empty() {
        a.unit = unit;
    }
    a.all.push(v);
    a.offer((time, v));
    if time.is_some() {
        if a.first_time.is_none() {
            a.first_time = time;
        }
        a.last_time = time;
    }
}

/// The engines' metric and limit lines (`configs/log_lines.toml`): their metric values into
/// series, their start-up limits into the log's limit records.
pub(super) fn record_engine_lines(
    l: &str,
    time: Option<UnixTime>,
    acc: &mut BTreeMap<&'static str, Acc>,
    found: &mut Vec<Found>,
    src: &mut LogSource,
) {
    let mut limits = Vec::new();
    let mut repeats = true;
    engine_lines::read_into(l, found);
    for f in found.drain(..) {
        match f {
            Found::Metric { name, unit, value } => push_point(acc, name, unit, time, value),
            Found::Limit {
                key,
                engine,
                value,
                repeated,
            } => {
                limits.push((key, engine, value));
                repeats &= repeated;
            }
        }
    }
    if !limits.is_empty() {
        merge_limits(limits, time, repeats, src);
    }
}

/// Turns the accumulated series into the log's metrics (points spread over the whole log, the
/// newest all, and a summary of all).
pub(super) fn finish_series(acc: BTreeMap<&'static str, Acc>, src: &mut LogSource) {
    for (name, a) in acc {
        let unit = a.unit.to_string();
        let summary = summarize(&a.all, a.first_time, a.last_time);
        src.metrics.push(MetricSeries {
            name: name.to_string(),
            unit,
            points: a.into_points(),
            summary,
        });
    }
}
/// count/min/max/mean/p50/p90/last over all samples.
pub fn summarize(
    v: &[f64],
    first_time: Option<UnixTime>,
    last_time: Option<UnixTime>,
) -> MetricSummary {
    if v.is_empty() {
        return MetricSummary {
            first_time,
            last_time,
            ..Default::default()
        };
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        let i = ((s.len() - 1) as f64 * p).round() as usize;
        s.get(i).copied().unwrap_or(0.0)
    };
    MetricSummary {
        count: v.len() as u64,
        min: s.first().copied().unwrap_or(0.0),
        max: s.last().copied().unwrap_or(0.0),
        mean: v.iter().sum::<f64>() / v.len() as f64,
        p50: pct(0.5),
        p90: pct(0.9),
        last: v.last().copied().unwrap_or(0.0),
        first_time,
        last_time,
    }
}
