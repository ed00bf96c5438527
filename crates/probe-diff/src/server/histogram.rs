//! Quantiles of a server's cumulative latency histograms, as Prometheus'
//! `histogram_quantile` computes them: the bucket holding the rank, linear interpolation
//! between its lower and upper bound (the lowest bucket starts at 0), and the highest finite
//! bound when the rank falls in the `+Inf` bucket (so the value is then a lower bound, said in
//! the source).

use probe_model::{HistogramBucket, HistogramScrape, LifetimeValue, ServerHistogram};

/// Where a quantile fell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Quantile {
    /// Inside a finite bucket (interpolated).
    Within(f64),
    /// Above the highest finite bound: at least this.
    Above(f64),
}

impl Quantile {
    pub fn value(self) -> f64 {
        match self {
            Quantile::Within(v) | Quantile::Above(v) => v,
        }
    }
}

/// The `q` quantile (0..=1) of a histogram with `total` observations; `None` without
/// observations, finite buckets or a sane `q`.
pub fn quantile(buckets: &[HistogramBucket], total: f64, q: f64) -> Option<Quantile> {
    if !(0.0..=1.0).contains(&q) || !total.is_finite() || total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let mut lower = (0.0_f64, 0.0_f64);
    for b in buckets {
        if !(b.le.is_finite() && b.count.is_finite()) {
            continue;
        }
        if b.count >= rank && b.count > lower.1 {
            let start = if lower.0 < b.le {
                lower.0
            } else {
                b.le.min(0.0)
            };
            let share = (rank - lower.1) / (b.count - lower.1);
            return Some(Quantile::Within(
                start + (b.le - start) * share.clamp(0.0, 1.0),
            ));
        }
        if b.count >= rank {
            return Some(Quantile::Within(b.le));
        }
        lower = (b.le, b.count);
    }
    buckets
        .iter()
        .rev()
        .find(|b| b.le.is_finite())
        .map(|b| Quantile::Above(b.le))
}

/// `{name}_p50`, `{name}_p90` and `{name}_mean` (from `_sum`) of each histogram with
/// observations, in seconds, over the server's lifetime.
pub fn lifetime_latencies(histograms: &[ServerHistogram], out: &mut Vec<LifetimeValue>) {
    for h in histograms.iter().filter(|h| h.count > 0.0) {
        latencies(h, None, out);
    }
}

/// Requests that must have finished between two scrapes for their latency to be a value: a
/// 90th percentile of three requests says little.
const MIN_NOW_OBSERVATIONS: f64 = 10.0;

/// `{name}_p50_now`, `{name}_p90_now` and `{name}_mean_now` of the observations between an
/// earlier scrape and the reading's own: the latency of those seconds. A histogram whose counts
/// went down (the server restarted between the scrapes) or that saw fewer than
/// [`MIN_NOW_OBSERVATIONS`] gives nothing.
pub fn window_latencies(
    earlier: Option<&HistogramScrape>,
    histograms: &[ServerHistogram],
    out: &mut Vec<LifetimeValue>,
) {
    let Some(earlier) = earlier.filter(|e| e.window_ms > 0) else {
        return;
    };
    let window = earlier.window_ms as f64 / 1000.0;
    for h in histograms {
        let Some(e) = earlier.histograms.iter().find(|e| e.name == h.name) else {
            continue;
        };
        if let Some(d) = between(e, h).filter(|d| d.count >= MIN_NOW_OBSERVATIONS) {
            latencies(&d, Some(window), out);
        }
    }
}

/// The observations of `after` that `before` had not seen; `None` when a count went down, a
/// bound is missing from `before`, or nothing was observed in between.
fn between(before: &ServerHistogram, after: &ServerHistogram) -> Option<ServerHistogram> {
    let count = after.count - before.count;
    if count.is_nan() || count <= 0.0 {
        return None;
    }
    let mut buckets = Vec::with_capacity(after.buckets.len());
    for b in &after.buckets {
        let old = before.buckets.iter().find(|x| x.le == b.le)?;
        let c = b.count - old.count;
        if c < 0.0 {
            return None;
        }
        buckets.push(HistogramBucket { le: b.le, count: c });
    }
    let sum = match (after.sum, before.sum) {
        (Some(a), Some(b)) if a >= b => Some(a - b),
        _ => None,
    };
    Some(ServerHistogram {
        name: after.name.clone(),
        source: after.source.clone(),
        buckets,
        count,
        sum,
    })
}

/// The p50, p90 and mean of one histogram: over the lifetime (`window` `None`), or over the
/// `window` seconds its observations came in (names end `_now`).
fn latencies(h: &ServerHistogram, window: Option<f64>, out: &mut Vec<LifetimeValue>) {
    let stem = h.name.strip_suffix("_seconds").unwrap_or(&h.name);
    let (suffix, over) = match window {
        Some(w) => ("_now", format!(" in the {w:.1} s between two scrapes")),
        None => ("", String::new()),
    };
    for (label, q) in [("p50", 0.5), ("p90", 0.9)] {
        let Some(v) = quantile(&h.buckets, h.count, q) else {
            continue;
        };
        let how = match v {
            Quantile::Within(_) => "interpolated in its bucket",
            Quantile::Above(_) => "above the highest bucket bound: at least this",
        };
        out.push(LifetimeValue {
            name: format!("{stem}_{label}{suffix}"),
            value: v.value(),
            unit: "s".into(),
            source: format!(
                "{label} of {} observations{over} of {} ({} buckets, bounds from le; {how})",
                h.count,
                h.source,
                h.buckets.len()
            ),
            window_s: window,
        });
    }
    if let Some(sum) = h.sum.filter(|s| s.is_finite()) {
        out.push(LifetimeValue {
            name: format!("{stem}_mean{suffix}"),
            value: sum / h.count,
            unit: "s".into(),
            source: format!("_sum {sum} / _count {}{over} of {}", h.count, h.source),
            window_s: window,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_inside_a_bucket_is_interpolated() {
        use probe_model::HistogramBucket;

        let b = |le, count| HistogramBucket { le, count };
        let buckets = [b(0.25, 2.0), b(0.5, 8.0), b(1.0, 10.0)];
        // Rank 5 of 10 lies half-way through the (0.25, 0.5] bucket.
        assert_eq!(quantile(&buckets, 10.0, 0.5), Some(Quantile::Within(0.375)));
    }

    fn b(le: f64, count: f64) -> HistogramBucket {
        HistogramBucket { le, count }
    }

    fn hist(counts: &[f64], total: f64, sum: f64) -> ServerHistogram {
        let les = [0.1, 0.25, 0.5, 1.0, 2.5];
        ServerHistogram {
            name: "ttft_seconds".into(),
            source: "GET /metrics vllm:time_to_first_token_seconds".into(),
            buckets: les.iter().zip(counts).map(|(l, c)| b(*l, *c)).collect(),
            count: total,
            sum: Some(sum),
        }
    }

    /// (earlier counts, counts now, window ms) -> the `_now` values, by name.
    #[test]
    fn the_latency_between_two_scrapes() {
        let lifetime = hist(&[900.0, 990.0, 1000.0, 1000.0, 1000.0], 1000.0, 150.0);
        type Case<'a> = (ServerHistogram, u64, &'a [(&'a str, f64)]);
        let cases: Vec<Case> = vec![
            // 100 requests in 8 s, every one between 1 and 2.5 s: the lifetime said 0.1.
            (
                hist(&[900.0, 990.0, 1000.0, 1010.0, 1100.0], 1100.0, 330.0),
                8000,
                &[
                    ("ttft_p50_now", 1.0 + 1.5 * 40.0 / 90.0),
                    ("ttft_p90_now", 1.0 + 1.5 * 80.0 / 90.0),
                    ("ttft_mean_now", 1.8),
                ],
            ),
            // Nothing finished in between: no value, not a zero.
            (lifetime.clone(), 8000, &[]),
            // Three requests: too few for a percentile.
            (
                hist(&[900.0, 990.0, 1000.0, 1003.0, 1003.0], 1003.0, 153.0),
                8000,
                &[],
            ),
            // The server restarted between the scrapes: its counts went down.
            (hist(&[5.0, 5.0, 6.0, 6.0, 6.0], 6.0, 1.0), 8000, &[]),
            // No time between them.
            (
                hist(&[900.0, 990.0, 1000.0, 1010.0, 1100.0], 1100.0, 330.0),
                0,
                &[],
            ),
        ];
        for (now, window_ms, want) in cases {
            let earlier = HistogramScrape {
                window_ms,
                histograms: vec![lifetime.clone()],
            };
            let mut out = Vec::new();
            window_latencies(Some(&earlier), std::slice::from_ref(&now), &mut out);
            let got: Vec<(&str, f64)> = out.iter().map(|v| (v.name.as_str(), v.value)).collect();
            assert_eq!(got.len(), want.len(), "{got:?}");
            for ((gn, gv), (wn, wv)) in got.iter().zip(want.iter()) {
                assert_eq!(gn, wn);
                assert!((gv - wv).abs() < 1e-9, "{gn}: {gv} vs {wv}");
            }
            assert!(
                out.iter()
                    .all(|v| v.window_s == Some(window_ms as f64 / 1000.0))
            );
            assert!(
                out.iter()
                    .all(|v| v.source.contains("in the 8.0 s between two scrapes")),
                "{out:?}"
            );
        }
    }

    #[test]
    fn quantile_table() {
        let sglang_ttft = [b(0.1, 0.0), b(0.2, 50.0), b(0.4, 90.0), b(0.6, 100.0)];
        let one = [b(0.5, 10.0)];
        let first = [b(0.1, 4.0)];
        // (buckets, total, q, expected)
        let cases: Vec<(&[HistogramBucket], f64, f64, Option<Quantile>)> = vec![
            (&sglang_ttft, 100.0, 0.5, Some(Quantile::Within(0.2))),
            (&sglang_ttft, 100.0, 0.9, Some(Quantile::Within(0.4))),
            (
                &sglang_ttft,
                100.0,
                0.7,
                Some(Quantile::Within(0.30000000000000004)),
            ),
            // Everything in the lowest bucket: interpolated from 0.
            (&one, 10.0, 0.5, Some(Quantile::Within(0.25))),
            // Rank above every finite bucket (+Inf holds the rest): at least the last bound.
            (&sglang_ttft, 200.0, 0.9, Some(Quantile::Above(0.6))),
            (&[], 10.0, 0.5, None),
            (&sglang_ttft, 0.0, 0.5, None),
            (&sglang_ttft, 100.0, 1.5, None),
            (&sglang_ttft, f64::NAN, 0.5, None),
            // q = 0: the first bucket's lower edge.
            (&first, 4.0, 0.0, Some(Quantile::Within(0.0))),
        ];
        for (i, (buckets, total, q, expected)) in cases.into_iter().enumerate() {
            assert_eq!(quantile(buckets, total, q), expected, "case {i}");
        }
    }

    #[test]
    fn lifetime_latencies_name_their_inputs() {
        let h = ServerHistogram {
            name: "ttft_seconds".into(),
            source: "GET /metrics vllm:time_to_first_token_seconds".into(),
            buckets: vec![b(0.1, 5.0), b(0.25, 10.0)],
            count: 10.0,
            sum: Some(1.2),
        };
        let mut out = Vec::new();
        lifetime_latencies(&[h], &mut out);
        let names: Vec<&str> = out.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["ttft_p50", "ttft_p90", "ttft_mean"]);
        assert_eq!(out[0].value, 0.1);
        assert!((out[1].value - 0.22).abs() < 1e-9, "{}", out[1].value);
        assert!((out[2].value - 0.12).abs() < 1e-9);
        assert!(
            out[0].source.contains("10 observations"),
            "{}",
            out[0].source
        );
    }

    proptest::proptest! {
        #[test]
        fn a_quantile_lies_within_the_bounds(
            raw in proptest::collection::vec((0.0f64..100.0, 0.0f64..1000.0), 0..20),
            total in 0.0f64..2000.0,
            q in 0.0f64..=1.0,
        ) {
            let mut bounds: Vec<(f64, f64)> = raw;
            bounds.sort_by(|a, c| a.0.total_cmp(&c.0));
            let mut last = 0.0f64;
            let buckets: Vec<HistogramBucket> = bounds
                .into_iter()
                .map(|(le, c)| { last = last.max(c); b(le, last) })
                .collect();
            let top = buckets.last().map_or(0.0, |x| x.le);
            if let Some(v) = quantile(&buckets, total, q) {
                proptest::prop_assert!(v.value() >= 0.0 && v.value() <= top, "{v:?} top {top}");
            }
        }
    }
}
