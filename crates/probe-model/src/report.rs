//! What the `probe` command prints as JSON: the report on one host (`probe host --format json`)
//! and the per-host records and summary of an audit (`probe audit --jsonl`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    GpuState, HostFacts, LaunchConfig, LaunchDiff, MetricSummary, SectionReport, SnapshotDiff,
    UnixTime,
};

/// The report on one host: what runs now, what ran before, what changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HostReport {
    pub schema_version: u32,
    /// The target as given.
    pub target: String,
    pub address: Option<String>,
    /// The snapshot this report was made from.
    pub snapshot_id: String,
    pub collected_at: UnixTime,
    /// Whether the snapshot was stored.
    pub stored: bool,
    pub host: HostFacts,
    pub gpu: GpuState,
    /// Launches running now.
    pub running: Vec<LaunchConfig>,
    /// Earlier launches reconstructed (history, unit files, logs), newest first.
    pub earlier: Vec<LaunchConfig>,
    /// The running launch against the one before it.
    pub vs_previous_launch: Option<LaunchDiff>,
    /// The running run's period now against an earlier period: the one before a change point
    /// in its load or speed (running or queued requests, prompt or generation throughput that
    /// moved for a day or more), or the period `--baseline` named. `periods` says which and why.
    #[serde(default)]
    pub vs_period: Option<LaunchDiff>,
    /// Which comparison's verdict the report opens with: `vs_previous_launch` unless the period
    /// comparison is more telling (no earlier run, `--baseline` given, or the previous run
    /// found no cause while the periods of this run differ).
    #[serde(default)]
    pub lead: Option<Lead>,
    /// This snapshot against the last stored snapshot of the same host.
    pub vs_last_snapshot: Option<SnapshotDiff>,
    /// Log metrics with their time ranges.
    pub metrics: Vec<MetricReport>,
    /// Log metrics by run of each running server: the running run first, then up to three
    /// earlier runs that logged metrics, newest first (points of all its logs, deduplicated).
    #[serde(default)]
    pub metrics_by_run: Vec<RunMetrics>,
    /// Every run of the servers on this host, oldest first, with what was in effect while it
    /// ran (the engine version it ran, packages, driver, model config, start-up limits).
    #[serde(default)]
    pub runs: Vec<crate::Run>,
    /// Package and driver installs near the runs (timeline events), oldest first.
    #[serde(default)]
    pub install_events: Vec<crate::TimelineEvent>,
    /// The served models' configs, summarised.
    #[serde(default)]
    pub models: Vec<crate::ModelSummary>,
    /// Earlier launches not listed in `earlier` (the report caps the list).
    #[serde(default)]
    pub earlier_omitted: usize,
    /// Older runs not listed in `runs` (the report keeps the newest; `probe timeline` has all).
    #[serde(default)]
    pub runs_omitted: usize,
    /// GPU health, faults and loaded libraries, with the hardware findings ranked.
    #[serde(default)]
    pub hardware: crate::hardware::HardwareReport,
    /// Sections that did not complete (timed out, permission denied, truncated, failed).
    pub problems: Vec<SectionReport>,
    /// Messages from connecting (a host key recorded, a setting reinterpreted).
    pub notices: Vec<String>,
    /// What the running servers said about themselves, next to their launches.
    #[serde(default)]
    pub servers: Vec<crate::ServerView>,
    /// The model-server containers: the image with its content digest, and where their launch
    /// comes from (the compose file and service, the Kubernetes pod).
    #[serde(default)]
    pub containers: Vec<crate::ContainerInfo>,
    /// Log files found where people put the server's output (a cron job's dated files, a
    /// timer's, logrotate's `olddir`, kubelet's pod logs), each with why it was read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found_logs: Vec<FoundLog>,
}

/// One log file read because something other than a launch named it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct FoundLog {
    pub location: String,
    /// `LogSource::found_by`: the line that names it.
    pub found_by: String,
    pub status: crate::SectionStatus,
    /// Lines the host read of it (its whole length, thinned on the host).
    pub lines_seen: Option<u64>,
    /// Start-up records it held (an earlier run's start).
    pub startups: usize,
}

/// Which comparison a host report's verdict comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Lead {
    /// `vs_previous_launch`: the running run against the run before it.
    PreviousLaunch,
    /// `vs_period`: periods compared (inside the running run, or the one `--baseline` named).
    Period,
}

/// The log metrics of one run of a server: from its start to the next start of that server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunMetrics {
    /// The launch of that run, as evidence (`pid:120`, `container:vllm-llama-v0102`).
    pub launch: String,
    /// Whether it is running now.
    pub running: bool,
    pub start: Option<UnixTime>,
    /// The next start of the same server; `None` while it runs.
    pub end: Option<UnixTime>,
    /// Its metrics (`source` lists the logs they came from).
    pub metrics: Vec<MetricReport>,
}

/// One metric of one log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct MetricReport {
    pub name: String,
    pub unit: String,
    /// The log it came from (file path or unit name).
    pub source: String,
    pub summary: MetricSummary,
}

/// Outcome of one host in an audit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditStatus {
    /// Collected, nothing meaningful changed (or no previous snapshot).
    #[default]
    Ok,
    /// Collected, and something drifted against the previous snapshot: configuration, versions,
    /// driver, model, hardware state or units (a performance number alone is not drift).
    Changed,
    /// Collected, stored and compared, but sections were lost to the connection (a channel the
    /// server refused to the end, a dropped link): `lost_sections` names them. What was lost is
    /// not evidence of a change, so this outranks `changed`.
    Partial,
    Unreachable,
    AuthFailed,
    HostKeyRefused,
    TimedOut,
    Error,
}

impl AuditStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditStatus::Ok => "ok",
            AuditStatus::Changed => "changed",
            AuditStatus::Partial => "partial",
            AuditStatus::Unreachable => "unreachable",
            AuditStatus::AuthFailed => "auth_failed",
            AuditStatus::HostKeyRefused => "host_key_refused",
            AuditStatus::TimedOut => "timed_out",
            AuditStatus::Error => "error",
        }
    }

    /// Whether the host was collected.
    pub fn collected(self) -> bool {
        matches!(
            self,
            AuditStatus::Ok | AuditStatus::Changed | AuditStatus::Partial
        )
    }
}

/// An engine running on a host, with its installed version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct EngineVersion {
    pub engine: crate::Engine,
    pub version: Option<String>,
}

/// What a JSON Lines record of `probe audit` and `probe audit report` is (its `"type"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordType {
    /// One host's line ([`AuditRecord`]).
    #[default]
    Host,
    /// The last line of an audit ([`AuditSummary`]).
    Summary,
    /// One group's outliers (`probe audit report --outliers --jsonl`).
    Outliers,
    /// The fleet report (`probe audit report --jsonl`).
    FleetReport,
}

/// One host's line of an audit (`"type": "host"` in JSON Lines).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct AuditRecord {
    pub schema_version: u32,
    /// Always `host`.
    #[serde(rename = "type")]
    pub record_type: RecordType,
    /// The inventory name.
    pub host: String,
    pub target: String,
    pub status: AuditStatus,
    /// Meaningful changes against the previous snapshot.
    pub changes: usize,
    /// The highest-impact changes, one line each.
    pub top_changes: Vec<String>,
    /// Performance numbers that moved against the previous snapshot (log metric means, a settled
    /// server's lifetime values), one line each: symptoms, not drift, so they never make the
    /// status `changed`.
    #[serde(default)]
    pub performance: Vec<String>,
    /// The failure, one line (`HOST: cause`).
    pub error: Option<String>,
    /// Sections the snapshot lost to the connection (status `partial`), by name.
    #[serde(default)]
    pub lost_sections: Vec<String>,
    pub snapshot_id: Option<String>,
    pub previous_snapshot_id: Option<String>,
    pub engines: Vec<EngineVersion>,
    pub gpu_count: usize,
    pub duration_ms: u64,
    pub groups: Vec<String>,
    pub tags: Vec<String>,
}

/// The last line of an audit (`"type": "summary"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct AuditSummary {
    pub schema_version: u32,
    /// Always `summary`.
    #[serde(rename = "type")]
    pub record_type: RecordType,
    pub inventory: String,
    pub hosts: usize,
    pub ok: usize,
    pub changed: usize,
    /// Hosts collected that lost sections to the connection (status `partial`).
    #[serde(default)]
    pub partial: usize,
    pub failed: usize,
    pub started_at: UnixTime,
    pub finished_at: UnixTime,
    pub duration_ms: u64,
    pub exit_code: u8,
}
