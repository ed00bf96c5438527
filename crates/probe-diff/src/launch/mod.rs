//! Launch reconstruction: from any launch text to a `LaunchConfig`.

use std::collections::BTreeMap;

use probe_model::{Engine, LaunchConfig, LaunchSource, Snapshot, StartupRecord, SystemdUnit};

/// What kind of text is given to [`reconstruct`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TextKind {
    /// Guess from the text.
    #[default]
    Auto,
    /// A NUL-separated `/proc/PID/cmdline`.
    Argv,
    SystemdUnit,
    Shell,
    DockerRun,
    Compose,
    Kubernetes,
    /// SGLang `server_args=ServerArgs(...)` / `server_args={...}`.
    SglangServerArgs,
    /// vLLM `non-default args: {...}`.
    VllmNonDefaultArgs,
}

/// Context for a reconstruction.
#[derive(Debug, Clone, Default)]
pub struct ParseHints {
    pub kind: TextKind,
    pub engine: Option<Engine>,
    pub engine_version: Option<String>,
    pub source: LaunchSource,
    /// Variables known from outside the text (unit `Environment=`/`EnvironmentFile=`).
    pub env: BTreeMap<String, String>,
    pub working_directory: Option<String>,
}

/// Every launch in `text`; non-server commands are skipped.
pub fn reconstruct(_text: &str, _hints: &ParseHints) -> Vec<LaunchConfig> {
    Vec::new()
}

/// One launch from an argv (wrappers unwrapped), or `None` when it is no model server.
pub fn from_argv(
    _argv: &[String],
    _env: &BTreeMap<String, String>,
    _hints: &ParseHints,
) -> Option<LaunchConfig> {
    None
}

/// Launches of a collected unit (effective `ExecStart=`, environment, working directory).
pub fn from_unit(_unit: &SystemdUnit, _hints: &ParseHints) -> Vec<LaunchConfig> {
    Vec::new()
}

/// A launch from an engine's start-up log line.
pub fn from_startup_log(_record: &StartupRecord, _hints: &ParseHints) -> Option<LaunchConfig> {
    None
}

/// Every piece of launch evidence in a snapshot.
pub fn launches_of(_snapshot: &Snapshot) -> Vec<LaunchConfig> {
    Vec::new()
}
