//! The fleet documents: `probe audit report --format json` (a [`FleetReport`]) and the
//! per-group lines of `probe audit report --outliers --jsonl` (an [`OutliersLine`]), with the
//! group outliers both carry (computed by probe-diff's `fleet`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{AuditStatus, Change, RecordType, UnixTime};

/// A change key on which the group does not agree, with its modal value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModalValue {
    pub key: String,
    /// The modal value as written (`(absent)` when most hosts lack it).
    pub value: String,
    /// Hosts that have it.
    pub hosts: usize,
}

/// One host's differences from the modal configuration, highest impact first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HostDifferences {
    pub host: String,
    /// `before` is the modal value, `after` this host's.
    pub changes: Vec<Change>,
}

/// A group's modal configuration and its outliers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GroupOutliers {
    pub group: String,
    pub hosts: usize,
    /// The member the others were compared with (closest to the mode).
    pub reference: Option<String>,
    /// What the reference runs: engine and version, model, options that are set (one line per
    /// running launch), key packages, driver and GPUs.
    pub baseline: Vec<String>,
    /// Keys on which hosts disagree, with the modal value.
    pub disputed: Vec<ModalValue>,
    /// Hosts that differ from the mode, the most different first.
    pub outliers: Vec<HostDifferences>,
}

/// One line of `probe audit report --outliers --jsonl`: one group, `"type": "outliers"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OutliersLine {
    pub schema_version: u32,
    #[serde(rename = "type")]
    pub record_type: RecordType,
    #[serde(flatten)]
    pub group: GroupOutliers,
}

/// A host's state in the fleet report: its last audit's status, or never audited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FleetStatus {
    Ok,
    Changed,
    Partial,
    Unreachable,
    AuthFailed,
    HostKeyRefused,
    TimedOut,
    Error,
    /// In the inventory, with no audit in the store.
    NeverAudited,
}

impl From<AuditStatus> for FleetStatus {
    fn from(status: AuditStatus) -> FleetStatus {
        match status {
            AuditStatus::Ok => FleetStatus::Ok,
            AuditStatus::Changed => FleetStatus::Changed,
            AuditStatus::Partial => FleetStatus::Partial,
            AuditStatus::Unreachable => FleetStatus::Unreachable,
            AuditStatus::AuthFailed => FleetStatus::AuthFailed,
            AuditStatus::HostKeyRefused => FleetStatus::HostKeyRefused,
            AuditStatus::TimedOut => FleetStatus::TimedOut,
            AuditStatus::Error => FleetStatus::Error,
        }
    }
}

impl FleetStatus {
    /// The word in the JSON (`ok`, `host_key_refused`, `never_audited`).
    pub fn as_str(self) -> &'static str {
        match self {
            FleetStatus::Ok => "ok",
            FleetStatus::Changed => "changed",
            FleetStatus::Partial => "partial",
            FleetStatus::Unreachable => "unreachable",
            FleetStatus::AuthFailed => "auth_failed",
            FleetStatus::HostKeyRefused => "host_key_refused",
            FleetStatus::TimedOut => "timed_out",
            FleetStatus::Error => "error",
            FleetStatus::NeverAudited => "never_audited",
        }
    }
}

/// One host of the fleet report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetHost {
    pub host: String,
    pub target: String,
    /// The audit status, or `never_audited`.
    pub status: FleetStatus,
    pub shard: Option<String>,
    pub runner: Option<String>,
    pub audited_at: Option<UnixTime>,
    pub snapshot_id: Option<String>,
    pub snapshot_at: Option<UnixTime>,
    pub snapshot_age_s: Option<i64>,
    pub changes: usize,
    pub top_changes: Vec<String>,
    pub error: Option<String>,
    /// Sections its last snapshot lost to the connection (status `partial`).
    #[serde(default)]
    pub lost_sections: Vec<String>,
    pub groups: Vec<String>,
}

/// `probe audit report --format json`: every host's last audit across shards and runners, and
/// each group's outliers when asked (`"type": "fleet_report"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FleetReport {
    pub schema_version: u32,
    #[serde(rename = "type")]
    pub record_type: RecordType,
    pub store: String,
    pub generated_at: UnixTime,
    pub hosts: Vec<FleetHost>,
    /// Hosts per status.
    pub statuses: BTreeMap<String, usize>,
    /// Shards seen in the hosts' last audits.
    pub shards: Vec<String>,
    pub outliers: Vec<GroupOutliers>,
}
