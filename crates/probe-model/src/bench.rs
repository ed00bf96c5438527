//! Benchmark results left on the host (`python -m sglang.bench_serving` JSONL, `vllm bench
//! serve` result JSON, `genai-perf` and `guidellm` exports): measured throughput and latency
//! with the workload that produced them, dated, as ground truth for "it was faster before".

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::UnixTime;

/// The tool that wrote a benchmark result file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BenchmarkTool {
    /// `python -m sglang.bench_serving` (one JSON object a line, appended).
    #[default]
    SglangBenchServing,
    /// `vllm bench serve --save-result` / `benchmark_serving.py` (one JSON object).
    VllmBenchServe,
    /// NVIDIA `genai-perf profile` (`profile_export_genai_perf.json`).
    GenaiPerf,
    /// `guidellm benchmark` (`benchmarks.json`, one entry per benchmark).
    Guidellm,
}

/// Where a result's date comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BenchmarkDateSource {
    /// A date the tool wrote into the result (vLLM's `date`, guidellm's `start_time`).
    Content,
    /// The date in the file name (vLLM's `...-YYYYMMDD-HHMMSS.json`).
    FileName,
    /// The file's modification time: the last record of an appended file, or a file written
    /// once at the end of its run.
    FileMtime,
    /// Not known: an earlier record of an appended file (it ran before the file's mtime).
    #[default]
    Unknown,
}

/// The load a benchmark put on the server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct BenchmarkWorkload {
    /// `random`, `sharegpt`, ...
    pub dataset: Option<String>,
    /// Requested or measured mean input (prompt) length, tokens.
    pub input_len: Option<f64>,
    /// Requested or measured mean output length, tokens.
    pub output_len: Option<f64>,
    /// The client's concurrency cap (`--max-concurrency`, genai-perf `--concurrency`).
    pub max_concurrency: Option<f64>,
    /// Requests in flight on average, as the tool measured it.
    pub concurrency: Option<f64>,
    /// Requests per second asked for; `None` with `request_rate_inf` for "all at once".
    pub request_rate: Option<f64>,
    pub request_rate_inf: bool,
    /// Requests sent and completed.
    pub num_prompts: Option<u64>,
    pub completed: Option<u64>,
    pub duration_s: Option<f64>,
}

/// Mean and quantiles of one latency, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LatencyStats {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
}

impl LatencyStats {
    pub fn is_empty(&self) -> bool {
        self.mean.is_none() && self.p50.is_none() && self.p90.is_none() && self.p99.is_none()
    }
}

/// What a benchmark measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct BenchmarkMeasured {
    /// Output tokens per second, all requests together.
    pub output_throughput: Option<f64>,
    /// Input plus output tokens per second.
    pub total_token_throughput: Option<f64>,
    /// Requests per second completed.
    pub request_throughput: Option<f64>,
    /// Time to first token.
    pub ttft_ms: LatencyStats,
    /// Inter-token latency (per token where the tool measures it so).
    pub itl_ms: LatencyStats,
    /// Time per output token per request (decode time / (output tokens - 1)).
    pub tpot_ms: LatencyStats,
    /// End-to-end request latency.
    pub e2e_ms: LatencyStats,
    /// Speculative decoding's mean accept length, when the tool recorded it.
    pub accept_length: Option<f64>,
}

/// One benchmark result found on the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct BenchmarkResult {
    /// The file it was read from (as the host names it).
    pub file: String,
    /// The user whose home or launch directory held it.
    pub owner: Option<String>,
    pub file_mtime: Option<UnixTime>,
    /// 0-based record of an appended (JSONL) file or entry of a multi-benchmark file.
    pub record: u32,
    pub tool: BenchmarkTool,
    /// When it ran (its end, or its start where the tool records that).
    pub date: Option<UnixTime>,
    pub date_source: BenchmarkDateSource,
    /// The client backend (`sglang`, `vllm`, `openai-chat`) and label, as the tool wrote them.
    pub backend: Option<String>,
    pub label: Option<String>,
    /// The model the tool asked for.
    pub model: Option<String>,
    pub workload: BenchmarkWorkload,
    pub measured: BenchmarkMeasured,
    /// The server's own configuration when the result embeds it (SGLang's
    /// `/get_server_info` answer at the end of the run): scalar fields only, as the server
    /// named them. Secrets redacted.
    pub server_info: BTreeMap<String, serde_json::Value>,
    /// The engine version the embedded server info states.
    pub server_version: Option<String>,
}
