//! A reconstructed launch of a model server: what `probe-diff` reads out of a unit file, a shell
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
    #[default]
    #[serde(rename = "other")]
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
        if self.kind != SourceKind::Process {
            return None;
        }
        self.location
            .trim()
            .strip_prefix("pid:")
            .and_then(|pid| pid.trim().parse().ok())
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
    pub source: LaunchSource,
}
