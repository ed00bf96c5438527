//! Benchmark result files (the `benchmarks` section): what `python -m sglang.bench_serving`,
//! `vllm bench serve`, `genai-perf` and `guidellm` left on the host, read into
//! [`BenchmarkResult`]s.
//!
//! Formats, as the tools write them (read from their sources):
//! * SGLang `bench_serving` appends one JSON object a line to `--output-file` (default
//!   `{backend}_{MMDD}_{num_prompts}_{in}_{out}.jsonl`): `backend`, `dataset_name`,
//!   `request_rate` (a bare `Infinity` for "all at once": Python's `json.dumps`),
//!   `max_concurrency`, `random_input_len`, `random_output_len`, `duration`, `completed`,
//!   `total_input_tokens`, `total_output_tokens`, `request_throughput`, `output_throughput`,
//!   `{mean,median,p99}_{ttft,itl,tpot,e2e_latency}_ms`, `concurrency`, `accept_length`; later
//!   versions add `server_info` (its `GET /get_server_info` at the end of the run). No date: the
//!   file's mtime dates its last line only.
//! * vLLM (`vllm/benchmarks/serve.py`, before it `benchmarks/benchmark_serving.py`) writes one
//!   object to `{label}-{rate}qps[-concurrency{N}]-{model}-{YYYYMMDD-HHMMSS}.json`: `date`
//!   (`%Y%m%d-%H%M%S`, the host's local time), `backend`, `label`, `model_id`, `num_prompts`,
//!   `request_rate` (`"inf"`), `burstiness`, `max_concurrency`, then the metrics
//!   (`output_throughput`, `total_token_throughput`, `{mean,median,std,pNN}_{ttft,tpot,itl,
//!   e2el}_ms`).
//! * genai-perf's `profile_export_genai_perf.json`: one object per metric
//!   (`time_to_first_token`, `inter_token_latency`, `request_latency`,
//!   `output_token_throughput`, `request_throughput`, `input_sequence_length`,
//!   `output_sequence_length`) with `unit`, `avg`, `p50`, `p90`, `p99`, and `input_config`.
//! * guidellm's `benchmarks.json`: `benchmarks[]` with `start_time`/`end_time` (Unix seconds)
//!   and `metrics.<name>.successful.{mean,median,percentiles.{p50,p90,p99}}`.
//!
//! Hostile input: every file is bounded by the probe, a value is taken only when it has the
//! expected type and a sane range, every string is sanitised, and a file that is none of these
//! is skipped with a word in the section's notes.

use probe_model::{
    BenchmarkDateSource, BenchmarkResult, BenchmarkTool, BenchmarkWorkload, LatencyStats, UnixTime,
};
use serde_json::{Map, Value};

use crate::frame::{file_header, records};
use crate::sanitize::sanitize_line;

/// Results kept per file and in all.
const MAX_PER_FILE: usize = 64;
const MAX_RESULTS: usize = 256;
/// Scalar fields of an embedded `server_info` kept, and the longest string value.
const MAX_INFO_KEYS: usize = 400;
const MAX_INFO_STRING: usize = 1024;
/// Numbers above this are not measurements.
const MAX_NUMBER: f64 = 1e12;

/// What the section gave: the results, and one note for each file that was found but not read.
#[derive(Debug, Default, PartialEq)]
pub struct Read {
    pub results: Vec<BenchmarkResult>,
    pub notes: Vec<String>,
}

/// Reads the `benchmarks` section. `tz` is the host's UTC offset (vLLM dates are local).
pub fn parse(body: &[u8], boundary: &str, tz: i64) -> Read {
    let mut out = Read::default();
    for r in records(body, boundary) {
        if r.kind != 'F' {
            continue;
        }
        let h = file_header(&r.header);
        let owner = (h.tag != "-" && !h.tag.is_empty()).then(|| sanitize_line(&h.tag));
        if !h.is_ok() {
            out.notes.push(format!("{}: {}", h.path, h.describe()));
            continue;
        }
        let cut = h.size.is_some_and(|s| s > r.data.len() as u64);
        let file = File {
            path: &h.path,
            owner,
            mtime: h.mtime,
            tz,
        };
        let before = out.results.len();
        let skipped = read_file(&file, r.data, cut, &mut out.results);
        if out.results.len() == before {
            let why = if cut {
                "larger than the probe reads: not read"
            } else {
                "not a benchmark result this probe knows"
            };
            out.notes.push(format!("{}: {why}", h.path));
        } else if skipped > 0 {
            out.notes
                .push(format!("{}: {skipped} records not read", h.path));
        }
        out.results.truncate(MAX_RESULTS);
    }
    out
}

/// The file a result came from.
struct File<'a> {
    path: &'a str,
    owner: Option<String>,
    mtime: Option<UnixTime>,
    tz: i64,
}

impl File<'_> {
    fn result(&self, tool: BenchmarkTool, record: usize) -> BenchmarkResult {
        BenchmarkResult {
            file: self.path.to_string(),
            owner: self.owner.clone(),
            file_mtime: self.mtime,
            record: u32::try_from(record).unwrap_or(u32::MAX),
            tool,
            ..Default::default()
        }
    }
}

/// Reads one file's results into `out`; returns how many records were skipped.
fn read_file(f: &File<'_>, data: &[u8], cut: bool, out: &mut Vec<BenchmarkResult>) -> usize {
    let text = String::from_utf8_lossy(data);
    if f.path.ends_with(".jsonl") {
        return read_jsonl(f, &text, cut, out);
    }
    if cut {
        return 0;
    }
    let Some(v) = json(&text) else { return 0 };
    let before = out.len();
    if let Some(list) = v.get("benchmarks").and_then(Value::as_array) {
        for (i, b) in list.iter().take(MAX_PER_FILE).enumerate() {
            if let Some(r) = guidellm(f, i, b) {
                out.push(r);
            }
        }
        return list.len().saturating_sub(out.len() - before);
    }
    let Some(o) = v.as_object() else { return 0 };
    let r = if is_genai_perf(o) {
        Some(genai_perf(f, o))
    } else if is_flat_serving(o) {
        Some(flat(f, 0, o, BenchmarkTool::VllmBenchServe, f.mtime))
    } else {
        None
    };
    out.extend(r);
    0
}

/// SGLang's appended JSONL: one result a line. A tail read cut mid-line loses its first line;
/// only the last line is dated (by the file's mtime).
fn read_jsonl(f: &File<'_>, text: &str, cut: bool, out: &mut Vec<BenchmarkResult>) -> usize {
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if cut && !lines.is_empty() {
        lines.remove(0);
    }
    let first = lines.len().saturating_sub(MAX_PER_FILE);
    let mut skipped = first;
    let last = lines.len().saturating_sub(1);
    for (i, line) in lines.iter().enumerate().skip(first) {
        let o = json(line);
        let Some(o) = o
            .as_ref()
            .and_then(Value::as_object)
            .filter(|o| is_flat_serving(o))
        else {
            skipped += 1;
            continue;
        };
        let tool = if is_vllm(o) {
            BenchmarkTool::VllmBenchServe
        } else {
            BenchmarkTool::SglangBenchServing
        };
        let date = if i == last { f.mtime } else { None };
        out.push(flat(f, i, o, tool, date));
    }
    skipped
}

/// Parses JSON as Python writes it: bare `NaN` becomes `null` and `Infinity` the string
/// `"inf"` (what vLLM writes for an unbounded rate), outside strings only.
fn json(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str(text) {
        return Some(v);
    }
    serde_json::from_str(&pythonic(text)).ok()
}

fn pythonic(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_str, mut esc) = (false, false);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_str {
            out.push(c);
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
            rest = rest.get(c.len_utf8()..).unwrap_or("");
            continue;
        }
        let word = [
            ("-Infinity", "\"-inf\""),
            ("Infinity", "\"inf\""),
            ("NaN", "null"),
        ]
        .into_iter()
        .find(|(w, _)| rest.starts_with(w));
        if let Some((w, with)) = word {
            out.push_str(with);
            rest = rest.get(w.len()..).unwrap_or("");
            continue;
        }
        if c == '"' {
            in_str = true;
        }
        out.push(c);
        rest = rest.get(c.len_utf8()..).unwrap_or("");
    }
    out
}

/// A flat serving-benchmark object (SGLang's and vLLM's share the metric names).
fn is_flat_serving(o: &Map<String, Value>) -> bool {
    o.contains_key("output_throughput")
        && (o.contains_key("completed") || o.contains_key("duration"))
}

/// vLLM's own keys (SGLang writes neither).
fn is_vllm(o: &Map<String, Value>) -> bool {
    o.get("date").is_some_and(Value::is_string) || o.contains_key("burstiness")
}

fn is_genai_perf(o: &Map<String, Value>) -> bool {
    ["output_token_throughput", "time_to_first_token"]
        .iter()
        .any(|k| o.get(*k).is_some_and(|m| m.get("avg").is_some()))
}

/// A number in a sane range.
fn num(v: Option<&Value>) -> Option<f64> {
    let x = v?.as_f64()?;
    (x.is_finite() && (0.0..MAX_NUMBER).contains(&x)).then_some(x)
}

fn get_num(o: &Map<String, Value>, k: &str) -> Option<f64> {
    num(o.get(k))
}

fn count(o: &Map<String, Value>, k: &str) -> Option<u64> {
    o.get(k)
        .and_then(Value::as_u64)
        .filter(|n| (*n as f64) < MAX_NUMBER)
}

fn string(v: Option<&Value>) -> Option<String> {
    let s = v?.as_str()?;
    let s = sanitize_line(s);
    (!s.is_empty()).then(|| s.chars().take(MAX_INFO_STRING).collect())
}

/// A request rate: a number, `"inf"`, or nothing.
fn rate(w: &mut BenchmarkWorkload, v: Option<&Value>) {
    match v {
        Some(Value::String(s)) if s.eq_ignore_ascii_case("inf") => w.request_rate_inf = true,
        Some(Value::String(s)) => w.request_rate = s.parse().ok().filter(|x: &f64| x.is_finite()),
        other => w.request_rate = num(other),
    }
}

/// `{mean,median,p90,p99}_{name}_ms` of a flat object.
fn flat_stats(o: &Map<String, Value>, name: &str) -> LatencyStats {
    let g = |p: &str| get_num(o, &format!("{p}_{name}_ms"));
    LatencyStats {
        mean: g("mean"),
        p50: g("median").or_else(|| g("p50")),
        p90: g("p90"),
        p99: g("p99"),
    }
}

/// An SGLang or vLLM result object. `date` is the file's date for this record, if any.
fn flat(
    f: &File<'_>,
    record: usize,
    o: &Map<String, Value>,
    tool: BenchmarkTool,
    date: Option<UnixTime>,
) -> BenchmarkResult {
    let mut r = f.result(tool, record);
    (r.date, r.date_source) = match vllm_date(o.get("date"), f.tz) {
        Some(d) => (Some(d), BenchmarkDateSource::Content),
        None => match name_date(f.path, f.tz) {
            Some(d) => (Some(d), BenchmarkDateSource::FileName),
            None => (
                date,
                date.map_or(BenchmarkDateSource::Unknown, |_| {
                    BenchmarkDateSource::FileMtime
                }),
            ),
        },
    };
    r.backend = string(o.get("backend"));
    r.label = string(o.get("label"));
    r.model = string(o.get("model_id")).or_else(|| string(o.get("model")));
    let completed = count(o, "completed");
    let mean_of = |total: &str| Some(get_num(o, total)? / completed.filter(|c| *c > 0)? as f64);
    let w = &mut r.workload;
    w.dataset = string(o.get("dataset_name"));
    w.input_len = mean_of("total_input_tokens").or_else(|| get_num(o, "random_input_len"));
    w.output_len = mean_of("total_output_tokens").or_else(|| get_num(o, "random_output_len"));
    w.max_concurrency = get_num(o, "max_concurrency");
    w.concurrency = get_num(o, "concurrency");
    rate(w, o.get("request_rate"));
    w.num_prompts = count(o, "num_prompts");
    w.completed = completed;
    w.duration_s = get_num(o, "duration");
    let m = &mut r.measured;
    m.output_throughput = get_num(o, "output_throughput");
    m.total_token_throughput =
        get_num(o, "total_token_throughput").or_else(|| get_num(o, "total_throughput"));
    m.request_throughput = get_num(o, "request_throughput");
    m.ttft_ms = flat_stats(o, "ttft");
    m.itl_ms = flat_stats(o, "itl");
    m.tpot_ms = flat_stats(o, "tpot");
    m.e2e_ms = flat_stats(o, "e2e_latency");
    if m.e2e_ms.is_empty() {
        m.e2e_ms = flat_stats(o, "e2el");
    }
    m.accept_length =
        get_num(o, "accept_length").or_else(|| get_num(o, "spec_decode_acceptance_length"));
    if let Some(info) = o.get("server_info").and_then(Value::as_object) {
        server_info(&mut r, info);
    }
    r
}

/// The scalar fields of an embedded `/get_server_info` (a PD deployment's decode side).
fn server_info(r: &mut BenchmarkResult, info: &Map<String, Value>) {
    let info = info
        .get("decode")
        .and_then(Value::as_array)
        .and_then(|d| d.first())
        .and_then(Value::as_object)
        .unwrap_or(info);
    for (k, v) in info.iter().take(MAX_INFO_KEYS) {
        let v = match v {
            Value::String(s) => {
                Value::String(sanitize_line(s).chars().take(MAX_INFO_STRING).collect())
            }
            Value::Number(_) | Value::Bool(_) | Value::Null => v.clone(),
            _ => continue,
        };
        r.server_info.insert(sanitize_line(k), v);
    }
    r.server_version = string(info.get("version"));
    if r.measured.accept_length.is_none() {
        r.measured.accept_length = info
            .get("internal_states")
            .and_then(Value::as_array)
            .and_then(|s| s.first())
            .and_then(|s| num(s.get("avg_spec_accept_length")));
    }
    if r.model.is_none() {
        r.model = string(info.get("model_path"));
    }
}

/// vLLM's `date`: `YYYYMMDD-HHMMSS` in the host's local time.
fn vllm_date(v: Option<&Value>, tz: i64) -> Option<UnixTime> {
    compact_date(v?.as_str()?, tz)
}

fn compact_date(s: &str, tz: i64) -> Option<UnixTime> {
    let b = s.as_bytes();
    if b.len() != 15 || b.get(8) != Some(&b'-') {
        return None;
    }
    if !s
        .chars()
        .enumerate()
        .all(|(i, c)| i == 8 || c.is_ascii_digit())
    {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<u32>().ok());
    let t = super::civil(
        i64::from(n(0..4)?),
        n(4..6)?,
        n(6..8)?,
        n(9..11)?,
        n(11..13)?,
        n(13..15)?,
    )?;
    Some(t - tz)
}

/// The `YYYYMMDD-HHMMSS` a vLLM result file name ends with.
fn name_date(path: &str, tz: i64) -> Option<UnixTime> {
    let name = path.rsplit('/').next()?.strip_suffix(".json")?;
    compact_date(name.get(name.len().checked_sub(15)?..)?, tz)
}

/// genai-perf: one object per metric, with its unit.
fn genai_perf(f: &File<'_>, o: &Map<String, Value>) -> BenchmarkResult {
    let mut r = f.result(BenchmarkTool::GenaiPerf, 0);
    (r.date, r.date_source) = (
        f.mtime,
        f.mtime.map_or(BenchmarkDateSource::Unknown, |_| {
            BenchmarkDateSource::FileMtime
        }),
    );
    let avg = |k: &str| num(o.get(k).and_then(|m| m.get("avg")));
    let ms = |k: &str| {
        let Some(m) = o.get(k) else {
            return LatencyStats::default();
        };
        let scale = match m.get("unit").and_then(Value::as_str) {
            Some("ns") => 1e-6,
            Some("us") => 1e-3,
            Some("s" | "sec") => 1e3,
            _ => 1.0,
        };
        let g = |p: &str| num(m.get(p)).map(|x| x * scale);
        LatencyStats {
            mean: g("avg"),
            p50: g("p50"),
            p90: g("p90"),
            p99: g("p99"),
        }
    };
    let m = &mut r.measured;
    m.output_throughput = avg("output_token_throughput");
    m.request_throughput = avg("request_throughput");
    m.ttft_ms = ms("time_to_first_token");
    m.itl_ms = ms("inter_token_latency");
    m.e2e_ms = ms("request_latency");
    r.workload.input_len = avg("input_sequence_length");
    r.workload.output_len = avg("output_sequence_length");
    if let Some(c) = o.get("input_config") {
        let stimulus = c.pointer("/perf_analyzer/stimulus");
        let pick = |k: &str| num(c.get(k)).or_else(|| num(stimulus.and_then(|s| s.get(k))));
        r.workload.max_concurrency = pick("concurrency");
        r.workload.request_rate = pick("request_rate");
        r.model = match c.get("model") {
            Some(Value::Array(a)) => string(a.first()),
            other => string(other),
        }
        .or_else(|| string(c.pointer("/model_names/0")));
        r.backend = string(c.get("service_kind")).or_else(|| string(c.get("endpoint_type")));
    }
    r
}

/// One guidellm benchmark: `metrics.<name>.successful`, dated by its own start and end.
fn guidellm(f: &File<'_>, i: usize, b: &Value) -> Option<BenchmarkResult> {
    let metrics = b.get("metrics")?.as_object()?;
    let mut r = f.result(BenchmarkTool::Guidellm, i);
    let when = num(b.get("end_time"))
        .or_else(|| num(b.pointer("/run_stats/end_time")))
        .or_else(|| num(b.get("start_time")));
    (r.date, r.date_source) = match when {
        Some(t) => (Some(t as UnixTime), BenchmarkDateSource::Content),
        None => (
            f.mtime,
            f.mtime.map_or(BenchmarkDateSource::Unknown, |_| {
                BenchmarkDateSource::FileMtime
            }),
        ),
    };
    let dist = |k: &str, scale: f64| {
        let Some(s) = metrics.get(k).and_then(|m| m.get("successful")) else {
            return LatencyStats::default();
        };
        let g = |p: &str| {
            num(s.get(p))
                .or_else(|| num(s.get("percentiles").and_then(|q| q.get(p))))
                .map(|x| x * scale)
        };
        LatencyStats {
            mean: g("mean"),
            p50: g("median").or_else(|| g("p50")),
            p90: g("p90"),
            p99: g("p99"),
        }
    };
    let m = &mut r.measured;
    m.output_throughput = dist("output_tokens_per_second", 1.0).mean;
    m.total_token_throughput = dist("tokens_per_second", 1.0).mean;
    m.request_throughput = dist("requests_per_second", 1.0).mean;
    m.ttft_ms = dist("time_to_first_token_ms", 1.0);
    m.itl_ms = dist("inter_token_latency_ms", 1.0);
    m.tpot_ms = dist("time_per_output_token_ms", 1.0);
    m.e2e_ms = dist("request_latency", 1000.0);
    let w = &mut r.workload;
    w.concurrency = dist("request_concurrency", 1.0).mean;
    w.input_len = dist("prompt_token_count", 1.0).mean;
    w.output_len = dist("output_token_count", 1.0).mean;
    w.duration_s = num(b.get("duration"));
    w.completed = metrics
        .get("request_totals")
        .and_then(|t| t.get("successful"))
        .and_then(Value::as_u64);
    let strategy = ["/config/strategy", "/args/strategy", "/config/profile"]
        .iter()
        .find_map(|p| b.pointer(p));
    if let Some(s) = strategy {
        w.max_concurrency = match s.get("streams") {
            Some(Value::Array(a)) => num(a.first()),
            other => num(other),
        };
        w.request_rate = match s.get("rate") {
            Some(Value::Array(a)) => num(a.first()),
            other => num(other),
        };
    }
    r.model = string(b.pointer("/config/model")).or_else(|| string(b.pointer("/args/model")));
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "0123456789abcdef0123456789abcdef";

    fn file(status: &str, tag: &str, mtime: i64, size: usize, path: &str, body: &str) -> String {
        format!("\n{B} F {status} {tag} {mtime} {size} {path}\n{body}")
    }

    fn one(path: &str, body: &str) -> Read {
        parse(
            file("ok", "qwen", 1_790_000_000, body.len(), path, body).as_bytes(),
            B,
            0,
        )
    }

    const SGLANG: &str = r#"{"backend": "sglang", "dataset_name": "random", "request_rate": Infinity, "max_concurrency": 1, "sharegpt_output_len": null, "random_input_len": 1024, "random_output_len": 512, "random_range_ratio": 1.0, "duration": 73.1, "completed": 10, "total_input_tokens": 10240, "total_output_tokens": 5120, "total_output_tokens_retokenized": 5118, "request_throughput": 0.137, "input_throughput": 140.1, "output_throughput": 70.04, "mean_e2e_latency_ms": 7310.2, "median_e2e_latency_ms": 7301.0, "std_e2e_latency_ms": 20.1, "p99_e2e_latency_ms": 7350.9, "mean_ttft_ms": 61.2, "median_ttft_ms": 60.0, "std_ttft_ms": 2.0, "p99_ttft_ms": 70.3, "mean_tpot_ms": 14.2, "median_tpot_ms": 14.1, "std_tpot_ms": 0.2, "p99_tpot_ms": 14.6, "mean_itl_ms": 39.9, "median_itl_ms": 39.0, "std_itl_ms": 3.0, "p95_itl_ms": 41.0, "p99_itl_ms": 45.0, "concurrency": 1.0, "accept_length": 2.81, "server_info": {"model_path": "/models/Qwen3-8B", "speculative_num_steps": 3, "max_running_requests": 4, "version": "0.5.6", "internal_states": [{"avg_spec_accept_length": 2.81}], "api_key": "sk-x"}}"#;

    #[test]
    fn sglang_jsonl_last_line_dated_by_mtime() {
        let body = format!("{SGLANG}\n{SGLANG}\n");
        let r = one("/home/qwen/bench/sglang_1120_10_1024_512.jsonl", &body);
        assert_eq!(r.results.len(), 2, "{:?}", r.notes);
        let (a, b) = (&r.results[0], &r.results[1]);
        assert_eq!(a.tool, BenchmarkTool::SglangBenchServing);
        assert_eq!(
            (a.date, a.date_source),
            (None, BenchmarkDateSource::Unknown)
        );
        assert_eq!(
            (b.date, b.date_source),
            (Some(1_790_000_000), BenchmarkDateSource::FileMtime)
        );
        assert_eq!(b.record, 1);
        assert_eq!(b.owner.as_deref(), Some("qwen"));
        assert!(b.workload.request_rate_inf);
        assert_eq!(b.workload.max_concurrency, Some(1.0));
        assert_eq!(b.workload.input_len, Some(1024.0));
        assert_eq!(b.workload.output_len, Some(512.0));
        assert_eq!(b.measured.output_throughput, Some(70.04));
        assert_eq!(b.measured.ttft_ms.p50, Some(60.0));
        assert_eq!(b.measured.itl_ms.p99, Some(45.0));
        assert_eq!(b.measured.e2e_ms.mean, Some(7310.2));
        assert_eq!(b.measured.accept_length, Some(2.81));
        assert_eq!(b.server_version.as_deref(), Some("0.5.6"));
        assert_eq!(b.server_info["speculative_num_steps"], 3);
        assert_eq!(b.model.as_deref(), Some("/models/Qwen3-8B"));
        assert!(!b.server_info.contains_key("internal_states"));
    }

    #[test]
    fn vllm_result_dated_by_its_local_date() {
        let body = r#"{"date": "20261120-093000", "backend": "vllm", "label": null, "model_id": "Qwen/Qwen3-8B", "tokenizer_id": "Qwen/Qwen3-8B", "num_prompts": 200, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 8, "duration": 40.5, "completed": 200, "total_input_tokens": 204800, "total_output_tokens": 25600, "request_throughput": 4.9, "request_goodput": null, "output_throughput": 632.1, "total_token_throughput": 5689.0, "max_output_tokens_per_s": 700.0, "max_concurrent_requests": 8, "mean_ttft_ms": 120.0, "median_ttft_ms": 110.0, "std_ttft_ms": 10.0, "p99_ttft_ms": 300.0, "mean_tpot_ms": 11.0, "median_tpot_ms": 10.5, "p99_tpot_ms": 15.0, "mean_itl_ms": 11.2, "median_itl_ms": 10.9, "p99_itl_ms": 30.0, "mean_e2el_ms": 1500.0, "median_e2el_ms": 1490.0, "p99_e2el_ms": 1800.0}"#;
        let path = "/srv/vllm/vllm-infqps-concurrency8-Qwen3-8B-20261120-093000.json";
        let r = parse(
            file("ok", "-", 1, body.len(), path, body).as_bytes(),
            B,
            3600,
        );
        let x = &r.results[0];
        assert_eq!(x.tool, BenchmarkTool::VllmBenchServe);
        assert_eq!(x.date_source, BenchmarkDateSource::Content);
        // 2026-11-20 09:30:00 at UTC+1.
        assert_eq!(x.date, super::super::civil(2026, 11, 20, 8, 30, 0));
        assert_eq!(x.owner, None);
        assert!(x.workload.request_rate_inf);
        assert_eq!(x.workload.input_len, Some(1024.0));
        assert_eq!(x.workload.output_len, Some(128.0));
        assert_eq!(x.measured.e2e_ms.p50, Some(1490.0));
        assert_eq!(x.measured.total_token_throughput, Some(5689.0));
        assert_eq!(x.model.as_deref(), Some("Qwen/Qwen3-8B"));
    }

    #[test]
    fn vllm_date_from_the_file_name() {
        let body = r#"{"output_throughput": 10.0, "completed": 5, "request_rate": 2.0}"#;
        let r = one("/root/x-2qps-m-20261101-120000.json", body);
        let x = &r.results[0];
        assert_eq!(x.date_source, BenchmarkDateSource::FileName);
        assert_eq!(x.date, super::super::civil(2026, 11, 1, 12, 0, 0));
        assert_eq!(x.workload.request_rate, Some(2.0));
    }

    #[test]
    fn genai_perf_and_guidellm() {
        let gp = r#"{"request_throughput": {"unit": "requests/sec", "avg": 2.87}, "request_latency": {"unit": "ms", "avg": 348.0, "p50": 340.0, "p90": 360.0, "p99": 400.0}, "time_to_first_token": {"unit": "ms", "avg": 26.0, "p50": 25.0, "p90": 30.0, "p99": 40.0}, "inter_token_latency": {"unit": "ms", "avg": 21.4, "p50": 21.0, "p99": 25.0}, "output_token_throughput": {"unit": "tokens/sec", "avg": 45.84}, "output_sequence_length": {"unit": "tokens", "avg": 15.96}, "input_sequence_length": {"unit": "tokens", "avg": 549.66}, "input_config": {"model": ["llama-3.1-8b-instruct"], "concurrency": 1, "service_kind": "openai"}}"#;
        let r = one(
            "/home/u/artifacts/m-openai-chat-concurrency1/profile_export_genai_perf.json",
            gp,
        );
        let x = &r.results[0];
        assert_eq!(x.tool, BenchmarkTool::GenaiPerf);
        assert_eq!(x.measured.output_throughput, Some(45.84));
        assert_eq!(x.measured.ttft_ms.p90, Some(30.0));
        assert_eq!(x.workload.max_concurrency, Some(1.0));
        assert_eq!(x.workload.input_len, Some(549.66));
        assert_eq!(x.model.as_deref(), Some("llama-3.1-8b-instruct"));
        assert_eq!(x.date_source, BenchmarkDateSource::FileMtime);

        let gl = r#"{"benchmarks": [{"start_time": 1790000000.5, "end_time": 1790000060.2, "duration": 59.7, "config": {"strategy": {"type_": "concurrent", "streams": 4}}, "metrics": {"request_totals": {"successful": 95}, "output_tokens_per_second": {"successful": {"mean": 150.5}}, "time_to_first_token_ms": {"successful": {"mean": 80.0, "median": 75.0, "percentiles": {"p90": 90.0, "p99": 120.0}}}, "request_latency": {"successful": {"mean": 2.5, "median": 2.4}}, "request_concurrency": {"successful": {"mean": 3.9}}, "inter_token_latency_ms": {"successful": {"mean": NaN}}}}]}"#;
        let r = one("/home/u/benchmarks.json", gl);
        let x = &r.results[0];
        assert_eq!(x.tool, BenchmarkTool::Guidellm);
        assert_eq!(x.date, Some(1_790_000_060));
        assert_eq!(x.measured.output_throughput, Some(150.5));
        assert_eq!(x.measured.ttft_ms.p99, Some(120.0));
        assert_eq!(x.measured.e2e_ms.p50, Some(2400.0));
        assert_eq!(x.measured.itl_ms.mean, None);
        assert_eq!(x.workload.max_concurrency, Some(4.0));
        assert_eq!(x.workload.concurrency, Some(3.9));
        assert_eq!(x.workload.completed, Some(95));
    }

    #[test]
    fn what_is_not_read_is_said() {
        // (status word, path, body, note expected)
        let cases: &[(&str, &str, &str, &str)] = &[
            ("notfile", "/home/u/fifo.jsonl", "", "not a regular file"),
            ("symlink", "/home/u/l.json", "", "symbolic link"),
            ("denied", "/home/u/d.json", "", "denied"),
            (
                "ok",
                "/home/u/config.json",
                r#"{"architectures": ["X"]}"#,
                "not a benchmark",
            ),
            (
                "ok",
                "/home/u/broken.json",
                "{\"output_throughput\": 1",
                "not a benchmark",
            ),
            (
                "ok",
                "/home/u/data.jsonl",
                "{\"text\": \"hi\"}\n",
                "not a benchmark",
            ),
        ];
        for (st, path, body, note) in cases {
            let r = parse(file(st, "u", 1, body.len(), path, body).as_bytes(), B, 0);
            assert!(r.results.is_empty(), "{path}");
            assert_eq!(r.notes.len(), 1, "{path}");
            assert!(r.notes[0].contains(note), "{path}: {:?}", r.notes);
        }
    }

    #[test]
    fn a_cut_file_is_read_only_where_whole() {
        // A JSONL tail that starts mid-line: the partial first line is dropped.
        let body = format!("ut_throughput\": 3}}\n{SGLANG}\n");
        let r = parse(
            file("ok", "u", 5, body.len() + 100, "/h/x.jsonl", &body).as_bytes(),
            B,
            0,
        );
        assert_eq!(r.results.len(), 1);
        assert_eq!(r.results[0].date, Some(5));
        // A cut JSON object is not guessed at.
        let r = parse(
            file(
                "ok",
                "u",
                5,
                10_000_000,
                "/h/x.json",
                "{\"output_throughput\": 3,",
            )
            .as_bytes(),
            B,
            0,
        );
        assert!(r.results.is_empty());
        assert!(r.notes[0].contains("larger than"));
    }

    #[test]
    fn hostile_values_are_dropped_or_cleaned() {
        let body = "{\"output_throughput\": -5, \"completed\": 1e30, \"duration\": 1e300, \"backend\": \"\\u001b[31mred\", \"request_rate\": \"NaN\", \"mean_ttft_ms\": \"12\"}";
        let r = one("/h/x.json", body);
        let x = &r.results[0];
        assert_eq!(x.measured.output_throughput, None);
        assert_eq!(x.workload.completed, None);
        assert_eq!(x.workload.duration_s, None);
        assert_eq!(x.workload.request_rate, None);
        assert_eq!(x.measured.ttft_ms.mean, None);
        assert!(!x.backend.as_deref().unwrap_or("").contains('\u{1b}'));
    }

    #[test]
    fn pythonic_json_leaves_strings_alone() {
        assert_eq!(
            pythonic(r#"{"a": NaN, "b": "NaN Infinity \" NaN", "c": -Infinity}"#),
            r#"{"a": null, "b": "NaN Infinity \" NaN", "c": "-inf"}"#
        );
    }

    proptest::proptest! {
        /// JSON-shaped hostile text (keys the reader looks for, any values, cut anywhere):
        /// never a panic, never a negative or non-finite number, never a control character.
        #[test]
        fn hostile_results_are_read_safely(
            body in r#"(\{"(output_throughput|completed|duration|date|request_rate|benchmarks|metrics|successful|mean|server_info|avg|input_config|time_to_first_token)": ?(-?[0-9.e+]{1,8}|"[^"]{0,12}"|NaN|Infinity|\[|\{|null|true)[,}\]]{0,3}){1,12}\n?"#,
            jsonl in proptest::bool::ANY,
            cut in 0usize..4,
        ) {
            let path = if jsonl { "/h/r.jsonl" } else { "/h/r.json" };
            let size = body.len() + cut;
            let r = parse(file("ok", "u", 1, size, path, &body).as_bytes(), B, 0);
            for x in &r.results {
                let m = &x.measured;
                for v in [m.output_throughput, m.ttft_ms.mean, m.e2e_ms.p50, x.workload.request_rate, x.workload.duration_s].into_iter().flatten() {
                    proptest::prop_assert!(v.is_finite() && v >= 0.0);
                }
                for s in x.backend.iter().chain(x.model.iter()) {
                    proptest::prop_assert!(!s.chars().any(char::is_control));
                }
            }
        }
    }
}
