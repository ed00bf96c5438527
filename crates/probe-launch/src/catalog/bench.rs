//! What an engine's own benchmark tool writes, from its definition's `[bench]`: the tool, its
//! name as people type it, and the `backend` names by which results name a server of the engine.

use probe_model::BenchmarkTool;
use serde::Deserialize;

/// An engine's `[bench]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bench {
    /// The tool that ships with the engine.
    pub tool: BenchmarkTool,
    /// Its name as typed (`vllm bench serve`).
    pub name: String,
    /// Prefixes of a result's `backend` that name a server of this engine.
    #[serde(default)]
    pub backends: Vec<String>,
    /// Only results of [`Bench::tool`] name a server so (another tool's `backend` of that
    /// name means something else).
    #[serde(default)]
    pub own_tool_only: bool,
}

impl Bench {
    /// Whether a result of `tool` whose `backend` is `backend` measured a server of this engine.
    pub fn names_server(&self, tool: BenchmarkTool, backend: &str) -> bool {
        (!self.own_tool_only || tool == self.tool)
            && self
                .backends
                .iter()
                .any(|p| backend.starts_with(p.as_str()))
    }
}
