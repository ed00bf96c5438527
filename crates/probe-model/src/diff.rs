//! Differences between launches or snapshots, and the launch timeline of a host.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{LaunchConfig, MetricSummary, TimeBounds, UnixTime};

/// What a change is about; the categories an operator asks "why is it slower" in.
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
pub enum Category {
    SpeculativeDecoding,
    Parallelism,
    MemoryKvCache,
    /// Work moved between GPU and CPU: GPU layers, CPU offload of weights or the KV cache.
    Offload,
    BatchingScheduling,
    KernelsBackends,
    QuantizationDtypes,
    EngineVersions,
    GpuDriver,
    /// The GPUs themselves: throttling, links, faults, other tenants, libraries loaded.
    Hardware,
    Model,
    Metrics,
    Host,
    #[default]
    Other,
}

/// Likely effect on throughput and latency, highest first when sorted.
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
pub enum Impact {
    High,
    Medium,
    Low,
    #[default]
    None,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Added,
    Removed,
    #[default]
    Changed,
}

/// One difference, explained.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Change {
    pub category: Category,
    pub impact: Impact,
    pub kind: ChangeKind,
    /// What changed: a canonical option name, `package:vllm`, `gpu:0.power_limit_w`, ...
    pub key: String,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    /// As written on each side, for display.
    pub before_written: Option<String>,
    pub after_written: Option<String>,
    /// Likely effect on throughput and latency.
    pub explanation: String,
    /// E.g. "set to its default (0.9): same as absent".
    pub note: Option<String>,
    /// How this cause links to a symptom, in numbers, where a rule knows the mechanism (EAGLE
    /// with topk 1: accept length at most `num_steps + 1`, so 3 -> 1 steps caps it at 2, which
    /// matches 2.81 -> 1.74).
    #[serde(default)]
    pub mechanism: Option<String>,
    /// This cause held against the symptoms: explains, consistent or ruled out, with the
    /// numbers used (set where the symptoms were measured).
    #[serde(default)]
    pub verdict: Option<crate::CauseVerdict>,
    /// An option set on one side only: what was in effect on the side that left it unset (the
    /// earlier side of an added option, the later side of a removed one). Said as
    /// `default (8192)`.
    #[serde(default)]
    pub unset_default: Option<UnsetDefault>,
    /// The start-up limit this option sets, as the engine's log names it
    /// (`max_num_batched_tokens`): its change (`limit:NAME`) is this one, not a row of its own.
    #[serde(default)]
    pub startup_limit: Option<String>,
    /// A value the engine resolved from other settings (KV blocks, max running requests from
    /// memory, CUDA graph sizes): the keys of the changes here that it follows from. Ranked
    /// under them, never a cause of its own (`configs/impact.toml`, `[[consequence]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consequence_of: Vec<String>,
}

impl Change {
    /// The earlier side of an option added, said as its default (`default (8192)`), where known.
    pub fn default_before(&self) -> Option<String> {
        (self.kind == ChangeKind::Added && self.before.is_none())
            .then(|| self.unset_default.as_ref().map(UnsetDefault::text))
            .flatten()
    }

    /// The later side of an option removed, said as its default, where known.
    pub fn default_after(&self) -> Option<String> {
        (self.kind == ChangeKind::Removed && self.after.is_none())
            .then(|| self.unset_default.as_ref().map(UnsetDefault::text))
            .flatten()
    }
}

impl UnsetDefault {
    /// `default (8192)`.
    pub fn text(&self) -> String {
        let value = match &self.value {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        format!("default ({value})")
    }
}

/// The value an unset option had in effect ([`Change::unset_default`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct UnsetDefault {
    pub value: serde_json::Value,
    pub from: DefaultFrom,
}

/// Where an unset option's value in effect is known from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DefaultFrom {
    /// The engine catalog's default for that engine version.
    #[default]
    Catalog,
    /// What that run's engine resolved at start-up (its start-up log: the default for that
    /// version and hardware).
    Resolved,
}

/// Two launches compared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LaunchDiff {
    pub before: String,
    pub after: String,
    /// Set when the engine itself changed (`sglang` -> `vllm`).
    pub engine_switch: Option<(crate::Engine, crate::Engine)>,
    /// Ranked by impact, highest first.
    pub changes: Vec<Change>,
    /// Options equal once defaults are taken into account, for the curious.
    pub equal_by_default: Vec<String>,
    /// What could not be compared and why (variables set on one side whose other side is a
    /// history line or a log, which show only what was written there).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Log metrics of the period each launch ran (from its start to the next start of the same
    /// server): before = the earlier launch's period, after = the later one's.
    #[serde(default)]
    pub metrics: Vec<MetricComparison>,
    /// Which periods `metrics` compares (the earlier launch had no metrics of its own, say).
    #[serde(default)]
    pub metrics_note: Option<String>,
    /// What got worse or better, run against run (metric means, idle samples excluded): the
    /// symptoms, kept apart from the candidate causes in `changes`.
    #[serde(default)]
    pub symptoms: Vec<Change>,
    /// Whether the numbers are like for like: the load each run carried (running requests, KV
    /// usage) and how many idle samples were left out.
    #[serde(default)]
    pub load_note: Option<String>,
    /// Changes between earlier runs whose metrics stayed the same: they do not explain the
    /// slowdown (one line each, with the numbers).
    #[serde(default)]
    pub not_explaining: Vec<String>,
    /// The conclusion drawn from all of the above: said first by every report.
    #[serde(default)]
    pub verdict: Option<crate::Verdict>,
    /// The periods `metrics` and the verdict compare, before first, and why each was chosen.
    #[serde(default)]
    pub periods: Vec<ComparedPeriod>,
}

/// One side of a comparison of metrics: a stretch of time, the run it lies in, and why it was
/// chosen (a run, a change point inside a run, the period `--baseline` named).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ComparedPeriod {
    /// `before` or `after`.
    pub label: String,
    pub start: UnixTime,
    /// Where it ends; `None` up to the last sample (the run still runs).
    pub end: Option<UnixTime>,
    /// When the run this period lies in started (the launch it ran, by evidence, in `launch`).
    pub run_start: Option<UnixTime>,
    pub launch: String,
    /// Why this period: "the running run", "change point in running_reqs at
    /// 2026-11-24 09:00 (8.9 -> 25.4)", "named by --baseline 2026-11-14..2026-11-18".
    pub why: String,
}

/// A unified diff of two texts (unit files and the like).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct TextDiff {
    pub label: String,
    pub unified: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct MetricComparison {
    pub name: String,
    pub unit: String,
    pub before: Option<MetricSummary>,
    pub after: Option<MetricSummary>,
    /// Relative change of the mean, `after/before - 1`.
    pub change: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SnapshotRef {
    pub id: String,
    pub host: String,
    pub collected_at: UnixTime,
    /// What identifies the host (never a change: [`crate::identity`]): its machine id, the
    /// address connected to, when it booted, and its GPUs (`4 x NVIDIA H100 80GB HBM3`, with
    /// their UUIDs).
    #[serde(default)]
    pub machine_id: Option<String>,
    #[serde(default)]
    pub address: Option<String>,
    #[serde(default)]
    pub boot_time: Option<UnixTime>,
    #[serde(default)]
    pub gpus: String,
    #[serde(default)]
    pub gpu_uuids: Vec<String>,
}

/// Two snapshots compared (one host over time, or two hosts).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SnapshotDiff {
    pub schema_version: u32,
    pub before: SnapshotRef,
    pub after: SnapshotRef,
    /// All meaningful changes, ranked by likely impact (highest first).
    pub changes: Vec<Change>,
    pub launches: Vec<LaunchDiff>,
    pub texts: Vec<TextDiff>,
    pub metrics: Vec<MetricComparison>,
    /// Volatile differences (PIDs, uptime, utilization); not counted as changes.
    pub volatile: Vec<Change>,
    /// The conclusion drawn from the changes and the metrics compared.
    #[serde(default)]
    pub verdict: Option<crate::Verdict>,
    /// What rolling `after` back to `before` would change, in order (flags, packages, driver,
    /// model, power limit), one line each: `probe diff --rollback` prints it, probe runs none.
    #[serde(default)]
    pub rollback: Vec<String>,
    /// The same rollback as a typed plan on the launcher that runs the server (the files to
    /// edit with their old and new lines, the reload, the restart, what to check after):
    /// `rollback` is its text; `probe diff --format sh` writes it as a script to review.
    #[serde(default)]
    pub rollback_plan: crate::RollbackPlan,
    /// The periods the verdict compares (the running run of each side, or the period
    /// `--baseline` named against the after side's now), and why each was chosen.
    #[serde(default)]
    pub periods: Vec<ComparedPeriod>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Ordered by exact timestamps.
    Exact,
    /// Ordered by bounds (file mtimes) that do not overlap.
    Bounded,
    /// Ordered by position only (history without timestamps).
    Positional,
    #[default]
    Unknown,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimelineEventKind {
    #[default]
    Launch,
    PackageInstall,
    DriverInstall,
    UnitChange,
    /// A history line that changed the host (pip/uv/conda installs, systemctl
    /// start/stop/restart/daemon-reload, apt/dnf, docker pull / compose up).
    HostChange,
    /// A kernel-reported GPU fault (Xid, fallen off the bus, reset, NVLink).
    GpuFault,
    /// A GPU power limit changed (`nvidia-smi -pl` in a history).
    PowerLimitChange,
    /// A hardware finding placed at the time it is known from: a serving process's start for a
    /// CUDA library it mapped from outside its wheel, else the collection (a GPU throttled now,
    /// a PCIe link below its max, another user's process holding GPU memory).
    GpuObservation,
    /// A benchmark result found on the host, at the time it ran (`Snapshot::benchmarks`).
    Benchmark,
    /// An engine installed outside a package manager changed version: an install script run
    /// again, a build in a home directory, an editable checkout that moved (`evidence` names
    /// the history line, the files and their times, the log lines).
    EngineInstall,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct TimelineEvent {
    pub kind: TimelineEventKind,
    pub time: TimeBounds,
    pub confidence: Confidence,
    pub summary: String,
    /// Index into [`Timeline::launches`] for launch events.
    pub launch: Option<usize>,
    /// The launch running now.
    pub running: bool,
    /// The launch that ran before the running one.
    pub previous: bool,
    /// Identical launches this event stands for (1: one launch).
    #[serde(default)]
    pub repeats: u32,
    /// The first of those repeated launches, when it has a time.
    #[serde(default)]
    pub first_seen: Option<UnixTime>,
    /// Benchmark events: index into the snapshot's `benchmarks`.
    #[serde(default)]
    pub benchmark: Option<usize>,
    /// Benchmark events: the run it measured, as its launch evidence (`pid:7`), when one run
    /// was up at its date.
    #[serde(default)]
    pub measured_run: Option<String>,
    /// `time` on the collecting machine's clock (`time` minus [`Timeline::host_clock_offset_s`]),
    /// only when the host's clock was off: right if the clock was as far off when the event was
    /// written (a clock that was set in between makes it wrong, so `time` stays the evidence).
    #[serde(default)]
    pub corrected_time: Option<TimeBounds>,
    /// What the event is known from, one line each (a history line, a file and its mtime, the
    /// log lines that gave the versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// Everything that happened on a host, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Timeline {
    pub schema_version: u32,
    pub host: String,
    pub events: Vec<TimelineEvent>,
    pub launches: Vec<LaunchConfig>,
    /// The host's clock minus the collecting machine's, in seconds, when the two differed by
    /// more than five minutes at collection: every event's `time` is the host's as it recorded
    /// it (the evidence, and the order of the events), and `corrected_time` is the same time on
    /// the collecting machine's clock.
    #[serde(default)]
    pub host_clock_offset_s: Option<i64>,
}
