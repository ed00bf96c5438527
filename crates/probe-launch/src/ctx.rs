//! What is known around an argv while it is unwrapped, shared by the readers that unwrap one.

use std::collections::BTreeMap;
use std::rc::Rc;

use probe_model::LaunchConfig;

use super::hints::ParseHints;
use super::shell::Budget;

/// Everything known around an argv.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ctx {
    pub env: BTreeMap<String, String>,
    /// Process wrappers unwrapped so far (`nohup`, `bash -c`, `numactl`).
    pub wrappers: Vec<String>,
    /// Context wrappers (`conda`, `venv`) that come after process wrappers.
    pub context_wrappers: Vec<String>,
    pub venv: Option<String>,
    /// The Python interpreter that runs the entry point, once one was read.
    pub interpreter: Option<String>,
    pub warnings: Vec<String>,
    pub files: std::rc::Rc<BTreeMap<String, String>>,
    pub log_files: Vec<String>,
    pub cwd: Option<String>,
    pub depth: usize,
    /// The work left to the whole reading (every wrapper, nested shell and `eval` shares it).
    pub budget: Rc<Budget>,
}

/// The last path component (`/opt/venv/bin/vllm` -> `vllm`).
pub(crate) fn basename(p: &str) -> &str {
    p.trim_end_matches('/').rsplit('/').next().unwrap_or(p)
}

/// Reads an argv into a launch: the argv reader, handed to the readers it calls (containers)
/// so that they can read the command inside without depending on it (no cycle between files).
pub(crate) type ReadArgv = fn(&[String], Ctx, &ParseHints) -> Option<LaunchConfig>;

/// `NAME=value` as a shell assignment word.
pub(crate) fn assignment(s: &str) -> Option<(&str, &str, bool)> {
    let (name, value) = s.split_once('=')?;
    if name.is_empty()
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        || name
            .chars()
            .next()
            .map(|c| c.is_ascii_digit())
            .unwrap_or(true)
    {
        return None;
    }
    Some((name, value, false))
}
