//! Runs of a server: one start to one stop, with what was in effect while it ran (the engine
//! version it ran, the serving packages installed before it started, the driver, the model's
//! config, the limits the engine resolved at start-up). `probe-diff` builds them once per
//! snapshot ([`crate::Timeline`] places the launches; a run is a launch that ran).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Engine, UnixTime};

/// How sure a run's start or end is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Certainty {
    /// Logged or recorded at that time (a process start, a journal `Stopped` line,
    /// `ExecMainExitTimestamp`).
    Exact,
    /// Known to lie before or after this time (the last line the run logged; the next start of
    /// the same server).
    Bounded,
    /// Nothing better known.
    #[default]
    Unknown,
}

/// One end of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunBound {
    pub at: Option<UnixTime>,
    /// What says so (`process start`, `journal: Stopped sglang-qwen.service`,
    /// `systemctl show ExecMainExitTimestamp`, `next start of the same server`).
    pub evidence: String,
    pub certainty: Certainty,
}

/// Where a run's engine version comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VersionSource {
    /// The run's own start-up version line.
    StartupLine,
    /// The engine package present in the serving environment before the run started.
    InstalledBefore,
    /// The installed package was written after the run started: the run ran an older one.
    InstalledAfter,
    /// The running process's own environment (it started after the package was written).
    Running,
    /// A `pip install NAME==VERSION` history line before the run started (the installed package
    /// came later).
    HistoryPin,
    #[default]
    Unknown,
}

/// The engine version a run ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunVersion {
    /// The version, when known; `None` when only a bound is (see `note`).
    pub version: Option<String>,
    pub source: VersionSource,
    /// One line for a reader (`older than 0.5.9, installed 2026-11-21 15:03 UTC after this run
    /// started`).
    pub note: Option<String>,
}

/// A serving package as a run had it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunPackage {
    pub name: String,
    /// The version present when the run started; `None` when the installed one came later.
    pub version: Option<String>,
    pub installed_at: Option<UnixTime>,
    /// Set when the installed version was written after the run started.
    pub note: Option<String>,
}

/// A summary of the served model's `config.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ModelSummary {
    pub model: String,
    pub config_path: String,
    /// HF cache snapshot revision (the directory name under `snapshots/`).
    pub revision: Option<String>,
    pub config_mtime: Option<UnixTime>,
    /// `model_type` or the first of `architectures`.
    pub architecture: Option<String>,
    pub layers: Option<u64>,
    /// Hybrid models: full-attention and linear-attention layers.
    pub full_attention_layers: Option<u64>,
    pub linear_attention_layers: Option<u64>,
    /// MTP / NextN layers (`mtp_num_hidden_layers`, `num_nextn_predict_layers`).
    pub mtp_layers: Option<u64>,
    pub quantization: Option<String>,
    pub dtype: Option<String>,
    pub max_positions: Option<u64>,
}

/// One run of a server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Run {
    /// Its launch as evidence (`pid:120`, `unit:vllm.service`, `log:/root/sglang.log`).
    pub launch: String,
    /// Index into the timeline's `launches`.
    pub launch_index: usize,
    pub engine: Engine,
    /// Whether it runs now.
    pub running: bool,
    pub start: RunBound,
    /// `None` while it runs.
    pub end: Option<RunBound>,
    pub engine_version: RunVersion,
    /// Serving packages (engine, torch, CUDA/cuDNN/NCCL wheels, flashinfer, sgl-kernel,
    /// xformers, triton, transformers) as the run had them.
    pub packages: Vec<RunPackage>,
    /// GPU driver in effect (the package manager's last driver event before the start; the
    /// current driver for a running run).
    pub driver: Option<String>,
    pub cuda: Option<String>,
    pub model: Option<ModelSummary>,
    /// Limits the engine resolved at this run's start-up (see
    /// [`crate::StartupLimits`] for the keys).
    pub limits: BTreeMap<String, f64>,
    /// Repeated identical launches of this run's configuration (1: launched once).
    pub launches: u32,
    /// The GPUs as this run had them, when anything is known (power limits, throttle reasons,
    /// kernel faults in its period and just before its start, findings of a running run).
    pub hardware: Option<RunHardware>,
    /// What the server said about itself while this run ran (only a running run is asked).
    pub server: Option<RunServer>,
}

/// The power limit of one GPU (or of all) as a run had it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunPowerLimit {
    /// GPU index; `None`: all GPUs (`nvidia-smi -pl W` without `-i`).
    pub gpu: Option<u32>,
    pub watts: f64,
    /// When it took effect, when known (the history line's time).
    pub since: Option<UnixTime>,
    /// What says so: `nvidia-smi now (enforced limit)`, `history: nvidia-smi -i 1 -pl 200`,
    /// `default limit (no nvidia-smi -pl before this run in the histories read)`.
    pub source: String,
}

/// One hardware finding about a run, named by its rule id of `configs/impact.toml`
/// (area `hardware`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunHardwareFinding {
    /// Finding id: `sw-power-cap`, `xid-before-restart`, `pcie-below-max`, ...
    pub id: String,
    /// What it is about (`gpu:1.power_cap`, `kernel:xid_79_on_0000:17:00.0`).
    pub key: String,
    /// One line with the numbers.
    pub evidence: String,
}

/// The GPUs as one run had them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunHardware {
    /// Power limits in effect: at its start, then any set while it ran.
    pub power_limits: Vec<RunPowerLimit>,
    /// Active clock event (throttle) reasons (`GPU 1: sw_power_cap`); read now, so only for a
    /// running run.
    pub throttle_reasons: Vec<String>,
    /// Kernel GPU faults while it ran, one line each.
    pub faults: Vec<String>,
    /// Kernel GPU faults in the hour before it started (the crash that led to this start).
    pub faults_before_start: Vec<String>,
    /// Hardware findings about this run (a running run: the GPUs and the process now; any run:
    /// faults in its period or just before its start).
    pub findings: Vec<RunHardwareFinding>,
}

/// What the server said about itself during a run: its effective configuration next to the
/// launch and its lifetime counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RunServer {
    /// The reading as evidence: `server:127.0.0.1:30000`.
    pub evidence: String,
    pub status: crate::ServerStatus,
    pub version: Option<String>,
    /// Options the server runs with that differ from the launch, defaults it resolved, values
    /// no launch text shows.
    pub effective: Vec<crate::EffectiveValue>,
    /// Lifetime values from its counters (source: the server's /metrics over the uptime).
    pub lifetime: Vec<crate::LifetimeValue>,
    pub uptime_s: Option<u64>,
    pub asked_at: Option<UnixTime>,
}
