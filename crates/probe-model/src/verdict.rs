//! Conclusions drawn from the evidence: each candidate cause tested against the symptoms, and the
//! verdict a report opens with (the symptom in numbers, like for like or not, the best-supported
//! cause with its mechanism, what was ruled out, how sure, and what would restore it).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::MetricSummary;

/// What testing a candidate cause against the symptoms found.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Assessment {
    /// Its mechanism predicts the observed change in numbers, within the stated tolerance.
    Explains,
    /// Plausible, but the evidence to check it is missing (`CauseVerdict::missing` says which).
    #[default]
    Consistent,
    /// Checked, and it cannot produce the symptom (`CauseVerdict::reason` says why).
    RuledOut,
}

impl Assessment {
    pub fn as_str(self) -> &'static str {
        match self {
            Assessment::Explains => "explains",
            Assessment::Consistent => "consistent",
            Assessment::RuledOut => "ruled out",
        }
    }
}

/// The test a cause is held to (`configs/verdict.toml` names one per cause).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Test {
    /// A cap on concurrent requests or sequences: matters only where it binds.
    RunningCap,
    /// How many tokens the KV cache holds, or what sizes it: matters only where it fills.
    KvCapacity,
    /// Speculative decoding: held against accept length and acceptance rate.
    Speculative,
    /// How many layers sit on the GPU: held against the engines' offloaded-layers lines.
    GpuLayers,
    /// Weights or KV cache held in host memory (CPU offload, KV offload).
    Offload,
    /// What sizes a KV cache an engine allocates whole at load (context length x parallel
    /// sequences): matters by the layers it pushed off the GPU.
    KvSize,
    /// More models kept loaded beside the served one (how many, for how long): they matter by
    /// the GPU memory they hold, so they are held against the layers each run put on the GPU.
    Resident,
    /// GPU state: held against clocks, power and throttle reasons.
    Hardware,
    /// The prefill tokens one step takes: held against TTFT, the queue and the prompt length.
    PrefillBudget,
    /// Prefix caching on or off: held against the cache hit rate.
    PrefixCache,
    /// Tensor-parallel communication (custom all-reduce, NCCL transports, topology, parallel
    /// sizes): held against the per-step decode time, over the all-reduces a step makes.
    Collective,
    /// CUDA graphs captured for decode or not: held against the time per output token.
    CudaGraphs,
    /// Engine, packages, driver, CUDA.
    Version,
    /// No mechanism in numbers.
    #[default]
    Other,
}

impl Test {
    /// The name `configs/verdict.toml` and the documents use (`running-cap`).
    pub fn as_str(self) -> &'static str {
        match self {
            Test::RunningCap => "running-cap",
            Test::KvCapacity => "kv-capacity",
            Test::Speculative => "speculative",
            Test::GpuLayers => "gpu-layers",
            Test::Offload => "offload",
            Test::Resident => "resident",
            Test::KvSize => "kv-size",
            Test::Hardware => "hardware",
            Test::PrefillBudget => "prefill-budget",
            Test::PrefixCache => "prefix-cache",
            Test::Collective => "collective",
            Test::CudaGraphs => "cuda-graphs",
            Test::Version => "version",
            Test::Other => "other",
        }
    }
}

/// One cause held against the symptoms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct CauseVerdict {
    pub assessment: Assessment,
    /// Which test decided it (`running-cap`, `speculative`, `version`, ...).
    pub test: Test,
    /// Why, in one sentence with the numbers.
    pub reason: String,
    /// The numbers the test used, by name (`running_reqs_max_after`, `cap_after`, ...).
    pub numbers: BTreeMap<String, f64>,
    /// The evidence that would decide a `consistent` cause, had it been there.
    pub missing: Vec<String>,
}

/// How sure the verdict is.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum VerdictConfidence {
    High,
    Medium,
    #[default]
    Low,
}

impl VerdictConfidence {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictConfidence::High => "high",
            VerdictConfidence::Medium => "medium",
            VerdictConfidence::Low => "low",
        }
    }
}

/// What the verdict concludes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Conclusion {
    /// A change explains the symptom.
    Cause,
    /// Configuration, versions, driver and hardware did not change; the load did.
    LoadChanged,
    /// The symptom is there, nothing tested explains it; the consistent causes remain.
    Unexplained,
    /// No symptom got worse (throughput, latency, queue; within the tolerance).
    NoSlowdown,
    /// Too little evidence to compare the runs' speed (no metrics on one side).
    #[default]
    NotEnoughEvidence,
}

/// What kind of slowdown a symptom is (`configs/verdict.toml` `[[symptom]]` names the metrics
/// of each, and each `[[check]]` the kinds its mechanism can explain).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SymptomKind {
    /// Tokens generated per second, all requests together (a fall is worse).
    #[default]
    Throughput,
    /// Time to first token (a rise is worse).
    Ttft,
    /// Inter-token latency or time per output token: decode speed per request (a rise is worse).
    Itl,
    /// End-to-end request latency (a rise is worse).
    E2e,
    /// Requests waiting for admission (a rise is worse).
    Queue,
}

impl SymptomKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SymptomKind::Throughput => "throughput",
            SymptomKind::Ttft => "ttft",
            SymptomKind::Itl => "itl",
            SymptomKind::E2e => "e2e",
            SymptomKind::Queue => "queue",
        }
    }

    /// How a sentence names it.
    pub fn label(self) -> &'static str {
        match self {
            SymptomKind::Throughput => "throughput",
            SymptomKind::Ttft => "time to first token",
            SymptomKind::Itl => "decode speed (time per output token)",
            SymptomKind::E2e => "end-to-end latency",
            SymptomKind::Queue => "queued requests",
        }
    }

    /// Whether a rise of its metric is the slowdown (latencies, queues) rather than a fall.
    pub fn worse_when_higher(self) -> bool {
        self != SymptomKind::Throughput
    }
}

/// The symptom in numbers: one metric, run against run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Symptom {
    /// What kind of slowdown its metric measures.
    pub kind: SymptomKind,
    /// The metric (`gen_throughput`, `generation_throughput`, `lifetime:generation_throughput`).
    pub metric: String,
    pub unit: String,
    pub before: Option<MetricSummary>,
    pub after: Option<MetricSummary>,
    /// Relative change of the mean, `after/before - 1`.
    pub change: Option<f64>,
    /// The periods compared, as the report names them.
    pub before_period: String,
    pub after_period: String,
}

/// One load measure of the two runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LoadMeasure {
    /// `running requests`, `queued requests`, `KV usage`, `tokens in use`, `throughput per
    /// request`, `prefill share`, ...
    pub name: String,
    pub before: Option<f64>,
    pub after: Option<f64>,
    pub unit: String,
}

/// The two runs' load compared before their speed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LoadComparison {
    /// `Some(true)`: like for like; `Some(false)`: the load differs; `None`: no load measure.
    pub like_for_like: Option<bool>,
    /// One sentence with the numbers.
    pub summary: String,
    pub measures: Vec<LoadMeasure>,
    /// Where the load differs and both runs have samples at the same running-request count,
    /// the band compared (`samples with 1 running request: 41 before, 38 after`).
    pub band: Option<String>,
    /// Throughput means inside that band.
    pub band_throughput: Option<(f64, f64)>,
    /// Benchmark results left on the host that measured either run (ground truth for what
    /// each run did at a known workload), one line each, `earlier run: ...` / `this run: ...`.
    #[serde(default)]
    pub benchmarks: Vec<String>,
}

/// What would restore the earlier behaviour (probe prints it; it never runs any of it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Restore {
    /// Where the earlier launch came from (`history:/root/.bash_history:12`, `unit:x.service`).
    pub source: String,
    /// The earlier launch as a runnable text.
    pub launch_text: Option<String>,
    /// The flags that differ from the running launch, as written on the earlier side.
    pub differing: Vec<String>,
    /// `pip install X==A Y==B` when package versions differ and the earlier ones are known.
    pub pins: Option<String>,
    /// The plan's steps as lines (`edit: ...`, `run: systemctl daemon-reload (...)`,
    /// `restart: ...`, `verify: ...`): the text of `plan`, as `probe diff --rollback` words
    /// its own plan (the pins above are its `run:` step, not repeated here).
    pub steps: Vec<String>,
    /// The typed plan that rolls the running launch back to the earlier one on the launcher
    /// that runs it: built as `probe diff`'s rollback plan is, without the checks that compare
    /// two hosts.
    pub plan: crate::RollbackPlan,
}

/// The verdict a report opens with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Verdict {
    pub conclusion: Conclusion,
    /// One sentence: what happened and why.
    pub headline: String,
    /// The symptom the verdict is about: the first kind (throughput, TTFT, ITL, end-to-end,
    /// queue) that got worse, else throughput as compared.
    pub symptom: Option<Symptom>,
    /// Every kind of symptom both sides have numbers for, in that order (`TTFT rose` with
    /// `decode speed unchanged` beside it).
    #[serde(default)]
    pub symptoms: Vec<Symptom>,
    pub load: LoadComparison,
    /// The key of the best-supported cause (`speculative.num_steps`).
    pub cause: Option<String>,
    /// Its mechanism, in one sentence with the numbers.
    pub mechanism: Option<String>,
    /// The causes ruled out, one line (`max_running_requests: peak 1 running of a cap of 1...`).
    pub ruled_out: String,
    pub confidence: VerdictConfidence,
    /// Why that confidence.
    pub confidence_reason: String,
    /// How many causes each test put in each group.
    pub explains: usize,
    pub consistent: usize,
    pub ruled_out_count: usize,
    pub restore: Option<Restore>,
    /// The JSON field that holds every cause with its verdict and numbers.
    pub field: String,
}
