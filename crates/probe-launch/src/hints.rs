//! What a caller tells a reconstruction about its text: its kind, the engine and version when
//! known, where the text came from, and variables known from outside it.

use std::collections::BTreeMap;

use probe_model::{Engine, LaunchOrigin, LaunchSource, ProcessInfo, SourceKind, TimeBounds};

/// Inputs larger than this are cut (with a warning) before reading.
pub(crate) const MAX_TEXT: usize = 4 * 1024 * 1024;

/// What kind of text is given to [`super::reconstruct`].
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
    /// A podman quadlet (`*.container`).
    Quadlet,
    /// A supervisord configuration (`[program:x]`).
    Supervisor,
    /// A Dockerfile or Containerfile.
    Dockerfile,
    /// An Ollama Modelfile.
    Modelfile,
    /// A pm2 ecosystem file (`ecosystem.config.js` / `.json`).
    Pm2,
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

impl ParseHints {
    /// A running process's argv: its pid as the location, its start as the launch's time, its
    /// working directory for relative paths.
    pub(crate) fn of_process(p: &ProcessInfo) -> Self {
        ParseHints {
            source: LaunchSource {
                kind: SourceKind::Process,
                location: LaunchOrigin::Process { pid: p.pid }.location(),
                time: TimeBounds {
                    at: p.start_time,
                    ..TimeBounds::default()
                },
                running: true,
                ..LaunchSource::default()
            },
            working_directory: p.cwd.clone(),
            ..ParseHints::default()
        }
    }
}
