//! What a running model server said about itself when probe asked it (HTTP `GET` on a loopback
//! port of the host, over the SSH connection), and what `probe-diff` makes of it: the server's
//! own view of its configuration against the launch it came from, lifetime performance from its
//! counters, and findings.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Engine, UnixTime};

/// How asking one server went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServerStatus {
    /// Every request asked was answered.
    Answered,
    /// Some requests were answered, others were not (see `requests`).
    Partial,
    /// The server wants credentials; probe sends none, so nothing more was read.
    NeedsAuthentication,
    /// Nothing listens on the port.
    PortClosed,
    /// The SSH server refuses port forwarding (`AllowTcpForwarding no`).
    ForwardingRefused,
    /// No answer within the time cap.
    TimedOut,
    /// Something else failed (message says what).
    Failed,
    /// Not asked (the server binds an address probe does not ask, or asking is off).
    #[default]
    NotAsked,
}

impl ServerStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerStatus::Answered => "answered",
            ServerStatus::Partial => "partial",
            ServerStatus::NeedsAuthentication => "needs authentication",
            ServerStatus::PortClosed => "port closed",
            ServerStatus::ForwardingRefused => "forwarding refused",
            ServerStatus::TimedOut => "timed out",
            ServerStatus::Failed => "failed",
            ServerStatus::NotAsked => "not asked",
        }
    }
}

/// One request probe sent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ServerRequest {
    /// `GET` or `HEAD`.
    pub method: String,
    pub path: String,
    /// HTTP status; `None` when no answer came.
    pub status: Option<u16>,
    /// Body bytes kept.
    pub bytes: u64,
    /// The body was cut at its cap.
    pub truncated: bool,
    pub duration_ms: u64,
    /// Why there is no usable answer (one line), when there is none.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServerMetricKind {
    /// Grows over the server's life (tokens, preemptions, drafts).
    Counter,
    /// A value now (running requests, KV usage).
    #[default]
    Gauge,
}

/// One reading of the server's own metrics, under probe's engine-neutral name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ServerMetric {
    /// Engine-neutral name (`generation_tokens_total`, `kv_cache_usage`).
    pub name: String,
    pub kind: ServerMetricKind,
    pub value: f64,
    /// Where it came from: `GET /metrics vllm:generation_tokens_total` or
    /// `GET /get_server_info internal_states[0].avg_spec_accept_length`.
    pub source: String,
}

/// One latency histogram of the server's `/metrics` (cumulative since the process started),
/// reduced to its buckets: bounds as the `le` labels gave them (an engine's bounds can be
/// configured), counts summed over the label sets of rank 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ServerHistogram {
    /// Engine-neutral name (`ttft_seconds`, `itl_seconds`, `tpot_seconds`,
    /// `e2e_latency_seconds`, `queue_time_seconds`).
    pub name: String,
    /// `GET /metrics vllm:time_to_first_token_seconds`.
    pub source: String,
    /// Finite upper bounds with the cumulative count of observations at or below each,
    /// ascending.
    pub buckets: Vec<HistogramBucket>,
    /// All observations (the `+Inf` bucket, else `_count`).
    pub count: f64,
    /// Sum of all observations (`_sum`), when the server gave it.
    pub sum: Option<f64>,
}

/// One cumulative bucket of a [`ServerHistogram`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HistogramBucket {
    /// The bucket's upper bound (`le`).
    pub le: f64,
    /// Observations at or below `le`.
    pub count: f64,
}

/// A value derived from the server's counters over the process's lifetime.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LifetimeValue {
    /// `generation_throughput`, `prompt_throughput`, `accept_length`, `prefix_cache_hit_rate`,
    /// `preemptions_per_hour`.
    pub name: String,
    pub value: f64,
    /// `tokens/s`, `tokens`, `ratio`, `1/h`.
    pub unit: String,
    /// How it was computed, naming its inputs (`generation_tokens_total / uptime 3600 s`).
    pub source: String,
    /// Seconds between the two scrapes a value of the recent past was computed from (the
    /// latency "now": `ttft_p90_now`); absent for a value over the process's lifetime.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_s: Option<f64>,
}

/// The server's latency histograms as an earlier scrape in the same collection found them
/// (asked while round 2 ran): the observations between it and the reading's own scrape are the
/// latency of the recent past, not of the process's lifetime.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HistogramScrape {
    /// Milliseconds from this scrape to the reading's own (this machine's monotonic clock).
    pub window_ms: u64,
    pub histograms: Vec<ServerHistogram>,
}

/// What one server said about itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ServerReading {
    pub engine: Engine,
    /// The launch it was asked for, as an evidence label (`pid:2231`, `unit:vllm.service`).
    pub launch: String,
    /// This reading as evidence of the launch: `server:127.0.0.1:30000`.
    pub evidence: String,
    /// `127.0.0.1:30000` on the host.
    pub address: String,
    pub status: ServerStatus,
    /// One line on why the status is not `answered`.
    pub message: Option<String>,
    /// The engine version the server reports.
    pub version: Option<String>,
    /// The model it serves (id or path) as it reports it.
    pub model: Option<String>,
    /// The server's own configuration: SGLang's resolved server args and scheduler limits,
    /// vLLM's `cache_config_info` labels and `/v1/models` fields, llama.cpp's `/props`, TGI's
    /// `/info`; keys as the engine names them. Secrets redacted.
    pub args: BTreeMap<String, serde_json::Value>,
    /// Selected counters and gauges.
    pub metrics: Vec<ServerMetric>,
    /// Lifetime values from the counters and the process's uptime. Derived by the analysis
    /// (probe-diff) in the report's view; the collector stores only the counters, and a snapshot
    /// holds values here only when an older release wrote them.
    pub lifetime: Vec<LifetimeValue>,
    /// Latency histograms (time to first token, inter-token, per-request time per output
    /// token, end to end, queue), over the process's lifetime.
    #[serde(default)]
    pub histograms: Vec<ServerHistogram>,
    /// The same histograms scraped earlier in the collection, when they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub earlier: Option<HistogramScrape>,
    /// Seconds the serving process had run when asked (from `/proc`: start time vs now).
    pub uptime_s: Option<u64>,
    /// Remote time of asking.
    pub asked_at: Option<UnixTime>,
    /// Every request sent, in order.
    pub requests: Vec<ServerRequest>,
}

impl ServerReading {
    /// The evidence label of a reading of the server at `address`: `server:127.0.0.1:30000`
    /// (its [`ServerReading::evidence`], and the prefix of the changes it gives).
    pub fn label(address: &str) -> String {
        format!("server:{address}")
    }
}

/// How a server-reported value relates to the launch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EffectiveKind {
    /// The launch sets it and the server runs with something else.
    Differs,
    /// The launch leaves it to the engine and the engine resolved it (KV tokens, max running
    /// requests, chunked prefill size, attention backend, CUDA graph sizes).
    #[default]
    Resolved,
    /// The server runs with a non-default value that no launch text shows (a config file,
    /// an environment variable, a wrapper).
    NotInLaunch,
}

/// One server-reported value next to the launch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct EffectiveValue {
    /// The launch option's canonical name (`mem-fraction-static`), or the server's key where
    /// no option carries it (`max_total_num_tokens`).
    pub key: String,
    pub kind: EffectiveKind,
    /// What the launch says (`None`: not set).
    pub declared: Option<serde_json::Value>,
    /// The engine's default in the catalog, when it has one.
    pub default: Option<serde_json::Value>,
    /// What the server reports.
    pub effective: serde_json::Value,
    /// Where the server reported it (`GET /get_server_info max_total_num_tokens`).
    pub source: String,
}

/// A named finding on a server's own readings (rules of `configs/impact.toml`,
/// `[[server_rule]]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ServerFinding {
    /// Rule name (`spec_zero_drafts`).
    pub rule: String,
    /// `high`, `medium`, `low`.
    pub severity: String,
    /// One line, with the numbers.
    pub message: String,
}

/// The report's view of one server: the reading, compared with its launch, and findings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ServerView {
    pub reading: ServerReading,
    pub effective: Vec<EffectiveValue>,
    pub findings: Vec<ServerFinding>,
}
