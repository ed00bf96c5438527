//! What one collection pass read from one host. Produced by `probe-collect`, stored by
//! `probe-store`, read by `probe-diff` and the CLI.
//!
//! Every value here came from a remote host and is untrusted text: renderers must strip control
//! characters before printing it. Secrets were already redacted by the collector unless
//! [`Snapshot::redacted`] is false (`--no-redact`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{ContainerInfo, Engine, UnixTime};

/// One host at one moment: the document `probe snapshots export` writes and every other crate
/// reads. Closed sets are enums serialised as the strings operators know.
///
/// ```
/// use probe_model::{Engine, ProcessInfo, ProcessRole, Snapshot};
///
/// let snapshot = Snapshot {
///     processes: vec![ProcessInfo {
///         pid: 7,
///         role: ProcessRole::Launcher,
///         engine: Some(Engine::LlamaCpp),
///         ..ProcessInfo::default()
///     }],
///     ..Snapshot::default()
/// };
/// let json = serde_json::to_value(&snapshot).unwrap();
/// assert_eq!(json["processes"][0]["engine"], "llama.cpp");
/// let back: Snapshot = serde_json::from_value(json).unwrap();
/// assert_eq!(back, snapshot);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Snapshot {
    pub schema_version: u32,
    /// Stable id, unique per snapshot (`<hostname>-<collected_at>-<random>`).
    pub id: String,
    /// The target as the operator typed it (`gpu7`, `root@10.1.2.3:2222`, `local`).
    pub target: String,
    /// The address actually connected to (`host:port`), or `local`.
    pub address: Option<String>,
    /// Local clock when collection finished.
    pub collected_at: UnixTime,
    /// The remote host's clock, read at the start of collection (skew = collected_at - remote_clock).
    pub remote_clock: Option<UnixTime>,
    /// Version of probe that collected this snapshot.
    pub collector_version: String,
    /// Whether secret values were redacted before storing (false only with `--no-redact`).
    pub redacted: bool,
    /// Whether collection used `sudo -n`.
    pub sudo: bool,
    /// Wall time of the whole collection.
    pub duration_ms: u64,
    pub host: HostFacts,
    /// One report per section of the collection script, also the ones that failed.
    pub sections: Vec<SectionReport>,
    pub histories: Vec<HistoryFile>,
    pub units: Vec<SystemdUnit>,
    pub processes: Vec<ProcessInfo>,
    pub containers: Vec<ContainerInfo>,
    pub python_envs: Vec<PythonEnv>,
    pub gpu: GpuState,
    pub models: Vec<ModelConfig>,
    pub logs: Vec<LogSource>,
    pub package_events: Vec<PackageEvent>,
    /// What the running model servers said about themselves when asked (`--no-ask-server`
    /// leaves this empty).
    #[serde(default)]
    pub servers: Vec<crate::ServerReading>,
    /// GPU health, kernel GPU faults and the CUDA libraries really loaded.
    #[serde(default)]
    pub hardware: crate::hardware::HardwareState,
    /// Benchmark results found in the serving users' homes and the launches' working
    /// directories (`probe` ran none of them).
    #[serde(default)]
    pub benchmarks: Vec<crate::bench::BenchmarkResult>,
    /// Files that hold a launch's text, read because other evidence names them: the compose
    /// files a server container's labels name.
    #[serde(default)]
    pub launch_files: Vec<LaunchFile>,
    /// Engines installed outside package managers: the binaries running servers run, the git
    /// checkouts they were built from or installed editable from, and model stores' names.
    /// Left out of the document when round 2 found none (and in documents stored before it
    /// was read), so an older stored document exports as it was written.
    #[serde(default, skip_serializing_if = "crate::SelfInstalled::is_empty")]
    pub self_installed: crate::SelfInstalled,
}

/// A file read as a launch's text because other evidence names it (a server container's
/// `com.docker.compose.project.config_files` label).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LaunchFile {
    /// What the file is.
    pub kind: LaunchFileKind,
    /// The path as the evidence names it (absolute).
    pub path: String,
    /// The evidence that names it (`container:vllm-1`).
    pub named_by: String,
    pub status: SectionStatus,
    /// Why it was not read (missing, a symbolic link not followed, not a regular file, ...).
    pub message: Option<String>,
    pub mtime: Option<UnixTime>,
    /// Its text (bounded; secrets redacted like every other string).
    pub text: String,
    /// Whether the text was cut at the bound.
    pub truncated: bool,
}

/// The kinds of launch files read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LaunchFileKind {
    /// A Docker Compose file (`compose.yaml`, an override file).
    #[default]
    Compose,
    /// A config file a running launch's options name (`--config`, `--extra_llm_api_options`):
    /// its keys are the engine's options.
    EngineConfig,
    /// The Python script a running process runs (`python3 serve.py`), which may start an
    /// engine through its API (`lmdeploy.serve(...)`, `pipeline(...)`).
    PythonScript,
}

/// Facts about the machine itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HostFacts {
    pub hostname: Option<String>,
    /// `/etc/machine-id`: with the hostname, the identity a store keys history by.
    pub machine_id: Option<String>,
    /// `PRETTY_NAME` of os-release.
    pub os_pretty: Option<String>,
    pub os_id: Option<String>,
    pub os_version_id: Option<String>,
    pub kernel: Option<String>,
    pub arch: Option<String>,
    pub uptime_s: Option<u64>,
    pub boot_time: Option<UnixTime>,
    pub cpu_model: Option<String>,
    pub cpu_count: Option<u32>,
    pub mem_total_kib: Option<u64>,
    pub mem_available_kib: Option<u64>,
    /// Effective user of the collection (`root`, or the login user).
    pub collected_as: Option<String>,
}

/// How one section of the collection ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SectionStatus {
    #[default]
    Ok,
    /// Output exceeded the section's byte cap; what came before the cap is kept.
    Truncated,
    /// The section ran past its time limit and was stopped.
    TimedOut,
    PermissionDenied,
    /// The file or program does not exist on this host (not an error).
    NotPresent,
    /// Anything else; `message` says what.
    Failed,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SectionReport {
    pub name: String,
    pub status: SectionStatus,
    /// Bytes of output received for this section (after the cap).
    pub bytes: u64,
    pub duration_ms: Option<u64>,
    pub exit_code: Option<i32>,
    pub message: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ShellKind {
    #[default]
    Bash,
    Zsh,
    Fish,
    Sh,
    Other,
}

/// One shell history file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HistoryFile {
    pub user: String,
    pub path: String,
    pub shell: ShellKind,
    /// Modification time: an upper bound of the last entry's time, the only clue when the file
    /// has no timestamps.
    pub mtime: Option<UnixTime>,
    pub size: Option<u64>,
    pub truncated: bool,
    pub entries: Vec<HistoryEntry>,
    /// Timestamp lines (`#<epoch>`) whose time is not plausible (before 2000, after 2200: a
    /// dead clock's `#100000`): kept as stamps, their entries without a time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub implausible_stamps: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HistoryEntry {
    /// 0-based position of the entry in the file (orders entries without timestamps).
    pub index: u32,
    pub time: Option<UnixTime>,
    /// The command, multi-line entries joined with `\n`.
    pub command: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnitScope {
    #[default]
    System,
    User,
}

/// A file that was read, with its text (redacted).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct FileText {
    pub path: String,
    pub mtime: Option<UnixTime>,
    pub content: String,
    pub truncated: bool,
}

/// A systemd unit that looks like a model server, with drop-ins applied.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SystemdUnit {
    pub name: String,
    pub scope: UnitScope,
    /// For user units: the user whose `~/.config/systemd/user` holds it.
    pub owner: Option<String>,
    /// The main unit file.
    pub fragment: FileText,
    /// Drop-ins in the order systemd applies them.
    pub drop_ins: Vec<FileText>,
    /// Effective `ExecStart=` lines after drop-ins (an empty assignment resets the list).
    pub exec_start: Vec<String>,
    /// Effective `Environment=` assignments.
    pub environment: BTreeMap<String, String>,
    pub environment_files: Vec<EnvironmentFile>,
    pub working_directory: Option<String>,
    /// `User=`.
    pub run_as: Option<String>,
    /// `systemctl show` state, where systemd runs.
    pub state: Option<UnitState>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct EnvironmentFile {
    pub path: String,
    /// `EnvironmentFile=-/path`: a missing file is not an error.
    pub optional: bool,
    pub vars: BTreeMap<String, String>,
    pub status: SectionStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct UnitState {
    pub active_state: Option<String>,
    pub sub_state: Option<String>,
    pub main_pid: Option<u32>,
    pub exec_main_start: Option<UnixTime>,
    pub n_restarts: Option<u32>,
    pub need_daemon_reload: Option<bool>,
    pub fragment_path: Option<String>,
    pub drop_in_paths: Vec<String>,
    /// `ExecMainExitTimestamp`: when the unit's last main process exited.
    #[serde(default)]
    pub exec_main_exit: Option<UnixTime>,
    /// `InactiveEnterTimestamp`: when the unit last became inactive.
    #[serde(default)]
    pub inactive_enter: Option<UnixTime>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProcessRole {
    /// Holds the real launch command (the engine's parent process).
    Launcher,
    /// A re-titled child (`sglang::scheduler_TP0`, `VLLM::Worker_TP0`).
    Worker,
    /// Wraps a launcher (`nohup`, `bash -c`, `uv run`, `conda run`, a container shim).
    Wrapper,
    #[default]
    Other,
}

/// A process that is or wraps a model server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ProcessInfo {
    pub pid: u32,
    pub ppid: Option<u32>,
    pub uid: Option<u32>,
    pub user: Option<String>,
    /// `/proc/PID/cmdline`, split on NUL, exactly as read (secrets redacted).
    pub argv: Vec<String>,
    pub comm: Option<String>,
    pub exe: Option<String>,
    pub cwd: Option<String>,
    pub start_time: Option<UnixTime>,
    /// Environment: keys always, values redacted by the rules.
    pub env: BTreeMap<String, String>,
    pub role: ProcessRole,
    /// Engine the process patterns matched (`sglang`, `vllm`, ...).
    pub engine: Option<Engine>,
    /// For workers and wrappers: the pid of the launcher they belong to.
    pub launcher_pid: Option<u32>,
    /// Container id when the process runs in a container (from its cgroup).
    pub container_id: Option<String>,
    /// `/proc/PID/root` when the process sees another filesystem than the collector (its own
    /// mount namespace: a container, a unit with a private filesystem view); its packages,
    /// model config and log files are read through it. `None`: same filesystem.
    #[serde(default)]
    pub mount_root: Option<String>,
    /// The files its stdout and stderr go to (`/proc/PID/fd/1`, `/2`: a shell's `> server.log
    /// 2>&1`, `nohup.out`), as round 2 reads them (under `mount_root` for a process in another
    /// mount namespace); its log, whatever its command line says.
    #[serde(default)]
    pub output_files: Vec<String>,
}

/// A Python environment that serves (or served) a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PythonEnv {
    /// Interpreter path (`/opt/venv/bin/python3`).
    pub interpreter: String,
    /// `sys.prefix` equivalent: the venv or conda prefix.
    pub prefix: Option<String>,
    pub python_version: Option<String>,
    pub site_packages: Vec<String>,
    /// Who uses it: `pid:1234`, `unit:sglang.service`.
    pub used_by: Vec<String>,
    pub packages: Vec<PythonPackage>,
    /// `/proc/PID/root` when it was read inside another mount namespace (a container, a unit
    /// with a private filesystem view) through that process's root; the paths above are as
    /// that process sees them. `None`: read at the host's own paths.
    #[serde(default)]
    pub mount_root: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PythonPackage {
    /// Normalised distribution name (PEP 503: lower case, `-`).
    pub name: String,
    /// Full PEP 440 version as in METADATA (`2.9.1+cu128`).
    pub version: String,
    /// mtime of the `.dist-info` directory: when it was installed.
    pub installed_at: Option<UnixTime>,
    /// From `direct_url.json`, for VCS / local / URL installs.
    pub direct_url: Option<String>,
    /// The tool that installed it (`pip`, `uv`, `conda`: the dist-info's `INSTALLER`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installer: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GpuStatus {
    /// `nvidia-smi` answered.
    Present,
    /// `nvidia-smi` is not installed: no NVIDIA GPU stack on this host.
    #[default]
    NoNvidiaSmi,
    /// `nvidia-smi` exists and reports no devices.
    NoDevices,
    /// `nvidia-smi` failed (driver/library mismatch, driver not loaded, ...).
    DriverError,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct GpuState {
    pub status: GpuStatus,
    /// The driver's own message when it failed.
    pub message: Option<String>,
    pub driver_version: Option<String>,
    /// Highest CUDA version the driver supports (banner `CUDA Version:`).
    pub cuda_version: Option<String>,
    pub gpus: Vec<Gpu>,
    pub compute_apps: Vec<ComputeApp>,
    /// `nvidia-smi topo -m` as printed (control characters stripped).
    pub topology: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Gpu {
    pub index: Option<u32>,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    pub driver_version: Option<String>,
    pub vbios_version: Option<String>,
    pub compute_cap: Option<String>,
    pub memory_total_mib: Option<u64>,
    pub memory_used_mib: Option<u64>,
    pub utilization_gpu_pct: Option<u32>,
    pub utilization_memory_pct: Option<u32>,
    pub temperature_c: Option<u32>,
    pub power_draw_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub power_max_limit_w: Option<f64>,
    pub clocks_sm_mhz: Option<u32>,
    pub clocks_mem_mhz: Option<u32>,
    pub clocks_max_sm_mhz: Option<u32>,
    pub clocks_max_mem_mhz: Option<u32>,
    pub pstate: Option<String>,
    pub persistence_mode: Option<String>,
    pub ecc_mode: Option<String>,
    pub mig_mode: Option<String>,
    pub compute_mode: Option<String>,
    pub pcie_link_gen: Option<u32>,
    pub pcie_link_width: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ComputeApp {
    pub gpu_uuid: Option<String>,
    pub pid: Option<u32>,
    pub process_name: Option<String>,
    pub used_memory_mib: Option<u64>,
}

/// Serving-relevant keys of a model's `config.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ModelConfig {
    /// The model path as the launch names it.
    pub model: String,
    /// The `config.json` that was read (a HF cache snapshot is resolved).
    pub config_path: String,
    pub mtime: Option<UnixTime>,
    /// Selected keys, flattened with dots for nested objects (`text_config.num_hidden_layers`).
    pub fields: BTreeMap<String, serde_json::Value>,
    pub status: SectionStatus,
    pub message: Option<String>,
    /// `/proc/PID/root` when the config was read inside another mount namespace (a
    /// container, a unit with a private filesystem view) through that process's root; the
    /// paths above are as that process sees them. `None`: read at the host's own paths.
    #[serde(default)]
    pub mount_root: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LogOrigin {
    /// The journal of a systemd unit.
    Journal,
    /// A file a launch writes to (`> server.log 2>&1`, `nohup.out`, `--log-file`).
    #[default]
    File,
    /// The log file a container runtime keeps of a container's stdout/stderr (docker
    /// `json-file`, podman `k8s-file`), decoded; `location` is that file (the container's
    /// `log_path`) and times are the runtime's own per-line timestamps.
    Container,
}

/// One server log that was read (a bounded tail of it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LogSource {
    pub origin: LogOrigin,
    /// File path, or for a journal the unit's name (`CONTAINER_NAME=NAME` for a container
    /// whose runtime logs to the journal).
    pub location: String,
    pub mtime: Option<UnixTime>,
    pub bytes_read: u64,
    pub truncated: bool,
    /// Start-up lines that carry the resolved arguments.
    pub startups: Vec<StartupRecord>,
    /// Periodic metrics as time series.
    pub metrics: Vec<MetricSeries>,
    pub status: SectionStatus,
    pub message: Option<String>,
    /// `/proc/PID/root` when the file was read inside another mount namespace (a
    /// container, a unit with a private filesystem view) through that process's root; the
    /// paths above are as that process sees them. `None`: read at the host's own paths.
    #[serde(default)]
    pub mount_root: Option<String>,
    /// What the service manager said about the server's lifecycle (journal: `Started ...`,
    /// `Stopped ...`, `Deactivated successfully`, `Main process exited, code=killed`).
    #[serde(default)]
    pub lifecycle: Vec<LifecycleEvent>,
    /// The limits the engine resolved at start-up (SGLang `max_total_num_tokens=...`, vLLM
    /// `GPU KV cache size: N tokens`, ...), one record per start-up.
    #[serde(default)]
    pub limits: Vec<StartupLimits>,
    /// Engine version lines (vLLM `vLLM API server version X`, SGLang's version line).
    #[serde(default)]
    pub versions: Vec<VersionLine>,
    /// Lines that could not be read (journalctl's `[N blob data]` placeholder for a message
    /// with control characters, printed when it is run without `-a`).
    #[serde(default)]
    pub unreadable_lines: u64,
    /// How the log was thinned on the host: its whole retention read, start-up and lifecycle
    /// lines kept in full, metric lines kept evenly in time. `None`: read as it was (a tail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinning: Option<LogThinning>,
    /// Why this file was read, when something other than a launch or the container runtime
    /// named it: the line of a cron table, systemd timer, script or logrotate config that
    /// writes it (`cron:/etc/cron.d/vllm-logs line 3 writes docker logs of vllm-server`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_by: Option<String>,
    /// The model files the server loaded, as it logged them (Ollama's `starting runner ...
    /// --model BLOB` at each model load), oldest first: what an earlier start served where its
    /// settings name no model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded: Vec<ModelLoad>,
}

/// One model file a server logged loading (`configs/log_lines.toml` `[[loaded]]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ModelLoad {
    pub time: Option<UnixTime>,
    /// The engine that logged it.
    pub engine: crate::Engine,
    /// The model file as logged (a blob of the model store for Ollama).
    pub model: String,
}

/// What the host kept of a log read over its whole retention: lines seen and kept, and why
/// the rest went. Metric lines are kept at most `metric_lines_per_hour` an hour a kind (an idle
/// line at most once an hour), so a run weeks old keeps hundreds of samples, not none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LogThinning {
    /// Lines the reader gave (the whole retention, or up to where it stopped).
    pub lines_seen: u64,
    /// Lines sent: start-up, lifecycle and error lines, and the metric lines chosen.
    pub lines_kept: u64,
    pub metric_lines_seen: u64,
    pub metric_lines_kept: u64,
    /// Metric lines kept at most this many an hour, per kind of line.
    pub metric_lines_per_hour: u32,
    /// Start-up, lifecycle and error lines over their caps (an hour, a run): dropped.
    pub dropped_over_caps: u64,
    /// Lines let go to stay within the output's byte cap: every other metric line of a kind
    /// each time the kept lines outgrew it (what is kept still spans the whole log).
    pub dropped_over_size: u64,
    /// The reader stopped at its time limit before the end: the newest lines were read again
    /// from the end, and what lay between is missing.
    pub stopped_early: bool,
    /// The first and last time among the lines kept.
    pub first_time: Option<UnixTime>,
    pub last_time: Option<UnixTime>,
}

/// What a service manager line says happened to a unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleKind {
    /// `Started UNIT`.
    #[default]
    Started,
    /// `Stopping UNIT...`.
    Stopping,
    /// `Stopped UNIT`, `UNIT: Deactivated successfully.`
    Stopped,
    /// `UNIT: Main process exited, code=...`, `UNIT: Failed with result ...`.
    Exited,
}

/// One lifecycle line of a unit's journal.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LifecycleEvent {
    pub time: Option<UnixTime>,
    pub kind: LifecycleKind,
    /// The line as logged (sanitised).
    pub text: String,
}

/// Limits an engine resolved at start-up, as it logged them. Keys: `max_total_num_tokens`,
/// `max_running_requests`, `context_len`, `available_gpu_mem_gb`, `chunked_prefill_size`,
/// `max_prefill_tokens` (SGLang); `kv_cache_tokens`, `max_concurrency`, `max_num_seqs`,
/// `max_num_batched_tokens`, `max_model_len` (vLLM).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct StartupLimits {
    pub time: Option<UnixTime>,
    /// The engine that logged it.
    pub engine: crate::Engine,
    pub values: BTreeMap<String, f64>,
}

/// An engine's version line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct VersionLine {
    pub time: Option<UnixTime>,
    pub engine: crate::Engine,
    pub version: String,
}

/// An engine's start-up line with its resolved arguments (SGLang `server_args=ServerArgs(...)`,
/// vLLM `non-default args: {...}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct StartupRecord {
    pub time: Option<UnixTime>,
    /// The engine that logged it.
    pub engine: crate::Engine,
    /// The argument text as logged (redacted).
    pub text: String,
    /// Engine version when the log states it.
    pub version: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct MetricSeries {
    /// `gen_throughput`, `accept_len`, `token_usage`, `running_reqs`, ...
    pub name: String,
    /// `tok/s`, `ratio`, `count`, ...
    pub unit: String,
    /// (time, value); time is absent when the log line has no timestamp. Bounded: the newest
    /// points are kept.
    pub points: Vec<(Option<UnixTime>, f64)>,
    pub summary: MetricSummary,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct MetricSummary {
    /// Number of samples seen (also those dropped from `points`).
    pub count: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub last: f64,
    pub first_time: Option<UnixTime>,
    pub last_time: Option<UnixTime>,
}

/// A package manager event concerning GPU drivers, CUDA or NCCL.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PackageEvent {
    pub time: Option<UnixTime>,
    /// `apt`, `dpkg`, `dnf`.
    pub manager: String,
    /// `install`, `upgrade`, `remove`, `purge`, ...
    pub action: String,
    pub package: String,
    pub from_version: Option<String>,
    pub to_version: Option<String>,
    pub source: String,
}
