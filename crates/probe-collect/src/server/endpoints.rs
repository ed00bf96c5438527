//! `configs/endpoints.toml`: which requests each engine is asked, the limits, and which metrics
//! are kept under which engine-neutral name.

use std::sync::LazyLock;
use std::time::Duration;

use probe_model::{Engine, ServerMetricKind};
use probe_transport::forward::{HttpRequest, Method};
use serde::Deserialize;

use crate::config::ConfigError;

const ENDPOINTS: &str = include_str!("../../../../configs/endpoints.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoints {
    pub limits: Limits,
    pub accept: Accept,
    #[serde(rename = "engine")]
    pub engines: Vec<EngineRequests>,
    #[serde(rename = "metric")]
    pub metrics: Vec<MetricDef>,
    #[serde(rename = "internal_state", default)]
    pub internal_states: Vec<InternalState>,
    #[serde(rename = "histogram", default)]
    pub histograms: Vec<HistogramDef>,
}

/// A latency histogram read from `/metrics`: its engine-neutral name and the metric names
/// (without `_bucket`/`_sum`/`_count`) it has under each engine, the first present one read.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistogramDef {
    pub name: String,
    pub names: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    pub timeout_ms: u64,
    pub json_cap: usize,
    pub metrics_cap: usize,
    pub max_servers: usize,
    pub max_requests: usize,
    pub max_line: usize,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accept {
    pub json: String,
    pub metrics: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineRequests {
    pub name: String,
    pub requests: Vec<RequestDef>,
}

/// How an answer is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reads {
    ServerInfo,
    ModelInfo,
    Version,
    Models,
    Props,
    Info,
    /// The models a server holds loaded now, each with its size and the part of it in GPU
    /// memory (Ollama's `/api/ps`: `{"models": [{name, size, size_vram, context_length}]}`).
    LoadedModels,
    Metrics,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestDef {
    pub path: String,
    pub reads: Reads,
    #[serde(default)]
    pub when_arg: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Counter,
    Gauge,
}

impl From<Kind> for ServerMetricKind {
    fn from(k: Kind) -> Self {
        match k {
            Kind::Counter => ServerMetricKind::Counter,
            Kind::Gauge => ServerMetricKind::Gauge,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricDef {
    pub name: String,
    pub kind: Kind,
    pub names: Vec<String>,
    /// A constant gauge whose labels are configuration, stored as args with this prefix.
    #[serde(default)]
    pub info: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InternalState {
    pub name: String,
    pub key: String,
}

static EMBEDDED: LazyLock<Endpoints> =
    LazyLock::new(|| crate::config::built_in("configs/endpoints.toml", parse(ENDPOINTS)));

/// The embedded endpoints (a broken file fails the tests, never a run).
pub fn endpoints() -> &'static Endpoints {
    &EMBEDDED
}

pub fn parse(text: &str) -> Result<Endpoints, ConfigError> {
    let e: Endpoints = toml::from_str(text)?;
    for eng in &e.engines {
        if Engine::parse(&eng.name).is_none() {
            return Err(ConfigError::Invalid(format!(
                "unknown engine {:?}",
                eng.name
            )));
        }
        if eng.requests.len() > e.limits.max_requests {
            return Err(ConfigError::Invalid(format!(
                "{}: {} requests, more than max_requests {}",
                eng.name,
                eng.requests.len(),
                e.limits.max_requests
            )));
        }
        for r in &eng.requests {
            if !probe_transport::forward::plain_path(&r.path) {
                return Err(ConfigError::Invalid(format!(
                    "{}: {:?} is not a plain path",
                    eng.name, r.path
                )));
            }
        }
    }
    Ok(e)
}

impl Endpoints {
    pub fn for_engine(&self, engine: Engine) -> Option<&EngineRequests> {
        self.engines
            .iter()
            .find(|e| Engine::parse(&e.name) == Some(engine))
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.limits.timeout_ms)
    }

    /// The HTTP request sent for `def`: always `GET`, the configured path, no body.
    pub fn http(&self, def: &RequestDef) -> HttpRequest {
        let (accept, cap) = match def.reads {
            Reads::Metrics => (&self.accept.metrics, self.limits.metrics_cap),
            _ => (&self.accept.json, self.limits.json_cap),
        };
        HttpRequest {
            method: Method::Get,
            path: def.path.clone(),
            accept: accept.clone(),
            timeout: self.timeout(),
            body_cap: cap,
        }
    }
}

/// Every request the configuration can produce, per engine (for the read-only test).
pub fn all_requests() -> Vec<(Engine, HttpRequest)> {
    let e = endpoints();
    e.engines
        .iter()
        .filter_map(|eng| Engine::parse(&eng.name).map(|engine| (engine, eng)))
        .flat_map(|(engine, eng)| eng.requests.iter().map(move |r| (engine, e.http(r))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_file_loads_and_typos_fail() {
        let e = endpoints();
        assert!(e.for_engine(Engine::Sglang).is_some());
        assert!(e.for_engine(Engine::Vllm).is_some());
        assert!(e.for_engine(Engine::Ollama).is_some());
        assert!(e.for_engine(Engine::Trtllm).is_none());
        let typo = ENDPOINTS.replace("timeout_ms", "timeout_msec");
        assert!(
            parse(&typo)
                .unwrap_err()
                .to_string()
                .contains("timeout_msec")
        );
        let bad_path = ENDPOINTS.replace("\"/version\"", "\"http://x/version\"");
        assert!(
            parse(&bad_path)
                .unwrap_err()
                .to_string()
                .contains("plain path")
        );
        let bad_reads = ENDPOINTS.replace("reads = \"version\"", "reads = \"post\"");
        assert!(parse(&bad_reads).is_err());
    }
}
