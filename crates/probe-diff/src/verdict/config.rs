//! `configs/verdict.toml`: which test each cause gets, and the tolerances the tests use.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use probe_model::SymptomKind;
use serde::Deserialize;

/// The embedded file.
pub const VERDICT_TOML: &str = include_str!("../../../../configs/verdict.toml");

/// The test a cause is held to (probe-model's, as verdicts carry it).
pub use probe_model::Test;

/// One `[[check]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub test: Test,
    pub causes: Vec<String>,
    /// The symptom kinds its mechanism can produce.
    pub explains: Vec<SymptomKind>,
    #[serde(default)]
    pub missing: Vec<String>,
}

/// One `[[symptom]]`: a kind of slowdown and the metrics that measure it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SymptomMetrics {
    pub kind: SymptomKind,
    pub metrics: Vec<String>,
}

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct VerdictConfig {
    pub tolerance: f64,
    pub held: f64,
    pub load_moved: f64,
    pub min_samples: u64,
    pub band_min_samples: usize,
    #[serde(default)]
    pub load_floor: BTreeMap<String, f64>,
    #[serde(default)]
    pub check: Vec<Check>,
    /// The symptom kinds, in the order the verdict looks for one that got worse.
    pub symptom: Vec<SymptomMetrics>,
    pub metrics: MetricNames,
    /// What the `collective` test reads and allows.
    pub collective: Collective,
    /// What the `cuda-graphs` test allows.
    pub graphs: Graphs,
}

/// `[graphs]`: the time a decode step's kernel launches plausibly add per output token when
/// they are no longer replayed as one captured graph (milliseconds, low and high).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Graphs {
    pub added_ms: [f64; 2],
}

/// `[collective]`: the all-reduces a decode step makes per layer, the bytes of one element of
/// the hidden state, and the extra time per all-reduce a slower path plausibly adds for
/// decode-sized messages (microseconds, low and high).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Collective {
    pub all_reduces_per_layer: f64,
    pub bytes_per_element: f64,
    pub added_us: [f64; 2],
}

/// The metric names each test reads (globs).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MetricNames {
    pub accept: Vec<String>,
    pub running: Vec<String>,
    pub usage: Vec<String>,
    pub prompt: Vec<String>,
    pub hit_rate: Vec<String>,
    /// The workload of benchmark results: request rate (or client concurrency), prompt length.
    pub request_rate: Vec<String>,
    pub prompt_length: Vec<String>,
    pub capacity: Vec<String>,
    /// Start-up limits that give the prefill token budget of a step.
    pub prefill_budget: Vec<String>,
    /// Start-up limits that give the layers on the GPU, and the model's layers.
    pub gpu_layers: Vec<String>,
    pub model_layers: Vec<String>,
    /// Start-up limits that give the KV cache the engine sized, in tokens.
    pub kv_size: Vec<String>,
}

/// Whether `name` matches one of `patterns`.
pub fn named(patterns: &[String], name: &str) -> bool {
    let name = fold(name);
    patterns.iter().any(|p| glob(&fold(p), &name))
}

impl VerdictConfig {
    pub fn parse(text: &str) -> Result<VerdictConfig, toml::de::Error> {
        toml::from_str(text)
    }

    /// The check that decides the cause `key`: the first whose patterns match.
    pub fn check_for(&self, key: &str) -> Option<&Check> {
        let key = fold(key);
        self.check
            .iter()
            .find(|check| check.causes.iter().any(|p| glob(&fold(p), &key)))
    }

    /// The metric names of a symptom kind (empty when the file names none).
    pub fn symptom_metrics(&self, kind: SymptomKind) -> &[String] {
        self.symptom
            .iter()
            .find(|s| s.kind == kind)
            .map(|s| s.metrics.as_slice())
            .unwrap_or_default()
    }

    /// How much a load measure must move, absolutely, to count as moved.
    pub fn floor(&self, metric: &str) -> f64 {
        self.load_floor.get(metric).copied().unwrap_or(0.0)
    }
}

/// `_` and `-` are the same character in a key; case does not matter.
fn fold(text: &str) -> String {
    text.to_ascii_lowercase().replace('_', "-")
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return text.is_empty();
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

static CONFIG: LazyLock<VerdictConfig> = LazyLock::new(|| {
    probe_launch::embedded::load("configs/verdict.toml", VerdictConfig::parse(VERDICT_TOML))
});

/// The embedded verdict config.
pub fn config() -> &'static VerdictConfig {
    &CONFIG
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_get_their_tests() {
        let cases = [
            ("limit:max_running_requests", Test::RunningCap),
            ("max-running-requests", Test::RunningCap),
            ("limit:max_total_num_tokens", Test::KvCapacity),
            ("mem-fraction-static", Test::KvCapacity),
            ("speculative.num_steps", Test::Speculative),
            ("speculative", Test::Speculative),
            ("package:flashinfer-python", Test::Version),
            ("engine_version", Test::Version),
            ("gpu.driver_version", Test::Version),
            ("hardware:power-capped", Test::Hardware),
            ("n-gpu-layers", Test::GpuLayers),
            ("limit:gpu_layers", Test::GpuLayers),
            ("env:OLLAMA_NUM_GPU", Test::GpuLayers),
            ("cpu-offload-gb", Test::Offload),
            ("no-kv-offload", Test::Offload),
            ("max-loaded-models", Test::Resident),
            ("num-parallel", Test::KvSize),
            ("context-length", Test::KvSize),
            ("keep-alive", Test::Resident),
            ("max-num-batched-tokens", Test::PrefillBudget),
            ("limit:max_prefill_tokens", Test::PrefillBudget),
            ("chunked-prefill-size", Test::PrefillBudget),
            ("enable-prefix-caching", Test::PrefixCache),
            ("disable-radix-cache", Test::PrefixCache),
            ("cuda-graphs", Test::CudaGraphs),
            ("limit:max_model_len", Test::Other),
            ("attention-backend", Test::Other),
        ];
        for (key, want) in cases {
            assert_eq!(config().check_for(key).map(|c| c.test), Some(want), "{key}");
        }
    }

    /// Every symptom kind is named once, throughput first, each with metrics; every check says
    /// which kinds it can explain.
    #[test]
    fn every_symptom_kind_has_its_metrics() {
        let kinds: Vec<SymptomKind> = config().symptom.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                SymptomKind::Throughput,
                SymptomKind::Ttft,
                SymptomKind::Itl,
                SymptomKind::E2e,
                SymptomKind::Queue
            ]
        );
        assert!(config().symptom.iter().all(|s| !s.metrics.is_empty()));
        assert!(config().check.iter().all(|c| !c.explains.is_empty()));
        let speculative = config().check_for("speculative.num_steps");
        assert!(speculative.is_some_and(|c| !c.explains.contains(&SymptomKind::Ttft)));
    }

    #[test]
    fn globs() {
        let cases = [
            ("a*", "abc", true),
            ("*c", "abc", true),
            ("a*c", "abc", true),
            ("a*c", "ab", false),
            ("server:*.x", "server:1.2.3.4:80.x", true),
            ("abc", "abc", true),
            ("abc", "abcd", false),
            ("*", "", true),
            ("a*b*c", "axbyc", true),
            ("a*b*c", "axcyb", false),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(glob(pattern, text), want, "{pattern} {text}");
        }
    }

    #[test]
    fn unknown_keys_fail_at_load() {
        let bad = VERDICT_TOML.replace("tolerance = ", "tolerence = ");
        assert!(VerdictConfig::parse(&bad).is_err());
        let bad = VERDICT_TOML.replace("test = \"version\"", "test = \"versions\"");
        assert!(VerdictConfig::parse(&bad).is_err());
    }
}
