//! Asking each running model server about itself, read-only: after the collection script, for
//! every running launch `probe-launch` reconstructed, a handful of `GET` requests from
//! `configs/endpoints.toml` to the port the launch names, on a loopback address of the host,
//! through [`probe_transport::forward`]. The answers become [`Snapshot::servers`].
//!
//! What is sent is exactly what [`endpoints::all_requests`] lists (the read-only test checks
//! it): `GET`, an allow-listed path, no body, no credentials. A server that answers 401/403 is
//! recorded as needing authentication and asked nothing more; a closed port, refused
//! forwarding or a timeout is recorded on that server alone.

pub mod answers;
pub mod endpoints;
pub mod prom;
mod scrape;

pub use scrape::{EarlyScrape, scrape_histograms};

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use probe_model::{
    Engine, LaunchConfig, ServerReading, ServerRequest, ServerStatus, Snapshot, UnixTime,
};
use probe_transport::forward::{self, Forward, ForwardError};

use crate::redact::Redactor;
use endpoints::{Reads, endpoints};

/// How to ask.
#[derive(Debug, Clone)]
pub struct AskOptions {
    /// Redact secrets in what servers answer (false only with `--no-redact`).
    pub redact: bool,
    /// Deadline for asking every server of the host.
    pub deadline: Duration,
}

impl Default for AskOptions {
    fn default() -> Self {
        AskOptions {
            redact: true,
            deadline: Duration::from_secs(20),
        }
    }
}

/// A server to ask, from a running launch.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub engine: Engine,
    pub launch: String,
    pub ip: Option<Ipv4Addr>,
    pub port: u16,
    /// When the serving process started (for its uptime).
    pub started: Option<UnixTime>,
    /// Why it is not asked, when it is not.
    pub skip: Option<String>,
    /// The launch's options that are set and not `false` (`enable-metrics`): what a request
    /// asked only `when_arg` needs, before the server said its own args.
    pub set: Vec<String>,
}

/// Why a server is not asked: it binds no IPv4 loopback address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotLoopback {
    #[error("binds only {0}; probe asks loopback addresses only")]
    Other(Ipv4Addr),
    /// Not an IPv4 address (the first 60 characters of what the launch says).
    #[error("binds {0:?}; probe asks IPv4 loopback addresses only")]
    NotIpv4(String),
}

/// The address asked for a server bound to `host` (`None`: the engine's default bind): a
/// loopback address as written, 127.0.0.1 for wildcard binds, nothing for other addresses.
pub fn loopback_for(host: Option<&str>) -> Result<Ipv4Addr, NotLoopback> {
    let Some(h) = host.map(str::trim).filter(|h| !h.is_empty()) else {
        return Ok(Ipv4Addr::LOCALHOST);
    };
    match h {
        "0.0.0.0" | "::" | "[::]" | "*" | "localhost" => Ok(Ipv4Addr::LOCALHOST),
        _ => match h.parse::<Ipv4Addr>() {
            Ok(ip) if ip.is_loopback() => Ok(ip),
            Ok(ip) if ip.is_unspecified() => Ok(Ipv4Addr::LOCALHOST),
            Ok(ip) => Err(NotLoopback::Other(ip)),
            Err(_) => Err(NotLoopback::NotIpv4(h.chars().take(60).collect())),
        },
    }
}

fn value_str(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The port a launch serves on: the option as written, else the engine's default.
fn port_of(launch: &LaunchConfig, common: &serde_json::Value) -> Option<u16> {
    let written = common.get("port").and_then(value_str);
    let default = || {
        probe_launch::catalog::catalog(launch.engine, launch.engine_version.as_deref())
            .by_common("port")
            .and_then(|spec| spec.default.as_ref())
            .and_then(value_str)
    };
    written.or_else(default)?.trim().parse().ok()
}

/// The servers to ask: one per running launch of an engine `configs/endpoints.toml` knows,
/// one per address.
pub fn targets(snapshot: &Snapshot) -> Vec<Target> {
    targets_of(snapshot, &probe_launch::launches_of(snapshot))
}

/// [`targets`], from the snapshot's launches already read.
pub fn targets_of(snapshot: &Snapshot, launches: &[LaunchConfig]) -> Vec<Target> {
    let cfg = endpoints();
    let mut out: Vec<Target> = Vec::new();
    for launch in launches {
        if !launch.source.running || cfg.for_engine(launch.engine).is_none() {
            continue;
        }
        let common = probe_launch::common::common_fields(launch);
        let Some(port) = port_of(launch, &common) else {
            continue;
        };
        let host = common.get("host").and_then(value_str);
        let (ip, skip) = match loopback_for(host.as_deref()) {
            Ok(ip) => (Some(ip), None),
            Err(why) => (None, Some(why.to_string())),
        };
        if out
            .iter()
            .any(|t| t.ip == ip && t.port == port && ip.is_some())
        {
            continue;
        }
        out.push(Target {
            engine: launch.engine,
            launch: probe_launch::evidence_label(launch),
            ip,
            port,
            started: probe_launch::run_start(snapshot, launch),
            skip,
            set: launch
                .options
                .iter()
                .filter(|(_, o)| o.value != serde_json::Value::Bool(false))
                .map(|(k, _)| k.clone())
                .collect(),
        });
    }
    out.truncate(cfg.limits.max_servers);
    out
}

fn remote_now(snapshot: &Snapshot, started: Instant) -> Option<UnixTime> {
    let base = snapshot.remote_clock?;
    let since =
        i64::try_from((Duration::from_millis(snapshot.duration_ms) + started.elapsed()).as_secs())
            .unwrap_or(0);
    Some(base + since)
}

/// Asks every running server of `snapshot` and records the answers in `snapshot.servers`.
pub async fn ask_servers<F: Forward>(fwd: &F, snapshot: &mut Snapshot, opts: &AskOptions) {
    let launches = probe_launch::launches_of(snapshot);
    ask_servers_of(fwd, snapshot, &launches, opts, &[]).await;
}

/// [`ask_servers`], for the snapshot's `launches` already read (asking a server changes
/// `snapshot.servers`, never its launches), each reading keeping the histograms of its
/// server's `early` scrape ([`scrape_histograms`]) with the time between the two.
pub async fn ask_servers_of<F: Forward>(
    fwd: &F,
    snapshot: &mut Snapshot,
    launches: &[LaunchConfig],
    opts: &AskOptions,
    early: &[EarlyScrape],
) {
    let started = Instant::now();
    let redactor = opts.redact.then(Redactor::builtin);
    for t in targets_of(snapshot, launches) {
        let asked_at = remote_now(snapshot, started);
        let mut reading = ServerReading {
            engine: t.engine,
            launch: t.launch.clone(),
            address: format!("{}:{}", t.ip.unwrap_or(Ipv4Addr::LOCALHOST), t.port),
            asked_at,
            uptime_s: asked_at
                .zip(t.started)
                .and_then(|(now, start)| u64::try_from(now - start).ok()),
            ..ServerReading::default()
        };
        reading.evidence = ServerReading::label(&reading.address);
        let mut scraped: Option<Instant> = None;
        match (t.ip, &t.skip) {
            (Some(ip), None) => {
                let left = opts.deadline.saturating_sub(started.elapsed());
                if left.is_zero() {
                    reading.status = ServerStatus::NotAsked;
                    reading.message = Some("not asked: no time left before the deadline".into());
                } else if tokio::time::timeout(
                    left,
                    ask(fwd, (ip, t.port), redactor, &mut reading, &mut scraped),
                )
                .await
                .is_err()
                {
                    reading.status = ServerStatus::TimedOut;
                    reading.message = Some(format!(
                        "not finished within the deadline ({} ms)",
                        left.as_millis()
                    ));
                }
            }
            (_, skip) => {
                reading.status = ServerStatus::NotAsked;
                reading.message = skip.clone();
            }
        }
        if !reading.histograms.is_empty() {
            reading.earlier = scrape::earlier_of(early, &reading.address, scraped);
        }
        snapshot.servers.push(reading);
    }
    // The snapshot was redacted when it was assembled, before these readings existed: every
    // string of every field they hold (metric label values and names, server-info keys and
    // values, model ids, versions, error lines) goes through the same pass now, keys giving
    // context. Per-field redaction while reading (`answers::clean`) is not what keeps secrets
    // out: a field added later would escape it.
    if let Some(r) = redactor {
        crate::redact::redact_serde(&mut snapshot.servers, r);
    }
}

fn status_of(e: &ForwardError) -> ServerStatus {
    match e {
        ForwardError::Refused(_) => ServerStatus::ForwardingRefused,
        ForwardError::Closed(_) => ServerStatus::PortClosed,
        ForwardError::TimedOut(_) => ServerStatus::TimedOut,
        ForwardError::NotAllowed(_) => ServerStatus::NotAsked,
        ForwardError::Failed(_) => ServerStatus::Failed,
    }
}

/// Whether the args read so far say `key` is off.
fn arg_off(reading: &ServerReading, key: &str) -> bool {
    reading.args.get(key) == Some(&serde_json::Value::Bool(false))
}

/// The requests of one server, in order; stops at the first answer that says nothing more can
/// be asked (closed, refused, timed out, needs authentication). `scraped`: when its metrics
/// answer was in.
async fn ask<F: Forward>(
    fwd: &F,
    (ip, port): (Ipv4Addr, u16),
    redactor: Option<&Redactor>,
    reading: &mut ServerReading,
    scraped: &mut Option<Instant>,
) {
    let cfg = endpoints();
    let Some(engine) = cfg.for_engine(reading.engine) else {
        return;
    };
    let (mut answered, mut asked) = (0usize, 0usize);
    for def in engine.requests.iter().take(cfg.limits.max_requests) {
        if def.when_arg.as_deref().is_some_and(|k| arg_off(reading, k)) {
            continue;
        }
        asked += 1;
        let req = cfg.http(def);
        let t0 = Instant::now();
        let mut record = ServerRequest {
            method: req.method.as_str().into(),
            path: req.path.clone(),
            ..ServerRequest::default()
        };
        let result = forward::http_request(fwd, ip, port, &req).await;
        record.duration_ms = u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
        match result {
            Err(e) => {
                let line = crate::sanitize::sanitize_line(&e.to_string());
                record.error = Some(line.clone());
                reading.requests.push(record);
                reading.status = status_of(&e);
                reading.message = Some(line);
                return;
            }
            Ok(reply) => {
                record.status = Some(reply.status);
                record.bytes = reply.body.len() as u64;
                record.truncated = reply.truncated;
                if matches!(reply.status, 401 | 403) {
                    record.error = Some("needs authentication".into());
                    reading.requests.push(record);
                    reading.status = ServerStatus::NeedsAuthentication;
                    reading.message = Some(format!(
                        "GET {} answered {}: the server wants credentials; probe sends none",
                        req.path, reply.status
                    ));
                    return;
                }
                if def.reads == Reads::Metrics {
                    *scraped = Some(Instant::now());
                }
                match read_body(def.reads, &reply, &req.path, redactor, reading) {
                    Ok(()) => answered += 1,
                    Err(why) => record.error = Some(why),
                }
                reading.requests.push(record);
            }
        }
    }
    reading.status = match (answered, asked) {
        (0, _) => ServerStatus::Failed,
        (a, n) if a == n => ServerStatus::Answered,
        _ => ServerStatus::Partial,
    };
    if reading.status != ServerStatus::Answered {
        let failed: Vec<String> = reading
            .requests
            .iter()
            .filter_map(|r| {
                r.error
                    .as_ref()
                    .map(|e| format!("{} {}: {e}", r.method, r.path))
            })
            .collect();
        reading.message = Some(failed.join("; "));
    }
}

fn read_body(
    reads: Reads,
    reply: &forward::HttpReply,
    path: &str,
    redactor: Option<&Redactor>,
    reading: &mut ServerReading,
) -> Result<(), String> {
    if !(200..300).contains(&reply.status) {
        return Err(format!("HTTP {}", reply.status));
    }
    let cfg = endpoints();
    let text = String::from_utf8_lossy(&reply.body);
    if reads == Reads::Metrics {
        let read = prom::read(&text, &cfg.metrics, cfg.limits.max_line, path);
        let histograms = prom::histograms(&text, &cfg.histograms, cfg.limits.max_line, path);
        if read.metrics.is_empty() && read.args.is_empty() && histograms.is_empty() {
            return Err("no known metrics in the answer".into());
        }
        reading.metrics.extend(read.metrics);
        reading.histograms.extend(histograms);
        reading.args.extend(read.args);
        return Ok(());
    }
    if reply.truncated {
        return Err(format!("answer larger than {} bytes", reply.body.len()));
    }
    let body: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    answers::fold(reads, &body, path, cfg, redactor, reading);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_address_is_asked() {
        // (host option, asked)
        let cases: &[(Option<&str>, Result<Ipv4Addr, ()>)] = &[
            (None, Ok(Ipv4Addr::LOCALHOST)),
            (Some("0.0.0.0"), Ok(Ipv4Addr::LOCALHOST)),
            (Some("::"), Ok(Ipv4Addr::LOCALHOST)),
            (Some("localhost"), Ok(Ipv4Addr::LOCALHOST)),
            (Some("127.0.0.31"), Ok(Ipv4Addr::new(127, 0, 0, 31))),
            (Some("10.1.2.3"), Err(())),
            (Some("gpu7.internal"), Err(())),
            (Some("::1"), Err(())),
        ];
        for (host, expected) in cases {
            assert_eq!(loopback_for(*host).map_err(|_| ()), *expected, "{host:?}");
        }
    }
}
