//! The servers' first scrape: their latency histograms asked while the collection script still
//! runs, so that the reading's own scrape, seconds later, tells the latency of those seconds
//! (`now`) beside the process's lifetime. Nothing is waited for: the window is the time the
//! collection takes anyway.

use std::time::{Duration, Instant};

use probe_model::{HistogramScrape, ServerHistogram, Snapshot};
use probe_transport::forward::{self, Forward};

use super::endpoints::{Reads, endpoints};
use super::{AskOptions, prom, targets};

/// The longest one early scrape may take.
const PER_SERVER: Duration = Duration::from_secs(2);

/// One server's latency histograms from the first scrape.
#[derive(Debug, Clone)]
pub struct EarlyScrape {
    /// `127.0.0.1:8000`, as its reading's `address`.
    pub address: String,
    /// When the answer was in.
    pub at: Instant,
    pub histograms: Vec<ServerHistogram>,
}

/// Scrapes the latency histograms of each server `snapshot` says runs (round 1's view), each
/// within [`PER_SERVER`] and all within `opts.deadline`; a server that does not answer, or
/// answers without histograms, gives nothing (its reading says what it answered later).
pub async fn scrape_histograms<F: Forward>(
    fwd: &F,
    snapshot: &Snapshot,
    opts: &AskOptions,
) -> Vec<EarlyScrape> {
    let started = Instant::now();
    let cfg = endpoints();
    let mut out = Vec::new();
    for t in targets(snapshot) {
        let (Some(ip), None) = (t.ip, &t.skip) else {
            continue;
        };
        let Some(def) = cfg
            .for_engine(t.engine)
            .and_then(|e| e.requests.iter().find(|d| d.reads == Reads::Metrics))
        else {
            continue;
        };
        // Metrics the engine serves only when asked to (SGLang's `--enable-metrics`): asked
        // early only where the launch asks for them.
        if let Some(arg) = &def.when_arg
            && !t.set.contains(&arg.replace('_', "-"))
        {
            continue;
        }
        let left = opts
            .deadline
            .saturating_sub(started.elapsed())
            .min(PER_SERVER);
        if left.is_zero() {
            break;
        }
        let req = cfg.http(def);
        let Ok(Ok(reply)) =
            tokio::time::timeout(left, forward::http_request(fwd, ip, t.port, &req)).await
        else {
            continue;
        };
        if !(200..300).contains(&reply.status) {
            continue;
        }
        let text = String::from_utf8_lossy(&reply.body);
        let histograms = prom::histograms(&text, &cfg.histograms, cfg.limits.max_line, &req.path);
        if !histograms.is_empty() {
            out.push(EarlyScrape {
                address: format!("{ip}:{}", t.port),
                at: Instant::now(),
                histograms,
            });
        }
    }
    out
}

/// The earlier scrape of the server at `address` as its reading keeps it, given when the
/// reading's own scrape was in.
pub(super) fn earlier_of(
    early: &[EarlyScrape],
    address: &str,
    own: Option<Instant>,
) -> Option<HistogramScrape> {
    let e = early.iter().find(|e| e.address == address)?;
    let window = own?.checked_duration_since(e.at)?;
    Some(HistogramScrape {
        window_ms: u64::try_from(window.as_millis()).unwrap_or(u64::MAX),
        histograms: e.histograms.clone(),
    })
}
