//! A reconstructed launch of a model server: what `probe-launch` reads out of a unit file, a shell
//! line, a process argv, a container or an engine's start-up log.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::UnixTime;

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
pub enum Engine {
    #[serde(rename = "sglang")]
    Sglang,
    #[serde(rename = "vllm")]
    Vllm,
    #[serde(rename = "tgi")]
    Tgi,
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    #[serde(rename = "lmdeploy")]
    Lmdeploy,
    #[serde(rename = "trtllm")]
    Trtllm,
    #[serde(rename = "ollama")]
    Ollama,
    /// Any other engine; a name this version does not know (an older or newer store) reads as
    /// this, never as an error.
    #[default]
    #[serde(rename = "other", other)]
    Other,
}

impl Engine {
    pub const ALL: [Engine; 8] = [
        Engine::Sglang,
        Engine::Vllm,
        Engine::Tgi,
        Engine::LlamaCpp,
        Engine::Lmdeploy,
        Engine::Trtllm,
        Engine::Ollama,
        Engine::Other,
    ];

    /// The name used in JSON, configs and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Engine::Sglang => "sglang",
            Engine::Vllm => "vllm",
            Engine::Tgi => "tgi",
            Engine::LlamaCpp => "llama.cpp",
            Engine::Lmdeploy => "lmdeploy",
            Engine::Trtllm => "trtllm",
            Engine::Ollama => "ollama",
            Engine::Other => "other",
        }
    }

    /// The engine's definition, `configs/engines/<engine>.toml`, embedded at build time: the one
    /// place an engine's identity is written down. probe-launch reads all of it (with
    /// `deny_unknown_fields`) as the engine's catalog; [`Engine::packages`] reads its packages.
    pub fn definition(self) -> &'static str {
        match self {
            Engine::Sglang => include_str!("../../../configs/engines/sglang.toml"),
            Engine::Vllm => include_str!("../../../configs/engines/vllm.toml"),
            Engine::Tgi => include_str!("../../../configs/engines/tgi.toml"),
            Engine::LlamaCpp => include_str!("../../../configs/engines/llama.cpp.toml"),
            Engine::Lmdeploy => include_str!("../../../configs/engines/lmdeploy.toml"),
            Engine::Trtllm => include_str!("../../../configs/engines/trtllm.toml"),
            Engine::Ollama => include_str!("../../../configs/engines/ollama.toml"),
            Engine::Other => include_str!("../../../configs/engines/other.toml"),
        }
    }

    /// The Python distributions that are this engine: its definition's `packages`, PEP 503
    /// normalised as a snapshot names them (`tensorrt_llm` -> `tensorrt-llm`), each once. The one
    /// list probe-launch (an engine's installed version) and probe-store (indexed versions) read.
    pub fn packages(self) -> &'static [String] {
        static PACKAGES: std::sync::LazyLock<Vec<(Engine, Vec<String>)>> =
            std::sync::LazyLock::new(|| {
                Engine::ALL
                    .into_iter()
                    .map(|e| (e, definition_packages(e)))
                    .collect()
            });
        PACKAGES
            .iter()
            .find(|(e, _)| *e == self)
            .map(|(_, p)| p.as_slice())
            .unwrap_or_default()
    }

    pub fn parse(name: &str) -> Option<Engine> {
        Engine::ALL
            .into_iter()
            .find(|e| e.as_str().eq_ignore_ascii_case(name))
            .or(match name.to_ascii_lowercase().as_str() {
                "llamacpp" | "llama-cpp" | "llama_cpp" => Some(Engine::LlamaCpp),
                "tensorrt-llm" | "tensorrt_llm" | "trt-llm" => Some(Engine::Trtllm),
                _ => None,
            })
    }
}

/// `packages` of `engine`'s definition; the rest of the file is probe-launch's to read (and check).
fn definition_packages(engine: Engine) -> Vec<String> {
    #[derive(Deserialize)]
    struct Packages {
        #[serde(default)]
        packages: Vec<String>,
    }
    let parsed: Packages = match toml::from_str(engine.definition()) {
        Ok(p) => p,
        Err(e) => {
            panic!("configs/engines/{engine}.toml (embedded at build time) does not parse: {e}")
        }
    };
    let mut out: Vec<String> = Vec::new();
    for name in parsed.packages {
        let name = pep503(&name);
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// PEP 503 normalisation: lower case, runs of `-_.` become one `-`.
fn pep503(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for part in name.trim().split(['-', '_', '.']).filter(|p| !p.is_empty()) {
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&part.to_ascii_lowercase());
    }
    out
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A running process's `/proc/PID/cmdline`.
    Process,
    /// A systemd unit (with drop-ins).
    Unit,
    /// A shell history entry.
    History,
    /// An engine's start-up log line.
    Log,
    /// A container's entrypoint and command.
    Container,
    /// A script or other file on the host.
    File,
    /// Text given to `probe launch`.
    #[default]
    Text,
}

impl SourceKind {
    /// The name used in labels and JSON (`process`, `unit`, `history`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Process => "process",
            SourceKind::Unit => "unit",
            SourceKind::History => "history",
            SourceKind::Log => "log",
            SourceKind::Container => "container",
            SourceKind::File => "file",
            SourceKind::Text => "text",
        }
    }
}

/// When a launch happened, as far as the evidence tells.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct TimeBounds {
    /// Exact time (a timestamped history entry, a process start, a log line).
    pub at: Option<UnixTime>,
    /// Lower bound when no exact time is known.
    pub not_before: Option<UnixTime>,
    /// Upper bound when no exact time is known (a history file's mtime, a unit file's mtime).
    pub not_after: Option<UnixTime>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LaunchSource {
    pub kind: SourceKind,
    /// `pid:1234`, `unit:sglang.service`, `/root/.bash_history#57`, `/var/log/sglang.log`.
    pub location: String,
    pub time: TimeBounds,
    /// Whether this launch is what runs now.
    pub running: bool,
    /// Other evidence of the same run merged into this launch, most precise first: the unit
    /// that started the process (`unit:vllm.service`), its container (`container:vllm-llama`),
    /// the engine's start-up line in a log (`log:/root/sglang.log`), the history line that ran
    /// it. The options come from `location`, the most precise source.
    #[serde(default)]
    pub also_seen_in: Vec<String>,
}

impl LaunchSource {
    /// The process id of a launch read from a running process (`location` = `pid:1234`).
    pub fn pid(&self) -> Option<u32> {
        match self.origin() {
            LaunchOrigin::Process { pid } => Some(pid),
            _ => None,
        }
    }
}

/// One option after normalisation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LaunchOption {
    /// Typed value: bool, number, string, list or object (JSON-valued flags).
    pub value: serde_json::Value,
    /// The option as written, for display (`--tp 2`).
    pub written: String,
}

/// Speculative decoding, normalised across engines.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Speculative {
    /// The method exactly as written (`NEXTN`, `EAGLE3`, `mtp`, `medusa`).
    pub algorithm: Option<String>,
    /// What actually runs (`EAGLE` for SGLang `NEXTN`), upper case.
    pub effective_algorithm: Option<String>,
    pub num_steps: Option<serde_json::Value>,
    pub eagle_topk: Option<serde_json::Value>,
    pub num_draft_tokens: Option<serde_json::Value>,
    pub num_speculative_tokens: Option<serde_json::Value>,
    pub draft_model: Option<String>,
    /// Values the engine fills in when the text leaves them out (e.g. NEXTN defaults).
    pub implied: BTreeMap<String, serde_json::Value>,
}

/// A launch configuration rebuilt from one piece of evidence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LaunchConfig {
    pub engine: Engine,
    /// Installed engine version when known (from the serving interpreter's packages).
    pub engine_version: Option<String>,
    /// How the engine was entered: `python -m sglang.launch_server`, `vllm serve`, `llama-server`.
    pub entrypoint: Option<String>,
    /// Interpreter path (`/opt/venv/bin/python3`).
    pub interpreter: Option<String>,
    /// venv or conda prefix when one is evident.
    pub venv: Option<String>,
    /// Wrapper chain from the outside in (`docker`, `nohup`, `bash -c`, `conda run`, `uv run`).
    pub wrappers: Vec<String>,
    pub model: Option<String>,
    /// Normalised options keyed by canonical name (`tp-size`, `tensor-parallel-size`).
    pub options: BTreeMap<String, LaunchOption>,
    pub env: BTreeMap<String, String>,
    /// Flags the catalog does not know, kept verbatim.
    pub unknown: Vec<String>,
    /// Ambiguous prefixes, unparseable parts, unresolved variables, ...
    pub warnings: Vec<String>,
    pub speculative: Option<Speculative>,
    /// The argv the reconstruction read (after unwrapping).
    pub argv: Vec<String>,
    /// Working directory of the launch when known (unit `WorkingDirectory=`, process cwd, a `cd`
    /// earlier in the script); relative paths in the launch are relative to it.
    pub working_directory: Option<String>,
    /// Files the server's output goes to: shell redirections (`> server.log 2>&1`), `nohup.out`,
    /// `--log-file`. Paths as written (may be relative to `working_directory`).
    pub log_files: Vec<String>,
    /// The files that define this launch, in the order they apply: a unit's file, its drop-ins
    /// in systemd's order, its `EnvironmentFile=`s, the script its `ExecStart=` runs; a
    /// container's compose files (overrides after the files they override) and their
    /// `env_file:`s. Empty where no file defines it (a process started by hand, a log line).
    #[serde(default)]
    pub files: Vec<DefiningFile>,
    /// The models a running server's child processes load, by name, where the command line
    /// names none (an Ollama server's runners load blobs of its model store, named by the
    /// store's manifests). Not a setting of the launch: never compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loaded_models: Vec<String>,
    pub source: LaunchSource,
}

/// One file that defines a launch ([`LaunchConfig::files`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct DefiningFile {
    pub role: DefiningFileRole,
    /// The path as the evidence names it.
    pub path: String,
    /// Written `EnvironmentFile=-/path` (or a compose `env_file` with `required: false`): a
    /// missing file is no error.
    pub optional: bool,
    /// The settings it holds that the launch reads (`ExecStart=`, `Environment=`,
    /// `EnvironmentFile=`, variable names of an environment file), in the order written; what
    /// editing or removing it changes.
    pub sets: Vec<String>,
}

/// What a defining file is to its launch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DefiningFileRole {
    /// A systemd unit file (`/etc/systemd/system/NAME.service`).
    #[default]
    Unit,
    /// A drop-in of that unit (`NAME.service.d/*.conf`, what `systemctl edit` writes).
    DropIn,
    /// A unit's `EnvironmentFile=`.
    EnvironmentFile,
    /// The script a unit's `ExecStart=` runs.
    StartScript,
    /// A Docker Compose file (an override file after the file it overrides).
    Compose,
    /// A container's env file (a compose service's `env_file:`).
    EnvFile,
    /// A config file the launch's options name (`--config FILE`): the engine reads its keys
    /// as options.
    EngineConfig,
    /// The Python script a running process runs, which starts the engine through its API
    /// (`serve(MODEL, backend_config=TurbomindEngineConfig(...))`): its keywords are options.
    PythonScript,
}

impl DefiningFileRole {
    /// The words a report says it with (`unit file`, `drop-in`, `EnvironmentFile=`).
    pub fn label(self) -> &'static str {
        match self {
            DefiningFileRole::Unit => "unit file",
            DefiningFileRole::DropIn => "drop-in",
            DefiningFileRole::EnvironmentFile => "EnvironmentFile=",
            DefiningFileRole::StartScript => "start script",
            DefiningFileRole::Compose => "compose file",
            DefiningFileRole::EnvFile => "env file",
            DefiningFileRole::EngineConfig => "engine config file",
            DefiningFileRole::PythonScript => "Python script",
        }
    }
}

/// Where a launch came from, typed: what [`LaunchSource::kind`] and [`LaunchSource::location`]
/// hold as text in JSON (`pid:1234`, `unit:vllm.service`, `container:vllm-llama`,
/// `/root/.bash_history#57`, a log path or a journal's unit name). Read it with
/// [`LaunchSource::origin`] instead of taking the location string apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LaunchOrigin {
    /// A running process.
    Process { pid: u32 },
    /// A systemd unit.
    Unit { name: String },
    /// A container (its name, or its id when it has none).
    Container { name: String },
    /// Entry `index` of the history file `path`.
    History { path: String, index: Option<u32> },
    /// An engine's start-up line in a log file (a path) or a unit's journal (its name).
    Log { location: String },
    /// A script or other file.
    File { path: String },
    /// Text given on the command line.
    Text { label: String },
}

impl LaunchOrigin {
    /// Reads the origin from the serialised pair (kind, location).
    pub fn parse(kind: SourceKind, location: &str) -> LaunchOrigin {
        let location = location.trim();
        let strip = |prefix: &str| {
            location
                .strip_prefix(prefix)
                .unwrap_or(location)
                .to_string()
        };
        match kind {
            SourceKind::Process => match location
                .strip_prefix("pid:")
                .and_then(|pid| pid.trim().parse().ok())
            {
                Some(pid) => LaunchOrigin::Process { pid },
                None => LaunchOrigin::Text {
                    label: location.to_string(),
                },
            },
            SourceKind::Unit => LaunchOrigin::Unit {
                name: strip("unit:"),
            },
            SourceKind::Container => LaunchOrigin::Container {
                name: strip("container:"),
            },
            SourceKind::History => {
                let location = strip("history:");
                match location.rsplit_once('#') {
                    Some((path, index)) if index.trim().parse::<u32>().is_ok() => {
                        LaunchOrigin::History {
                            path: path.to_string(),
                            index: index.trim().parse().ok(),
                        }
                    }
                    _ => LaunchOrigin::History {
                        path: location,
                        index: None,
                    },
                }
            }
            SourceKind::Log => LaunchOrigin::Log {
                location: strip("log:"),
            },
            SourceKind::File => LaunchOrigin::File {
                path: strip("file:"),
            },
            SourceKind::Text => LaunchOrigin::Text {
                label: location.to_string(),
            },
        }
    }

    /// The kind it serialises to.
    pub fn kind(&self) -> SourceKind {
        match self {
            LaunchOrigin::Process { .. } => SourceKind::Process,
            LaunchOrigin::Unit { .. } => SourceKind::Unit,
            LaunchOrigin::Container { .. } => SourceKind::Container,
            LaunchOrigin::History { .. } => SourceKind::History,
            LaunchOrigin::Log { .. } => SourceKind::Log,
            LaunchOrigin::File { .. } => SourceKind::File,
            LaunchOrigin::Text { .. } => SourceKind::Text,
        }
    }

    /// The location string it serialises to (`pid:1234`, `unit:x`, `/root/.bash_history#3`).
    pub fn location(&self) -> String {
        match self {
            LaunchOrigin::Process { pid } => format!("pid:{pid}"),
            LaunchOrigin::Unit { name } => format!("unit:{name}"),
            LaunchOrigin::Container { name } => format!("container:{name}"),
            LaunchOrigin::History { path, index } => match index {
                Some(index) => format!("{path}#{index}"),
                None => path.clone(),
            },
            LaunchOrigin::Log { location } => location.clone(),
            LaunchOrigin::File { path } => path.clone(),
            LaunchOrigin::Text { label } => label.clone(),
        }
    }

    /// The evidence label (`pid:120`, `unit:vllm.service`, `log:/root/sglang.log`,
    /// `history:/root/.bash_history#4`), as [`LaunchSource::also_seen_in`] lists evidence.
    pub fn label(&self) -> String {
        match self {
            LaunchOrigin::Process { .. }
            | LaunchOrigin::Unit { .. }
            | LaunchOrigin::Container { .. } => self.location(),
            other => format!("{}:{}", other.kind().as_str(), other.location()),
        }
    }

    /// The unit name of a unit launch.
    pub fn unit(&self) -> Option<&str> {
        match self {
            LaunchOrigin::Unit { name } => Some(name),
            _ => None,
        }
    }

    /// The container name of a container launch.
    pub fn container(&self) -> Option<&str> {
        match self {
            LaunchOrigin::Container { name } => Some(name),
            _ => None,
        }
    }
}

impl std::fmt::Display for LaunchOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

impl LaunchSource {
    /// A source for `origin` (kind and location set from it).
    pub fn from_origin(origin: &LaunchOrigin, time: TimeBounds, running: bool) -> LaunchSource {
        LaunchSource {
            kind: origin.kind(),
            location: origin.location(),
            time,
            running,
            also_seen_in: Vec::new(),
        }
    }

    /// Where this launch came from, typed.
    pub fn origin(&self) -> LaunchOrigin {
        LaunchOrigin::parse(self.kind, &self.location)
    }

    /// The other evidence of the same run, typed (`also_seen_in` as origins).
    pub fn also_seen(&self) -> Vec<LaunchOrigin> {
        self.also_seen_in
            .iter()
            .map(|label| origin_of_label(label))
            .collect()
    }
}

/// An evidence label (`pid:1`, `unit:x`, `container:x`, `log:/p`, `history:/p#3`) as an origin.
pub fn origin_of_label(label: &str) -> LaunchOrigin {
    let label = label.trim();
    let kind = match label.split_once(':').map(|(k, _)| k) {
        Some("pid") => SourceKind::Process,
        Some("unit") => SourceKind::Unit,
        Some("container") => SourceKind::Container,
        Some("history") => SourceKind::History,
        Some("log") => SourceKind::Log,
        Some("file") => SourceKind::File,
        _ => SourceKind::Text,
    };
    LaunchOrigin::parse(kind, label)
}

#[cfg(test)]
mod tests {
    use super::Engine;

    /// Engine names read from stored JSON: every known one, and an unknown one (an older or newer
    /// store) as `other`, never an error.
    #[test]
    fn engine_names_from_json() {
        for e in Engine::ALL {
            let json = serde_json::to_string(&e).unwrap_or_default();
            assert_eq!(
                serde_json::from_str::<Engine>(&json).ok(),
                Some(e),
                "{json}"
            );
        }
        assert_eq!(
            serde_json::from_str::<Engine>("\"mlc-llm\"").ok(),
            Some(Engine::Other)
        );
    }
}
